"""Feed completeness: is every site still delivering, and how late do its records arrive?

``ops.feed_completeness`` holds one row per family × site × delivery hour: files, records,
first and last event time, and the delivery lag (``eventProcessedTime`` minus ``eventTime`` where
the record has it, else the file's landing time minus ``eventTime``). The delivery hour is the
hour folder of the file's path (``h=``: when Tableau made the records available, not when they
happened), or the hour the file landed for a path without one. Tenant rows have site ``''``.

After each silver step the rows promoted since the table's watermark (per family, the newest
``through_ingest_ts``: each row's newest ``silver_ingest_ts`` counted, kept in the same commit as
the figures) are added in one MERGE for both families: nothing new, no commit. gold's
``rpt_feed_gaps`` (dbt) finds the hours a site usually delivers in but did not; the refresh prints a
line for each site that has been quiet since, and one for each delivery gap ``auditlake pull``'s
listings showed (``pipelines/pull/gaps.py``).
"""

from __future__ import annotations

from functools import reduce

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.activity_log import FAMILIES
from pipelines.activity_log.bronze.ledger import LANDED
from pipelines.config.load import Config
from pipelines.lake.delta_tables import create_table_if_missing
from pipelines.lake.silver_stamp import stamped_after
from pipelines.lake.table_names import tables
from pipelines.pull.gaps import gap_lines as pull_gap_lines

COMPLETENESS_SCHEMA = (
    "family string, site_luid string, delivery_hour timestamp, files long, records long, "
    "first_event_time timestamp, last_event_time timestamp, lag_records long, lag_seconds_sum double, "
    "lag_seconds_max double, through_ingest_ts timestamp"
)
KEYS = ("family", "site_luid", "delivery_hour")
# y=…/m=…/d=…/h=… in any of the layouts (pipelines/activity_log/bronze/layout.py)
_PATH_HOUR = r"y=(\d{4})/(?:.*/)?m=(\d{1,2})/(?:.*/)?d=(\d{1,2})/(?:.*/)?h=(\d{1,2})/"
# silver's name for eventProcessedTime, once the registry knows it (the live feed's additions)
PROCESSED_TIME = "event_processed_time"


def _delivery_hour(path: F.Column, landed: F.Column) -> F.Column:
    parts = [F.regexp_extract(path, _PATH_HOUR, i) for i in range(1, 5)]
    from_path = F.make_timestamp_ntz(*[p.cast("int") for p in parts], F.lit(0), F.lit(0)).cast("timestamp")
    return F.when(parts[0] != "", from_path).otherwise(F.date_trunc("hour", landed))


def _promoted_since(spark: SparkSession, cfg: Config, family: str, since) -> DataFrame | None:
    t = tables(cfg)
    if not spark.catalog.tableExists(t.silver_events(family)):
        return None
    events = spark.table(t.silver_events(family))
    if since is not None:  # silver_ingest_ts has file statistics: older files are skipped
        events = events.where(stamped_after(since))
    return events


def _rows(family: str, events: DataFrame) -> DataFrame:
    """The promoted ``events``' columns the figures count, with their family."""
    site = F.coalesce(F.col("site_luid"), F.lit("")) if family == "site" else F.lit("")
    processed = F.col(PROCESSED_TIME) if PROCESSED_TIME in events.columns else F.lit(None).cast("timestamp")
    return events.select(
        F.lit(family).alias("family"),
        "source_file",
        "event_time",
        "silver_ingest_ts",
        site.alias("site_luid"),
        processed.alias("processed"),
    )


def update_feed_completeness(spark: SparkSession, cfg: Config, log=print) -> int:
    """Add the silver rows promoted since the last update, both families in one MERGE; -> how many."""
    t = tables(cfg)
    create_table_if_missing(spark, t.feed_completeness, COMPLETENESS_SCHEMA)
    marks = {
        r["family"]: r["through"]
        for r in spark.table(t.feed_completeness)
        .groupBy("family")
        .agg(F.max("through_ingest_ts").alias("through"))
        .collect()
    }
    parts = []
    for family in FAMILIES:
        events = _promoted_since(spark, cfg, family, marks.get(family))
        if events is not None:
            parts.append(_rows(family, events))
    if not parts:
        return 0
    # both families' rows in one query: the ledger is read and the figures aggregated once
    figures = _figures(spark, cfg, reduce(DataFrame.unionByName, parts)).persist()
    try:
        added = _merge(spark, t.feed_completeness, figures)
    finally:
        figures.unpersist()
    if added:
        log(f"feed: {added} delivery hours updated in {t.feed_completeness}")
    return added


