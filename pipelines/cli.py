"""``auditlake``: the command-line entry point.

    auditlake setup                         fetch the JARs; record the driver's class archive (once)
    auditlake registry --format json        print the event registry
    auditlake refresh --layers bronze [--source DIR]
    auditlake refresh --every 1h [--runs N]  the same every hour in one process (its JVM warm between runs)
    auditlake gold staging | gold dbt ARGS  regenerate dbt staging models; run dbt in-process
    auditlake sql "SELECT ..." [--format table|csv|json]
    auditlake serve [--role auditor]        Thrift server (JDBC/ODBC): analysts' (masked) or auditors' (clear)
    auditlake reconcile                     bronze = silver + duplicates + quarantine, per family
    auditlake verify [--public-key FILE]    the signed trail: digests, files, rows, erasures (exit 1 naming a break)
    auditlake integrity keygen DIR          a new Ed25519 key pair for signing the digests
    auditlake hold add|list|release         legal holds: rows no retention or erasure may change
    auditlake retention apply [--dry-run]   retire the rows retention.rules says have expired (signed record)
    auditlake replay-quarantine             quarantined rows of event types the registry learnt since -> silver
    auditlake erase --user LUID|EMAIL       pseudonymise one person in every layer, vacuum, record it (GDPR Art. 17)
    auditlake erase                         finish an erasure a crash left pending (a refresh does it first too)
    auditlake alerts [--dry-run|--skip-backlog]  each new detection (gold.rpt_detections) once to the webhook
    auditlake export ocsf [--out URI]       gold's security facts as OCSF events for Amazon Security Lake (new ones)
    auditlake export hyper [--out DIR] [--tdsx]  the analysts' marts (masked) in one Hyper file for Tableau
    auditlake publish [--out DIR]           export hyper, then the data source on Tableau Cloud/Server (changes only)
    auditlake pull [--dest DIR]             the Activity Log from Tableau Cloud Manager's Platform Data API -> landing
    auditlake inventory [--dest DIR]        each site's users, content, permissions from Tableau's REST API -> landing
    auditlake dq report                     the Data Docs site and the latest validation run
    auditlake cluster start|stop|status    a Spark standalone master + workers here (for --env cluster)

Grammar: ``auditlake <verb>``, or ``auditlake <noun> <verb>`` where a noun has several actions.
Tooling commands (``demo``, ``generate activity-log|writeback``, ``bench``) come from
``auditlake_devtools`` through the ``auditlake.commands`` entry point group: the product never imports them.

Global: ``--env NAME`` or ``--env path/to/file.yaml`` (default $AUDITLAKE_ENV or ``local``).
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import entry_points
from pathlib import Path

from pipelines.activity_log.registry import load_registry, summary_lines
from pipelines.analyst.guard import guard_jar
from pipelines.command.arguments import add_wait, parse_every, positive_int
from pipelines.command.console import log
from pipelines.command.error_log import write_traceback
from pipelines.config.checks import NO_S3_CLIENT, SERVE_ROLES, has_no_s3_client
from pipelines.config.load import Config, load_config, secret
from pipelines.errors import EXIT_INTERRUPTED, UsageError, kind_of, one_line
from pipelines.integrity.command import add_integrity, add_verify
from pipelines.lake.run_log import refresh_lock
from pipelines.lifecycle.command import add_hold, add_retention
from pipelines.quality.release import RELEASES
from pipelines.runtime import spark_session
from pipelines.runtime.class_archive import record_archive
from pipelines.runtime.jars import fetch_jars, missing_jars
from pipelines.serving.query import format_rows, run_query
from pipelines.serving.thrift import serve_auditors

# The imports inside the handlers below are the modules of one command: each loads only when its
# command runs, so `auditlake --help`, `registry` and `setup` start without loading the layers, dbt
# or Great Expectations. Spark's session is built through the module (`spark_session.build_spark`),
# so a test can stop it where a command would start it.


def cmd_setup(cfg: Config, args: argparse.Namespace) -> int:
    if not missing_jars(cfg):
        if args.verbose:
            log("setup: Delta JARs already cached")
    else:
        fetch_jars(cfg, log=log)
        log(f"setup: JARs cached in {cfg.path('paths.jars_dir')}")
    if not args.jars_only:
        guard_jar(cfg, log=log)
        record_archive(cfg, log=log)
    return 0


def cmd_registry(cfg: Config, args: argparse.Namespace) -> int:
    registry = load_registry()
    if args.format == "json":
        json.dump(registry, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        for line in summary_lines(registry):
            print(line)
    return 0


def cmd_refresh(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.refresh.command import refresh
    from pipelines.refresh.every import refresh_every
    from pipelines.refresh.layers import parse_layers

    layers, source = parse_layers(args.layers), Path(args.source) if args.source else None
    if args.server_logs:
        from pipelines.server_logs.roots import with_root

        cfg = with_root(cfg, args.server_logs, args.server_node or "")
    elif args.server_node:
        raise UsageError("--server-node NAME names the node of --server-logs DIR")
    if args.release and "silver" not in layers:
        raise UsageError(f"--release {args.release} releases a batch silver stopped: run the silver layer too")
    if args.every is not None or args.runs is not None:
        if args.every is None or args.summary or args.wait or args.release:
            raise UsageError(
                "--every PERIOD [--runs N]: --runs needs --every; "
                "--summary, --wait and --release are for one refresh (--every skips a run that finds "
                "another one running)"
            )
        return refresh_every(cfg, layers, parse_every(args.every), args.runs, source, args.full_listing, args.force)
    balanced = refresh(
        cfg,
        layers,
        source,
        wait=args.wait,
        full_listing=args.full_listing,
        summary=args.summary,
        force=args.force,
        release=args.release,
    )
    return 0 if balanced else 1


def cmd_gold_staging(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.gold.staging import write_staging

    write_staging(log=log)
    return 0


def cmd_gold_dbt(cfg: Config, args: argparse.Namespace) -> int:
    """dbt in-process on the lakehouse's own Spark session: the way to run dbt honouring conf/."""
    from pipelines.gold.run import run_dbt

    if not args.dbt_args:
        raise UsageError("auditlake gold dbt: give dbt's arguments, e.g. `auditlake gold dbt build`")
    result = run_dbt(spark_session.build_spark(cfg), cfg, args.dbt_args, raise_on_failure=False)
    return 1 if result.failures else 0


