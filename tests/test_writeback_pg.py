"""Write-Back audit against a real PostgreSQL (started on loopback for the session): bronze and silver.

The tests run in file order on one lake variant: first landing, re-run, file == JDBC, late
rows, then failures that must leave everything as it was.
"""

from __future__ import annotations

import os
import random
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from auditlake_devtools.pg_server import PgServer
from auditlake_devtools.sample.writeback import (
    EXPORT_ONLY_KINDS,
    audit_row,
    generate_historical_audit,
    insert_sql,
    load_into_postgres,
    write_export,
)
from pipelines.config.load import load_config
from pipelines.lake import storage
from pipelines.lake.table_names import tables
from pipelines.writeback import COLUMNS
from pipelines.writeback.bronze import land_writeback, last_watermarks
from pipelines.writeback.silver import promote_writeback
from pipelines.writeback.source import WritebackSourceError, jdbc_source_name

QUIET = {"log": lambda _m: None}
DATABASES = {"metadata": "wb_metadata", "persistence": "wb_persistence"}
READER, PASSWORD_ENV = "writeback_reader", "AUDITLAKE_TEST_WRITEBACK_PASSWORD"
# silver columns that say where and when a row was read, not what it says
LINEAGE = ["database", "bronze_id", "source", "bronze_run_id", "bronze_ingest_ts", "silver_run_id", "silver_ingest_ts"]


@pytest.fixture(scope="session")
def pg(request):
    server = PgServer.start()
    request.addfinalizer(server.stop)
    return server


@pytest.fixture(scope="module")
def loaded(pg):
    """Both databases filled with the same generated rows as an export file."""
    rows = generate_historical_audit(120, seed=11, dirty=True)
    for database in DATABASES.values():
        pg.create_database(database)
    skipped = load_into_postgres(pg, DATABASES, rows)
    assert skipped == len(EXPORT_ONLY_KINDS)  # a NULL ID or a garbled date cannot be in the database
    password = os.urandom(8).hex()
    pg.create_reader(READER, password, list(DATABASES.values()), "historical_audit")
    return rows, {PASSWORD_ENV: password}


def variant(
    lake_dir: Path, name: str, pg: PgServer | None = None, secrets: dict[str, str] | None = None, **overrides: str
):
    environ = dict(os.environ) | (secrets or {})  # load_config checks the jdbc source's password is set
    environ["AUDITLAKE__PATHS__DATA_DIR"] = str(lake_dir / name)
    environ["AUDITLAKE__PATHS__LANDING_DIR"] = str(lake_dir / name / "landing")
    for layer in ("bronze", "silver", "ops"):
        environ[f"AUDITLAKE__{layer.upper()}__SCHEMA"] = f"{layer}_{name}"
    if pg is not None:
        environ |= {
            "AUDITLAKE__WRITEBACK__SOURCE": "jdbc",
            "AUDITLAKE__WRITEBACK__JDBC__HOST": pg.host,
            "AUDITLAKE__WRITEBACK__JDBC__PORT": str(pg.port),
            "AUDITLAKE__WRITEBACK__JDBC__USER": READER,
            "AUDITLAKE__WRITEBACK__JDBC__PASSWORD_ENV": PASSWORD_ENV,
            "AUDITLAKE__WRITEBACK__DATABASES__METADATA": DATABASES["metadata"],
            "AUDITLAKE__WRITEBACK__DATABASES__PERSISTENCE": DATABASES["persistence"],
        }
    environ |= {f"AUDITLAKE__WRITEBACK__{k.upper()}": v for k, v in overrides.items()}
    return load_config("test", environ=environ)


def refresh(spark, cfg, environ=None, **kw):
    landing = land_writeback(spark, cfg, "run", environ=environ, **QUIET, **kw)
    return landing, promote_writeback(spark, cfg, "run", **QUIET)


def db_rows(pg: PgServer, role: str) -> set[tuple[str, str]]:
    out = pg.psql(DATABASES[role], 'SELECT "ID" FROM historical_audit;')
    return {(role, line) for line in out.splitlines() if line}


def version(spark, table: str) -> int:
    return spark.sql(f"DESCRIBE HISTORY {table}").agg(F.max("version")).first()[0]


@pytest.fixture(scope="module")
def lake(spark, lake_dir, pg, loaded):
    cfg = variant(lake_dir, "wbjdbc", pg, secrets=loaded[1])
    first = refresh(spark, cfg, loaded[1])
    return cfg, first