def _figures(spark: SparkSession, cfg: Config, rows: DataFrame) -> DataFrame:
    """One row per family, site and delivery hour of the promoted ``rows`` (``_rows``), with the newest
    stamp it counts (each family's newest of them is its watermark: no job of its own to find it)."""
    files = (
        spark.table(tables(cfg).file_ledger)
        .where(F.col("status") == LANDED)
        .select(F.col("path").alias("source_file"), F.col("mtime").alias("landed"))
    )
    landed = files.join(rows.select("source_file").distinct(), "source_file")  # these rows' files only
    rows = rows.join(F.broadcast(landed), "source_file", "left")
    lag = (F.unix_timestamp(F.coalesce("processed", "landed")) - F.unix_timestamp("event_time")).cast("double")
    return (
        rows.withColumn("delivery_hour", _delivery_hour(F.col("source_file"), F.col("landed")))
        .withColumn("lag", lag)
        .groupBy(*KEYS)
        .agg(
            F.countDistinct("source_file").alias("files"),
            F.count(F.lit(1)).alias("records"),
            F.min("event_time").alias("first_event_time"),
            F.max("event_time").alias("last_event_time"),
            F.count("lag").alias("lag_records"),
            F.sum("lag").alias("lag_seconds_sum"),
            F.max("lag").alias("lag_seconds_max"),
            F.max("silver_ingest_ts").alias("through_ingest_ts"),
        )
    )


def _merge(spark: SparkSession, table: str, figures: DataFrame) -> int:
    n = figures.count()
    if not n:  # nothing promoted since the watermark: no commit
        return 0
    # a file lands once and its rows are promoted once: figures of later rows add up
    (
        DeltaTable.forName(spark, table)
        .alias("t")
        .merge(figures.alias("s"), " AND ".join(f"t.{k} = s.{k}" for k in KEYS))
        .whenMatchedUpdate(
            set={
                "files": "t.files + s.files",
                "records": "t.records + s.records",
                "first_event_time": "least(t.first_event_time, s.first_event_time)",
                "last_event_time": "greatest(t.last_event_time, s.last_event_time)",
                "lag_records": "t.lag_records + s.lag_records",
                "lag_seconds_sum": "coalesce(t.lag_seconds_sum, 0) + coalesce(s.lag_seconds_sum, 0)",
                "lag_seconds_max": "greatest(t.lag_seconds_max, s.lag_seconds_max)",
                "through_ingest_ts": "s.through_ingest_ts",
            }
        )
        .whenNotMatchedInsertAll()
        .execute()
    )
    return n


def quiet_sites(spark: SparkSession, cfg: Config) -> list[dict]:
    """Sites with no delivery for ``feed.quiet_after_hours`` or more hours in which they usually
    deliver (gold's rpt_feed_gaps after their last delivery)."""
    report = tables(cfg).gold("rpt_feed_gaps")
    if not spark.catalog.tableExists(report):
        return []
    rows = spark.sql(
        f"SELECT family, site_luid, max(last_delivery_hour) AS last_delivery_hour, count(*) AS gap_hours "
        f"FROM {report} WHERE after_last_delivery GROUP BY family, site_luid "
        f"HAVING count(*) >= {int(cfg.get('feed.quiet_after_hours'))} ORDER BY family, site_luid"
    ).collect()
    return [r.asDict() for r in rows]


def quiet_site_lines(spark: SparkSession, cfg: Config) -> list[str]:
    """One line per quiet site, as a refresh prints them, then the delivery gaps `auditlake pull`'s
    listings showed (what Tableau never made available does not reach silver to be counted here)."""
    lines = []
    for site in quiet_sites(spark, cfg):
        who = f"site {site['site_luid']}" if site["family"] == "site" else "the tenant feed"
        lines.append(
            f"feed: {who} has gone quiet: no delivery since {site['last_delivery_hour']:%Y-%m-%d %H:00} UTC, "
            f"{site['gap_hours']} hours in which it usually delivers (gold.rpt_feed_gaps)"
        )
    return lines + pull_gap_lines(cfg)


def log_quiet_sites(spark: SparkSession, cfg: Config, log=print) -> None:
    for line in quiet_site_lines(spark, cfg):
        log(line)
