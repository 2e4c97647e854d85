"""Test helper: a directory the Activity Log generator wrote, read back with json, gzip and pyarrow
(no Spark): its files, lines and records, and its entity snapshots, with what the log says changed
between them."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

# the runs the tests generate: the clean log (tests/conftest.py's clean_log), its dirty twin, the snapshot runs
SEED = 7
EVENTS = 3000
START = datetime(2026, 6, 1, tzinfo=UTC)
LAYOUT = re.compile(
    r"^(?P<family>site|tenant)/(?P<key>siteLuid|tenantId)=(?P<part>[0-9a-f-]{36})"
    r"/y=(?P<y>\d{4})/m=(?P<m>\d{2})/d=(?P<d>\d{2})/h=(?P<h>\d{2})"
    r"/eventType=(?P<et>[a-z0-9_]+)/part-(?P<n>\d{5})\.json(?P<gz>\.gz)?$"
)

SNAP_EVENTS = 600
_HOUR_DIR = r"(?P<hour>y=\d{4}/m=\d\d/d=\d\d/h=\d\d)"
_SITE_DIR = r"siteLuid=(?P<site>[0-9a-f-]{36})"
_ENTITY_DIR = r"entityType=(?P<entity>[a-z_]+)"
_PART = r"part-(?P<n>\d{5})\.parquet$"
SNAPSHOT_PATHS = {  # the contract: entityType= where the Activity Log has eventType=
    "auditlake": re.compile(rf"^site/{_SITE_DIR}/{_HOUR_DIR}/{_ENTITY_DIR}/{_PART}"),
    "date_first": re.compile(rf"^pod=[a-z0-9-]+/{_SITE_DIR}/{_HOUR_DIR}/{_ENTITY_DIR}/{_PART}"),
    "schema_first": re.compile(rf"^pod=[a-z0-9-]+/{_SITE_DIR}/{_ENTITY_DIR}/{_HOUR_DIR}/{_PART}"),
}
_TS = "timestamp[us, tz=UTC]"
_CONTENT_COLUMNS = [
    ("luid", "string"),
    ("id", "int64"),
    ("name", "string"),
    ("project_luid", "string"),
    ("owner_luid", "string"),
    ("size", "int64"),
    ("created_at", _TS),
    ("updated_at", _TS),
]
SNAPSHOT_COLUMNS = {  # written out here, not taken from the generator: gold depends on these names
    "users": [
        ("luid", "string"),
        ("id", "int64"),
        ("name", "string"),
        ("display_name", "string"),
        ("email", "string"),
        ("site_role", "string"),
        ("is_system_admin", "bool"),
        ("created_at", _TS),
    ],
    "groups": [("luid", "string"), ("id", "int64"), ("name", "string"), ("domain_name", "string")],
    "group_members": [("group_luid", "string"), ("user_luid", "string")],
    "workbooks": _CONTENT_COLUMNS,
    "datasources": _CONTENT_COLUMNS,
}
# A story changes the world when it runs, in the hour it starts, and writes its records up to
# 100 minutes later (stories.UNIT_SPAN_US); within an hour, stories run in plan order, not in
# event-time order. So a record is judged by the first snapshot strictly after it (which the
# story's change always precedes), and two records about the same thing closer than this may
# have changed the world in either order.
NEAR = timedelta(hours=3)


def _raw(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def physical_lines(data: bytes) -> int:
    """The lines of ``data`` as a reader counts them: a last line without its newline counts."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def event_type(rec: dict, rel: str | None = None) -> str | None:
    """The record's own type; for an envelope from Tableau's emitter (no metadata), its folder's."""
    if "event" not in rec:
        return rec.get("eventType")
    if "metadata" in rec:
        return rec["metadata"].get("eventType")
    m = re.search(r"eventType=([^/]+)", rel or "")
    return m[1] if m else None


def attributes(rec: dict) -> dict:
    """The record's attributes: an envelope's ``event``, or the flat record itself."""
    return rec["event"] if "event" in rec else rec


def lower_luids(attrs: dict) -> dict:
    """``attrs`` with LUIDs in lower case, as the world holds them (Tableau's emitter writes upper case)."""
    return {k: (v.lower() if isinstance(v, str) and k.endswith("Luid") else v) for k, v in attrs.items()}


