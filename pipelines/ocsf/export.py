"""``auditlake export ocsf``: gold's security facts as OCSF events, in Amazon Security Lake's
custom-source layout, incrementally.

Each OCSF class is a custom source of its own (Security Lake registers one class per source and
wants one class per object), named ``<ocsf.source_name>-<class_uid>``::

    <out>/ext/<source>/region=<ocsf.region>/accountId=<ocsf.account_id>/eventDay=YYYYMMDD/part-….zstd.parquet

``eventDay`` is the UTC day of the event; rows are sorted by ``time`` in each file; zstd, as Security
Lake prefers. Incremental: per (output location, class, mart), ``ops.ocsf_exports`` keeps the newest
``silver_ingest_ts`` exported (gold's marts are incremental on it: a row newer than the mark is a row
not exported yet). Each run reads the mart's rows above the mark and up to the mart's newest at the
start of the run, writes them, then appends the new marks. A run killed between the two writes the
same events again on the next run (``metadata.uid`` is the event id: a consumer can drop the
copies); nothing is lost.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from pipelines.config.load import Config
from pipelines.lake.delta_tables import create_table_if_missing
from pipelines.lake.storage import is_uri, join
from pipelines.lake.table_names import tables
from pipelines.ocsf.mapping import CLASSES, OcsfClass, to_ocsf

EXPORTS_SCHEMA = (
    "export_id string, exported_at timestamp, out_dir string, class_uid int, mart string, "
    "watermark timestamp, events long"
)
PARTITIONS = ("region", "accountId", "eventDay")


@dataclass
class ClassExport:
    """What one class's export wrote (``events`` 0: nothing new)."""

    uid: int
    name: str
    source: str
    events: int = 0
    days: list[str] = field(default_factory=list)
    by_mart: dict[str, int] = field(default_factory=dict)


def source_name(cfg: Config, cls: OcsfClass) -> str:
    return f"{cfg.get('ocsf.source_name')}-{cls.uid}"


def class_location(cfg: Config, out: str, cls: OcsfClass) -> str:
    """Where Security Lake expects the class's objects: ``<out>/ext/<source>``."""
    return join(out, "ext", source_name(cfg, cls))


def watermarks(spark: SparkSession, cfg: Config, out: str) -> dict[tuple[int, str], str]:
    """(class uid, mart) -> the newest ``silver_ingest_ts`` exported to ``out``, as Spark's
    timestamp text (compared as a literal: exact to the microsecond, no Python time zone)."""
    table = tables(cfg).ocsf_exports
    if not spark.catalog.tableExists(table):
        return {}
    rows = (
        spark.table(table)
        .where(F.col("out_dir") == out)
        .groupBy("class_uid", "mart")
        .agg(F.max("watermark").cast("string").alias("mark"))
        .collect()
    )
    return {(r["class_uid"], r["mart"]): r["mark"] for r in rows}


def _newer(rows: DataFrame, after: str | None, up_to: str | None = None) -> DataFrame:
    if after is not None:
        rows = rows.where(F.col("silver_ingest_ts") > F.lit(after).cast("timestamp"))
    if up_to is not None:
        rows = rows.where(F.col("silver_ingest_ts") <= F.lit(up_to).cast("timestamp"))
    return rows


def class_events(
    spark: SparkSession, cfg: Config, cls: OcsfClass, marks: dict[tuple[int, str], str]
) -> tuple[DataFrame | None, dict[str, str]]:
    """The class's events not exported yet (None: none), and per mart the mark they reach."""
    t = tables(cfg)
    frames, reached = [], {}
    for src in cls.sources:
        if not spark.catalog.tableExists(t.gold(src.mart)):
            continue
        rows = spark.table(t.gold(src.mart))
        rows = rows.where(src.rows) if src.rows else rows
        rows = _newer(rows, marks.get((cls.uid, src.mart)))
        # the mart's newest row now: rows a refresh adds while this runs wait for the next export
        newest = rows.agg(F.max("silver_ingest_ts").cast("string")).first()[0]
        if newest is None:
            continue
        reached[src.mart] = newest
        frames.append(
            to_ocsf(src.mapping(_newer(rows, None, newest)), cls, cfg.settings.ocsf.version).withColumn(
                "_mart", F.lit(src.mart)
            )
        )
    if not frames:
        return None, {}
    events = frames[0]
    for frame in frames[1:]:
        events = events.unionByName(frame, allowMissingColumns=True)
    return events, reached


