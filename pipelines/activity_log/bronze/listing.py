"""List the files under the landing root: every one on a full listing, or only the recent date
partitions (``y=/m=/d=`` folders from a cut-off day on, plus every undated folder) on an
incremental one, so an hourly refresh does not walk years of history.

A local root is walked with ``os.scandir`` (tens of thousands of entries a second); a URI root
(``s3a://…``) through Hadoop's FileSystem API, the same pruning either way.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date

from pyspark.sql import SparkSession

from pipelines.activity_log.bronze.layout import PathInfo, classify, folder_date_floor
from pipelines.lake import storage


@dataclass(frozen=True)
class ListedFile:
    path: str  # as Spark and the lineage columns name it: a local absolute path or a URI
    relative: str  # below the landing root, '/'-separated
    size: int
    mtime_ms: int
    info: PathInfo
    readable: bool = True  # False: the file system refuses to open it (permissions)


def _keep(name: str, parents: dict[str, str], cutoff: date | None) -> tuple[bool, dict[str, str]]:
    """Whether to descend into folder ``name``; the partition keys its children see."""
    keys = dict(parents)
    if "=" in name:
        key, value = name.split("=", 1)
        keys.setdefault(key, value)
    floor = folder_date_floor(name, parents)
    return (cutoff is None or floor is None or floor[1] >= cutoff), keys


def _walk_local(root: str, cutoff: date | None) -> Iterator[ListedFile]:
    stack: list[tuple[str, str, dict[str, str]]] = [(root, "", {})]
    while stack:
        folder, rel, keys = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            child_rel = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_dir(follow_symlinks=True):
                keep, child_keys = _keep(entry.name, keys, cutoff)
                if keep:
                    stack.append((entry.path, child_rel, child_keys))
                continue
            st = entry.stat(follow_symlinks=True)
            yield ListedFile(
                entry.path,
                child_rel,
                st.st_size,
                st.st_mtime_ns // 1_000_000,
                classify(child_rel),
                os.access(entry.path, os.R_OK),
            )


def _walk_hadoop(spark: SparkSession, root: str, cutoff: date | None) -> Iterator[ListedFile]:
    fs, base = storage.filesystem(spark, root)
    stack = [(base, "", {})]
    while stack:
        folder, rel, keys = stack.pop()
        if not fs.exists(folder):
            continue
        for status in fs.listStatus(folder):
            name = status.getPath().getName()
            child_rel = f"{rel}/{name}" if rel else name
            if status.isDirectory():
                keep, child_keys = _keep(name, keys, cutoff)
                if keep:
                    stack.append((status.getPath(), child_rel, child_keys))
                continue
            yield ListedFile(
                str(status.getPath().toString()),
                child_rel,
                int(status.getLen()),
                int(status.getModificationTime()),
                classify(child_rel),
            )


def list_landing(spark: SparkSession, root: str, cutoff: date | None = None) -> list[ListedFile]:
    """Every file under ``root`` (``cutoff``: skip date folders wholly older than that day)."""
    local = storage.local_path(root)
    if local is None:
        return sorted(_walk_hadoop(spark, root, cutoff), key=lambda f: f.relative)
    return sorted(_walk_local(os.path.abspath(local), cutoff), key=lambda f: f.relative)
