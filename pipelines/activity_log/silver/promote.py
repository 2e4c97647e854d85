"""Promote bronze to silver, incrementally and exactly once.

Each run promotes, per family, the bronze rows committed since the last promotion (a range of
bronze's Delta versions, read through its change data feed: the rows its appends inserted, never
an erasure's rewrite of rows already promoted) in one typed pass. Every write uses
Delta's idempotent-write options (``txnAppId`` + ``txnVersion`` = the range's end), so a range
redone after a crash is skipped where it had already committed; and a bronze row already in
silver (same ``bronze_id``) is recognised as a replay, not counted as a duplicate.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import reduce
from typing import TYPE_CHECKING

from delta.tables import DeltaTable
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.activity_log import bronze
from pipelines.activity_log.silver.transform import (
    ALREADY_IN_SILVER,
    GATE_STOPPED,
    NEW,
    REPLAYED,
    SAME_BATCH,
    RowRule,
    SilverFrames,
    bronze_of,
    decide,
    events_of,
    quarantine_of,
    stage,
    to_silver,
)
from pipelines.activity_log.silver.views import ensure_event_views
from pipelines.config.load import Config
from pipelines.lake import storage
from pipelines.lake.delta_tables import ensure_schema, table_version
from pipelines.lake.silver_stamp import with_silver_run
from pipelines.lake.table_names import Tables, tables
from pipelines.quality.frames import bronze_rows_frame, silver_batch_frame, silver_events_frame
from pipelines.quality.gate import QualityGateError
from pipelines.quality.release import RELEASE_QUARANTINE
from pipelines.runtime.spark_session import describe_jobs, not_given, session_conf, small_input_below

if TYPE_CHECKING:
    from pipelines.quality.gate import QualityGate


@dataclass
class PromotionResult:
    family: str
    bronze_rows: int = 0
    inserted: int = 0
    duplicates: int = 0
    quarantined: int = 0
    batches: int = 0
    skipped_reason: str | None = None
    reasons: dict[str, int] = field(default_factory=dict)


def _app_id(spark: SparkSession, cfg: Config, family: str) -> str:
    """A stable id for this family's promotions, kept beside the checkpoints (Delta's txnAppId)."""
    location = storage.join(cfg.checkpoint_dir, f"silver_{family}.txn_app_id")
    app_id = storage.read_text(spark, location)
    if not (app_id or "").strip():  # none yet, or a kill left the file created but empty
        app_id = f"silver-{family}-{uuid.uuid4()}\n"
        storage.write_text(spark, location, app_id)
    return app_id.strip()


def _create_table_like(spark: SparkSession, name: str, frame: DataFrame, partition_by: str | None) -> None:
    """Create ``name`` with ``frame``'s schema if missing; add columns the registry gained since."""
    if not spark.catalog.tableExists(name):
        writer = frame.limit(0).write.format("delta").mode("ignore")
        if partition_by:
            writer = writer.partitionBy(partition_by)
        writer.saveAsTable(name)
        return
    existing = {f.name: f.dataType.simpleString() for f in spark.table(name).schema.fields}
    missing = [f for f in frame.schema.fields if f.name not in existing]
    if missing:
        cols = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in missing)
        spark.sql(f"ALTER TABLE {name} ADD COLUMNS ({cols})")
    # A lake made when documented integers were 32-bit: widen them in place (Delta's type widening:
    # no file is rewritten, older files are read as the wider type).
    widened = [
        f.name for f in frame.schema.fields if existing.get(f.name) == "int" and f.dataType.simpleString() == "bigint"
    ]
    if widened:
        spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
        for column in widened:
            spark.sql(f"ALTER TABLE {name} ALTER COLUMN `{column}` TYPE BIGINT")


def _set_stats_columns(spark: SparkSession, table: str, wanted: list[str]) -> None:
    """Delta's per-file statistics on ``wanted`` (those ``table`` has). Applies to files written
    from now on; older files keep the statistics they were written with (never skipped wrongly)."""
    present = {f.name for f in spark.table(table).schema.fields}
    columns = ",".join(c for c in wanted if c in present)
    props = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}
    if columns and props.get(_STATS_PROPERTY) != columns:
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('{_STATS_PROPERTY}' = '{columns}')")


