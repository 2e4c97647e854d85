"""Erasure (GDPR Article 17) on an append-only lake: ``auditlake erase --user <luid or e-mail>``.

Rows are pseudonymised, never deleted, so every count the lake reconciles stays as it was
(bronze = silver + duplicates + quarantine, the file ledger's rows, gold = the silver rows it
covers). The steps:

1. **Resolve** the person: from the LUID or e-mail given, the identifiers silver holds for them
   (the catalogue's ``people``: the columns that describe one person within a row,
   pipelines/personal_data/catalogue.yaml), followed until no new
   LUID or e-mail turns up. Nobody found: ``PersonNotFound``, nothing changed.
2. **Pending**: before anything is rewritten, the erasure is written down: a state file under
   ``<checkpoints>/erasure_pending/`` (the identifiers, their tokens, the tables in order with their
   versions, the rows rewritten so far; the clear values a re-run needs, so not in a Delta table) and a row of
   ``ops.erasures`` with status ``pending`` (tokens only). A re-run of ``auditlake erase`` or the
   next refresh finishes a pending erasure first (``finish_pending_erasure``).
3. **Pseudonymise** every Delta table of the bronze, silver, ops and gold schemas, in that order:
   each identifier becomes its token, ``erased:<12 hex of sha256(salt + identifier)>`` (one token per
   identifier, so keys stay unique and joins still join). LUIDs and e-mails are replaced wherever
   they occur in a text (raw JSON lines included); names (sign-in and display names) only where a
   value is the whole name, or a JSON string holding it, so a name inside another word is left.
   One UPDATE per table rewrites the rows and counts them: the count is its commit's own
   (``numUpdatedRows``), kept in the state file after it. The commit carries the erasure id
   (Delta's commit ``userMetadata``), so a run killed between the commit and the save finds the
   count in the table's history; a table rewritten already matches no row, and Delta makes no commit.
4. **Vacuum** every table touched with ``erase.vacuum_retain_hours``: the files that held the old
   values (and the change data feed's pre-images) are deleted, so time travel to a version before
   the erasure fails.
5. **Catch up** the readers of bronze: silver promotion reads only the rows bronze's appends
   inserted, never an erasure's rewrite; its promoted range moves past the erasure's commits where
   behind (a batch with no rows in ``ops.silver_batches``); the Write-Back stream skips commits that
   change rows. A gold build that was current still is.
6. **Record** ``ops.erasures`` as done (when, rows per table, tables vacuumed), then delete the state
   file: no value that was erased outlives the erasure.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import re
import threading
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import reduce
from itertools import groupby
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StringType

from pipelines.activity_log import FAMILIES
from pipelines.activity_log.silver.promote import last_promoted
from pipelines.analyst.publish import publish_analyst_tables
from pipelines.analyst.publish import tables_location as analyst_tables_location
from pipelines.config.load import Config
from pipelines.errors import InputError, UsageError
from pipelines.gold import inputs as gold_inputs
from pipelines.lake import storage
from pipelines.lake.delta_tables import (
    COMMIT_NOTE,
    create_table_if_missing,
    for_each_table,
    latest_commit_info,
    table_files,
    table_names,
    table_version,
)
from pipelines.lake.sql_text import UUID_PATTERN
from pipelines.lake.table_names import Tables, tables
from pipelines.personal_data import EMAIL, PERSON_KEY, catalogue
from pipelines.runtime.spark_session import append_rows, session_conf, small_and_large, small_tables

TOKEN_PREFIX = "erased:"
# Delta refuses a vacuum retention under its default (7 days) unless this check is off.
RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"

ERASURES_SCHEMA = (
    "erasure_id string, erased_at timestamp, requested_by string, identifier_kind string, "
    "tokens array<string>, identifiers int, rows_by_table map<string,bigint>, rows_total bigint, "
    "vacuum_retain_hours int, tables_vacuumed int, status string, started_at timestamp"
)


class EraseError(InputError):
    """The erasure cannot run (nothing changed): the message says why and what to do."""


class PersonNotFound(EraseError):
    """No table holds the LUID or e-mail given."""


@dataclass
class Person:
    """Who is erased: the identifiers the lake holds for them (kept in memory only)."""

    kind: str  # what was given: luid | email
    keys: set[str] = field(default_factory=set)  # LUIDs / user ids and e-mails, lower case
    names: set[str] = field(default_factory=set)  # sign-in and display names, as written

    def identifiers(self) -> list[str]:
        return sorted(self.keys | self.names, key=lambda v: (-len(v), v))


@dataclass
class ErasureReport:
    erasure_id: str
    identifier_kind: str
    tokens: list[str]
    rows_by_table: dict[str, int]
    vacuum_retain_hours: int
    tables_vacuumed: list[str]

    @property
    def rows_total(self) -> int:
        return sum(self.rows_by_table.values())


def identifier_kind(value: str) -> str:
    if re.fullmatch(UUID_PATTERN, value.strip()):
        return "luid"
    if re.fullmatch(r"[^@\s]+@[^@\s]+", value.strip()):
        return "email"
    raise UsageError(f"--user {value!r}: give a user LUID (8-4-4-4-12 hex digits) or an e-mail address")


def token_for(identifier: str, salt: str) -> str:
    """The stable pseudonym of one identifier (case does not matter)."""
    return TOKEN_PREFIX + hashlib.sha256((salt + identifier.lower()).encode("utf-8")).hexdigest()[:12]


# ---- 1. who ---------------------------------------------------------------------------------


def _groups_present(frame: DataFrame, family: str) -> list[dict[str, tuple[str, ...]]]:
    """The catalogue's people of ``family`` with the text columns ``frame`` has (integer user ids are
    site-local numbers: a name-like match on them would hit unrelated values), each group kept when
    it still holds a key or an e-mail."""
    text = {f.name for f in frame.schema.fields if isinstance(f.dataType, StringType)}
    out = []
    for group in catalogue().people[family]:
        kept = {role: tuple(c for c in cols if c in text) for role, cols in group.items()}
        if kept.get(PERSON_KEY) or kept.get(EMAIL):
            out.append({role: cols for role, cols in kept.items() if cols})
    return out


def _on_its_events(family: str, column: str, role: str) -> Column:
    """The column's value where it has ``role`` (a by_event column: only on its event types)."""
    events = catalogue().event_types(family, column, role)
    return F.col(column) if events is None else F.when(F.col("event_type").isin(*events), F.col(column))


