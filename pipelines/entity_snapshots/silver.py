"""Entity snapshots, bronze -> ``silver.entity_<type>_history`` (type 2) and ``ops.snapshot_hours``.

Each run applies the snapshots (entity type, site, hour) bronze has that ``ops.snapshot_hours``
does not: those later than the site's last applied hour, in hour order, one commit per entity type
(a MERGE that closes versions, or an append when none closes); an hour older than that is recorded
``late`` and not applied (the history would need rewriting; its rows stay in bronze). Exactly
once, also when killed: the hours of every type are written ``pending`` first (one commit), each
history's commit names the run (Delta ``userMetadata``), and the hours are marked applied (one
commit); a later run finds a pending run's commit in each type's history or not, marking its hours
applied or applying them again. The types share their reads of ``ops.snapshot_hours`` and its two
commits, and one job that finds every type's changes: each commit or job has a fixed price whatever
its size, and a snapshot delivery brings every type at once. A type whose snapshots changed nothing
gets no commit."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.config.load import Config
from pipelines.entity_snapshots.history import (
    closings,
    keyed,
    new_versions,
    payload_columns,
    prefer_tableau,
    transitions,
)
from pipelines.lake import storage
from pipelines.lake.delta_tables import (
    COMMIT_NOTE,
    create_table_if_missing,
    ensure_schema,
    latest_commits,
    table_version,
)
from pipelines.lake.silver_stamp import with_silver_run
from pipelines.lake.table_names import Tables, tables
from pipelines.runtime.spark_session import small_input_below

APPLIED, LATE, PENDING = "applied", "late", "pending"
QUARANTINED = "quarantined"  # a snapshot with rows it cannot key: kept in bronze, not applied
HOURS_SCHEMA = (
    "entity_type string, site_luid string, snapshot_hour timestamp, rows long, status string, "
    "run_id string, bronze_ingest_ts timestamp, recorded_at timestamp"
)
COMMIT_MARK = "auditlake snapshots run "
# Row keys when conf snapshots.keys does not name them: the entity's LUID; a membership is a pair; a
# connection is its item's; a permission rule is an item's (or a project template's) capability for one
# grantee, so a rule whose mode turns from Allow to Deny is a new version of the same rule.
DEFAULT_KEY = "luid"
DEFAULT_KEYS = {
    "group_members": ["group_luid", "user_luid"],
    "group_set_members": ["group_set_luid", "group_luid"],
    "data_connections": ["item_type", "item_luid", "luid"],
    "permissions": ["item_type", "item_luid", "grantee_type", "grantee_luid", "capability"],
    "default_permissions": ["project_luid", "content_type", "grantee_type", "grantee_luid", "capability"],
}


@dataclass
class SnapshotPromotion:
    entity_type: str
    hours_applied: int = 0
    hours_late: int = 0
    hours_set_aside: int = 0
    rows_read: int = 0
    versions_added: int = 0
    versions_closed: int = 0
    problems: list[str] = field(default_factory=list)


def key_columns(cfg: Config, entity_type: str) -> list[str]:
    return list(cfg.settings.snapshots.keys.get(entity_type) or DEFAULT_KEYS.get(entity_type) or [DEFAULT_KEY])


def _settle_pending(spark: SparkSession, t: Tables, entity_type: str, pending: set[str], log) -> None:
    """Runs killed after writing their hours ``pending``: applied if their history commit is there, else forgotten."""
    history = t.entity_history(entity_type)
    committed = {
        m[len(COMMIT_MARK) :]
        for m in (latest_commits(spark, history, 5) if spark.catalog.tableExists(history) else [])
        if m and m.startswith(COMMIT_MARK)
    }
    for run_id in sorted(pending):
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


def _seen(cfg: Config, entity_type: str) -> storage.Mark:
    """The bronze version a run last read to its end: an hourly refresh with no new snapshot of this
    type costs one look at bronze's log, not a scan."""
    return storage.Mark(cfg.checkpoint_dir, f"snapshots_{entity_type}.bronze_version")


