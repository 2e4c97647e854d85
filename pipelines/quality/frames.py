"""The frames the suites read: a batch's data plus the few derived columns an expectation needs."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.config import Config


def bronze_rows_frame(spark: SparkSession, batch: DataFrame, bronze_table: str) -> DataFrame:
    """The bronze batch, with whether a parsed row has a type and how many runs landed its file."""
    files = batch.select("source_file").distinct()
    runs = (
        spark.table(bronze_table)
        .join(files, "source_file", "left_semi")
        .groupBy("source_file")
        .agg(F.countDistinct("run_id").alias("source_file_runs"))
    )
    return batch.join(runs, "source_file", "left").select(
        "*", ((F.col("parse_status") != "ok") | F.col("event_type").isNotNull()).alias("event_type_present")
    )


def silver_events_frame(cfg: Config, events: DataFrame) -> DataFrame:
    """Candidate silver events, with ``event_time_in_window`` (1 inside the sane window, else 0)."""
    t = cfg.get("quality.thresholds")
    earliest = f"{int(t['min_event_year'])}-01-01"
    latest = F.current_timestamp() + F.expr(f"INTERVAL {int(t['future_tolerance_hours'])} HOURS")
    in_window = (F.col("event_time") >= F.lit(earliest).cast("timestamp")) & (F.col("event_time") <= latest)
    return events.withColumn("event_time_in_window", F.when(in_window, 1).otherwise(0))


def silver_batch_frame(
    spark: SparkSession, bronze_rows: int, inserted: int, duplicates: int, quarantined: int
) -> DataFrame:
    """One row of batch figures: the quarantine ratio and bronze - (silver + duplicates + quarantine)."""
    ratio = quarantined / bronze_rows if bronze_rows else 0.0
    difference = bronze_rows - (inserted + duplicates + quarantined)
    return spark.createDataFrame(
        [(bronze_rows, inserted, duplicates, quarantined, float(ratio), difference)],
        "bronze_rows long, inserted long, duplicates long, quarantined long, quarantine_ratio double, "
        "reconciliation_difference long",
    )
