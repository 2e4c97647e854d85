"""Which time ranges a pull asks for: from the key's watermark less the overlap (or, the first time,
the lookback) to now, cut into ranges the API accepts. The API's times are when records were made
available, so a range asked for again only finds files that are already here (not fetched twice)
or records delivered again (silver keeps one of each)."""

from __future__ import annotations

from datetime import datetime, timedelta


def iso(t: datetime) -> str:
    """The API's time format (Tableau's extractor sends milliseconds and Z)."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def first_start(watermark: str | None, now: datetime, lookback: timedelta, overlap: timedelta) -> datetime:
    if watermark is None:
        return now - lookback
    return min(parse_iso(watermark) - overlap, now)


def windows(start: datetime, end: datetime, max_hours: int) -> list[tuple[datetime, datetime]]:
    """[start, end) in consecutive ranges of ``max_hours`` at most."""
    out, step = [], timedelta(hours=max_hours)
    while start < end:
        out.append((start, min(start + step, end)))
        start = out[-1][1]
    return out