@dataclass
class _State:
    """What ``ops.snapshot_hours`` says of the entity types to apply, read in one query."""

    watermark: dict[str, object]  # entity type -> the newest bronze_ingest_ts recorded
    last_applied: dict[tuple[str, str], object]  # (entity type, site) -> its newest applied hour
    pending: dict[str, set[str]]  # entity type -> the runs that left hours pending


def _state(spark: SparkSession, t: Tables, types: list[str]) -> _State:
    names = ", ".join(f"'{e}'" for e in types)
    rows = spark.sql(
        f"SELECT entity_type, site_luid, max(bronze_ingest_ts) AS watermark, "
        f"max(CASE WHEN status = '{APPLIED}' THEN snapshot_hour END) AS last_applied, "
        f"collect_set(CASE WHEN status = '{PENDING}' THEN run_id END) AS pending "
        f"FROM {t.snapshot_hours} WHERE entity_type IN ({names}) GROUP BY entity_type, site_luid"
    ).collect()
    state = _State({}, {}, {})
    for r in rows:
        e = r["entity_type"]
        if r["watermark"] is not None and (state.watermark.get(e) is None or r["watermark"] > state.watermark[e]):
            state.watermark[e] = r["watermark"]
        if r["last_applied"] is not None:
            state.last_applied[(e, r["site_luid"])] = r["last_applied"]
        state.pending.setdefault(e, set()).update(r["pending"])
    return state


def _new_bronze(spark: SparkSession, t: Tables, entity_type: str, state: _State) -> DataFrame:
    bronze = spark.table(t.bronze_entity(entity_type))
    if state.watermark.get(entity_type) is not None:
        bronze = bronze.where(F.col("ingest_ts") > F.lit(state.watermark[entity_type]))
    return bronze


def _apply_all(spark: SparkSession, cfg: Config, t: Tables, types: list[str], run_id: str, outs: dict, log) -> None:
    """Every entity type's new snapshots: the hours recorded in one commit, one commit per history, the
    hours marked applied in one commit (a run killed between them is settled per type: _settle_pending)."""
    state = _state(spark, t, types)
    if any(state.pending.get(e) for e in types):
        for e in types:
            if state.pending.get(e):
                _settle_pending(spark, t, e, state.pending[e], log)
        state = _state(spark, t, types)
    # the hours (site, snapshot_hour) bronze holds past each type's watermark and not yet recorded: one job
    delivered_frames = [
        new.groupBy(F.col("snapshot_site_luid").alias("site_luid"), "snapshot_hour")
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.max("ingest_ts").alias("bronze_ingest_ts"),
            F.count_if(_keyless(new, key_columns(cfg, e))).alias("keyless"),
        )
        .withColumn("entity_type", F.lit(e))
        for e in types
        for new in [_new_bronze(spark, t, e, state)]
    ]
    recorded = spark.table(t.snapshot_hours).select("entity_type", "site_luid", "snapshot_hour")
    delivered = (
        reduce(DataFrame.unionByName, delivered_frames)
        .join(recorded, ["entity_type", "site_luid", "snapshot_hour"], "left_anti")
        .collect()
    )
    if not delivered:
        return
    apply: dict[str, list] = {}
    late: dict[str, list] = {}
    keyless: dict[str, list] = {}  # a snapshot with a row it cannot key is set aside, the others go on
    for r in delivered:
        last = state.last_applied.get((r["entity_type"], r["site_luid"]))
        if r["keyless"]:
            keyless.setdefault(r["entity_type"], []).append(r)
            continue
        (apply if last is None or r["snapshot_hour"] > last else late).setdefault(r["entity_type"], []).append(r)
    for e, hours in keyless.items():
        outs[e].hours_set_aside = len(hours)
        outs[e].problems.append(_set_aside_problem(cfg, spark, t, e, hours))
    for e, hours in late.items():
        outs[e].hours_late = len(hours)
        outs[e].problems.append(
            f"silver: entity {e}: {len(hours)} snapshots older than their site's last "
            "applied hour were kept in bronze, not applied (see ops.snapshot_hours, status late)"
        )
    _record_hours(
        spark,
        t,
        [(r, LATE) for hours in late.values() for r in hours]
        + [(r, QUARANTINED) for hours in keyless.values() for r in hours]
        + [(r, PENDING) for hours in apply.values() for r in hours],
        run_id,
    )
    if apply:
        # a snapshot is a site's whole state: the open versions are about one snapshot's rows, so the
        # rows read say whether the small-input settings fit
        with small_input_below(spark, cfg, sum(r["rows"] for hours in apply.values() for r in hours)):
            _apply(spark, cfg, t, apply, state, run_id, outs, log)
        spark.sql(
            f"UPDATE {t.snapshot_hours} SET status = '{APPLIED}' WHERE status = '{PENDING}' AND run_id = '{run_id}'"
        )


