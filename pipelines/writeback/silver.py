"""Silver for Write-Back: bronze rows -> ``silver.writeback_audit`` (one typed row per ID) + quarantine.

``to_writeback_silver`` is the pure transform (DataFrame in, DataFrames out). Each bronze
row is typed on its own; a row with an impossible value goes to quarantine with a reason
(``QUARANTINE_REASONS``). The valid copies of one ``ID`` (one per database, usually) make
one silver row: the metadata database's copy wins, ``seen_in_metadata`` /
``seen_in_persistence`` say where it was found and ``copies_differ`` whether the copies
disagree.

Typing: UUIDs are validated and lower-cased (a malformed ``DATASETKEY`` or
``IDWIDGETCONFIGURATION`` becomes NULL and its raw text goes to ``_rescued_data``);
``action_date_utc`` is a timestamp (UTC); ``action_date_local`` is the server's wall-clock
time, a ``timestamp_ntz`` (no time zone of its own, so no reader shifts it), and
``utc_offset_minutes`` = local - UTC, rounded to the minute. (Both rely on the session time
zone being UTC, which ``spark_session`` sets.) The action is decoded into ``edit_kind``:

============  ===================  =================================================
ACTIONNAME    ACTIONPARAMS         edit_kind
============  ===================  =================================================
INSERT_DATA                        submitted_entry
DELETE_DATA                        deleted_entry
EDIT_DATA     editDataInsert       inserted_line (tabular mode)
EDIT_DATA     editDataDelete       deleted_line (tabular mode)
EDIT_DATA     <UUID>               replaced_line: ``replaced_line_key`` -> ``new_line_key``
EDIT_DATA     anything else        edited_other
ALTER_DATASET op;op;...            dataset_change, ``dataset_operations`` = [op, ...]
============  ===================  =================================================

``promote_writeback`` is the incremental writer: a Delta stream over bronze
(``availableNow``, checkpoint ``silver_writeback``; not started when bronze has no commit since the
last run read it to its end); per micro-batch, every bronze copy of
the batch's IDs is re-typed and MERGEd into silver on ``id`` (so a copy arriving later from
the other database updates the flags), and new quarantine rows are appended once per
``bronze_id``. Replaying a batch writes the same result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from pipelines.config.load import Config
from pipelines.lake import storage
from pipelines.lake.delta_tables import ensure_schema, table_bytes, table_version
from pipelines.lake.silver_stamp import with_silver_run
from pipelines.lake.sql_text import UUID_PATTERN
from pipelines.lake.table_names import Tables, tables
from pipelines.runtime.spark_session import small_tables
from pipelines.writeback import ACTIONS, EDIT_DELETE_PARAM, EDIT_INSERT_PARAM, ROLES

MAX_OFFSET_MINUTES = 14 * 60  # no time zone is further from UTC

# Quarantine reasons (machine-readable), checked in this order.
MALFORMED_RECORD = "malformed_record"
NULL_ID = "null_id"
BAD_ID = "bad_id"
BAD_DATE = "bad_date"
UNKNOWN_ACTION = "unknown_action"
UNKNOWN_DATABASE = "unknown_database"
QUARANTINE_REASONS = (MALFORMED_RECORD, NULL_ID, BAD_ID, BAD_DATE, UNKNOWN_ACTION, UNKNOWN_DATABASE)

AUDIT_COLUMNS = [
    "id",
    "action_date_utc",
    "action_date_local",
    "utc_offset_minutes",
    "action_date",
    "action_name",
    "action_params",
    "edit_kind",
    "replaced_line_key",
    "new_line_key",
    "dataset_operations",
    "dataset",
    "dataset_key",
    "system",
    "username",
    "widget_config_id",
    "writeback_site",
    "seen_in_metadata",
    "seen_in_persistence",
    "copies_differ",
    "_rescued_data",
    # lineage of the copy kept
    "database",
    "bronze_id",
    "source",
    "bronze_run_id",
    "bronze_ingest_ts",
]


@dataclass
class WritebackFrames:
    audit: DataFrame  # one row per id
    quarantine: DataFrame  # one row per bronze row that cannot be an audit row


def _blank_to_null(name: str) -> Column:
    return F.nullif(F.trim(F.col(name)), F.lit(""))


def _uuid(col: Column) -> Column:
    """The UUID, lower-cased; NULL when ``col`` is not one."""
    return F.when(col.rlike(UUID_PATTERN), F.lower(col))


def classify(bronze_rows: DataFrame) -> DataFrame:
    """Type each bronze row and give it a quarantine reason (NULL for a valid row). No I/O."""
    raw_id = _blank_to_null("ID")
    utc_text, local_text = _blank_to_null("ACTIONDATE_UTC"), _blank_to_null("ACTIONDATE_LOCAL")
    params = _blank_to_null("ACTIONPARAMS")
    rows = bronze_rows.select(
        "*",
        _uuid(raw_id).alias("_id"),
        utc_text.try_cast("timestamp").alias("_utc"),
        local_text.try_cast("timestamp_ntz").alias("_local"),
        F.upper(_blank_to_null("ACTIONNAME")).alias("_action"),
        params.alias("_params"),
        _uuid(params).alias("_params_uuid"),
        _blank_to_null("DATASETKEY").alias("_dataset_key_raw"),
        _blank_to_null("IDWIDGETCONFIGURATION").alias("_widget_raw"),
    )
    offset_seconds = F.timestamp_diff("SECOND", F.col("_utc").cast("timestamp_ntz"), F.col("_local"))
    rows = rows.withColumn("_offset", F.round(offset_seconds / 60).cast("int"))
    bad_local = local_text.isNotNull() & F.col("_local").isNull()
    bad_offset = F.abs(F.col("_offset")) > MAX_OFFSET_MINUTES
    reason = (
        F.when(F.col("parse_status") != "ok", F.lit(MALFORMED_RECORD))
        .when(raw_id.isNull(), F.lit(NULL_ID))
        .when(F.col("_id").isNull(), F.lit(BAD_ID))
        .when(F.col("_utc").isNull() | bad_local | bad_offset, F.lit(BAD_DATE))
        .when(~F.col("_action").isin(*ACTIONS) | F.col("_action").isNull(), F.lit(UNKNOWN_ACTION))
        .when(~F.col("database").isin(*ROLES), F.lit(UNKNOWN_DATABASE))
    )
    detail = (
        F.when(reason == MALFORMED_RECORD, F.lit("record is not a JSON object"))
        .when(reason == NULL_ID, F.lit("ID is missing"))
        .when(reason == BAD_ID, F.concat(F.lit("ID is not a UUID: "), raw_id))
        .when(
            reason == BAD_DATE,
            F.when(utc_text.isNull(), F.lit("ACTIONDATE_UTC is missing"))
            .when(F.col("_utc").isNull(), F.concat(F.lit("ACTIONDATE_UTC is not a timestamp: "), utc_text))
            .when(bad_local, F.concat(F.lit("ACTIONDATE_LOCAL is not a timestamp: "), local_text))
            .otherwise(F.format_string("ACTIONDATE_LOCAL is %d minutes from ACTIONDATE_UTC", F.col("_offset"))),
        )
        .when(
            reason == UNKNOWN_ACTION,
            F.concat(F.lit("ACTIONNAME not documented: "), F.coalesce(F.col("ACTIONNAME"), F.lit("(missing)"))),
        )
        .when(reason == UNKNOWN_DATABASE, F.concat(F.lit("database role not known: "), F.col("database")))
    )
    return rows.withColumn("_reason", reason).withColumn("_detail", detail)


def _edit_kind() -> Column:
    action, params = F.col("_action"), F.col("_params")
    return (
        F.when(action == "INSERT_DATA", "submitted_entry")
        .when(action == "DELETE_DATA", "deleted_entry")
        .when(action == "ALTER_DATASET", "dataset_change")
        .when((action == "EDIT_DATA") & (params == EDIT_INSERT_PARAM), "inserted_line")
        .when((action == "EDIT_DATA") & (params == EDIT_DELETE_PARAM), "deleted_line")
        .when((action == "EDIT_DATA") & F.col("_params_uuid").isNotNull(), "replaced_line")
        .when(action == "EDIT_DATA", "edited_other")
    )


def _typed(valid: DataFrame) -> DataFrame:
    dataset_key, widget = _uuid(F.col("_dataset_key_raw")), _uuid(F.col("_widget_raw"))
    rescued = F.map_concat(
        F.when(
            F.col("_dataset_key_raw").isNotNull() & dataset_key.isNull(),
            F.create_map(F.lit("DATASETKEY"), F.col("_dataset_key_raw")),
        ).otherwise(F.create_map()),
        F.when(
            F.col("_widget_raw").isNotNull() & widget.isNull(),
            F.create_map(F.lit("IDWIDGETCONFIGURATION"), F.col("_widget_raw")),
        ).otherwise(F.create_map()),
    ).cast("map<string,string>")
    kind = _edit_kind()
    operations = F.filter(F.transform(F.split(F.col("_params"), ";"), lambda op: F.trim(op)), lambda op: op != "")
    typed = valid.select(
        F.col("_id").alias("id"),
        F.col("_utc").alias("action_date_utc"),
        F.col("_local").alias("action_date_local"),
        F.col("_offset").alias("utc_offset_minutes"),
        F.to_date("_utc").alias("action_date"),
        F.col("_action").alias("action_name"),
        F.col("ACTIONPARAMS").alias("action_params"),
        kind.alias("edit_kind"),
        F.when(kind == "replaced_line", F.col("_params_uuid")).alias("replaced_line_key"),
        F.when(kind == "replaced_line", dataset_key).alias("new_line_key"),
        F.when(kind == "dataset_change", operations).alias("dataset_operations"),
        F.col("DATASET").alias("dataset"),
        dataset_key.alias("dataset_key"),
        F.col("SYSTEM").alias("system"),
        F.col("USERNAME").alias("username"),
        widget.alias("widget_config_id"),
        F.col("WRITEBACK_SITE").alias("writeback_site"),
        F.when(F.size(rescued) > 0, F.to_json(rescued)).alias("_rescued_data"),
        "database",
        "bronze_id",
        "source",
        F.col("run_id").alias("bronze_run_id"),
        F.col("ingest_ts").alias("bronze_ingest_ts"),
    )
    # what a copy says, once typed: copies that differ only in spelling (an ID in capitals) agree
    meaning = [
        c for c in typed.columns if c not in ("database", "bronze_id", "source", "bronze_run_id", "bronze_ingest_ts")
    ]
    return typed.withColumn("_meaning", F.sha2(F.to_json(F.struct(*meaning)), 256))


def _one_per_id(typed: DataFrame) -> DataFrame:
    """The copies of an id (one per database) -> one row: metadata's copy first, flags from all."""
    by_id = Window.partitionBy("id")
    order = by_id.orderBy(F.col("database") != "metadata", "bronze_ingest_ts", "bronze_id")
    return (
        typed.withColumn("seen_in_metadata", F.max(F.col("database") == "metadata").over(by_id))
        .withColumn("seen_in_persistence", F.max(F.col("database") == "persistence").over(by_id))
        .withColumn("copies_differ", F.size(F.collect_set("_meaning").over(by_id)) > 1)
        .withColumn("_copy", F.row_number().over(order))
        .where(F.col("_copy") == 1)
        .select(*AUDIT_COLUMNS)
    )