def _values_held(frame: DataFrame, family: str, keys: set[str]) -> list[str]:
    """The identity values of the rows of ``frame`` where one of ``keys`` is a person key or an
    e-mail: per catalogue group, the group's values on the rows its own keys match. One pass with one
    projection (a union of one query per group plans the wide table once per group)."""
    matched, held = [], []
    for group in _groups_present(frame, family):
        key_cols = group.get(PERSON_KEY, ()) + group.get(EMAIL, ())
        hit = reduce(Column.__or__, [F.lower(F.col(c)).isin(*keys) for c in key_cols])
        values = F.array(*[_on_its_events(family, c, role) for role, cols in group.items() for c in cols])
        matched.append(hit)
        held.append(F.when(hit, values).otherwise(F.array().cast("array<string>")))  # NULL hit: none
    if not matched:
        return []
    rows = (
        frame.where(reduce(Column.__or__, matched))
        .select(F.explode(F.concat(*held)).alias("v"))
        .where(F.col("v").isNotNull())
        .distinct()
        .collect()
    )
    return [r["v"] for r in rows]


def resolve_person(spark: SparkSession, cfg: Config, user: str) -> Person:
    """The identifiers that belong to the person with this LUID or e-mail (``PersonNotFound`` when
    no identity column of silver, nor a Write-Back user name, holds it)."""
    t = tables(cfg)
    person = Person(identifier_kind(user), keys={user.strip().lower()})
    found = False
    for _round in range(5):  # a LUID leads to an e-mail, which leads to a tenant user id, ...
        before = (len(person.keys), len(person.names))
        for family in FAMILIES:
            if not spark.catalog.tableExists(t.silver_events(family)):
                continue
            with small_tables(spark, cfg, [t.silver_events(family)]):
                values = _values_held(spark.table(t.silver_events(family)), family, person.keys)
            for value in values:
                found = True
                text = value.strip()
                if re.fullmatch(UUID_PATTERN, text) or "@" in text:
                    person.keys.add(text.lower())
                elif text:
                    person.names.add(text)
        if (len(person.keys), len(person.names)) == before:
            break
    if spark.catalog.tableExists(t.writeback_audit):  # Write-Back knows a user by name (often the e-mail)
        wanted = [v.lower() for v in person.identifiers()]
        found = found or spark.table(t.writeback_audit).where(F.lower("username").isin(*wanted)).limit(1).count() > 0
    if not found:
        raise PersonNotFound(f"no user with {person.kind} {user.strip()!r} in {t.silver_schema}: nothing changed")
    return person


