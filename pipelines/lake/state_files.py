"""Small state files on the local disk, written whole or not at all."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_json_whole(path: Path, value) -> None:
    """``value`` as JSON in ``path`` through a temporary file renamed over it: a kill leaves the old file
    or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    with open(partial, "w", encoding="utf-8") as f:
        f.write(json.dumps(value, sort_keys=True, indent=1))
        f.flush()
        os.fsync(f.fileno())  # the new content on disk before the rename makes it the file
    partial.replace(path)
