"""The frames the suites read: a batch's data plus the few derived columns an expectation needs."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.config.load import Config


def bronze_rows_frame(spark: SparkSession, batch: DataFrame, file_ledger: str) -> DataFrame:
    """The bronze batch (as silver staged it: not read from bronze again), with whether a parsed row has a
    type and how many times its file was landed: the runs that landed it within the batch, or its
    ``landed`` verdicts in the file ledger (read for the batch's files only, never all of bronze),
    whichever is more."""
    in_batch = batch.groupBy("source_file").agg(F.countDistinct("run_id").alias("_runs_in_batch"))
    in_ledger = (
        spark.table(file_ledger)
        .where(F.col("status") == "landed")
        .select(F.col("path").alias("source_file"))
        .join(in_batch.select("source_file"), "source_file", "left_semi")
        .groupBy("source_file")
        .agg(F.count(F.lit(1)).alias("_landed"))
    )
    runs = in_batch.join(in_ledger, "source_file", "left").select(
        "source_file", F.greatest("_runs_in_batch", F.coalesce("_landed", F.lit(0))).alias("source_file_runs")
    )
    return batch.join(F.broadcast(runs), "source_file", "left").select(
        "*", ((F.col("parse_status") != "ok") | F.col("event_type").isNotNull()).alias("event_type_present")
    )


def event_time_in_window(cfg: Config) -> Column:
    """Whether ``event_time`` lies in the sane window: not before ``min_event_year``, not later than now
    plus ``future_tolerance_hours`` (NULL when there is no time)."""
    t = cfg.settings.quality.thresholds
    earliest = F.lit(f"{int(t.min_event_year)}-01-01").cast("timestamp")
    latest = F.current_timestamp() + F.expr(f"INTERVAL {int(t.future_tolerance_hours)} HOURS")
    return (F.col("event_time") >= earliest) & (F.col("event_time") <= latest)


def silver_events_frame(cfg: Config, events: DataFrame) -> DataFrame:
    """Candidate silver events, with ``event_time_in_window`` (1 inside the sane window, else 0)."""
    return events.withColumn("event_time_in_window", F.when(event_time_in_window(cfg), 1).otherwise(0))


def silver_batch_frame(bronze_rows: int, inserted: int, duplicates: int, quarantined: int) -> pd.DataFrame:
    """One row of batch figures: the quarantine ratio and bronze - (silver + duplicates + quarantine).
    Counted in Python already, so a pandas frame: the gate checks it without a Spark job."""
    ratio = quarantined / bronze_rows if bronze_rows else 0.0
    difference = bronze_rows - (inserted + duplicates + quarantined)
    return pd.DataFrame(
        [
            {
                "bronze_rows": bronze_rows,
                "inserted": inserted,
                "duplicates": duplicates,
                "quarantined": quarantined,
                "quarantine_ratio": float(ratio),
                "reconciliation_difference": difference,
            }
        ]
    )
