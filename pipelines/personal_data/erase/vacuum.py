"""The vacuum after the rewrite: the files that held the old values, and the change feed's pre-images,
deleted so no earlier version can be read."""

from __future__ import annotations

from pyspark.sql import SparkSession

from pipelines.lake.delta_tables import for_each_table

# Delta refuses a vacuum retention under its default (7 days) unless this check is off.
RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"


def vacuum(spark: SparkSession, names: list[str], retain_hours: int, log=print) -> None:
    """``VACUUM`` each table (a few at once) with a retention under Delta's 7-day check, the check
    off meanwhile."""
    before = spark.conf.get(RETENTION_CHECK, "true")
    spark.conf.set(RETENTION_CHECK, "false")

    def one(table: str) -> None:
        spark.sql(f"VACUUM {table} RETAIN {int(retain_hours)} HOURS").collect()
        log(f"erase: {table}: vacuumed")

    try:
        for_each_table(one, names)
    finally:
        spark.conf.set(RETENTION_CHECK, before)
