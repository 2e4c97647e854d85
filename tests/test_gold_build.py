"""A gold build (dbt-spark) on the shared lake's real silver tables: it runs every model and data
test (and the models' unit tests), a later delivery builds only what the silver tables it moved feed,
nothing new skips it, its tests check the rows promoted since the last build, and gold without silver
says what to run."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

from pipelines.config.load import load_config
from pipelines.config.project import DBT_DIR
from pipelines.errors import InputError
from pipelines.gold import inputs
from pipelines.gold.run import dbt_log_dir, dbt_target_dir, run_dbt
from pipelines.gold.selection import moved_sources_selection
from pipelines.lake import delta_tables
from pipelines.lake.delta_tables import table_version
from pipelines.lake.run_log import last_success_start
from pipelines.lake.table_names import tables
from pipelines.refresh import run_refresh
from tests.lake import variant_environ

pytestmark = [pytest.mark.slow(minutes=3)]
QUIET = {"log": lambda _m: None}


def test_gold_build_runs_every_model_and_test(gold_lake):
    _, first, second = gold_lake
    models = len(list((DBT_DIR / "models").rglob("*.sql")))
    assert 20 <= models <= 50  # staged once per family: tens of models, not one per event type
    for report in (first, second):
        assert report.gold is not None and not report.gold.failures
    assert first.gold.statuses.get("success", 0) == models  # every model, staging included
    assert first.gold.statuses.get("pass", 0) >= 70  # data tests (a primary key per model)
    assert "pass" not in second.gold.statuses  # gold.data_tests false: the marts only
    # the second delivery, the tenant's second day, moved its events and the feed's hours: what they feed
    # and the models that read no source are built, not what reads only the site's events, the Write-Back
    # export or the snapshots (pipelines/gold/selection.py); the marts equal a full refresh
    # (test_incremental_marts_equal_a_full_refresh_and_a_rerun_changes_nothing)
    selected = second.gold.command.split(" --select ", 1)[1].split()
    assert "source:tenant.tenant_events+" in selected, selected
    assert not [s for s in selected if s.startswith(("source:site", "source:writeback", "source:entity"))], selected
    manifest = json.loads((dbt_target_dir() / "manifest.json").read_text(encoding="utf-8"))
    fed = [f"source.auditlake.{s.removeprefix('source:').removesuffix('+')}" for s in selected if s[-1] == "+"]
    built = {s for s in selected if s[-1] != "+"}  # the models that read no source, by name
    while fed:
        for child in manifest["child_map"][fed.pop()]:
            if child.startswith("model.") and child.split(".")[-1] not in built:
                built.add(child.split(".")[-1])
                fed.append(child)
    assert second.gold.statuses.get("success", 0) == len(built) < models / 2, sorted(built)


def test_every_unit_test_of_the_models_passes(spark, gold_lake):
    """A refresh runs the data tests only; the models' unit tests (fixed inputs, expected rows) run here."""
    cfg, _, _ = gold_lake
    result = run_dbt(spark, cfg, ["test", "--quiet", "--select", "test_type:unit"])
    units = sum(
        len((yaml.safe_load(p.read_text(encoding="utf-8")) or {}).get("unit_tests") or [])
        for p in (DBT_DIR / "models").rglob("*.yml")
    )
    assert not result.failures and result.statuses.get("pass", 0) == units > 0
    # dbt ran on conf's gold.threads (the profile's own fallback is 1)
    # dbt rotates dbt.log at 10 MB: the run's line may be in the file rotated during it
    logs = [dbt_log_dir() / name for name in ("dbt.log.1", "dbt.log")]
    text = "".join(p.read_text(encoding="utf-8", errors="replace") for p in logs if p.is_file())
    said = re.findall(r"Concurrency: (\d+) threads", text)
    assert said and int(said[-1]) == cfg.get("gold.threads") > 1


