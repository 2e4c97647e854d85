"""`auditlake erase` on the shared gold lake, after every other test of it: one person pseudonymised in
every layer, old versions vacuumed, the erasure recorded, reconciliation still balanced, a later refresh
adds nothing."""

from __future__ import annotations

import json
import os
import re
from functools import reduce
from pathlib import Path

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.analyst.publish import tables_location as analyst_tables_location
from pipelines.config.load import load_config
from pipelines.errors import UsageError
from pipelines.integrity.reconcile import reconcile, reconcile_files
from pipelines.lake import storage
from pipelines.lake.delta_tables import COMMIT_NOTE, ensure_schema, table_bytes, table_files, table_names, table_version
from pipelines.lake.table_names import tables
from pipelines.personal_data.erase.landing import rewritten_pieces
from pipelines.personal_data.erase.pending import PENDING_DIR, PendingErasure, clear_pending, load_pending, save_pending
from pipelines.personal_data.erase.person import TOKEN_PREFIX, Person, PersonNotFound, token_for
from pipelines.personal_data.erase.rewrite import pseudonymise, pseudonymise_table, rows_rewritten_by
from pipelines.personal_data.erase.run import erase_person
from pipelines.refresh import run_refresh
from pipelines.runtime.spark_session import ROW_BYTES_AT_LEAST, session_conf, small_and_large, small_tables
from tests.lake import file_gone, holding_by_table, variant_environ

pytestmark = [pytest.mark.slow(minutes=8)]

SALT = "test-salt"


def _quiet(_message: str) -> None:
    pass


def _lake_tables(spark, cfg) -> list[str]:
    """Every table that may hold a person: each layer's, and gold's staging schema's (dbt's incremental
    intermediate tables, e.g. the site-role history)."""
    out = []
    for schema in tables(cfg).table_schemas:
        if spark.catalog.databaseExists(schema):
            out += [f"{schema}.{n}" for n in sorted(table_names(spark, schema, views=False))]
    return out


def _rows_holding(spark, table: str | DataFrame, values: list[str], version: int | None = None) -> int:
    if isinstance(table, DataFrame):
        frame = table
    else:
        reader = spark.read.format("delta")
        frame = (reader.option("versionAsOf", version) if version is not None else reader).table(table)
    text = F.lower(F.to_json(F.struct(*[F.col(f"`{c}`") for c in frame.columns])))
    hit = F.lit(False)
    for v in values:
        hit = hit | text.contains(v.lower())
    return frame.where(hit).count()


def _counts(spark, cfg) -> dict[str, int]:
    # one count per table: Delta answers each from its log, where a union of them all reads every file
    return {
        name: spark.table(name).count()
        for name in _lake_tables(spark, cfg)
        if name not in (tables(cfg).refresh_runs, tables(cfg).dq_results)
    }


@pytest.fixture(scope="module")
def erased(spark, gold_lake):
    """The shared gold lake (site, tenant, entity snapshots, write-back; tests/conftest.py), its person
    in all of them, then that person erased: this module runs after every other one on that lake."""
    cfg = gold_lake[0]
    t = tables(cfg)
    values = [gold_lake.person["email"], gold_lake.person["user_luid"]]
    before = {name: table_version(spark, name) for name in _lake_tables(spark, cfg)}
    # (and the one-job search the tests after the erasure rely on finds them, as a table's own search does)
    held = [t.writeback_audit, t.bronze_raw("tenant"), t.silver_events("site")]
    holding = holding_by_table({name: spark.table(name) for name in held}, values)
    assert holding.get(t.writeback_audit, 0) > 0, "the person is in write-back"
    assert holding.get(t.bronze_raw("tenant"), 0) > 0, "the person is in tenant events"
    assert holding[t.silver_events("site")] == _rows_holding(spark, t.silver_events("site"), values) > 0

    with pytest.raises(PersonNotFound, match="no user with email 'nobody@example.com'"):
        erase_person(spark, cfg, "nobody@example.com", SALT, log=_quiet)
    unchanged = {name: table_version(spark, name) for name in _lake_tables(spark, cfg)}
    assert unchanged == before, "a person not found changes nothing"

    report = erase_person(spark, cfg, gold_lake.person["email"], SALT, requested_by="dpo-ticket-17", log=_quiet)
    return cfg, values, before, report


