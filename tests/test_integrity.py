"""The signed trail: digests after each refresh and erasure, and `auditlake verify` holding on a lake
changed only by the product, and naming each change made outside it (a real edit of a table, a file or a
digest, undone after its check so the next one starts from a lake that verifies)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from auditlake_devtools.sample.activity_log import generate_activity_log
from auditlake_devtools.sample.server_logs import ServerLogTree
from pipelines.activity_log import SERVER_LOG_FOLDER
from pipelines.cli import main
from pipelines.config.load import load_config
from pipelines.errors import CheckFailed
from pipelines.integrity import report
from pipelines.integrity.capture import write_digest
from pipelines.integrity.digest_log import DigestLog, file_bytes, unsigned
from pipelines.integrity.signing import fingerprint, public_key, sign
from pipelines.integrity.verify import verify
from pipelines.lake import storage
from pipelines.lake.delta_tables import log_location, table_version
from pipelines.lake.table_names import tables
from pipelines.lifecycle.holds import HoldRefused, add_hold, release_hold
from pipelines.lifecycle.retention import apply_retention, due_on_refresh
from pipelines.lifecycle.scope import site_luid
from pipelines.personal_data.erase.person import resolve_person
from pipelines.personal_data.erase.run import erase_person
from pipelines.refresh import new_run_id, run_refresh
from pipelines.server_logs.discover import LogRoot
from pipelines.server_logs.pieces import copy_new_lines
from tests.lake import BUNDLED_EXPORT, move_day, variant_environ

pytestmark = [pytest.mark.slow(minutes=4)]
SALT = "trail-salt"
FORGED_RUN = "29991231T000000Z-forged00"
# what the fixture leaves for the tests: the tables' versions after the first refresh, a day not delivered
FIRST_VERSIONS: dict[str, int] = {}
LATER_DAY: list = []
# the person erased (their identifiers) and a copy of the Server log pieces before the erasure
PERSON: list = []
PIECES_BEFORE: list = []
ERASE_SAID: list[str] = []
# a row deleted from bronze, or one added, also unbalances bronze = silver + duplicates + quarantine
UNRECONCILED = "the layers do not reconcile: run `auditlake reconcile` for the counts"


def _trail_names(cfg) -> list[str]:
    t = tables(cfg)
    return [t.bronze_raw("site"), t.bronze_raw("tenant"), t.writeback_raw, t.file_ledger]


def _quiet(_message: str) -> None:
    pass


@pytest.fixture(scope="module")
def trail(spark, lake_dir, tmp_path_factory):
    """Two deliveries refreshed through bronze and silver (with the bundled Write-Back export), then one
    person erased: three digests."""
    environ = variant_environ(lake_dir, "trail")
    environ["AUDITLAKE__WRITEBACK__SOURCE"] = "file"
    environ["AUDITLAKE__WRITEBACK__FILE__PATH"] = str(BUNDLED_EXPORT)
    environ["AUDITLAKE__ANALYST__ENABLED"] = "false"
    cfg = load_config("test", environ=environ)
    generated = tmp_path_factory.mktemp("trail_generated")
    generate_activity_log(generated, 150, seed=3, days=3)
    days = sorted({p.name.split("=")[1] for p in generated.rglob("d=*") if p.is_dir()})
    landing = cfg.path("paths.landing_dir")
    runs = []
    for day in days[:2]:
        if runs:
            _to_server_logs(generated, day, tmp_path_factory.mktemp("trail_server_logs"), cfg)
        assert move_day(generated, landing, day) > 0
        runs.append(run_refresh(spark, cfg, ["bronze", "silver"], log=_quiet).run_id)
        if len(runs) == 1:
            FIRST_VERSIONS.update({name: table_version(spark, name) for name in _trail_names(cfg)})
    LATER_DAY.append((generated, days[2]))
    t = tables(cfg)
    # a person with lines in Tableau Server's log pieces (the second day's site events)
    from_pieces = spark.table(t.bronze_raw("site")).where(F.col("source_file").contains("/server/node="))
    person = (
        spark.table(t.silver_events("site"))
        .join(from_pieces.select("bronze_id"), "bronze_id")
        .where("email IS NOT NULL")
        .select("email")
        .orderBy("email")
        .first()["email"]
    )
    PERSON.append(resolve_person(spark, cfg, person))
    PIECES_BEFORE.append(tmp_path_factory.mktemp("trail_pieces"))
    shutil.copytree(landing / SERVER_LOG_FOLDER, PIECES_BEFORE[0], dirs_exist_ok=True)
    erasure = erase_person(spark, cfg, person, SALT, requested_by="dpo-ticket-9", log=ERASE_SAID.append)
    return cfg, runs, erasure


def _to_server_logs(generated: Path, day: str, tree_dir: Path, cfg) -> None:
    """The day's site events written to Tableau Server log files instead of delivered, and copied into
    the landing folder as a refresh copies them (pieces under ``server/``)."""
    records, date_folder = [], ""
    for path in sorted((generated / "site").rglob("*")):
        if path.is_file() and f"/d={day}/" in path.as_posix():
            date_folder = re.search(r"y=\d+/m=\d+/d=\d+", path.as_posix())[0]
            data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
            for line in data.decode("utf-8").splitlines():
                record = json.loads(line)
                if isinstance(record.get("event"), dict):  # the emitter's envelope
                    record = record["event"]
                record.setdefault("eventType", re.search(r"/eventType=([^/]+)/", path.as_posix())[1])
                records.append(record)
            path.unlink()
    tree = ServerLogTree(tree_dir, nodes=1, zone="UTC", rotate_lines=25)
    tree.append(records)
    roots = [LogRoot(str(folder), folder.name) for folder in sorted(tree_dir.iterdir())]
    copy_new_lines(None, roots, "UTC", cfg.landing_dir, cfg.checkpoint_dir, log=_quiet)
    # in the day's folder, not today's, which would leave the deliveries' days out of bronze's next listing
    for folder in Path(cfg.landing_dir, SERVER_LOG_FOLDER).glob("node=*/tz=*"):
        for copied in list(folder.glob("y=*/m=*/d=*")):
            target = folder / date_folder
            target.parent.mkdir(parents=True, exist_ok=True)
            copied.rename(target)


def _key():
    return public_key(os.environ["AUDITLAKE_SIGNING_KEY"])


def _verify(spark, cfg, **kwargs):
    return verify(spark, cfg, kwargs.pop("key", None) or _key(), log=_quiet, **kwargs)


def _counts(spark, cfg) -> tuple[int, int]:
    t = tables(cfg)
    rows = sum(spark.table(name).count() for name in _trail_names(cfg))
    files = spark.table(t.file_ledger).where(F.col("status").isin("landed", "quarantined")).count()
    return rows, files


def test_verify_holds_after_refreshes_and_an_erasure(spark, trail):
    cfg, _runs, erasure = trail
    names = [d.name for d in DigestLog(cfg.digest_dir).digests()[0]]
    assert names == ["00000001-refresh.json", "00000002-refresh.json", "00000003-erasure.json"]
    result = _verify(spark, cfg)
    assert result.findings == []
    rows, files = _counts(spark, cfg)
    record = json.loads(Path(cfg.digest_dir, names[2]).read_text())["erasures"][0]
    rewritten = sum(len(r) for r in record["rewrites"].values())
    assert record["erasure_id"] == erasure.erasure_id and record["requested_by"] == "dpo-ticket-9"
    assert 0 < rewritten <= erasure.rows_total  # bronze's rows among all the rows it rewrote
    assert result.summary() == (
        f"3/3 digests valid, {files:,}/{files:,} files, {rows:,}/{rows:,} rows; "
        f"{rewritten:,} rows pseudonymised by 1 erasure; 0 retired"
    )
    assert result.reconciled is True


def test_an_idle_refresh_writes_a_digest_and_the_command_exits_0(spark, trail, monkeypatch, capsys, tmp_path):
    cfg, _runs, _erasure = trail
    before = [d.name for d in DigestLog(cfg.digest_dir).digests()[0]]
    written = write_digest(cfg, "refresh", new_run_id(), log=_quiet)  # as a refresh with nothing new: no Spark
    assert json.loads(written.raw)["tables"] == {} and written.name == f"{len(before) + 1:08d}-refresh.json"
    for key, value in variant_environ(Path(cfg.data_dir).parent, "trail").items():
        if key.startswith("AUDITLAKE__"):
            monkeypatch.setenv(key, value)
    public = tmp_path / "key.pub.pem"
    from pipelines.integrity.signing import public_pem

    public.write_text(public_pem(_key()))
    capsys.readouterr()
    assert main(["--env", "test", "verify", "--public-key", str(public), "--report", str(tmp_path / "r.md")]) == 0
    out = capsys.readouterr().out
    assert "verify: 4/4 digests valid, " in out and "verify: the trail holds" in out
    assert "**The trail holds.**" in (tmp_path / "r.md").read_text()


def test_a_kill_while_a_digest_is_written_leaves_no_gap(spark, trail, monkeypatch):
    """The refresh's commits made, its digest's file written but not yet named (a kill there): the next
    refresh's digest covers both runs, the half-written file is no digest."""
    cfg, _runs, _erasure = trail
    generated, day = LATER_DAY[0]
    before = [d.name for d in DigestLog(cfg.digest_dir).digests()[0]]

    def killed(self, name, data):
        Path(self.local, f".{name}.tmp").write_bytes(data[: len(data) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(DigestLog, "write_new", killed)
    assert move_day(generated, cfg.path("paths.landing_dir"), day) > 0
    with pytest.raises(KeyboardInterrupt):
        run_refresh(spark, cfg, ["bronze", "silver"], log=_quiet)
    killed_run = spark.table(tables(cfg).bronze_raw("site")).agg(F.max("run_id")).first()[0]
    monkeypatch.undo()
    assert [d.name for d in DigestLog(cfg.digest_dir).digests()[0]] == before
    assert _verify(spark, cfg).findings[0].endswith(f"rows of run {killed_run}, which no digest covers (added)")
    run_refresh(spark, cfg, ["bronze", "silver"], log=_quiet)
    stored = DigestLog(cfg.digest_dir).digests()[0]
    assert [d.seq for d in stored] == list(range(1, len(before) + 2))
    assert killed_run in json.loads(stored[-1].raw)["tables"][tables(cfg).bronze_raw("site")]["runs"]
    assert _verify(spark, cfg).findings == []


def test_a_refresh_after_the_erasure_lands_no_rewritten_piece_again(spark, trail):
    """The Server log pieces the erasure rewrote have another size and time: the ledger knows that
    version (ops.erased_files), so a refresh walking every folder lands nothing and records no change."""
    cfg, _runs, _erasure = trail
    t = tables(cfg)
    before = (spark.table(t.file_ledger).count(), spark.table(t.bronze_raw("site")).count())
    said: list[str] = []
    run_refresh(spark, cfg, ["bronze", "silver"], log=said.append, full_listing=True)
    assert (spark.table(t.file_ledger).count(), spark.table(t.bronze_raw("site")).count()) == before
    assert spark.table(t.file_ledger).where("status = 'changed'").count() == 0
    assert any(
        re.search(r"bronze: \d+ files under .*: 0 new to read, 0 new entity snapshots, 0 decided", m) for m in said
    )
    assert _verify(spark, cfg).findings == []


def _piece_text(path: Path) -> str:
    return path.read_text(encoding="utf-8").lower()


def test_the_erasure_rewrites_the_server_log_pieces_and_verify_accepts_only_that(spark, trail):
    """Tableau Server's log pieces are the lake's own archive: the erasure rewrites those that held the
    person as it rewrote bronze's raw lines, its signed record names each with its new SHA-256; a
    piece changed by hand afterwards, or given its landed bytes back, is named by verify."""
    cfg, runs, erasure = trail
    person, copy_before = PERSON[0], PIECES_BEFORE[0]
    server = Path(cfg.landing_dir, SERVER_LOG_FOLDER)

    def holds_the_person(text: str) -> bool:  # a key anywhere, a name as a JSON string
        return any(k in text for k in person.keys) or any(f'"{n.lower()}"' in text for n in person.names)

    assert [p for p in server.rglob("*.log") if holds_the_person(_piece_text(p))] == []
    held = {
        str(server / p.relative_to(copy_before)) for p in copy_before.rglob("*.log") if holds_the_person(_piece_text(p))
    }
    record = next(r for d in DigestLog(cfg.digest_dir).digests()[0] for r in json.loads(d.raw).get("erasures", []))
    files = {path: after for path, _before, after in record["files"]}
    assert record["erasure_id"] == erasure.erasure_id and held and set(files) == held
    assert all(hashlib.sha256(Path(path).read_bytes()).hexdigest() == after for path, after in files.items())
    # Tableau's deliveries are not rewritten: erase says how many still hold the person
    landed = spark.table(tables(cfg).file_ledger).where(F.col("run_id").isin(runs) & (F.col("status") == "landed"))
    deliveries = [
        r["path"]
        for r in landed.collect()
        if not Path(r["path"]).is_relative_to(server)
        and holds_the_person(
            (
                gzip.decompress(Path(r["path"]).read_bytes())
                if r["path"].endswith(".gz")
                else Path(r["path"]).read_bytes()
            )
            .decode("utf-8")
            .lower()
        )
    ]
    assert [m for m in ERASE_SAID if "delivery files" in m] == [
        f"erase: not erased: {len(deliveries)} landed delivery files still hold the person in clear (Tableau's "
        "deliveries under the landing folder, not the lake's archive); delete or replace them at the source too "
        "(docs/operations.md#erasure-gdpr-article-17)"
    ] * bool(deliveries)
    assert f"erase: {len(held)} Tableau Server log pieces under the landing folder rewritten" in ERASE_SAID
    piece = sorted(files)[0]
    rows = spark.table(tables(cfg).bronze_raw("site")).where(F.col("source_file") == piece).collect()
    # its lines are bronze's rows of it, rewritten alike
    assert sorted(Path(piece).read_text(encoding="utf-8").splitlines()) == sorted(r["raw_line"] for r in rows)

    def verified_with(content: bytes) -> list[str]:
        erased, times = Path(piece).read_bytes(), os.stat(piece)
        Path(piece).write_bytes(content)
        try:
            return _verify(spark, cfg).findings
        finally:  # the next refresh must find the piece as the erasure left it
            Path(piece).write_bytes(erased)
            os.utime(piece, ns=(times.st_atime_ns, times.st_mtime_ns))

    edited = verified_with(Path(piece).read_bytes().replace(b"erased:", b"ERASED:", 1))
    undone = verified_with((copy_before / Path(piece).relative_to(server)).read_bytes())
    assert edited == [f"file {piece}: replaced or changed after landing (its SHA-256 differs)"]
    assert undone == [f"file {piece}: holds its landed content again, which an erasure rewrote"]


def test_a_retention_run_planted_in_the_lakes_tables_is_not_finished(spark, trail):
    """A pending run written into ops.retention_runs and ops.retired_rows by someone who can write the
    lake, listing recent rows: the next `retention apply` checks every listed row against the rules and
    the holds again, retires nothing and signs nothing; with no rules, the same."""
    from pipelines.lake.delta_tables import create_table_if_missing
    from pipelines.lifecycle.retention import PENDING, RETIRED_SCHEMA, RUNS_SCHEMA, RetentionRefused

    cfg, _runs, _erasure = trail
    t = tables(cfg)
    site = t.bronze_raw("site")
    create_table_if_missing(spark, t.retired_rows, RETIRED_SCHEMA)
    create_table_if_missing(spark, t.retention_runs, RUNS_SCHEMA)
    forged = "retention-29990101T000000Z-forged00"
    run = spark.createDataFrame([(forged, datetime.now(UTC), None, "intruder", "", {"site": 5}, PENDING)], RUNS_SCHEMA)
    run.write.format("delta").mode("append").saveAsTable(t.retention_runs)
    columns = [c.split(" ")[0] for c in RETIRED_SCHEMA.split(", ")]
    recent = spark.table(site).orderBy(F.desc("ingest_ts")).limit(5)  # (bronze's rows carry their family)
    recent.withColumn("retention_id", F.lit(forged)).select(*columns).write.format("delta").mode("append").saveAsTable(
        t.retired_rows
    )
    rows, digests = spark.table(site).count(), len(DigestLog(cfg.digest_dir).digests()[0])
    ruled = load_config(
        "test",
        environ={
            **variant_environ(Path(cfg.data_dir).parent, "trail"),
            "AUDITLAKE__RETENTION__RULES": json.dumps([{"keep": "3650d"}]),
        },
    )
    try:
        for config, why in ((cfg, "listed with no rules"), (ruled, "not expired under retention.rules, or held")):
            with pytest.raises(RetentionRefused, match=rf"^retention {forged}: 5 of the rows it lists in .* are {why}"):
                apply_retention(spark, config, log=_quiet)
        assert spark.table(site).count() == rows and len(DigestLog(cfg.digest_dir).digests()[0]) == digests
    finally:
        DeltaTable.forName(spark, t.retired_rows).delete(F.col("retention_id") == forged)
        DeltaTable.forName(spark, t.retention_runs).delete(F.col("retention_id") == forged)


def test_a_hold_refuses_the_erasure_and_keeps_rows_from_retention(spark, trail):
    """A person held: their erasure refused naming the hold, until it is released. A site held: a
    retention run retires the expired rows of the other sites only. Each change signed; verify holds,
    with the retired rows counted, and the layers still reconcile."""
    cfg, _runs, _erasure = trail
    t = tables(cfg)
    site_table = t.bronze_raw("site")
    person = (
        spark.table(t.silver_events("site"))
        .where("email IS NOT NULL AND email NOT LIKE 'erased:%'")
        .select("email")
        .orderBy(F.desc("email"))
        .first()["email"]
    )
    held = add_hold(spark, cfg, "case 2026-114", person=person, placed_by="legal", log=_quiet)
    with pytest.raises(
        HoldRefused,
        match=rf"^the person's rows are under legal hold {held.hold_id} \(person {re.escape(person.lower())}: case "
        rf"2026-114; placed [0-9-]+ [0-9:]+ by legal\): nothing changed; an erasure waits until the hold is "
        rf"released \(`auditlake hold release {held.hold_id}`\), GDPR Art\. 17\(3\)\(e\)$",
    ):
        erase_person(spark, cfg, person, SALT, log=_quiet)
    release_hold(spark, cfg, held.hold_id, released_by="legal", log=_quiet)

    # the most frequent site event type, all of it older than 30 days; one site of it held
    counts = (
        spark.table(site_table)
        .where("parse_status = 'ok'")
        .select("event_type", site_luid().alias("site"))
        .groupBy("event_type", "site")
        .count()
        .collect()
    )
    by_type = {}
    for r in counts:
        by_type.setdefault(r["event_type"], {})[r["site"]] = r["count"]
    # the type with most rows outside its biggest site: that site held, the others retired
    event_type = max(by_type, key=lambda e: sum(by_type[e].values()) - max(by_type[e].values()))
    kept_site = max(by_type[event_type], key=by_type[event_type].get)
    site_hold = add_hold(spark, cfg, "audit of site", site=kept_site, placed_by="legal", log=_quiet)
    expiring = load_config(
        "test",
        environ={
            **variant_environ(Path(cfg.data_dir).parent, "trail"),
            "AUDITLAKE__RETENTION__RULES": json.dumps([{"event_type": event_type, "keep": "30d"}]),
        },
    )
    retire = sum(n for site, n in by_type[event_type].items() if site != kept_site)
    assert apply_retention(spark, expiring, dry_run=True, log=_quiet).rows == retire
    report = apply_retention(spark, expiring, requested_by="records-officer", log=_quiet)
    assert report.rows == retire > 0
    left = spark.table(site_table).where(F.col("event_type") == event_type).select(site_luid().alias("s")).collect()
    assert {r["s"] for r in left} == {kept_site} and len(left) == by_type[event_type][kept_site]
    assert spark.table(t.silver_events("site")).where(F.col("event_type") == event_type).count() == len(left)
    result = _verify(spark, cfg)
    assert result.findings == [] and result.rows_retired == retire and result.reconciled is True
    kinds = [d.kind for d in DigestLog(cfg.digest_dir).digests()[0]]
    assert kinds[-4:] == ["hold", "hold", "hold", "retention"]
    release_hold(spark, cfg, site_hold.hold_id, log=_quiet)
    assert apply_retention(spark, expiring, dry_run=True, log=_quiet).rows == len(left)  # the hold released
    # on refresh (retention.on_refresh): at most once a day, as each run rebuilds gold
    said: list[str] = []
    assert due_on_refresh(spark, expiring, log=said.append) is False and said == []  # not asked for
    on_refresh = load_config(
        "test",
        environ={
            **variant_environ(Path(cfg.data_dir).parent, "trail"),
            "AUDITLAKE__RETENTION__RULES": json.dumps([{"event_type": event_type, "keep": "30d"}]),
            "AUDITLAKE__RETENTION__ON_REFRESH": "true",
        },
    )
    assert due_on_refresh(spark, on_refresh, log=said.append) is False
    assert len(said) == 1 and re.fullmatch(r"retention: last run [0-9-]+ [0-9:]+: the next one a day after it", said[0])


def test_an_erasure_undone_is_named(spark, trail):
    """A row the erasure rewrote, given its clear line back from the landing file that still holds it."""
    cfg, _runs, erasure = trail
    table = tables(cfg).bronze_raw("site")
    record = next(r for d in DigestLog(cfg.digest_dir).digests()[0] for r in json.loads(d.raw).get("erasures", []))
    landed_hash = {row_id: landed for row_id, landed, _after in record["rewrites"][table]}
    row = spark.table(table).where(F.col("bronze_id").isin(list(landed_hash))).orderBy("bronze_id").first()
    row_id = row["bronze_id"]  # one retention left
    source = Path(row["source_file"])
    server = Path(cfg.landing_dir, SERVER_LOG_FOLDER)
    if source.is_relative_to(server):  # a Server log piece: the erasure rewrote it, its copy from before holds it
        source = PIECES_BEFORE[0] / source.relative_to(server)
    text = (gzip.decompress(source.read_bytes()) if source.suffix == ".gz" else source.read_bytes()).decode("utf-8")
    clear = next(
        line for line in text.splitlines() if hashlib.sha256(line.encode("utf-8")).hexdigest() == landed_hash[row_id]
    )
    DeltaTable.forName(spark, table).update(F.col("bronze_id") == row_id, {"raw_line": F.lit(clear)})
    try:
        found = _verify(spark, cfg).findings
    finally:
        DeltaTable.forName(spark, table).update(F.col("bronze_id") == row_id, {"raw_line": F.lit(row["raw_line"])})
    assert found == [f"{table}: 1 rows an erasure rewrote hold their landed content again: {row_id}"]
    assert erasure.erasure_id == record["erasure_id"]


def _one_row(spark, table: str):
    return spark.table(table).orderBy("bronze_id").first()


@pytest.mark.parametrize("edit", ["concat(raw_line, ' ')", "NULL"], ids=["a space added", "set to NULL"])
def test_a_raw_line_edited_is_named(spark, trail, edit):
    """An edit of a raw line, or its removal (a NULL hashes to nothing: it must not escape the check)."""
    cfg, _runs, _erasure = trail
    table = tables(cfg).bronze_raw("site")
    row = _one_row(spark, table)
    spark.sql(f"UPDATE {table} SET raw_line = {edit} WHERE bronze_id = '{row['bronze_id']}'")
    try:
        found = _verify(spark, cfg).findings
    finally:
        as_it_was = {"raw_line": F.lit(row["raw_line"])}
        DeltaTable.forName(spark, table).update(F.col("bronze_id") == row["bronze_id"], as_it_was)
    assert found == [
        f"{table}: 1 rows no longer hash to their landing hash and no erasure record covers them: {row['bronze_id']}"
    ]


def test_a_row_deleted_and_a_row_forged_are_named(spark, trail):
    cfg, _runs, _erasure = trail
    table = tables(cfg).bronze_raw("tenant")
    row = _one_row(spark, table)
    in_run = spark.table(table).where(F.col("run_id") == row["run_id"]).count()
    saved = spark.table(table).where(F.col("bronze_id") == row["bronze_id"]).localCheckpoint()
    spark.sql(f"DELETE FROM {table} WHERE bronze_id = '{row['bronze_id']}'")
    try:
        deleted = _verify(spark, cfg).findings
    finally:
        saved.write.format("delta").mode("append").saveAsTable(table)
    forged = saved.withColumn("bronze_id", F.expr("uuid()")).withColumn("run_id", F.lit(FORGED_RUN))
    forged.write.format("delta").mode("append").saveAsTable(table)
    try:
        added = _verify(spark, cfg).findings
        # a routine digest meanwhile signs no run later than its clock, nor moves its mark past one
        write_digest(cfg, "refresh", new_run_id(), spark, log=_quiet)
        signed = DigestLog(cfg.digest_dir).digests()[0][-1].parsed()
        assert FORGED_RUN not in signed["tables"][table]["runs"]
        assert signed["state"]["tables"][table]["upto"] < FORGED_RUN
        still = _verify(spark, cfg).findings
    finally:
        spark.sql(f"DELETE FROM {table} WHERE run_id = '{FORGED_RUN}'")
    assert deleted == [
        f"{table}: run {row['run_id']} has {in_run - 1} rows, its digest says {in_run} (1 deleted)",
        UNRECONCILED,
    ]
    assert added[0] == still[0] == f"{table}: 1 rows of run {FORGED_RUN}, which no digest covers (added)"
    assert added[1:] in ([], [UNRECONCILED])


def test_a_landed_file_replaced_or_removed_is_named(spark, trail, tmp_path):
    cfg, runs, _erasure = trail
    path = spark.table(tables(cfg).file_ledger).where("status = 'landed'").orderBy("path").first()["path"]
    original = Path(path).read_bytes()
    Path(path).write_bytes(original + b"\n")
    try:
        replaced = _verify(spark, cfg).findings
    finally:
        Path(path).write_bytes(original)
    shutil.move(path, tmp_path / "away")
    try:
        removed = _verify(spark, cfg).findings
    finally:
        shutil.move(tmp_path / "away", path)
    assert replaced == [f"file {path}: replaced or changed after landing (its SHA-256 differs)"]
    assert len(removed) == 1 and removed[0].startswith(f"file {path}: removed after landing (run ")


def _copy_of_log(cfg, tmp_path: Path):
    """The lake's configuration reading a copy of its digest log (to change it freely)."""
    copy = tmp_path / "digests"
    shutil.copytree(cfg.digest_dir, copy)
    environ = {**variant_environ(Path(cfg.data_dir).parent, "trail"), "AUDITLAKE__INTEGRITY__DIGEST_DIR": str(copy)}
    return load_config("test", environ=environ), copy


def _resign(path: Path, key: Ed25519PrivateKey, change=None, previous: Path | None = None) -> None:
    digest = json.loads(path.read_text())
    if change:
        change(digest)
    if previous is not None:
        import hashlib

        digest["previous"]["sha256"] = hashlib.sha256(previous.read_bytes()).hexdigest()
    digest["public_key"] = fingerprint(key.public_key())
    digest["signature"] = sign(key, unsigned(digest))
    path.write_bytes(file_bytes(digest))


def test_a_digest_removed_reordered_edited_or_resigned_is_named(spark, trail, tmp_path):
    cfg, _runs, _erasure = trail
    names = [d.name for d in DigestLog(cfg.digest_dir).digests()[0]]
    ours, other = fingerprint(_key()), Ed25519PrivateKey.generate()
    theirs = fingerprint(other.public_key())
    cases = {}
    # removed: the second
    copied, folder = _copy_of_log(cfg, tmp_path / "removed")
    (folder / names[1]).unlink()
    cases["removed"] = _verify(spark, copied).findings
    # edited after signing: a file's size in the first
    copied, folder = _copy_of_log(cfg, tmp_path / "edited")
    digest = json.loads((folder / names[0]).read_text())
    digest["files"][0]["size"] += 1
    (folder / names[0]).write_bytes(file_bytes(digest))
    cases["edited"] = _verify(spark, copied).findings
    # every digest after the first re-signed with another key, the links made good again
    copied, folder = _copy_of_log(cfg, tmp_path / "resigned")
    for before, name in zip(names, names[1:], strict=False):
        _resign(folder / name, other, previous=folder / before)
    cases["resigned"] = _verify(spark, copied).findings
    # a rotation: each digest checked with the key its fingerprint names, of the keys given
    cases["rotated"] = _verify(spark, copied, key=[_key(), other.public_key()]).findings
    # whoever holds that key verifies their own history; only a witness's copy of the hashes tells
    witness = [f"{d.name} {d.sha256}" for d in DigestLog(cfg.digest_dir).digests()[0]]
    cases["their_key"] = _verify(spark, copied, key=other.public_key()).findings
    cases["their_key_witnessed"] = _verify(spark, copied, key=other.public_key(), anchor_lines=witness).findings
    # reordered: the first two swapped
    copied, folder = _copy_of_log(cfg, tmp_path / "reordered")
    first, second = (folder / names[0]).read_bytes(), (folder / names[1]).read_bytes()
    (folder / names[0]).write_bytes(second)
    (folder / names[1]).write_bytes(first)
    cases["reordered"] = _verify(spark, copied).findings

    assert cases["removed"][0] == f"digest 2 missing (before {names[2]})"
    assert f"{names[2]}: its link to {names[0]} does not hold (reordered, or one removed)" in cases["removed"]
    assert any(f.startswith(f"{names[2]}: its period starts at ") for f in cases["removed"])  # and the time it covered
    assert cases["edited"] == [
        f"{names[0]}: its signature does not hold: the digest was edited after signing",
        f"{names[1]}: its link to {names[0]} does not hold (that digest was changed or replaced)",
    ]
    assert cases["resigned"] == [f"{name}: signed with another key ({theirs}, not {ours})" for name in names[1:]]
    assert cases["rotated"] == []
    assert cases["their_key"] == [f"{names[0]}: signed with another key ({ours}, not {theirs})"]
    assert cases["their_key_witnessed"] == cases["their_key"] + [
        f"anchor: {name} differs from the witness's copy (re-signed or replaced)" for name in names[1:]
    ]
    assert cases["reordered"][:3] == [
        f"{names[0]}: its content says digest 2 (refresh)",
        f"{names[0]}: it follows {names[0]}, so it cannot be the first",
        f"{names[1]}: its content says digest 1 (refresh)",
    ]


def test_an_erasure_row_added_to_the_lakes_table_makes_no_rewrite_lawful(spark, trail):
    """A row added to ops.erasures (done, a token that is an empty string, found in every text) and a raw
    line edited: a routine digest signs no erasure record of it, so the edit stays a finding, and so does
    the row."""
    cfg, _runs, _erasure = trail
    t = tables(cfg)
    table = t.bronze_raw("site")
    row = _one_row(spark, table)
    forged_id = "erase-29990101T000000Z-forged00"
    forged = (
        spark.table(t.erasures)
        .limit(1)
        .withColumn("erasure_id", F.lit(forged_id))
        .withColumn("tokens", F.array(F.lit("")))
        .withColumn("status", F.lit("done"))
    )
    forged.write.format("delta").mode("append").saveAsTable(t.erasures)
    spark.sql(f"UPDATE {table} SET raw_line = concat(raw_line, ' ') WHERE bronze_id = '{row['bronze_id']}'")
    try:
        write_digest(cfg, "refresh", new_run_id(), spark, log=_quiet)
        signed = DigestLog(cfg.digest_dir).digests()[0][-1].parsed()
        found = _verify(spark, cfg).findings
    finally:
        as_it_was = {"raw_line": F.lit(row["raw_line"])}
        DeltaTable.forName(spark, table).update(F.col("bronze_id") == row["bronze_id"], as_it_was)
        DeltaTable.forName(spark, t.erasures).delete(F.col("erasure_id") == forged_id)
    assert signed["erasures"] == []
    assert found == [
        f"{table}: 1 rows no longer hash to their landing hash and no erasure record covers them: {row['bronze_id']}",
        f"{t.erasures}: erasure {forged_id} has no signed record (added, or not yet digested)",
    ]


def test_a_cut_tail_is_named_by_the_witness_and_never_continued(spark, trail, tmp_path):
    """The newest digests removed from the log (with what they covered, say): the writer reads its chain
    from the folder it writes, so with a witness configured it refuses to continue a log that does not
    hold the witness's last entry, and `verify` names each digest the witness saw that is gone. A digest
    written past the witness (a run killed before its witness line) is given to the witness first. With
    no witness, `verify` says what it cannot see."""
    cfg, _runs, _erasure = trail
    stored = DigestLog(cfg.digest_dir).digests()[0]
    witness = tmp_path / "witness.txt"
    copied, folder = _copy_of_log(cfg, tmp_path / "cut")
    environ = {**variant_environ(Path(cfg.data_dir).parent, "trail"), "AUDITLAKE__INTEGRITY__DIGEST_DIR": str(folder)}
    witnessed = load_config("test", environ=environ | {"AUDITLAKE__INTEGRITY__ANCHOR_FILE": str(witness)})
    witness.write_text("".join(f"{d.name} {d.sha256}\n" for d in stored[:-1]), encoding="utf-8")
    write_digest(witnessed, "refresh", new_run_id(), log=_quiet)
    newest = DigestLog(str(folder)).digests()[0][-1]
    assert witness.read_text(encoding="utf-8").splitlines() == [f"{d.name} {d.sha256}" for d in [*stored, newest]]

    for digest in (stored[-1], newest):  # the tail cut
        (folder / digest.name).unlink()
    with pytest.raises(
        CheckFailed,
        match=rf"^integrity: the witness's last entry '{newest.name} [0-9a-f]{{64}}' \({re.escape(str(witness))}\) is "
        rf"not in the digest log, which ends at {stored[-2].name}: the log was cut or replaced, so no digest is "
        r"written; run `auditlake verify`$",
    ):
        write_digest(witnessed, "refresh", new_run_id(), log=_quiet)
    lines = [*witness.read_text(encoding="utf-8").splitlines(), "a line the witness never wrote"]
    found = _verify(spark, witnessed, anchor_lines=lines).findings
    gone = [f"anchor: {d.name} is no longer in the digest log" for d in (stored[-1], newest)]
    assert set(gone) <= set(found) and "anchor: line" in " ".join(found)
    said: list[str] = []
    verify(spark, copied, _key(), log=said.append)
    assert (
        "verify: no witness (integrity.anchor_file, or --anchor): the newest digests could be removed, with the "
        "rows and files they covered, without a trace"
    ) in said


def test_the_ledger_the_erasure_and_a_hold_record_edited_are_named(spark, trail):
    cfg, _runs, erasure = trail
    t = tables(cfg)
    path = spark.table(t.file_ledger).where("status = 'landed'").orderBy("path").first()["path"]
    run = spark.table(t.file_ledger).where(F.col("path") == path).first()["run_id"]
    spark.sql(f"UPDATE {t.file_ledger} SET rows = rows + 1 WHERE path = '{path}'")
    try:
        ledger = _verify(spark, cfg).findings
    finally:
        spark.sql(f"UPDATE {t.file_ledger} SET rows = rows - 1 WHERE path = '{path}'")
    start, end = datetime(2020, 1, 1, tzinfo=UTC), datetime(2020, 2, 1, tzinfo=UTC)
    hold = add_hold(spark, cfg, "a closed case", held_from=start, held_to=end, log=_quiet).hold_id
    held = DeltaTable.forName(spark, t.legal_holds)
    held.update(F.col("hold_id") == hold, {"held_to": F.lit(datetime(2020, 1, 2, tzinfo=UTC))})  # narrowed
    try:
        holds = _verify(spark, cfg).findings
    finally:
        held.update(F.col("hold_id") == hold, {"held_to": F.lit(end)})
    release_hold(spark, cfg, hold, log=_quiet)
    spark.sql(f"UPDATE {t.erasures} SET rows_total = rows_total - 1")
    try:
        erasures = _verify(spark, cfg).findings
    finally:
        spark.sql(f"UPDATE {t.erasures} SET rows_total = rows_total + 1")
    assert f"{t.file_ledger}: run {run}'s rows differ from its digest (a row id or hash changed)" in ledger
    assert erasures == [f"{t.erasures}: erasure {erasure.erasure_id}'s row differs from its signed record"]
    assert holds == [f"{t.legal_holds}: hold {hold} differs from its signed record"]


def test_a_commit_file_rewritten_and_a_restore_are_named(spark, trail):
    """Last: a restore stays in the table's history."""
    cfg, runs, _erasure = trail
    table = tables(cfg).bronze_raw("site")
    commit = Path(storage.local_path(log_location(spark, table)), f"{1:020d}.json")
    original = commit.read_bytes()
    assert b'"timestamp":' in original
    # as someone rewriting it by hand would: Hadoop's checksum beside it removed, or reads fail on it
    checksum = commit.with_name(f".{commit.name}.crc")
    saved_checksum = checksum.read_bytes() if checksum.exists() else None
    checksum.unlink(missing_ok=True)
    commit.write_bytes(original.replace(b'"timestamp":', b'"timestamp" :', 1))
    try:
        rewritten = _verify(spark, cfg).findings
    finally:
        commit.write_bytes(original)
        if saved_checksum is not None:
            checksum.write_bytes(saved_checksum)
    ledger = tables(cfg).file_ledger  # no personal value in it: no erasure vacuumed its old files
    second_run = spark.table(ledger).where(F.col("run_id") == runs[1]).count()
    spark.sql(f"RESTORE TABLE {ledger} TO VERSION AS OF {FIRST_VERSIONS[ledger]}")
    restored = _verify(spark, cfg).findings
    assert rewritten == [f"{table}: the commit file of version 1 was rewritten"]
    assert f"{ledger}: run {runs[1]} has 0 rows, its digest says {second_run} ({second_run} deleted)" in restored
    assert any(f.startswith(f"{ledger}: restored at version ") for f in restored), restored


def test_the_report_lines_name_the_first_break():
    from pipelines.integrity.verify import Verification

    v = Verification(digests=2, digests_valid=1, findings=["x: broken", "y: broken"])
    assert report.lines(v, verbose=False)[-1] == "verify: the trail is broken: x: broken"


def test_a_malformed_digest_is_a_finding_never_a_crash():
    """A digest edited into odd JSON — a key given twice (which value counts is the parser's choice), a
    lone surrogate (no canonical form to check a signature over), a list where the link should be — is
    named, and the check goes on."""
    from pipelines.integrity.digest_log import StoredDigest
    from pipelines.integrity.verify import Verification, check_chain

    key = Ed25519PrivateKey.generate()
    digest = {
        "seq": 1,
        "kind": "refresh",
        "period": {"from": None, "to": "2026-06-01T00:00:00Z"},
        "tables": {},
        "files": [],
        "erasures": [],
        "previous": None,
        "public_key": fingerprint(key.public_key()),
    }
    digest["signature"] = sign(key, unsigned(digest))
    good = file_bytes(digest)
    cases = {
        "a key twice": good.replace(b'"kind":"refresh"', b'"kind":"refresh","kind":"hold"'),
        "a lone surrogate": good.replace(b'"files":[]', b'"files":[],"note":"\\ud800"'),
        "a list for the link": good.replace(b'"previous":null', b'"previous":["00000000-refresh.json"]'),
    }
    for what, data in {"as signed": good, **cases}.items():
        assert data != good or what == "as signed"
        v = Verification()
        stored = StoredDigest("00000001-refresh.json", 1, "refresh", lambda data=data: data)
        check_chain([stored], [key.public_key()], v)
        if what == "as signed":
            assert (v.findings, v.digests_valid) == ([], 1)
        else:
            assert v.findings and v.findings[0].startswith("00000001-refresh.json: ") and v.digests_valid == 0, what

    # periods are continuous: a second digest whose period starts later than the first one's ends
    later = dict(digest, seq=2, period={"from": "2026-06-01T01:00:00Z", "to": "2026-06-01T02:00:00Z"})
    later["previous"] = {"name": "00000001-refresh.json", "sha256": hashlib.sha256(good).hexdigest()}
    later.pop("signature")
    later["signature"] = sign(key, unsigned(later))
    v = Verification()
    pair = [(1, good), (2, file_bytes(later))]
    check_chain(
        [StoredDigest(f"{n:08d}-refresh.json", n, "refresh", lambda d=d: d) for n, d in pair], [key.public_key()], v
    )
    assert v.findings == [
        "00000002-refresh.json: its period starts at 2026-06-01T01:00:00Z, not where the one before ends "
        "(2026-06-01T00:00:00Z): a gap no digest covers"
    ]