def test_a_tables_version_is_read_from_its_log_by_name_or_path_and_a_wrong_name_says_why(spark, tmp_path):
    """table_version reads Delta's log object (gold's inputs and each analyst copy ask for dozens per
    refresh): the version DESCRIBE HISTORY gives, after every commit; what is no Delta table: its error."""
    path = tmp_path / "versions"
    spark.sql("CREATE SCHEMA IF NOT EXISTS versions_test")
    spark.sql(f"CREATE OR REPLACE TABLE versions_test.t (x int) USING delta LOCATION '{path}'")
    spark.sql("CREATE OR REPLACE TEMP VIEW versions_test_view AS SELECT 1 AS x")
    try:
        for n in range(3):
            for name in ("versions_test.t", f"delta.`{path}`"):
                expected = spark.sql(f"DESCRIBE HISTORY {name} LIMIT 1").first()["version"]
                assert delta_tables._log_version(spark, name) == table_version(spark, name) == expected == n, name
            spark.sql(f"INSERT INTO versions_test.t VALUES ({n})")
        for wrong, said in (
            ("versions_test.nothing", "TABLE_OR_VIEW_NOT_FOUND"),
            (f"delta.`{tmp_path / 'nowhere'}`", "not a Delta table"),
            ("versions_test_view", "DESCRIBE HISTORY"),
        ):
            assert delta_tables._log_version(spark, wrong) is None
            with pytest.raises(AnalysisException, match=said):
                table_version(spark, wrong)
    finally:
        spark.sql("DROP SCHEMA versions_test CASCADE")


def test_a_build_leaves_what_reads_only_unmoved_silver_tables(tmp_path):
    """selection: the sources that moved, with all they feed; a model fed by a moved and an unmoved
    source is built; one that reads no source is built; no manifest or nothing unmoved: everything."""
    source = {"site": "site_events", "writeback": "writeback_audit"}
    manifest = {
        "sources": {f"source.auditlake.{n}.{t}": {"schema": "silver", "name": t} for n, t in source.items()},
        "nodes": {
            f"model.auditlake.{name}": {"name": name, "resource_type": "model", "depends_on": {"nodes": parents}}
            for name, parents in {
                "stg_site": ["source.auditlake.site.site_events"],
                "stg_writeback": ["source.auditlake.writeback.writeback_audit"],
                "both": ["model.auditlake.stg_site", "model.auditlake.stg_writeback"],
                "calendar": [],
            }.items()
        },
    }
    path = tmp_path / "manifest.json"
    assert moved_sources_selection(path, {"silver.writeback_audit"}) is None  # no manifest yet
    path.write_text(json.dumps(manifest), encoding="utf-8")
    assert moved_sources_selection(path, {"silver.writeback_audit"}) == (
        ["source:site.site_events+", "calendar"],
        ["silver.writeback_audit"],
    )
    assert moved_sources_selection(path, set()) is None
    assert moved_sources_selection(path, {"silver.site_events", "silver.writeback_audit"}) is None
    # only silver's versions may differ from the last build's for a table to count as unmoved
    last = {"silver_versions": {"silver.site_events": 3, "silver.writeback_audit": 1}, "project": "p", "vars": {}}
    now = {**last, "silver_versions": {"silver.site_events": 4, "silver.writeback_audit": 1}}
    assert inputs.unmoved_tables(last, now) == {"silver.writeback_audit"}
    assert inputs.unmoved_tables(last, {**now, "project": "q"}) == set()
    assert inputs.unmoved_tables(None, now) == set()


