"""Bronze landing on generated Activity Logs, through real Spark and Delta tables and the file ledger."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from auditlake_devtools.sample.activity_log import generate_activity_log
from pipelines.activity_log import bronze
from pipelines.activity_log.bronze import layout
from pipelines.activity_log.bronze.decode import check_gzip
from pipelines.activity_log.bronze.land import land_bronze
from pipelines.config.load import load_config
from pipelines.lake.table_names import tables
from pipelines.refresh import new_run_id

_LINE_BREAK = re.compile(rb"\r\n|\r|\n")


def is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def content(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def physical_lines(path: Path) -> int:
    """Lines as Hadoop's LineReader (Spark's text source) splits them: \\n, \\r\\n or \\r."""
    data = content(path)
    if not data:
        return 0
    parts = _LINE_BREAK.split(data)
    return len(parts) - (1 if parts[-1] == b"" else 0)


def lines_under(root: Path) -> int:
    return sum(physical_lines(p) for p in root.rglob("*") if p.is_file())


def variant(lake_dir: Path, name: str):
    """A config with its own checkpoints and bronze schema, so tests do not see each other."""
    environ = dict(os.environ)
    environ["AUDITLAKE__PATHS__DATA_DIR"] = str(lake_dir / name)
    environ["AUDITLAKE__PATHS__LANDING_DIR"] = str(lake_dir / name / "landing")
    environ["AUDITLAKE__BRONZE__SCHEMA"] = f"bronze_{name}"
    return load_config("test", environ=environ)


def landed(spark, cfg, family: str):
    return spark.table(tables(cfg).bronze_raw(family))


@pytest.fixture(scope="module")
def clean(spark, lake_dir):
    cfg = variant(lake_dir, "clean")
    landing = cfg.path("paths.landing_dir")
    summary = generate_activity_log(landing, 1500, seed=7, days=2)
    results = land_bronze(spark, cfg, new_run_id(), log=lambda _m: None)
    return cfg, landing, summary, results


@pytest.fixture(scope="module")
def dirty(spark, lake_dir):
    cfg = variant(lake_dir, "dirty")
    landing = cfg.path("paths.landing_dir")
    summary = generate_activity_log(landing, 1500, seed=11, days=2, dirty=True)
    land_bronze(spark, cfg, new_run_id(), log=lambda _m: None)
    return cfg, landing, summary


def test_every_line_lands_once(spark, clean):
    cfg, landing, summary, results = clean
    for family in bronze.FAMILIES:
        expected = lines_under(landing / family)
        assert expected > 0
        assert landed(spark, cfg, family).count() == expected
    assert sum(r.rows_landed for r in results) == summary["lines"]
    files = {str(p) for p in landing.rglob("*") if p.is_file()}
    got = {
        r["source_file"]
        for fam in bronze.FAMILIES
        for r in landed(spark, cfg, fam).select("source_file").distinct().collect()
    }
    assert got == files


def test_rerun_with_nothing_new_adds_nothing(spark, clean):
    cfg, _, _, _ = clean
    before = {f: landed(spark, cfg, f).count() for f in bronze.FAMILIES}
    results = land_bronze(spark, cfg, new_run_id(), log=lambda _m: None)
    assert [r.rows_landed for r in results] == [0, 0]
    assert {f: landed(spark, cfg, f).count() for f in bronze.FAMILIES} == before


def test_a_new_file_adds_exactly_its_lines(spark, clean):
    cfg, landing, _, _ = clean
    source = next(p for p in sorted((landing / "site").rglob("*.json")))
    new_file = source.parent / "part-new-99999.json"
    shutil.copyfile(source, new_file)
    before = landed(spark, cfg, "site").count()
    run_id = new_run_id()
    results = land_bronze(spark, cfg, run_id, log=lambda _m: None)
    site = next(r for r in results if r.family == "site")
    assert site.files_landed == 1 and site.rows_landed == physical_lines(new_file)
    assert landed(spark, cfg, "site").count() == before + physical_lines(new_file)
    rows = landed(spark, cfg, "site").where(F.col("run_id") == run_id).collect()
    assert {r["source_file"] for r in rows} == {str(new_file)}
    assert sorted(r["raw_line"] for r in rows) == sorted(new_file.read_text(encoding="utf-8").splitlines())


def test_gzip_files_land_decompressed(spark, clean):
    cfg, landing, summary, _ = clean
    assert summary["gzip_files"] > 0
    gz = landed(spark, cfg, "site").where(F.col("source_file").endswith(".gz"))
    assert gz.count() == sum(physical_lines(p) for p in (landing / "site").rglob("*.gz"))
    assert gz.where("parse_status = 'ok'").count() == gz.count()


def test_routing_fields_from_both_shapes(spark, clean):
    cfg, _, _, _ = clean
    site = landed(spark, cfg, "site")
    shapes = {r["record_shape"] for r in site.select("record_shape").distinct().collect()}
    assert shapes == {"flat", "envelope"}
    # event_type always matches the eventType= folder for clean data, in either shape
    folder = F.regexp_extract("source_file", r"/eventType=([^/]+)/", 1)
    assert site.where(F.col("event_type") != folder).count() == 0
    assert site.where(F.col("event_time").isNull()).count() == 0
    assert site.where(F.length("content_hash") != 64).count() == 0
    meta = site.where(
        F.col("source_file_size").isNull()
        | F.col("source_file_mtime").isNull()
        | F.col("ingest_ts").isNull()
        | F.col("run_id").isNull()
    )
    assert meta.count() == 0


def test_dirty_feed_lands_everything_and_flags_malformed(spark, dirty):
    cfg, landing, summary = dirty
    total = sum(landed(spark, cfg, f).count() for f in bronze.FAMILIES)
    assert total == lines_under(landing) == summary["lines"]
    both = landed(spark, cfg, "site").unionByName(landed(spark, cfg, "tenant"))
    status = {r["parse_status"]: r["n"] for r in both.groupBy("parse_status").agg(F.count("*").alias("n")).collect()}
    assert status.get("blank", 0) >= summary["dirty"]["blank_line"]
    assert status.get("malformed", 0) >= summary["dirty"]["malformed_line"]
    # malformed rows keep their raw text and have no lifted fields
    bad = both.where("parse_status = 'malformed'")
    assert bad.where(F.col("raw_line").isNull() | F.col("event_type").isNotNull()).count() == 0


def test_dirty_bom_and_missing_type(spark, dirty):
    cfg, landing, summary = dirty
    both = landed(spark, cfg, "site").unionByName(landed(spark, cfg, "tenant"))
    # Spark's text source (Hadoop's line reader) drops a UTF-8 byte-order mark at the start of a
    # file: it is the file's encoding marker, not part of the line, and the line still parses.
    bom_files = [p for p in landing.rglob("*.json*") if content(p).startswith(b"\xef\xbb\xbf")]
    assert len(bom_files) == summary["dirty"]["bom"] >= 2
    for path in bom_files:
        first = content(path)[3:].splitlines()[0].decode("utf-8")
        rows = both.where((F.col("source_file") == str(path)) & (F.col("raw_line") == first)).collect()
        assert len(rows) >= 1
        assert {r["parse_status"] for r in rows} == {"ok" if is_json_object(first) else "malformed"}
    assert both.where(F.col("raw_line").startswith("\ufeff")).count() == 0
    from_folder = both.where("event_type_from_folder")
    # a flat record without its type (dirt), and the envelopes Tableau's emitter writes without metadata
    assert from_folder.where("record_shape = 'flat'").count() == summary["dirty"]["missing_event_type"]
    emitted = from_folder.where("record_shape = 'envelope'")
    assert emitted.count() > 0 and emitted.where(F.col("raw_line").contains('"metadata"')).count() == 0
    assert from_folder.where(F.col("event_type").isNull()).count() == 0


def test_transform_flags_each_kind_of_line(spark):
    rows = [
        ('{"eventType":"hist_login","eventTime":"2024-06-16T18:03:47Z"}', "/l/site/eventType=hist_login/p.json"),
        (
            '{"traceUuid":"t","event":{"eventTime":"2024-06-16T18:03:47Z"},"metadata":{"eventType":"hist_logout"}}',
            "/l/site/eventType=hist_logout/p.json",
        ),
        ('{"eventTime":"2024-06-16T18:03:47Z"}', "/l/site/eventType=hist_access_view/p.json"),
        ('{"eventType": "hist_login", "eventTime": ', "/l/site/eventType=hist_login/p.json"),
        ("", "/l/site/eventType=hist_login/p.json"),
        ("[1, 2]", "/l/site/eventType=hist_login/p.json"),
    ]
    raw = spark.createDataFrame(
        [(v, f, 10, None) for v, f in rows],
        "value string, source_file string, source_file_size long, source_file_mtime timestamp",
    )
    out = [r.asDict() for r in bronze.to_bronze_rows(raw, "site", "run-1").collect()]
    got = [(r["parse_status"], r["record_shape"], r["event_type"], r["event_type_from_folder"]) for r in out]
    assert got == [
        ("ok", "flat", "hist_login", False),
        ("ok", "envelope", "hist_logout", False),
        ("ok", "flat", "hist_access_view", True),
        ("malformed", None, None, False),
        ("blank", None, None, False),
        ("malformed", None, None, False),
    ]
    assert out[1]["event_time"] == "2024-06-16T18:03:47Z"
    assert {r["run_id"] for r in out} == {"run-1"}


# ---------------------------------------------------------------- layouts, the ledger, poison files
def test_paths_tell_family_layout_and_what_to_skip():
    c = layout.classify
    own = c("site/siteLuid=s1/y=2026/m=06/d=08/h=14/eventType=hist_login/part-00000.json.gz")
    assert (own.family, own.layout, own.event_type, str(own.path_date)) == (
        "site",
        "auditlake",
        "hist_login",
        "2026-06-08",
    )
    assert c("tenant/tenantId=t/y=2026/m=06/d=08/h=14/eventType=create_user/part-0.json").family == "tenant"
    date_first = c("pod=p1/siteLuid=s1/y=2025/m=11/d=30/h=02/eventType=hist_login/part-0001.json")
    assert (date_first.family, date_first.layout) == ("site", "date_first")
    schema_first = c("pod=p1/siteLuid=s1/eventType=hist_login/y=2025/m=11/d=30/h=02/part-0001.txt")
    assert (schema_first.family, schema_first.layout, schema_first.readable) == ("site", "schema_first", True)
    tenant = c("pod=p1/y=2025/m=11/d=30/h=02/eventType=revoke_session/part-0001.json")
    assert (tenant.family, tenant.layout) == ("tenant", "date_first")
    snapshot = c("pod=p1/siteLuid=s1/y=2025/m=11/d=30/h=02/entityType=users/part-0.parquet")
    assert (snapshot.readable, snapshot.entity_type, snapshot.snapshot_hour) == (True, "users", "2025-11-30 02:00:00")
    schema_first = c("pod=p1/siteLuid=s1/entityType=group_members/y=2025/m=11/d=30/h=23/part-0.parquet")
    assert (schema_first.entity_type, schema_first.snapshot_hour, schema_first.layout) == (
        "group_members",
        "2025-11-30 23:00:00",
        "schema_first",
    )
    for odd in (
        "pod=p1/y=2025/m=11/d=30/h=02/entityType=users/part-0.parquet",  # no site: Tableau has none
        "pod=p1/siteLuid=s1/y=2025/m=11/d=30/h=02/entityType=users/part-0.csv",
        "pod=p1/siteLuid=s1/y=2025/m=11/d=30/entityType=users/part-0.parquet",  # no hour
        "pod=p1/siteLuid=s1/y=2025/m=11/d=30/h=02/entityType=Users-2/part-0.parquet",
    ):
        assert c(odd).skip == "entity_snapshot", odd
    assert c("site/x/_SUCCESS").skip == "hidden_file"
    assert c("site/x/notes.md").skip == "not_activity_log"
    loose = c("events.json")
    assert (loose.family, loose.layout, loose.readable) == (None, "unpartitioned", True)


def test_gzip_files_are_judged_one_by_one():
    good = gzip.compress(b'{"a":1}\n{"b":2}\n')
    assert check_gzip(good) == ("landed", None, None)
    assert check_gzip(good + gzip.compress(b"{}\n"))[0] == "landed"  # several members, as Hadoop reads them
    assert check_gzip(b'{"a":1}\n')[:2] == ("quarantined", "not_gzip")
    assert check_gzip(good[: len(good) // 2])[:2] == ("quarantined", "truncated_gzip")
    broken = bytearray(good)
    broken[-8] ^= 0xFF  # the CRC no longer matches
    assert check_gzip(bytes(broken))[:2] == ("quarantined", "corrupt_gzip")


def _tableau_path(rel: Path, schema_first: bool) -> Path:
    """The project's layout -> Tableau's (pod=, no top family folder, tenant without an id segment)."""
    parts = list(rel.parts)
    family, rest = parts[0], parts[1:]
    if family == "tenant":
        rest = rest[1:]  # tenantId=...: Cloud Manager paths carry no partition for the tenant
    if schema_first:
        hour = [p for p in rest if p[:2] in ("y=", "m=", "d=", "h=")]
        etype = [p for p in rest if p.startswith("eventType=")]
        rest = [p for p in rest[:-1] if p not in hour and p not in etype] + etype + hour + [rest[-1]]
    return Path("pod=prod-useast-a", *rest)


@pytest.fixture(scope="module")
def layouts(spark, lake_dir, tmp_path_factory):
    """The same delivery laid out three ways (and a mix), each landed in a lake of its own."""
    source = tmp_path_factory.mktemp("layout_source")
    generate_activity_log(source, 600, seed=17, days=1)
    files = sorted(p for p in source.rglob("*") if p.is_file())
    out = {}
    for name in ("auditlake", "date_first", "schema_first", "mixed"):
        cfg = variant(lake_dir, f"layout_{name}")
        landing = cfg.path("paths.landing_dir")
        for i, path in enumerate(files):
            rel = path.relative_to(source)
            kind = name if name != "mixed" else ("auditlake", "date_first", "schema_first")[i % 3]
            target = landing / (rel if kind == "auditlake" else _tableau_path(rel, kind == "schema_first"))
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        land_bronze(spark, cfg, new_run_id(), log=lambda _m: None)
        out[name] = cfg
    return out


def _events_by_family(spark, cfg):
    return sorted(
        (r["family"], r["content_hash"])
        for f in bronze.FAMILIES
        for r in landed(spark, cfg, f).select("family", "content_hash").collect()
    )


def test_tableau_layouts_and_the_projects_own_land_the_same_events(spark, layouts):
    reference = _events_by_family(spark, layouts["auditlake"])
    assert len(reference) > 500 and {f for f, _ in reference} == {"site", "tenant"}
    for name in ("date_first", "schema_first", "mixed"):
        assert _events_by_family(spark, layouts[name]) == reference, name


def test_tenant_files_are_told_from_site_files_by_path(spark, layouts):
    cfg = layouts["date_first"]
    tenant = landed(spark, cfg, "tenant")
    assert tenant.count() > 0
    assert tenant.where(F.col("source_file").contains("/siteLuid=")).count() == 0
    assert landed(spark, cfg, "site").where(~F.col("source_file").contains("/siteLuid=")).count() == 0
    ledger = spark.table(tables(cfg).file_ledger)
    assert {r["layout"] for r in ledger.select("layout").distinct().collect()} == {"date_first"}
    mixed = spark.table(tables(layouts["mixed"]).file_ledger)
    assert {r["layout"] for r in mixed.select("layout").distinct().collect()} == {
        "auditlake",
        "date_first",
        "schema_first",
    }


@pytest.fixture(scope="module")
def poisoned(spark, lake_dir):
    """A delivery with a .gz that is not gzip, a gzip cut short and an entity snapshot among good files."""
    cfg = variant(lake_dir, "poison")
    landing = cfg.path("paths.landing_dir")
    generate_activity_log(landing, 400, seed=19, days=1)
    good = sorted((landing / "site").rglob("*.json"))[0]
    folder = good.parent
    payload = good.read_bytes()
    (folder / "part-plain.json.gz").write_bytes(payload)
    full = gzip.compress(payload)
    (folder / "part-cut.json.gz").write_bytes(full[: len(full) // 2])
    snapshot = landing / "pod=p1" / "siteLuid=s1" / "y=2026" / "m=06" / "d=01" / "entityType=users" / "p.parquet"
    snapshot.parent.mkdir(parents=True)
    snapshot.write_bytes(b"PAR1 not read")
    results = land_bronze(spark, cfg, new_run_id(), log=lambda _m: None)
    return cfg, landing, folder, payload, results


def _ledger(spark, cfg, name: str):
    return spark.table(tables(cfg).file_ledger).where(F.col("path").endswith(name)).collect()


def test_poison_files_are_quarantined_and_the_rest_lands(spark, poisoned):
    cfg, landing, folder, payload, results = poisoned
    good_lines = sum(
        physical_lines(p) for p in landing.rglob("*.json*") if p.name not in ("part-plain.json.gz", "part-cut.json.gz")
    )
    assert sum(r.rows_landed for r in results) == good_lines > 0
    assert [(r["status"], r["reason"]) for r in _ledger(spark, cfg, "part-plain.json.gz")] == [
        ("quarantined", "not_gzip")
    ]
    assert [(r["status"], r["reason"]) for r in _ledger(spark, cfg, "part-cut.json.gz")] == [
        ("quarantined", "truncated_gzip")
    ]
    assert [(r["status"], r["reason"]) for r in _ledger(spark, cfg, "p.parquet")] == [("skipped", "entity_snapshot")]
    assert "not a site's Parquet snapshot" in _ledger(spark, cfg, "p.parquet")[0]["detail"]
    site = next(r for r in results if r.family == "site")
    assert site.files_quarantined == 2 and any("part-cut.json.gz" in p for p in site.problems)


def test_gzip_files_are_judged_alike_on_the_driver_and_in_spark(spark, poisoned):
    from pipelines.activity_log.bronze.land import gzip_verdicts
    from pipelines.activity_log.bronze.listing import list_landing

    cfg, landing, _, _, _ = poisoned
    listed = list_landing(spark, str(landing))
    on_driver = gzip_verdicts(spark, listed, on_driver=True)
    in_spark = gzip_verdicts(spark, listed, on_driver=False)  # the path object storage takes
    assert in_spark == on_driver
    gz_files = sum(p.name.endswith(".gz") for p in landing.rglob("*"))
    assert sum(v[0] == "landed" for v in in_spark.values()) == gz_files - 2
    assert {v[1] for v in in_spark.values()} == {None, "not_gzip", "truncated_gzip"}


def test_a_replaced_poison_file_lands_on_the_next_run(spark, poisoned):
    cfg, landing, folder, payload, _ = poisoned
    for name in ("part-plain.json.gz", "part-cut.json.gz"):
        (folder / name).write_bytes(gzip.compress(payload))
        os.utime(folder / name, (1_900_000_000, 1_900_000_000))  # a new version: other size and time
    results = land_bronze(spark, cfg, new_run_id(), log=lambda _m: None)
    lines = payload.decode("utf-8").count("\n")
    assert sum(r.rows_landed for r in results) == 2 * lines
    for name in ("part-plain.json.gz", "part-cut.json.gz"):
        assert sorted(r["status"] for r in _ledger(spark, cfg, name)) == ["landed", "quarantined"]


def test_a_file_changed_after_landing_is_reported_not_landed_again(spark, poisoned):
    cfg, landing, folder, payload, _ = poisoned
    target = sorted(folder.glob("part-0*.json"))[0]
    before = landed(spark, cfg, "site").count()
    with open(target, "ab") as fh:
        fh.write(payload.splitlines(keepends=True)[0])
    results = land_bronze(spark, cfg, new_run_id(), log=lambda _m: None)
    assert landed(spark, cfg, "site").count() == before
    site = next(r for r in results if r.family == "site")
    assert site.files_changed == 1 and any(str(target) in p for p in site.problems)
    assert sorted(r["status"] for r in _ledger(spark, cfg, str(target.relative_to(landing)))) == ["changed", "landed"]
    again = land_bronze(spark, cfg, new_run_id(), log=lambda _m: None)  # reported once, then known
    assert next(r for r in again if r.family == "site").files_changed == 0


def test_a_tree_with_no_activity_log_file_says_so(spark, lake_dir):
    cfg = variant(lake_dir, "unrecognised")
    landing = cfg.path("paths.landing_dir")
    snapshot = landing / "siteLuid=s1" / "y=2026" / "m=06" / "d=01" / "entityType=users" / "p.parquet"
    snapshot.parent.mkdir(parents=True)
    snapshot.write_bytes(b"PAR1")
    (landing / "notes.md").write_text("hello\n")
    messages = []
    results = land_bronze(spark, cfg, new_run_id(), log=messages.append)
    assert sum(r.rows_landed for r in results) == 0
    said = [m for m in messages if "none of the 2 files" in m]
    assert said and "entity_snapshot" in said[0] and "siteLuid=" in said[0]


def test_files_of_a_run_killed_before_its_ledger_commit_are_not_landed_again(spark, lake_dir):
    from pipelines.activity_log.bronze.land import _state_path
    from pipelines.lake import storage

    cfg = variant(lake_dir, "unledgered")
    generate_activity_log(cfg.path("paths.landing_dir"), 300, seed=29, days=1)
    run_id = new_run_id()
    land_bronze(spark, cfg, run_id, log=lambda _m: None)
    ledger_table = tables(cfg).file_ledger
    files = spark.table(ledger_table).count()
    before = {f: landed(spark, cfg, f).count() for f in bronze.FAMILIES}
    # what a kill between bronze's commits and the ledger's commit leaves behind
    spark.sql(f"DELETE FROM {ledger_table} WHERE run_id = '{run_id}'")
    storage.write_text(spark, _state_path(cfg), f'{{"in_progress": "{run_id}"}}')
    results = land_bronze(spark, cfg, new_run_id(), log=lambda _m: None)
    assert sum(r.rows_landed for r in results) == 0
    assert {f: landed(spark, cfg, f).count() for f in bronze.FAMILIES} == before
    recovered = spark.table(ledger_table).where(F.col("run_id") == run_id)
    assert recovered.count() == files and recovered.where("status <> 'landed'").count() == 0
    assert recovered.agg(F.sum("rows")).first()[0] == sum(before.values())


def test_odd_file_names_land_once_on_a_machine_outside_utc(spark, lake_dir, monkeypatch):
    """Each path reaches Spark as the one file it names (glob characters escaped; the paths cross to
    the JVM as one string), and the ledger's times are UTC whatever this process's zone: the run after
    knows every file (a time read as local would make each one "changed")."""
    import time

    cfg = variant(lake_dir, "oddnames")
    landing = cfg.path("paths.landing_dir")
    generate_activity_log(landing, 200, seed=31, days=1)
    for i, odd in enumerate(("part [1].json", "part{a,b}*?.json", "part+plus %41.json", "part\\back.json")):
        source = sorted((landing / "site").rglob("part-*.json"))[i]
        source.rename(source.with_name(odd))
    files = {str(p) for p in landing.rglob("*") if p.is_file()}
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        results = land_bronze(spark, cfg, new_run_id(), log=lambda _m: None)
        assert sum(r.rows_landed for r in results) == lines_under(landing)
        got = {
            r["source_file"]
            for fam in bronze.FAMILIES
            for r in landed(spark, cfg, fam).select("source_file").distinct().collect()
        }
        assert got == files
        again = land_bronze(spark, cfg, new_run_id(), log=lambda _m: None)
        assert [(r.rows_landed, r.files_changed) for r in again] == [(0, 0), (0, 0)]
    finally:
        monkeypatch.undo()  # the zone this process had, in the environment and in the time module
        time.tzset()