_STATS_PROPERTY = "delta.dataSkippingStatsColumns"


def _empty_bronze(spark: SparkSession, cfg: Config, family: str) -> DataFrame:
    return spark.table(tables(cfg).bronze_raw(family)).limit(0)


def ensure_silver_tables(spark: SparkSession, cfg: Config, family: str, frames: SilverFrames | None = None) -> None:
    """Silver's tables for ``family``, created or given the columns the registry gained since.
    ``frames``: a batch's typed frames, whose schema is the tables' (without: the schema of no rows
    typed, which costs Spark the analysis of the whole typing once more)."""
    t = tables(cfg)
    for schema in (t.silver_schema, t.ops_schema):
        ensure_schema(spark, schema)
    frames = frames or to_silver(_empty_bronze(spark, cfg, family), family)
    events = with_silver_run(frames.events, "")
    _create_table_like(spark, t.silver_events(family), events, "event_date")
    _set_stats_columns(spark, t.silver_events(family), cfg.settings.silver.stats_columns)
    _create_table_like(spark, t.quarantine, with_silver_run(frames.quarantine, ""), None)
    _create_table_like(spark, t.duplicates, _duplicates_frame(events, "same_batch"), None)
    _create_table_like(spark, t.silver_batches, spark.createDataFrame([], _BATCH_SCHEMA), None)


_BATCH_SCHEMA = (
    "silver_run_id string, family string, batch_id long, bronze_rows long, inserted long, "
    "duplicates long, quarantined long, processed_at timestamp"
)


def event_dates(events: DataFrame) -> list:
    """The event dates a batch's ``events`` touch (silver's partitions to read for its duplicates)."""
    return [r["event_date"] for r in events.select("event_date").distinct().collect()]


def existing_keys(spark: SparkSession, t: Tables, family: str, dates: list) -> DataFrame:
    """(event_id, bronze_id) already in silver, read only from the event ``dates`` a batch touches."""
    return spark.table(t.silver_events(family)).where(F.col("event_date").isin(dates)).select("event_id", "bronze_id")


def _duplicates_frame(events: DataFrame, why) -> DataFrame:
    why = F.lit(why) if isinstance(why, str) else why
    return events.select(
        "event_id",
        "event_type",
        "family",
        "event_time",
        "bronze_id",
        "source_file",
        "bronze_run_id",
        "silver_run_id",
        why.alias("duplicate_of"),
    )


def _append(df: DataFrame, table: str, app_id: str, batch_id: int) -> None:
    (
        df.write.format("delta")
        .mode("append")
        .option("txnAppId", app_id)
        .option("txnVersion", batch_id)
        .saveAsTable(table)
    )


_STAGED_CACHE = {"spark.sql.inMemoryColumnarStorage.compressed": "false"}