# ---- 2. pseudonymise -----------------------------------------------------------------------


def _java_regex(text: str) -> str:
    """``text`` as a literal inside a Java regular expression (backslash before every non-word
    character, which Java reads as that character)."""
    return "".join(ch if ch.isalnum() or ch == "_" else "\\" + ch for ch in text)


def pseudonymise(column: Column, person: Person, tokens: dict[str, str]) -> Column:
    """``column`` (a string) with the person's identifiers replaced by their tokens."""
    out = column
    for value in person.identifiers():
        token = tokens[value]
        if value.lower() in person.keys:  # distinctive: wherever it occurs, any case
            out = F.regexp_replace(out, F.lit("(?i)" + _java_regex(value)), F.lit(token))
        else:  # a name: the whole value, or a JSON string holding it
            # each step reads `out` once: the expression grows with the identifiers, never doubles per
            # name (a person with many names made a plan that filled the driver's heap)
            out = F.regexp_replace(out, F.lit("(?iu)^" + _java_regex(value) + "$"), F.lit(token))
            out = F.regexp_replace(out, F.lit('(?i)"' + _java_regex(value) + '"'), F.lit(f'"{token}"'))
    return out


def _rewrites(frame: DataFrame, person: Person, tokens: dict[str, str]) -> dict[str, Column]:
    """column -> its pseudonymised value, for the text columns (and arrays of text) of ``frame``."""
    out = {}
    for f in frame.schema.fields:
        col = F.col(f"`{f.name}`")
        if isinstance(f.dataType, StringType):
            out[f.name] = pseudonymise(col, person, tokens)
        elif isinstance(f.dataType, ArrayType) and isinstance(f.dataType.elementType, StringType):
            out[f.name] = F.transform(col, lambda x: pseudonymise(x, person, tokens))
    return out


def erasable_tables(spark: SparkSession, cfg: Config) -> list[str]:
    """Every Delta table (views excluded: they hold no data) of the lake's schemas, gold's staging schema
    included, but the erasure log."""
    t = tables(cfg)
    out = []
    for schema in t.table_schemas:
        if spark.catalog.databaseExists(schema):
            out += [f"{schema}.{name}" for name in sorted(table_names(spark, schema, views=False))]
    return [name for name in out if name != t.erasures]


def _pattern(person: Person) -> str:
    """One Java regular expression that finds what ``pseudonymise`` replaces: a key anywhere (any
    case), a name as the whole value or as a JSON string."""
    keys = [_java_regex(v) for v in person.identifiers() if v.lower() in person.keys]
    names = [_java_regex(v) for v in person.identifiers() if v.lower() not in person.keys]
    parts = [f"(?i:{'|'.join(keys)})"] if keys else []
    if names:
        parts += [f"(?iu:^(?:{'|'.join(names)})$)", f'(?i:"(?:{"|".join(names)})")']
    return "|".join(parts)


