"""The benches' generated Activity Logs: a data set of so many events, generated once under
``<data_dir>/bench`` and reused, and the deliveries a bench adds beside it (the next days' files, named
so that they are removed again before the set is reused)."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pipelines.config.load import Config

DATASET_SEED = 1  # the generated data sets' world (a delivery with it has the same sites and users)


def generated_dataset(cfg: Config, events: int, log) -> tuple[Path, dict]:
    """The data set of ``events`` events over seven days (generated the first time, reused after) ->
    its landing folder and its files' count and bytes."""
    from auditlake_devtools.sample.activity_log import generate_activity_log

    root = cfg.data_dir / "bench" / f"events-{events}"
    landing = root / "landing"
    marker = root / "generated.ok"
    if marker.is_file():
        drop_increments(landing)
        log(f"bench: reusing {landing}")
        files = [p for p in landing.rglob("*") if p.is_file()]
        return landing, {"files": len(files), "bytes": sum(p.stat().st_size for p in files), "reused": True}
    shutil.rmtree(root, ignore_errors=True)
    started = time.monotonic()
    summary = generate_activity_log(landing, events, seed=DATASET_SEED, days=7, progress=log)
    log(f"bench: generated {summary['records']} records in {time.monotonic() - started:.0f}s")
    marker.write_text("ok\n")
    files = [p for p in landing.rglob("*") if p.is_file()]
    return landing, {"files": len(files), "bytes": sum(p.stat().st_size for p in files), "reused": False}


_INCREMENT_PREFIX = "part-increment-"


def drop_increments(landing: Path) -> None:
    """Files an incremental measurement added to a reused data set are not part of it."""
    held = set()
    for path in landing.rglob(f"{_INCREMENT_PREFIX}*"):
        path.unlink()
        held.add(path.parent)
    # and the folders they alone filled, up to the data set's root
    for folder in sorted(held, key=lambda p: -len(p.parts)):
        while folder != landing and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent


HOUR_FOLDER = re.compile(r"/y=(\d{4})/m=(\d{2})/d=(\d{2})/h=(\d{2})/")


def newest_day(landing: Path) -> datetime:
    """The newest y=/m=/d= folder of a data set that holds a file (an increment, once dropped, leaves its
    folders empty: counted, each delivery would be dated after the last one's day)."""
    days = {
        match.groups()[:3] for p in landing.rglob("*") if p.is_file() and (match := HOUR_FOLDER.search(p.as_posix()))
    }
    y, m, d = max(days)
    return datetime(int(y), int(m), int(d), tzinfo=UTC)


def increment_days(landing: Path, events: int, seed: int = 2, days: int = 1) -> Iterator[int]:
    """``events`` more events in new files beside the data set's (removed again by drop_increments):
    the next ``days`` days' activity, generated at once (no id repeats), landed a day at a time as
    Tableau delivers it (under the hours it makes it available): each ``next`` lands the next day's
    files and yields how many. The generator's ``seed`` makes its world: the data set's own seed gives
    the same sites and users."""
    from auditlake_devtools.sample.activity_log import generate_activity_log

    extra_root = landing.parent / "increment"
    shutil.rmtree(extra_root, ignore_errors=True)
    generate_activity_log(extra_root, events, seed=seed, start=newest_day(landing) + timedelta(days=1), days=days)
    by_day: dict[tuple[str, ...], list[Path]] = {}
    for path in sorted(p for p in extra_root.rglob("*") if p.is_file()):
        match = HOUR_FOLDER.search(path.as_posix())
        by_day.setdefault(match.groups()[:3] if match else (), []).append(path)  # () (no day) sorts first
    moved = landed = 0
    try:
        for day in sorted(by_day):
            for path in by_day[day]:
                target = landing / path.relative_to(extra_root)
                target = target.with_name(f"{_INCREMENT_PREFIX}{moved:05d}-{target.name}")
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(path), target)
                moved += 1
            if day:  # a file under no day's folder lands with the first day's
                yield moved - landed
                landed = moved
    finally:
        shutil.rmtree(extra_root, ignore_errors=True)