def to_writeback_silver(bronze_rows: DataFrame) -> WritebackFrames:
    """Bronze rows (``bronze.writeback_audit_raw`` columns) -> (one audit row per id, quarantine)."""
    return split_classified(classify(bronze_rows))


def split_classified(classified: DataFrame) -> WritebackFrames:
    """Classified rows -> (one audit row per id, quarantine rows)."""
    quarantine = classified.where(F.col("_reason").isNotNull()).select(
        "bronze_id",
        "database",
        F.col("_reason").alias("reason"),
        F.col("_detail").alias("detail"),
        F.col("ID").alias("raw_id"),
        F.col("ACTIONNAME").alias("raw_action_name"),
        "raw_record",
        "source",
        F.col("run_id").alias("bronze_run_id"),
        F.col("ingest_ts").alias("bronze_ingest_ts"),
    )
    audit = _one_per_id(_typed(classified.where(F.col("_reason").isNull())))
    return WritebackFrames(audit=audit, quarantine=quarantine)


# ---- the incremental writer ------------------------------------------------------------------


@dataclass
class WritebackPromotion:
    table: str
    bronze_rows: int = 0
    inserted: int = 0  # new ids
    updated: int = 0  # ids already in silver, re-typed with a new copy (e.g. from the other database)
    quarantined: int = 0
    batches: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    skipped_reason: str | None = None