def promote_batch(
    spark: SparkSession,
    cfg: Config,
    batch: DataFrame,
    batch_id: int,
    family: str,
    run_id: str,
    app_id: str,
    gate: QualityGate | None = None,
    log=print,
    release: str | None = None,
    stopped: str = "",
) -> PromotionResult:
    """Type, deduplicate, check and write one batch of bronze rows.

    With a ``gate``, the rows its row expectations reject are set aside to quarantine, and the rest is
    validated before anything is written: an expectation that stops the batch raises and nothing of it
    is promoted (silver stays as it was). ``release``: the batch was stopped before (``stopped`` says
    by what) and is released: every row to quarantine, or promoted with the share thresholds waived."""
    t = tables(cfg)
    result = PromotionResult(family, batches=1)
    started = time.monotonic()
    rules: list[RowRule] = []
    if release == RELEASE_QUARANTINE:
        rules = [RowRule(GATE_STOPPED, F.lit(True), F.lit(f"the batch was stopped ({stopped}) and set aside whole"))]
    elif gate is not None and gate.enabled:
        from pipelines.quality.suites import row_rules, silver_events_suite  # loads GX

        rules = row_rules(cfg, silver_events_suite(cfg, family))

    def step(what: str, following: str) -> None:  # a progress line per step of a long batch
        log(f"silver: {family}: {what} ({time.monotonic() - started:.1f}s)")
        describe_jobs(spark, f"silver: {family}: {following}")

    describe_jobs(spark, f"silver: {family}: typing (into the cache)")

    # Parse and type the batch once and keep it in the columnar cache, not compressed: on a large batch
    # compressing cost more of the typing than the memory it saved was worth (docs/performance.md,
    # "Silver's typing and gate"). An operator's own setting in spark.extra_conf wins.
    with session_conf(spark, not_given(cfg, _STAGED_CACHE)):
        staged = with_silver_run(stage(batch, family, rules), run_id).persist(StorageLevel.MEMORY_AND_DISK)
        events = events_of(staged)
        quarantine = with_silver_run(quarantine_of(staged, family), run_id)
        ensure_silver_tables(spark, cfg, family, SilverFrames(events, quarantine))
        # One job fills the cache and counts what the decisions need: the rows, the quarantine's reasons
        # and the event dates the events touch.
        shape = staged.groupBy("_reason", "event_date").agg(F.count("*").alias("n")).collect()
    result.bronze_rows = sum(r["n"] for r in shape)
    for r in shape:
        if r["_reason"] is not None:
            result.reasons[r["_reason"]] = result.reasons.get(r["_reason"], 0) + r["n"]
    result.quarantined = sum(result.reasons.values())
    dates = sorted({r["event_date"] for r in shape if r["_reason"] is None})
    step(f"typed {result.bronze_rows} bronze rows", "duplicates and quarantine decided")
    # Decide each event's fate on narrow columns only; materialised before any write, because
    # the writes change what "already in silver" means.
    decisions = decide(events, existing_keys(spark, t, family, dates)).localCheckpoint()
    counts = {r["decision"]: r["n"] for r in decisions.groupBy("decision").agg(F.count("*").alias("n")).collect()}
    # A row already in silver under its own bronze_id was written by an earlier attempt of this
    # very batch (a crash before the checkpoint committed): it counts as inserted, not as a duplicate.
    result.inserted = counts.get(NEW, 0) + counts.get(REPLAYED, 0)
    result.duplicates = counts.get(SAME_BATCH, 0) + counts.get(ALREADY_IN_SILVER, 0)
    # The joins with the decisions only where some event is not new: each join is planned over the
    # batch's typing (the driver's time, whatever the rows), and an hourly delivery is usually all new.
    not_new = F.broadcast(decisions.where(F.col("decision") != NEW))
    if set(counts) <= {NEW}:
        new_events = events
    else:
        new_events = events.join(not_new.select("bronze_id"), "bronze_id", "left_anti")
    duplicates = None
    if result.duplicates:
        duplicates = _duplicates_frame(
            events.join(
                not_new.where(F.col("decision").isin(SAME_BATCH, ALREADY_IN_SILVER)).select("bronze_id", "decision"),
                "bronze_id",
            ),
            F.col("decision"),
        )
    step("duplicates and quarantine decided", "bronze -> silver gate" if gate is not None else "writes")

    if gate is not None:
        from pipelines.quality.suites import bronze_rows_suite, silver_batch_suite, silver_events_suite  # loads GX

        judging = {"batch_rows": result.bronze_rows, "waive_shares": release is not None}
        if release != RELEASE_QUARANTINE:  # a batch set aside whole promotes nothing: only its figures are checked
            bronze_rows = bronze_of(staged)
            if gate.fetches_whole(result.bronze_rows):
                # The gate fetches these few columns whole anyway. Materialised first, the ledger's joins plan
                # over them rather than over the batch's typing, whose plan each join matches against the
                # cache, seconds of the driver's time a batch.
                bronze_rows = bronze_rows.localCheckpoint()
            rows_frame = bronze_rows_frame(spark, bronze_rows, t.file_ledger)
            suite = bronze_rows_suite(cfg)
            gate.validate("bronze_to_silver", suite, rows_frame, run_id, rows=result.bronze_rows, **judging)
            events_frame = silver_events_frame(cfg, new_events)
            set_aside = {r.key: result.reasons.get(r.key, 0) for r in rules}
            suite = silver_events_suite(cfg, family)
            new = counts.get(NEW, 0)
            gate.validate("bronze_to_silver", suite, events_frame, run_id, rows=new, set_aside=set_aside, **judging)
        figures = silver_batch_frame(result.bronze_rows, result.inserted, result.duplicates, result.quarantined)
        gate.validate("bronze_to_silver", silver_batch_suite(cfg), figures, run_id, **judging)
        gate.record()  # the checks of a batch are in ops.dq_results before any of it is written
        step("gate passed", "writes")

    log(
        f"silver: {family}: writing {result.inserted} events, {result.duplicates} duplicates, "
        f"{result.quarantined} quarantined"
    )
    # a frame the decisions counted empty is not appended (a Delta commit of nothing costs seconds; a
    # clean delivery has no duplicates and no quarantine)
    for frame, table, rows in (
        (new_events, t.silver_events(family), counts.get(NEW, 0)),
        (duplicates, t.duplicates, result.duplicates),
        (quarantine, t.quarantine, result.quarantined),
    ):
        if rows:
            _append(frame, table, app_id, batch_id)
    stats = spark.createDataFrame(
        [(run_id, family, batch_id, result.bronze_rows, result.inserted, result.duplicates, result.quarantined)],
        "silver_run_id string, family string, batch_id long, bronze_rows long, inserted long, "
        "duplicates long, quarantined long",
    ).withColumn("processed_at", F.current_timestamp())
    _append(stats, t.silver_batches, app_id, batch_id)
    step("written", "views and batch figures")
    staged.unpersist()
    return result


