"""``auditlake refresh --every PERIOD``: a refresh every period in this one process, its JVM warm
between runs; a failed run is said in one line and the next one comes on time."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pipelines.command.console import log
from pipelines.command.error_log import write_traceback
from pipelines.config.load import Config
from pipelines.errors import EXIT_INTERRUPTED, one_line
from pipelines.lake.run_log import RefreshBusyError
from pipelines.refresh.command import refresh

# `refresh --every` gives up after this many failed runs in a row (a supervisor can then restart it)
FAILURES_IN_A_ROW = 3


def refresh_every(
    cfg: Config,
    layers: list[str],
    every: float,
    runs: int | None,
    source: Path | None = None,
    full_listing: bool = False,
    force: bool = False,
) -> int:
    """A refresh every ``every`` seconds in this one process, ``runs`` times (None: until stopped). The
    JVM stays warm between runs (docs/performance.md, "A refresh with nothing new, and a warm
    process"). A run that fails is said in one line (its trace in the error log), one that finds
    another refresh running is skipped, and the next one comes on time; a run that overruns its period
    is followed at once. Exit 1 if any run failed, at once after ``FAILURES_IN_A_ROW`` failures in a
    row; 130 on Ctrl-C."""
    try:
        return _refresh_loop(cfg, layers, every, runs, source, full_listing, force)
    except KeyboardInterrupt:  # Ctrl-C: a refresh cut short is finished by the next one (crash safety)
        log(f"refresh every {every:g}s: stopped")
        return EXIT_INTERRUPTED


def _refresh_loop(
    cfg: Config,
    layers: list[str],
    every: float,
    runs: int | None,
    source: Path | None,
    full_listing: bool,
    force: bool,
) -> int:
    failed, in_a_row, run = 0, 0, 0
    next_at = time.monotonic()
    while runs is None or run < runs:
        run += 1
        try:
            refresh(cfg, layers, source, full_listing=full_listing, force=force)
            in_a_row = 0
        except RefreshBusyError as exc:
            log(f"refresh every {every:g}s: run {run} skipped: {exc}")
        except Exception as exc:  # the next run may well succeed (a source back up, a file fixed)
            failed, in_a_row = failed + 1, in_a_row + 1
            where = write_traceback(cfg)
            log(
                f"refresh every {every:g}s: run {run} failed: {one_line(exc)}"
                + (f" (details in {where})" if where else "")
            )
            if in_a_row >= FAILURES_IN_A_ROW:  # e.g. the JVM gone: every later run would fail too
                log(f"refresh every {every:g}s: {in_a_row} runs in a row failed: stopping (exit 1)")
                return 1
        if runs is not None and run >= runs:
            break
        next_at = max(next_at + every, time.monotonic())
        wait = next_at - time.monotonic()
        log(f"refresh every {every:g}s: next run at {datetime.now(UTC) + timedelta(seconds=wait):%H:%M:%S} UTC")
        time.sleep(max(0.0, wait))
    return 1 if failed else 0
