"""The latest validation run, as ``auditlake dq report`` and ``refresh --summary`` print it:
expectations checked and failed per checkpoint and severity, from ``ops.dq_results``."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.command.console import log
from pipelines.config.load import Config
from pipelines.lake.table_names import tables


def latest_run_summary(spark: SparkSession, cfg: Config) -> tuple[str, list] | None:
    """The latest run in ops.dq_results and, per checkpoint and severity, expectations checked and
    failed; None before the first validation."""
    table = tables(cfg).dq_results
    if not spark.catalog.tableExists(table):
        return None
    last = spark.table(table).orderBy(F.col("validated_at").desc()).select("run_id").first()
    if last is None:
        return None
    rows = (
        spark.table(table)
        .where(F.col("run_id") == last["run_id"])
        .groupBy("checkpoint", "severity")
        .agg(F.count("*").alias("checked"), F.count_if(~F.col("success")).alias("failed"))
        .orderBy("checkpoint", "severity")
        .collect()
    )
    return last["run_id"], rows


def print_latest_run(spark: SparkSession, cfg: Config) -> None:
    """The latest validation run: expectations checked and failed per checkpoint and severity."""
    latest = latest_run_summary(spark, cfg)
    if latest is not None:
        run_id, rows = latest
        log(f"latest quality run {run_id}:")
        for r in rows:
            log(f"  {r['checkpoint']:<45} {r['severity']:<9} {r['checked']:>4} checked {r['failed']:>4} failed")
