"""Silver's column plan, derived from the event registry (no per-event code).

Physically each family has one wide Delta table (``silver.site_events``,
``silver.tenant_events``) with a typed column per documented attribute name; each
event type gets a view ``silver.<event_type>`` that selects its own columns, cast
to its documented types. This module turns the registry into those columns.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import cache

from pipelines.activity_log.registry import common_attributes, event_specs

# When one attribute name has different documented types across event types, the
# wide column takes the widest; each view casts back to its event's own type.
_WIDTH = {"boolean": 0, "int": 1, "bigint": 2, "double": 3, "timestamp": 4, "string": 5}
# Site attributes that exist only in the current edition's common set: a record carrying
# none of them, of a type the legacy edition documents, was written under the legacy schema.
CURRENT_ONLY_COMMON = (
    "actorUserLuid",
    "initiatingUserId",
    "initiatingUserLuid",
    "licensingRoleName",
    "siteRoleId",
    "systemAdminLevel",
)
# Columns silver adds itself, in the order an event view shows them around the attributes;
# no attribute may map onto them.
VIEW_HEAD = ("event_id", "event_type", "event_time", "event_date", "record_shape", "edition")
VIEW_TAIL = (
    "envelope_trace_uuid",
    "envelope_event_version",
    "_rescued_data",
    "bronze_id",
    "source_file",
    "bronze_run_id",
    "bronze_ingest_ts",
    "silver_run_id",
    "silver_ingest_ts",
)
RESERVED_COLUMNS = {*VIEW_HEAD, *VIEW_TAIL, "family"}
# LUIDs and UUIDs are case-insensitive and arrive in either case: silver keeps string attributes
# named like identifiers in lower case when their value is UUID-shaped (one UUID, or a comma list of
# them: ``newSiteIds``), so every join and distinct count sees one person. An opaque id of another
# shape (a PAT's ``clientId``) keeps its case.
IDENTIFIER_SUFFIXES = ("Luid", "Uuid", "Guid", "Id", "Ids")
_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
UUID_VALUE_REGEX = f"(?i)^ *{_UUID}( *, *{_UUID})* *$"  # no backslash: it goes into SQL text
# Decoded names the issue asks for; other coded attributes get ``<column>_name``.
DECODED_NAMES = {"siteRoleId": "site_role", "systemAdminLevel": "is_system_admin"}


def snake_case(name: str) -> str:
    """``actorUserLuid`` -> ``actor_user_luid``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def column_name(attribute: str) -> str:
    """The silver column of an attribute. ``eventTime`` becomes the typed ``event_time``; an
    attribute whose name would collide with silver's own columns (the materialized-views events
    document an ``eventType`` attribute such as ``Create``) gets an ``attr_`` prefix."""
    col = snake_case(attribute)
    if attribute != "eventTime" and col in RESERVED_COLUMNS:
        return f"attr_{col}"
    return col


def widest_type(types: set[str]) -> str:
    """One type for values documented with ``types`` (the wide column's; a staging CASE's)."""
    if len(types) > 1 and ("boolean" in types or "timestamp" in types):
        return "string"
    return max(types, key=_WIDTH.__getitem__)


@dataclass(frozen=True)
class ColumnPlan:
    attribute: str  # name on the wire
    column: str  # snake_case column in silver
    physical_type: str  # type of the wide table's column
    common: bool  # a family common attribute (every event type has it)
    types_by_event: tuple[tuple[str, str], ...]  # (event_type, documented spark type); empty for common
    codes: tuple[tuple[int, str], ...] = ()
    legacy_codes: tuple[tuple[int, str], ...] = ()  # where the legacy edition's codes mean other things
    values: tuple[str, ...] = ()  # documented values of a common attribute (the gate warns on others)

    @property
    def identifier(self) -> bool:
        """A LUID / UUID-valued attribute: lower-cased in silver (``IDENTIFIER_SUFFIXES``)."""
        return self.physical_type == "string" and self.attribute.endswith(IDENTIFIER_SUFFIXES)

    def documented_type(self, event_type: str) -> str:
        if self.common:
            return self.physical_type
        return dict(self.types_by_event)[event_type]

    @property
    def event_types(self) -> tuple[str, ...]:
        return tuple(e for e, _ in self.types_by_event)

    @property
    def uniform(self) -> bool:
        """Every event type that has it documents the same type as the wide column."""
        return all(t == self.physical_type for _, t in self.types_by_event)


