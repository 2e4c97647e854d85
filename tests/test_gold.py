"""Gold (dbt-spark) on real silver tables: incremental = full refresh, reruns change nothing,
facts reconcile with silver, the generated staging layer and the profile stay in step."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import reduce
from pathlib import Path

import pytest
import yaml
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.config.load import CONF_DIR, load_config
from pipelines.config.project import DBT_DIR
from pipelines.errors import InputError
from pipelines.gold import inputs
from pipelines.gold.compact import compact_marts, data_files, mart_tables
from pipelines.gold.run import dbt_log_dir, dbt_target_dir, dbt_vars, run_dbt
from pipelines.gold.selection import moved_sources_selection
from pipelines.gold.staging import event_groups, event_marts, stale_files
from pipelines.lake import delta_tables
from pipelines.lake.delta_tables import table_version
from pipelines.lake.table_names import tables
from pipelines.refresh import run_refresh
from pipelines.refresh.run_log import last_success_start
from pipelines.runtime.jars import jar_paths
from pipelines.runtime.spark_session import spark_conf
from tests.lake import KEYED, delta_versions, fingerprint, fingerprints, restore_versions, variant_environ

pytestmark = [pytest.mark.slow(minutes=12)]
QUIET = {"log": lambda _m: None}
NAME_COLUMNS = {"content_name": ("content_name", "name"), "group_name": ("group_name", "name")}


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


# dbt-project-evaluator's rules that apply here, checked on the manifest of the lake's build (the
# package cannot be installed: dbt's package hub is not reachable from these machines); its rule of
# a primary-key test on every model is test_every_model_has_a_primary_key_test's. Each exception
# says why; a new breach fails, and so does an exception that no longer applies.
SOURCES_READ_OUTSIDE_STAGING = {
    # silver typed the entity snapshots already; one macro (snapshot_history) reads them for all
    "int_snapshot_site_roles": "entity_snapshots",
    "int_snapshot_group_members": "entity_snapshots",
    "int_snapshot_content_owners": "entity_snapshots",
    "rpt_access_review": "entity_snapshots, snapshot_ops: the hours applied, through snapshot_history",
    "rpt_access_log_discrepancies": "snapshot_ops: the hours applied, through snapshot_history",
}
DIMENSIONS_FROM_FACTS: dict[str, str] = {}  # none: dim_users' names come from int_user_identities


def test_the_project_keeps_the_evaluator_rules_that_apply(gold_lake):
    manifest = json.loads((dbt_target_dir() / "manifest.json").read_text(encoding="utf-8"))
    models = {uid: n for uid, n in manifest["nodes"].items() if n["resource_type"] == "model"}

    def parents(node, prefix):
        return [d for d in node["depends_on"]["nodes"] if d.split(".")[-1].startswith(prefix) or d.startswith(prefix)]

    reads_sources = {
        n["name"]
        for n in models.values()
        if parents(n, "source.") and not n["original_file_path"].startswith("models/staging/")
    }
    assert reads_sources == set(SOURCES_READ_OUTSIDE_STAGING)
    from_facts = {n["name"] for n in models.values() if n["name"].startswith("dim_") and parents(n, "fct_")}
    assert from_facts == set(DIMENSIONS_FROM_FACTS)


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


def test_incremental_marts_equal_a_full_refresh_and_a_rerun_changes_nothing(spark, gold_lake):
    cfg, _, _ = gold_lake
    gold = cfg.get("gold.schema")
    names = mart_tables(spark, gold)
    assert "fct_logins" in names and "dim_users" in names

    def marts(chosen) -> dict[str, tuple]:
        return fingerprints({name: spark.table(f"{gold}.{name}") for name in chosen})

    incremental = marts(names)  # as the two builds left them
    # nothing new: an incremental run leaves every mart as it was
    run_dbt(spark, cfg, ["run", "--quiet", "--select", "marts"])
    rerun = marts(names)
    assert [n for n in names if rerun[n] != incremental[n]] == [], "a rerun changed these"
    # rebuilt from nothing: the same rows as the two incremental runs gave. Only the incremental marts: a
    # table mart runs the same SQL in a rerun as in a full refresh (and reads no state of its own), so the
    # rerun above has rebuilt it already; it equals a full refresh once the incremental marts do
    only_incremental = "marts,config.materialized:incremental"
    full = run_dbt(spark, cfg, ["run", "--quiet", "--full-refresh", "--select", only_incremental])
    manifest = json.loads((dbt_target_dir() / "manifest.json").read_text(encoding="utf-8"))
    incremental_marts = {
        n["alias"]
        for n in manifest["nodes"].values()
        if n["resource_type"] == "model" and n["config"]["materialized"] == "incremental" and n["alias"] in names
    }
    assert {"fct_logins", "fct_sessions", "dim_sites"} <= incremental_marts < set(names)
    assert full.statuses == {"success": len(incremental_marts)}
    for name in sorted(set(names) - incremental_marts):  # a table mart reading its own rows would need the full refresh
        compiled = [p.read_text(encoding="utf-8") for p in (dbt_target_dir() / "compiled").rglob(f"{name}.sql")]
        assert compiled and not any(re.search(rf"\b{re.escape(gold)}\.`?{name}\b", c) for c in compiled), name
    full_refresh = marts(sorted(incremental_marts))
    assert [n for n in sorted(incremental_marts) if full_refresh[n] != incremental[n]] == [], "these differ"


def test_appended_marts_are_the_event_facts_and_hold_each_event_once(spark, gold_lake):
    """The facts of one row per event append a delivery's rows instead of merging them (no MERGE reads the
    mart's history): after the gold lake's two builds, each holds every key once, over all of its rows
    (a build's data tests see only the rows it added)."""
    manifest = json.loads((dbt_target_dir() / "manifest.json").read_text(encoding="utf-8"))
    appended = {
        n["name"]: (f"{n['schema']}.{n['alias']}", n["config"].get("unique_key"))
        for n in manifest["nodes"].values()
        if n["resource_type"] == "model" and n["config"].get("incremental_strategy") == "append"
    }
    assert set(event_marts()) <= set(appended), "an event fact merges"
    for name, (table, key) in appended.items():
        assert key, f"{name}: an appended mart names its key (tests, the Hyper export)"
        figures = spark.table(table).agg(F.count("*").alias("rows"), F.countDistinct(key).alias("keys")).first()
        assert figures["rows"] == figures["keys"] > 0, f"{name}: {figures}"


def test_a_fingerprint_tells_a_changed_added_or_dropped_row(spark):
    rows = spark.createDataFrame([(1, "a", {"k": "v"}), (2, "b", None)], "id int, name string, tags map<string,string>")
    same = spark.createDataFrame([(2, "b", None), (1, "a", {"k": "v"})], rows.schema)  # another order
    assert fingerprint(rows) == fingerprint(same)
    for other in (
        [(1, "a", {"k": "v"}), (2, "c", None)],
        [(1, "a", {"k": "v"})],
        [(1, "a", {"k": "v"}), (2, "b", None), (2, "b", None)],
        [(1, "a", {"k": "w"}), (2, "b", None)],
    ):
        assert fingerprint(spark.createDataFrame(other, rows.schema)) != fingerprint(rows), other
    # many frames at once, of other columns, in one job: each one's own fingerprint (an empty one too)
    others = {
        "rows": rows,
        "narrow": rows.select("name"),
        "changed": spark.createDataFrame([(1, "a", {"k": "w"})], rows.schema),
        "empty": rows.limit(0),
    }
    assert fingerprints(others, ignore={"rows": ("tags",)}) == {
        name: fingerprint(frame, ignore=("tags",) if name == "rows" else ()) for name, frame in others.items()
    }


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


def test_a_dimension_built_by_an_older_model_gains_its_new_columns_once(spark, gold_lake):
    """dim_sites became incremental with two more columns: a lake holding the older table shape is
    recomputed from all of history once (the merge adds the columns), then incremental again."""
    cfg, _, _ = gold_lake
    gold = cfg.get("gold.schema")
    expected = spark.table(f"{gold}.dim_sites").orderBy("site_luid").collect()
    older = spark.table(f"{gold}.dim_sites").drop("named_at", "silver_ingest_ts")
    older_rows, older_schema = older.collect(), older.schema
    spark.sql(f"DROP TABLE {gold}.dim_sites")
    spark.createDataFrame(older_rows, older_schema).write.format("delta").saveAsTable(f"{gold}.dim_sites")
    run_dbt(spark, cfg, ["run", "--quiet", "--select", "dim_sites"])
    # the same rows, columns in the same order as a lake that never had the older shape
    assert spark.table(f"{gold}.dim_sites").orderBy("site_luid").collect() == expected
    run_dbt(spark, cfg, ["run", "--quiet", "--select", "dim_sites"])  # now incremental: nothing new
    assert spark.table(f"{gold}.dim_sites").orderBy("site_luid").collect() == expected


def test_marts_past_the_file_count_are_compacted_and_keep_their_rows(spark, gold_lake):
    cfg, first, second = gold_lake
    gold = cfg.get("gold.schema")
    assert first.compactions == second.compactions == []  # the test data stays under the conf's count
    files = {name: data_files(spark, f"{gold}.{name}") for name in mart_tables(spark, gold)}
    most = max(files.values())
    assert most > 1, files
    fragmented = sorted(name for name, n in files.items() if n == most)
    before = {name: spark.table(f"{gold}.{name}").collect() for name in fragmented}
    done = compact_marts(spark, gold, most - 1, log=lambda _m: None)
    assert sorted(c.mart for c in done) == [f"{gold}.{name}" for name in fragmented]  # only those past the count
    for c in done:
        assert c.files_before == most and c.files_after == 1, c
    for name in fragmented:
        assert sorted(spark.table(f"{gold}.{name}").collect()) == sorted(before[name]), name


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


def test_incremental_marts_read_silver_newer_than_a_literal_watermark(spark, gold_lake):
    # a literal (not a subquery) lets Spark skip silver's older row groups when it plans the scan
    cfg, _, _ = gold_lake
    run_dbt(spark, cfg, ["compile", "--quiet", "--select", "fct_logins"])
    compiled = (dbt_target_dir() / "compiled/auditlake/models/marts/security/fct_logins.sql").read_text()
    newest = spark.sql(f"SELECT cast(max(silver_ingest_ts) AS string) FROM {cfg.get('gold.schema')}.fct_logins")
    # the end of the newest's second: silver stamps whole seconds, so the same rows, and Delta skips
    # every silver file the mart already holds (with the newest itself it skips none of the newest's)
    mark = f"{newest.first()[0][:19]}.999"
    assert f"where silver_ingest_ts > timestamp '{mark}'" in compiled
    silver = [spark.table(tables(cfg).silver_events(f)) for f in ("site", "tenant")]

    def files_read(after: str) -> int:
        return sum(len(s.where(f"silver_ingest_ts > timestamp '{after}'").inputFiles()) for s in silver)

    assert files_read(mark) < files_read(newest.first()[0])


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


def test_each_fact_reconciles_with_the_silver_rows_it_covers(spark, gold_lake):
    cfg, _, _ = gold_lake
    t = tables(cfg)
    gold = cfg.get("gold.schema")
    groups = event_groups()

    # an event type's rows of its family's wide table: what its silver view (silver.<event_type>) selects
    def events(family: str, types: list[str]):
        return spark.table(t.silver_events(family)).where(F.col("event_type").isin(types))

    for fact, group in event_marts().items():
        silver = sum(events(family, types).count() for family, types in groups[group].items())
        assert silver > 0, f"the sample data should hold {group} events"
        assert spark.table(f"{gold}.{fact}").count() == silver, fact
    jobs = events("site", ["background_job"]).agg(F.countDistinct("job_luid")).first()[0]
    assert spark.table(f"{gold}.fct_background_jobs").count() == jobs
    assert spark.table(f"{gold}.fct_writeback_changes").count() == spark.table(t.writeback_audit).count()
    # a session needs its user: legacy-edition sign-ins name none (actorUserId only)
    logins = events("site", ["hist_login"]).where("actor_user_luid IS NOT NULL").count()
    assert spark.table(f"{gold}.fct_sessions").count() == logins


def test_marts_answer_the_stories_in_the_data(spark, gold_lake):
    cfg, _, _ = gold_lake
    gold = cfg.get("gold.schema")
    # the generator's failed sign-in burst: 8+ failures from one foreign IP within minutes
    bursts = spark.sql(f"SELECT * FROM {gold}.rpt_failed_login_bursts WHERE key_type = 'ip_address'").collect()
    assert bursts and all(b["failures"] >= cfg.get("gold.failed_login_burst.failures") for b in bursts)
    # deprecated permission events are kept and flagged
    rows = spark.sql(f"SELECT DISTINCT event_type, is_deprecated_event FROM {gold}.fct_permission_changes").collect()
    flags = {r["event_type"]: r["is_deprecated_event"] for r in rows}
    assert flags.get("set_permissions") is False and flags.get("create_permissions") is True
    # every ownership transfer names both owners
    transfers = spark.table(f"{gold}.fct_ownership_transfers")
    assert transfers.count() > 0
    assert transfers.where("old_owner_luid IS NULL OR new_owner_luid IS NULL").count() == 0
    # failing extract refreshes show up as failed jobs with their notes
    failed = spark.sql(f"SELECT * FROM {gold}.fct_background_jobs WHERE result = 'failed'").collect()
    assert failed and all(j["failure_notes"] for j in failed)
    assert all(j["state_timeline"].endswith("Failed") for j in failed)


def test_one_person_across_the_cases_a_luid_arrives_in_and_wide_numbers_intact(spark, gold_lake):
    """The sample's emitter envelopes carry LUIDs in upper case (Tableau's may): every mart sees
    one person per LUID, and no integral column narrows what Tableau sends."""
    cfg, _, _ = gold_lake
    gold = cfg.get("gold.schema")
    site_logins = spark.sql(f"SELECT * FROM {gold}.fct_logins WHERE family = 'site'")
    login_types = [r[0] for r in site_logins.select("event_type").distinct().collect()]
    logins = (
        spark.table(tables(cfg).bronze_raw("site"))
        .where(F.col("event_type").isin(login_types))
        .select(
            F.coalesce(
                F.get_json_object("raw_line", "$.actorUserLuid"), F.get_json_object("raw_line", "$.event.actorUserLuid")
            ).alias("luid")
        )
    )
    as_sent = logins.select(F.countDistinct("luid")).first()[0]
    people = logins.select(F.countDistinct(F.lower("luid"))).first()[0]
    assert as_sent > people  # some signed in with their LUID in both cases: the test can fail
    assert site_logins.select(F.countDistinct("user_luid")).first()[0] == people
    wide = []
    for name in mart_tables(spark, gold):
        table = f"{gold}.{name}"
        frame = spark.table(table)
        luids = [c for c in frame.columns if c.endswith("luid")]
        if luids:
            upper = frame.where(" OR ".join(f"`{c}` <> lower(`{c}`)" for c in luids)).count()
            assert upper == 0, table
        assert not [c for c, typ in frame.dtypes if typ == "int" and c.endswith(("_id", "size", "count"))], table
        wide += [
            c for c, typ in frame.dtypes if typ == "bigint" and frame.where(f"`{c}` > 2147483647").limit(1).count()
        ]
    assert wide  # values past 32 bits reach gold as numbers


def test_every_finding_of_every_detection_report_is_in_rpt_detections_once(spark, gold_lake):
    """rpt_detections is the union of the detection reports: each report's rows, each with a unique
    id, a severity and evidence (what `auditlake alerts` sends and a SIEM reads)."""
    cfg, _, _ = gold_lake
    t = tables(cfg)
    found = spark.table(t.detections)
    by_report = {r["report"]: r["n"] for r in found.groupBy("report").agg(F.count("*").alias("n")).collect()}
    reports = [
        r.tableName for r in spark.sql(f"SHOW TABLES IN {t.gold_schema} LIKE 'rpt_*'").collect() if not r.isTemporary
    ]  # not the temporary views an incremental report's merge leaves
    # not findings: the feed's health, the access review as of a date and the audit of the audit log
    not_findings = (
        "rpt_detections",
        "rpt_feed_gaps",
        "rpt_inactive_licensed_users",
        "rpt_access_review",
        "rpt_access_log_discrepancies",
    )
    reports = [r for r in reports if r not in not_findings]
    assert len(reports) == 9, reports  # inactive users reach rpt_detections through rpt_licence_right_sizing
    for report in reports:
        assert by_report.get(report, 0) == spark.table(t.gold(report)).count(), report
    assert by_report.get("rpt_failed_login_bursts", 0) > 0  # the generator's burst story
    assert found.count() == found.select("detection_id").distinct().count()
    assert found.where("severity NOT IN ('low', 'medium', 'high', 'critical') OR detected_at IS NULL").count() == 0
    assert (
        found.where(
            "report NOT IN ('rpt_licence_right_sizing', 'rpt_stale_content') AND size(evidence_event_ids) = 0"
        ).count()
        == 0
    )


def test_dbt_docs_generate(spark, gold_lake):
    cfg, _, _ = gold_lake
    run_dbt(spark, cfg, ["docs", "generate", "--quiet"])
    catalog = json.loads((dbt_target_dir() / "catalog.json").read_text())
    assert any(key.endswith(".fct_logins") for key in catalog["nodes"])
    manifest = json.loads((dbt_target_dir() / "manifest.json").read_text())
    personal = {
        c["name"]: c["meta"]["personal"]
        for n in manifest["nodes"].values()
        if n["name"] == "fct_logins"
        for c in n["columns"].values()
        if c.get("meta", {}).get("personal")
    }
    assert personal == {
        "user_email": "email",
        "ip_address": "network",
        "user_agent": "network",
        "session_id": "network",
    }


def test_gold_without_silver_says_what_to_run(spark, lake_dir):
    cfg = load_config("test", environ=variant_environ(lake_dir, "gold_empty"))
    with pytest.raises(InputError, match="run the silver layer first"):
        run_refresh(spark, cfg, ["gold"], **QUIET)
    # the failure is in the run log, for whoever schedules the refresh
    logged = spark.table(f"{cfg.get('ops.schema')}.refresh_runs").collect()
    assert [(r["layer"], r["status"]) for r in logged] == [("gold", "failed")]
    assert "run the silver layer first" in logged[0]["detail"]


def test_generated_staging_is_up_to_date():
    assert stale_files() == [], "run `auditlake gold staging` and commit the result"


def test_every_model_has_a_primary_key_test():
    """Every model's key is tested: on the model, or (a view whose rows a mart keeps: testing the view
    would recompute it from all of silver on every build) on the column its meta key_tested_in names."""
    models = {
        m["name"]: m
        for p in (DBT_DIR / "models").rglob("_*__models.yml")
        for m in yaml.safe_load(p.read_text())["models"]
    }
    tested = {
        f"{name}.{c['name']}"
        for name, m in models.items()
        for c in m.get("columns", [])
        if "primary_key" in (c.get("data_tests") or [])
    }
    # a key of several columns: a model-level primary_key test on an expression of them
    tested |= {
        f"{name}.*"
        for name, m in models.items()
        if any(isinstance(t, dict) and "primary_key" in t for t in m.get("data_tests") or [])
    }
    untested = []
    for name, model in models.items():
        elsewhere = ((model.get("config") or {}).get("meta") or {}).get("key_tested_in")
        if not any(t.startswith(f"{name}.") for t in tested) and elsewhere not in tested:
            untested.append(name)
    assert untested == []
    assert {p.stem for p in (DBT_DIR / "models").rglob("*.sql")} == set(models)


def test_profile_for_plain_dbt_matches_the_pipeline_session(cfg):
    """`dbt build` from dbt_project/ starts its own session: same JARs, extensions, catalog."""
    profile = yaml.safe_load((DBT_DIR / "profiles.yml").read_text())["auditlake"]["outputs"]["local"]
    params = profile["server_side_parameters"]
    conf = spark_conf(cfg)
    assert [Path(p).name for p in params["spark.jars"].split(",")] == [
        p.name for p in jar_paths(cfg) if "postgresql" not in p.name
    ]
    for key in ("spark.sql.extensions", "spark.sql.catalog.spark_catalog", "spark.sql.session.timeZone"):
        assert params[key] == conf[key], key


def test_dbt_var_defaults_match_conf():
    project = yaml.safe_load((DBT_DIR / "dbt_project.yml").read_text())["vars"]
    base = load_config("local", conf_dir=CONF_DIR, environ=dict(KEYED))
    for key, value in dbt_vars(base).items():
        assert project[key] == value, key


@pytest.mark.subprocess
def test_gold_marts_through_the_thrift_server_with_beeline(spark, cfg, gold_lake):
    """A real JDBC client (beeline, shipped with PySpark) on the auditors' Thrift server, as a BI tool would."""
    from pipelines.serving.thrift import beeline_rows, jdbc_url, start_auditor_server

    gold = gold_lake[0].get("gold.schema")
    query = f"SELECT outcome, count(*) AS n FROM {gold}.fct_logins GROUP BY outcome ORDER BY outcome"
    server = start_auditor_server(spark, cfg)  # the session's configuration says where it listens
    try:
        rows = beeline_rows(jdbc_url(cfg, "auditor"), query)
    finally:
        server.stop()
    expected = [[r["outcome"], str(r["n"])] for r in spark.sql(query).collect()]
    assert rows == [["outcome", "n"], *expected]


def test_sql_command_query(spark, gold_lake):
    from pipelines.serving.query import format_rows, run_query

    cfg, _, _ = gold_lake
    columns, rows, truncated = run_query(spark, f"SELECT event_id FROM {cfg.get('gold.schema')}.fct_logins", 5)
    assert columns == ["event_id"] and len(rows) == 5 and truncated
    assert format_rows(columns, rows, "csv").count("\n") == 6


def _model_table(cfg, model: str) -> str:
    """A dbt model's table: the intermediate models' in gold's staging schema, the marts' in gold's."""
    return f"{tables(cfg).gold_staging_schema if model.startswith('int_') else cfg.get('gold.schema')}.{model}"


@dataclass
class Delivery:
    """One test's late and new rows for the models kept incrementally, and what it checks. The three
    deliveries below go through the same dbt runs (``deliveries``): each run of these models costs
    the shared lake's worker its fixed price (CI time, issue 30), so they share two incremental runs
    and one full refresh, and each follows users the others leave alone."""

    runs: list[list[tuple[str, object]]]  # the (table, frame) rows appended before each incremental run
    models: list[list[str]]  # the models each of those runs builds
    # its incremental models -> the columns a full refresh may leave different (a table model is built
    # whole by every run: it equals a full refresh's once the incremental models it reads do)
    compared: dict[str, tuple[str, ...]]
    check: Callable[[], None]  # its assertions once the incremental runs are done
    users: set[str]  # the user LUIDs its rows are about
    failure: AssertionError | None = None
    differs: list[str] = field(default_factory=list)  # its compared models a full refresh changed

    def passed(self) -> None:
        if self.failure is not None:
            raise self.failure
        assert not self.differs, f"{self.differs} differ from a full refresh"


def _late_copy(spark, table: str, event_id: str, tag: str, **values):
    """A copy of silver's event ``event_id`` with a new id (``tag``) and ``values`` (Columns) set, as a
    later delivery would bring it."""
    frame = spark.table(table).where(f"event_id = '{event_id}'")
    for column, value in values.items():
        frame = frame.withColumn(column, value)
    frame = frame.withColumn("event_id", F.sha2(F.concat(F.col("event_id"), F.lit(f":{tag}")), 256))
    return frame.withColumn("event_date", F.to_date("event_time")).withColumn("silver_ingest_ts", F.current_timestamp())


def _not_about(users: set[str], *columns: str) -> str:
    """A condition: none of ``columns`` names one of ``users``."""
    listed = ", ".join(f"'{u}'" for u in sorted(users)) or "''"
    return " and ".join(f"coalesce({c}, '') not in ({listed})" for c in columns)


def _role_history_delivery(spark, cfg, _users: set[str]) -> Delivery:
    """int_site_user_role_versions and int_site_actors are tables kept incrementally: a delivery reads
    silver from the start of the version its observations fall in. Two deliveries: a late observation
    of another role in the middle of a user's history (it splits their one version in three), then one
    of a third role 1 ms after it (inside the second version: the first is its seed), one before all
    of another user's, a new actor, and a user's rename followed by an event of theirs with no name (the
    name stays: int_user_identities)."""
    site, staging, gold = tables(cfg).silver_events("site"), tables(cfg).gold_staging_schema, cfg.get("gold.schema")
    user = (
        spark.table(site)
        .where("actor_user_luid is not null and site_role_id is not null")
        .groupBy("site_luid", "actor_user_luid")
        .agg(
            F.min("event_time").alias("first_at"),
            F.max("event_time").alias("last_at"),
            F.min_by("event_id", "event_time").alias("event_id"),
            F.count(F.lit(1)).alias("n"),
            F.max("site_role_id").alias("role"),
            F.countDistinct("site_role_id", "system_admin_level").alias("roles"),
        )
        .where("n >= 3 and first_at < last_at and roles = 1")
        .orderBy(F.desc("n"), "actor_user_luid")
        .first()
    )
    split_role, seeded_role = [r for r in (10, 9, 3) if r != user.role][:2]  # Creator, Viewer, Explorer
    other = (
        spark.table(f"{staging}.int_site_user_role_versions")
        .where(f"user_luid <> '{user.actor_user_luid}'")
        .orderBy("version_key")
        .first()
    )
    middle = F.lit(user.first_at + (user.last_at - user.first_at) / 2).cast("timestamp")
    named = (
        spark.table(f"{gold}.fct_user_lifecycle")
        .where("family = 'site' and user_luid is not null and user_name is not null")
        .orderBy("event_id")
        .first()
    )
    newest = spark.table(site).agg(F.max("event_time")).first()[0]
    new_actor = "00000000-0000-4000-8000-00000000a11c"

    def copy(event_id: str, tag: str, **values):
        return site, _late_copy(spark, site, event_id, tag, **values)

    runs = [
        [copy(user.event_id, "split", event_time=middle, site_role_id=F.lit(split_role).cast("bigint"))],
        [
            copy(
                user.event_id,
                "seeded",
                event_time=middle + F.expr("interval 1 millisecond"),
                site_role_id=F.lit(seeded_role).cast("bigint"),
            ),
            copy(other.first_event_id, "before", event_time=F.col("event_time") - F.expr("interval 400 days")),
            copy(
                other.first_event_id,
                "actor",
                actor_user_luid=F.lit(new_actor),
                site_role_id=F.lit(None).cast("bigint"),
            ),
            # the user renamed, then an event of theirs that names nobody (dim_users keeps the new name)
            copy(
                named.event_id,
                "renamed",
                event_time=F.lit(newest + timedelta(hours=1)),
                name=F.lit("Renamed User"),
                for_user_name=F.lit(None).cast("string"),
            ),
            copy(
                named.event_id,
                "nameless",
                event_time=F.lit(newest + timedelta(hours=2)),
                name=F.lit(None).cast("string"),
                for_user_name=F.lit(None).cast("string"),
            ),
        ],
    ]

    def roles() -> list[int]:
        return [
            r.site_role_id
            for r in spark.table(f"{staging}.int_site_user_role_versions")
            .where(f"user_luid = '{user.actor_user_luid}' and site_luid <=> '{user.site_luid}'")
            .orderBy("version_number")
            .collect()
        ]

    before = roles()
    assert len(before) == 1, before

    def check() -> None:
        compiled = next((dbt_target_dir() / "compiled").rglob("int_site_user_role_versions.sql")).read_text()
        assert "event_date >= date '" in compiled and "9999-12-31" not in compiled  # a bounded read
        assert roles() == [user.role, split_role, seeded_role, user.role]
        assert spark.table(f"{gold}.dim_users").where(f"user_luid = '{new_actor}'").count() == 1
        assert {
            r.user_name for r in spark.table(f"{gold}.dim_users").where(f"user_luid = '{named.user_luid}'").collect()
        } == {"Renamed User"}

    incremental = ["int_site_user_role_versions", "int_site_actors", "fct_user_lifecycle", "int_user_identities"]
    # the first run builds the version the second one's observation falls in (its seed)
    models = [incremental[:1], [*incremental, "dim_users"]]
    # the role history's silver_ingest_ts is its watermark: a version recomputed from its seed keeps the
    # seed's (which may count observations a split moved to a later version), so it is not compared
    compared = {m: ("silver_ingest_ts",) if m == "int_site_user_role_versions" else () for m in incremental}
    users = {user.actor_user_luid, other.user_luid, named.user_luid, new_actor}
    return Delivery(runs, models, compared, check, users)


def _content_delivery(spark, cfg, users: set[str]) -> Delivery:
    """int_content_mentions, int_group_mentions, int_admin_security_changes and int_user_activity merge each
    delivery's new rows into what they hold. One delivery: a late rename of a piece of content and of a group
    (older than the name they have: neither is renamed), a newer rename of another piece of content, a new
    group, a view opened (its workbook's last access), an administrator's change on a Sunday night, a
    sign-in after every other event (its user's last, and the reports' "now") and a sign-in older than
    another user's last. The tables, the dimensions and the reports over them are compared."""
    t = tables(cfg)
    site, tenant, staging, gold = (
        t.silver_events("site"),
        t.silver_events("tenant"),
        t.gold_staging_schema,
        cfg.get("gold.schema"),
    )
    named = (
        spark.table(f"{gold}.fct_content_lifecycle")
        .where(f"content_name is not null and {_not_about(users, 'actor_user_luid')}")
        .groupBy("content_luid")
        .agg(F.max_by("event_id", "event_time").alias("event_id"))
        .orderBy("content_luid")
        .limit(2)
        .collect()
    )
    assert len(named) == 2
    late, newer = [
        spark.table(f"{staging}.int_content_mentions").where(f"content_luid = '{r.content_luid}'").first()
        for r in named
    ]
    group = spark.table(f"{staging}.int_group_mentions").where("group_name is not null").orderBy("group_luid").first()
    group_event = (
        spark.table(f"{staging}.stg_site__events")
        .where(
            f"group_luid = '{group.group_luid}' and event_type in ('hist_create_group', "
            f"'hist_rename_group', 'create_delete_group') and {_not_about(users, 'actor_user_luid', 'user_luid')}"
        )
        .orderBy("event_id")
        .first()
    )
    access = (
        spark.table(f"{gold}.fct_content_access")
        .where(
            "workbook_luid is not null and event_type = 'hist_access_view' and " + _not_about(users, "actor_user_luid")
        )
        .orderBy("event_id")
        .first()
    )
    admin = spark.table(f"{staging}.int_admin_security_changes").where("family = 'tenant'").orderBy("event_id").first()
    signed_in = (
        spark.table(f"{staging}.int_user_activity")
        .where(f"last_sign_in_at is not null and {_not_about(users, 'user_luid')}")
        .orderBy("activity_key")
        .limit(2)
    ).collect()
    assert group_event and access and admin and len(signed_in) == 2, "the shared lake lacks an event this test copies"
    newest = spark.table(site).agg(F.max("event_time")).first()[0]

    def copy(table: str, event_id: str, tag: str, **values):
        columns = spark.table(table).schema
        # a name is `name` in hist_* events and content_name / group_name in the others: set each present
        lits = {
            name: F.lit(value).cast(columns[name].dataType)
            for column, value in values.items()
            for name in NAME_COLUMNS.get(column, (column,))
            if name in columns.names
        }
        return table, _late_copy(spark, table, event_id, tag, **lits)

    new_group = "00000000-0000-4000-8000-0000000009a1"
    sunday_night = datetime(2031, 1, 5, 3, 0)  # a Sunday, outside every window
    rows = [
        copy(
            site,
            named[0].event_id,
            "late",
            content_name="Late name",
            event_time=late.content_name_at - timedelta(days=1),
        ),
        copy(site, named[1].event_id, "newer", content_name="Newest name", event_time=newest + timedelta(hours=1)),
        copy(
            site,
            group_event.event_id,
            "late",
            group_name="Late group",
            event_time=group.group_name_at - timedelta(days=1),
        ),
        copy(site, group_event.event_id, "new", group_luid=new_group, group_name="New group"),
        copy(site, access.event_id, "opened", event_time=newest + timedelta(hours=2)),
        # a sign-in after every other event (the user's last, and "now"), one before the other user's last
        copy(site, signed_in[0].last_sign_in_event_id, "signin", event_time=newest + timedelta(hours=3)),
        copy(
            site,
            signed_in[1].last_sign_in_event_id,
            "late",
            event_time=signed_in[1].last_sign_in_at - timedelta(days=1),
        ),
        copy(tenant, admin.event_id, "night", event_time=sunday_night),
    ]
    site_ids = "', '".join(frame.first().event_id for table, frame in rows if table == site)

    def content(luid: str):
        return spark.table(f"{gold}.dim_content").where(f"content_luid = '{luid}'").first()

    def check() -> None:
        names = {
            r.content_name
            for r in spark.table(f"{gold}.fct_content_lifecycle").where(f"event_id in ('{site_ids}')").collect()
        }
        assert names == {"Late name", "Newest name"}  # the delivery reached the fact
        assert (
            spark.table(f"{staging}.stg_site__events")
            .where(f"group_luid = '{group.group_luid}' and coalesce(group_name, name) = 'Late group'")
            .count()
            == 1
        )
        assert content(late.content_luid).content_name == late.content_name  # a late rename renames nothing
        assert content(newer.content_luid).content_name == "Newest name"
        groups = {r.group_luid: r.group_name for r in spark.table(f"{gold}.dim_groups").collect()}
        assert groups[group.group_luid] == group.group_name and groups[new_group] == "New group"
        opened = spark.table(f"{staging}.int_content_mentions").where(f"content_luid = '{access.workbook_luid}'")
        assert opened.first().last_accessed_at == newest + timedelta(hours=2)
        activity = {
            r.activity_key: r
            for r in spark.table(f"{staging}.int_user_activity")
            .where(f"activity_key in ('{signed_in[0].activity_key}', '{signed_in[1].activity_key}')")
            .collect()
        }
        assert activity[signed_in[0].activity_key].last_sign_in_at == newest + timedelta(hours=3)
        assert activity[signed_in[1].activity_key].last_sign_in_at == signed_in[1].last_sign_in_at  # late: kept
        # "now" is the new sign-in's time (lake_now(): the newest partition's newest event)
        assert {r.as_of_time for r in spark.table(f"{gold}.rpt_inactive_licensed_users").collect()} == {
            newest + timedelta(hours=3)
        }
        assert (
            spark.table(f"{gold}.rpt_security_changes_outside_window")
            .where(f"event_time = timestamp '{sunday_night}'")
            .count()
            == 1
        )

    kept = ["int_content_mentions", "int_group_mentions", "int_admin_security_changes", "int_user_activity"]
    over_them = [
        "dim_content",
        "dim_groups",
        "rpt_stale_content",
        "rpt_security_changes_outside_window",
        "rpt_inactive_licensed_users",
        "rpt_licence_right_sizing",
    ]
    facts = ["fct_content_lifecycle", "fct_content_access", "fct_group_membership_changes", "fct_logins"]
    about = {signed_in[0].user_luid, signed_in[1].user_luid, access.actor_user_luid}
    return Delivery([rows], [[*facts, *kept, *over_them]], {m: () for m in kept}, check, about)


def _jobs_and_sessions_delivery(spark, cfg, users: set[str]) -> Delivery:
    """fct_background_jobs and fct_sessions read silver only from the earliest time a row with new
    events can start (macros/history_window.sql). A new state of the oldest job (its other events
    are older than the new one) and a late sign-in inside a session (splitting it)."""
    site, gold = tables(cfg).silver_events("site"), cfg.get("gold.schema")
    job = spark.table(f"{gold}.fct_background_jobs").orderBy("first_event_at", "job_luid").first()
    session = (
        spark.table(f"{gold}.fct_sessions")
        .where(f"(views_accessed > 0 or signed_out_at is not null) and {_not_about(users, 'user_luid')}")
        .orderBy("signed_in_at", "session_id")
        .first()
    )
    first_state = spark.table(site).where(f"job_luid = '{job.job_luid}'").orderBy("event_time").first()
    rows = [
        (
            site,
            _late_copy(
                spark,
                site,
                first_state.event_id,
                "late",
                event_state=F.lit("Cancelled"),
                event_time=F.col("event_time") + F.expr("interval 1 day"),
            ),
        ),
        (
            site,
            _late_copy(
                spark,
                site,
                session.session_id,
                "late",
                event_time=F.col("event_time") + F.expr("interval 1 millisecond"),
            ),
        ),
    ]
    late_sign_in = rows[1][1].first().event_id
    marts = ["fct_background_jobs", "fct_sessions"]

    def check() -> None:
        for name, column in zip(marts, ("first_event_at", "signed_in_at"), strict=True):
            # a bounded read: the window starts at the job's first event / the split session
            compiled = next((dbt_target_dir() / "compiled").rglob(f"{name}.sql")).read_text()
            assert "event_date >= date '" in compiled and "9999-12-31" not in compiled, name
            # and a bounded merge: the mart's files before the recomputed rows' start are not read
            merged = next((dbt_target_dir() / "run").rglob(f"{name}.sql")).read_text()
            assert f"(DBT_INTERNAL_DEST.{column} >= timestamp '" in merged, name
            assert not spark.catalog.isCached(f"{name}__dbt_tmp"), name  # the merge's cached source dropped
        split = spark.table(f"{gold}.fct_sessions").where(f"session_id = '{late_sign_in}'").count()
        assert split == 1  # the late sign-in opened a session of its own
        assert (
            spark.table(f"{gold}.fct_background_jobs").where(f"job_luid = '{job.job_luid}'").first().state_events
            == job.state_events + 1
        )

    return Delivery([rows], [marts], {m: () for m in marts}, check, {session.user_luid})


@pytest.fixture(scope="module")
def deliveries(spark, gold_lake) -> dict[str, Delivery]:
    """The three deliveries appended to silver and built incrementally (the role history's first
    delivery alone, then the rest at once), their checks run, their incremental models then built
    again by a full refresh and compared; the shared lake put back (its tables restored) before any
    test reads it."""
    cfg = gold_lake[0]
    made: dict[str, Delivery] = {}
    users: set[str] = set()
    for name, make in (
        ("roles", _role_history_delivery),
        ("content", _content_delivery),
        ("jobs", _jobs_and_sessions_delivery),
    ):
        made[name] = make(spark, cfg, users)
        users |= made[name].users
    built = inputs.last_built(spark, cfg) == inputs.current_inputs(spark, cfg)
    compared = {m: ignore for d in made.values() for m, ignore in d.compared.items()}
    touched = {table for d in made.values() for run in d.runs for table, _ in run}
    runs = max(len(d.runs) for d in made.values())
    # each run's (delivery, its run): a delivery's last run is the last one (the role history's first goes alone)
    plan = [[(d, i - runs + len(d.runs)) for d in made.values() if i >= runs - len(d.runs)] for i in range(runs)]
    built_models = dict.fromkeys(m for d in made.values() for run in d.models for m in run)
    versions = delta_versions(spark, [*sorted(touched), *(_model_table(cfg, m) for m in built_models)])
    try:
        for step in plan:
            appended: dict[str, list] = {}  # one append per table and run, not one per frame (each is a commit)
            for d, j in step:
                for table, frame in d.runs[j]:
                    appended.setdefault(table, []).append(frame)
            for table, frames in appended.items():
                reduce(DataFrame.unionByName, frames).write.format("delta").mode("append").saveAsTable(table)
            run_dbt(spark, cfg, ["run", "--quiet", "--select", *dict.fromkeys(m for d, j in step for m in d.models[j])])
        for d in made.values():
            try:
                d.check()
            except AssertionError as failure:
                d.failure = failure

        def rows() -> dict[str, tuple]:
            return fingerprints({m: spark.table(_model_table(cfg, m)) for m in compared}, ignore=compared)

        incremental = rows()
        run_dbt(spark, cfg, ["run", "--quiet", "--full-refresh", "--select", *compared])
        full = rows()
        for d in made.values():
            d.differs = [m for m in d.compared if full[m] != incremental[m]]
    finally:
        restore_versions(spark, cfg, versions)
        if built:  # the same rows again: the shared lake's marts still match silver
            inputs.record_built(spark, cfg, inputs.current_inputs(spark, cfg))
    return made


def test_role_history_and_actors_merge_from_their_window_and_equal_a_full_refresh(deliveries):
    """The role history's two deliveries (``_role_history_delivery``): the versions split and seeded,
    the new actor and the rename in dim_users; the five models what a full refresh gives."""
    deliveries["roles"].passed()


def test_content_groups_and_admin_changes_merge_a_delivery_and_equal_a_full_refresh(deliveries):
    """The content, groups, admin changes and activity delivery (``_content_delivery``): late renames
    rename nothing, a newer one does, the last access and sign-ins, "now"; the ten tables, dimensions
    and reports what a full refresh gives."""
    deliveries["content"].passed()


def test_jobs_and_sessions_recompute_from_their_window_and_equal_a_full_refresh(deliveries):
    """A job's late state and a late sign-in (``_jobs_and_sessions_delivery``): bounded reads and
    merges, the split session, the job's one more state; both marts what a full refresh gives."""
    deliveries["jobs"].passed()