def _keyless(frame: DataFrame, keys: list[str]) -> Column:
    """Whether a bronze row has no key: a key column not delivered at all, or every key column NULL or
    blank in the row (a file without the column, in a table whose other files have it). Such rows cannot
    be told apart: their snapshot would keep one of them and close every version it cannot match. (One
    part of a composite key may be empty: the key keeps it as empty text.)"""
    delivered = set(payload_columns(frame))
    if any(k not in delivered for k in keys):
        return F.lit(True)
    blank = [F.coalesce(F.trim(F.col(f"`{k}`").cast("string")), F.lit("")) == "" for k in keys]
    return reduce(Column.__and__, blank)


def _set_aside_problem(cfg: Config, spark: SparkSession, t: Tables, entity_type: str, hours: list) -> str:
    delivered = payload_columns(spark.table(t.bronze_entity(entity_type)))
    keys = key_columns(cfg, entity_type)
    missing = [k for k in keys if k not in delivered]
    why = (
        f"no key column {', '.join(missing)} in the files (they have: {', '.join(delivered)})"
        if missing
        else f"rows with no value in any key column ({', '.join(keys)})"
    )
    return (
        f"silver: entity {entity_type}: {len(hours)} snapshots set aside, not applied ({why}); they stay in "
        f"bronze (ops.snapshot_hours, status {QUARANTINED}); set snapshots.keys.{entity_type} in conf to the "
        "columns that identify a row if those are not they"
    )


def _apply(
    spark: SparkSession, cfg: Config, t: Tables, apply: dict[str, list], state: _State, run_id: str, outs: dict, log
) -> None:
    """The snapshots ``apply`` ({entity type: rows of site_luid, snapshot_hour, rows}) into their
    histories: the changes of every type found in one job, then one commit per type that names the run
    (none for a type whose snapshots changed nothing)."""
    hours = spark.createDataFrame(
        [(e, r["site_luid"], r["snapshot_hour"]) for e, rows in apply.items() for r in rows],
        "entity_type string, site_luid string, snapshot_hour timestamp",
    )
    rows = {}
    for e, delivered in apply.items():
        outs[e].hours_applied, outs[e].rows_read = len(delivered), sum(r["rows"] for r in delivered)
        snapshots = _new_bronze(spark, t, e, state).join(
            hours.where(F.col("entity_type") == e).select(
                F.col("site_luid").alias("snapshot_site_luid"), "snapshot_hour"
            ),
            ["snapshot_site_luid", "snapshot_hour"],
        )
        rows[e] = keyed(prefer_tableau(snapshots), key_columns(cfg, e))
    keys = reduce(
        DataFrame.union,
        [
            r.select(F.lit(e).alias("entity_type"), "site_luid", "entity_key", "snapshot_hour", "row_hash")
            for e, r in rows.items()
        ],
    )
    histories = {e: t.entity_history(e) for e in apply}
    existing = {e for e, history in histories.items() if spark.catalog.tableExists(history)}
    open_versions = reduce(
        DataFrame.union,
        [
            spark.table(histories[e])
            .where(F.col("valid_to").isNull())
            .select(F.lit(e).alias("entity_type"), "site_luid", "entity_key", "row_hash", "valid_from")
            for e in sorted(existing)
        ],
        spark.createDataFrame(
            [], "entity_type string, site_luid string, entity_key string, row_hash string, valid_from timestamp"
        ),
    )
    moved = transitions(keys.localCheckpoint(), hours, open_versions).localCheckpoint()
    counts = {
        r["entity_type"]: (r["versions"], r["closed"])
        for r in moved.groupBy("entity_type")
        .agg(
            F.count(F.col("row_hash")).alias("versions"),
            F.count(F.col("closes")).alias("closed"),
        )
        .collect()
    }
    for e in sorted(apply):
        out = outs[e]
        out.versions_added, out.versions_closed = counts.get(e, (0, 0))
        of_type = moved.where(F.col("entity_type") == e)
        versions = with_silver_run(new_versions(of_type, rows[e]), run_id)
        _write(spark, histories[e], e in existing, versions, closings(of_type), out, run_id)
        log(
            f"silver: entity {e}: {out.hours_applied} snapshots ({out.rows_read} rows) applied: "
            f"{out.versions_added} new versions, {out.versions_closed} closed -> {histories[e]}"
        )