def test_erase_rejects_what_is_not_an_identifier(spark, cfg):
    with pytest.raises(UsageError, match="give a user LUID"):
        erase_person(spark, cfg, "just-a-name", SALT, log=_quiet)


def test_no_table_holds_the_person_after_erase(spark, erased):
    cfg, values, _before, report = erased
    t = tables(cfg)
    for table in (
        t.bronze_raw("site"),
        t.bronze_raw("tenant"),
        t.writeback_raw,
        t.silver_events("site"),
        t.silver_events("tenant"),
        t.writeback_audit,
        t.bronze_entity("users"),
        t.entity_history("users"),
    ):
        assert report.rows_by_table.get(table, 0) > 0, table
    assert any(name.startswith(t.gold_schema + ".") for name in report.rows_by_table)
    # dbt's incremental intermediate tables (gold's staging schema) hold the person's LUID too
    assert report.rows_by_table.get(f"{t.gold_staging_schema}.int_site_actors", 0) > 0
    assert holding_by_table({name: spark.table(name) for name in _lake_tables(spark, cfg)}, values) == {}
    # pseudonymised, not deleted: the tokens stand where the values were, and raw lines are still JSON
    assert _rows_holding(spark, t.silver_events("site"), [TOKEN_PREFIX]) > 0
    raw = spark.table(t.bronze_raw("tenant")).where(F.col("raw_line").contains(TOKEN_PREFIX))
    assert raw.where(F.col("parse_status") == "ok").count() > 0
    assert (
        raw.where(
            F.get_json_object("raw_line", "$.eventType").isNull()
            & F.get_json_object("raw_line", "$.event_type").isNull()
        ).count()
        == 0
    )


def _folder(table: str) -> str:
    """The end of a managed table's path: ``<schema>.db/<table>``."""
    schema, name = table.split(".")
    return f"{schema}.db/{name}"


def test_older_versions_are_not_readable(spark, erased):
    """Every table vacuumed had rows rewritten: files of its version before the erasure held them, and
    reading that version fails on the first of them the vacuum deleted."""
    cfg, values, before, report = erased
    assert report.tables_vacuumed == list(report.rows_by_table) and all(report.rows_by_table.values())
    for table in report.tables_vacuumed:
        with pytest.raises(Py4JJavaError, match=file_gone(_folder(table))):
            _rows_holding(spark, table, values, version=before[table])


def test_no_change_feed_holds_a_value_from_before_the_erasure(spark, erased):
    """Bronze's tables and the marts keep Delta's change data feed: the erasure's update pre-images
    (``_change_data/``) went with the vacuum."""
    cfg, values, before, report = erased
    feeds = [
        table
        for table in report.tables_vacuumed
        if spark.sql(f"SHOW TBLPROPERTIES {table} ('delta.enableChangeDataFeed')").first()["value"] == "true"
    ]
    assert tables(cfg).bronze_raw("site") in feeds and any(t.startswith(tables(cfg).gold_schema + ".") for t in feeds)
    for table in feeds:
        changes = (
            spark.read.format("delta")
            .option("readChangeFeed", "true")
            .option("startingVersion", before[table] + 1)
            .table(table)
            .drop("_change_type")
        )
        # the erasure's UPDATE wrote its pre-images there: the vacuum deleted them
        with pytest.raises(Py4JJavaError, match=file_gone(f"{_folder(table)}/_change_data")):
            _rows_holding(spark, changes, values)


