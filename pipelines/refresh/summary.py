"""``refresh --summary``: rows per table, then the lake's checks and the latest quality run."""

from __future__ import annotations

import time

from pyspark.sql import SparkSession

from pipelines.activity_log import bronze
from pipelines.alerts import webhook as alerts
from pipelines.command.console import log
from pipelines.config.load import Config
from pipelines.gold.compact import mart_tables
from pipelines.integrity.reconcile import print_lake_checks
from pipelines.lake.table_names import tables
from pipelines.quality.latest_run import print_latest_run


def print_summary(spark: SparkSession, cfg: Config, started: float) -> bool:
    """Rows per table, then the lake's checks and the latest quality run; whether the lake balances."""
    counts = table_counts(spark, cfg)
    width = max([len(table) for table, _, _ in counts] + [34]) + 1
    log("")
    log(f"{'table':<{width}} {'rows':>10}  note")
    for table, rows, note in counts:
        log(f"{table:<{width}} {rows:>10}  {note}")
    log("")
    balanced = print_lake_checks(spark, cfg)
    log("")
    print_latest_run(spark, cfg)
    log(f"time taken: {time.monotonic() - started:.1f}s")
    return balanced


def _quarantine_by_reason(spark: SparkSession, table: str) -> list[tuple[str, int, str]]:
    if not spark.catalog.tableExists(table):
        return []
    rows = spark.sql(f"SELECT reason, count(*) AS n FROM {table} GROUP BY reason ORDER BY reason").collect()
    return [(f"{table} [{r['reason']}]", r["n"], "") for r in rows]


def table_counts(spark: SparkSession, cfg: Config) -> list[tuple[str, int, str]]:
    """(table, rows, note) for every lakehouse table that exists."""
    out = []
    for family in bronze.FAMILIES:
        table = tables(cfg).bronze_raw(family)
        if spark.catalog.tableExists(table):
            row = spark.sql(f"SELECT count(*) AS n, count_if(parse_status <> 'ok') AS bad FROM {table}").first()
            out.append((table, row["n"], f"{row['bad']} lines not JSON (kept, flagged)"))
    t = tables(cfg)
    for family in bronze.FAMILIES:
        table = t.silver_events(family)
        if spark.catalog.tableExists(table):
            row = spark.sql(
                f"SELECT count(*) AS n, count(DISTINCT event_type) AS types, "
                f"count_if(_rescued_data IS NOT NULL) AS rescued FROM {table}"
            ).first()
            out.append((table, row["n"], f"{row['types']} event types, {row['rescued']} rows with _rescued_data"))
    out += _quarantine_by_reason(spark, t.quarantine)
    if spark.catalog.tableExists(t.quarantine_replays):
        row = spark.sql(
            f"SELECT coalesce(sum(replayed), 0) AS n, count(*) AS replays FROM {t.quarantine_replays}"
        ).first()
        out.append(
            (t.quarantine_replays, row["n"], f"rows moved from quarantine to silver in {row['replays']} replays")
        )
    if spark.catalog.tableExists(t.duplicates):
        out.append((t.duplicates, spark.table(t.duplicates).count(), "copies removed, kept for audit"))
    if spark.catalog.tableExists(t.writeback_raw):
        row = spark.sql(
            f"SELECT count(*) AS n, count_if(database = 'metadata') AS m, count_if(database = 'persistence') AS p "
            f"FROM {t.writeback_raw}"
        ).first()
        out.append((t.writeback_raw, row["n"], f"{row['m']} from metadata, {row['p']} from persistence"))
    if spark.catalog.tableExists(t.writeback_audit):
        row = spark.sql(
            f"SELECT count(*) AS n, count_if(seen_in_metadata AND seen_in_persistence) AS both FROM {t.writeback_audit}"
        ).first()
        out.append((t.writeback_audit, row["n"], f"{row['both']} seen in both databases"))
    out += _quarantine_by_reason(spark, t.writeback_quarantine)
    if spark.catalog.tableExists(t.alert_deliveries):
        row = spark.sql(
            f"SELECT count(*) AS n, count_if(status = '{alerts.PENDING}') AS pending FROM {t.alert_deliveries}"
        ).first()
        out.append((t.alert_deliveries, row["n"], f"detections queued for the webhook, {row['pending']} pending"))
    if spark.catalog.databaseExists(t.gold_schema):
        for name in mart_tables(spark, t.gold_schema):
            out.append((t.gold(name), spark.table(t.gold(name)).count(), "gold mart"))
    return out