def _holding(frame: DataFrame, person: Person, tokens: dict[str, str]) -> tuple[Column, dict[str, Column]] | None:
    """(rows holding an identifier, column -> its rewrite) for ``frame``; None: no text column.
    A row holds one when a text column matches the person's pattern: one regular expression per
    column, not the rewrite's chain compared with the value (a wide table's plan stays small)."""
    rewrites = _rewrites(frame, person, tokens)
    if not rewrites:
        return None
    pattern = _pattern(person)
    types = {f.name: f.dataType for f in frame.schema.fields}
    hit = F.lit(False)
    for name in rewrites:
        col = F.col(f"`{name}`")
        hit = hit | (
            col.rlike(pattern) if isinstance(types[name], StringType) else F.exists(col, lambda x: x.rlike(pattern))
        )
    return F.coalesce(hit, F.lit(False)), rewrites


def pseudonymise_table(spark: SparkSession, table: str, person: Person, tokens: dict[str, str]) -> int:
    """Rewrite the rows of ``table`` holding an identifier, in one UPDATE; -> how many rows it
    rewrote, its commit's own count (0: none held one, and Delta made no commit). One pass over the
    table: counting the rows first would read it twice. The commit's note (``COMMIT_NOTE``: the
    erasure's id, which a re-run looks for in the table's history) is the caller's to set: a session
    setting, set once around tables rewritten at once. A table with no data file (a report with no
    finding) holds nobody: its log says so, no UPDATE is planned."""
    files = table_files(spark, table)
    if files is not None and files[0] == 0:
        return 0
    holding = _holding(spark.table(table), person, tokens)
    if not holding:
        return 0
    before = table_version(spark, table)
    DeltaTable.forName(spark, table).update(condition=holding[0], set={f"`{n}`": v for n, v in holding[1].items()})
    if table_version(spark, table) == before:
        return 0
    return _rewritten_rows(latest_commit_info(spark, table, 1)[0])


def _rewritten_rows(commit) -> int:
    return int((commit["operationMetrics"] or {}).get("numUpdatedRows") or 0)


def rows_rewritten_by(spark: SparkSession, table: str, erasure_id: str, since_version: int) -> int | None:
    """The rows the commit of erasure ``erasure_id`` on ``table`` after ``since_version`` rewrote (a
    run killed after that commit, before its count was kept); None: it made no such commit. The
    refresh lock keeps other writers out meanwhile: the commits since are the erasure's."""
    newer = table_version(spark, table) - since_version
    if newer <= 0:
        return None
    for commit in latest_commit_info(spark, table, newer):
        if commit["userMetadata"] == erasure_id:
            return _rewritten_rows(commit)
    return None


# ---- 3. vacuum -------------------------------------------------------------------------------


def vacuum(spark: SparkSession, names: list[str], retain_hours: int, log=print) -> None:
    """``VACUUM`` each table (a few at once) with a retention under Delta's 7-day check, the check
    off meanwhile."""
    before = spark.conf.get(RETENTION_CHECK, "true")
    spark.conf.set(RETENTION_CHECK, "false")

    def one(table: str) -> None:
        spark.sql(f"VACUUM {table} RETAIN {int(retain_hours)} HOURS").collect()
        log(f"erase: {table}: vacuumed")

    try:
        for_each_table(one, names)
    finally:
        spark.conf.set(RETENTION_CHECK, before)


# ---- 4. the readers of bronze ----------------------------------------------------------------


def require_promoted(spark: SparkSession, cfg: Config) -> None:
    """Every bronze row is in silver already: the versions that added unpromoted rows would be
    read again after the erasure rewrote (and the vacuum removed) their files."""
    t = tables(cfg)
    behind = []
    for family in FAMILIES:
        source = t.bronze_raw(family)
        if spark.catalog.tableExists(source) and table_version(spark, source) > last_promoted(spark, t, family):
            behind.append(source)
    if spark.catalog.tableExists(t.writeback_raw) and _writeback_pending(spark, t):
        behind.append(t.writeback_raw)
    if behind:
        raise EraseError(
            f"{', '.join(behind)} hold rows silver has not promoted yet: run "
            "`auditlake refresh --layers silver` first, then erase (nothing changed)"
        )