def _pending_path(cfg: Config, family: str) -> str:
    return storage.join(cfg.checkpoint_dir, f"silver_{family}.pending.json")


def promoted_upto(spark: SparkSession, t: Tables) -> dict[str, int]:
    """Per family, the bronze version silver has promoted up to (a family not listed: nothing yet)."""
    if not spark.catalog.tableExists(t.silver_batches):
        return {}
    rows = spark.table(t.silver_batches).groupBy("family").agg(F.max("batch_id").alias("upto")).collect()
    return {r["family"]: int(r["upto"]) for r in rows}


def last_promoted(spark: SparkSession, t: Tables, family: str) -> int:
    """The bronze version silver has promoted ``family`` up to (-1: nothing yet)."""
    return promoted_upto(spark, t).get(family, -1)


# The commits of bronze that add rows: the landing's appends. Any other commit adds none silver has
# not seen: an erasure's UPDATE (pipelines/personal_data/erase/) rewrites rows already promoted, VACUUM START /
# END and OPTIMIZE change no row; and the vacuum after an erasure deletes the change data of its
# UPDATE, so such a commit must not even be read.
APPENDS = ("WRITE", "STREAMING UPDATE")


def appended_versions(spark: SparkSession, table: str, after: int, upto: int) -> dict[int, int]:
    """The versions ``after`` < v <= ``upto`` that appended rows, each with how many (the commits'
    own figures: no file is read)."""
    if upto <= after:
        return {}
    history = (
        DeltaTable.forName(spark, table)
        .history(table_version(spark, table) - after)
        .select("version", "operation", "operationMetrics")
        .collect()
    )
    return {
        r["version"]: int((r["operationMetrics"] or {}).get("numOutputRows") or 0)
        for r in history
        if after < r["version"] <= upto and r["operation"] in APPENDS
    }


def appended_ranges(versions: Iterable[int]) -> list[tuple[int, int]]:
    """The runs (first, last) of consecutive ``versions``."""
    runs: list[tuple[int, int]] = []
    for v in sorted(versions):
        if runs and runs[-1][1] == v - 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return runs


def bronze_row_count(spark: SparkSession, table: str, after: int, upto: int, appends: dict[int, int]) -> int:
    """How many rows versions ``after`` < v <= ``upto`` appended (``appends``: appended_versions);
    from the first version: the table's row count at ``upto`` (Delta's statistics)."""
    if after < 0:
        return spark.read.format("delta").option("versionAsOf", upto).table(table).count()
    return sum(appends.values())


