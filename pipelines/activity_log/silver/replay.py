"""Replay quarantined rows whose event type the registry has learnt since (``auditlake replay-quarantine``,
and at the start of every refresh's silver step).

A row quarantined as ``unknown_event_type`` keeps its ``bronze_id`` and its event type's name. When a
newer registry knows that type (the live feed's ``vizql_http_request``, say), the row's bronze record
is typed by the same silver transform as any batch, the same duplicate check decides (a copy already in
silver makes it a duplicate), and the row moves: appended to silver (or the duplicates), then removed
from quarantine. ``bronze rows = silver + duplicates + quarantine`` holds before and after.

Exactly once, also when killed: the replay's number is written down first
(``<checkpoints>/silver_<family>_replay.pending.json``) and every append uses Delta's idempotent-write
options (``txnAppId`` of the family's replays, ``txnVersion`` = that number), so a redone replay skips
the appends that had committed; a row already in silver under its own ``bronze_id`` counts as replayed,
not as a duplicate; the removal from quarantine is a MERGE ... DELETE, which does nothing the second
time. The replays are recorded in ``ops.quarantine_replays``.

The quarantine is read only when the family's known event types differ from those of the last
complete look (their digest in ``<checkpoints>/silver_<family>_replay.known_types``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from delta.tables import DeltaTable
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.activity_log import FAMILIES
from pipelines.activity_log.silver.plan import family_plan
from pipelines.activity_log.silver.promote import (
    _app_id,
    _append,
    _create_table_like,
    _duplicates_frame,
    ensure_silver_tables,
    event_dates,
    existing_keys,
)
from pipelines.activity_log.silver.transform import (
    ALREADY_IN_SILVER,
    NEW,
    REPLAYED,
    SAME_BATCH,
    UNKNOWN_EVENT_TYPE,
    decide,
    events_of,
    quarantine_of,
    stage,
)
from pipelines.activity_log.silver.views import ensure_event_views
from pipelines.config.load import Config
from pipelines.lake import storage
from pipelines.lake.silver_stamp import wait_until_stamps_past, with_silver_run
from pipelines.lake.table_names import Tables, tables
from pipelines.quality.frames import silver_events_frame

if TYPE_CHECKING:
    from pipelines.quality.gate import QualityGate

_REPLAYS_SCHEMA = (
    "silver_run_id string, family string, batch_id long, replayed long, inserted long, duplicates long, "
    "requarantined long, event_types string, processed_at timestamp"
)


@dataclass
class ReplayResult:
    family: str
    replayed: int = 0  # quarantine rows taken out of quarantine
    inserted: int = 0  # of which now silver events
    duplicates: int = 0  # of which copies of an event silver holds
    requarantined: int = 0  # of which quarantined again for another reason (a bad eventTime)
    event_types: dict[str, int] = field(default_factory=dict)


def _pending_path(cfg: Config, family: str) -> str:
    return storage.join(cfg.checkpoint_dir, f"silver_{family}_replay.pending.json")


def _checked(cfg: Config, family: str) -> storage.Mark:
    return storage.Mark(cfg.checkpoint_dir, f"silver_{family}_replay.known_types")


def _known_digest(family: str) -> str:
    return hashlib.sha256("\n".join(known_event_types(family)).encode()).hexdigest()


def known_event_types(family: str) -> list[str]:
    """Every name the registry resolves for ``family``: event types and their aliases."""
    plan = family_plan(family)
    return sorted(set(plan.event_types) | {alias for alias, _ in plan.aliases})


def replayable(spark: SparkSession, t: Tables, family: str) -> DataFrame:
    """(bronze_id) of the family's quarantine rows of an event type the registry now knows."""
    return (
        spark.table(t.quarantine)
        .where((F.col("family") == family) & (F.col("reason") == UNKNOWN_EVENT_TYPE))
        .where(F.col("event_type").isin(known_event_types(family)))
        .select("bronze_id")
        .distinct()
    )


def _last_replay(spark: SparkSession, t: Tables, family: str) -> int:
    if not spark.catalog.tableExists(t.quarantine_replays):
        return 0
    row = spark.table(t.quarantine_replays).where(F.col("family") == family).agg(F.max("batch_id")).first()
    return 0 if row[0] is None else int(row[0])


