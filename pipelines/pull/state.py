"""What the pull remembers between runs, in one small file in the lake's checkpoints (``pull/``): a watermark
per (site or tenant, resource, type), the newest hour each site delivered a file in, and the delivery
gaps found. Written whole (``pipelines/lake/state_files.py``); a lock keeps two pulls apart."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from pipelines.config.load import Config
from pipelines.errors import BusyError, ConfigError, InputError
from pipelines.lake.state_files import write_json_whole
from pipelines.lake.storage import local_path

# a folder of the checkpoints' own: the refresh's nothing-new check leaves it out
PULL_STATE_DIR = "pull"
STATE_FILE = "state.json"
LOCK_FILE = "pull.lock"
GAP_FIELDS = {"key", "first_hour", "last_hour", "hours"}


def state_dir(cfg: Config) -> Path:
    """The checkpoints' folder on this machine (the pull runs without Spark: no Hadoop client for a URI)."""
    where = local_path(cfg.checkpoint_dir)
    if where is None:
        raise ConfigError(
            f"config key 'paths.checkpoint_dir' is {cfg.checkpoint_dir}: `auditlake pull` keeps its watermarks "
            "in a folder on this machine; set paths.checkpoint_dir to one"
        )
    return Path(where) / PULL_STATE_DIR


def empty_state() -> dict:
    return {"watermarks": {}, "last_file_hour": {}, "gaps": [], "open_gaps": []}


def read_state(folder: Path) -> dict:
    path = folder / STATE_FILE
    if not path.exists():
        return empty_state()
    try:
        state = empty_state() | json.loads(path.read_text(encoding="utf-8"))
        _check_state(state)
    except (ValueError, TypeError, AttributeError) as exc:
        raise InputError(
            f"pull: {path} is not a pull state file ({exc}): move it aside and pull again (the watermarks start "
            "over from pull.lookback_days; files already in the landing tree are not fetched again)"
        ) from None
    return state


def _check_state(state: dict) -> None:
    """Raise ValueError unless every time the pull parses later parses (a half-edited file fails here,
    in one line, rather than mid-pull)."""
    for part in ("watermarks", "last_file_hour"):
        if not isinstance(state[part], dict):
            raise ValueError(f"{part} is not an object")
        for text in state[part].values():
            datetime.fromisoformat(text.replace("Z", "+00:00"))
    for part in ("gaps", "open_gaps"):
        if not isinstance(state[part], list) or not all(
            isinstance(g, dict) and GAP_FIELDS <= g.keys() for g in state[part]
        ):
            raise ValueError(f"{part} is not a list of gaps")


def write_state(folder: Path, state: dict) -> None:
    write_json_whole(folder / STATE_FILE, state)


@contextmanager
def pull_lock(folder: Path) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_FILE, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BusyError(
                f"another `auditlake pull` is running (lock {folder / LOCK_FILE}): run again when it is done"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()
        yield
