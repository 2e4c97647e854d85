"""Test helper: the environment of a lakehouse variant (own data dir, GX context and schemas)."""

from __future__ import annotations

import shutil
from pathlib import Path

from pipelines.config import variant_environ as _variant

# An environment holding only the analysts' pseudonym key (every mode needs it while analyst.enabled):
# for tests that load the configuration from nothing but the variables they name.
KEYED = {"AUDITLAKE_PSEUDONYM_KEY": "test-pseudonym-key-" + "0" * 24}


def variant_environ(lake_dir: Path, name: str) -> dict[str, str]:
    """A test's own lakehouse, ``<lake_dir>/<name>``, inside the session's metastore."""
    return _variant(lake_dir / name, name)


def move_day(generated: Path, landing: Path, day: str) -> int:
    """Deliver one day's files (``.../d=<day>/...``) of a generated log into the landing folder."""
    moved = 0
    for path in sorted(generated.rglob("*.json*")):
        if f"/d={day}/" in path.as_posix():
            target = landing / path.relative_to(generated)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(path, target)
            moved += 1
    return moved


# differs by run, not by data: when the row reached silver
RUN_COLUMNS = ("silver_ingest_ts",)


def row_differences(left, right, ignore: tuple[str, ...] = ()) -> int:
    """Rows of either frame missing from the other (a multiset difference, both ways)."""
    left, right = left.drop(*ignore), right.drop(*ignore)
    return left.exceptAll(right).count() + right.exceptAll(left).count()
