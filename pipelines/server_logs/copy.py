"""Copy what Tableau Server's log files gained into the landing tree, complete lines only.

Each run, for every Activity Log file the roots show: its identity (first line), how far it was
copied (``offsets``), the bytes before that offset compared with what was copied, then the
complete lines after it written as pieces under ``<landing>/server/`` (a partial last line waits
for the next run). Pieces are written whole (a temporary name, then renamed; in object storage a
single upload) and never again: bronze lands each once by its ledger. A file that vanished before
it could be read, or whose content before the offset changed, gets a ledger entry saying so.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pipelines.activity_log import SERVER_LOG, SERVER_LOG_FOLDER
from pipelines.activity_log.bronze import ledger
from pipelines.activity_log.bronze.layout import PathInfo
from pipelines.activity_log.bronze.listing import list_landing
from pipelines.lake import storage
from pipelines.server_logs import offsets as state
from pipelines.server_logs.discover import LogRoot, ServerLog, find_logs

PIECE_BYTES = 64 << 20  # a larger gain is copied as several pieces, each ending at a line's end
FIRST_LINE_LIMIT = 1 << 20  # a first line longer than this is not a log line
# why a file's bytes were not copied (ledger reasons, beside bronze's)
VANISHED = "log_vanished"
REPLACED = "log_replaced"


@dataclass
class CopyResult:
    files: int = 0  # Activity Log files the roots showed
    pieces: int = 0
    bytes: int = 0
    lines: int = 0
    entries: list[ledger.LedgerEntry] = field(default_factory=list)  # for bronze's ledger commit
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


def zone_folder(zone: str) -> str:
    """``tz=<zone>`` with the zone's ``/`` as ``~`` (silver reads it back to convert a native line's ``ts``)."""
    return "tz=" + zone.replace("/", "~")


_INFO = PathInfo(family="site", layout=SERVER_LOG, event_type=None, path_date=None)


def _entry(log: ServerLog, status: str, reason: str, detail: str) -> ledger.LedgerEntry:
    return ledger.LedgerEntry(log.location, _INFO, log.size, log.mtime_ms, status, reason, detail)


class _Writer:
    """Writes pieces under one landing root: a local folder, or a URI through Hadoop."""

    def __init__(self, spark, landing_root: str, zone: str):
        self.spark, self.root, self.zone = spark, landing_root, zone
        self.local = storage.local_path(landing_root)

    def folder(self, log: ServerLog, day: datetime) -> str:
        return storage.join(
            self.root,
            SERVER_LOG_FOLDER,
            f"node={log.node}",
            zone_folder(self.zone),
            f"y={day:%Y}",
            f"m={day:%m}",
            f"d={day:%d}",
            log.process,
        )

    def write(self, folder: str, name: str, data: bytes) -> None:
        if self.local is None:
            storage.create_new(self.spark, storage.join(folder, name), data)
            return
        local = storage.local_path(folder)
        os.makedirs(local, exist_ok=True)
        partial = os.path.join(local, f".{name}.partial")  # hidden: no listing takes it
        with open(partial, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(partial, os.path.join(local, name))

    def read_tail(self, location: str, n: int) -> bytes:
        local = storage.local_path(location)
        if local is None:
            return storage.read_bytes(self.spark, location)[-n:] if n else b""
        with open(local, "rb") as f:
            f.seek(max(0, os.path.getsize(local) - n))
            return f.read()


def _adopt_orphans(writer: _Writer, offsets: state.Offsets, log_fn) -> None:
    """Pieces a killed run wrote after the state it last saved: taken into the offsets."""
    base = storage.join(writer.root, SERVER_LOG_FOLDER)
    listed = list_landing(writer.spark, base, offsets.saved_day)
    pieces = [(os.path.basename(f.relative), f.path, f.size) for f in listed if not f.info.skip]
    taken = state.adopt(offsets, pieces, writer.read_tail)
    if taken:
        log_fn(f"server logs: {len(taken)} pieces an interrupted run copied are counted as copied")


def copy_new_lines(
    spark, roots: list[LogRoot], zone: str, landing_root: str, checkpoint_dir: str, log=print
) -> CopyResult:
    """Copy every complete line the Activity Log files under ``roots`` gained since the last copy."""
    started = time.monotonic()
    result = CopyResult()
    writer = _Writer(spark, landing_root, zone)
    offsets = state.load(spark, checkpoint_dir)
    _adopt_orphans(writer, offsets, log)
    logs, result.problems = find_logs(roots)
    result.files = len(logs)
    by_location = {c.location: (i, c) for i, c in offsets.logs.items()}
    seen: set[str] = set()
    now = datetime.now(UTC)
    # the largest copy of a file first: a smaller copy of it (an older archive) then has nothing new
    for log_file in sorted(logs, key=lambda f: (-f.size, f.location)):
        known = by_location.get(log_file.location)
        if known and known[1].size == log_file.size and known[1].end == log_file.size:
            seen.add(known[0])  # as it was when fully copied: not opened again
            continue
        try:
            _copy_one(writer, offsets, log_file, now, result, seen, log)
        except FileNotFoundError:
            result.entries.append(
                _entry(log_file, ledger.SKIPPED, VANISHED, "listed, then gone before it could be read")
            )
            result.problems.append(
                f"server logs: {log_file.location} (node {log_file.node}) vanished before it could be read"
            )
    for identity, copied in offsets.logs.items():
        if identity in seen or copied.closed:
            continue
        copied.closed = True
        if copied.size > copied.end:  # it ended in a partial line that never got its line end
            gone = ServerLog(copied.node, "", "", copied.location, copied.size, 0)
            detail = (
                f"gone with {copied.size - copied.end} bytes after its last complete line (copied up to byte "
                f"{copied.end})"
            )
            result.entries.append(_entry(gone, ledger.SKIPPED, VANISHED, detail))
            result.problems.append(f"server logs: {copied.location} (node {copied.node}) {detail}")
    state.save(spark, checkpoint_dir, offsets)
    result.seconds = time.monotonic() - started
    if result.files or result.problems:
        log(
            f"server logs: {result.files} Activity Log files under {len(roots)} roots: {result.lines} new lines "
            f"({result.bytes} bytes) copied in {result.pieces} pieces ({result.seconds:.1f}s)"
        )
    return result


def _copy_one(
    writer: _Writer,
    offsets: state.Offsets,
    log_file: ServerLog,
    now: datetime,
    result: CopyResult,
    seen: set[str],
    log,
) -> None:
    with log_file.open() as f:
        first = f.readline(FIRST_LINE_LIMIT)
        if not first.endswith(b"\n"):
            return  # no complete line yet (or not a log): its identity waits for one
        identity = state.identity_of(first)
        seen.add(identity)
        copied = offsets.logs.get(identity)
        end = copied.end if copied else 0
        if copied:
            if copied.location == log_file.location and log_file.size < copied.end:
                _replaced(log_file, copied, result, f"now {log_file.size} bytes, {copied.end} were copied")
                return
            if log_file.size <= copied.end:
                return  # a copy of what is already copied (an older archive of the file)
            f.seek(copied.end - copied.tail_len)
            if state.tail_hash(f.read(copied.tail_len)) != copied.tail:
                _replaced(log_file, copied, result, f"its bytes before offset {copied.end} differ from those copied")
                return
        else:
            f.seek(0)
            copied = state.Copied(0, "", 0, log_file.node, log_file.location, 0)
            offsets.logs[identity] = copied
        copied.closed = False
        folder = writer.folder(log_file, now)
        carry = b""
        while True:
            block = f.read(PIECE_BYTES)
            if not block:
                break
            data = carry + block
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                continue
            piece, carry = data[:cut], data[cut:]
            writer.write(folder, state.piece_name(log_file.name, identity, end, end + cut), piece)
            end += cut
            tail = piece[-state.TAIL_BYTES :]
            copied.end, copied.tail, copied.tail_len = end, state.tail_hash(tail), len(tail)
            result.pieces += 1
            result.bytes += cut
            result.lines += piece.count(b"\n")
            log(f"server logs: {log_file.location} (node {log_file.node}): bytes {end - cut}-{end} copied")
        copied.node, copied.location, copied.size = log_file.node, log_file.location, end + len(carry)


def _replaced(log_file: ServerLog, copied: state.Copied, result: CopyResult, why: str) -> None:
    version = f"{log_file.location}:{log_file.size}:{log_file.mtime_ms}"
    if copied.replaced == version:
        return  # said once
    copied.replaced = version
    detail = f"{why}: the same first line, other content; not copied again (a file under a new name is)"
    result.entries.append(_entry(log_file, ledger.CHANGED, REPLACED, detail))
    result.problems.append(f"server logs: {log_file.location} (node {log_file.node}) was replaced: {detail}")