def test_the_erasure_is_recorded_without_the_values(spark, erased):
    cfg, values, _before, report = erased
    rows = spark.table(tables(cfg).erasures).where(F.col("erasure_id") == report.erasure_id).collect()
    assert len(rows) == 1
    record = rows[0].asDict()
    assert record["identifier_kind"] == "email" and record["requested_by"] == "dpo-ticket-17"
    assert record["rows_total"] == report.rows_total > 0
    assert record["rows_by_table"] == report.rows_by_table
    assert record["vacuum_retain_hours"] == 0 and all(tok.startswith(TOKEN_PREFIX) for tok in record["tokens"])
    assert record["status"] == "done" and record["started_at"] <= record["erased_at"]
    assert not any(v.lower() in json.dumps(record, default=str).lower() for v in values)
    # the state a re-run would have needed (the identifiers in clear) went with the erasure
    assert load_pending(spark, cfg) is None
    assert not (Path(cfg.checkpoint_dir) / PENDING_DIR).exists()


def test_a_state_file_cut_short_by_a_kill_leaves_the_one_before(spark, tmp_path):
    environ = variant_environ(tmp_path, "erase_state")
    cfg = load_config("test", environ=environ)
    pending = PendingErasure(
        "erase-x",
        "2026-06-01T00:00:00+00:00",
        "dpo",
        "email",
        ["a@example.com"],
        ["A"],
        {"a@example.com": "erased:1", "A": "erased:2"},
        ["bronze.t", "silver.t"],
        {},
        True,
        0,
    )
    save_pending(spark, cfg, pending)
    pending.rows_by_table["bronze.t"] = 3
    save_pending(spark, cfg, pending)
    folder = Path(cfg.checkpoint_dir) / PENDING_DIR
    assert sorted(p.name for p in folder.glob("*.json")) == ["000002.json"], "older states are removed"
    (folder / "000003.json").write_text('{"erasure_id": "erase-x", "rows_by', encoding="utf-8")  # killed mid-write
    loaded = load_pending(spark, cfg)
    assert loaded.rows_by_table == {"bronze.t": 3} and loaded.person().keys == {"a@example.com"}
    clear_pending(spark, cfg)
    assert load_pending(spark, cfg) is None and not folder.exists()


def test_a_state_file_the_lake_did_not_seal_is_never_finished(spark, tmp_path):
    """Whoever can write the checkpoint folder could plant a pending erasure (any values, any tokens) for
    the next refresh to finish and sign: a state is sealed with the lake's signing key when written, and
    one planted, or changed after it was sealed, is set aside and named, never finished."""
    cfg = load_config("test", environ=variant_environ(tmp_path, "erase_sealed"))
    folder = Path(cfg.checkpoint_dir) / PENDING_DIR
    state = PendingErasure(
        "erase-y", "2026-06-01T00:00:00+00:00", "dpo", "email", ["b@example.com"], [], {}, ["bronze.t"], {}, True, 0
    )
    save_pending(spark, cfg, state)
    assert load_pending(spark, cfg).erasure_id == "erase-y"

    sealed = json.loads((folder / "000001.json").read_text(encoding="utf-8"))
    sealed["state"]["tokens"] = {"b@example.com": "erased:someone-else"}  # re-attributed after sealing
    (folder / ".000001.json.crc").unlink()  # (Hadoop's checksum beside it: a careful intruder removes it too)
    (folder / "000001.json").write_text(json.dumps(sealed), encoding="utf-8")
    said: list[str] = []
    assert load_pending(spark, cfg, log=said.append) is None
    assert re.fullmatch(
        rf"erase: {folder}/000001\.json is not an erasure this lake began \(its signature does not hold: it was "
        r"changed after it was sealed\): not finished, kept as 000001\.json\.refused-\d{8}T\d{12}Z \(someone "
        r"who can write the lake's folders wrote it, or changed it\)",
        said[-1],
    )
    planted = dict(sealed["state"])  # the bare state, as an older release wrote it
    (folder / "000002.json").write_text(json.dumps(planted), encoding="utf-8")
    assert load_pending(spark, cfg, log=said.append) is None
    assert "not a sealed state (no state and signature)" in said[-1]
    save_pending(spark, cfg, state)  # sealed again, then edited behind Hadoop's checksum
    sealed_again = folder / f"{state.seq:06d}.json"
    sealed_again.write_text(sealed_again.read_text(encoding="utf-8").replace("b@example", "c@example"))
    assert load_pending(spark, cfg, log=said.append) is None
    assert "its bytes do not match the checksum written with it" in said[-1]
    kept = sorted(p.name.split(".refused")[0] for p in folder.iterdir() if ".refused-" in p.name)
    assert kept == ["000001.json", "000002.json", sealed_again.name] and not list(folder.glob("*.json"))
    clear_pending(spark, cfg)


