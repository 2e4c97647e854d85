"""The layered refresh: run the requested layers in order and report what each did."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession

from pipelines.activity_log import feed
from pipelines.activity_log.bronze.land import LandingResult, land_bronze
from pipelines.activity_log.silver import promote, replay
from pipelines.alerts import webhook as alerts
from pipelines.analyst.launch import secure_lake
from pipelines.analyst.publish import analyst_tables_published, publish_analyst_tables
from pipelines.config.load import Config
from pipelines.entity_snapshots.silver import SnapshotPromotion, promote_snapshots
from pipelines.errors import InputError, one_line
from pipelines.gold import inputs as gold_inputs
from pipelines.gold.checks import reconciliation_frame, validate_gold
from pipelines.gold.compact import Compaction, compact_marts
from pipelines.gold.run import GoldResult, build_gold, merge_windows, over_silver, silver_tables
from pipelines.gold.staging import event_marts
from pipelines.integrity.capture import write_digest
from pipelines.lake.run_log import LayerRun, last_success_start, record_layer_run
from pipelines.lake.silver_stamp import wait_until_stamps_past
from pipelines.lake.table_names import tables
from pipelines.lifecycle.holds import HoldRefused
from pipelines.lifecycle.retention import apply_retention, due_on_refresh
from pipelines.personal_data.erase.run import finish_pending_erasure
from pipelines.quality.gate import QualityGate
from pipelines.refresh.recovery import clear_interrupted_creates, clear_killed_checkpoint_writes
from pipelines.runtime.spark_session import describe_jobs, small_input_below
from pipelines.server_logs.pieces import CopyResult, notes_recorded, pending_notes
from pipelines.server_logs.roots import configured_roots, copy_server_logs
from pipelines.writeback import bronze as writeback_bronze
from pipelines.writeback import silver as writeback_silver
from pipelines.writeback.source import WritebackSourceError

if TYPE_CHECKING:  # the publishing modules load only when a refresh publishes
    from pipelines.hyper.publish import PublishReport

LAYERS = ("bronze", "silver", "gold")


def new_run_id() -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


@dataclass
class RefreshReport:
    run_id: str
    layers: list[str]
    bronze: list[LandingResult] = field(default_factory=list)
    silver: list[promote.PromotionResult] = field(default_factory=list)
    snapshots: list[SnapshotPromotion] = field(default_factory=list)  # entity snapshot histories
    replays: list[replay.ReplayResult] = field(default_factory=list)  # quarantined rows the registry now knows
    data_docs: Path | None = None
    # the Write-Back audit source, by layer: "bronze" -> WritebackLanding, "silver" -> WritebackPromotion
    writeback: dict[str, object] = field(default_factory=dict)
    gold: GoldResult | None = None
    runs: list[LayerRun] = field(default_factory=list)  # one per layer run, as written to ops.refresh_runs
    full_listing: bool = False  # bronze walks every folder of the landing root
    server_logs: CopyResult | None = None  # Tableau Server's log files copied before bronze (or before Spark)
    gold_skipped: bool = False  # nothing gold reads changed since its last build
    compactions: list[Compaction] = field(default_factory=list)  # marts compacted after the gold build
    alerts: alerts.AlertsReport | None = None  # alerts.on_refresh: the detections posted after gold
    published: PublishReport | None = None  # tableau.publish_on_refresh: what was published after gold
    reconciliation: DataFrame | None = None  # gold.checks.reconciliation_frame after this run's gold build
    release: str | None = None  # how silver releases batches a gate stopped (`refresh --release`)


def parse_layers(text: str) -> list[str]:
    """``"bronze,silver"`` -> ordered, validated layer list."""
    wanted = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [w for w in wanted if w not in LAYERS]
    if unknown or not wanted:
        raise ValueError(f"unknown layer(s) {', '.join(unknown) or '(none given)'}; available: {', '.join(LAYERS)}")
    return [layer for layer in LAYERS if layer in wanted]


def run_refresh(
    spark: SparkSession,
    cfg: Config,
    layers: list[str],
    source_dir: Path | None = None,
    log=print,
    full_listing: bool = False,
    server_logs: CopyResult | None = None,
    release: str | None = None,
) -> RefreshReport:
    """Run ``layers`` in order. ``server_logs``: the copy of Tableau Server's log files when the caller
    made it before Spark started (``auditlake refresh`` does); bronze copies only when it is None.
    ``release``: how silver releases the batches a gate stopped (pipelines.quality.release)."""
    report = RefreshReport(new_run_id(), layers, release=release)
    report.full_listing = full_listing
    report.server_logs = server_logs
    log(f"refresh {report.run_id}: layers {', '.join(layers)} (env {cfg.env})")
    secure_lake(cfg)  # the lake's folders the refresh's user's alone: the analysts' server must not read them
    # what a previous refresh killed mid-write left behind (pipelines/refresh/recovery.py)
    for schema, derived in recovered_schemas(cfg):
        clear_interrupted_creates(spark, schema, log=log, derived=derived)
    clear_killed_checkpoint_writes(spark, cfg.checkpoint_dir, log=log)
    # an erasure a crash left pending is finished before any new row lands (pipelines/personal_data/erase/);
    # one a legal hold placed since then covers waits for its release, and the refresh goes on
    try:
        finish_pending_erasure(spark, cfg, log=log)
    except HoldRefused as exc:
        log(f"refresh: the pending erasure is not finished: {exc}")
    steps = {"bronze": _bronze, "silver": _silver, "gold": _gold}
    for layer in layers:
        _run_layer(spark, cfg, report, layer, lambda step=steps[layer]: step(spark, cfg, report, source_dir, log), log)
    secure_lake(cfg)  # and the folders this run made
    # signed and chained to the last digest; a run killed before this is covered by the next one's
    write_digest(cfg, "refresh", report.run_id, spark, log=log)
    # retention.on_refresh: after the digest, which covers the rows it retires; gold built again by its layer
    if "gold" in layers and due_on_refresh(spark, cfg, log):

        def gold() -> None:
            _run_layer(spark, cfg, report, "gold", lambda: _gold(spark, cfg, report, source_dir, log), log)

        apply_retention(spark, cfg, requested_by="refresh", log=log, build_gold=gold)
    log(f"refresh {report.run_id} done: " + ", ".join(f"{r.layer} {r.seconds:.1f}s" for r in report.runs))
    if "gold" in layers and cfg.settings.alerts.on_refresh:
        send_alerts_after_gold(spark, cfg, report, log)
    if "gold" in layers and cfg.settings.tableau.publish_on_refresh:
        publish_after_gold(spark, cfg, report, log)
    writeback_errors = getattr(report.writeback.get("bronze"), "errors", None)
    if writeback_errors:  # the other sources and layers ran; the refresh still ends in error
        raise WritebackSourceError("; ".join(writeback_errors))
    return report


def left_nothing_to_retry(cfg: Config, report: RefreshReport) -> bool:
    """Whether the next refresh, finding the same files, would have nothing to do: every layer ran, no
    alert is left pending and nothing is left unpublished (pipelines/refresh/nothing_new.py records it)."""
    if tuple(report.layers) != LAYERS:
        return False
    if cfg.settings.alerts.on_refresh and (report.alerts is None or report.alerts.pending):
        return False
    return not (cfg.settings.tableau.publish_on_refresh and report.published is None)


def send_alerts_after_gold(spark: SparkSession, cfg: Config, report: RefreshReport, log) -> None:
    """``auditlake alerts`` after the gold layer, built or skipped (so alerts left pending by a receiver
    that was down go out with the next refresh). A failure is printed and never fails the refresh: the
    detections stay pending, or are queued by the next run."""
    try:
        report.alerts = alerts.send_alerts(spark, cfg, alerts.webhook_url(cfg), log=log)
        log(report.alerts.summary)
    except Exception as exc:  # the lake is refreshed; an alert that did not go out waits for the next run
        log(f"alerts: not sent ({one_line(exc)}); the refresh stands, the next run sends what is pending")


def publish_after_gold(spark: SparkSession, cfg: Config, report: RefreshReport, log) -> None:
    """``auditlake publish`` after the gold layer: the Hyper export brought up to date, then what changed
    sent to Tableau. A failure is printed and never fails the refresh: the published marks did not move,
    so the next run sends the same rows again."""
    from pipelines.hyper.publish import export_and_publish

    try:
        report.published = export_and_publish(spark, cfg, log=log)
    except Exception as exc:  # the lake is refreshed; what was not published goes with the next run
        log(f"publish: not published ({one_line(exc)}); the refresh stands, the next run sends it")


def _run_layer(spark: SparkSession, cfg: Config, report: RefreshReport, layer: str, step, log) -> None:
    """Run one layer and append its row to ops.refresh_runs, also (above all) when it fails."""
    started_at, started = datetime.now(UTC), time.monotonic()
    describe_jobs(spark, layer)
    try:
        step()
    except BaseException as exc:
        run = LayerRun(
            report.run_id,
            layer,
            "failed",
            started_at,
            datetime.now(UTC),
            time.monotonic() - started,
            detail=f"{type(exc).__name__}: {exc}"[:4000],
        )
        _record(spark, cfg, report, run, log)
        raise
    finally:
        describe_jobs(spark, None)
        if layer == "silver":  # no gold build and no later silver run starts in a second silver stamped
            wait_until_stamps_past()
    skipped = layer == "gold" and report.gold_skipped
    run = LayerRun(
        report.run_id,
        layer,
        "skipped" if skipped else "succeeded",
        started_at,
        datetime.now(UTC),
        time.monotonic() - started,
        **(
            {"detail": "nothing gold reads changed since its last build"}
            if skipped
            else _layer_figures(spark, cfg, report, layer)
        ),
    )
    _record(spark, cfg, report, run, log)
    log(
        f"{layer}: {run.rows_in} rows in, {run.rows_out} out, {run.quarantined} quarantined, "
        f"{run.duplicates} duplicates, {run.seconds:.1f}s{'; ' + run.detail if run.detail else ''}"
    )


def _record(spark: SparkSession, cfg: Config, report: RefreshReport, run: LayerRun, log) -> None:
    report.runs.append(run)
    try:
        record_layer_run(spark, cfg, run)
    except Exception as exc:  # the run log must never hide what happened to the data
        log(f"refresh: could not write the run log row for {run.layer}: {exc}")


def _layer_figures(spark: SparkSession, cfg: Config, report: RefreshReport, layer: str) -> dict:
    if layer == "bronze":
        landed = sum(r.rows_landed for r in report.bronze)
        writeback = getattr(report.writeback.get("bronze"), "rows_landed", 0)
        files = sum(r.files_landed for r in report.bronze)
        flagged = sum(r.malformed_rows for r in report.bronze)
        odd = {k: sum(getattr(r, f"files_{k}") for r in report.bronze) for k in ("quarantined", "skipped", "changed")}
        return {
            "rows_in": landed + writeback,
            "rows_out": landed + writeback,
            "detail": f"{files} files landed, "
            + ", ".join(f"{n} {k}" for k, n in odd.items())
            + f"; {flagged} lines not JSON (kept, flagged); {writeback} write-back rows",
        }
    if layer == "silver":
        wb = report.writeback.get("silver")
        return {
            "rows_in": sum(p.bronze_rows for p in report.silver) + getattr(wb, "bronze_rows", 0),
            "rows_out": sum(p.inserted for p in report.silver) + getattr(wb, "inserted", 0),
            "quarantined": sum(p.quarantined for p in report.silver) + getattr(wb, "quarantined", 0),
            "duplicates": sum(p.duplicates for p in report.silver),
            "detail": f"{sum(r.replayed for r in report.replays)} quarantined rows replayed",
        }
    figures = report.reconciliation.agg({"silver_rows": "sum", "gold_rows": "sum"}).first()
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(report.gold.statuses.items())) if report.gold else ""
    return {
        "rows_in": figures[0] or 0,
        "rows_out": figures[1] or 0,
        "detail": f"event-level marts vs the silver rows they cover; dbt: {statuses}",
    }


def _bronze(spark: SparkSession, cfg: Config, report: RefreshReport, source_dir: Path | None, log) -> None:
    roots = configured_roots(cfg)
    if roots and report.server_logs is None:  # Tableau Server's log files: new lines copied, landed below
        report.server_logs = copy_server_logs(cfg, spark, log)
    noted = pending_notes(spark, cfg.checkpoint_dir) if roots else []
    report.bronze = land_bronze(
        spark, cfg, report.run_id, source_dir, log=log, full_listing=report.full_listing, noted=noted
    )
    notes_recorded(spark, cfg.checkpoint_dir, len(noted))
    for result in report.bronze:
        for problem in result.problems:
            log(problem)
    report.writeback["bronze"] = writeback_bronze.land_writeback(spark, cfg, report.run_id, log=log)


def _silver(spark: SparkSession, cfg: Config, report: RefreshReport, source_dir: Path | None, log) -> None:
    gate = QualityGate(spark, cfg, log=log) if cfg.settings.quality.enabled else None
    try:
        # First the rows quarantined as unknown_event_type whose type the registry has learnt since: a
        # deploy that teaches it a type needs no operator step, and these rows, landed earlier, win the
        # duplicate check against copies of them in this run's new rows.
        report.replays = replay.replay_quarantine(spark, cfg, report.run_id, log=log, gate=gate)
        report.silver = promote.promote_silver(spark, cfg, report.run_id, log=log, gate=gate, release=report.release)
    finally:
        # the report is built also (above all) when a gate stopped the run; nothing checked: none
        if gate is not None and gate.checked:
            report.data_docs = gate.finish()
            failed = sum(not o.success for o in gate.outcomes)
            log(f"quality: {len(gate.outcomes)} expectations checked, {failed} failed; Data Docs: {report.data_docs}")
    report.writeback["silver"] = writeback_silver.promote_writeback(spark, cfg, report.run_id, log=log)
    report.snapshots = promote_snapshots(spark, cfg, report.run_id, log=log)
    for promotion in report.snapshots:
        for problem in promotion.problems:
            log(problem)
    # the feed's figures read the events promoted since its watermark: this run's (a delivery's few
    # hundred: the small-input settings, as their promotion; a run killed before its feed update leaves
    # more, which only makes this one slower)
    promoted = sum(r.inserted for r in report.silver) + sum(r.inserted for r in report.replays)
    with small_input_below(spark, cfg, promoted):
        feed.update_feed_completeness(spark, cfg, log=log)


def _gold(spark: SparkSession, cfg: Config, report: RefreshReport, source_dir: Path | None, log) -> None:
    _require_silver(spark, cfg)
    inputs, last = gold_inputs.current_inputs(spark, cfg), gold_inputs.last_built(spark, cfg)
    if inputs == last and _gold_tables_exist(spark, cfg):
        report.gold_skipped = True
        log("gold: skipped: silver, the dbt project and its settings are as they were at the last gold build")
        if cfg.settings.analyst.enabled and not analyst_tables_published(spark, cfg):  # a lake from before
            publish_analyst_tables(spark, cfg, log=log)
        feed.log_quiet_sites(spark, cfg, log=log)
        return
    gold_inputs.forget_built(spark, cfg)
    unmoved = gold_inputs.unmoved_tables(last, inputs)
    if unmoved and not _gold_tables_exist(spark, cfg):  # marts gone (dropped, or a lake restored): all of them
        unmoved = set()
    with over_silver(spark, cfg):  # gold over a small silver with the small-input settings
        _build_gold(spark, cfg, report, log, unmoved)
    gold_inputs.record_built(spark, cfg, inputs)
    feed.log_quiet_sites(spark, cfg, log=log)


def _build_gold(spark: SparkSession, cfg: Config, report: RefreshReport, log, unmoved: set[str]) -> None:
    """dbt's build (without what reads only the silver tables ``unmoved`` since the last build), the
    silver -> gold gate, compaction and the analysts' copies."""
    # silver rows promoted before the last successful gold build were tested by it
    since = last_success_start(spark, cfg, "gold")
    report.gold = build_gold(spark, cfg, log=log, tests_since=since, unmoved=unmoved)
    # counted once (all of history, per mart) for both the gate and the run log's figures
    report.reconciliation = reconciliation_frame(spark, cfg)
    if cfg.settings.quality.enabled:
        gate = QualityGate(spark, cfg, log=log)
        try:
            validate_gold(spark, cfg, gate, report.run_id, report.reconciliation)
        finally:
            report.data_docs = gate.finish()
            failed = sum(not o.success for o in gate.outcomes)
            log(f"quality: silver -> gold, {len(gate.outcomes)} expectations checked, {failed} failed")
    t = tables(cfg)  # the marts, and the intermediate tables dbt merges into in gold's staging schema
    ordered = merge_windows(cfg)
    report.compactions = [
        c
        for schema in t.derived_schemas
        for c in compact_marts(spark, schema, cfg.settings.gold.compact_files_over, ordered, log=log)
    ]
    if cfg.settings.analyst.enabled:
        publish_analyst_tables(spark, cfg, log=log)


def recovered_schemas(cfg: Config) -> list[tuple[str, bool]]:
    """The schemas whose killed table creations a refresh clears first, each with whether it is derived
    (every table rebuilt from another layer: gold, and gold's staging schema, where dbt keeps its
    incremental intermediate tables)."""
    t = tables(cfg)
    return [(schema, schema in t.derived_schemas) for schema in t.table_schemas]


def _gold_tables_exist(spark: SparkSession, cfg: Config) -> bool:
    t = tables(cfg)
    return all(spark.catalog.tableExists(t.gold(mart)) for mart in event_marts())


def _require_silver(spark: SparkSession, cfg: Config) -> None:
    """Gold reads silver's tables: say so plainly instead of a dbt stack trace."""
    missing = [name for name in silver_tables(cfg) if not spark.catalog.tableExists(name)]
    if missing:
        raise InputError(
            f"gold reads silver, which has no {', '.join(missing)} yet: run the silver layer first "
            "(auditlake refresh --layers bronze,silver,gold)"
        )