def _writeback_pending(spark: SparkSession, t: Tables) -> bool:
    if not spark.catalog.tableExists(t.writeback_audit):
        return True
    raw = spark.table(t.writeback_raw)
    ids = spark.table(t.writeback_audit).select(F.col("id").alias("_id"))
    quarantined = spark.table(t.writeback_quarantine).select("bronze_id")
    pending = raw.join(quarantined, "bronze_id", "left_anti").join(
        ids, F.lower(F.trim("ID")) == F.col("_id"), "left_anti"
    )
    return pending.limit(1).count() > 0


def move_silver_past(spark: SparkSession, cfg: Config, erasure_id: str) -> None:
    """Record, per family silver is behind on, a promotion of no rows up to bronze's current version:
    the erasure's commits are updates of rows silver has (promotion would skip them anyway, reading
    appends only), so the next refresh finds nothing new. Only where behind: safe to repeat."""
    t = tables(cfg)
    if not spark.catalog.tableExists(t.silver_batches):
        return
    rows = []
    for family in FAMILIES:
        if spark.catalog.tableExists(t.bronze_raw(family)):
            current = table_version(spark, t.bronze_raw(family))
            if current > last_promoted(spark, t, family):
                rows.append((erasure_id, family, current, 0, 0, 0, 0))
    if rows:
        frame = spark.createDataFrame(
            rows,
            "silver_run_id string, family string, batch_id long, bronze_rows long, "
            "inserted long, duplicates long, quarantined long",
        )
        frame.withColumn("processed_at", F.current_timestamp()).write.format("delta").mode("append").saveAsTable(
            t.silver_batches
        )


# ---- the whole erasure: pending until done ---------------------------------------------------

PENDING = "pending"
DONE = "done"
PENDING_DIR = "erasure_pending"  # beside the stream checkpoints: the state of an erasure not finished


@dataclass
class PendingErasure:
    """What an erasure needs to finish after a crash, written before anything is rewritten.

    It holds the person's identifiers in clear (a re-run cannot resolve them again once silver is
    rewritten), so it lives in a file under the checkpoint folder, not in a Delta table (whose old
    versions and log statistics would keep them), and is deleted when the erasure is done."""

    erasure_id: str
    started_at: str  # ISO 8601, UTC
    requested_by: str
    identifier_kind: str
    keys: list[str]
    names: list[str]
    tokens: dict[str, str]  # identifier -> token
    tables: list[str]  # every table to pseudonymise, in order (bronze, silver, ops, gold)
    rows_by_table: dict[str, int]  # rows rewritten (held an identifier), kept after each table's rewrite
    gold_was_current: bool
    vacuum_retain_hours: int
    seq: int = 0  # the state file's number (each save writes the next one)
    # each table's version before the erasure: where its history is searched for the erasure's commit
    # (none in a state file written before they were kept: its counts were taken before each rewrite)
    versions_before: dict[str, int] = field(default_factory=dict)

    def person(self) -> Person:
        return Person(self.identifier_kind, set(self.keys), set(self.names))

    def report(self) -> ErasureReport:
        touched = {t: n for t, n in self.rows_by_table.items() if n}
        return ErasureReport(
            self.erasure_id,
            self.identifier_kind,
            sorted(set(self.tokens.values())),
            touched,
            self.vacuum_retain_hours,
            list(touched),
        )


def refresh_analyst_copies(spark: SparkSession, cfg: Config, report: ErasureReport, log=print) -> list[str]:
    """The analysts' copies of the marts the erasure rewrote, copied again from them (their LUIDs
    are in clear, their pseudonyms a keyed hash of the values erased); -> those copies, as Delta
    path tables to vacuum. Safe to repeat: a copy already made from a mart's version is not made again."""
    if not cfg.settings.analyst.enabled:
        return []
    gold = tables(cfg).gold_schema + "."
    marts = [name.removeprefix(gold) for name in report.tables_vacuumed if name.startswith(gold)]
    if marts:
        with small_tables(spark, cfg, [gold + mart for mart in marts]):  # what the copies read
            publish_analyst_tables(spark, cfg, log=log)
    location = analyst_tables_location(cfg)
    return [
        f"delta.`{storage.join(location, mart)}`"
        for mart in marts
        if storage.is_dir(spark, storage.join(location, mart))
    ]