def test_a_server_log_piece_is_rewritten_line_by_line_as_bronzes_raw_lines(spark):
    """Only the lines holding the person change, each as bronze's raw line would (still JSON, the same
    tokens); a CRLF end and bytes that are not UTF-8 in another line are kept as they were."""
    person = Person("email", keys={"a@example.com", "0b7d5d8e-9f4e-4c1b-9a51-3f0e0f2a1c11"}, names={"Ana Silva"})
    tokens = {value: token_for(value, SALT) for value in person.identifiers()}
    held = '{"actorUserEmail": "A@Example.com", "user": "Ana Silva", "luid": "0B7D5D8E-9F4E-4C1B-9A51-3F0E0F2A1C11"}'
    other = b'{"actorUserEmail": "b@example.com", "note": "\xff"}'
    piece = held.encode() + b"\r\n" + other + b"\n" + b'{"by": "Ana Silvas"}\n'
    out = rewritten_pieces(spark, {"p.log": piece, "q.log": other + b"\n"}, person, tokens)
    assert list(out) == ["p.log"]  # a piece holding nobody is not rewritten
    first, second, third, end = out["p.log"].split(b"\n")
    assert first.endswith(b"\r") and (second, third, end) == (other, b'{"by": "Ana Silvas"}', b"")
    assert json.loads(first) == {
        "actorUserEmail": tokens["a@example.com"],
        "user": tokens["Ana Silva"],
        "luid": tokens["0b7d5d8e-9f4e-4c1b-9a51-3f0e0f2a1c11"],
    }
    bronze = spark.createDataFrame([(held,)], "raw_line string").select(
        pseudonymise(F.col("raw_line"), person, tokens).alias("raw_line")
    )
    assert first[:-1].decode() == bronze.first()["raw_line"]  # the rewrite of bronze's raw line


def _held_table(spark) -> str:
    """A table of five rows, three holding a@example.com (in any case, inside a JSON text)."""
    spark.sql("DROP SCHEMA IF EXISTS erase_commit CASCADE")
    ensure_schema(spark, "erase_commit")
    rows = [(1, "A@example.com", None), (2, "b@example.com", '{"by": "a@example.com"}'), (3, None, "x a@example.com")]
    rows += [(4, "b@example.com", "a@example.org"), (5, None, None)]
    frame = spark.createDataFrame(rows, "id int, email string, note string")
    frame.write.format("delta").saveAsTable("erase_commit.held")
    return "erase_commit.held"


def test_one_update_counts_the_rows_it_rewrites_and_a_run_killed_after_its_commit_finds_them(spark):
    table = _held_table(spark)
    person = Person("email", keys={"a@example.com"})
    tokens = {"a@example.com": token_for("a@example.com", SALT)}
    before = table_version(spark, table)
    with session_conf(spark, {COMMIT_NOTE: "erase-1"}):  # the erasure's id on its commit, as finish_erasure sets it
        assert pseudonymise_table(spark, table, person, tokens) == 3  # the UPDATE's own count
    assert table_version(spark, table) == before + 1
    assert _rows_holding(spark, table, ["a@example.com"]) == 0 and _rows_holding(spark, table, ["b@example.com"]) == 2
    # killed after the commit, before the count was kept: the re-run finds it in the table's history
    assert rows_rewritten_by(spark, table, "erase-1", before) == 3
    assert rows_rewritten_by(spark, table, "erase-2", before) is None  # another erasure's: not this one's
    assert rows_rewritten_by(spark, table, "erase-1", before + 1) is None  # no commit since
    # nothing left to rewrite: no commit
    assert pseudonymise_table(spark, table, person, tokens) == 0
    assert table_version(spark, table) == before + 1
    # a table with no data file: nothing to plan, no commit
    spark.sql(f"DELETE FROM {table}")
    emptied = table_version(spark, table)
    assert table_files(spark, table) == (0, 0)
    assert pseudonymise_table(spark, table, person, tokens) == 0
    assert table_version(spark, table) == emptied
    spark.sql("DROP SCHEMA erase_commit CASCADE")


