"""Gold's incremental models on the shared lake: a rerun changes nothing and a full refresh gives the
same rows, the event facts append each event once, a dimension gains its new columns, silver is read
past a literal watermark, and late and new rows (tests/deliveries.py) merge as a full refresh would."""

from __future__ import annotations

import json
import re
from functools import reduce

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.gold import inputs
from pipelines.gold.compact import mart_tables
from pipelines.gold.run import dbt_target_dir, run_dbt
from pipelines.gold.staging import event_marts
from pipelines.lake.table_names import tables
from tests.deliveries import Delivery, content_delivery, jobs_and_sessions_delivery, model_table, role_history_delivery
from tests.lake import delta_versions, fingerprint, fingerprints, restore_versions

pytestmark = [pytest.mark.slow(minutes=5)]


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
        ("roles", role_history_delivery),
        ("content", content_delivery),
        ("jobs", jobs_and_sessions_delivery),
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
    versions = delta_versions(spark, [*sorted(touched), *(model_table(cfg, m) for m in built_models)])
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
            return fingerprints({m: spark.table(model_table(cfg, m)) for m in compared}, ignore=compared)

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
    """The role history's two deliveries (``role_history_delivery``): the versions split and seeded,
    the new actor and the rename in dim_users; the five models what a full refresh gives."""
    deliveries["roles"].passed()


def test_content_groups_and_admin_changes_merge_a_delivery_and_equal_a_full_refresh(deliveries):
    """The content, groups, admin changes and activity delivery (``content_delivery``): late renames
    rename nothing, a newer one does, the last access and sign-ins, "now"; the ten tables, dimensions
    and reports what a full refresh gives."""
    deliveries["content"].passed()


def test_jobs_and_sessions_recompute_from_their_window_and_equal_a_full_refresh(deliveries):
    """A job's late state and a late sign-in (``jobs_and_sessions_delivery``): bounded reads and
    merges, the split session, the job's one more state; both marts what a full refresh gives."""
    deliveries["jobs"].passed()
