"""A sample Activity Log generated and reported in one line, as ``auditlake generate activity-log``
writes it, and the demo's own sample (conf ``generate:``), which ``auditlake demo`` lands and the
refresh bench measures, and the sample sites' inventory the demo lands beside it."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from pathlib import Path

from pipelines.command.arguments import iso_time
from pipelines.command.console import log
from pipelines.config.load import Config


def generate_and_report(
    out: Path,
    events: int,
    seed: int,
    start: datetime,
    days: int,
    dirty: bool,
    layout: str,
    live_feed: bool = False,
    security_stories: bool = False,
    snapshots: bool = False,
    snapshot_every: int = 1,
    world=None,
) -> dict:
    """``generate_activity_log`` into ``out``, its progress and then its summary in one line -> the summary.
    ``world`` as ``generate_activity_log``'s."""
    from auditlake_devtools.sample.activity_log import generate_activity_log

    started = time.monotonic()
    summary = generate_activity_log(
        out,
        events,
        seed=seed,
        start=start,
        days=days,
        dirty=dirty,
        progress=log,
        layout=layout,
        live_feed=live_feed,
        security_stories=security_stories,
        snapshots=snapshots,
        snapshot_every=snapshot_every,
        world=world,
    )
    snaps = summary["snapshots"]
    log(
        f"generate: {summary['records']} records in {summary['lines']} lines, {summary['files']} files "
        f"({summary['gzip_files']} gzip) under {out} in the {layout} layout in {time.monotonic() - started:.1f}s"
        + (
            f"; entity snapshots: {snaps['files']} Parquet files, {snaps['rows']} rows, {snaps['hours']} hours "
            f"(every {snapshot_every} h)"
            if snapshots
            else ""
        )
        + (f"; dirty: {json.dumps(summary['dirty'], sort_keys=True)}" if dirty else "")
        + (f"; silent changes: {json.dumps(summary['silent_changes'])}" if summary["silent_changes"] else "")
        + ("; with the live feed's additions" if live_feed else "")
        + ("; with the security stories" if security_stories else "")
    )
    return summary


def generate_demo_sample(cfg: Config, landing: Path, world=None) -> dict:
    """The demo's Activity Log (conf ``generate:``), as `auditlake demo` and the refresh bench use it.
    ``world`` as ``generate_activity_log``'s."""
    return generate_and_report(
        landing,
        cfg.settings.generate.events,
        cfg.settings.generate.seed,
        iso_time(cfg.settings.generate.start),
        cfg.settings.generate.days,
        dirty=True,
        layout=cfg.settings.generate.layout,
        live_feed=True,  # what the registry knows
        security_stories=True,  # a situation for every detection report
        snapshots=cfg.settings.generate.snapshots,
        snapshot_every=cfg.settings.generate.snapshot_every_hours,
        world=world,
    )


def write_demo_landing(cfg: Config, landing: Path) -> None:
    """What `auditlake demo` lands: its Activity Log and entity snapshots, then the sample sites' current
    state as ``auditlake generate inventory`` writes it, taken the hour after the log's last entity snapshot
    (which falls on its end), since silver prefers Tableau's snapshot where both give one hour, and the state
    reports (content never opened, users who never sign in, grants, embedded credentials) are to read the
    inventory's as the current state.

    The inventory reads the world as the log's stories left it, the silent change still in force included:
    the sites as that last snapshot shows them. Read from the world as it stood at the window's start, it
    would undo every change of the week in its one hour, and the audit of the audit log would report each
    undoing as a change the Activity Log never recorded."""
    from auditlake_devtools.sample.activity_log import build_world, silent_roles
    from auditlake_devtools.sample.tableau_site import write_sample_inventory

    gen = cfg.settings.generate
    start = iso_time(gen.start)
    world = build_world(gen.seed, start)
    summary = generate_demo_sample(cfg, landing, world)
    at = start + timedelta(days=gen.days, hours=1)
    roles = silent_roles(world, summary["silent_changes"])
    write_sample_inventory(cfg, landing, gen.seed, start, at, log=log, world=world, roles=roles)
