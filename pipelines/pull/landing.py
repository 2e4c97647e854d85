"""Pulled files into the landing tree at the API's own (date-first) path, whole or not at all: written to
a hidden temporary file beside the final one, then renamed over it. Bronze skips hidden files, so a
listing during the write sees the file entire or not yet; a kill leaves no half file under its name,
only the hidden temporary one, which the next pull removes (bronze would ledger it on every listing)."""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from pipelines.activity_log import DATE_FIRST
from pipelines.activity_log.bronze.layout import PathInfo, classify


def where(dest: Path, api_path: str) -> Path | None:
    """The file's place under ``dest``; None for a path that would leave the tree."""
    parts = PurePosixPath(api_path).parts
    if not parts or PurePosixPath(api_path).is_absolute() or ".." in parts:
        return None
    return dest.joinpath(*parts)


def fits(api_path: str, site: str | None, resource: str, kind: str | None) -> PathInfo | None:
    """What bronze will read the path as, when it is the date-first path of the scope and type asked
    for; None otherwise (such a file is not pulled: bronze would file it elsewhere or skip it)."""
    info = classify(api_path)
    if info.layout != DATE_FIRST or info.skip is not None:
        return None
    segments = PurePosixPath(api_path).parts
    in_site = any(s.lower() == f"siteluid={site}".lower() for s in segments) if site else True
    if info.family != ("site" if site else "tenant") or not in_site:
        return None
    if resource == "snapshots":
        return info if info.entity_type and kind in (None, info.entity_type) else None
    return info if kind in (None, info.event_type) else None


# write_whole's temporary names: .<file name>.<pid>.partial
_PARTIAL = re.compile(r"\..+\.\d+\.partial")


def remove_partials(dest: Path) -> list[Path]:
    """Remove the temporary files a killed pull left under ``dest`` (run under the pull's lock: no
    write of another pull is under way); -> those removed."""
    removed = []
    for folder, _dirs, names in os.walk(dest):
        for name in names:
            if _PARTIAL.fullmatch(name):
                path = Path(folder) / name
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


def write_whole(path: Path, data: bytes) -> bool:
    """``data`` at ``path`` through a renamed temporary file; False (nothing written) when the file is
    there already with these bytes."""
    if path.exists() and path.stat().st_size == len(data) and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")  # as _PARTIAL finds them
    try:
        with open(partial, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return True
