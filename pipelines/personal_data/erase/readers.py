"""Catching up bronze's readers: silver's promoted range moved past the erasure's commits, and the
Write-Back stream told to skip them, so no reader takes a rewrite for new rows."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.activity_log import FAMILIES
from pipelines.activity_log.silver.promote import last_promoted
from pipelines.config.load import Config
from pipelines.lake.delta_tables import table_version
from pipelines.lake.table_names import Tables, tables
from pipelines.personal_data.erase.person import EraseError


def require_promoted(spark: SparkSession, cfg: Config) -> None:
    """Every bronze row is in silver already: the versions that added unpromoted rows would be
    read again after the erasure rewrote (and the vacuum removed) their files."""
    t = tables(cfg)
    behind = []
    for family in FAMILIES:
        source = t.bronze_raw(family)
        if spark.catalog.tableExists(source) and table_version(spark, source) > last_promoted(spark, t, family):
            behind.append(source)
    if spark.catalog.tableExists(t.writeback_raw) and _writeback_pending(spark, t):
        behind.append(t.writeback_raw)
    if behind:
        raise EraseError(
            f"{', '.join(behind)} hold rows silver has not promoted yet: run "
            "`auditlake refresh --layers silver` first, then erase (nothing changed)"
        )


def _writeback_pending(spark: SparkSession, t: Tables) -> bool:
    if not spark.catalog.tableExists(t.writeback_audit):
        return True
    raw = spark.table(t.writeback_raw)
    ids = spark.table(t.writeback_audit).select(F.col("id").alias("_id"))
    quarantined = spark.table(t.writeback_quarantine).select("bronze_id")
    pending = raw.join(quarantined, "bronze_id", "left_anti").join(
        ids, F.lower(F.trim("ID")) == F.col("_id"), "left_anti"
    )
    return pending.limit(1).count() > 0


def move_silver_past(spark: SparkSession, cfg: Config, erasure_id: str) -> None:
    """Record, per family silver is behind on, a promotion of no rows up to bronze's current version:
    the erasure's commits are updates of rows silver has (promotion would skip them anyway, reading
    appends only), so the next refresh finds nothing new. Only where behind: safe to repeat."""
    t = tables(cfg)
    if not spark.catalog.tableExists(t.silver_batches):
        return
    rows = []
    for family in FAMILIES:
        if spark.catalog.tableExists(t.bronze_raw(family)):
            current = table_version(spark, t.bronze_raw(family))
            if current > last_promoted(spark, t, family):
                rows.append((erasure_id, family, current, 0, 0, 0, 0))
    if rows:
        frame = spark.createDataFrame(
            rows,
            "silver_run_id string, family string, batch_id long, bronze_rows long, "
            "inserted long, duplicates long, quarantined long",
        )
        frame.withColumn("processed_at", F.current_timestamp()).write.format("delta").mode("append").saveAsTable(
            t.silver_batches
        )
