"""``auditlake``: the command-line entry point.

    auditlake setup                         fetch the JARs; record the driver's class archive (once)
    auditlake registry --format json        print the event registry
    auditlake refresh --layers bronze [--source DIR]
    auditlake refresh --every 1h [--runs N]  the same every hour in one process (its JVM warm between runs)
    auditlake gold staging | gold dbt ARGS  regenerate dbt staging models; run dbt in-process
    auditlake sql "SELECT ..." [--format table|csv|json]
    auditlake serve [--role auditor]        Thrift server (JDBC/ODBC): analysts' (masked) or auditors' (clear)
    auditlake reconcile                     bronze = silver + duplicates + quarantine, per family
    auditlake replay-quarantine             quarantined rows of event types the registry learnt since -> silver
    auditlake erase --user LUID|EMAIL       pseudonymise one person in every layer, vacuum, record it (GDPR Art. 17)
    auditlake erase                         finish an erasure a crash left pending (a refresh does it first too)
    auditlake alerts [--dry-run|--skip-backlog]  each new detection (gold.rpt_detections) once to the webhook
    auditlake export ocsf [--out URI]       gold's security facts as OCSF events for Amazon Security Lake (new ones)
    auditlake export hyper [--out DIR] [--tdsx]  the analysts' marts (masked) in one Hyper file for Tableau
    auditlake publish [--out DIR]           export hyper, then the data source on Tableau Cloud/Server (changes only)
    auditlake dq report                     the Data Docs site and the latest validation run
    auditlake cluster start|stop|status    a Spark standalone master + workers here (for --env cluster)

Grammar: ``auditlake <verb>``, or ``auditlake <noun> <verb>`` where a noun has several actions.
Tooling commands (``demo``, ``generate activity-log|writeback``, ``bench``) come from
``devtools`` through the ``auditlake.commands`` entry point group: the product never imports them.

Global: ``--env NAME`` or ``--env path/to/file.yaml`` (default $AUDITLAKE_ENV or ``local``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import UTC, datetime, timedelta
from importlib.metadata import entry_points
from pathlib import Path

from pipelines.config import NO_S3_CLIENT, SERVE_ROLES, Config, has_no_s3_client, load_config
from pipelines.errors import EXIT_INTERRUPTED, UsageError, kind_of, one_line
from pipelines.ops import RefreshBusyError, refresh_lock


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


def log(msg: str) -> None:
    print(msg, flush=True)


def cmd_setup(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.class_archive import record_archive
    from pipelines.jars import fetch_jars, missing_jars

    if not missing_jars(cfg):
        if args.verbose:
            log("setup: Delta JARs already cached")
    else:
        fetch_jars(cfg, log=log)
        log(f"setup: JARs cached in {cfg.path('paths.jars_dir')}")
    if not args.jars_only:
        from pipelines.analyst.guard import guard_jar

        guard_jar(cfg, log=log)
        record_archive(cfg, log=log)
    return 0


def cmd_registry(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.activity_log.registry import load_registry

    registry = load_registry()
    if args.format == "json":
        json.dump(registry, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        for family, fam in registry["families"].items():
            events = fam["events"]
            legacy = sum("legacy" in e["editions"] for e in events.values())
            deprecated = sorted(n for n, e in events.items() if e["deprecated"])
            print(
                f"{family}: {len(events)} event types ({legacy} also in the legacy edition), "
                f"{len(fam['common_attributes'])} common attributes, deprecated: {', '.join(deprecated) or 'none'}"
            )
    return 0


def print_lake_checks(spark, cfg: Config) -> bool:
    """Files by verdict, bronze = silver + duplicates + quarantine per family and per silver run, the
    entity snapshots; whether all of it balances (``auditlake reconcile`` and ``refresh --summary``)."""
    from pipelines.reconcile import (
        format_files,
        format_reconciliation,
        format_snapshots,
        reconcile,
        reconcile_files,
        reconcile_snapshots,
        run_figures,
    )

    files = reconcile_files(spark, cfg)
    results = reconcile(spark, cfg)
    if not results and files is None:
        log("reconcile: nothing landed yet")
        return True
    if files is not None:
        log(format_files(files))
        log("")
    log(format_reconciliation(results, run_figures(spark, cfg)))
    snapshots = reconcile_snapshots(spark, cfg)
    if snapshots:
        log("")
        log(format_snapshots(snapshots))
    return all(r.balanced for r in results + snapshots) and (files is None or files.balanced)


def print_quality(spark, cfg: Config) -> None:
    """The latest validation run: expectations checked and failed per checkpoint and severity."""
    from pipelines.quality.gate import latest_run_summary

    latest = latest_run_summary(spark, cfg)
    if latest is not None:
        run_id, rows = latest
        log(f"latest quality run {run_id}:")
        for r in rows:
            log(f"  {r['checkpoint']:<45} {r['severity']:<9} {r['checked']:>4} checked {r['failed']:>4} failed")


def print_summary(spark, cfg: Config, started: float) -> bool:
    """Rows per table, then the lake's checks and the latest quality run; whether the lake balances."""
    from pipelines.refresh import table_counts

    counts = table_counts(spark, cfg)
    width = max([len(table) for table, _, _ in counts] + [34]) + 1
    log("")
    log(f"{'table':<{width}} {'rows':>10}  note")
    for table, rows, note in counts:
        log(f"{table:<{width}} {rows:>10}  {note}")
    log("")
    balanced = print_lake_checks(spark, cfg)
    log("")
    print_quality(spark, cfg)
    log(f"time taken: {time.monotonic() - started:.1f}s")
    return balanced


