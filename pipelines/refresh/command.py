"""One refresh as ``auditlake refresh`` (and ``auditlake demo``) runs it: the lock, what the file
system says changed since the last complete refresh (nothing: it stops before Spark starts), the
session, the layers, then the summary or the time taken."""

from __future__ import annotations

import time
from pathlib import Path

from pipelines.activity_log import feed
from pipelines.activity_log.bronze import land
from pipelines.analyst.launch import secure_lake
from pipelines.command.console import log
from pipelines.config.load import Config
from pipelines.errors import UsageError
from pipelines.integrity.capture import write_digest
from pipelines.inventory.run import inventory_before_refresh
from pipelines.lake.run_log import refresh_lock
from pipelines.pull.run import pull_before_refresh
from pipelines.refresh import nothing_new
from pipelines.refresh.layers import LAYERS, left_nothing_to_retry, new_run_id, run_refresh
from pipelines.refresh.preload import modules_for, preload
from pipelines.refresh.summary import print_summary
from pipelines.runtime import spark_session
from pipelines.server_logs.pieces import CopyResult
from pipelines.server_logs.roots import copies_before_spark, copy_server_logs


def refresh(
    cfg: Config,
    layers: list[str],
    source: Path | None = None,
    wait: float = 0.0,
    full_listing: bool = False,
    summary: bool = False,
    force: bool = False,
    release: str | None = None,
) -> bool:
    """One refresh as the command runs it: the lock, what the file system says changed since the last
    complete refresh (nothing: no Spark, pipelines/refresh/nothing_new.py), the session, the layers, then the
    summary or the time taken (``auditlake refresh`` and ``auditlake demo``). False when the summary's
    checks do not balance. ``release``: how silver releases the batches a gate stopped (a release runs
    silver even when nothing is new)."""
    started = time.monotonic()
    force = force or release is not None
    if source is not None and not source.is_dir():
        raise UsageError(f"--source {source}: no such folder")
    with refresh_lock(cfg, wait_seconds=wait, log=log):
        if cfg.settings.pull.on_refresh and "bronze" in layers:  # first, so that bronze finds what it brought
            pull_before_refresh(cfg, log=log)
        if cfg.settings.inventory.on_refresh and "bronze" in layers:  # so that bronze lands the files it wrote
            inventory_before_refresh(cfg, log=log)
        copied = None  # Tableau Server's log files, copied here or else by bronze
        if "bronze" in layers and copies_before_spark(cfg):  # so the check below sees what the copy brought
            copied = copy_server_logs(cfg, None, log)
        verdict = _what_changed(cfg, layers, source, copied)
        if verdict is not None and verdict.nothing_new and not (force or summary):
            # an idle period gets its digest too, so a missing one shows
            write_digest(cfg, "refresh", new_run_id(), log=log)
            _say_nothing_new(cfg, verdict, started)
            return True
        nothing_new.forget(cfg)  # a run that fails or is killed leaves no record behind
        if verdict is not None and not full_listing and (verdict.record is None or verdict.old_days):
            # what the last runs' listings skipped is known only from a record: without one, every folder
            log(
                "refresh: bronze walks every folder: "
                + (
                    f"files changed in date folders older than the listing's window ({', '.join(verdict.old_days[:3])})"
                    if verdict.record
                    else "no complete refresh is recorded"
                )
            )
            full_listing = True
        return _refresh_in_spark(cfg, layers, source, full_listing, summary, started, verdict, copied, release)


def _what_changed(cfg: Config, layers: list[str], source: Path | None, copied: CopyResult | None):
    """The file system's verdict (pipelines/refresh/nothing_new.py), or None when it cannot tell (a layer left
    out, a JDBC source, a location in S3, --source). The log roots as ``copied`` listed them, not again."""
    if tuple(layers) != LAYERS or nothing_new.not_told(cfg, source):
        return None
    verdict = nothing_new.check(cfg, copied.listed if copied else None)
    if verdict.record is not None and verdict.changed:
        log(
            f"refresh: changed since refresh {verdict.record['run_id']}: {', '.join(verdict.changed)} "
            f"({verdict.inputs.files} landing files checked in {verdict.seconds:.1f}s)"
        )
    return verdict


def _say_nothing_new(cfg: Config, verdict, started: float) -> None:
    secure_lake(cfg)  # as every refresh does: a folder another command made is the owner's alone
    record = verdict.record
    log(
        f"refresh: nothing new since refresh {record['run_id']} ({record['recorded_at']}): the "
        f"{verdict.inputs.files} landing files, the lake's tables, the configuration and the code are as it "
        f"left them (checked in {verdict.seconds:.1f}s, Spark not started; --force runs every layer anyway)"
    )
    for line in record.get("notes", []):  # what that run said whatever it found (the quiet sites)
        log(line)
    log(f"time taken: {time.monotonic() - started:.1f}s")


def _refresh_in_spark(
    cfg: Config,
    layers: list[str],
    source: Path | None,
    full_listing: bool,
    summary: bool,
    started: float,
    verdict,
    copied: CopyResult | None,
    release: str | None = None,
) -> bool:
    preload(modules_for(cfg, layers))  # GX and dbt imported while the JVM starts
    spark = spark_session.build_spark(cfg)
    report = run_refresh(
        spark, cfg, layers, source, log=log, full_listing=full_listing, server_logs=copied, release=release
    )
    # with --summary, recorded only once the lake balances (a run that exits 1 is run again in full)
    balanced = print_summary(spark, cfg, started) if summary else True
    if verdict is not None and balanced and left_nothing_to_retry(cfg, report):
        nothing_new.record(
            cfg, verdict.inputs, report.run_id, feed.quiet_site_lines(spark, cfg), land.listing_window_start(spark, cfg)
        )
    if not summary:
        log(f"time taken: {time.monotonic() - started:.1f}s")
    return balanced
