"""`auditlake export hyper` (pipelines/hyper/export.py): the analysts' marts in one Hyper file, read
back with Tableau's own engine and compared with the tables row for row; a second export with nothing
new leaves the file's bytes alone; new and rewritten fact rows are upserted; a key rotation rewrites all.

It works on a copy of the gold tests' analysts' tables (the shared lake stays as it is): the copy is
changed as a refresh changes it, a fact gaining rows and a row rewritten under its key."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from pipelines.analyst.publish import CATALOG_FILE, tables_location
from pipelines.config.load import load_config
from pipelines.hyper.export import SCHEMA, WATERMARK, export_hyper, hyper_frame, hyper_path, incremental_keys
from pipelines.lake import storage
from tests.lake import clear_person_keys, fingerprints, variant_environ

FACT = "fct_logins"  # an incremental fact (unique_key event_id) the gold lake has rows in


@pytest.fixture(scope="module")
def hyper_lake(gold_lake, lake_dir, tmp_path_factory):
    """The gold lake's configuration with a copy of its analysts' tables, and an export folder."""
    root = tmp_path_factory.mktemp("hyper")
    shutil.copytree(gold_lake[0].analyst_dir, root / "analyst")
    environ = dict(
        variant_environ(lake_dir, "gold"),
        AUDITLAKE__ANALYST__DIR=str(root / "analyst"),
        AUDITLAKE__HYPER__OUT_DIR=str(root / "out"),
    )
    return load_config("test", environ=environ), environ


@pytest.fixture(scope="module")
def first(spark, hyper_lake):
    cfg, _environ = hyper_lake
    return export_hyper(spark, cfg, log=lambda _m: None)


def _catalog(cfg) -> dict:
    return json.loads(Path(cfg.analyst_dir, CATALOG_FILE).read_text(encoding="utf-8"))


def _write_catalog(spark, cfg, catalog: dict) -> None:
    storage.write_text(spark, storage.join(cfg.analyst_dir, CATALOG_FILE), json.dumps(catalog))


def _copy(spark, cfg, name: str):
    return spark.read.format("delta").load(storage.join(tables_location(cfg), name))


def _read_back(path: Path, names: list[str], out: Path) -> dict[str, tuple[list, Path]]:
    """Each table's (columns with Hyper's types, its rows as Parquet written by Hyper itself)."""
    from tableauhyperapi import Connection, HyperProcess, TableName, Telemetry

    out.mkdir(parents=True, exist_ok=True)
    found = {}
    with HyperProcess(Telemetry.DO_NOT_SEND_USAGE_DATA_TO_TABLEAU, parameters={"log_config": ""}) as hyper:
        with Connection(hyper.endpoint, str(path)) as conn:
            for name in names:
                columns = conn.catalog.get_table_definition(TableName(SCHEMA, name)).columns
                parquet = out / f"{name}.parquet"
                conn.execute_command(f'COPY (SELECT * FROM "{SCHEMA}"."{name}") TO \'{parquet}\' WITH (FORMAT PARQUET)')
                found[name] = ([(str(c.name.unescaped), str(c.type)) for c in columns], parquet)
    return found


def _as_text(frame):
    return frame.select(*[F.col(f"`{c}`").cast("string").alias(c) for c in frame.columns])


def _assert_equal(spark, cfg, path: Path, out: Path, names: list[str] | None = None) -> None:
    names = names or sorted(_catalog(cfg)["marts"])
    back = _read_back(path, names, out)
    compared = {}
    for name in names:
        expected = hyper_frame(_copy(spark, cfg, name))
        columns, parquet = back[name]
        assert [c for c, _t in columns] == expected.columns, name
        compared[f"expected {name}"] = _as_text(expected)
        compared[f"hyper {name}"] = _as_text(spark.read.parquet(str(parquet)))
    # row for row (a fingerprint of each, every table's in one job: CI time, issue 30)
    prints = fingerprints(compared)
    differ = [n for n in names if prints[f"hyper {n}"] != prints[f"expected {n}"]]
    assert differ == [], f"{differ} differ from the analysts' tables"


def test_every_mart_reads_back_from_hyper_as_the_analysts_see_it(spark, hyper_lake, first, tmp_path):
    cfg, _environ = hyper_lake
    assert first.path == hyper_path(cfg) and first.path.is_file()
    catalog = _catalog(cfg)
    assert sorted(m.name for m in first.marts) == sorted(catalog["marts"]) and len(first.marts) > 20
    assert {m.action for m in first.marts} == {"created"}
    assert {m.name for m in first.marts if m.mode == "upsert"} >= {FACT, "fct_sessions", "fct_background_jobs"}
    assert {m.name for m in first.marts if m.mode == "upsert"} <= set(incremental_keys())
    _assert_equal(spark, cfg, first.path, tmp_path)
    # Tableau-friendly types, and masked values only (the analysts' pseudonyms)
    columns = dict(_read_back(first.path, [FACT], tmp_path / "types")[FACT][0])
    assert columns["event_time"] == "TIMESTAMP" and columns["silver_ingest_ts"] == "TIMESTAMP"
    assert columns["user_email"] == "TEXT"
    emails = spark.read.parquet(str(tmp_path / f"{FACT}.parquet")).where("user_email IS NOT NULL")
    assert emails.count() > 0 and emails.where(~F.col("user_email").startswith("pii:")).count() == 0


def test_the_hyper_file_holds_no_person_luid_in_clear(spark, hyper_lake, first, tmp_path):
    """Read back with Hyper itself: no cell of any table equals a person's LUID or user id that silver holds
    (the analysts' pseudonyms, as in their copies)."""
    cfg, _environ = hyper_lake
    back = _read_back(first.path, sorted(_catalog(cfg)["marts"]), tmp_path)
    frames = {name: spark.read.parquet(str(parquet)) for name, (_columns, parquet) in back.items()}
    assert clear_person_keys(spark, cfg, frames) == {}


def test_a_second_export_with_nothing_new_writes_nothing(spark, hyper_lake, first):
    cfg, _environ = hyper_lake
    before = (hashlib.sha256(first.path.read_bytes()).hexdigest(), first.path.stat().st_mtime_ns)
    again = export_hyper(spark, cfg, log=lambda _m: None)
    assert again.written == [] and "nothing new" in again.summary
    assert (hashlib.sha256(first.path.read_bytes()).hexdigest(), first.path.stat().st_mtime_ns) == before


def test_new_and_rewritten_fact_rows_are_upserted_and_a_new_key_rewrites_everything(spark, hyper_lake, first, tmp_path):
    cfg, _environ = hyper_lake
    location = storage.join(tables_location(cfg), FACT)
    copy = _copy(spark, cfg, FACT)
    newest = copy.agg(F.max(WATERMARK)).first()[0]
    later = F.lit(newest + timedelta(minutes=5))
    # as a refresh would: three new rows, and one row rewritten under its key with a newer timestamp
    new_rows = copy.limit(3).withColumn("event_id", F.concat(F.lit("new-"), "event_id")).withColumn(WATERMARK, later)
    rewritten_id = copy.orderBy("event_id").first()["event_id"]
    rewritten = (
        copy.where(F.col("event_id") == rewritten_id)
        .withColumn("outcome_reason", F.lit("rewritten"))
        .withColumn(WATERMARK, later)
    )
    changed = copy.where(F.col("event_id") != rewritten_id).unionByName(rewritten).unionByName(new_rows)
    changed.localCheckpoint().write.format("delta").mode("overwrite").save(location)
    catalog = _catalog(cfg)
    catalog["marts"][FACT]["source_version"] += 1
    _write_catalog(spark, cfg, catalog)

    second = export_hyper(spark, cfg, log=lambda _m: None)
    assert [(m.name, m.action, m.rows) for m in second.written] == [(FACT, "appended", 4)]
    _assert_equal(spark, cfg, second.path, tmp_path / "second", [FACT])

    catalog["key_id"] = "pii:another-key"  # a new pseudonym key: every pseudonym changed
    _write_catalog(spark, cfg, catalog)
    rotated = export_hyper(spark, cfg, log=lambda _m: None)
    assert rotated.full and {m.action for m in rotated.marts} == {"replaced"}
    _assert_equal(spark, cfg, rotated.path, tmp_path / "rotated", [FACT, "dim_users", "rpt_detections"])


def test_an_export_needs_the_analysts_tables_and_a_local_folder(spark, hyper_lake, tmp_path):
    from pipelines.hyper.export import HyperExportError

    cfg, environ = hyper_lake
    with pytest.raises(HyperExportError, match="Hyper writes a local file"):
        export_hyper(spark, cfg, out="s3a://bucket/hyper", log=lambda _m: None)
    empty = load_config("test", environ=dict(environ, AUDITLAKE__ANALYST__DIR=str(tmp_path / "none")))
    with pytest.raises(HyperExportError, match="run `auditlake refresh`"):
        export_hyper(spark, empty, log=lambda _m: None)


def test_the_packaged_data_source_declares_every_mart_related_captioned_and_described(first, tmp_path):
    """``auditlake.tdsx``: the Hyper file itself and a .tds whose logical tables are the file's tables,
    whose fields have the file's names and types, a caption and a description, whose relationships form
    the tree Tableau's logical layer needs on columns of one type on both sides, and whose calculated
    fields name existing fields."""
    from xml.etree import ElementTree as ET

    from pipelines.hyper.tdsx import _TYPES, EXTRACTS_DIR, ROOT, TDS_FILE, read_hyper_tables, write_tdsx

    package = write_tdsx(first.path, tmp_path / "auditlake.tdsx")
    with zipfile.ZipFile(package) as archive:
        assert sorted(archive.namelist()) == sorted([TDS_FILE, f"{EXTRACTS_DIR}/{first.path.name}"])
        assert archive.read(f"{EXTRACTS_DIR}/{first.path.name}") == first.path.read_bytes()
        ds = ET.fromstring(archive.read(TDS_FILE))
    columns = read_hyper_tables(first.path)
    assert len(columns) > 20 and "export_marks" not in columns
    objects = {o.get("id")[1:-1] for o in ds.iter("object")}
    assert objects == set(columns) == {r.get("name") for r in ds.find("connection/relation[@type='collection']")}
    # every column of every table once, typed as the file types it
    field_of, seen = {}, set()
    for record in ds.iter("metadata-record"):
        table, column = record.findtext("parent-name")[1:-1], record.findtext("remote-name")
        hyper_type = dict(columns[table])[column]
        assert record.findtext("local-type") == _TYPES[hyper_type][0], (table, column)
        assert record.findtext("object-id") == f"[{table}]"
        field_of[record.findtext("local-name")] = (table, column)
        seen.add((table, column))
    assert seen == {(t, c) for t, cols in columns.items() for c, _t in cols}
    assert len(field_of) == len(seen)  # field names unique across the data source
    # a caption and a description for every field of every mart
    fields = {c.get("name"): c for c in ds.findall("column")}
    for name in field_of:
        assert fields[name].get("caption"), name
        assert (fields[name].findtext("desc/formatted-text/run") or "").strip(), f"{field_of[name]} has no description"
    # relationships: a tree over every table, each pair of fields in the two end points' tables, same type
    parent = {}
    for link in ds.iter("relationship"):
        first_end = link.find("first-end-point").get("object-id")[1:-1]
        second_end = link.find("second-end-point").get("object-id")[1:-1]
        assert first_end not in parent, f"{first_end} has two parents"
        parent[first_end] = second_end
        pairs = [e.findall("expression") for e in link.iter("expression") if e.get("op") == "="]
        assert pairs
        for mine, theirs in pairs:
            (t1, c1), (t2, c2) = field_of[mine.get("op")], field_of[theirs.get("op")]
            assert (t1, t2) == (first_end, second_end)
            assert dict(columns[t1])[c1] == dict(columns[t2])[c2]
    assert set(parent) == set(columns) - {ROOT}
    for table in columns:  # every table reaches the root
        hops = 0
        while table != ROOT:
            table, hops = parent[table], hops + 1
            assert hops < len(columns)
    assert parent["fct_logins"] == "dim_users" and parent["fct_permission_changes"] == "dim_content"
    assert parent["rpt_failed_login_bursts"] == "fct_logins" and parent["fct_writeback_changes"] == "dim_users"
    # calculated fields name fields of the data source; folders hold every field once
    formulas = [c.find("calculation").get("formula") for c in ds.findall("column") if c.find("calculation") is not None]
    assert any("Failed" in (c.get("caption") or "") for c in ds.findall("column") if c.find("calculation") is not None)
    for formula in formulas:
        assert set(re.findall(r"\[[^\]]+\]", formula)) <= set(field_of), formula
    items = [i.get("name") for i in ds.iter("folder-item")]
    assert sorted(items) == sorted(field_of)


def test_publish_on_refresh_exports_and_publishes_and_a_failure_leaves_the_refresh_standing(
    spark, hyper_lake, first, tmp_path, monkeypatch
):
    """tableau.publish_on_refresh: after gold, the export and `auditlake publish` (to the loopback
    Tableau REST API); with Tableau out of reach a line says so and the refresh is not failed."""
    from auditlake_devtools.tableau_server import TableauServer
    from pipelines.hyper.publish import STATE_FILE
    from pipelines.refresh import RefreshReport, publish_after_gold

    cfg, environ = hyper_lake
    tableau = TableauServer.start(token_name="auditlake", token_secret="s3cr3t", projects={"Default": "p-1"})
    monkeypatch.setenv("AUDITLAKE_TABLEAU_TOKEN_NAME", "auditlake")
    monkeypatch.setenv("AUDITLAKE_TABLEAU_TOKEN", "s3cr3t")
    on = load_config(
        "test",
        environ=dict(
            environ,
            AUDITLAKE__TABLEAU__PUBLISH_ON_REFRESH="true",
            AUDITLAKE__TABLEAU__SERVER_URL=tableau.url,
            AUDITLAKE_TABLEAU_TOKEN_NAME="auditlake",
            AUDITLAKE_TABLEAU_TOKEN="s3cr3t",
        ),
    )
    try:
        report, lines = RefreshReport("run-1", ["gold"]), []
        publish_after_gold(spark, on, report, lines.append)
        assert report.published is not None and report.published.mode == "overwrite", lines
        assert "publish" in tableau.ops() and hyper_path(on).with_name(STATE_FILE).is_file()
    finally:
        tableau.stop()
    catalog = _catalog(on)  # a mart moved since: the next publish has something to send, and Tableau is gone
    catalog["marts"]["dim_users"]["source_version"] += 1
    _write_catalog(spark, on, catalog)
    report, lines = RefreshReport("run-2", ["gold"]), []
    publish_after_gold(spark, on, report, lines.append)
    assert report.published is None
    assert any(line.startswith("publish: not published (") and "the refresh stands" in line for line in lines), lines