def refresh(
    cfg: Config,
    layers: list[str],
    source: Path | None = None,
    wait: float = 0.0,
    full_listing: bool = False,
    summary: bool = False,
    force: bool = False,
) -> bool:
    """One refresh as the command runs it: the lock, what the file system says changed since the last
    complete refresh (nothing: no Spark, pipelines/unchanged.py), the session, the layers, then the
    summary or the time taken (``auditlake refresh`` and ``auditlake demo``). False when the summary's
    checks do not balance."""
    from pipelines import unchanged

    started = time.monotonic()
    if source is not None and not source.is_dir():
        raise UsageError(f"--source {source}: no such folder")
    with refresh_lock(cfg, wait_seconds=wait, log=log):
        verdict = _what_changed(cfg, layers, source)
        if verdict is not None and verdict.nothing_new and not (force or summary):
            _say_nothing_new(cfg, verdict, started)
            return True
        unchanged.forget(cfg)  # a run that fails or is killed leaves no record behind
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
        return _refresh_in_spark(cfg, layers, source, full_listing, summary, started, verdict)


def _what_changed(cfg: Config, layers: list[str], source: Path | None):
    """The file system's verdict (pipelines/unchanged.py), or None when it cannot tell (a layer left
    out, a JDBC source, a location in S3, --source)."""
    from pipelines import unchanged
    from pipelines.refresh import LAYERS

    if tuple(layers) != LAYERS or unchanged.not_told(cfg, source):
        return None
    verdict = unchanged.check(cfg)
    if verdict.record is not None and verdict.changed:
        log(
            f"refresh: changed since refresh {verdict.record['run_id']}: {', '.join(verdict.changed)} "
            f"({verdict.inputs.files} landing files checked in {verdict.seconds:.1f}s)"
        )
    return verdict


def _say_nothing_new(cfg: Config, verdict, started: float) -> None:
    from pipelines.analyst.launch import secure_lake

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
    cfg: Config, layers: list[str], source: Path | None, full_listing: bool, summary: bool, started: float, verdict
) -> bool:
    from pipelines import unchanged
    from pipelines.activity_log.bronze.land import listing_window_start
    from pipelines.activity_log.feed import quiet_site_lines
    from pipelines.preload import modules_for, preload
    from pipelines.refresh import left_nothing_to_retry, run_refresh
    from pipelines.spark_session import build_spark

    preload(modules_for(cfg, layers))  # GX and dbt imported while the JVM starts
    spark = build_spark(cfg)
    report = run_refresh(spark, cfg, layers, source, log=log, full_listing=full_listing)
    # with --summary, recorded only once the lake balances (a run that exits 1 is run again in full)
    balanced = print_summary(spark, cfg, started) if summary else True
    if verdict is not None and balanced and left_nothing_to_retry(cfg, report):
        unchanged.record(
            cfg, verdict.inputs, report.run_id, quiet_site_lines(spark, cfg), listing_window_start(spark, cfg)
        )
    if not summary:
        log(f"time taken: {time.monotonic() - started:.1f}s")
    return balanced


