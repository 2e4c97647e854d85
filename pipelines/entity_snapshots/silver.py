"""Entity snapshots, bronze -> ``silver.entity_<type>_history`` (type 2) and ``ops.snapshot_hours``.

Per entity type, each run applies the snapshots (site, hour) bronze has that ``ops.snapshot_hours``
does not: those later than the site's last applied hour, in hour order, in one MERGE; an hour
older than that is recorded ``late`` and not applied (the history would need rewriting; its rows
stay in bronze). Exactly once, also when killed: the hours are written ``pending`` first, the MERGE
commit names the run (Delta ``userMetadata``), and a later run finds a pending run's commit or not,
marking its hours applied or applying them again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines import storage
from pipelines.config import Config
from pipelines.delta_util import create_table_if_missing, ensure_schema, latest_commits, table_version
from pipelines.entity_snapshots.history import changes, keyed, payload_columns
from pipelines.tables import Tables, tables

APPLIED, LATE, PENDING = "applied", "late", "pending"
HOURS_SCHEMA = (
    "entity_type string, site_luid string, snapshot_hour timestamp, rows long, status string, "
    "run_id string, bronze_ingest_ts timestamp, recorded_at timestamp"
)
COMMIT_MARK = "auditlake snapshots run "
# Row keys when conf snapshots.keys does not name them: the entity's LUID; a membership is a pair.
DEFAULT_KEY = "luid"
DEFAULT_KEYS = {"group_members": ["group_luid", "user_luid"]}


@dataclass
class SnapshotPromotion:
    entity_type: str
    hours_applied: int = 0
    hours_late: int = 0
    rows_read: int = 0
    versions_added: int = 0
    versions_closed: int = 0
    problems: list[str] = field(default_factory=list)


def key_columns(cfg: Config, entity_type: str) -> list[str]:
    return list(cfg.settings.snapshots.keys.get(entity_type) or DEFAULT_KEYS.get(entity_type) or [DEFAULT_KEY])


def _settle_pending(spark: SparkSession, t: Tables, entity_type: str, log) -> None:
    """A run killed after writing its hours ``pending``: applied if its MERGE committed, else forgotten."""
    pending = [
        r["run_id"]
        for r in spark.table(t.snapshot_hours)
        .where((F.col("entity_type") == entity_type) & (F.col("status") == PENDING))
        .select("run_id")
        .distinct()
        .collect()
    ]
    if not pending:
        return
    history = t.entity_history(entity_type)
    committed = {
        m[len(COMMIT_MARK) :]
        for m in (latest_commits(spark, history, 5) if spark.catalog.tableExists(history) else [])
        if m and m.startswith(COMMIT_MARK)
    }
    for run_id in pending:
        done = run_id in committed
        where = f"entity_type = '{entity_type}' AND status = '{PENDING}' AND run_id = '{run_id}'"
        if done:
            spark.sql(f"UPDATE {t.snapshot_hours} SET status = '{APPLIED}' WHERE {where}")
        else:
            spark.sql(f"DELETE FROM {t.snapshot_hours} WHERE {where}")
        log(
            f"silver: entity {entity_type}: run {run_id} was interrupted; its snapshots "
            + ("had been applied" if done else "are applied again")
        )


def _seen_path(cfg: Config, entity_type: str) -> str:
    """The bronze version a run last read to its end: an hourly refresh with no new snapshot of this
    type costs one look at bronze's log, not a scan."""
    return storage.join(cfg.checkpoint_dir, f"snapshots_{entity_type}.bronze_version")


def promote_entity(spark: SparkSession, cfg: Config, entity_type: str, run_id: str, log=print) -> SnapshotPromotion:
    t = tables(cfg)
    out = SnapshotPromotion(entity_type)
    version = str(table_version(spark, t.bronze_entity(entity_type)))
    if (storage.read_text(spark, _seen_path(cfg, entity_type)) or "").strip() == version:
        return out
    _settle_pending(spark, t, entity_type, log)
    _apply(spark, cfg, t, entity_type, run_id, out, log)
    storage.write_text(spark, _seen_path(cfg, entity_type), version)
    return out


