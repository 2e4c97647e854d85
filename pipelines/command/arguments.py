"""The command line's argument types, shared by the product's sub-commands and those the tooling
adds (``auditlake_devtools``), which never import the command line itself."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime

from pipelines.errors import UsageError


def iso_time(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time: {text!r}") from exc
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from exc
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def parse_every(text: str) -> float:
    """``--every``'s period in seconds: a whole number of seconds, minutes or hours (``90s``, ``15m``, ``1h``)."""
    match = re.fullmatch(r"([1-9][0-9]*)([smh])", text.strip())
    if not match:
        raise UsageError(f"--every {text!r}: give a period such as 15m, 1h or 90s")
    return int(match.group(1)) * {"s": 1, "m": 60, "h": 3600}[match.group(2)]


def add_wait(p: argparse.ArgumentParser) -> None:
    """``--wait``, for a command that takes the refresh lock."""
    p.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="if a refresh is running, wait up to this long for it (default: exit at once, code 75)",
    )