def replay_family(
    spark: SparkSession, cfg: Config, family: str, run_id: str, log=print, gate: QualityGate | None = None
) -> ReplayResult:
    """Move the family's replayable quarantine rows to silver (or the duplicates), once."""
    t = tables(cfg)
    result = ReplayResult(family)
    if not (spark.catalog.tableExists(t.quarantine) and spark.catalog.tableExists(t.bronze_raw(family))):
        return result
    pending = json.loads(storage.read_text(spark, _pending_path(cfg, family)) or "null")
    # A run that checked with these known types replayed every row they know; a row quarantined since was
    # typed with them too, so unknown to them: until the registry learns a type, one small file is read,
    # not the quarantine (two jobs per family and refresh).
    known = _known_digest(family)
    if not pending and _checked(cfg, family).holds(spark, known):
        return result
    candidates = replayable(spark, t, family).localCheckpoint()
    found = candidates.count()
    if not found:
        if pending:
            storage.write_text(spark, _pending_path(cfg, family), "null")
        _checked(cfg, family).record(spark, known)
        return result
    batch_id = pending["batch_id"] if pending else _last_replay(spark, t, family) + 1
    storage.write_text(spark, _pending_path(cfg, family), json.dumps({"batch_id": batch_id}))
    log(f"silver: {family}: replaying {found} quarantined rows of event types the registry now knows")
    ensure_silver_tables(spark, cfg, family)  # the columns of the event types it learnt
    _create_table_like(spark, t.quarantine_replays, spark.createDataFrame([], _REPLAYS_SCHEMA), None)
    app_id = _app_id(spark, cfg, f"{family}_replay")

    bronze_rows = spark.table(t.bronze_raw(family)).join(candidates, "bronze_id", "left_semi")
    rules = []
    if gate is not None and gate.enabled:  # rows a row expectation rejects are quarantined again, by its key
        from pipelines.quality.suites import row_rules, silver_events_suite  # loads GX

        rules = row_rules(cfg, silver_events_suite(cfg, family))
    staged = with_silver_run(stage(bronze_rows, family, rules), run_id).persist(StorageLevel.MEMORY_AND_DISK)
    events = events_of(staged)
    requarantine = with_silver_run(quarantine_of(staged, family), run_id)
    decisions = decide(events, existing_keys(spark, t, family, event_dates(events))).localCheckpoint()
    counts = {r["decision"]: r["n"] for r in decisions.groupBy("decision").agg(F.count("*").alias("n")).collect()}
    not_new = F.broadcast(decisions.where(F.col("decision") != NEW))
    new_events = events.join(not_new.select("bronze_id"), "bronze_id", "left_anti")
    duplicates = _duplicates_frame(
        events.join(
            not_new.where(F.col("decision").isin(SAME_BATCH, ALREADY_IN_SILVER)).select("bronze_id", "decision"),
            "bronze_id",
        ),
        F.col("decision"),
    )
    result.replayed = found
    result.inserted = counts.get(NEW, 0) + counts.get(REPLAYED, 0)
    result.duplicates = counts.get(SAME_BATCH, 0) + counts.get(ALREADY_IN_SILVER, 0)
    result.requarantined = requarantine.count()
    result.event_types = {
        r["event_type"]: r["n"] for r in events.groupBy("event_type").agg(F.count("*").alias("n")).collect()
    }
    if gate is not None:  # the rows silver gains pass the same gate as a promoted batch's
        from pipelines.quality.suites import silver_events_suite  # loads GX

        events_frame = silver_events_frame(cfg, new_events)
        new = counts.get(NEW, 0)
        gate.validate("bronze_to_silver", silver_events_suite(cfg, family), events_frame, run_id, rows=new)
        gate.record()

    _append(new_events, t.silver_events(family), app_id, batch_id)
    _append(duplicates, t.duplicates, app_id, batch_id)
    _append(requarantine, t.quarantine, app_id, batch_id)
    record = spark.createDataFrame(
        [
            (
                run_id,
                family,
                batch_id,
                result.replayed,
                result.inserted,
                result.duplicates,
                result.requarantined,
                json.dumps(dict(sorted(result.event_types.items()))),
            )
        ],
        "silver_run_id string, family string, batch_id long, replayed long, inserted long, duplicates long, "
        "requarantined long, event_types string",
    ).withColumn("processed_at", F.current_timestamp())
    _append(record, t.quarantine_replays, app_id, batch_id)
    # Last: out of quarantine (only the unknown_event_type rows: a row quarantined again for another
    # reason was appended just above under the same bronze_id).
    (
        DeltaTable.forName(spark, t.quarantine)
        .alias("q")
        .merge(
            candidates.alias("c"),
            f"q.bronze_id = c.bronze_id AND q.reason = '{UNKNOWN_EVENT_TYPE}' AND q.family = '{family}'",
        )
        .whenMatchedDelete()
        .execute()
    )
    staged.unpersist()
    storage.write_text(spark, _pending_path(cfg, family), "null")
    _checked(cfg, family).record(spark, known)
    log(
        f"silver: {family}: replayed {result.replayed} quarantined rows -> {result.inserted} events, "
        f"{result.duplicates} duplicates, {result.requarantined} quarantined again "
        f"{dict(sorted(result.event_types.items()))}"
    )
    return result


def replay_quarantine(
    spark: SparkSession, cfg: Config, run_id: str, log=print, gate: QualityGate | None = None
) -> list[ReplayResult]:
    """Replay every family's quarantine rows of event types the registry has learnt."""
    return [replay_family(spark, cfg, family, run_id, log=log, gate=gate) for family in FAMILIES]


def replay_on_its_own(spark: SparkSession, cfg: Config, run_id: str, log=print) -> int:
    """``auditlake replay-quarantine``, outside a refresh (the caller holds the refresh lock): every
    family's replay, its event views made again, and the next silver stamp past this run's, as a
    refresh's silver layer leaves them. The rows replayed."""
    results = replay_quarantine(spark, cfg, run_id, log=log)
    for r in results:
        if spark.catalog.tableExists(tables(cfg).silver_events(r.family)):
            ensure_event_views(spark, cfg, r.family, log=log)
    wait_until_stamps_past()
    return sum(r.replayed for r in results)