def bronze_rows_between(
    spark: SparkSession, table: str, after: int, upto: int, appends: dict[int, int]
) -> DataFrame | None:
    """Bronze rows committed in versions ``after`` < v <= ``upto``: the ``insert`` rows of its change
    data feed, read over the versions that appended (``appends``: appended_versions; for an append,
    just the files it added). An UPDATE gives ``update_preimage`` / ``update_postimage`` rows, never
    ``insert``, and is not read at all (see ``APPENDS``). None: no version of the range appended rows."""
    if after < 0:
        return spark.read.format("delta").option("versionAsOf", upto).table(table)
    frames = [
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", first)
        .option("endingVersion", last)
        .table(table)
        .where(F.col("_change_type") == "insert")
        .drop("_change_type", "_commit_version", "_commit_timestamp")
        for first, last in appended_ranges(appends)
    ]
    if not frames:
        return None
    return reduce(DataFrame.unionByName, frames)


def _record_no_rows(spark: SparkSession, t: Tables, family: str, run_id: str, app_id: str, upto: int) -> None:
    """A promotion of no rows up to ``upto`` (a range of commits that appended nothing)."""
    stats = spark.createDataFrame(
        [(run_id, family, upto, 0, 0, 0, 0)],
        "silver_run_id string, family string, batch_id long, bronze_rows long, "
        "inserted long, duplicates long, quarantined long",
    )
    _append(stats.withColumn("processed_at", F.current_timestamp()), t.silver_batches, app_id, upto)


def promote_family(
    spark: SparkSession,
    cfg: Config,
    family: str,
    done: int,
    run_id: str,
    log=print,
    gate: QualityGate | None = None,
    release: str | None = None,
) -> PromotionResult:
    """Promote the bronze rows of ``family`` committed since the last promotion (bronze version
    ``done``: promoted_upto), in one batch.

    The range (last promoted version, bronze's current version] is written down before anything
    else (``silver_<family>.pending.json`` beside the checkpoints); a run killed mid-way redoes
    exactly that range, and Delta's idempotent writes (txnAppId, txnVersion = the range's end)
    skip the tables it had already written. Nothing new: no commit.

    A range a gate stopped stays pending with what stopped it and since when; later ranges wait behind
    it until ``release`` (the operator's) or until it has been stopped ``quality.hold_stopped_hours``
    (then its rows are set aside to quarantine)."""
    source = tables(cfg).bronze_raw(family)
    if not spark.catalog.tableExists(source):
        return PromotionResult(family, skipped_reason=f"no bronze table {source}")
    t = tables(cfg)
    current = table_version(spark, source)
    pending = json.loads(storage.read_text(spark, _pending_path(cfg, family)) or "null")
    ranges = []
    if pending and pending["to"] > done:
        ranges.append((pending["from"], pending["to"]))
        done = pending["to"]
    if current > done:
        ranges.append((done, current))
    total = PromotionResult(family)
    if not ranges:
        return total
    app_id = _app_id(spark, cfg, family)
    for after, upto in ranges:
        stopped = (pending or {}).get("stopped") if (pending or {}).get("to") == upto else None
        released = _release_of(cfg, family, stopped, release, log)
        storage.write_text(
            spark, _pending_path(cfg, family), json.dumps({"from": after, "to": upto, "stopped": stopped})
        )
        appends = {} if after < 0 else appended_versions(spark, source, after, upto)
        batch = bronze_rows_between(spark, source, after, upto, appends)
        if batch is None:  # e.g. an erasure's rewrite and its vacuum: nothing new, nothing to check
            ensure_silver_tables(spark, cfg, family)
            _record_no_rows(spark, t, family, run_id, app_id, upto)
            log(f"silver: {family} bronze versions {after + 1}..{upto}: no rows appended (rewrites only)")
            continue
        # a small batch runs with the small-input settings: compiling its queries would cost more than they take
        try:
            with small_input_below(spark, cfg, bronze_row_count(spark, source, after, upto, appends)):
                by = (stopped or {}).get("by", "")
                r = promote_batch(spark, cfg, batch, upto, family, run_id, app_id, gate, log, released, by)
        except QualityGateError as exc:
            stopped = stopped or {"at": datetime.now(UTC).isoformat(timespec="seconds"), "by": exc.stopped_by}
            storage.write_text(
                spark, _pending_path(cfg, family), json.dumps({"from": after, "to": upto, "stopped": stopped})
            )
            raise QualityGateError(f"{exc}; {_held(cfg, family, after, upto, stopped)}", exc.stopped_by) from None
        log(
            f"silver: {family} bronze versions {after + 1}..{upto}: {r.bronze_rows} bronze rows -> {r.inserted} "
            f"new events, {r.duplicates} duplicates, {r.quarantined} quarantined"
        )
        total.bronze_rows += r.bronze_rows
        total.inserted += r.inserted
        total.duplicates += r.duplicates
        total.quarantined += r.quarantined
        total.batches += 1
        for k, v in r.reasons.items():
            total.reasons[k] = total.reasons.get(k, 0) + v
    storage.write_text(spark, _pending_path(cfg, family), "null")
    return total