def cmd_sql(cfg: Config, args: argparse.Namespace) -> int:

    columns, rows, truncated = run_query(spark_session.build_spark(cfg), args.query, args.limit)
    sys.stdout.write(format_rows(columns, rows, args.format))
    if truncated:
        print(f"auditlake sql: output cut at --limit {args.limit} rows", file=sys.stderr)
    return 0


def cmd_serve(cfg: Config, args: argparse.Namespace) -> int:
    if args.role == "analyst":  # a process of its own, as another OS user: no Spark here
        from pipelines.analyst.launch import serve_analysts

        return serve_analysts(cfg, log=log)

    serve_auditors(spark_session.build_spark(cfg), cfg, log=log)
    return 0


def cmd_reconcile(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.integrity.reconcile import print_lake_checks

    return 0 if print_lake_checks(spark_session.build_spark(cfg), cfg) else 1


def cmd_replay_quarantine(cfg: Config, args: argparse.Namespace) -> int:
    """Under the refresh lock: a refresh's silver step does the same first (pipelines/refresh/layers.py)."""
    from pipelines.activity_log.silver.replay import replay_on_its_own
    from pipelines.refresh import new_run_id

    with refresh_lock(cfg, wait_seconds=args.wait, log=log):
        total = replay_on_its_own(spark_session.build_spark(cfg), cfg, new_run_id(), log=log)
    log(
        f"replay-quarantine: {total} rows replayed"
        if total
        else "replay-quarantine: no quarantined row is of an event type the registry knows"
    )
    return 0


def cmd_erase(cfg: Config, args: argparse.Namespace) -> int:
    """GDPR Article 17: under the refresh lock, so no refresh promotes rows mid-way. An erasure a
    crash left pending is finished first (without --user: only that)."""
    from pipelines.personal_data.erase.run import erase_person, finish_pending_erasure

    salt = secret(cfg, "erase.salt_env") if args.user else ""
    with refresh_lock(cfg, wait_seconds=args.wait, log=log):
        spark = spark_session.build_spark(cfg)
        if args.user:
            erase_person(spark, cfg, args.user, salt, requested_by=args.requested_by, log=log)
        elif finish_pending_erasure(spark, cfg, log=log) is None:
            log("erase: no erasure is pending (give --user to erase a person)")
    return 0


def cmd_alerts(cfg: Config, args: argparse.Namespace) -> int:
    """Under the refresh lock: a refresh with alerts.on_refresh sends too, and two runs must not post
    the same pending rows. Exit 1 while an alert stays pending (a scheduler retries)."""
    from pipelines.alerts.webhook import send_alerts, skip_backlog, webhook_url

    if args.skip_backlog:
        with refresh_lock(cfg, wait_seconds=args.wait, log=log):
            skip_backlog(spark_session.build_spark(cfg), cfg, log=log)
        return 0
    url = None if args.dry_run else webhook_url(cfg)  # unset: one line, exit 2, before Spark starts
    with refresh_lock(cfg, wait_seconds=args.wait, log=log):
        report = send_alerts(spark_session.build_spark(cfg), cfg, url, dry_run=args.dry_run, log=log)
    log(report.summary)
    return 0 if args.dry_run or report.pending == 0 else 1


def cmd_export_ocsf(cfg: Config, args: argparse.Namespace) -> int:
    """Under the refresh lock: two exports at once would write the same events twice."""
    from pipelines.ocsf.export import export_ocsf

    out = args.out.strip() if args.out else None
    if out and has_no_s3_client(out):
        raise UsageError(f"--out {out}: {NO_S3_CLIENT}")
    if out and out.startswith("s3a://") and not cfg.uses_s3:
        raise UsageError(
            f"--out {out}: the S3A client is loaded only when a configured location is s3a://; "
            "set ocsf.out_dir (AUDITLAKE__OCSF__OUT_DIR) instead"
        )
    with refresh_lock(cfg, wait_seconds=args.wait, log=log):
        export_ocsf(spark_session.build_spark(cfg), cfg, out=out, log=log)
    return 0


def cmd_export_hyper(cfg: Config, args: argparse.Namespace) -> int:
    """Under the refresh lock: it reads the analysts' tables a refresh rewrites."""
    from pipelines.hyper.export import export_hyper

    with refresh_lock(cfg, wait_seconds=args.wait, log=log):
        report = export_hyper(spark_session.build_spark(cfg), cfg, out=args.out, log=log)
        if args.tdsx:
            from pipelines.hyper.tdsx import write_tdsx

            log(f"export hyper: packaged data source {write_tdsx(report.path)}")
    return 0


def cmd_publish(cfg: Config, args: argparse.Namespace) -> int:
    """Under the refresh lock: the export reads the analysts' tables a refresh rewrites."""
    from pipelines.hyper.publish import export_and_publish

    with refresh_lock(cfg, wait_seconds=args.wait, log=log):
        export_and_publish(spark_session.build_spark(cfg), cfg, out=args.out, log=log)
    return 0


def cmd_pull(cfg: Config, args: argparse.Namespace) -> int:
    """No Spark and no refresh lock: files land whole under their final names (bronze may list meanwhile)."""
    from pipelines.pull.run import pull

    pull(cfg, dest=Path(args.dest) if args.dest else None, log=log)
    return 0


def cmd_inventory(cfg: Config, args: argparse.Namespace) -> int:
    """No Spark and no refresh lock: files land whole under their final names (bronze may list meanwhile)."""
    from pipelines.inventory.run import inventory

    inventory(cfg, dest=Path(args.dest) if args.dest else None, log=log)
    return 0


def cmd_dq_report(cfg: Config, args: argparse.Namespace) -> int:
    """Rebuild the Data Docs site and summarise the latest validation run from ops.dq_results."""
    from pipelines.quality.gate import QualityGate
    from pipelines.quality.latest_run import print_latest_run

    spark = spark_session.build_spark(cfg)
    index = QualityGate(spark, cfg, log=log).build_data_docs()
    print_latest_run(spark, cfg)
    log(f"Data Docs: {index}")
    return 0


def cmd_cluster(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.runtime.standalone import Standalone

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


def _add_setup(sub) -> None:
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


def _add_registry(sub) -> None:
    p = sub.add_parser("registry", help="print the event registry")
    p.add_argument("--format", choices=["json", "summary"], default="summary")
    p.set_defaults(func=cmd_registry)


def _add_refresh(sub) -> None:
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
        "--server-logs",
        metavar="DIR",
        help="copy Tableau Server's Activity Log files from DIR too (a node's logs folder or a `tsm "
        "maintenance ziplogs` archive), beside sources.server_logs.roots (docs/sources.md)",
    )
    p.add_argument("--server-node", metavar="NAME", help="the node --server-logs DIR comes from (default: its own)")
    p.add_argument(
        "--full-listing",
        action="store_true",
        help="walk every folder of the landing root, not only recent date folders",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="run every layer even when the file system shows nothing new since the last complete "
        "refresh (by default such a refresh stops before Spark starts: pipelines/refresh/nothing_new.py)",
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
        "--release",
        choices=RELEASES,
        help="release the batches a quality gate stopped: quarantine (their rows set aside, reason "
        "gate_stopped) or promote (the share thresholds waived for them, once the cause is dealt with)",
    )
    p.add_argument(
        "--summary",
        action="store_true",
        help="then print rows per table, quarantine by reason, files by verdict, the whole-lake "
        "reconciliation (as `reconcile`, exit 1 if it does not balance) and the latest "
        "quality run (reads all of history: slower as the lake grows)",
    )
    p.set_defaults(func=cmd_refresh, writes_lake=True)  # its gold layer makes the analysts' copies


def _add_serve(sub) -> None:
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


def _add_sql(sub) -> None:
    p = sub.add_parser("sql", help="run one SQL query on the lakehouse and print the result")
    p.add_argument("query")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--limit", type=positive_int, default=1000, help="print at most this many rows (default 1000)")
    p.set_defaults(func=cmd_sql)


def _add_gold(sub) -> None:
    p = sub.add_parser("gold", help="gold (dbt): `staging` rewrites the generated staging models; `dbt ARGS` runs dbt")
    gold = p.add_subparsers(dest="action", required=True)
    gold.add_parser("staging", help="rewrite the generated staging models from the registry").set_defaults(
        func=cmd_gold_staging
    )
    p = gold.add_parser("dbt", help="run dbt in-process on the lakehouse's session, e.g. `gold dbt build`")
    p.add_argument("dbt_args", nargs=argparse.REMAINDER, help="dbt's arguments (build ...)")
    p.set_defaults(func=cmd_gold_dbt)


def _add_reconcile(sub) -> None:
    p = sub.add_parser("reconcile", help="check bronze rows = silver + duplicates + quarantined (+ pending)")
    p.set_defaults(func=cmd_reconcile)


def _add_replay_quarantine(sub) -> None:
    p = sub.add_parser(
        "replay-quarantine", help="move quarantined rows of event types the registry has learnt since into silver, once"
    )
    p.add_argument("--wait", type=float, default=0.0, help="seconds to wait for a running refresh")
    p.set_defaults(func=cmd_replay_quarantine)


def _add_erase(sub) -> None:
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
    add_wait(p)
    p.set_defaults(func=cmd_erase, writes_lake=True)  # it makes the analysts' copies again


def _add_alerts(sub) -> None:
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
    add_wait(p)
    p.set_defaults(func=cmd_alerts)


def _add_export(sub) -> None:
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
    add_wait(p)
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
    add_wait(p)
    p.set_defaults(func=cmd_export_hyper)


def _add_publish(sub) -> None:
    p = sub.add_parser(
        "publish",
        help="the Hyper export as a data source on Tableau Cloud or Server (conf tableau.*): "
        "whole the first time, then only what changed (docs/tableau.md)",
    )
    p.add_argument("--out", metavar="DIR", help="the export's folder (default hyper.out_dir, else <data_dir>/hyper)")
    add_wait(p)
    p.set_defaults(func=cmd_publish)


def _add_pull(sub) -> None:
    p = sub.add_parser(
        "pull",
        help="the Activity Log (and entity snapshots) from Tableau Cloud Manager's Platform Data API into the "
        "landing tree, date-first, from each watermark less pull.overlap_minutes (conf pull.*, docs/pull.md)",
    )
    p.add_argument("--dest", metavar="DIR", help="the landing tree to write (default paths.landing_dir)")
    p.set_defaults(func=cmd_pull)


def _add_inventory(sub) -> None:
    p = sub.add_parser(
        "inventory",
        help="each site's users, groups, projects, content, data connections and permission rules from "
        "Tableau's REST API into the landing tree as entity snapshots (conf inventory.*, docs/sources.md)",
    )
    p.add_argument("--dest", metavar="DIR", help="the landing tree to write (default paths.landing_dir)")
    p.set_defaults(func=cmd_inventory)


def _add_dq(sub) -> None:
    p = sub.add_parser("dq", help="data quality: `auditlake dq report` builds the Data Docs site")
    dq = p.add_subparsers(dest="action", required=True)
    dq.add_parser("report", help="rebuild the Data Docs site, summarise the latest validation run").set_defaults(
        func=cmd_dq_report
    )


def _add_cluster(sub) -> None:
    p = sub.add_parser("cluster", help="a Spark standalone master + workers on this machine (conf: cluster:)")
    p.add_argument("action", choices=["start", "stop", "status"])
    p.set_defaults(func=cmd_cluster)


# One parser per command, in the order `auditlake --help` lists them.
COMMANDS = (
    _add_setup,
    _add_registry,
    _add_refresh,
    _add_serve,
    _add_sql,
    _add_gold,
    _add_reconcile,
    _add_replay_quarantine,
    _add_erase,
    add_verify,
    add_integrity,
    add_hold,
    add_retention,
    _add_alerts,
    _add_export,
    _add_publish,
    _add_pull,
    _add_inventory,
    _add_dq,
    _add_cluster,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="auditlake", description="Audit lakehouse for Tableau")
    parser.add_argument(
        "--env",
        help="configuration environment: a name (conf/<env>.yaml) or a YAML file of your own (path/to/prod.yaml, "
        "over conf/base.yaml); default $AUDITLAKE_ENV or local",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add_command in COMMANDS:
        add_command(sub)
    # tooling (auditlake_devtools: demo, generate, bench) registers itself; pipelines never imports it
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
        cfg = load_config(args.env, writes_lake=getattr(args, "writes_lake", False))
        return args.func(cfg, args)
    except KeyboardInterrupt:  # a refresh cut short is finished by the next one (crash safety)
        print("auditlake: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        kind, code = kind_of(exc)
        print(f"auditlake: {kind}: {one_line(exc)}", file=sys.stderr)
        if getattr(exc, "logged", True):  # a traceback tells more than the one line
            where = write_traceback(cfg)
            if where:
                print(f"auditlake: details (traceback, Java stack trace, plan) in {where}", file=sys.stderr)
        return code


if __name__ == "__main__":
    raise SystemExit(main())
