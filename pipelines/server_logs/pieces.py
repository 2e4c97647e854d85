"""Copy what Tableau Server's log files gained into the landing tree, complete lines only.

Each run, for every Activity Log file the roots show: its identity (``offsets``), how far it was
copied, the bytes before that offset compared with what was copied, then the complete lines after
it written as pieces under ``<landing>/server/`` (a partial last line waits for the next run).
Pieces are written whole (a temporary name, then renamed; in object storage a single upload,
removed again if it fails) and never again: bronze lands each once by its ledger. What could not be
copied is a note for bronze's ledger: a file that vanished before it could be read or with a
partial last line, one whose content before the offset changed, one that cannot be read.
"""

from __future__ import annotations

import os
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pipelines.activity_log import SERVER_LOG, SERVER_LOG_FOLDER
from pipelines.activity_log.bronze import ledger
from pipelines.activity_log.bronze.layout import PathInfo
from pipelines.activity_log.bronze.listing import list_landing
from pipelines.activity_log.native_lines import zone_folder
from pipelines.errors import ExternalError
from pipelines.lake import storage
from pipelines.server_logs import offsets as state
from pipelines.server_logs.discover import Listing, LogRoot, ServerLog, find_logs

PIECE_BYTES = 64 << 20  # a larger gain is copied as several pieces, each ending at a line's end
FIRST_LINE_LIMIT = 1 << 20  # a first line longer than this is not a log line
# why a file's bytes were not copied (ledger reasons, status skipped)
VANISHED = "log_vanished"
REPLACED = "log_replaced"
UNREADABLE = "log_unreadable"
# what reading a log file (or an archive's member) can raise besides a file gone
_READ_ERRORS = (OSError, zipfile.BadZipFile, zlib.error, EOFError, ValueError)


class PieceWriteError(ExternalError):
    """A piece could not be written to the landing tree: the lake's storage, not the log, failed."""


@dataclass
class CopyResult:
    files: int = 0  # Activity Log files the roots showed
    pieces: int = 0
    bytes: int = 0
    lines: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    listed: Listing | None = None  # the roots as the copy found them, so a caller need not list them again


_INFO = PathInfo(family="site", layout=SERVER_LOG, event_type=None, path_date=None)


def _note(offsets: state.Offsets, result: CopyResult, location: str, size: int, mtime_ms: int, reason: str, line: str):
    """A ledger note (kept in the state until bronze records it) and its problem line, once."""
    key = f"{reason}|{location}|{size}|{mtime_ms}"
    if key in offsets.said:
        return
    offsets.said.append(key)
    offsets.pending.append({"path": location, "size": size, "mtime_ms": mtime_ms, "reason": reason, "detail": line})
    result.problems.append(f"server logs: {location}: {line}")


def pending_notes(spark, checkpoint_dir: str) -> list[ledger.LedgerEntry]:
    """The notes bronze has not recorded yet, as ledger entries (status skipped, with their reason)."""
    return [
        ledger.LedgerEntry(n["path"], _INFO, n["size"], n["mtime_ms"], ledger.SKIPPED, n["reason"], n["detail"])
        for n in state.load(spark, checkpoint_dir).pending
    ]


def notes_recorded(spark, checkpoint_dir: str, count: int) -> None:
    """The first ``count`` notes are in bronze's ledger: dropped from the state."""
    if count:
        offsets = state.load(spark, checkpoint_dir)
        offsets.pending = offsets.pending[count:]
        state.save(spark, checkpoint_dir, offsets, datetime.now(UTC).date())


class _Writer:
    """Writes pieces under one landing root: a local folder, or a URI through Hadoop."""

    def __init__(self, spark, landing_root: str, zone: str):
        self.spark, self.root, self.zone = spark, landing_root, zone
        self.local = storage.local_path(landing_root)
        self.folders: set[str] = set()  # local folders written to: synced before the offsets are saved

    def folder(self, log: ServerLog, day: datetime) -> str:
        return storage.join(
            self.root,
            SERVER_LOG_FOLDER,
            f"node={log.node}",
            zone_folder(self.zone),  # silver reads the zone back from here
            f"y={day:%Y}",
            f"m={day:%m}",
            f"d={day:%d}",
            log.process,
        )

    def write(self, folder: str, name: str, data: bytes) -> None:
        try:
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
            self.folders.add(local)
        except Exception as exc:
            raise PieceWriteError(f"server logs: could not write {name} under {folder}: {exc}") from exc

    def sync(self) -> None:
        """The renames made durable before the offsets that count on them are saved."""
        for folder in self.folders:
            fd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self.folders.clear()

    def read(self, location: str) -> bytes:
        local = storage.local_path(location)
        if local is None:
            return storage.read_bytes(self.spark, location)
        with open(local, "rb") as f:
            return f.read()

    def remove(self, location: str) -> None:
        local = storage.local_path(location)
        if local is None:
            storage.delete(self.spark, location)
        elif os.path.exists(local):
            os.remove(local)