def _release_of(cfg: Config, family: str, stopped: dict | None, release: str | None, log) -> str | None:
    """How a range is released: by the operator, or set aside after its hold (None: not stopped, or held)."""
    if stopped is None:
        return None
    if release is not None:
        log(f"silver: {family}: the batch stopped by {stopped['by']} is released ({release}) by the operator")
        return release
    held = datetime.now(UTC) - datetime.fromisoformat(stopped["at"])
    hold = timedelta(hours=cfg.settings.quality.hold_stopped_hours)
    if held >= hold:
        log(
            f"silver: {family}: the batch stopped by {stopped['by']} since {stopped['at']} has been held "
            f"quality.hold_stopped_hours ({cfg.settings.quality.hold_stopped_hours}): its rows set aside to "
            f"quarantine ({GATE_STOPPED})"
        )
        return RELEASE_QUARANTINE
    return None


def _held(cfg: Config, family: str, after: int, upto: int, stopped: dict) -> str:
    """What the operator reads of a stopped batch: which, since when, and the one command that releases it."""
    return (
        f"{family} bronze versions {after + 1}..{upto} held since {stopped['at']}, later deliveries behind it; "
        f"release it with `auditlake refresh --release quarantine` (its rows set aside, reason {GATE_STOPPED}) "
        f"or `--release promote` (the share thresholds waived for it, once the cause is dealt with); "
        f"after quality.hold_stopped_hours ({cfg.settings.quality.hold_stopped_hours}) a refresh sets it aside"
    )


def stopped_batches(spark: SparkSession, cfg: Config) -> dict[str, dict]:
    """Per family, the pending batch a gate stopped (its range, by what, since when)."""
    found = {}
    for family in bronze.FAMILIES:
        pending = json.loads(storage.read_text(spark, _pending_path(cfg, family)) or "null")
        if pending and pending.get("stopped"):
            found[family] = pending
    return found


def promote_silver(
    spark: SparkSession,
    cfg: Config,
    run_id: str,
    log=print,
    gate: QualityGate | None = None,
    release: str | None = None,
) -> list[PromotionResult]:
    """Every family's new bronze rows. ``release``: how the batches a gate stopped are released
    (pipelines/quality/release.py)."""
    if release is not None and not stopped_batches(spark, cfg):
        log(f"silver: --release {release}: no batch is stopped; nothing to release")
    results = []
    with small_input_below(spark, cfg, 0):  # one read for every family, of a row per batch: a small input
        upto = promoted_upto(spark, tables(cfg))
    for family in bronze.FAMILIES:
        result = promote_family(spark, cfg, family, upto.get(family, -1), run_id, log=log, gate=gate, release=release)
        if result.skipped_reason:
            log(f"silver: {family} skipped ({result.skipped_reason})")
        elif not result.batches:
            log(f"silver: {family}: nothing new in bronze")
        else:
            log(
                f"silver: {family}: {result.bronze_rows} bronze rows -> {result.inserted} new events, "
                f"{result.duplicates} duplicates removed, {result.quarantined} quarantined "
                f"{dict(sorted(result.reasons.items()))}"
            )
        if spark.catalog.tableExists(tables(cfg).silver_events(family)):
            ensure_event_views(spark, cfg, family, log=log)  # only when missing or the registry changed
        results.append(result)
    return results
