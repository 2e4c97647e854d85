"""The pull's delivery-gap check: hours in a row in which a configured site (or the tenant) made no file
available, as the listings show them. A listing names every file of its window, those already in
the landing tree included, so the hours it shows are the feed's own, whatever was downloaded.

Each pulled key (a site's Activity Log, the tenant's, a site's entity type) keeps the newest hour it
had a file in; a later file that comes ``pull.gap_hours`` or more hours after it closes a gap, and a
key with no file since that long before the pull is an open gap. The feed's report
(``pipelines/activity_log/feed.py``) prints both beside the sites that have gone quiet."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pipelines.config.load import Config
from pipelines.errors import InputError, one_line
from pipelines.lake.storage import local_path
from pipelines.pull.state import PULL_STATE_DIR, read_state

HOUR = timedelta(hours=1)
_PATH_HOUR = re.compile(r"(?:^|/)y=(\d{4})/m=(\d{1,2})/d=(\d{1,2})/h=(\d{1,2})/")
# closed gaps older than this are dropped from the state file (the feed's report reaches back less)
KEPT_DAYS = 400


def path_hour(path: str) -> datetime | None:
    """The hour a date-first path says its records were made available in."""
    m = _PATH_HOUR.search(path)
    if not m:
        return None
    try:
        return datetime(*(int(g) for g in m.groups()), tzinfo=UTC)
    except ValueError:
        return None


def floor_hour(t: datetime) -> datetime:
    return t.replace(minute=0, second=0, microsecond=0)


def hour_text(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:00Z")


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def closed_gaps(
    last: datetime, hours: set[datetime], min_hours: int
) -> tuple[list[tuple[datetime, datetime]], datetime]:
    """(first, last hour) of each run of ``min_hours`` or more hours with no file between ``last`` (the
    newest hour known to have had one) and the ``hours`` listed now; -> those and the new newest hour."""
    gaps = []
    for hour in sorted(h for h in hours if h > last):
        if (hour - last) // HOUR - 1 >= min_hours:
            gaps.append((last + HOUR, hour - HOUR))
        last = hour
    return gaps, last


def record_gaps(state: dict, key: str, hours: set[datetime], since: datetime, now: datetime, min_hours: int) -> None:
    """Update ``state``'s gaps of ``key`` with the file hours one pull listed. ``since``: where the pull
    began asking, the start of the first gap possible when nothing is known of the key yet."""
    known = state["last_file_hour"].get(key)
    last = _parse(known) if known else floor_hour(since) - HOUR
    found, last = closed_gaps(last, hours, min_hours)
    recorded = {(g["key"], g["first_hour"]) for g in state["gaps"]}
    for first, end in found:
        if (key, hour_text(first)) not in recorded:
            state["gaps"].append(_gap(key, first, end))
    state["last_file_hour"][key] = hour_text(last)
    state["open_gaps"] = [g for g in state["open_gaps"] if g["key"] != key]
    current = floor_hour(now)  # the hour under way may still get its files
    if (current - last) // HOUR - 1 >= min_hours:
        state["open_gaps"].append(_gap(key, last + HOUR, current - HOUR) | {"open": True})
    cut = hour_text(now - timedelta(days=KEPT_DAYS))
    state["gaps"] = sorted(
        (g for g in state["gaps"] if g["last_hour"] >= cut), key=lambda g: (g["key"], g["first_hour"])
    )


def _gap(key: str, first: datetime, last: datetime) -> dict:
    return {
        "key": key,
        "first_hour": hour_text(first),
        "last_hour": hour_text(last),
        "hours": (last - first) // HOUR + 1,
    }


def describe(key: str) -> str:
    """``site=<luid>|activitylog`` -> what a person reads."""
    scope, _, what = key.partition("|")
    who = f"site {scope.removeprefix('site=')}" if scope.startswith("site=") else "the tenant"
    resource, _, kind = what.partition("|")
    return f"{who}'s {kind} snapshots" if resource == "snapshots" else f"{who}'s Activity Log"


def gap_lines(cfg: Config, now: datetime | None = None) -> list[str]:
    """One line per delivery gap the pulls recorded within ``feed.report_days``, open ones first."""
    folder = local_path(cfg.checkpoint_dir)
    if folder is None:
        return []
    try:
        state = read_state(Path(folder) / PULL_STATE_DIR)
    except InputError as exc:  # the report goes on; the pull itself refuses the file and says what to do
        return [one_line(exc)]
    cut = hour_text((now or datetime.now(UTC)) - timedelta(days=cfg.settings.feed.report_days))
    lines = []
    for gap in state.get("open_gaps", []):
        lines.append(
            f"pull: {describe(gap['key'])} has had no file since {gap['first_hour']} "
            f"({gap['hours']} hours; `auditlake pull` listings)"
        )
    for gap in state.get("gaps", []):
        if gap["last_hour"] >= cut:
            lines.append(
                f"pull: {describe(gap['key'])} had no file from {gap['first_hour']} to {gap['last_hour']} "
                f"({gap['hours']} hours; `auditlake pull` listings)"
            )
    return lines