def _adopt_orphans(writer: _Writer, offsets: state.Offsets, log) -> None:
    """Pieces a killed run wrote after the state it last saved: taken into the offsets (one cut
    short is removed, and its range copied again)."""
    listed = list_landing(writer.spark, storage.join(writer.root, SERVER_LOG_FOLDER), state.adopt_from(offsets))
    pieces = [(os.path.basename(f.relative), f.path, f.size) for f in listed if not f.info.skip]
    taken, short = state.adopt(offsets, pieces, writer.read)
    for where in short:
        log(f"server logs: {where} was cut short by an interrupted run: removed, its lines copied again")
        writer.remove(where)
    if taken:
        log(f"server logs: {len(taken)} pieces an interrupted run copied are counted as copied")


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
    result.listed = (logs, list(result.problems))  # before the copy adds problems of its own
    unreadable_roots = [r.path for r in roots if any(p.startswith(f"server logs: {r.path}") for p in result.problems)]
    result.files = len(logs)
    by_location = {c.location: (i, c) for i, c in offsets.logs.items()}
    seen: set[str] = set()
    now = datetime.now(UTC)
    # the largest copy of a file first: a smaller copy of it (an older archive) then has nothing new
    for log_file in sorted(logs, key=lambda f: (-f.size, f.location)):
        known = by_location.get(log_file.location)
        if known and (known[1].size, known[1].mtime_ms, known[1].end) == (
            log_file.size,
            log_file.mtime_ms,
            log_file.size,
        ):
            seen.add(known[0])  # as it was when fully copied: not opened again
            continue
        try:
            _copy_one(writer, offsets, log_file, now, result, seen, log)
        except FileNotFoundError:
            _note(
                offsets,
                result,
                log_file.location,
                log_file.size,
                log_file.mtime_ms,
                VANISHED,
                "listed, then gone before it could be read (a rotation renames a file: then it is copied "
                "under its new name)",
            )
        except _READ_ERRORS as exc:
            _note(
                offsets,
                result,
                log_file.location,
                log_file.size,
                log_file.mtime_ms,
                UNREADABLE,
                f"cannot be read ({type(exc).__name__}: {exc}); the other files are copied",
            )
    _close_unseen(offsets, result, seen, unreadable_roots)
    writer.sync()
    state.save(spark, checkpoint_dir, offsets, now.date())
    result.seconds = time.monotonic() - started
    if result.files or result.problems:
        log(
            f"server logs: {result.files} Activity Log files under {len(roots)} roots: {result.lines} new lines "
            f"({result.bytes} bytes) copied in {result.pieces} pieces ({result.seconds:.1f}s)"
        )
    return result


def _close_unseen(offsets: state.Offsets, result: CopyResult, seen: set[str], unreadable_roots: list[str]) -> None:
    """Files no readable root shows any more (a root that could not be read closes nothing)."""
    for identity, copied in offsets.logs.items():
        if identity in seen or copied.closed or any(copied.location.startswith(r) for r in unreadable_roots):
            continue
        copied.closed = True
        if copied.size > copied.end:  # it ended in a partial last line that never got its line end
            _note(
                offsets,
                result,
                copied.location,
                copied.size,
                copied.mtime_ms,
                VANISHED,
                f"gone with {copied.size - copied.end} bytes after its last complete line (copied up to byte "
                f"{copied.end})",
            )


def _identity(f, first: bytes, offsets: state.Offsets) -> str:
    """The file's identity: its first line's, unless the file known by it has another head (then drawn
    from the first line and this file's head up to the line that differs)."""
    identity = state.identity_of(first)
    while True:
        copied = offsets.logs.get(identity)
        if copied is None or not copied.head:
            return identity
        f.seek(0)
        head = f.read(state.HEAD_BYTES)
        mine = state.head_hashes(head)
        differs = next((i for i, (a, b) in enumerate(zip(mine, copied.head, strict=False)) if a != b), None)
        if differs is None:
            return identity  # the same file, as far as both heads go
        identity = state.other_identity(identity, mine[differs])


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
            if len(first) >= FIRST_LINE_LIMIT:
                result.problems.append(
                    f"server logs: {log_file.location}: no line end in its first {FIRST_LINE_LIMIT} bytes: not copied"
                )
            return  # no complete line yet: its identity waits for one
        identity = _identity(f, first, offsets)
        seen.add(identity)
        copied = offsets.logs.get(identity)
        if copied:
            if copied.location == log_file.location and log_file.size < copied.end:
                _replaced(offsets, log_file, copied, result, f"now {log_file.size} bytes, {copied.end} were copied")
                return
            if log_file.size <= copied.end:
                return  # a copy of what is already copied (an older archive of the file)
            f.seek(copied.end - copied.tail_len)
            if state.digest(f.read(copied.tail_len)) != copied.tail:
                _replaced(
                    offsets, log_file, copied, result, f"its bytes before offset {copied.end} differ from those copied"
                )
                return
        else:
            f.seek(0)
            copied = state.Copied(0, "", 0, log_file.node, log_file.location, 0)
            offsets.logs[identity] = copied
        copied.closed = False
        end = copied.end
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
            if end == 0:
                copied.head = state.head_hashes(piece)
            end += cut
            tail = piece[-state.TAIL_BYTES :]
            copied.end, copied.tail, copied.tail_len = end, state.digest(tail), len(tail)
            result.pieces += 1
            result.bytes += cut
            result.lines += piece.count(b"\n")
            log(f"server logs: {log_file.location} (node {log_file.node}): bytes {end - cut}-{end} copied")
        copied.node, copied.location = log_file.node, log_file.location
        copied.size, copied.mtime_ms = end + len(carry), log_file.mtime_ms


def _replaced(offsets: state.Offsets, log_file: ServerLog, copied: state.Copied, result: CopyResult, why: str) -> None:
    if copied.replaced == log_file.location:
        return  # said once
    copied.replaced = log_file.location
    _note(
        offsets,
        result,
        log_file.location,
        log_file.size,
        log_file.mtime_ms,
        REPLACED,
        f"replaced: {why}; the same first line and head, other content: not copied (what was copied stays)",
    )