def parse_time(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


class Run:
    """A generated directory read back: files, lines and parsed records with their file."""

    def __init__(self, root: Path, summary: dict):
        self.root, self.summary = root, summary
        self.files: dict[str, bytes] = {}
        self.records: list[tuple[str, dict, str]] = []  # (rel, record, raw line)
        self.bad_lines: list[tuple[str, str]] = []
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix != ".parquet":  # entity snapshots: read by Snapshots below
                rel = p.relative_to(root).as_posix()
                raw = _raw(p)
                self.files[rel] = raw
                text = raw.decode("utf-8-sig")
                for line in text.splitlines():
                    if not line.strip():
                        continue
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:
                        self.bad_lines.append((rel, line))
                        continue
                    if isinstance(rec, dict):
                        self.records.append((rel, rec, line))
                    else:
                        self.bad_lines.append((rel, line))

    def of_type(self, et: str):
        return [(rel, r) for rel, r, _ in self.records if event_type(r, rel) == et]


def digest(root: Path) -> dict[str, str]:
    """Each file under ``root`` (relative path) -> the SHA-256 of its bytes."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def folder_hour(folder: str) -> datetime:
    y, m, d, h = (int(part.split("=")[1]) for part in folder.split("/"))
    return datetime(y, m, d, h, tzinfo=UTC)


class Snapshots:
    """The entity snapshots of a generated directory, read back with pyarrow."""

    def __init__(self, root: Path, layout: str = "auditlake"):
        self.tables: dict[tuple[str, datetime, str], pa.Table] = {}  # (site, hour, entity) -> part-00000
        self.others: list[str] = []  # any other part file (the poison one)
        self.inventory: list[str] = []  # the demo's inventory (``auditlake inventory``'s files), read elsewhere
        self._rows: dict[tuple, list[dict]] = {}
        for p in sorted(root.rglob("*.parquet")):
            rel = p.relative_to(root).as_posix()
            if p.name.startswith("inventory-"):
                self.inventory.append(rel)
                continue
            m = SNAPSHOT_PATHS[layout].match(rel)
            assert m, rel
            if m["n"] != "00000":
                self.others.append(rel)
                continue
            key = (m["site"], folder_hour(m["hour"]), m["entity"])
            self.tables[key] = pq.read_table(p)
            self._rows[key] = self.tables[key].to_pylist()
        self.hours = sorted({h for _, h, _ in self.tables})
        self.sites = sorted({s for s, _, _ in self.tables})

    def rows(self, site: str, hour: datetime, entity: str) -> list[dict]:
        return self._rows[(site, hour, entity)]

    def by_luid(self, site: str, hour: datetime, entity: str) -> dict[str, dict]:
        return {r["luid"]: r for r in self.rows(site, hour, entity)}

    def members(self, site: str, hour: datetime) -> set[tuple[str, str]]:
        return {(r["group_luid"], r["user_luid"]) for r in self.rows(site, hour, "group_members")}

    def after(self, t: datetime) -> datetime | None:
        return next((h for h in self.hours if h > t), None)


def site_records(run: Run, et: str):
    """(site, attributes with LUIDs in lower case, event time) of each site record of ``et``."""
    for rel, r in run.of_type(et):
        if rel.startswith("site/"):
            a = lower_luids(attributes(r))
            yield a["siteLuid"], a, parse_time(a["eventTime"])


def deleted_users(run: Run) -> dict[tuple[str, str], datetime]:
    """(site, user) -> when an administrator deleted the user (user_create_delete, operation delete)."""
    return {
        (s, a["targetUserLuid"]): t
        for s, a, t in site_records(run, "user_create_delete")
        if a["userOperation"] == "delete"
    }


def unlogged_changes(run: Run, snaps: Snapshots) -> list[tuple]:
    """Every difference between consecutive snapshots that no Activity Log record explains:
    (site, hour, entity, key, column, before, after). A change between the snapshots at h0 and h1
    is a story's that started in [h0, h1), so its records lie in [h0, h1 + 100 minutes)."""
    said = defaultdict(list)  # (site, what, key) -> event times
    for s, a, t in site_records(run, "hist_update_user_site_role"):
        said[(s, "role", a["userLuid"])].append(t)
    for (s, user), t in deleted_users(run).items():
        said[(s, "gone", user)].append(t)
    for s, a, t in site_records(run, "add_delete_user_to_group"):
        said[(s, "member", (a["groupLuid"], a["userLuid"]))].append(t)
    for s, a, t in site_records(run, "content_owner_change"):
        said[(s, "owner", a["contentLuid"])].append(t)
    for s, a, t in site_records(run, "hist_publish_workbook"):
        said[(s, "updated", a["workbookLuid"])].append(t)
    explains = {
        ("users", "site_role"): "role",
        ("workbooks", "owner_luid"): "owner",
        ("datasources", "owner_luid"): "owner",
        ("workbooks", "updated_at"): "updated",
    }
    out = []
    for site in snaps.sites:
        for h0, h1 in pairwise(snaps.hours):

            def logged(what, key, h0=h0, h1=h1, site=site):
                return any(h0 <= t < h1 + NEAR for t in said[(site, what, key)])

            for entity in ("users", "groups", "workbooks", "datasources"):
                before, after = snaps.by_luid(site, h0, entity), snaps.by_luid(site, h1, entity)
                for luid in before.keys() - after.keys():
                    if not (entity == "users" and logged("gone", luid)):
                        out.append((site, h1, entity, luid, None, "present", "absent"))
                for luid in after.keys() - before.keys():
                    out.append((site, h1, entity, luid, None, "absent", "present"))
                for luid in before.keys() & after.keys():
                    for col, _ in SNAPSHOT_COLUMNS[entity]:
                        x, y = before[luid][col], after[luid][col]
                        if x != y and not logged(explains.get((entity, col)), luid):
                            out.append((site, h1, entity, luid, col, x, y))
            was, now = snaps.members(site, h0), snaps.members(site, h1)
            for pair in was ^ now:
                if not (logged("member", pair) or (pair in was and logged("gone", pair[1]))):
                    out.append((site, h1, "group_members", pair, None, pair in was, pair in now))
    return out
