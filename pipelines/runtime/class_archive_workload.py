"""The run that records the class archive (``pipelines/runtime/class_archive.py``): a child process of
``auditlake setup``, ``python -m pipelines.runtime.class_archive_workload ENV ARCHIVE``, whose JVM loads what a
refresh's driver loads first and writes the classes it loaded to ``ARCHIVE`` as it exits. It starts
a Spark session, and the session maps the archive through ``class_archive``: so it lives apart."""

from __future__ import annotations

import sys

from pyspark.sql import functions as F

from pipelines.config.load import load_config
from pipelines.runtime.spark_session import build_spark


def run_workload(env: str, partial: str) -> None:
    """What a refresh's driver loads first: a session on the metastore, Delta writes, reads, a merge,
    JSON typing and an aggregate; then the JVM writes the archive as it exits."""
    cfg = load_config(env, writes_lake=False)  # `auditlake setup` starts without the key
    spark = build_spark(cfg, extra_java_options=f"-XX:ArchiveClassesAtExit={partial}")
    spark.sql("CREATE SCHEMA IF NOT EXISTS probe")
    rows = spark.createDataFrame(
        [(i, f'{{"a": {i}, "t": "2026-01-01T00:00:00Z"}}') for i in range(100)], "id long, line string"
    )
    typed = rows.withColumn("j", F.from_json("line", "a long, t timestamp")).select("id", "j.*")
    typed.write.format("delta").mode("overwrite").saveAsTable("probe.events")
    spark.sql(
        "MERGE INTO probe.events t USING (SELECT id, a + 1 AS a, t FROM probe.events) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET *"
    )
    spark.table("probe.events").groupBy("a").agg(F.count("*"), F.max("t")).collect()
    spark.sql("DESCRIBE HISTORY probe.events").collect()
    gateway = spark.sparkContext._gateway
    spark.stop()
    # the JVM writes the archive as it exits: wait for it (it exits when its stdin closes)
    gateway.proc.stdin.close()
    gateway.proc.wait(timeout=600)


if __name__ == "__main__":
    run_workload(sys.argv[1], sys.argv[2])