def test_a_tables_size_comes_from_its_log_and_a_small_one_is_rewritten_interpreted(spark, cfg):
    table = _held_table(spark)
    size = spark.sql(f"DESCRIBE DETAIL {table}").first()["sizeInBytes"]
    assert table_bytes(spark, table) == size > 0
    assert table_bytes(spark, "erase_commit.missing") is None
    with small_tables(spark, cfg, [table]) as small:
        assert small and spark.conf.get("spark.sql.adaptive.enabled") == "false"
    assert spark.conf.get("spark.sql.adaptive.enabled") != "false"  # put back
    # its rows bounded by its size: at a threshold under that bound, or beside a table of unknown size, large
    bound = str(size // ROW_BYTES_AT_LEAST)
    fewer = load_config("test", environ={**os.environ, "AUDITLAKE__SPARK__CODEGEN_MIN_ROWS": bound})
    for config, names in ((fewer, [table]), (cfg, [table, "erase_commit.missing"])):
        with small_tables(spark, config, names) as small:
            assert not small, names
    # the erasure's split of a layer: the small tables (rewritten a few at once) and the others, in order
    assert small_and_large(spark, cfg, ["erase_commit.missing", table]) == ([table], ["erase_commit.missing"])
    assert small_and_large(spark, fewer, [table]) == ([], [table])
    spark.sql("DROP SCHEMA erase_commit CASCADE")


def test_reconcile_balances_and_a_refresh_adds_nothing(spark, erased):
    cfg, values, _before, _report = erased
    assert all(r.balanced for r in reconcile(spark, cfg))
    assert reconcile_files(spark, cfg).balanced
    counts_before = _counts(spark, cfg)
    after = run_refresh(spark, cfg, ["bronze", "silver", "gold"], log=_quiet)
    assert sum(p.bronze_rows for p in after.silver) == 0
    assert getattr(after.writeback.get("bronze"), "rows_landed", 0) == 0
    assert after.gold_skipped, "gold got the erasure too: nothing it reads changed"
    assert _counts(spark, cfg) == counts_before
    assert all(r.balanced for r in reconcile(spark, cfg)) and reconcile_files(spark, cfg).balanced
    assert _rows_holding(spark, tables(cfg).silver_events("site"), values) == 0


def test_the_analysts_copies_of_the_marts_hold_no_clear_value_after_erase(spark, erased):
    """The copies hold keyed pseudonyms of the person's LUIDs and values (of their tokens, after the
    erasure): copied again from the rewritten marts, and the versions before vacuumed."""
    cfg, values, _before, report = erased
    location = analyst_tables_location(cfg)
    copies = [name for name, is_dir in storage.list_status(spark, location) if is_dir]
    assert "fct_logins" in copies
    current = {name: spark.read.format("delta").load(storage.join(location, name)) for name in copies}
    assert holding_by_table(current, values) == {}
    rewritten = [name for name in copies if f"{tables(cfg).gold_schema}.{name}" in report.tables_vacuumed]
    assert "fct_logins" in rewritten
    for name in rewritten:
        # the copy the refresh made, before the erasure's (which copied the rewritten mart whole): its files
        # are gone
        folder = storage.join(location, name)
        old = spark.read.format("delta").option("versionAsOf", 0).load(folder)
        old_text = F.lower(F.to_json(F.struct(*[F.col(f"`{c}`") for c in old.columns])))
        with pytest.raises(Py4JJavaError, match=file_gone(folder)):
            old.where(reduce(lambda a, b: a | b, [old_text.contains(v.lower()) for v in values])).count()
