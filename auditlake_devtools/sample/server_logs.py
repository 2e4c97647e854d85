"""A sample Tableau Server log tree: the generator's site events as Tableau Server's Activity Log
files (``<node>/<process>/<process>_<i>-cepp-canonical-events_<n>.log``), for
``pipelines/server_logs`` and its tests.

Several nodes, each with the four process folders; events go to the process that would write
them, in time order, on a node chosen by their site; files rotate after ``rotate_lines`` lines
(renamed to the next number, a new file started at the old name, as a log rotates). Lines come in
the three shapes Tableau writes: the flat event, the emitter's envelope, and Tableau's native JSON
log line with the event as its ``v`` and the server's local time (no offset) as its ``ts`` (some
without the event's own ``eventTime``: their time is ``ts`` in ``zone``).
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import zlib
import zoneinfo
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pipelines.server_logs.discover import PROCESSES

SHAPES = ("flat", "envelope", "native", "native_without_event_time")
# what a native line's other fields hold (Tableau Server's own processes write these)
_NATIVE_KEYS = ("pid", "tid", "sev", "req", "sess", "user", "k")


def process_of(event_type: str) -> str:
    """The process folder an event's file sits in."""
    if event_type in ("background_job", "bridge_job") or "extract" in event_type or "refresh" in event_type:
        return "backgrounder"
    if event_type.startswith("vizql") or event_type in ("view_access", "access_view"):
        return "vizqlserver"
    if "connection" in event_type or "datasource" in event_type:
        return "dataserver"
    return "vizportal"


@dataclass
class ServerLogTree:
    """Appends events to a log tree, rotating files as a server does."""

    root: Path
    nodes: int = 2
    zone: str = "Europe/Berlin"
    rotate_lines: int = 2000
    seed: int = 7
    lines: dict[str, int] = field(default_factory=dict)  # lines per shape written
    _open: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)  # (node, process) -> (number, lines)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.tz = zoneinfo.ZoneInfo(self.zone)
        for node in self.node_names():
            for process in PROCESSES:
                (self.root / node / process).mkdir(parents=True, exist_ok=True)

    def node_names(self) -> list[str]:
        return [f"node{i + 1}" for i in range(self.nodes)]

    def current(self, node: str, process: str) -> Path:
        return self.root / node / process / f"{process}_0-cepp-canonical-events_0.log"

    def _rotated(self, node: str, process: str, number: int) -> Path:
        return self.root / node / process / f"{process}_0-cepp-canonical-events_{number}.log"

    def line(self, record: dict) -> str:
        shape = self.rng.choices(SHAPES, weights=(5, 2, 2, 1))[0]
        self.lines[shape] = self.lines.get(shape, 0) + 1
        if shape == "flat":
            return json.dumps(record, separators=(",", ":"))
        if shape == "envelope":
            return json.dumps({"traceUuid": _uuid(self.rng), "event": record}, separators=(",", ":"))
        when = datetime.fromisoformat(record["eventTime"].replace("Z", "+00:00")).astimezone(self.tz)
        # the event keeps its eventType (no folder names it); one without eventTime has the line's ts only
        event = dict(record) if shape == "native" else {k: v for k, v in record.items() if k != "eventTime"}
        native = {
            "ts": when.replace(tzinfo=None).isoformat(timespec="milliseconds"),
            "pid": 6000 + self.rng.randrange(100),
            "tid": f"{self.rng.randrange(1 << 16):x}",
            "sev": "info",
            "req": "-",
            "sess": "-",
            "site": record.get("siteLuid", "-"),
            "user": "-",
            "k": "cepp-canonical-event",
            "v": event,
        }
        return json.dumps(native, separators=(",", ":"))

    def node_of(self, record: dict) -> str:
        names = self.node_names()
        return names[zlib.crc32(record.get("siteLuid", "").lower().encode()) % len(names)]

    def append(self, records: list[dict]) -> int:
        """Write ``records`` (flat site events) in time order; -> lines written."""
        by_file: dict[tuple[str, str], list[str]] = {}
        for record in sorted(records, key=lambda r: r.get("eventTime", "")):
            key = (self.node_of(record), process_of(record.get("eventType", "")))
            by_file.setdefault(key, []).append(self.line(record))
        for (node, process), lines in sorted(by_file.items()):
            for text in lines:
                number, count = self._open.get((node, process), (0, 0))
                if count >= self.rotate_lines:
                    self.rotate(node, process)
                    number, count = self._open[(node, process)]
                with open(self.current(node, process), "a", encoding="utf-8") as f:
                    f.write(text + "\n")
                self._open[(node, process)] = (number, count + 1)
        return sum(len(v) for v in by_file.values())

    def rotate(self, node: str, process: str) -> Path:
        """The current file renamed to the next free number; the next line starts a new file."""
        number = self._open.get((node, process), (0, 0))[0] + 1
        while self._rotated(node, process, number).exists():
            number += 1
        target = self._rotated(node, process, number)
        if self.current(node, process).exists():
            os.replace(self.current(node, process), target)
        self._open[(node, process)] = (number, 0)
        return target


def _uuid(rng: random.Random) -> str:
    import uuid

    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def generated_site_events(events: int, seed: int, start: datetime, days: int) -> list[dict]:
    """The generator's clean site events (every record a flat object with its eventType)."""
    from auditlake_devtools.sample.activity_log import generate_activity_log

    with tempfile.TemporaryDirectory(prefix="server-logs-") as tmp:
        generate_activity_log(Path(tmp), events, seed=seed, start=start, days=days, layout="auditlake")
        records = []
        for path in sorted(Path(tmp, "site").rglob("*")):
            if path.is_file():
                records += _records_of(path)
    return records


def _records_of(path: Path) -> list[dict]:
    import gzip

    opener = gzip.open if path.name.endswith(".gz") else open
    out = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if "event" in record and isinstance(record["event"], dict):  # the emitter's envelope
                record = {**record["event"], "eventType": record["event"].get("eventType") or _folder_type(path)}
            record.setdefault("eventType", _folder_type(path))
            out.append(record)
    return out


def _folder_type(path: Path) -> str:
    return next((p.split("=", 1)[1] for p in path.parts if p.startswith("eventType=")), "")


def write_server_log_tree(
    out: Path, events: int, seed: int, start: datetime, days: int, nodes: int, zone: str, rotate_lines: int
) -> ServerLogTree:
    """A log tree of ``events`` generated site events under ``out``."""
    tree = ServerLogTree(out, nodes=nodes, zone=zone, rotate_lines=rotate_lines, seed=seed)
    tree.append(generated_site_events(events, seed, start, days))
    return tree
