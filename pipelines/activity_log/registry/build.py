"""Build the event registry from the Tableau reference texts.

Run ``python -m pipelines.activity_log.registry.build --reference ../shared/reference`` (or
``make registry``). It writes ``pipelines/activity_log/registry/event_registry.json``, which is
committed: the product reads that file and never needs the references at run time.

The references come in two layouts:
- current editions (site EN/ES, tenant): ``name | type | description |`` tables,
  cells that wrap onto following lines, an event heading line followed by
  "The <name> event is logged when ..." (or "The legacy ... from historical_events").
- the legacy site edition: space-separated ``name type description`` rows.
Quirks handled here are listed in ``normalise_type`` and ``_fix_nameless_row``.

A second, smaller source sits beside this module: ``live_feed_additions.yaml``, what the live feed
carries beyond the references (``merge_additions``; its entries get the edition ``live_feed``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from pipelines.activity_log.registry import REGISTRY_PATH

ADDITIONS_PATH = Path(__file__).with_name("live_feed_additions.yaml")
LIVE_FEED = "live_feed"  # the edition of everything the additions add

SOURCES = {
    "site_current": "activity-log-site-events.en.txt",
    "site_legacy": "activity-log-site-events.legacy.en.txt",
    "tenant_current": "activity-log-tenant-events.en.txt",
    "site_current_es": "activity-log-site-events.es.txt",
}

# Documented type word -> Spark SQL type. Anything else (typos such as "sring",
# descriptions that slipped into the type column) is a string: a string is a string.
# Every integer is 64-bit: the references call byte sizes, ids and counts "integer" that exceed 32
# bits (a 3 GB data source's ``size``), and the same attribute is "long" on other events.
_TYPE_MAP = {
    "integer": "bigint",
    "int": "bigint",
    "entero": "bigint",
    "long": "bigint",
    "bool": "boolean",
    "boolean": "boolean",
    "booleano": "boolean",
    "float": "double",
    "double": "double",
    # only the live-feed additions use it (the references document times as strings)
    "timestamp": "timestamp",
}
_TYPE_WORDS = set(_TYPE_MAP) | {"string", "sring", "cadena"}
# When editions disagree, the wider type wins so no documented value is lost.
_TYPE_WIDTH = {"boolean": 0, "int": 1, "bigint": 2, "double": 3, "timestamp": 4, "string": 5}

_HEADER_RE = re.compile(r"^(Attribute Name|Nombre del atributo) \| (Type|Tipo) \| (Description|Descripción) \|$")
_EVENT_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_LEGACY_ROW_RE = re.compile(r"^([a-z][A-Za-z0-9_]*) (string|integer|long|bool|boolean|float) ?(.*)$")
_ONLY_COMMON_RE = re.compile(r"only uses common attributes|solo usa atributos comunes", re.I)
_CODES_RE = re.compile(r"The value (.*?)\.(?:\s|$)")
_CODE_PAIR_RE = re.compile(r"(\d+) = ([^,]+?)(?=,|$| and \d)")
_DEPRECATED_RE = re.compile(r"\bDeprecated\b[^.]*\.(?:\s*Use the (\w+) event instead\.)?", re.I)


def normalise_type(documented: str) -> str:
    """Map a documented type cell to a Spark SQL type name."""
    return _TYPE_MAP.get(documented.strip().lower(), "string")


def _wider(a: str, b: str) -> str:
    return a if _TYPE_WIDTH[a] >= _TYPE_WIDTH[b] else b


@dataclass
class Attribute:
    name: str
    documented_type: str
    description: str
    note: str | None = None

    @property
    def spark_type(self) -> str:
        return normalise_type(self.documented_type)


@dataclass
class EventTable:
    name: str
    intro: list[str] = field(default_factory=list)
    attributes: list[Attribute] = field(default_factory=list)

    @property
    def description(self) -> str:
        return " ".join(" ".join(self.intro).split())


def _cells(line: str) -> list[str]:
    parts = [p.strip() for p in line.split("|")]
    if parts and parts[-1] == "":
        parts = parts[:-1]
    return parts


def _fix_nameless_row(cells: list[str]) -> Attribute | None:
    """A row like ``string | Email address of the user | |`` lost its name.

    The attribute name was a link in the source page and got stripped; the
    description tells what it was (``email``). Only that shape is repaired.
    """
    if len(cells) >= 2 and cells[0].lower() in _TYPE_WORDS and cells[1].lower() not in _TYPE_WORDS:
        first_word = cells[1].split()[0].lower() if cells[1] else ""
        if first_word in {"email", "dirección"}:
            return Attribute("email", cells[0], cells[1], note="name missing in reference; inferred from description")
    return None


def _starts_event_table(lines: list[str], i: int) -> bool:
    """An event heading is a bare name followed by its intro and, soon after, a table header."""
    window = [ln.strip() for ln in lines[i + 1 : i + 6]]
    return bool(window) and any(_HEADER_RE.match(ln) for ln in window[1:]) and not _HEADER_RE.match(window[0])


def parse_pipe_tables(text: str) -> tuple[list[Attribute], list[EventTable]]:
    """Parse a current-edition reference: common attributes, then one table per event."""
    lines = [ln.rstrip() for ln in text.splitlines()]
    common: list[Attribute] = []
    events: list[EventTable] = []
    current_attrs: list[Attribute] | None = None
    current_event: EventTable | None = None
    in_table = False
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if _EVENT_NAME_RE.match(line) and _starts_event_table(lines, i):
            current_event = EventTable(line)
            events.append(current_event)
            current_attrs = current_event.attributes
            in_table = False
        elif _HEADER_RE.match(line):
            if current_event is None:
                current_attrs = common
            in_table = True
            i += 1  # the ---|---|---| separator
        elif in_table and line:
            cells = _cells(line)
            fixed = _fix_nameless_row(cells)
            if fixed is not None:
                current_attrs.append(fixed)
            elif _ONLY_COMMON_RE.search(line):
                pass
            elif len(cells) >= 2 and re.match(r"^[A-Za-z][A-Za-z0-9_]*$", cells[0]) and "|" in line:
                desc = cells[2] if len(cells) > 2 else ""
                current_attrs.append(Attribute(cells[0], cells[1], desc))
            elif current_attrs:
                # A wrapped cell: the description continues on its own line.
                text_part = line.rstrip("|").strip()
                last = current_attrs[-1]
                last.description = (last.description + " " + text_part).strip()
        elif current_event is not None and not in_table and line:
            current_event.intro.append(line)
        i += 1
    return common, events


def parse_legacy(text: str) -> list[EventTable]:
    """Parse the legacy site edition (space separated, blank-line separated)."""
    lines = [ln.strip() for ln in text.splitlines()]
    events: list[EventTable] = []
    current: EventTable | None = None
    in_table = False
    for idx, line in enumerate(lines):
        if not line:
            continue
        following = next((ln for ln in lines[idx + 1 :] if ln), "")
        if _EVENT_NAME_RE.match(line) and following.startswith("The "):
            current = EventTable(line)
            events.append(current)
            in_table = False
        elif line.startswith("Attribute Name Type Description"):
            in_table = True
        elif current is not None and in_table:
            m = _LEGACY_ROW_RE.match(line)
            if m:
                current.attributes.append(Attribute(m.group(1), m.group(2), m.group(3).strip()))
            elif current.attributes:
                current.attributes[-1].description += " " + line
        elif current is not None:
            current.intro.append(line)
    return events


def parse_codes(description: str) -> dict[str, str] | None:
    """``The value 0 = Active, 1 = Suspended, and 2 = Disabled.`` -> {"0": "Active", ...}."""
    m = _CODES_RE.search(description)
    if not m:
        return None
    pairs = _CODE_PAIR_RE.findall(m.group(1).replace(", and ", ", "))
    return {code: meaning.strip() for code, meaning in pairs} or None


def _attr_dict(attr: Attribute, editions: list[str]) -> dict:
    out = {
        "name": attr.name,
        "spark_type": attr.spark_type,
        "documented_type": attr.documented_type,
        "description": " ".join(attr.description.split()),
        "editions": editions,
    }
    codes = parse_codes(out["description"])
    if codes:
        out["codes"] = codes
    if attr.note:
        out["note"] = attr.note
    return out


def _deprecation(description: str) -> tuple[bool, str | None]:
    m = _DEPRECATED_RE.search(description)
    if not m:
        return False, None
    return True, m.group(1)


def _alias(event: EventTable) -> str | None:
    """The intro sometimes spells the name differently (``batch_revoke_sessions``)."""
    words = event.description.split()
    if (
        len(words) > 1
        and words[0] == "The"
        and _EVENT_NAME_RE.match(words[1])
        and words[1] not in {event.name, "legacy"}
    ):
        return words[1]
    return None


def _same_codes(a: dict | None, b: dict | None) -> bool:
    """Two code lists that differ only in letter case mean the same ("Site Admin", "site admin")."""
    return {k: v.lower() for k, v in (a or {}).items()} == {k: v.lower() for k, v in (b or {}).items()}


def _legacy_codes(known: dict, attr: Attribute) -> None:
    """Record on ``known`` (an attribute dict) the legacy edition's code list where it means other
    things: its siteRoleId 4 is ViewerWithPublish, where the current edition has no 4."""
    codes = parse_codes(" ".join(attr.description.split()))
    if codes and not _same_codes(codes, known.get("codes")):
        known.setdefault("codes_by_edition", {})["legacy"] = codes


def _merge_family(
    common: list[Attribute],
    editions: dict[str, list[EventTable]],
    common_out: list[dict] | None = None,
) -> dict:
    """The family's events from every edition. ``common_out``: the family's common attribute dicts,
    given the legacy edition's own codes where a legacy event documents a common attribute."""
    common_names = {a.name for a in common}
    common_by_name = {a["name"]: a for a in common_out or []}
    merged: dict[str, dict] = {}
    for edition, events in editions.items():
        for ev in events:
            entry = merged.setdefault(
                ev.name,
                {"event_type": ev.name, "description": None, "editions": [], "attributes": {}, "aliases": []},
            )
            entry["editions"].append(edition)
            if entry["description"] is None or edition == "current":
                entry["description"] = ev.description
            alias = _alias(ev)
            if alias and alias not in entry["aliases"]:
                entry["aliases"].append(alias)
            for attr in ev.attributes:
                if attr.name in common_names:  # recorded once, on the family
                    if edition == "legacy":  # what a legacy record of this type carries of them
                        entry.setdefault("legacy_common", []).append(attr.name)
                        if attr.name in common_by_name:
                            _legacy_codes(common_by_name[attr.name], attr)
                    continue
                known = entry["attributes"].get(attr.name)
                if known is None:
                    entry["attributes"][attr.name] = _attr_dict(attr, [edition])
                else:
                    known["editions"].append(edition)
                    if edition == "legacy":
                        _legacy_codes(known, attr)
                    known["spark_type"] = _wider(known["spark_type"], attr.spark_type)
                    if edition == "current":
                        known["description"] = " ".join(attr.description.split())
                        known["documented_type"] = attr.documented_type
    result = {}
    for name in sorted(merged):
        entry = merged[name]
        deprecated, replaced_by = _deprecation(entry["description"])
        entry["deprecated"] = deprecated
        entry["replaced_by"] = replaced_by
        entry["attributes"] = sorted(entry["attributes"].values(), key=lambda a: a["name"])
        result[name] = entry
    return result


