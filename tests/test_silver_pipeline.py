"""Bronze -> silver end to end on a generated dirty feed, through real Delta tables and streams."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from auditlake_devtools.sample.activity_log import UNKNOWN_TYPES, generate_activity_log
from pipelines.activity_log import bronze
from pipelines.activity_log.registry import event_specs
from pipelines.activity_log.silver.plan import family_plan
from pipelines.config.load import load_config
from pipelines.integrity.reconcile import reconcile, reconcile_files, run_figures
from pipelines.lake.silver_stamp import stamped_after
from pipelines.lake.table_names import tables
from pipelines.refresh import run_refresh
from tests.lake import BUNDLED_EXPORT

QUIET = {"log": lambda _m: None}


def variant(lake_dir: Path, name: str, **settings: str):
    environ = dict(os.environ, **settings)
    environ["AUDITLAKE__PATHS__DATA_DIR"] = str(lake_dir / name)
    environ["AUDITLAKE__PATHS__LANDING_DIR"] = str(lake_dir / name / "landing")
    for layer in ("bronze", "silver", "ops"):
        environ[f"AUDITLAKE__{layer.upper()}__SCHEMA"] = f"{layer}_{name}"
    return load_config("test", environ=environ)


@pytest.fixture(scope="module")
def lake(spark, lake_dir):
    # its tests read the event views, and count the bundled Write-Back export with the events
    cfg = variant(
        lake_dir,
        "silver",
        AUDITLAKE__SILVER__EVENT_VIEWS="true",
        AUDITLAKE__WRITEBACK__SOURCE="file",
        AUDITLAKE__WRITEBACK__FILE__PATH=str(BUNDLED_EXPORT),
    )
    landing = cfg.path("paths.landing_dir")
    summary = generate_activity_log(landing, 2000, seed=3, days=2, dirty=True)
    report = run_refresh(spark, cfg, ["bronze", "silver"], **QUIET)
    return cfg, landing, summary, report


def test_every_layer_run_is_logged_with_its_figures(spark, lake):
    """ops.refresh_runs holds a row per layer of the lake's refresh, with the report's figures (this
    module's lake: later tests refresh it again, so its run's rows are picked by run id)."""
    cfg, _landing, _summary, report = lake
    logged = spark.table(f"{cfg.get('ops.schema')}.refresh_runs").where(F.col("run_id") == report.run_id)
    rows = {r["layer"]: r for r in logged.collect()}
    assert set(rows) == {"bronze", "silver"}
    bronze_rows = sum(b.rows_landed for b in report.bronze) + report.writeback["bronze"].rows_landed
    assert rows["bronze"]["rows_in"] == bronze_rows > 2000
    silver = rows["silver"]
    assert silver["status"] == "succeeded"
    assert silver["rows_in"] == sum(p.bronze_rows for p in report.silver) + report.writeback["silver"].bronze_rows
    assert silver["quarantined"] == sum(p.quarantined for p in report.silver) + report.writeback["silver"].quarantined
    assert silver["rows_out"] == sum(p.inserted for p in report.silver) + report.writeback["silver"].inserted
    assert isinstance(silver["started_at"], datetime) and silver["finished_at"] >= silver["started_at"]


def total(results, attr):
    return sum(getattr(r, attr) for r in results)


def test_every_bronze_row_is_accounted_for(spark, lake):
    cfg, _, summary, report = lake
    results = reconcile(spark, cfg)
    assert all(r.balanced for r in results), results
    assert total(results, "bronze_rows") == summary["lines"]
    assert total(results, "pending") == 0 and total(results, "accounted_twice") == 0
    assert total(report.silver, "bronze_rows") == summary["lines"]
    runs = run_figures(spark, cfg)
    assert {r["silver_run_id"] for r in runs} == {report.run_id}
    files = reconcile_files(spark, cfg)  # and every file: landed, its rows the bronze rows
    assert files.balanced and files.bronze_rows == summary["lines"]
    assert sum(n for status, _, n, _ in files.verdicts if status == "landed") == summary["files"]


def test_each_dirty_kind_ends_where_it_should(spark, lake):
    cfg, _, summary, _ = lake
    t = tables(cfg)
    reasons = {
        r["reason"]: r["n"] for r in spark.table(t.quarantine).groupBy("reason").agg(F.count("*").alias("n")).collect()
    }
    dirty = summary["dirty"]
    assert reasons["blank_line"] >= dirty["blank_line"]
    assert reasons["malformed_json"] >= dirty["malformed_line"]
    assert reasons["bad_event_time"] == dirty["bad_event_time"]
    unknown = spark.table(t.quarantine).where("reason = 'unknown_event_type'")
    assert unknown.count() == dirty["unknown_event_type"]
    assert {r["event_type"] for r in unknown.collect()} <= set(UNKNOWN_TYPES)
    assert unknown.where(F.col("event_type").isNull()).count() == 0  # counted by name
    # copies of the same record, in one shape or the other, collapse to one silver row
    assert spark.table(t.duplicates).count() == dirty["duplicate_record"] + dirty["duplicate_other_shape"]


def test_unknown_attributes_and_bad_values_are_rescued(spark, lake):
    cfg, _, summary, _ = lake
    t = tables(cfg)
    rescued = [
        json.loads(r["_rescued_data"])
        for fam in bronze.FAMILIES
        for r in spark.table(t.silver_events(fam)).where("_rescued_data IS NOT NULL").select("_rescued_data").collect()
    ]
    invented = {"quantumFlux", "newFieldFrom2027", "vendorExtension"}
    with_unknown = [r for r in rescued if invented & set(r)]
    assert len(with_unknown) == summary["dirty"]["unknown_attribute"]
    assert len([r for r in rescued if not invented & set(r)]) == summary["dirty"]["bad_value"]
    assert any(v == '{"a":1}' for r in with_unknown for v in r.values())


def test_numbers_sent_as_strings_are_typed(spark, lake):
    cfg, landing, summary, _ = lake
    assert summary["dirty"]["number_as_string"] >= 2
    site = spark.table(tables(cfg).silver_events("site"))
    # every documented int attribute that is set holds an int: the schema is typed, and the
    # string-sent numbers did not end in _rescued_data (only bad_value records did)
    assert dict(site.dtypes)["actor_user_id"] == "bigint"  # every documented integer is 64-bit
    assert (
        site.where("_rescued_data IS NOT NULL").count()
        <= summary["dirty"]["bad_value"] + summary["dirty"]["unknown_attribute"]
    )


def test_rerun_changes_nothing(spark, lake):
    cfg, _, _, _ = lake
    t = tables(cfg)
    before = {
        name: spark.table(name).count()
        for name in (t.silver_events("site"), t.silver_events("tenant"), t.quarantine, t.duplicates)
    }
    report = run_refresh(spark, cfg, ["bronze", "silver"], **QUIET)
    assert total(report.bronze, "rows_landed") == 0
    assert total(report.silver, "bronze_rows") == 0
    after = {name: spark.table(name).count() for name in before}
    assert after == before


def test_duplicates_across_runs_collapse(spark, lake):
    cfg, landing, _, _ = lake
    t = tables(cfg)
    site_before = spark.table(t.silver_events("site")).count()
    dups_before = spark.table(t.duplicates).count()
    # the same records delivered again in a new file, in a later run, one of them in the other shape
    source = next(p for p in sorted((landing / "site").rglob("*.json")) if p.stat().st_size > 0)
    records = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()][:3]
    assert records
    first = records[0]
    if "event" in first:  # envelope -> flat
        flat = {"eventType": first["metadata"]["eventType"], **first["event"]}
    else:  # flat -> envelope
        flat = {
            "traceUuid": "redelivered",
            "event": {k: v for k, v in first.items() if k != "eventType"},
            "metadata": {"eventType": first["eventType"], "eventVersion": "1.0"},
        }
    redelivery = source.parent / "part-redelivered-1.json"
    redelivery.write_text("\n".join(json.dumps(r) for r in [*records, flat]) + "\n", encoding="utf-8")
    report = run_refresh(spark, cfg, ["bronze", "silver"], **QUIET)
    assert total(report.silver, "inserted") == 0
    assert total(report.silver, "duplicates") == len(records) + 1
    assert spark.table(t.silver_events("site")).count() == site_before
    dups = spark.table(t.duplicates).where(F.col("source_file") == str(redelivery))
    # each redelivered record matches silver; the other-shape copy of the first is a copy of a copy
    kinds = sorted(r["duplicate_of"] for r in dups.collect())
    assert kinds == ["already_in_silver"] * len(records) + ["same_batch"]
    assert spark.table(t.duplicates).count() == dups_before + len(records) + 1
    assert all(r.balanced for r in reconcile(spark, cfg))


def test_event_views_exist_with_documented_types(spark, lake):
    cfg, _, _, _ = lake
    t = tables(cfg)
    views = {r["viewName"] for r in spark.sql(f"SHOW VIEWS IN {t.silver_schema}").collect()}
    assert {s.event_type for s in event_specs()} <= views
    for family, event_type in [("site", "background_job"), ("site", "hist_login"), ("tenant", "create_user")]:
        plan = family_plan(family)
        types = dict(spark.table(t.event_view(event_type)).dtypes)
        for col in plan.event_columns(event_type):
            if col.attribute != "eventTime":
                assert types[col.column] == col.documented_type(event_type), (event_type, col.column)
    bj = dict(spark.table(t.event_view("background_job")).dtypes)
    assert bj["duration"] == "bigint" and bj["event_time"] == "timestamp" and bj["site_role"] == "string"
    assert bj["is_system_admin"] == "boolean"
    # a column documented as int for one event and string for another is typed per event view
    state_types = {
        e: dict(spark.table(t.event_view(e)).dtypes)["state"]
        for e, _ in next(c for c in family_plan("site").attributes if c.attribute == "state").types_by_event[:4]
    }
    plan_state = dict(next(c for c in family_plan("site").attributes if c.attribute == "state").types_by_event)
    assert all(state_types[e] == plan_state[e] for e in state_types)
    rows = spark.table(t.event_view("hist_login")).count()
    assert rows == spark.table(t.silver_events("site")).where("event_type = 'hist_login'").count() > 0


def test_silver_files_keep_statistics_on_the_columns_reads_filter_on(spark, lake):
    # gold reads silver rows newer than a silver_ingest_ts: with min/max per file, Delta skips the
    # older files (the column is the wide table's last; Delta's default covers the first 32 only)
    cfg, _, _, _ = lake
    for family in ("site", "tenant"):
        table = tables(cfg).silver_events(family)
        location = spark.sql(f"DESCRIBE DETAIL {table}").first()["location"]
        adds = spark.read.json(f"{location}/_delta_log/*.json").where("add IS NOT NULL").select("add.stats")
        stats = [json.loads(r["stats"]) for r in adds.collect()]
        with_rows = [s for s in stats if s["numRecords"] > 0]
        assert with_rows, table
        for s in with_rows:
            assert {"silver_ingest_ts", "event_type", "event_time"} <= set(s["maxValues"]), (table, s["maxValues"])
            assert "event_time" in s["minValues"] and "silver_ingest_ts" in s["minValues"]


def test_a_run_with_nothing_new_writes_no_commit(spark, lake):
    cfg, _, _, _ = lake
    t = tables(cfg)
    names = (
        [t.bronze_raw(f) for f in bronze.FAMILIES]
        + [t.silver_events(f) for f in bronze.FAMILIES]
        + [t.file_ledger, t.quarantine, t.duplicates, t.silver_batches]
    )

    def versions():
        return {n: spark.sql(f"DESCRIBE HISTORY {n} LIMIT 1").first()["version"] for n in names}

    before = versions()
    report = run_refresh(spark, cfg, ["bronze", "silver"], **QUIET)
    assert sum(r.rows_landed for r in report.bronze) == 0 and sum(r.batches for r in report.silver) == 0
    assert versions() == before


def test_new_bronze_rows_only_are_promoted(spark, lake):
    """A later delivery to the module's lake (its last test: it adds rows): bronze lands it, and silver
    then promotes those rows only, not the ones promoted before."""
    cfg, landing, _, _ = lake
    extra = landing.parent / "later"
    generate_activity_log(extra, 300, seed=22, days=1)
    for p in sorted(extra.rglob("*")):
        if p.is_file():
            target = landing / p.relative_to(extra)
            target = target.with_name("part-later-" + target.name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(p), target)
    shutil.rmtree(extra)
    landed = run_refresh(spark, cfg, ["bronze"], **QUIET)
    new_rows = total(landed.bronze, "rows_landed")
    pending = reconcile(spark, cfg)
    assert total(pending, "pending") == new_rows > 0  # landed, not yet promoted
    assert total(pending, "bronze_rows") > new_rows  # beside the rows promoted before
    promoted = run_refresh(spark, cfg, ["silver"], **QUIET)
    assert total(promoted.silver, "bronze_rows") == new_rows
    after = reconcile(spark, cfg)
    assert all(r.balanced for r in after) and total(after, "pending") == 0
    # silver stamps whole seconds, each run later than any before it: a mark taken after the last run
    # (gold's, the feed's) reads only the files of the rows stamped since; the others are skipped
    events = spark.table(tables(cfg).silver_events("site"))
    assert events.where("silver_ingest_ts != date_trunc('second', silver_ingest_ts)").isEmpty()
    runs = events.groupBy("silver_run_id").agg(F.min("silver_ingest_ts").alias("first"), F.max("silver_ingest_ts"))
    stamps = runs.orderBy("first").collect()
    assert len(stamps) >= 2 and all(a[2] < b[1] for a, b in zip(stamps, stamps[1:], strict=False)), stamps
    this_run = events.where(F.col("silver_run_id") == promoted.run_id).select(F.input_file_name()).distinct()
    read = {os.path.basename(f) for f in events.where(stamped_after(stamps[-2][2])).inputFiles()}
    assert read == {os.path.basename(r[0]) for r in this_run.collect()} and len(read) < len(events.inputFiles())
