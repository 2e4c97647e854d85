"""What a file under the landing root is, from its path alone (no I/O).

Three layouts share one landing root, in any mix:

- the project's own: ``site/siteLuid=<luid>/y=…/m=…/d=…/h=…/eventType=<type>/part-….json``
  and ``tenant/tenantId=<id>/…``;
- Tableau Cloud Manager's **date-first** layout (the Platform Data API, kept by extractors and
  the S3 replica): ``[pod=<pod>/]siteLuid=<luid>/y=…/m=…/d=…/h=…/eventType=<type>/part-0001.json``;
- the extractor's **schema-first** layout: ``[pod=<pod>/]siteLuid=<luid>/eventType=<type>/y=…/…``;
- the lake's copies of Tableau Server's Activity Log files (``pipelines/server_logs``):
  ``server/node=<node>/tz=<zone>/y=…/m=…/d=…/<process>/<file>.<identity>.<start>-<end>.log``, site
  events all (one Server hosts many sites: each record names its own), dated by when they were copied.

Tenant (Cloud Manager) files carry no ``siteLuid=`` segment: a path with one is a site file, a
partitioned path without one is a tenant file. Entity snapshots (``…/entityType=<entity>/….parquet``,
per site) sit in the same tree: they land in bronze tables of their own (``pipelines/entity_snapshots``).
A file whose path says nothing
(no partition segment at all) is ``unpartitioned``: each record's own fields decide its family.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from pipelines.activity_log import (
    AUDITLAKE,
    DATE_FIRST,
    FAMILIES,
    SCHEMA_FIRST,
    SERVER_LOG,
    SERVER_LOG_FOLDER,
    UNPARTITIONED,
)

# Extensions of Activity Log files (each may also end in .gz); anything else is skipped, counted.
RECORD_EXTENSIONS = (".json", ".txt", ".ndjson", ".jsonl", ".log")
GZIP_SUFFIX = ".gz"

SNAPSHOT_EXTENSION = ".parquet"
_ENTITY_TYPE = re.compile(r"^[a-z][a-z0-9_]*$")  # it names a table: snake_case, as Tableau spells it

# Why a file is not read (ledger status "skipped").
SKIP_ENTITY_SNAPSHOT = "entity_snapshot"
SKIP_HIDDEN = "hidden_file"
SKIP_NOT_ACTIVITY_LOG = "not_activity_log"
SKIP_DETAIL = {
    SKIP_ENTITY_SNAPSHOT: "under entityType=…, but not a site's Parquet snapshot (no siteLuid= folder, another "
    "extension, or an entity type that is not snake_case)",
    SKIP_HIDDEN: "hidden or marker file (name starts with . or _)",
    SKIP_NOT_ACTIVITY_LOG: f"not an Activity Log file (expected {', '.join(RECORD_EXTENSIONS)}, optionally .gz)",
}

_SEGMENT = re.compile(r"^([A-Za-z]+)=(.*)$")


@dataclass(frozen=True)
class PathInfo:
    """What the path of one file says."""

    family: str | None  # site | tenant | None (the records decide)
    layout: str
    event_type: str | None  # the eventType= folder
    path_date: date | None  # y=/m=/d= of the path (when Tableau made the records available)
    skip: str | None = None  # a SKIP_* reason when the file is not read
    entity_type: str | None = None  # the entityType= folder of an entity snapshot (Parquet)
    snapshot_hour: str | None = None  # its y/m/d/h, "YYYY-MM-DD HH:00:00"

    @property
    def readable(self) -> bool:
        return self.skip is None


def _segments(relative: str) -> list[str]:
    return [s for s in relative.replace("\\", "/").split("/") if s]


def _path_date(keys: dict[str, str]) -> date | None:
    try:
        return date(int(keys["y"]), int(keys.get("m", 1)), int(keys.get("d", 1)))
    except (KeyError, ValueError):
        return None


def _snapshot_hour(keys: dict[str, str]) -> str | None:
    day = _path_date(keys)
    try:
        hour = int(keys.get("h", ""))
    except ValueError:
        return None
    return f"{day.isoformat()} {hour:02d}:00:00" if day and 0 <= hour < 24 and "d" in keys else None


def classify(relative: str) -> PathInfo:
    """``relative``: the file's path below the landing root, ``/``-separated."""
    parts = _segments(relative)
    folders, name = parts[:-1], (parts[-1] if parts else "")
    keys: dict[str, str] = {}
    order: list[str] = []
    for segment in folders:
        m = _SEGMENT.match(segment)
        if m:
            keys.setdefault(m.group(1), m.group(2))
            order.append(m.group(1))
    top = folders[0] if folders else None

    if top in FAMILIES:
        family, layout = top, AUDITLAKE
    elif top == SERVER_LOG_FOLDER:
        family, layout = "site", SERVER_LOG
    elif "siteLuid" in keys:
        family = "site"
    elif "tenantId" in keys or "eventType" in keys or "y" in keys:
        family = "tenant"  # a partitioned Tableau path without siteLuid= is a Cloud Manager file
    else:
        family = None
    if top not in FAMILIES and top != SERVER_LOG_FOLDER:
        kind = "eventType" if "eventType" in keys else "entityType"  # a snapshot's folder sits where a type's does
        if kind in keys and "y" in keys:
            layout = SCHEMA_FIRST if order.index(kind) < order.index("y") else DATE_FIRST
        elif keys:
            layout = DATE_FIRST
        else:
            layout = UNPARTITIONED
    info = dict(family=family, layout=layout, event_type=keys.get("eventType") or None, path_date=_path_date(keys))

    if any(p.startswith((".", "_")) for p in parts):
        return PathInfo(**info, skip=SKIP_HIDDEN)
    if "entityType" in keys:
        entity, hour = keys["entityType"], _snapshot_hour(keys)
        if family == "site" and name.lower().endswith(SNAPSHOT_EXTENSION) and _ENTITY_TYPE.match(entity) and hour:
            return PathInfo(**info, entity_type=entity, snapshot_hour=hour)
        return PathInfo(**info, skip=SKIP_ENTITY_SNAPSHOT)
    stem = name[: -len(GZIP_SUFFIX)] if name.lower().endswith(GZIP_SUFFIX) else name
    if not stem.lower().endswith(RECORD_EXTENSIONS):
        return PathInfo(**info, skip=SKIP_NOT_ACTIVITY_LOG)
    return PathInfo(**info)


def named_gzip(path: str) -> bool:
    return path.lower().endswith(GZIP_SUFFIX)


def folder_date_floor(name: str, parents: dict[str, str]) -> tuple[str, date] | None:
    """For a folder named ``y=2026`` / ``m=06`` / ``d=08`` (with its ``parents``' y/m): the last
    day it can hold, so a listing can skip a folder wholly older than a cut-off. None otherwise."""
    m = _SEGMENT.match(name)
    if not m or m.group(1) not in ("y", "m", "d"):
        return None
    key, value = m.groups()
    try:
        if key == "y":
            return key, date(int(value), 12, 31)
        if key == "m" and "y" in parents:
            y, mo = int(parents["y"]), int(value)
            nxt = date(y + (mo == 12), mo % 12 + 1, 1)
            return key, date.fromordinal(nxt.toordinal() - 1)
        if key == "d" and "y" in parents and "m" in parents:
            return key, date(int(parents["y"]), int(parents["m"]), int(value))
    except ValueError:
        return None
    return None