def write_events(events: DataFrame, cfg: Config, location: str) -> list[Row]:
    """Append ``events`` under ``location`` partitioned as Security Lake reads it; -> the rows per
    (eventDay, mart) written."""
    laid_out = (
        events.withColumn("region", F.lit(cfg.settings.ocsf.region))
        .withColumn("accountId", F.lit(cfg.settings.ocsf.account_id))
        .withColumn("eventDay", F.date_format("event_time", "yyyyMMdd"))
        .drop("event_time")
        .persist()
    )
    try:
        figures = laid_out.groupBy("eventDay", "_mart").count().collect()
        (
            laid_out.drop("_mart")
            .repartition(*PARTITIONS)
            .sortWithinPartitions(*PARTITIONS, "time")
            .write.mode("append")
            .option("compression", "zstd")
            .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")  # no _SUCCESS among the objects
            .partitionBy(*PARTITIONS)
            .parquet(location)
        )
    finally:
        laid_out.unpersist()
    return figures


def record_export(
    spark: SparkSession,
    cfg: Config,
    export_id: str,
    out: str,
    cls: OcsfClass,
    reached: dict[str, str],
    result: ClassExport,
) -> None:
    table = tables(cfg).ocsf_exports
    create_table_if_missing(spark, table, EXPORTS_SCHEMA)
    rows = [(export_id, out, cls.uid, mart, mark, result.by_mart.get(mart, 0)) for mart, mark in reached.items()]
    frame = spark.createDataFrame(
        rows, "export_id string, out_dir string, class_uid int, mart string, watermark string, events long"
    )
    (
        frame.select(
            "export_id",
            F.current_timestamp().alias("exported_at"),
            "out_dir",
            "class_uid",
            "mart",
            F.col("watermark").cast("timestamp").alias("watermark"),
            "events",
        )
        .write.format("delta")
        .mode("append")
        .saveAsTable(table)
    )


def export_ocsf(spark: SparkSession, cfg: Config, out: str | None = None, log=print) -> list[ClassExport]:
    """Every class's events not exported to ``out`` yet (default ``ocsf.out_dir``); a line per class."""
    out = out or cfg.location("ocsf.out_dir", "ocsf")
    out = out if is_uri(out) else str(Path(out).resolve())  # one key in ops.ocsf_exports per location
    export_id = f"ocsf-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
    marks = watermarks(spark, cfg, out)
    results = []
    for cls in CLASSES:
        result = ClassExport(cls.uid, cls.name, source_name(cfg, cls))
        results.append(result)
        events, reached = class_events(spark, cfg, cls, marks)
        if events is None:
            log(f"ocsf: {cls.uid} {cls.name}: nothing new")
            continue
        location = class_location(cfg, out, cls)
        for r in write_events(events, cfg, location):
            result.by_mart[r["_mart"]] = result.by_mart.get(r["_mart"], 0) + r["count"]
            if r["eventDay"] not in result.days:
                result.days.append(r["eventDay"])
        result.days.sort()
        result.events = sum(result.by_mart.values())
        record_export(spark, cfg, export_id, out, cls, reached, result)
        days = result.days[0] if len(result.days) == 1 else f"{result.days[0]}..{result.days[-1]}"
        log(
            f"ocsf: {cls.uid} {cls.name}: {result.events:,} events -> ext/{result.source}/"
            f"region={cfg.get('ocsf.region')}/accountId={cfg.get('ocsf.account_id')}/eventDay={days} "
            f"({len(result.days)} day{'s' if len(result.days) != 1 else ''})"
        )
    total = sum(r.events for r in results)
    log(
        f"ocsf: {total:,} events written under {out}"
        if total
        else f"ocsf: nothing new to export to {out} (every event of gold's marts is there already)"
    )
    return results
