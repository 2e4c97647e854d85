"""Find Tableau Server's Activity Log files under the configured log roots.

A root is a node's ``logs`` folder (or any folder above the process folders) or a ``tsm maintenance
ziplogs`` archive, which holds a folder per node. A file counts when its name is
``<process>-cepp-canonical-events_<anything>.log`` (or a rotated ``….log.1``, ``….log.2026-06-08``)
and one of its folders is a process's. A folder that cannot be read is a problem line, not an empty
root.
"""

from __future__ import annotations

import os
import re
import socket
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import BinaryIO

# The processes whose log folders hold Activity Log files.
PROCESSES = ("backgrounder", "dataserver", "vizportal", "vizqlserver")
# a rotated file may carry a number or a date after .log: it is the same file (its identity says so)
_FILE_NAME = re.compile(r"^[A-Za-z0-9_.-]*-cepp-canonical-events_[^/\\]*\.log(\.[0-9][0-9-]*)?$")
ARCHIVE_SUFFIX = ".zip"


@dataclass(frozen=True)
class LogRoot:
    path: str
    node: str = ""  # '' = this machine's name for a folder, each member's top folder for an archive


@dataclass(frozen=True)
class ServerLog:
    """One Activity Log file as a root shows it now."""

    node: str
    process: str
    name: str
    location: str  # a path, or ``<archive>!<member>``
    size: int
    mtime_ms: int
    archive: str | None = None
    member: str | None = None

    @contextmanager
    def open(self) -> Iterator[BinaryIO]:
        """The file's bytes, seekable (``FileNotFoundError`` when it is gone)."""
        if self.archive is None:
            with open(self.location, "rb") as f:
                yield f
            return
        with zipfile.ZipFile(self.archive) as z:
            try:
                member = z.open(self.member)
            except KeyError as exc:
                raise FileNotFoundError(self.location) from exc
            with member:
                yield member


def _process_of(folders: list[str]) -> str | None:
    return next((f for f in reversed(folders) if f in PROCESSES), None)


def _is_log(name: str) -> bool:
    return bool(_FILE_NAME.match(name))


def _in_folder(root: LogRoot, problems: list[str]) -> Iterator[ServerLog]:
    node = root.node or socket.gethostname()
    base = os.path.abspath(root.path)
    for folder, dirs, files in os.walk(base, onerror=lambda exc: problems.append(f"server logs: {exc}")):
        dirs.sort()
        rel = os.path.relpath(folder, base)
        process = _process_of([] if rel == "." else rel.split(os.sep))
        if process is None:
            continue
        for name in sorted(files):
            if not _is_log(name):
                continue
            path = os.path.join(folder, name)
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue  # removed since the folder was read: as if never listed
            yield ServerLog(node, process, name, path, st.st_size, st.st_mtime_ns // 1_000_000)


def _in_archive(root: LogRoot) -> Iterator[ServerLog]:
    archive = os.path.abspath(root.path)
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            parts = [p for p in info.filename.split("/") if p]
            if info.is_dir() or not parts or not _is_log(parts[-1]):
                continue
            process = _process_of(parts[:-1])
            if process is None:
                continue
            node = root.node or (parts[0] if len(parts) > 2 else "archive")
            mtime = int(datetime(*info.date_time).timestamp() * 1000)
            yield ServerLog(
                node, process, parts[-1], f"{archive}!{info.filename}", info.file_size, mtime, archive, info.filename
            )


Listing = tuple[list[ServerLog], list[str]]  # the files the roots show, and a line per root unread


def find_logs(roots: list[LogRoot]) -> Listing:
    """-> (every Activity Log file under ``roots``, one line per root that cannot be read)."""
    logs: list[ServerLog] = []
    problems: list[str] = []
    for root in roots:
        if root.path.lower().endswith(ARCHIVE_SUFFIX) and os.path.isfile(root.path):
            try:
                logs.extend(_in_archive(root))
            except zipfile.BadZipFile as exc:
                problems.append(f"server logs: {root.path} is not a readable zip archive: {exc}")
        elif os.path.isdir(root.path):
            logs.extend(_in_folder(root, problems))
        else:
            problems.append(f"server logs: {root.path}: no such folder or .zip archive")
    return logs, problems
