"""Who is erased: the person resolved from a LUID or e-mail to every identifier silver holds for them,
and the token each identifier becomes."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from pipelines.activity_log import FAMILIES
from pipelines.config.load import Config
from pipelines.errors import InputError, UsageError
from pipelines.lake.sql_text import UUID_PATTERN
from pipelines.lake.table_names import tables
from pipelines.personal_data import EMAIL, PERSON_KEY, catalogue
from pipelines.runtime.spark_session import small_tables

TOKEN_PREFIX = "erased:"


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


def identifier_kind(value: str) -> str:
    if re.fullmatch(UUID_PATTERN, value.strip()):
        return "luid"
    if re.fullmatch(r"[^@\s]+@[^@\s]+", value.strip()):
        return "email"
    raise UsageError(f"--user {value!r}: give a user LUID (8-4-4-4-12 hex digits) or an e-mail address")


def token_for(identifier: str, salt: str) -> str:
    """The stable pseudonym of one identifier (case does not matter)."""
    return TOKEN_PREFIX + hashlib.sha256((salt + identifier.lower()).encode("utf-8")).hexdigest()[:12]


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
