"""The silver -> gold quality gate: frames for the Great Expectations suites run after dbt.

dbt's own tests (keys, accepted values, relationships, unit tests) run inside ``dbt build``;
this gate adds what spans layers: each event-level mart holds exactly the silver rows of the
event types it covers (dbt_project.yml vars.event_groups), and a few business rules, with the
results recorded in ops.dq_results and the Data Docs like the bronze -> silver gate.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from pipelines.activity_log import FAMILIES
from pipelines.config.load import Config
from pipelines.gold.staging import event_groups, event_marts
from pipelines.lake.delta_tables import for_each_table
from pipelines.lake.table_names import tables


def reconciliation_frame(spark: SparkSession, cfg: Config) -> DataFrame:
    """(mart, silver_rows, gold_rows, difference) for every event-level mart and the write-back mart.

    Silver is counted with one scan of ``event_type`` per family (each silver.<event_type> view is
    its family table ``WHERE event_type = ...``), not one scan per view: a refresh counts all of
    history twice (gate and run log), so this is the part of the gate that grows with history. The
    counts (a scan per family, a count per mart) are small jobs, mostly the driver's planning: run a
    few at once (for_each_table)."""
    t = tables(cfg)
    marts = event_marts()
    counts = {  # each a small job: a name for the results -> the job
        **{f: lambda f=f: spark.table(t.silver_events(f)).groupBy("event_type").count().collect() for f in FAMILIES},
        **{m: lambda m=m: spark.table(t.gold(m)).count() for m in [*marts, "fct_writeback_changes"]},
        "silver writeback": lambda: spark.table(t.writeback_audit).count(),
    }
    counted: dict[str, object] = {}
    for_each_table(lambda name: counted.__setitem__(name, counts[name]()), counts)
    by_type: dict[str, int] = {}
    for family in FAMILIES:
        for row in counted[family]:
            by_type[row["event_type"]] = by_type.get(row["event_type"], 0) + row["count"]
    groups = event_groups()
    rows = [
        (mart, sum(by_type.get(e, 0) for family in groups[group].values() for e in family), counted[mart])
        for mart, group in marts.items()
    ]
    rows.append(("fct_writeback_changes", counted["silver writeback"], counted["fct_writeback_changes"]))
    frame = spark.createDataFrame(rows, "mart string, silver_rows long, gold_rows long")
    return frame.selectExpr("*", "silver_rows - gold_rows AS difference")


def validate_gold(spark: SparkSession, cfg: Config, gate, run_id: str, reconciliation: DataFrame) -> None:
    """Run the silver -> gold suites on ``reconciliation`` (``reconciliation_frame``, counted once by
    the caller) and the marts; raises QualityGateError when a critical expectation fails."""
    from pipelines.quality import suites  # loads GX (seconds): only when gold is built

    t = tables(cfg)
    gate.validate("silver_to_gold", suites.gold_reconciliation_suite(cfg), reconciliation, run_id)
    # the marts' rows, counted already: a mart too large for GX's pandas engine is not fetched to find out
    rows = {r["mart"]: r["gold_rows"] for r in reconciliation.collect()}
    logins = spark.table(t.gold("fct_logins"))
    gate.validate("silver_to_gold", suites.gold_logins_suite(cfg), logins, run_id, rows=rows.get("fct_logins"))
    transfers = spark.table(t.gold("fct_ownership_transfers")).selectExpr(
        "*", "old_owner_luid IS DISTINCT FROM new_owner_luid AS owner_changed"
    )
    transfers_rows = rows.get("fct_ownership_transfers")
    gate.validate("silver_to_gold", suites.gold_ownership_suite(cfg), transfers, run_id, rows=transfers_rows)
    writeback = spark.table(t.gold("fct_writeback_changes"))
    writeback_rows = rows.get("fct_writeback_changes")
    gate.validate("silver_to_gold", suites.gold_writeback_suite(cfg), writeback, run_id, rows=writeback_rows)
    gate.record()
