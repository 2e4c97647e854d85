"""How far each Tableau Server log file has been copied into the landing tree, by its identity.

A file's identity is the SHA-256 of its first complete line: a rotated file (renamed, or gathered
into a ``ziplogs`` archive) keeps it, a new file at an old name gets another, and a node's archive
beside its live folder is the same file twice, copied once. Two different files can begin with the
same line (a header): each identity also keeps the hashes of its first lines (its head), and a
file whose head differs from the known one's, as far as both go, is another file, its identity drawn
from the first line and its head up to the line that differs.
Beside the offset, the hash of the bytes just before it: a file whose content there differs was
replaced, not grown.

The state is a small JSON file beside the checkpoints, written after the pieces it covers, and only
when it changed (its time is part of what tells a refresh with nothing new). A run killed between
the two left pieces the state does not know: their names carry the identity and the byte range, so
``adopt`` reads them back (from the day before the state was last written: the days are UTC, as the
pieces' folders). Notes for the ledger (a file vanished, replaced, unreadable) wait in the state
until bronze has recorded them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from pipelines.lake import storage
from pipelines.lake.state_files import write_json_whole

STATE_FILE = "server_logs.json"
STATE_VERSION = 2
TAIL_BYTES = 4096  # how much of what was copied is compared before copying more
# how much of a file's start tells two files with the same first line apart: its first lines, up to
HEAD_LINES = 8
HEAD_BYTES = 4096
# <file name>.<identity>.<start>-<end>.log, the piece's name (its bytes [start, end) of that file)
PIECE_NAME = re.compile(r"^(?P<name>.+)\.(?P<identity>[0-9a-f]{16})\.(?P<start>\d{12})-(?P<end>\d{12})\.log$")


def identity_of(first_line: bytes) -> str:
    return hashlib.sha256(first_line).hexdigest()[:16]


def other_identity(identity: str, head_hash: str) -> str:
    """The identity of a file whose first line is another's but whose head is not (``head_hash``: its
    head's digest up to the first line that differs)."""
    return identity_of(identity.encode() + b"\0" + head_hash.encode())


def head_hashes(data: bytes) -> list[str]:
    """The digests of ``data`` up to the end of each of its first lines (within the head's limits)."""
    out, at = [], 0
    while len(out) < HEAD_LINES:
        end = data.find(b"\n", at, HEAD_BYTES)
        if end < 0:
            break
        out.append(digest(data[: end + 1]))
        at = end + 1
    return out


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def piece_name(name: str, identity: str, start: int, end: int) -> str:
    return f"{name}.{identity}.{start:012d}-{end:012d}.log"


@dataclass
class Copied:
    """One file's copy so far."""

    end: int  # bytes [0, end) are in pieces
    tail: str  # digest of the bytes [end - tail_len, end)
    tail_len: int
    node: str
    location: str  # where it was last found
    size: int  # the bytes seen then (the copied ones and a partial last line)
    mtime_ms: int = 0
    head: list[str] = field(default_factory=list)  # head_hashes of its first piece
    closed: bool = False  # not found under a readable root: not looked for again
    replaced: str = ""  # the location last reported replaced (reported once)


@dataclass
class Offsets:
    logs: dict[str, Copied] = field(default_factory=dict)
    saved_day: date | None = None
    pending: list[dict] = field(default_factory=list)  # notes for bronze's ledger, not yet recorded
    said: list[str] = field(default_factory=list)  # the notes made (each once)
    text: str = ""  # the state as read: an unchanged state is not written again

    def as_json(self, today: date) -> dict:
        return {
            "version": STATE_VERSION,
            "saved_day": today.isoformat(),
            "logs": {k: dataclasses.asdict(v) for k, v in sorted(self.logs.items())},
            "pending": self.pending,
            "said": self.said,
        }


def _location(checkpoint_dir: str) -> str:
    return storage.join(checkpoint_dir, STATE_FILE)


def load(spark, checkpoint_dir: str) -> Offsets:
    where = _location(checkpoint_dir)
    local = storage.local_path(where)
    if local is not None:
        text = Path(local).read_text(encoding="utf-8") if os.path.exists(local) else None
    else:
        text = storage.read_text(spark, where)
    if not text:
        return Offsets()
    data = json.loads(text)
    if data.get("version") not in (1, STATE_VERSION):
        raise ValueError(f"{where}: a server logs state of version {data.get('version')}, not {STATE_VERSION}")
    return Offsets(
        {k: Copied(**v) for k, v in data.get("logs", {}).items()},
        date.fromisoformat(data["saved_day"]) if data.get("saved_day") else None,
        list(data.get("pending", [])),
        list(data.get("said", [])),
        text,
    )


def save(spark, checkpoint_dir: str, offsets: Offsets, today: date) -> None:
    """Written whole, and only when something but the day changed."""
    if offsets.text:
        before = json.loads(offsets.text)
        if {**before, "saved_day": None} == {**offsets.as_json(today), "saved_day": None}:
            return
    value = offsets.as_json(today)
    where = _location(checkpoint_dir)
    local = storage.local_path(where)
    if local is not None:
        write_json_whole(Path(local), value)
    else:
        storage.write_text(spark, where, json.dumps(value, sort_keys=True))
    offsets.text = json.dumps(value, sort_keys=True)


def adopt_from(offsets: Offsets) -> date | None:
    """The first date folder a killed run's pieces can be in (None: every folder)."""
    return offsets.saved_day - timedelta(days=1) if offsets.saved_day else None


def adopt(
    offsets: Offsets, pieces: list[tuple[str, str, int]], read: Callable[[str], bytes]
) -> tuple[list[str], list[str]]:
    """Take in the pieces a killed run wrote after the state: ``pieces`` are (piece name, its
    location, size); ``read(location)`` -> its bytes. -> (pieces taken, pieces cut short: their size
    is not their range's, to be written again)."""
    taken, short = [], []
    for name, where, size in sorted(pieces, key=lambda p: _start_of(p[0])):
        m = PIECE_NAME.match(name)
        if not m:
            continue
        identity, start, end = m["identity"], int(m["start"]), int(m["end"])
        known = offsets.logs.get(identity)
        if end <= (known.end if known else 0) or start != (known.end if known else 0):
            continue
        if size != end - start:
            short.append(where)
            continue
        data = read(where)
        copied = known or Copied(0, "", 0, "", "", 0)
        tail = data[-TAIL_BYTES:]
        copied.end, copied.tail, copied.tail_len = end, digest(tail), len(tail)
        if start == 0:
            copied.head = head_hashes(data)
        copied.size = max(copied.size, end)
        offsets.logs[identity] = copied
        taken.append(where)
    return taken, short


def _start_of(name: str) -> int:
    m = PIECE_NAME.match(name)
    return int(m["start"]) if m else -1