def _apply(
    spark: SparkSession, cfg: Config, t: Tables, entity_type: str, run_id: str, out: SnapshotPromotion, log
) -> None:
    seen = spark.table(t.snapshot_hours).where(F.col("entity_type") == entity_type)
    watermark = seen.agg(F.max("bronze_ingest_ts")).first()[0]
    bronze = spark.table(t.bronze_entity(entity_type))
    if watermark is not None:
        bronze = bronze.where(F.col("ingest_ts") > F.lit(watermark))
    delivered = (
        bronze.groupBy(F.col("snapshot_site_luid").alias("site_luid"), "snapshot_hour")
        .agg(F.count(F.lit(1)).alias("rows"), F.max("ingest_ts").alias("bronze_ingest_ts"))
        .join(seen.select("site_luid", "snapshot_hour"), ["site_luid", "snapshot_hour"], "left_anti")
        .collect()
    )
    if not delivered:
        return
    last = {
        r["site_luid"]: r["h"]
        for r in seen.where(F.col("status") == APPLIED)
        .groupBy("site_luid")
        .agg(F.max("snapshot_hour").alias("h"))
        .collect()
    }
    apply = [r for r in delivered if last.get(r["site_luid"]) is None or r["snapshot_hour"] > last[r["site_luid"]]]
    late = [r for r in delivered if r not in apply]
    out.hours_applied, out.hours_late, out.rows_read = len(apply), len(late), sum(r["rows"] for r in apply)
    _record_hours(spark, t, entity_type, late, LATE, run_id)
    if late:
        out.problems.append(
            f"silver: entity {entity_type}: {len(late)} snapshots older than their site's last "
            "applied hour were kept in bronze, not applied (see ops.snapshot_hours, status late)"
        )
    if not apply:
        return
    _record_hours(spark, t, entity_type, apply, PENDING, run_id)
    hours = spark.createDataFrame(
        [(r["site_luid"], r["snapshot_hour"]) for r in apply], "site_luid string, snapshot_hour timestamp"
    )
    snapshots = bronze.join(
        hours.withColumnRenamed("site_luid", "snapshot_site_luid"), ["snapshot_site_luid", "snapshot_hour"]
    )
    wanted = key_columns(cfg, entity_type)
    missing = [k for k in wanted if k not in payload_columns(snapshots)]
    if missing:
        raise ValueError(
            f"entity snapshots {entity_type}: no key column {', '.join(missing)} in the files; set "
            f"snapshots.keys.{entity_type} in conf to the columns that identify a row "
            f"(the files have: {', '.join(payload_columns(snapshots))})"
        )
    rows = keyed(snapshots, wanted).localCheckpoint()
    history = t.entity_history(entity_type)
    if spark.catalog.tableExists(history):
        open_versions = (
            spark.table(history)
            .where(F.col("valid_to").isNull())
            .select("site_luid", "entity_key", "row_hash", "valid_from")
        )
    else:
        open_versions = spark.createDataFrame(
            [], "site_luid string, entity_key string, row_hash string, valid_from timestamp"
        )
    versions, closings = changes(rows, hours, open_versions)
    versions = versions.withColumn("silver_run_id", F.lit(run_id)).withColumn("silver_ingest_ts", F.current_timestamp())
    versions, closings = versions.localCheckpoint(), closings.localCheckpoint()
    out.versions_added, out.versions_closed = versions.count(), closings.count()
    source = versions.withColumn("_closing", F.lit(False)).unionByName(
        closings.withColumn("is_current", F.lit(False)).withColumn("_closing", F.lit(True)), allowMissingColumns=True
    )
    if not spark.catalog.tableExists(history):
        versions.limit(0).write.format("delta").saveAsTable(history)
    spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", COMMIT_MARK + run_id)
    try:
        (
            DeltaTable.forName(spark, history)
            .alias("h")
            .merge(
                source.alias("s"),
                "h.site_luid = s.site_luid AND h.entity_key = s.entity_key AND h.valid_from = s.valid_from",
            )
            .whenMatchedUpdate(set={"valid_to": "s.valid_to", "is_current": "s.is_current"})
            .whenNotMatchedInsert(condition="NOT s._closing", values={c: f"s.`{c}`" for c in versions.columns})
            .withSchemaEvolution()
            .execute()
        )
    finally:
        spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
    spark.sql(
        f"UPDATE {t.snapshot_hours} SET status = '{APPLIED}' WHERE entity_type = '{entity_type}' "
        f"AND status = '{PENDING}' AND run_id = '{run_id}'"
    )
    log(
        f"silver: entity {entity_type}: {len(apply)} snapshots ({out.rows_read} rows) applied: "
        f"{out.versions_added} new versions, {out.versions_closed} closed -> {history}"
    )


def _record_hours(spark: SparkSession, t: Tables, entity_type: str, hours: list, status: str, run_id: str) -> None:
    if not hours:
        return
    rows = [
        (entity_type, r["site_luid"], r["snapshot_hour"], r["rows"], status, run_id, r["bronze_ingest_ts"])
        for r in hours
    ]
    (
        spark.createDataFrame(
            rows,
            "entity_type string, site_luid string, snapshot_hour timestamp, rows long, "
            "status string, run_id string, bronze_ingest_ts timestamp",
        )
        .withColumn("recorded_at", F.current_timestamp())
        .write.format("delta")
        .mode("append")
        .saveAsTable(t.snapshot_hours)
    )


def promote_snapshots(spark: SparkSession, cfg: Config, run_id: str, log=print) -> list[SnapshotPromotion]:
    """Apply every entity type's new snapshots; nothing delivered yet: nothing to do."""
    t = tables(cfg)
    types = t.entity_types(spark)
    if not types:
        return []
    for schema in (t.silver_schema, t.ops_schema):
        ensure_schema(spark, schema)
    create_table_if_missing(spark, t.snapshot_hours, HOURS_SCHEMA)
    return [promote_entity(spark, cfg, entity_type, run_id, log=log) for entity_type in types]