@dataclass(frozen=True)
class FamilyPlan:
    family: str
    common: tuple[ColumnPlan, ...]
    attributes: tuple[ColumnPlan, ...]  # event-specific, union over event types
    event_types: tuple[str, ...]
    aliases: tuple[tuple[str, str], ...]  # (alias, canonical event type)
    keys_by_event: tuple[tuple[str, tuple[str, ...]], ...]  # event type -> its documented wire names
    legacy_event_types: tuple[str, ...]
    deprecated: tuple[str, ...]
    # legacy event type -> the family common attributes its legacy edition documents (the legacy
    # hist_delete_system_user states siteRoleId): they do not tell a current record from a legacy one
    legacy_common: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def legacy_markers(self, event_type: str) -> tuple[str, ...]:
        """The attributes only a current-edition record of ``event_type`` carries."""
        own = dict(self.legacy_common).get(event_type, ())
        return tuple(a for a in CURRENT_ONLY_COMMON if a not in own)

    @property
    def columns(self) -> tuple[ColumnPlan, ...]:
        return self.common + self.attributes

    def event_columns(self, event_type: str) -> tuple[ColumnPlan, ...]:
        return self.common + tuple(c for c in self.attributes if event_type in c.event_types)


@cache
def family_plan(family: str) -> FamilyPlan:
    specs = event_specs(family)
    common = tuple(
        ColumnPlan(a.name, a.column or column_name(a.name), a.spark_type, True, (), a.codes, a.legacy_codes, a.values)
        for a in common_attributes(family)
    )
    # (wire name, column): an attribute the registry gives a column of its own (the live feed's
    # string siteId beside the references' integer one) is a column apart, read from the same name.
    by_column: dict[tuple[str, str], list[tuple[str, str]]] = {}
    codes: dict[str, tuple] = {}
    legacy_codes: dict[str, tuple] = {}
    for spec in specs:
        for attr in spec.attributes:
            key = (attr.name, attr.column or column_name(attr.name))
            by_column.setdefault(key, []).append((spec.event_type, attr.spark_type))
            if attr.codes:
                codes.setdefault(attr.name, attr.codes)
            if attr.legacy_codes:
                legacy_codes.setdefault(attr.name, attr.legacy_codes)
    attributes = tuple(
        ColumnPlan(
            name,
            column,
            widest_type({t for _, t in pairs}),
            False,
            tuple(sorted(pairs)),
            codes.get(name, ()),
            legacy_codes.get(name, ()),
        )
        for (name, column), pairs in sorted(by_column.items())
    )
    clash = [c.column for c in common + attributes if c.column in RESERVED_COLUMNS and c.attribute != "eventTime"]
    clash += [col for col, n in Counter(c.column for c in common + attributes).items() if n > 1]
    if clash:
        raise ValueError(f"attribute columns clash with silver's own columns or with each other: {clash}")
    common_names = tuple(c.attribute for c in common)
    return FamilyPlan(
        family=family,
        common=common,
        attributes=attributes,
        event_types=tuple(s.event_type for s in specs),
        aliases=tuple(sorted((alias, s.event_type) for s in specs for alias in s.aliases)),
        keys_by_event=tuple(
            (s.event_type, tuple(sorted(set(common_names) | {a.name for a in s.attributes}))) for s in specs
        ),
        legacy_event_types=tuple(s.event_type for s in specs if "legacy" in s.editions),
        deprecated=tuple(s.event_type for s in specs if s.deprecated),
        legacy_common=tuple((s.event_type, s.legacy_common) for s in specs if s.legacy_common),
    )


def wide_field_names(plan: FamilyPlan) -> list[str]:
    """Every wire name silver reads: the family's attributes plus the routing ``eventType`` and
    the envelope's ``traceUuid`` (each once, also where an attribute has that name)."""
    names = ["eventType", "traceUuid"] + [c.attribute for c in plan.columns]
    return list(dict.fromkeys(names))


def wide_schema_ddl(plan: FamilyPlan, extra: tuple[str, ...] = ()) -> str:
    """Every field as a string: values keep their raw text so a failed cast can be rescued."""
    return ", ".join(f"`{n}` string" for n in wide_field_names(plan) + list(extra))