def reference_checksums(reference_dir: Path, additions: Path = ADDITIONS_PATH) -> dict[str, str]:
    """SHA-256 of each reference text the registry is built from, by file name, and of the
    live-feed additions."""
    sums = {name: hashlib.sha256((reference_dir / name).read_bytes()).hexdigest() for name in SOURCES.values()}
    sums[additions.name] = hashlib.sha256(additions.read_bytes()).hexdigest()
    return sums


def _snake_case(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def merge_additions(families: dict, additions: dict) -> None:
    """Merge the live-feed additions into the families parsed from the references, in place.

    Added common attributes, event types and attributes get the edition ``live_feed``; an added common
    attribute the references document only on legacy-edition events moves to the family (edition
    ``legacy`` too), listed in those events' ``legacy_common``. An added
    attribute whose type differs from the one the references give that name in the family (bridge_job's
    string ``siteId`` against background_job's integer one) gets a column of its own,
    ``<column>_<spark type>`` (``column`` in the registry): silver's wide column keeps its type."""
    for family, added in additions.items():
        fam = families[family]
        documented: dict[str, set[str]] = {}
        for a in fam["common_attributes"]:
            documented.setdefault(a["name"], set()).add(a["spark_type"])
        for ev in fam["events"].values():
            for a in ev["attributes"]:
                documented.setdefault(a["name"], set()).add(a["spark_type"])

        def attr(raw: dict, documented: dict[str, set[str]] = documented) -> dict:
            out = _attr_dict(Attribute(raw["name"], raw["type"], raw.get("description", "")), [LIVE_FEED])
            if documented.get(out["name"], {out["spark_type"]}) != {out["spark_type"]}:
                out["column"] = f"{_snake_case(out['name'])}_{out['spark_type']}"
            if raw.get("values"):
                out["values"] = list(raw["values"])
            return out

        common_names = {a["name"] for a in fam["common_attributes"]}
        for raw in added.get("common_attributes", []):
            owned = {
                e: next(a for a in ev["attributes"] if a["name"] == raw["name"])
                for e, ev in fam["events"].items()
                if any(a["name"] == raw["name"] for a in ev["attributes"])
            }
            # only the legacy edition documents it, per event (serviceName): it moves to the family, and
            # those events list it among the common attributes their legacy records carry
            current = sorted(e for e, a in owned.items() if a["editions"] != ["legacy"])
            if raw["name"] in common_names or current:
                raise ValueError(
                    f"{family} common attribute {raw['name']} is already documented ({current or 'common'})"
                )
            added_attr = attr(raw)
            if owned:
                added_attr["editions"] = ["legacy", LIVE_FEED]
            for name in owned:
                ev = fam["events"][name]
                ev["attributes"] = [a for a in ev["attributes"] if a["name"] != raw["name"]]
                ev.setdefault("legacy_common", []).append(raw["name"])
            fam["common_attributes"].append(added_attr)
        fam["common_attributes"].sort(key=lambda a: a["name"])
        common_names = {a["name"] for a in fam["common_attributes"]}
        for name, raw in added.get("events", {}).items():
            entry = fam["events"].setdefault(
                name,
                {
                    "event_type": name,
                    "description": " ".join(raw["description"].split()),
                    "editions": [],
                    "attributes": [],
                    "aliases": [],
                    "deprecated": False,
                    "replaced_by": None,
                },
            )
            entry["editions"].append(LIVE_FEED)
            known = {a["name"]: a for a in entry["attributes"]}
            for raw_attr in raw.get("attributes", []):
                if raw_attr["name"] in common_names:
                    continue  # recorded once, on the family
                if raw_attr["name"] in known:
                    known[raw_attr["name"]]["editions"].append(LIVE_FEED)
                else:
                    entry["attributes"].append(attr(raw_attr))
            entry["attributes"].sort(key=lambda a: a["name"])
        fam["events"] = dict(sorted(fam["events"].items()))


def build_registry(reference_dir: Path, additions: Path = ADDITIONS_PATH) -> dict:
    """Parse every reference text under ``reference_dir`` into the registry dict, then merge the
    live-feed additions."""
    read = lambda key: (reference_dir / SOURCES[key]).read_text(encoding="utf-8")  # noqa: E731
    site_common, site_events = parse_pipe_tables(read("site_current"))
    legacy_events = parse_legacy(read("site_legacy"))
    tenant_common, tenant_events = parse_pipe_tables(read("tenant_current"))
    _, es_events = parse_pipe_tables(read("site_current_es"))

    site_common_out = [_attr_dict(a, ["current"]) for a in site_common]
    site = _merge_family(site_common, {"current": site_events, "legacy": legacy_events}, site_common_out)
    tenant = _merge_family(tenant_common, {"current": tenant_events})

    # Spanish edition: descriptions only (names on the wire are never translated).
    es_by_name = {ev.name: ev.description for ev in es_events}
    for name, entry in site.items():
        if name in es_by_name:
            entry["description_es"] = es_by_name[name]

    registry = {
        "registry_version": 1,
        "sources": {**SOURCES, LIVE_FEED: additions.name},
        # what the registry was built from: a test compares these with the references beside the
        # project and the additions, so a changed source cannot pass unnoticed
        "source_sha256": reference_checksums(reference_dir, additions),
        "families": {
            "site": {
                "common_attributes": site_common_out,
                "events": site,
            },
            "tenant": {
                "common_attributes": [_attr_dict(a, ["current"]) for a in tenant_common],
                "events": tenant,
            },
        },
    }
    merge_additions(registry["families"], yaml.safe_load(additions.read_text(encoding="utf-8")))
    return registry


def render(registry: dict) -> str:
    return json.dumps(registry, indent=1, ensure_ascii=False, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, default=Path("../shared/reference"))
    parser.add_argument("--out", type=Path, default=REGISTRY_PATH)
    args = parser.parse_args(argv)
    if not args.reference.is_dir():
        print(f"error: reference folder not found: {args.reference}", file=sys.stderr)
        return 2
    registry = build_registry(args.reference)
    args.out.write_text(render(registry), encoding="utf-8")
    fams = registry["families"]
    print(
        f"wrote {args.out}: site {len(fams['site']['events'])} event types, "
        f"tenant {len(fams['tenant']['events'])} event types"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