def test_a_refresh_with_nothing_new_skips_gold_and_logs_it(spark, gold_lake):
    cfg, _, _ = gold_lake
    said: list[str] = []
    report = run_refresh(spark, cfg, ["bronze", "silver", "gold"], log=said.append)
    assert report.gold_skipped and report.gold is None
    assert [m for m in said if m.startswith("gold: skipped")]
    runs = spark.table(f"{cfg.get('ops.schema')}.refresh_runs").where(f"run_id = '{report.run_id}'")
    assert {(r["layer"], r["status"]) for r in runs.collect()} == {
        ("bronze", "succeeded"),
        ("silver", "succeeded"),
        ("gold", "skipped"),
    }
    # what makes gold build again: a new silver version, another setting
    built = inputs.last_built(spark, cfg)
    assert built == inputs.current_inputs(spark, cfg)
    changed = json.loads(json.dumps(built))
    changed["silver_versions"][tables(cfg).silver_events("site")] += 1
    assert changed != built
    other = load_config(
        "test", environ={**variant_environ(cfg.data_dir.parent, "gold"), "AUDITLAKE__GOLD__INACTIVE_USER_DAYS": "30"}
    )
    assert inputs.current_inputs(spark, other)["vars"] != built["vars"]


def _scoped_test_catches(spark, cfg, table, where, model, failing_test, since):
    """Append a copy of one ``table`` row broken so that ``failing_test`` fails, stamped now; dbt's
    tests of ``model`` catch it when scoped by ``since`` and pass over it when scoped after it."""
    bad = (
        spark.table(table)
        .where(where)
        .limit(1)
        .withColumn("event_id", F.lit(None).cast("string"))
        .withColumn("silver_ingest_ts", F.current_timestamp())
    )
    built = inputs.last_built(spark, cfg) == inputs.current_inputs(spark, cfg)
    bad.write.format("delta").mode("append").saveAsTable(table)
    try:
        promoted = spark.sql(f"SELECT cast(max(silver_ingest_ts) AS string) FROM {table}").first()[0]
        select = ["test", "--quiet", "--select", model]
        caught = run_dbt(spark, cfg, select, raise_on_failure=False, tests_since=since)
        assert any(f.startswith(failing_test) for f in caught.failures), caught
        # the row is older than the window: this run does not look at it
        assert not run_dbt(spark, cfg, select, raise_on_failure=False, tests_since=promoted).failures
        # a plain dbt test (no window) looks at every row
        assert any(f.startswith(failing_test) for f in run_dbt(spark, cfg, select, raise_on_failure=False).failures)
    finally:
        spark.sql(f"DELETE FROM {table} WHERE event_id IS NULL")
        if built:  # the same rows again: the shared lake's marts still match silver (the erasure tests rely on it)
            inputs.record_built(spark, cfg, inputs.current_inputs(spark, cfg))


def test_staging_and_mart_tests_check_the_rows_promoted_since_the_last_gold_build(spark, gold_lake):
    cfg, _, _ = gold_lake
    since = last_success_start(spark, cfg, "gold")
    assert since is not None  # the second refresh's tests were scoped by the first's start
    _scoped_test_catches(
        spark,
        cfg,
        tables(cfg).silver_events("site"),
        "event_type = 'hist_login'",
        "stg_site__events",
        "primary_key_stg_site__events_event_id",
        since,
    )
    # every staging view's tests run scoped (one over an ops table, which has no silver_ingest_ts, reads all)
    scoped = run_dbt(spark, cfg, ["test", "--quiet", "--select", "path:models/staging"], tests_since=since)
    assert scoped.statuses.get("pass", 0) >= 4 and not scoped.failures, scoped
    # an incremental mart's tests are scoped the same way (macros/test_scope.sql)
    _scoped_test_catches(
        spark,
        cfg,
        f"{cfg.get('gold.schema')}.fct_logins",
        "true",
        "fct_logins",
        "primary_key_fct_logins_event_id",
        since,
    )


def test_gold_without_silver_says_what_to_run(spark, lake_dir):
    cfg = load_config("test", environ=variant_environ(lake_dir, "gold_empty"))
    with pytest.raises(InputError, match="run the silver layer first"):
        run_refresh(spark, cfg, ["gold"], **QUIET)
    # the failure is in the run log, for whoever schedules the refresh
    logged = spark.table(f"{cfg.get('ops.schema')}.refresh_runs").collect()
    assert [(r["layer"], r["status"]) for r in logged] == [("gold", "failed")]
    assert "run the silver layer first" in logged[0]["detail"]
