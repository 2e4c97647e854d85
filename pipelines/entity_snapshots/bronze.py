"""Land entity snapshot files in ``bronze.entity_<type>``, as delivered (called by bronze's landing,
inside its run: the file ledger records these files with the Activity Log's, in one commit)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.activity_log.bronze import ledger
from pipelines.activity_log.bronze.decode import LANDED, check_parquet
from pipelines.activity_log.bronze.listing import ListedFile
from pipelines.activity_log.bronze.rows import lineage_path
from pipelines.activity_log.bronze.verdicts import file_verdicts
from pipelines.entity_snapshots import LINEAGE
from pipelines.lake import storage
from pipelines.lake.table_names import Tables


def _read(spark: SparkSession, files: list[ListedFile], run_id: str) -> DataFrame:
    """The files' rows, every column they carry (the union over the files), plus the lineage."""
    reader = spark.read.format("parquet").option("mergeSchema", "true")
    frame = storage.load_files(spark, reader, [f.path for f in files])
    frame = frame.select(
        *[F.col(f"`{c}`").alias(f"delivered_{c}" if c in LINEAGE else c) for c in frame.columns],
        F.col("_metadata.file_path").alias("_path"),
        F.col("_metadata.file_size").alias("_size"),
        F.col("_metadata.file_modification_time").alias("_mtime"),
    )
    path = lineage_path(F.col("_path"))
    part = lambda key: F.regexp_extract(path, rf"/{key}=([^/]+)/", 1)  # noqa: E731
    hour = F.make_timestamp_ntz(
        part("y").cast("int"), part("m").cast("int"), part("d").cast("int"), part("h").cast("int"), F.lit(0), F.lit(0)
    ).cast("timestamp")
    return frame.select(
        *[F.col(f"`{c}`") for c in frame.columns if c not in ("_path", "_size", "_mtime")],
        F.lower(part("siteLuid")).alias("snapshot_site_luid"),
        hour.alias("snapshot_hour"),
        path.alias("source_file"),
        F.col("_size").alias("source_file_size"),
        F.col("_mtime").alias("source_file_mtime"),
        F.lit(run_id).alias("run_id"),
        F.current_timestamp().alias("ingest_ts"),
    )


def land_snapshots(
    spark: SparkSession, t: Tables, files: list[ListedFile], run_id: str, log=print
) -> list[ledger.LedgerEntry]:
    """Judge each file (a damaged one is quarantined, the rest land), append one commit per entity
    type; -> the ledger entries of every file."""
    verdicts = file_verdicts(spark, files, check_parquet)
    entries = [
        ledger.LedgerEntry(f.path, f.info, f.size, f.mtime_ms, *verdicts[f.path])
        for f in files
        if verdicts.get(f.path, (LANDED,))[0] != LANDED
    ]
    good = [f for f in files if verdicts.get(f.path, (LANDED,))[0] == LANDED]
    for entity_type in sorted({f.info.entity_type for f in good}):
        mine = [f for f in good if f.info.entity_type == entity_type]
        table = t.bronze_entity(entity_type)
        (
            _read(spark, mine, run_id)
            .write.format("delta")
            .mode("append")
            .option("mergeSchema", "true")
            .option("userMetadata", ledger.COMMIT_MARK + run_id)
            .saveAsTable(table)
        )
        rows = {
            r["source_file"]: r["n"]
            for r in spark.table(table)
            .where(F.col("run_id") == run_id)
            .groupBy("source_file")
            .agg(F.count(F.lit(1)).alias("n"))
            .collect()
        }
        entries += [
            ledger.LedgerEntry(f.path, f.info, f.size, f.mtime_ms, LANDED, None, None, rows.get(f.path, 0))
            for f in mine
        ]
        log(f"bronze: entity snapshots: {len(mine)} {entity_type} files, {sum(rows.values())} rows -> {table}")
    return entries