def _pending_dir(cfg: Config) -> str:
    return storage.join(cfg.checkpoint_dir, PENDING_DIR)


def load_pending(spark: SparkSession, cfg: Config) -> PendingErasure | None:
    """The erasure begun and not finished, if any: its newest complete state file."""
    folder = _pending_dir(cfg)
    names = sorted(
        (
            n
            for n, is_dir in storage.list_status(spark, folder)
            if not is_dir and n.endswith(".json") and not n.startswith(".")
        ),
        reverse=True,
    )
    for name in names:  # a kill mid-write leaves the newest file cut short: the one before is whole
        try:
            return PendingErasure(**json.loads(storage.read_text(spark, storage.join(folder, name)) or ""))
        except (json.JSONDecodeError, TypeError):
            continue
    return None


def _save_pending(spark: SparkSession, cfg: Config, pending: PendingErasure) -> None:
    """Write the state as a new file, then remove the older ones (never overwrite the last whole one)."""
    folder = _pending_dir(cfg)
    pending.seq += 1
    name = f"{pending.seq:06d}.json"
    storage.write_text(spark, storage.join(folder, name), json.dumps(asdict(pending), sort_keys=True))
    for old, is_dir in storage.list_status(spark, folder):
        if not is_dir and old.endswith(".json") and old < name:
            storage.delete(spark, storage.join(folder, old))


def _clear_pending(spark: SparkSession, cfg: Config) -> None:
    if storage.exists(spark, _pending_dir(cfg)):
        storage.delete(spark, _pending_dir(cfg))


def erase_person(
    spark: SparkSession, cfg: Config, user: str, salt: str, requested_by: str | None = None, log=print
) -> ErasureReport:
    """Pseudonymise the person with LUID or e-mail ``user`` in every table, vacuum, record it.
    An erasure left pending by a crash is finished first; when it was this very person's, that is
    the erasure (a re-run of the same command). The caller holds the refresh lock."""
    finished = finish_pending_erasure(spark, cfg, log=log)
    if finished is not None and user.strip().lower() in finished[1].keys:
        return finished[0]
    return finish_erasure(spark, cfg, begin_erasure(spark, cfg, user, salt, requested_by, log=log), log=log)


def begin_erasure(
    spark: SparkSession, cfg: Config, user: str, salt: str, requested_by: str | None = None, log=print
) -> PendingErasure:
    """Resolve the person and record the erasure as pending (state file, then ``ops.erasures``)
    before any table is rewritten. Nothing changes when it raises."""
    identifier_kind(user)  # a value that is no identifier: say so before reading anything
    erasure_id = f"erase-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
    require_promoted(spark, cfg)
    person = resolve_person(spark, cfg, user)
    tokens = {value: token_for(value, salt) for value in person.identifiers()}
    lake_tables = erasable_tables(spark, cfg)
    pending = PendingErasure(
        erasure_id,
        datetime.now(UTC).isoformat(),
        requested_by or getpass.getuser(),
        person.kind,
        sorted(person.keys),
        sorted(person.names),
        tokens,
        lake_tables,
        {},
        gold_inputs.last_built(spark, cfg) == gold_inputs.current_inputs(spark, cfg),
        int(cfg.settings.erase.vacuum_retain_hours),
        versions_before={name: table_version(spark, name) for name in lake_tables},
    )
    _save_pending(spark, cfg, pending)
    _record_pending(spark, cfg, pending)
    log(
        f"erase {erasure_id}: {len(tokens)} identifiers of the {person.kind} given, "
        f"in {len(person.keys)} keys and {len(person.names)} names; pending in {tables(cfg).erasures}"
    )
    return pending


