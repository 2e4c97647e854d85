"""The event registry: every documented event type and its typed attributes.

The data lives in ``event_registry.json`` beside this module, generated from the
Tableau references by ``pipelines.activity_log.registry.build`` and committed. Nothing here
reads the references at run time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pipelines.activity_log import FAMILIES

REGISTRY_PATH = Path(__file__).with_name("event_registry.json")


@dataclass(frozen=True)
class AttributeSpec:
    name: str
    spark_type: str
    description: str
    editions: tuple[str, ...]
    codes: tuple[tuple[int, str], ...] = ()  # documented code -> meaning, where the reference spells it out
    column: str | None = None  # a silver column of its own (an added attribute whose type differs from the references')
    legacy_codes: tuple[tuple[int, str], ...] = ()  # the legacy edition's own list, where its codes differ
    values: tuple[str, ...] = ()  # the values documented for it, where a source lists them (eventOutcome)


@dataclass(frozen=True)
class EventSpec:
    family: str
    event_type: str
    description: str
    editions: tuple[str, ...]
    deprecated: bool
    replaced_by: str | None
    aliases: tuple[str, ...]
    attributes: tuple[AttributeSpec, ...]
    legacy_common: tuple[str, ...] = ()  # family common attributes the legacy edition documents here


def _attrs(raw: list[dict]) -> tuple[AttributeSpec, ...]:
    return tuple(
        AttributeSpec(
            a["name"],
            a["spark_type"],
            a["description"],
            tuple(a["editions"]),
            tuple((int(k), v) for k, v in a.get("codes", {}).items()),
            a.get("column"),
            tuple((int(k), v) for k, v in a.get("codes_by_edition", {}).get("legacy", {}).items()),
            tuple(a.get("values", ())),
        )
        for a in raw
    )


@lru_cache(maxsize=1)
def load_registry(path: Path = REGISTRY_PATH) -> dict:
    """The registry as stored (plain dict, JSON-shaped)."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def common_attributes(family: str) -> tuple[AttributeSpec, ...]:
    """Attributes every event of ``family`` carries (recorded once per family)."""
    return _attrs(load_registry()["families"][family]["common_attributes"])


def event_specs(family: str | None = None) -> list[EventSpec]:
    """Every event type, optionally of one family, sorted by family then name."""
    out = []
    for fam in FAMILIES if family is None else (family,):
        for name, ev in load_registry()["families"][fam]["events"].items():
            out.append(
                EventSpec(
                    family=fam,
                    event_type=name,
                    description=ev["description"],
                    editions=tuple(ev["editions"]),
                    deprecated=ev["deprecated"],
                    replaced_by=ev["replaced_by"],
                    aliases=tuple(ev["aliases"]),
                    attributes=_attrs(ev["attributes"]),
                    legacy_common=tuple(ev.get("legacy_common", ())),
                )
            )
    return out


def event_spec(family: str, event_type: str) -> EventSpec:
    """One event type; raises KeyError naming the family and type if unknown."""
    for spec in event_specs(family):
        if spec.event_type == event_type or event_type in spec.aliases:
            return spec
    raise KeyError(f"unknown {family} event type: {event_type}")


def summary_lines(registry: dict) -> list[str]:
    """A line per family: its event types, how many the legacy edition has too, its common
    attributes and its deprecated types (``auditlake registry``)."""
    lines = []
    for family, fam in registry["families"].items():
        events = fam["events"]
        legacy = sum("legacy" in e["editions"] for e in events.values())
        deprecated = sorted(n for n, e in events.items() if e["deprecated"])
        lines.append(
            f"{family}: {len(events)} event types ({legacy} also in the legacy edition), "
            f"{len(fam['common_attributes'])} common attributes, deprecated: {', '.join(deprecated) or 'none'}"
        )
    return lines