def _write(
    spark: SparkSession,
    history: str,
    exists: bool,
    versions: DataFrame,
    closed: DataFrame,
    out: SnapshotPromotion,
    run_id: str,
) -> None:
    """One type's new versions and closings, in one commit that names the run."""
    if not exists:
        # created empty first: a kill between a CREATE TABLE AS's commit and the metastore's name would
        # leave rows no table points at (pipelines/refresh/recovery.py)
        versions.limit(0).write.format("delta").saveAsTable(history)
    if out.versions_added == out.versions_closed == 0:
        return  # nothing changed: no commit (a run killed before its hours are marked applies them again)
    spark.conf.set(COMMIT_NOTE, COMMIT_MARK + run_id)
    try:
        if out.versions_closed == 0:
            # nothing to close: new versions start at hours later than any applied, so none is there
            # yet and an append is the MERGE's result, without its join with the history
            versions.write.format("delta").mode("append").option("mergeSchema", "true").saveAsTable(history)
        else:
            source = versions.withColumn("_closing", F.lit(False)).unionByName(
                closed.withColumn("is_current", F.lit(False)).withColumn("_closing", F.lit(True)),
                allowMissingColumns=True,
            )
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
        spark.conf.unset(COMMIT_NOTE)


def _record_hours(spark: SparkSession, t: Tables, hours: list[tuple], run_id: str) -> None:
    """(delivered row with its entity_type, status) pairs, appended in one commit."""
    if not hours:
        return
    rows = [
        (r["entity_type"], r["site_luid"], r["snapshot_hour"], r["rows"], status, run_id, r["bronze_ingest_ts"])
        for r, status in hours
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
    """Apply every entity type's new snapshots; nothing delivered yet: nothing to do. A type whose bronze
    table has not changed since a run read it to its end costs one look at its log."""
    t = tables(cfg)
    types = t.entity_types(spark)
    if not types:
        return []
    for schema in (t.silver_schema, t.ops_schema):
        ensure_schema(spark, schema)
    create_table_if_missing(spark, t.snapshot_hours, HOURS_SCHEMA)
    outs = {e: SnapshotPromotion(e) for e in types}
    versions = {e: str(table_version(spark, t.bronze_entity(e))) for e in types}
    todo = [e for e in types if not _seen(cfg, e).holds(spark, versions[e])]
    if todo:
        _apply_all(spark, cfg, t, todo, run_id, outs, log)
        for e in todo:
            _seen(cfg, e).record(spark, versions[e])
    return [outs[e] for e in types]