def finish_pending_erasure(spark: SparkSession, cfg: Config, log=print) -> tuple[ErasureReport, Person] | None:
    """Finish the erasure a crash left pending, if any (``auditlake erase`` and a refresh call this
    first). -> its report and the person, or None when none was pending."""
    pending = load_pending(spark, cfg)
    if pending is None:
        return None
    log(
        f"erase: finishing the pending erasure {pending.erasure_id} (begun {pending.started_at[:19]}Z, "
        f"{len(pending.rows_by_table)} of {len(pending.tables)} tables done)"
    )
    return finish_erasure(spark, cfg, pending, log=log), pending.person()


def _pseudonymise_layer(spark: SparkSession, cfg: Config, pending: PendingErasure, names: list[str], log) -> None:
    """Rewrite one layer's tables, the small ones a few at once (each one's UPDATE is mostly the
    driver's planning, the cores idle meanwhile), the large ones one by one. The state is saved after
    each table's commit, one save at a time; a run killed with commits not yet saved finds each in its
    table's history (rows_rewritten_by)."""
    person, tokens = pending.person(), pending.tokens
    saving = threading.Lock()

    def one(table: str) -> None:
        if not spark.catalog.tableExists(table) or pending.rows_by_table.get(table) == 0:
            return
        rows = pending.rows_by_table.get(table)
        if rows is None:
            before = pending.versions_before.get(table)
            rows = None if before is None else rows_rewritten_by(spark, table, pending.erasure_id, before)
            if rows is None:
                rows = pseudonymise_table(spark, table, person, tokens)
            with saving:
                pending.rows_by_table[table] = rows
                _save_pending(spark, cfg, pending)
        elif rows and table not in pending.versions_before:
            # a state file of a release that counted before each rewrite: the count kept, maybe not
            # the rewrite (rows already rewritten match no more, and Delta makes no commit)
            pseudonymise_table(spark, table, person, tokens)
        log(f"erase: {table}: {rows} rows pseudonymised")

    small, large = small_and_large(spark, cfg, names)
    with small_tables(spark, cfg, small):
        for_each_table(one, small)
    for table in large:
        with small_tables(spark, cfg, [table]):
            one(table)


def finish_erasure(spark: SparkSession, cfg: Config, pending: PendingErasure, log=print) -> ErasureReport:
    """Every step after the resolution, each one safe to repeat: a table rewritten already matches
    no row (no commit), a vacuum again deletes nothing more, silver moves only where behind."""
    person, tokens = pending.person(), pending.tokens
    _record_pending(spark, cfg, pending)  # a kill between the state file and the record: record it now
    with session_conf(spark, {COMMIT_NOTE: pending.erasure_id}):  # every rewrite's commit carries it
        for layer, names in groupby(pending.tables, key=lambda name: name.split(".")[0]):
            log(f"erase: pseudonymising {layer}")
            _pseudonymise_layer(spark, cfg, pending, list(names), log)
    report = pending.report()
    copies = refresh_analyst_copies(spark, cfg, report, log)
    log(
        f"erase: vacuuming {len(report.tables_vacuumed)} tables and {len(copies)} analyst copies "
        f"(retain {report.vacuum_retain_hours} h)"
    )
    vacuumed = [t for t in report.tables_vacuumed if spark.catalog.tableExists(t)] + copies
    with small_tables(spark, cfg, vacuumed):  # a vacuum's jobs read the file listings: one setting for all
        vacuum(spark, vacuumed, report.vacuum_retain_hours, log)
    move_silver_past(spark, cfg, pending.erasure_id)
    if pending.gold_was_current:  # gold got the same rewrite as silver: it still matches what it is built from
        gold_inputs.record_built(spark, cfg, gold_inputs.current_inputs(spark, cfg))
    files = scrub_quality_reports(cfg.quality_dir, person, tokens)
    if files:
        log(f"erase: {files} validation result / Data Docs files under {cfg.quality_dir} rewritten")
    record_done(spark, cfg, report)
    _clear_pending(spark, cfg)  # the identifiers in clear go with it
    log(
        f"erase {pending.erasure_id}: {report.rows_total} rows in {len(report.rows_by_table)} tables pseudonymised; "
        f"recorded in {tables(cfg).erasures}"
    )
    exported = ocsf_exports_note(spark, cfg)
    if exported:
        log(exported)
    return report