def cmd_refresh(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.refresh import parse_layers

    layers, source = parse_layers(args.layers), Path(args.source) if args.source else None
    if args.every is not None or args.runs is not None:
        if args.every is None or args.summary or args.wait:
            raise UsageError(
                "--every PERIOD [--runs N]: --runs needs --every; "
                "--summary and --wait are for one refresh (--every skips a run that finds "
                "another one running)"
            )
        return refresh_every(cfg, layers, parse_every(args.every), args.runs, source, args.full_listing, args.force)
    balanced = refresh(
        cfg, layers, source, wait=args.wait, full_listing=args.full_listing, summary=args.summary, force=args.force
    )
    return 0 if balanced else 1


def parse_every(text: str) -> float:
    """``--every``'s period in seconds: a whole number of seconds, minutes or hours (``90s``, ``15m``, ``1h``)."""
    match = re.fullmatch(r"([1-9][0-9]*)([smh])", text.strip())
    if not match:
        raise UsageError(f"--every {text!r}: give a period such as 15m, 1h or 90s")
    return int(match.group(1)) * {"s": 1, "m": 60, "h": 3600}[match.group(2)]


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
            where = _write_traceback(cfg)
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


def cmd_gold_staging(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.gold.staging import write_staging

    write_staging(log=log)
    return 0


def cmd_gold_dbt(cfg: Config, args: argparse.Namespace) -> int:
    """dbt in-process on the lakehouse's own Spark session: the way to run dbt honouring conf/."""
    from pipelines.gold.run import run_dbt
    from pipelines.spark_session import build_spark

    if not args.dbt_args:
        raise UsageError("auditlake gold dbt: give dbt's arguments, e.g. `auditlake gold dbt build`")
    result = run_dbt(build_spark(cfg), cfg, args.dbt_args, raise_on_failure=False)
    return 1 if result.failures else 0


def cmd_sql(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.query import format_rows, run_query
    from pipelines.spark_session import build_spark

    columns, rows, truncated = run_query(build_spark(cfg), args.query, args.limit)
    sys.stdout.write(format_rows(columns, rows, args.format))
    if truncated:
        print(f"auditlake sql: output cut at --limit {args.limit} rows", file=sys.stderr)
    return 0


def cmd_serve(cfg: Config, args: argparse.Namespace) -> int:
    if args.role == "analyst":  # a process of its own, as another OS user: no Spark here
        from pipelines.analyst.launch import serve_analysts

        return serve_analysts(cfg, log=log)
    from pipelines.serve import serve_auditors
    from pipelines.spark_session import build_spark

    serve_auditors(build_spark(cfg), cfg, log=log)
    return 0


def cmd_reconcile(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.spark_session import build_spark

    return 0 if print_lake_checks(build_spark(cfg), cfg) else 1


def cmd_replay_quarantine(cfg: Config, args: argparse.Namespace) -> int:
    """Under the refresh lock: a refresh's silver step does the same first (pipelines/refresh.py)."""
    from pipelines.activity_log.silver.replay import replay_quarantine
    from pipelines.activity_log.silver.views import ensure_event_views
    from pipelines.refresh import new_run_id
    from pipelines.silver_stamp import wait_until_stamps_past
    from pipelines.spark_session import build_spark
    from pipelines.tables import tables

    with refresh_lock(cfg, wait_seconds=args.wait, log=log):
        spark = build_spark(cfg)
        results = replay_quarantine(spark, cfg, new_run_id(), log=log)
        for r in results:
            if spark.catalog.tableExists(tables(cfg).silver_events(r.family)):
                ensure_event_views(spark, cfg, r.family, log=log)
        wait_until_stamps_past()  # as a refresh's silver layer: a refresh after it stamps a later second
    total = sum(r.replayed for r in results)
    log(
        f"replay-quarantine: {total} rows replayed"
        if total
        else "replay-quarantine: no quarantined row is of an event type the registry knows"
    )
    return 0


def cmd_erase(cfg: Config, args: argparse.Namespace) -> int:
    """GDPR Article 17: under the refresh lock, so no refresh promotes rows mid-way. An erasure a
    crash left pending is finished first (without --user: only that)."""
    from pipelines.config import secret
    from pipelines.erase import erase_person, finish_pending_erasure
    from pipelines.spark_session import build_spark

    salt = secret(cfg, "erase.salt_env") if args.user else ""
    with refresh_lock(cfg, wait_seconds=args.wait, log=log):
        spark = build_spark(cfg)
        if args.user:
            erase_person(spark, cfg, args.user, salt, requested_by=args.requested_by, log=log)
        elif finish_pending_erasure(spark, cfg, log=log) is None:
            log("erase: no erasure is pending (give --user to erase a person)")
    return 0


def cmd_alerts(cfg: Config, args: argparse.Namespace) -> int:
    """Under the refresh lock: a refresh with alerts.on_refresh sends too, and two runs must not post
    the same pending rows. Exit 1 while an alert stays pending (a scheduler retries)."""
    from pipelines.alerts import send_alerts, skip_backlog, webhook_url
    from pipelines.spark_session import build_spark

    if args.skip_backlog:
        with refresh_lock(cfg, wait_seconds=args.wait, log=log):
            skip_backlog(build_spark(cfg), cfg, log=log)
        return 0
    url = None if args.dry_run else webhook_url(cfg)  # unset: one line, exit 2, before Spark starts
    with refresh_lock(cfg, wait_seconds=args.wait, log=log):
        report = send_alerts(build_spark(cfg), cfg, url, dry_run=args.dry_run, log=log)
    log(report.summary)
    return 0 if args.dry_run or report.pending == 0 else 1


def cmd_export_ocsf(cfg: Config, args: argparse.Namespace) -> int:
    """Under the refresh lock: two exports at once would write the same events twice."""
    from pipelines.ocsf.export import export_ocsf
    from pipelines.spark_session import build_spark

    out = args.out.strip() if args.out else None
    if out and has_no_s3_client(out):
        raise UsageError(f"--out {out}: {NO_S3_CLIENT}")
    if out and out.startswith("s3a://") and not cfg.uses_s3:
        raise UsageError(
            f"--out {out}: the S3A client is loaded only when a configured location is s3a://; "
            "set ocsf.out_dir (AUDITLAKE__OCSF__OUT_DIR) instead"
        )
    with refresh_lock(cfg, wait_seconds=args.wait, log=log):
        export_ocsf(build_spark(cfg), cfg, out=out, log=log)
    return 0


def cmd_export_hyper(cfg: Config, args: argparse.Namespace) -> int:
    """Under the refresh lock: it reads the analysts' tables a refresh rewrites."""
    from pipelines.hyper.export import export_hyper
    from pipelines.spark_session import build_spark

    with refresh_lock(cfg, wait_seconds=args.wait, log=log):
        report = export_hyper(build_spark(cfg), cfg, out=args.out, log=log)
        if args.tdsx:
            from pipelines.hyper.tdsx import write_tdsx

            log(f"export hyper: packaged data source {write_tdsx(report.path)}")
    return 0


def cmd_publish(cfg: Config, args: argparse.Namespace) -> int:
    """Under the refresh lock: the export reads the analysts' tables a refresh rewrites."""
    from pipelines.hyper.publish import export_and_publish
    from pipelines.spark_session import build_spark

    with refresh_lock(cfg, wait_seconds=args.wait, log=log):
        export_and_publish(build_spark(cfg), cfg, out=args.out, log=log)
    return 0


def cmd_dq_report(cfg: Config, args: argparse.Namespace) -> int:
    """Rebuild the Data Docs site and summarise the latest validation run from ops.dq_results."""
    from pipelines.quality.gate import QualityGate
    from pipelines.spark_session import build_spark

    spark = build_spark(cfg)
    index = QualityGate(spark, cfg, log=log).build_data_docs()
    print_quality(spark, cfg)
    log(f"Data Docs: {index}")
    return 0


def cmd_cluster(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.standalone import Standalone

    cluster = Standalone.from_config(cfg)
    if args.action == "start":
        cluster.start(log=log)
        log(
            f"cluster: up; run `auditlake --env cluster refresh` (spark.master {cluster.master_url}), "
            "then `auditlake cluster stop`"
        )
    elif args.action == "stop":
        cluster.stop(log=log)
    else:
        state = cluster.state()
        running = cluster.running()
        print(
            json.dumps(
                {
                    "master": cluster.master_url,
                    "processes": running,
                    "alive_workers": (state or {}).get("aliveworkers", 0),
                    "cores": (state or {}).get("cores", 0),
                    "status": (state or {}).get("status", "DOWN"),
                }
            )
        )
        return 0 if state else 1
    return 0


def _add_wait(p: argparse.ArgumentParser) -> None:
    """``--wait``, for a command that takes the refresh lock."""
    p.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="if a refresh is running, wait up to this long for it (default: exit at once, code 75)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="auditlake", description="Audit lakehouse for Tableau")
    parser.add_argument(
        "--env",
        help="configuration environment: a name (conf/<env>.yaml) or a YAML file of your own (path/to/prod.yaml, "
        "over conf/base.yaml); default $AUDITLAKE_ENV or local",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "setup",
        help="fetch Delta's JARs into the project cache and record the Spark driver's class archive (idempotent)",
    )
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument(
        "--jars-only",
        action="store_true",
        help="the JARs only (what a Spark session needs): `make test` records the archive beside its SQL lint",
    )
    p.set_defaults(func=cmd_setup)

    p = sub.add_parser("registry", help="print the event registry")
    p.add_argument("--format", choices=["json", "summary"], default="summary")
    p.set_defaults(func=cmd_registry)

    p = sub.add_parser("refresh", help="run the layered refresh")
    p.add_argument(
        "--layers", default="bronze,silver,gold", help="comma-separated layers (default: bronze,silver,gold)"
    )
    p.add_argument(
        "--source",
        help="landing root to read (default paths.landing_dir): the project's site/ and "
        "tenant/ folders or Tableau's siteLuid=/eventType= layouts, in any mix",
    )
    p.add_argument(
        "--full-listing",
        action="store_true",
        help="walk every folder of the landing root, not only recent date folders",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="run every layer even when the file system shows nothing new since the last complete "
        "refresh (by default such a refresh stops before Spark starts: pipelines/unchanged.py)",
    )
    p.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="if another refresh is running, wait up to this long for it (default: exit at once, code 75)",
    )
    p.add_argument(
        "--every",
        metavar="PERIOD",
        help="refresh again every PERIOD (15m, 1h, 90s) in this one process, its JVM warm between "
        "runs, until stopped (a failed run is said and the next one comes on time)",
    )
    p.add_argument("--runs", type=positive_int, metavar="N", help="with --every: stop after N runs")
    p.add_argument(
        "--summary",
        action="store_true",
        help="then print rows per table, quarantine by reason, files by verdict, the whole-lake "
        "reconciliation (as `reconcile`, exit 1 if it does not balance) and the latest "
        "quality run (reads all of history: slower as the lake grows)",
    )
    p.set_defaults(func=cmd_refresh, needs_pseudonym_key=True)  # its gold layer makes the analysts' copies

    p = sub.add_parser(
        "serve",
        help="start a Spark Thrift Server (JDBC/ODBC): the analysts' (masked tables only, "
        "serve.port) or the auditors' (every schema in clear, serve.auditor_port)",
    )
    p.add_argument(
        "--role",
        choices=SERVE_ROLES,
        default="analyst",
        help="analyst (default): a process of its own, as serve.analyst_os_user, over the masked "
        "analyst tables; auditor: the lakehouse's own session, every schema in clear",
    )
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("sql", help="run one SQL query on the lakehouse and print the result")
    p.add_argument("query")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--limit", type=positive_int, default=1000, help="print at most this many rows (default 1000)")
    p.set_defaults(func=cmd_sql)

    p = sub.add_parser("gold", help="gold (dbt): `staging` rewrites the generated staging models; `dbt ARGS` runs dbt")
    gold = p.add_subparsers(dest="action", required=True)
    gold.add_parser("staging", help="rewrite the generated staging models from the registry").set_defaults(
        func=cmd_gold_staging
    )
    p = gold.add_parser("dbt", help="run dbt in-process on the lakehouse's session, e.g. `gold dbt build`")
    p.add_argument("dbt_args", nargs=argparse.REMAINDER, help="dbt's arguments (build ...)")
    p.set_defaults(func=cmd_gold_dbt)

    p = sub.add_parser("reconcile", help="check bronze rows = silver + duplicates + quarantined (+ pending)")
    p.set_defaults(func=cmd_reconcile)

    p = sub.add_parser(
        "replay-quarantine", help="move quarantined rows of event types the registry has learnt since into silver, once"
    )
    p.add_argument("--wait", type=float, default=0.0, help="seconds to wait for a running refresh")
    p.set_defaults(func=cmd_replay_quarantine)

    p = sub.add_parser(
        "erase",
        help="pseudonymise one person's identifiers in every layer, then vacuum old "
        "file versions (GDPR Article 17); recorded in ops.erasures",
    )
    p.add_argument(
        "--user",
        metavar="LUID|EMAIL",
        help="the person's user LUID or e-mail address (without it: only finish an erasure a crash left pending)",
    )
    p.add_argument("--requested-by", help="who asked for the erasure, for the record (default: the OS user)")
    _add_wait(p)
    p.set_defaults(func=cmd_erase, needs_pseudonym_key=True)  # it makes the analysts' copies again

    p = sub.add_parser(
        "alerts",
        help="post each new detection (gold.rpt_detections) once to the webhook "
        "(alerts.webhook_url_env); state in ops.alert_deliveries; exit 1 while "
        "any stays pending",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--dry-run", action="store_true", help="queue the new detections and print what would be sent; send nothing"
    )
    mode.add_argument(
        "--skip-backlog",
        action="store_true",
        help="start from now: record every detection not sent yet as skipped (never posted), "
        "e.g. before the first run on a lake with history; later detections are sent",
    )
    _add_wait(p)
    p.set_defaults(func=cmd_alerts)

    p = sub.add_parser("export", help="copies of gold for other systems: `auditlake export ocsf|hyper`")
    export = p.add_subparsers(dest="action", required=True)
    p = export.add_parser(
        "ocsf",
        help="gold's security facts as OCSF 1.3 events in Amazon Security Lake's "
        "custom-source layout (Parquet), those not exported before (docs/ocsf.md)",
    )
    p.add_argument(
        "--out",
        metavar="URI",
        help="the Security Lake bucket (s3a://...) or a folder (default ocsf.out_dir); files go under <out>/ext/",
    )
    _add_wait(p)
    p.set_defaults(func=cmd_export_ocsf)
    p = export.add_parser(
        "hyper",
        help="every mart as the analysts see it (masked) in one Hyper file for Tableau, "
        "incrementally (docs/tableau.md)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="a folder on this machine (default hyper.out_dir, else "
        "<data_dir>/hyper); the file is <out>/auditlake.hyper",
    )
    p.add_argument(
        "--tdsx",
        action="store_true",
        help="also <out>/auditlake.tdsx: the file packaged with the marts' relationships, captions, "
        "descriptions, folders and calculated fields, for Tableau Desktop or publishing",
    )
    _add_wait(p)
    p.set_defaults(func=cmd_export_hyper)

    p = sub.add_parser(
        "publish",
        help="the Hyper export as a data source on Tableau Cloud or Server (conf tableau.*): "
        "whole the first time, then only what changed (docs/tableau.md)",
    )
    p.add_argument("--out", metavar="DIR", help="the export's folder (default hyper.out_dir, else <data_dir>/hyper)")
    _add_wait(p)
    p.set_defaults(func=cmd_publish)

    p = sub.add_parser("dq", help="data quality: `auditlake dq report` builds the Data Docs site")
    dq = p.add_subparsers(dest="action", required=True)
    dq.add_parser("report", help="rebuild the Data Docs site, summarise the latest validation run").set_defaults(
        func=cmd_dq_report
    )

    p = sub.add_parser("cluster", help="a Spark standalone master + workers on this machine (conf: cluster:)")
    p.add_argument("action", choices=["start", "stop", "status"])
    p.set_defaults(func=cmd_cluster)

    # tooling (devtools: demo, generate, bench) registers itself; pipelines never imports it
    for plugin in entry_points(group="auditlake.commands"):
        plugin.load()(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The one place a command's failure is printed: ``auditlake: <kind>: <one line>`` and the kind's
    exit code (pipelines/errors.py); an internal error's traceback goes to the error log, whose path
    is the second line."""
    args = build_parser().parse_args(argv)
    cfg: Config | None = None
    try:
        # only a command that makes the analysts' pseudonyms says it needs their key (set_defaults)
        cfg = load_config(args.env, needs_pseudonym_key=getattr(args, "needs_pseudonym_key", False))
        return args.func(cfg, args)
    except KeyboardInterrupt:  # a refresh cut short is finished by the next one (crash safety)
        print("auditlake: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        kind, code = kind_of(exc)
        print(f"auditlake: {kind}: {one_line(exc)}", file=sys.stderr)
        if getattr(exc, "logged", True):  # a traceback tells more than the one line
            where = _write_traceback(cfg)
            if where:
                print(f"auditlake: details (traceback, Java stack trace, plan) in {where}", file=sys.stderr)
        return code


def _write_traceback(cfg: Config | None) -> Path | None:
    import traceback

    if cfg is None:
        return None
    try:
        from pipelines.spark_session import log_dir

        path = log_dir(cfg) / "auditlake-errors.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"\n==== {datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} auditlake {' '.join(sys.argv[1:])}\n")
            fh.write(traceback.format_exc())
        return path
    except OSError:
        return None


if __name__ == "__main__":
    raise SystemExit(main())