def ensure_writeback_tables(spark: SparkSession, t: Tables) -> None:
    ensure_schema(spark, t.silver_schema)
    frames = to_writeback_silver(spark.table(t.writeback_raw).limit(0))
    for name, frame in ((t.writeback_audit, frames.audit), (t.writeback_quarantine, frames.quarantine)):
        if not spark.catalog.tableExists(name):
            with_silver_run(frame, "").write.format("delta").mode("ignore").saveAsTable(name)


def promote_batch(spark: SparkSession, t: Tables, batch: DataFrame, run_id: str) -> WritebackPromotion:
    """Re-type every bronze copy of the batch's IDs; MERGE into silver; append new quarantine rows."""
    result = WritebackPromotion(t.writeback_audit, batches=1)
    batch = batch.localCheckpoint()
    key = F.lower(F.trim("ID"))
    ids = batch.select(key.alias("_key")).where(F.col("_key").isNotNull()).distinct()
    bronze = spark.table(t.writeback_raw)
    copies = bronze.join(ids, key == F.col("_key"), "left_semi").unionByName(batch.where(key.isNull()))
    frames = split_classified(classify(copies).localCheckpoint())  # typed once, used twice
    existing = spark.table(t.writeback_audit).select("id", F.lit(True).alias("_existing"))
    audit = with_silver_run(frames.audit, run_id).join(existing, "id", "left").localCheckpoint()
    quarantine = (
        with_silver_run(frames.quarantine, run_id)
        .join(spark.table(t.writeback_quarantine).select("bronze_id"), "bronze_id", "left_anti")
        .localCheckpoint()
    )
    result.bronze_rows = batch.count()
    counts = audit.agg(F.count("*").alias("n"), F.count("_existing").alias("old")).first()
    result.inserted, result.updated = counts["n"] - counts["old"], counts["old"]
    result.reasons = {r["reason"]: r["n"] for r in quarantine.groupBy("reason").agg(F.count("*").alias("n")).collect()}
    result.quarantined = sum(result.reasons.values())
    if counts["n"]:
        (
            DeltaTable.forName(spark, t.writeback_audit)
            .alias("t")
            .merge(audit.drop("_existing").alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )
    if result.quarantined:
        quarantine.write.format("delta").mode("append").saveAsTable(t.writeback_quarantine)
    return result


def promote_writeback(spark: SparkSession, cfg: Config, run_id: str, log=print) -> WritebackPromotion:
    """Promote the bronze rows not yet promoted (a Delta stream with a checkpoint)."""
    t = tables(cfg)
    total = WritebackPromotion(t.writeback_audit)
    if not spark.catalog.tableExists(t.writeback_raw):
        total.skipped_reason = f"no bronze table {t.writeback_raw}"
        log(f"writeback silver: skipped ({total.skipped_reason})")
        return total
    # bronze's version when a run last read it to its end: an hourly refresh with no new write-back row
    # costs one look at bronze's log, not a stream's start (seconds)
    seen = storage.Mark(cfg.checkpoint_dir, "silver_writeback.bronze_version")
    version = str(table_version(spark, t.writeback_raw))
    if seen.holds(spark, version):
        log(f"writeback silver: nothing new in {t.writeback_raw}")
        return total
    ensure_writeback_tables(spark, t)
    if table_bytes(spark, t.writeback_raw) == 0:
        # no row ever landed (no export, writeback.source none: a site without the extension): silver's
        # tables made empty, no stream started (seconds of a lake's first run). Once rows land, bronze's version moves
        # and the stream's first run reads them all.
        seen.record(spark, version)
        log(f"writeback silver: no rows in {t.writeback_raw} -> {total.table} (empty)")
        return total

    def each_batch(batch: DataFrame, batch_id: int) -> None:
        r = promote_batch(spark, t, batch, run_id)
        total.bronze_rows += r.bronze_rows
        total.inserted += r.inserted
        total.updated += r.updated
        total.quarantined += r.quarantined
        total.batches += 1
        for k, v in r.reasons.items():
            total.reasons[k] = total.reasons.get(k, 0) + v

    # a batch re-types every bronze copy of its IDs and merges into silver: while both tables are small
    # (an export's hundreds of rows), with the small-input settings (the stream takes them at its start)
    with small_tables(spark, cfg, [t.writeback_raw, t.writeback_audit]):
        query = (
            spark.readStream.format("delta")
            # bronze only grows, but an erasure (pipelines/personal_data/erase/) rewrites rows: not new ones
            .option("skipChangeCommits", "true")
            .table(t.writeback_raw)
            .writeStream.foreachBatch(each_batch)
            .option("checkpointLocation", storage.join(cfg.checkpoint_dir, "silver_writeback"))
            .queryName("silver_writeback")
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
    seen.record(spark, version)
    log(
        f"writeback silver: {total.bronze_rows} bronze rows -> {total.inserted} new, {total.updated} updated, "
        f"{total.quarantined} quarantined {dict(sorted(total.reasons.items()))} -> {total.table}"
    )
    return total