def test_every_row_of_both_databases_lands_once(spark, pg, lake):
    cfg, (landing, promotion) = lake
    t = tables(cfg)
    expected = db_rows(pg, "metadata") | db_rows(pg, "persistence")
    bronze = spark.table(t.writeback_raw)
    landed = [(r["database"], r["ID"]) for r in bronze.select("database", "ID").collect()]
    assert len(landed) == len(set(landed)) and set(landed) == expected
    assert {d.database: d.rows_landed for d in landing.databases} == {
        "metadata": len(db_rows(pg, "metadata")),
        "persistence": len(db_rows(pg, "persistence")),
    }
    assert {r["source"] for r in bronze.collect()} == {jdbc_source_name(cfg, db) for db in DATABASES.values()}
    # silver: one row per valid ID; the flags say which database(s) held it
    audit = {r["id"]: r for r in spark.table(t.writeback_audit).collect()}
    assert promotion.inserted == len(audit) > 100
    for role in ("metadata", "persistence"):
        ids = {i for _, i in db_rows(pg, role)}
        assert {i for i, r in audit.items() if r[f"seen_in_{role}"]} == ids & set(audit)
    alters = [r for r in audit.values() if r["action_name"] == "ALTER_DATASET"]
    assert alters and all(r["seen_in_metadata"] and not r["seen_in_persistence"] for r in alters)
    assert {r["utc_offset_minutes"] for r in audit.values()} == {120, 180}  # the window crosses DST


def test_bad_rows_are_quarantined_with_reasons(spark, lake):
    cfg, (_, promotion) = lake
    quarantine = spark.table(tables(cfg).writeback_quarantine)
    got = sorted((r["reason"], r["raw_id"]) for r in quarantine.collect())
    assert [reason for reason, _ in got] == ["bad_date", "bad_id", "unknown_action"]
    assert got[1] == ("bad_id", "row-17")
    assert "ACTIONDATE_UTC is missing" in quarantine.where("reason = 'bad_date'").first()["detail"]
    assert promotion.reasons == {"bad_date": 1, "bad_id": 1, "unknown_action": 1}


def test_rerun_adds_nothing(spark, lake, loaded):
    cfg, _ = lake
    t = tables(cfg)
    before = {n: version(spark, n) for n in (t.writeback_raw, t.writeback_audit, t.writeback_quarantine)}
    landing, promotion = refresh(spark, cfg, loaded[1])
    assert landing.rows_landed == 0 and landing.errors == []
    # the overlap re-reads the last hour, and the undated row every time: read, not landed again
    assert all(d.rows_read > 0 and d.read_from_utc is not None for d in landing.databases)
    assert promotion.bronze_rows == 0
    assert {n: version(spark, n) for n in before} == before  # not one commit
    # bronze has no commit since silver last read it to its end: no stream is started at all
    said = []
    assert promote_writeback(spark, cfg, "run", log=said.append).bronze_rows == 0
    assert said == [f"writeback silver: nothing new in {t.writeback_raw}"]


def test_a_lake_with_no_source_starts_no_stream_and_its_first_export_gives_the_jdbc_silver(
    spark, lake_dir, lake, loaded
):
    """A site without the extension (writeback.source none) gets the tables empty and no stream (a
    stream's start is seconds of a lake's first run); once it has an export, the stream's first run promotes
    every row: the silver the databases themselves give."""
    cfg, _ = lake
    rows, _ = loaded
    none_cfg = variant(lake_dir, "wbfile", source="none")
    file = tables(none_cfg)
    said: dict[str, list[str]] = {"first": [], "next": []}
    for run, lines in said.items():
        land_writeback(spark, none_cfg, run, log=lines.append)
        assert promote_writeback(spark, none_cfg, run, log=lines.append).bronze_rows == 0
    assert said["first"][-1] == f"writeback silver: no rows in {file.writeback_raw} -> {file.writeback_audit} (empty)"
    assert said["next"][-1] == f"writeback silver: nothing new in {file.writeback_raw}"
    assert spark.table(file.writeback_audit).count() == spark.table(file.writeback_quarantine).count() == 0
    assert not storage.exists(spark, storage.join(none_cfg.checkpoint_dir, "silver_writeback"))
    export = write_export(lake_dir / "wbfile" / "historical_audit.ndjson", rows)
    file_cfg = variant(lake_dir, "wbfile", source="file", file__path=str(export))
    refresh(spark, file_cfg)
    jdbc = tables(cfg)
    assertDataFrameEqual(
        spark.table(file.writeback_audit).drop(*LINEAGE), spark.table(jdbc.writeback_audit).drop(*LINEAGE)
    )
    # the export also holds what no database can: those two rows are quarantined too
    quarantined = spark.table(file.writeback_quarantine).select("database", "reason", "raw_id")
    extra = quarantined.join(spark.table(jdbc.writeback_quarantine).select("raw_id"), "raw_id", "left_anti")
    assert sorted(r["reason"] for r in extra.collect()) == ["bad_date", "null_id"]


