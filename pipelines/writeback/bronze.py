"""Bronze for Write-Back: land ``historical_audit`` rows as they came, once per (database, ID).

A row is keyed by its database role and ``ID`` (rows without an ID by their content hash,
so they are kept, and kept once). A batch is deduplicated on that key, rows already in
``bronze.writeback_audit_raw`` are left out (a left anti join), and the rest appended: a
re-run with nothing new adds nothing, and a run that died between the append and the
watermark update only re-reads a little more next time.

JDBC reads are incremental: ``ops.writeback_watermarks`` keeps, per source
(``jdbc://host:port/database``), the newest ``ACTIONDATE_UTC`` landed; the next read starts
``writeback.overlap_minutes`` before it, so a row committed late, with an ``ACTIONDATE_UTC``
inside that window, still lands. A row committed with a date older than the window is not
read by the incremental query (``full_scan=True`` reads everything once more). The
watermark never moves past the clock of the run, so one row dated in the future cannot
hide the rows after it. A file export is read whole each time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import reduce

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from pipelines.config.load import Config
from pipelines.lake.delta_tables import ensure_schema
from pipelines.lake.table_names import tables
from pipelines.runtime.spark_session import append_rows
from pipelines.writeback import COLUMNS
from pipelines.writeback.source import (
    WritebackSourceError,
    configured_databases,
    jdbc_source_name,
    no_rows,
    read_file_export,
    read_jdbc,
    source_kind,
)

_WATERMARK_SCHEMA = (
    "source string, database string, watermark_utc timestamp_ntz, read_from_utc timestamp_ntz, "
    "rows_read long, rows_landed long, run_id string, updated_at timestamp"
)


@dataclass
class DatabaseLanding:
    database: str  # role
    source: str
    rows_read: int = 0
    rows_landed: int = 0
    read_from_utc: datetime | None = None  # the incremental read's lower bound (None: everything); naive UTC
    watermark_utc: datetime | None = None  # naive UTC
    error: str | None = None


@dataclass
class WritebackLanding:
    table: str
    source_kind: str
    databases: list[DatabaseLanding] = field(default_factory=list)
    skipped_reason: str | None = None

    @property
    def rows_landed(self) -> int:
        return sum(d.rows_landed for d in self.databases)

    @property
    def errors(self) -> list[str]:
        return [d.error for d in self.databases if d.error]


def to_bronze_rows(rows: DataFrame, run_id: str) -> DataFrame:
    """Source rows -> bronze rows, one per (database, row_key) (no I/O)."""
    content_hash = F.sha2(F.to_json(F.struct(*COLUMNS)), 256)
    # No usable ID (or a line that is not a record): key it by what it holds, so it lands once.
    row_key = F.coalesce(
        F.nullif(F.trim("ID"), F.lit("")), F.concat(F.lit("sha256:"), F.sha2(F.col("raw_record"), 256))
    )
    keyed = rows.withColumn("content_hash", content_hash).withColumn("row_key", row_key)
    # two records with one key in one read (an export can hold that): keep one, the same one every time
    order = Window.partitionBy("database", "row_key").orderBy("raw_record")
    first = keyed.withColumn("_copy", F.row_number().over(order)).where(F.col("_copy") == 1)
    return first.select(
        F.expr("uuid()").alias("bronze_id"),
        "database",
        "row_key",
        *COLUMNS,
        "parse_status",
        "raw_record",
        "content_hash",
        "source",
        F.current_timestamp().alias("ingest_ts"),
        F.lit(run_id).alias("run_id"),
    )


def _land(spark: SparkSession, table: str, rows: DataFrame, run_id: str) -> dict[str, tuple[int, int]]:
    """Append the rows not yet in ``table``; {database: (rows read, rows landed)}."""
    read = {r["database"]: r["n"] for r in rows.groupBy("database").agg(F.count("*").alias("n")).collect()}
    fresh = to_bronze_rows(rows, run_id)
    if spark.catalog.tableExists(table):
        fresh = fresh.join(spark.table(table).select("database", "row_key"), ["database", "row_key"], "left_anti")
    fresh = fresh.localCheckpoint()  # bronze_id is a uuid(): count and write the same rows
    landed = {r["database"]: r["n"] for r in fresh.groupBy("database").agg(F.count("*").alias("n")).collect()}
    if landed or not spark.catalog.tableExists(table):
        fresh.write.format("delta").mode("append").saveAsTable(table)
    return {db: (n, landed.get(db, 0)) for db, n in read.items()}


def last_watermarks(spark: SparkSession, cfg: Config) -> dict[str, datetime]:
    """source -> the newest ACTIONDATE_UTC landed from it (naive UTC)."""
    table = tables(cfg).writeback_watermarks
    if not spark.catalog.tableExists(table):
        return {}
    rows = spark.table(table).groupBy("source").agg(F.max("watermark_utc").alias("w")).collect()
    return {r["source"]: r["w"] for r in rows if r["w"] is not None}


def _read_databases(
    spark: SparkSession, cfg: Config, result: WritebackLanding, full_scan: bool, environ, log
) -> DataFrame | None:
    """Each configured database from its watermark less the overlap; a failure is recorded, not raised."""
    previous = last_watermarks(spark, cfg)
    overlap = timedelta(minutes=cfg.settings.writeback.overlap_minutes)
    frames = []
    for role, database in configured_databases(cfg).items():
        source = jdbc_source_name(cfg, database)
        since = None if full_scan or source not in previous else previous[source] - overlap
        landing = DatabaseLanding(role, source, read_from_utc=since, watermark_utc=previous.get(source))
        result.databases.append(landing)
        try:
            frames.append(read_jdbc(spark, cfg, role, database, since, environ))
        except WritebackSourceError as exc:
            landing.error = str(exc)
            log(f"writeback bronze: {role} FAILED: {exc}")
    return reduce(DataFrame.unionByName, frames) if frames else None


def _advance_watermarks(
    spark: SparkSession, cfg: Config, rows: DataFrame, result: WritebackLanding, run_id: str
) -> None:
    """Record each database's new watermark: the newest ACTIONDATE_UTC read, never past this run's clock
    (one row dated in the future must not hide the rows after it), never backwards."""
    # timestamp_ntz: collected as a naive UTC datetime whatever this process's time zone
    newest_utc = F.max(F.trim("ACTIONDATE_UTC").try_cast("timestamp").cast("timestamp_ntz"))
    newest = {r["database"]: r["w"] for r in rows.groupBy("database").agg(newest_utc.alias("w")).collect()}
    now = datetime.now(UTC).replace(tzinfo=None)
    records = []
    for d in result.databases:
        if d.error:
            continue
        seen = newest.get(d.database)
        candidates = [w for w in (d.watermark_utc, min(seen, now) if seen else None) if w is not None]
        d.watermark_utc = max(candidates) if candidates else None
        records.append(
            (
                d.source,
                d.database,
                d.watermark_utc,
                d.read_from_utc,
                d.rows_read,
                d.rows_landed,
                run_id,
                datetime.now(UTC),
            )
        )
    table = tables(cfg).writeback_watermarks
    append_rows(spark, cfg, records, _WATERMARK_SCHEMA, table)


def _make_empty(spark: SparkSession, table: str, run_id: str) -> None:
    """A lake's first run with no Write-Back rows to land: the table made empty, so silver's and gold's
    write-back tables are empty, not missing (gold builds; its write-back marts have no rows)."""
    if not spark.catalog.tableExists(table):
        _land(spark, table, no_rows(spark), run_id)


def land_writeback(
    spark: SparkSession, cfg: Config, run_id: str, log=print, full_scan: bool = False, environ=None
) -> WritebackLanding:
    """Land the configured write-back source into ``bronze.writeback_audit_raw``.

    A database that cannot be read is reported in the result (``errors``, one line each) and
    logged; the others still land, and nothing already landed is touched. ``environ`` (default
    ``os.environ``) holds the password variable; ``full_scan`` ignores the watermarks once.
    """
    t = tables(cfg)
    kind = source_kind(cfg)
    result = WritebackLanding(t.writeback_raw, kind)
    log(f"writeback bronze: landing historical_audit from the {kind} source")
    if kind == "none":
        result.skipped_reason = "writeback.source is none"
    elif kind == "file" and not cfg.path("writeback.file.path").is_file():
        result.skipped_reason = f"no export file {cfg.path('writeback.file.path')}"
    ensure_schema(spark, t.bronze_schema)
    ensure_schema(spark, t.ops_schema)
    if result.skipped_reason:
        log(f"writeback bronze: skipped ({result.skipped_reason})")
        _make_empty(spark, t.writeback_raw, run_id)
        return result
    if kind == "file":
        path = cfg.path("writeback.file.path")
        rows = read_file_export(spark, path, cfg.settings.writeback.file.default_database)
        counts = _land(spark, t.writeback_raw, rows, run_id)
        result.databases = [DatabaseLanding(role, str(path), *counts[role]) for role in sorted(counts)]
    else:
        rows = _read_databases(spark, cfg, result, full_scan, environ, log)
        if rows is None:  # no database could be read (result.errors): the refresh ends in error after the rest
            _make_empty(spark, t.writeback_raw, run_id)
        else:
            counts = _land(spark, t.writeback_raw, rows, run_id)
            for d in result.databases:
                d.rows_read, d.rows_landed = counts.get(d.database, (0, 0))
            _advance_watermarks(spark, cfg, rows, result, run_id)  # after the append: a crash between re-reads
    for d in result.databases:
        if not d.error:
            since = f" from {d.read_from_utc:%Y-%m-%d %H:%M} UTC" if d.read_from_utc else ""
            log(
                f"writeback bronze: {d.database}: {d.rows_read} rows read{since}, "
                f"{d.rows_landed} new -> {t.writeback_raw}"
            )
    return result