def ocsf_exports_note(spark: SparkSession, cfg: Config) -> str | None:
    """`auditlake export ocsf` wrote copies outside the lake (Parquet for Security Lake), which an
    erasure cannot rewrite: say so when there are any (docs/ocsf.md)."""
    table = tables(cfg).ocsf_exports
    if not spark.catalog.tableExists(table):
        return None
    exports, since, places = spark.sql(
        f"SELECT count(DISTINCT export_id), cast(min(exported_at) AS date), concat_ws(', ', collect_set(out_dir)) "
        f"FROM {table}"
    ).first()
    if not exports:
        return None
    return (
        f"erase: not erased: {exports} OCSF exports since {since} to {places} are copies handed to another "
        "system (ops.ocsf_exports); erase the person there too (docs/ocsf.md)"
    )


def scrub_quality_reports(context_dir: Path, person: Person, tokens: dict[str, str]) -> int:
    """GX's stored validation results and Data Docs pages quote a few unexpected values: replace the
    person's identifiers in those files too. -> files rewritten."""
    if not context_dir.is_dir():
        return 0
    patterns = [
        (re.compile(re.escape(v), re.IGNORECASE), tokens[v]) for v in person.identifiers() if v.lower() in person.keys
    ]
    patterns += [
        (re.compile(r'(?i)(?<=["\'>])' + re.escape(v) + r'(?=["\'<])'), tokens[v])
        for v in person.identifiers()
        if v.lower() not in person.keys
    ]
    rewritten = 0
    for path in context_dir.rglob("*"):
        if not path.is_file() or path.suffix not in (".json", ".html"):
            continue
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        new = text
        for pattern, token in patterns:
            new = pattern.sub(token, new)
        if new != text:
            path.write_text(new, encoding="utf-8", errors="surrogateescape")
            rewritten += 1
    return rewritten


def _ensure_erasures_table(spark: SparkSession, cfg: Config) -> str:
    """``ops.erasures``, with ``status`` and ``started_at`` (added to a table made before them; its
    rows, all finished erasures, are marked done)."""
    table = tables(cfg).erasures
    create_table_if_missing(spark, table, ERASURES_SCHEMA)
    present = {f.name for f in spark.table(table).schema.fields}
    if "status" not in present:
        spark.sql(f"ALTER TABLE {table} ADD COLUMNS (status string, started_at timestamp)")
        spark.sql(f"UPDATE {table} SET status = '{DONE}' WHERE status IS NULL")
    return table


def _record_pending(spark: SparkSession, cfg: Config, pending: PendingErasure) -> None:
    """The erasure's row in ``ops.erasures``, status pending: tokens, never a value (once)."""
    table = _ensure_erasures_table(spark, cfg)
    if spark.table(table).where(F.col("erasure_id") == pending.erasure_id).limit(1).count():
        return
    started = datetime.fromisoformat(pending.started_at)
    row = (
        pending.erasure_id,
        None,
        pending.requested_by,
        pending.identifier_kind,
        sorted(set(pending.tokens.values())),
        len(pending.tokens),
        None,
        None,
        pending.vacuum_retain_hours,
        None,
        PENDING,
        started,
    )
    append_rows(spark, cfg, [row], ERASURES_SCHEMA, table)


def record_done(spark: SparkSession, cfg: Config, report: ErasureReport) -> None:
    """The erasure's row: done, with when, the rows per table and the tables vacuumed."""
    table = _ensure_erasures_table(spark, cfg)
    counts = F.create_map(*[F.lit(x) for name, rows in sorted(report.rows_by_table.items()) for x in (name, rows)])
    DeltaTable.forName(spark, table).update(
        condition=(F.col("erasure_id") == report.erasure_id) & (F.col("status") == PENDING),
        set={
            "status": F.lit(DONE),
            "erased_at": F.current_timestamp(),
            "rows_by_table": counts.cast("map<string,bigint>"),
            "rows_total": F.lit(report.rows_total).cast("bigint"),
            "tables_vacuumed": F.lit(len(report.tables_vacuumed)),
        },
    )
