"""The personal-data catalogue (``catalogue.yaml`` beside this module): for every silver column of
each source, its one role (a person's key, e-mail, name, network trace, raw text, or nothing
personal), and which columns of a row describe the same person.

Everything that treats personal data reads it here: dbt staging's column ``meta`` (generated), the
analysts' masked tables (pipelines/analyst), erase's identity groups (pipelines/personal_data/erase/) and the
tests. Nothing finds personal columns by matching parts of their names.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from pipelines.errors import ConfigError

CATALOGUE_PATH = Path(__file__).with_name("catalogue.yaml")
SOURCES = ("site", "tenant", "writeback")  # silver's site_events, tenant_events, writeback_audit
PERSON_KEY, EMAIL, PERSON_NAME, NETWORK, RAW, NONE = "person_key", "email", "person_name", "network", "raw", "none"
ROLES = (PERSON_KEY, EMAIL, PERSON_NAME, NETWORK, RAW, NONE)
PERSONAL_ROLES = ROLES[:-1]
# Read as keyed pseudonyms by analysts. A person_key too: anyone who can call Tableau's REST API maps a
# LUID back to its person; its pseudonym is the same in every table, so it still joins.
MASKED_ROLES = (PERSON_KEY, EMAIL, PERSON_NAME, NETWORK, RAW)
# dbt column meta naming a mart or staging column's role: meta: {personal: <role>}
META_KEY = "personal"


class CatalogueError(ConfigError):
    """The catalogue file is not what this module reads (a column twice, a role unknown, ...)."""


@dataclass(frozen=True)
class Catalogue:
    roles: dict[str, dict[str, str]]  # source -> column -> role
    people: dict[str, tuple[dict[str, tuple[str, ...]], ...]]  # source -> groups of role -> columns
    # source -> column -> role -> the event types on which the column has that role instead of its own
    by_event: dict[str, dict[str, dict[str, tuple[str, ...]]]]

    def role(self, source: str, column: str) -> str | None:
        """The column's own role; None for a column the catalogue does not list."""
        return self.roles[source].get(column)

    def event_types(self, source: str, column: str, role: str) -> tuple[str, ...] | None:
        """The event types on which ``column`` has ``role`` when that depends on the event type
        (``by_event``); None when the column has it on every event (or never)."""
        return self.by_event[source].get(column, {}).get(role)

    def columns(self, source: str, *roles: str) -> tuple[str, ...]:
        return tuple(c for c, r in self.roles[source].items() if r in roles)


def _parse(raw: dict) -> Catalogue:
    if set(raw) != set(SOURCES):
        raise CatalogueError(f"{CATALOGUE_PATH.name}: sources must be {', '.join(SOURCES)}, found {', '.join(raw)}")
    roles: dict[str, dict[str, str]] = {}
    people: dict[str, tuple[dict[str, tuple[str, ...]], ...]] = {}
    by_event: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {}
    for source, entry in raw.items():
        unknown = set(entry) - set(ROLES) - {"people", "by_event"}
        if unknown:
            raise CatalogueError(f"{CATALOGUE_PATH.name}: {source}: unknown roles {sorted(unknown)}")
        roles[source] = {}
        for role in ROLES:
            for column in entry.get(role) or []:
                if column in roles[source]:
                    raise CatalogueError(
                        f"{CATALOGUE_PATH.name}: {source}.{column} has two roles: {roles[source][column]} and {role}"
                    )
                roles[source][column] = role
        by_event[source] = {
            column: {role: tuple(events) for role, events in per_role.items()}
            for column, per_role in (entry.get("by_event") or {}).items()
        }
        for column, per_role in by_event[source].items():
            if column not in roles[source] or not set(per_role) <= set(PERSONAL_ROLES):
                raise CatalogueError(
                    f"{CATALOGUE_PATH.name}: {source}: by_event {column}: not a listed column, "
                    f"or a role that is not personal ({sorted(per_role)})"
                )
        groups = []
        for group in entry.get("people") or []:
            cols = {role: tuple(group[role]) for role in PERSONAL_ROLES if group.get(role)}
            wrong = [
                c
                for role, cs in cols.items()
                for c in cs
                if roles[source].get(c) != role and role not in by_event[source].get(c, {})
            ]
            if wrong:
                raise CatalogueError(
                    f"{CATALOGUE_PATH.name}: {source}: people group {group.get('who')!r} lists "
                    f"{wrong} under a role they do not have"
                )
            groups.append(cols)
        people[source] = tuple(groups)
    return Catalogue(roles, people, by_event)


@cache
def catalogue() -> Catalogue:
    """The catalogue, checked (``CatalogueError`` names the line's problem)."""
    return _parse(yaml.safe_load(CATALOGUE_PATH.read_text(encoding="utf-8")))


def column_meta(source: str, column: str) -> dict[str, str]:
    """dbt ``meta`` for a staging column read straight from silver: ``{personal: <role>}`` for a
    personal one, nothing otherwise."""
    role = catalogue().role(source, column)
    return {META_KEY: role} if role in PERSONAL_ROLES else {}
