"""How far each Tableau Server log file has been copied into the landing tree, by its identity.

A file's identity is the SHA-256 of its first complete line: a rotated file (renamed, or gathered
into a ``ziplogs`` archive) keeps it, a new file at an old name gets another, and a node's archive
beside its live folder is the same file twice, copied once. Beside the offset, the hash of the
bytes just before it: a file whose content there differs was replaced, not grown.

The state is a small JSON file beside the checkpoints, written after the pieces it covers. A run
killed between the two left pieces the state does not know: their names carry the identity and
the byte range, so ``adopt`` reads them back (from the day the state was last written on).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from pipelines.lake import storage
from pipelines.lake.state_files import write_json_whole

STATE_FILE = "server_logs.json"
STATE_VERSION = 1
TAIL_BYTES = 4096  # how much of what was copied is compared before copying more
# <file name>.<identity>.<start>-<end>.log, the piece's name (its bytes [start, end) of that file)
PIECE_NAME = re.compile(r"^(?P<name>.+)\.(?P<identity>[0-9a-f]{16})\.(?P<start>\d{12})-(?P<end>\d{12})\.log$")


def identity_of(first_line: bytes) -> str:
    return hashlib.sha256(first_line).hexdigest()[:16]


def tail_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def piece_name(name: str, identity: str, start: int, end: int) -> str:
    return f"{name}.{identity}.{start:012d}-{end:012d}.log"


@dataclass
class Copied:
    """One file's copy so far."""

    end: int  # bytes [0, end) are in pieces
    tail: str  # tail_hash of the bytes [end - tail_len, end)
    tail_len: int
    node: str
    location: str  # where it was last found
    size: int  # its size then
    closed: bool = False  # reported gone: not looked for again
    replaced: str = ""  # the version of it last reported replaced (reported once)

    def as_json(self) -> dict:
        return self.__dict__.copy()


@dataclass
class Offsets:
    logs: dict[str, Copied] = field(default_factory=dict)
    saved_day: date | None = None

    def as_json(self) -> dict:
        return {
            "version": STATE_VERSION,
            "saved_day": date.today().isoformat(),
            "logs": {k: v.as_json() for k, v in sorted(self.logs.items())},
        }


def _location(checkpoint_dir: str) -> str:
    return storage.join(checkpoint_dir, STATE_FILE)


def load(spark, checkpoint_dir: str) -> Offsets:
    where = _location(checkpoint_dir)
    local = storage.local_path(where)
    if local is not None:
        text = open(local, encoding="utf-8").read() if os.path.exists(local) else None
    else:
        text = storage.read_text(spark, where)
    if not text:
        return Offsets()
    data = json.loads(text)
    return Offsets(
        {k: Copied(**v) for k, v in data.get("logs", {}).items()},
        date.fromisoformat(data["saved_day"]) if data.get("saved_day") else None,
    )


def save(spark, checkpoint_dir: str, offsets: Offsets) -> None:
    where = _location(checkpoint_dir)
    local = storage.local_path(where)
    if local is not None:
        from pathlib import Path

        write_json_whole(Path(local), offsets.as_json())
    else:
        storage.write_text(spark, where, json.dumps(offsets.as_json(), sort_keys=True))


def adopt(offsets: Offsets, pieces: list[tuple[str, str, int]], read_tail) -> list[str]:
    """Take in the pieces a killed run wrote after the state: ``pieces`` are (piece name, its
    location, size); ``read_tail(location, n)`` -> its last ``n`` bytes. -> the pieces taken."""
    taken = []
    for name, where, size in sorted(pieces, key=lambda p: _start_of(p[0])):
        m = PIECE_NAME.match(name)
        if not m:
            continue
        identity, start, end = m["identity"], int(m["start"]), int(m["end"])
        known = offsets.logs.get(identity)
        if end <= (known.end if known else 0) or start != (known.end if known else 0):
            continue
        tail_len = min(TAIL_BYTES, size)
        copied = known or Copied(0, "", 0, "", "", 0)
        copied.end, copied.tail, copied.tail_len = end, tail_hash(read_tail(where, tail_len)), tail_len
        copied.size = max(copied.size, end)
        offsets.logs[identity] = copied
        taken.append(where)
    return taken


def _start_of(name: str) -> int:
    m = PIECE_NAME.match(name)
    return int(m["start"]) if m else -1


def now_text() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
