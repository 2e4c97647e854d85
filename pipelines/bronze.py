"""Bronze: land every Activity Log line in Delta, as it came, exactly once.

Each source (site, tenant) is a Structured Streaming file source over its landing
folder, run with ``trigger(availableNow=True)`` and a checkpoint: the checkpoint
remembers which files were landed, the Delta sink commits each micro-batch
idempotently, so a re-run lands only new files and a killed run resumes cleanly.

A line that is not JSON is landed too, flagged by ``parse_status``; nothing is
dropped here. ``event_type`` and ``event_time`` are lifted from either record
shape, falling back to the ``eventType=`` folder for the type.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import storage
from pipelines.config import Config
from pipelines.tables import tables

FAMILIES = ("site", "tenant")

# Only the routing fields are parsed here; silver parses the full record.
_ROUTING_SCHEMA = "eventType string, eventTime string, event string, metadata string, _corrupt_record string"
_BOM = "\ufeff"

BRONZE_COLUMNS = [
    "bronze_id",
    "raw_line",
    "parse_status",
    "record_shape",
    "event_type",
    "event_type_from_folder",
    "event_time",
    "family",
    "source_file",
    "source_file_size",
    "source_file_mtime",
    "content_hash",
    "ingest_ts",
    "run_id",
]


def bronze_table(cfg: Config, family: str) -> str:
    return tables(cfg).bronze_raw(family)


def checkpoint_path(cfg: Config, family: str) -> str:
    return storage.join(cfg.checkpoint_dir, f"bronze_{family}")


def landing_path(cfg: Config, family: str, source_dir: Path | str | None = None) -> str:
    """``<landing>/<family>``: a local path or a URI (object storage)."""
    root = str(source_dir) if source_dir is not None else cfg.landing_dir
    return storage.join(root, family)


def _unquote_path(col: Column) -> Column:
    # _metadata.file_path is a URI (spaces as %20, a literal '+' left as is): keep the readable
    # local form for lineage. '+' is protected first because url_decode reads it as a space.
    return F.regexp_replace(F.url_decode(F.replace(col, F.lit("+"), F.lit("%2B"))), r"^file:(//)?", "")


def to_bronze_rows(raw: DataFrame, family: str, run_id: str) -> DataFrame:
    """Raw lines + file metadata -> bronze rows (no I/O).

    ``raw`` has ``value`` (the line), ``source_file``, ``source_file_size``,
    ``source_file_mtime``.
    """
    line = F.col("value")
    # A UTF-8 BOM at the start of a file sticks to its first line: parse without it, keep it raw.
    parsable = F.when(line.startswith(_BOM), F.substring(line, 2, 1 << 30)).otherwise(line)
    parsed = F.from_json(
        parsable, _ROUTING_SCHEMA, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt_record"}
    )
    is_blank = F.trim(parsable) == ""
    is_object = parsed.isNotNull() & parsed["_corrupt_record"].isNull() & ~is_blank
    is_envelope = is_object & parsed["event"].isNotNull() & parsed["metadata"].isNotNull()
    record_type = F.when(
        is_envelope,
        F.coalesce(
            F.get_json_object(parsed["metadata"], "$.eventType"), F.get_json_object(parsed["event"], "$.eventType")
        ),
    ).otherwise(parsed["eventType"])
    record_time = F.when(is_envelope, F.get_json_object(parsed["event"], "$.eventTime")).otherwise(parsed["eventTime"])
    folder_type = F.nullif(F.regexp_extract(F.col("source_file"), r"/eventType=([^/]+)/", 1), F.lit(""))
    return raw.select(
        # Stored once at landing, so silver can tell a replayed batch from a true duplicate.
        F.expr("uuid()").alias("bronze_id"),
        line.alias("raw_line"),
        F.when(is_blank, "blank").when(is_object, "ok").otherwise("malformed").alias("parse_status"),
        F.when(is_envelope, "envelope").when(is_object, "flat").alias("record_shape"),
        F.when(is_object, F.coalesce(record_type, folder_type)).alias("event_type"),
        (is_object & record_type.isNull() & folder_type.isNotNull()).alias("event_type_from_folder"),
        F.when(is_object, record_time).alias("event_time"),
        F.lit(family).alias("family"),
        F.col("source_file"),
        F.col("source_file_size"),
        F.col("source_file_mtime"),
        F.sha2(line, 256).alias("content_hash"),
        F.current_timestamp().alias("ingest_ts"),
        F.lit(run_id).alias("run_id"),
    )


def read_landing_stream(spark: SparkSession, path: Path, max_files_per_trigger: int) -> DataFrame:
    """Every line of every file under ``path`` (any depth, .gz decompressed), with file metadata."""
    stream = (
        spark.readStream.format("text")
        .option("recursiveFileLookup", "true")
        .option("maxFilesPerTrigger", max_files_per_trigger)
        .load(str(path))
    )
    return stream.select(
        "value",
        _unquote_path(F.col("_metadata.file_path")).alias("source_file"),
        F.col("_metadata.file_size").alias("source_file_size"),
        F.col("_metadata.file_modification_time").alias("source_file_mtime"),
    )


@dataclass
class LandingResult:
    family: str
    table: str
    rows_landed: int
    files_landed: int
    malformed_rows: int
    skipped_reason: str | None = None


def ensure_schema(spark: SparkSession, schema: str) -> None:
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")


def land_family(
    spark: SparkSession, cfg: Config, family: str, run_id: str, source_dir: Path | None = None
) -> LandingResult:
    """Land every not-yet-landed file of one source into its bronze table."""
    table = bronze_table(cfg, family)
    path = landing_path(cfg, family, source_dir)
    if not storage.is_dir(spark, path):
        return LandingResult(family, table, 0, 0, 0, skipped_reason=f"no landing folder {path}")
    ensure_schema(spark, cfg.get("bronze.schema"))
    raw = read_landing_stream(spark, path, cfg.get("bronze.max_files_per_trigger"))
    query = (
        to_bronze_rows(raw, family, run_id)
        .writeStream.format("delta")
        .outputMode("append")
        .option("checkpointLocation", checkpoint_path(cfg, family))
        .queryName(f"bronze_{family}")
        .trigger(availableNow=True)
        .toTable(table)
    )
    query.awaitTermination()
    if query.exception() is not None:  # pragma: no cover - awaitTermination raises first
        raise RuntimeError(f"bronze landing of {family} failed: {query.exception()}")
    if not spark.catalog.tableExists(table):
        return LandingResult(family, table, 0, 0, 0, skipped_reason=f"no files under {path}")
    stats = (
        spark.table(table)
        .where(F.col("run_id") == run_id)
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.countDistinct("source_file").alias("files"),
            F.count(F.when(F.col("parse_status") != "ok", 1)).alias("malformed"),
        )
        .first()
    )
    return LandingResult(family, table, stats["rows"], stats["files"], stats["malformed"])


def land_bronze(
    spark: SparkSession, cfg: Config, run_id: str, source_dir: Path | None = None, log=print
) -> list[LandingResult]:
    """Land both sources; one result per family."""
    results = []
    for family in FAMILIES:
        log(f"bronze: landing {family} events from {landing_path(cfg, family, source_dir)}")
        result = land_family(spark, cfg, family, run_id, source_dir)
        if result.skipped_reason:
            log(f"bronze: {family} skipped ({result.skipped_reason})")
        else:
            log(
                f"bronze: {family}: {result.rows_landed} rows from {result.files_landed} new files "
                f"({result.malformed_rows} not parseable, kept and flagged) -> {result.table}"
            )
        results.append(result)
    return results