def insert_late(pg, role: str, when: datetime) -> str:
    """A new row committed now, dated ``when`` (UTC); returns its ID."""
    row = audit_row(
        random.Random(when.timestamp()),
        when,
        ZoneInfo("Europe/Athens"),
        ACTIONNAME="INSERT_DATA",
        DATASET="sales_forecast",
        WRITEBACK_SITE="default",
        USERNAME="late.committer",
        SYSTEM="Server",
    )
    pg.psql(DATABASES[role], insert_sql([row]))
    return row["ID"]


def copy_of(pg, row_id: str) -> dict:
    """A row of the metadata database, as it is there (to write it to the persistence database too)."""
    cols = ", ".join(f'"{c}"::text' for c in COLUMNS)
    line = pg.psql(DATABASES["metadata"], f"""SELECT {cols} FROM historical_audit WHERE "ID" = '{row_id}';""")
    return {c: (v or None) for c, v in zip(COLUMNS, line.strip().split("|"), strict=True)}


def test_a_row_committed_late_inside_the_overlap_lands(spark, pg, lake, loaded):
    cfg, _ = lake
    t = tables(cfg)
    watermark = last_watermarks(spark, cfg)[jdbc_source_name(cfg, DATABASES["metadata"])]
    overlap = timedelta(minutes=cfg.get("writeback.overlap_minutes"))
    inside = insert_late(pg, "metadata", watermark - overlap + timedelta(minutes=5))
    outside = insert_late(pg, "metadata", watermark - overlap - timedelta(minutes=5))
    landing, promotion = refresh(spark, cfg, loaded[1])
    landed = {r["ID"] for r in spark.table(t.writeback_raw).collect()}
    assert inside in landed
    # Documented limit: a row committed with an ACTIONDATE_UTC older than the overlap is missed
    # by the incremental read ...
    assert outside not in landed
    assert landing.rows_landed == 1 and promotion.inserted == 1
    # ... until a full scan (land_writeback(full_scan=True)) reads everything once more.
    full = land_writeback(spark, cfg, "run", environ=loaded[1], full_scan=True, **QUIET)
    assert full.rows_landed == 1 and outside in {r["ID"] for r in spark.table(t.writeback_raw).collect()}
    # the persistence copy of the first late row, committed later still: silver updates its flags
    pg.psql(DATABASES["persistence"], insert_sql([copy_of(pg, inside)]))
    _, promotion = refresh(spark, cfg, loaded[1])
    assert (promotion.inserted, promotion.updated) == (1, 1)  # the row of the full scan; the late copy
    late = spark.table(t.writeback_audit).where(F.col("id") == inside).first()
    assert late["seen_in_metadata"] and late["seen_in_persistence"] and not late["copies_differ"]


def test_wrong_password_fails_in_one_line_and_touches_nothing(spark, lake_dir, pg, lake, monkeypatch):
    from pipelines.refresh import run_refresh

    cfg, _ = lake
    t = tables(cfg)
    kept = (t.writeback_raw, t.writeback_watermarks)
    before = {n: version(spark, n) for n in kept}
    monkeypatch.setenv(PASSWORD_ENV, "not-the-password")
    with pytest.raises(WritebackSourceError) as caught:
        run_refresh(spark, cfg, ["bronze"], **QUIET)
    message = str(caught.value)
    for part in (
        f"host {pg.host}",
        f"port {pg.port}",
        "database wb_metadata",
        "database wb_persistence",
        "password authentication failed",
    ):
        assert part in message
    assert "\n" not in message and "not-the-password" not in message
    assert {n: version(spark, n) for n in kept} == before


def test_unreachable_server_names_host_port_database(spark, lake_dir, loaded):
    cfg = variant(
        lake_dir,
        "wbdown",
        secrets=loaded[1],
        source="jdbc",
        jdbc__host="127.0.0.1",
        jdbc__port="1",
        jdbc__password_env=PASSWORD_ENV,
    )
    landing = land_writeback(spark, cfg, "run", environ=loaded[1], **QUIET)
    assert len(landing.errors) == 2 and landing.rows_landed == 0
    assert landing.errors[0].startswith(
        "write-back metadata database unreachable or refused: host 127.0.0.1, port 1, database writeback_metadata: "
    )
    assert "Connection to 127.0.0.1:1 refused" in landing.errors[0] and "\n" not in landing.errors[0]
    # a lake's first run: the table made empty, so silver and gold go on (the refresh still ends in error)
    assert spark.table(tables(cfg).writeback_raw).count() == 0
