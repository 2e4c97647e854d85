"""Legal holds: ``auditlake hold add|list|release``. A hold keeps rows from being retired by retention or
rewritten by an erasure (GDPR Art. 17(3)(e): data needed for legal claims): a site's rows, a person's,
or a period's, or a site's or person's within a period.

Holds live in ``ops.legal_holds`` (the person's LUID or e-mail in clear there, like every ops table an
erasure may later pseudonymise once the hold is released); every change is also a signed digest, which
holds the value's SHA-256 only, never the value (the digest log is never rewritten).
"""

from __future__ import annotations

import getpass
import hashlib
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from delta.tables import DeltaTable
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from pipelines.config.load import Config
from pipelines.errors import InputError, UsageError
from pipelines.integrity.capture import write_digest
from pipelines.lake.delta_tables import create_table_if_missing
from pipelines.lake.table_names import tables
from pipelines.lifecycle import scope
from pipelines.runtime.spark_session import append_rows

HOLDS_SCHEMA = (
    "hold_id string, site_luid string, person string, held_from timestamp, held_to timestamp, reason string, "
    "placed_by string, placed_at timestamp, released_by string, released_at timestamp"
)


class HoldRefused(InputError):
    """What was asked would change rows under a legal hold: the line names the hold."""


@dataclass(frozen=True)
class Hold:
    hold_id: str
    site_luid: str | None
    person: str | None
    held_from: datetime | None
    held_to: datetime | None
    reason: str
    placed_by: str
    placed_at: datetime
    released_by: str | None = None
    released_at: datetime | None = None

    def scope(self) -> str:
        parts = [f"site {self.site_luid}"] if self.site_luid else []
        parts += [f"person {self.person}"] if self.person else []
        if self.held_from or self.held_to:
            parts.append(f"{_day(self.held_from) or '…'} to {_day(self.held_to) or '…'}")
        return ", ".join(parts)

    def covers(self) -> Column:
        """Which bronze Activity Log rows it holds."""
        held = F.lit(True)
        if self.site_luid:
            held = held & (F.coalesce(scope.site_luid(), F.lit("")) == self.site_luid)
        if self.person:
            held = held & scope.names_any([self.person])
        if self.held_from:
            held = held & (scope.event_time() >= F.lit(self.held_from))
        if self.held_to:
            held = held & (scope.event_time() <= F.lit(self.held_to))
        return held

    def record(self, action: str) -> dict:
        """The signed record of a change: the person's value as its SHA-256 only."""
        return {
            "action": action,
            "hold_id": self.hold_id,
            "site_luid": self.site_luid,
            "person_sha256": hashlib.sha256(self.person.encode()).hexdigest() if self.person else None,
            "from": utc(self.held_from),
            "to": utc(self.held_to),
            "reason": self.reason,
            "by": self.released_by if action == "release" else self.placed_by,
            "at": utc(self.released_at if action == "release" else self.placed_at),
        }


def utc(value: datetime | None) -> str | None:
    """A time as signed records hold it: UTC, ISO 8601. Spark hands back naive local times."""
    return value.astimezone(UTC).isoformat() if value else None


def _day(value: datetime | None) -> str | None:
    return value.strftime("%Y-%m-%d %H:%M") if value else None


def _table(spark: SparkSession, cfg: Config) -> str:
    table = tables(cfg).legal_holds
    create_table_if_missing(spark, table, HOLDS_SCHEMA)
    return table


def all_holds(spark: SparkSession, cfg: Config) -> list[Hold]:
    table = tables(cfg).legal_holds
    if not spark.catalog.tableExists(table):
        return []
    return [Hold(**r.asDict()) for r in spark.table(table).orderBy("placed_at").collect()]


def active_holds(spark: SparkSession, cfg: Config) -> list[Hold]:
    return [h for h in all_holds(spark, cfg) if h.released_at is None]


def add_hold(
    spark: SparkSession,
    cfg: Config,
    reason: str,
    site: str | None = None,
    person: str | None = None,
    held_from: datetime | None = None,
    held_to: datetime | None = None,
    placed_by: str | None = None,
    log=print,
) -> Hold:
    if not (site or person or held_from or held_to):
        raise UsageError("hold add: give --site, --user, or --from/--to (or a site or user within a period)")
    if not reason.strip():
        raise UsageError("hold add: --reason must say why (a case, a ticket)")
    if held_from and held_to and held_to < held_from:
        raise UsageError("hold add: --to is before --from")
    hold = Hold(
        f"hold-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}",
        site.strip().lower() if site else None,
        person.strip().lower() if person else None,
        held_from,
        held_to,
        reason.strip(),
        placed_by or getpass.getuser(),
        datetime.now(UTC),
    )
    row = (hold.hold_id, hold.site_luid, hold.person, held_from, held_to, hold.reason, hold.placed_by, hold.placed_at)
    append_rows(spark, cfg, [(*row, None, None)], HOLDS_SCHEMA, _table(spark, cfg))
    write_digest(cfg, "hold", hold.hold_id, spark, log=log, extra={"holds": [hold.record("add")]})
    log(f"hold {hold.hold_id}: placed on {hold.scope()} ({hold.reason})")
    return hold


def release_hold(spark: SparkSession, cfg: Config, hold_id: str, released_by: str | None = None, log=print) -> Hold:
    found = {h.hold_id: h for h in active_holds(spark, cfg)}
    if hold_id not in found:
        raise InputError(f"hold release: no active hold {hold_id} (`auditlake hold list` shows them)")
    now, by = datetime.now(UTC), released_by or getpass.getuser()
    DeltaTable.forName(spark, tables(cfg).legal_holds).update(
        condition=(F.col("hold_id") == hold_id) & F.col("released_at").isNull(),
        set={"released_by": F.lit(by), "released_at": F.lit(now)},
    )
    released = replace(found[hold_id], released_by=by, released_at=now)
    write_digest(cfg, "hold", hold_id, spark, log=log, extra={"holds": [released.record("release")]})
    log(f"hold {hold_id}: released ({released.scope()})")
    return released


def refuse_erasure_under_hold(spark: SparkSession, cfg: Config, identifiers: list[str]) -> None:
    """An erasure would rewrite (and vacuum) rows under a hold: ``HoldRefused`` naming the first hold
    that holds a row naming the person."""
    holds = active_holds(spark, cfg)
    if not holds:
        return
    keys = [v.lower() for v in identifiers]
    for hold in holds:
        if hold.person and hold.person in keys:
            raise _refusal(hold)
    for family in ("site", "tenant"):
        table = tables(cfg).bronze_raw(family)
        if not spark.catalog.tableExists(table):
            continue
        mine = spark.table(table).where(scope.names_any(keys))
        for hold in holds:
            if mine.where(hold.covers()).limit(1).count():
                raise _refusal(hold)


def _refusal(hold: Hold) -> HoldRefused:
    return HoldRefused(
        f"the person's rows are under legal hold {hold.hold_id} ({hold.scope()}: {hold.reason}; placed "
        f"{_day(hold.placed_at)} by {hold.placed_by}): nothing changed; an erasure waits until the hold is "
        f"released (`auditlake hold release {hold.hold_id}`), GDPR Art. 17(3)(e)"
    )


def list_lines(holds: list[Hold]) -> list[str]:
    if not holds:
        return ["hold: none"]
    return [
        f"{h.hold_id}  {'released ' + _day(h.released_at) + ' by ' + str(h.released_by) if h.released_at else 'ACTIVE'}"
        f"  {h.scope()}  placed {_day(h.placed_at)} by {h.placed_by}: {h.reason}"
        for h in holds
    ]
