"""The ``auditlake`` commands that use the sample generators or the benchmarks: ``demo``,
``generate activity-log``, ``generate writeback``, ``generate inventory`` and ``bench``. Registered through the
``auditlake.commands`` entry point group (pyproject.toml), so the product's CLI
(``pipelines/cli.py``) lists them without importing ``auditlake_devtools``."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from auditlake_devtools.demo_sample import generate_and_report, write_demo_landing
from pipelines.command.arguments import iso_time, positive_int
from pipelines.command.console import log
from pipelines.config.load import Config


def cmd_generate_activity_log(cfg: Config, args: argparse.Namespace) -> int:
    start = args.start or iso_time(cfg.settings.generate.start)
    days = args.days or cfg.settings.generate.days
    generate_and_report(
        Path(args.out),
        args.events,
        args.seed,
        start,
        days,
        args.dirty,
        args.layout,
        live_feed=args.live_feed,
        security_stories=args.security_stories,
        snapshots=args.snapshots,
        snapshot_every=args.snapshot_every,
    )
    return 0


def cmd_generate_server_logs(cfg: Config, args: argparse.Namespace) -> int:
    import time

    from auditlake_devtools.sample.server_logs import write_server_log_tree

    started = time.monotonic()
    start = args.start or iso_time(cfg.settings.generate.start)
    tree = write_server_log_tree(
        Path(args.out),
        args.events,
        args.seed,
        start,
        args.days or cfg.settings.generate.days,
        args.nodes,
        args.zone,
        args.rotate_lines,
    )
    shapes = ", ".join(f"{n} {shape}" for shape, n in sorted(tree.lines.items()))
    files = sum(1 for p in Path(args.out).rglob("*.log"))
    log(
        f"generate server-logs: {sum(tree.lines.values())} lines ({shapes}) in {files} files of {args.nodes} nodes "
        f"under {args.out} (local time {args.zone}) in {time.monotonic() - started:.1f}s"
    )
    return 0


def cmd_generate_writeback(_cfg: Config, args: argparse.Namespace) -> int:
    from auditlake_devtools.sample.writeback import generate_historical_audit, write_export

    rows = generate_historical_audit(args.rows, seed=args.seed, dirty=args.dirty)
    path = write_export(Path(args.out), rows)
    log(f"generate writeback: {len(rows)} historical_audit rows ({args.rows} actions, both databases) -> {path}")
    return 0


def cmd_generate_inventory(cfg: Config, args: argparse.Namespace) -> int:
    from auditlake_devtools.sample.tableau_site import write_sample_inventory

    start = args.start or iso_time(cfg.settings.generate.start)
    write_sample_inventory(cfg, Path(args.out), args.seed, start, args.at or start, log=log)
    return 0


def cmd_demo(cfg: Config, args: argparse.Namespace) -> int:
    """Generate sample data into the landing folder (once), then refresh every layer with the summary."""
    from pipelines.refresh import LAYERS
    from pipelines.refresh.command import refresh

    landing = cfg.path("paths.landing_dir")
    if landing.is_dir() and any(landing.iterdir()):
        # the landing folder may lie outside the data dir (paths.landing_dir): name each one to delete
        again = cfg.data_dir if landing.is_relative_to(cfg.data_dir) else f"{landing} and {cfg.data_dir}"
        log(f"demo: sample data already in {landing} (delete {again} to start over)")
    else:
        write_demo_landing(cfg, landing)
    _place_writeback_sample(cfg)
    return 0 if refresh(cfg, list(LAYERS), summary=True) else 1


def _place_writeback_sample(cfg: Config) -> None:
    """The bundled Write-Back export where conf reads it (``writeback.file.path``): in a checkout it is
    there already; an installed package reads conf's relative path from the current folder."""
    from auditlake_devtools.sample import BUNDLED_EXPORT

    target = cfg.path("writeback.file.path")
    if cfg.settings.writeback.source == "file" and not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(BUNDLED_EXPORT, target)
        log(f"demo: the sample Write-Back export copied to {target} (writeback.file.path)")


def cmd_bench(cfg: Config, args: argparse.Namespace) -> int:
    from auditlake_devtools.bench import run_bench

    run_bench(
        cfg,
        layer=args.layer,
        events=args.events,
        out_doc=Path(args.doc),
        batches=args.batches,
        log=log,
        delivery=args.delivery,
        sessions=args.sessions,
        seconds=args.seconds,
    )
    return 0


def cmd_docs_analyst_guide(cfg: Config, args: argparse.Namespace) -> int:
    from auditlake_devtools.analyst_guide import GUIDE, write_guide
    from pipelines.runtime.spark_session import build_spark

    write_guide(build_spark(cfg), Path(args.guide) if args.guide else GUIDE, log=log)
    return 0


def cmd_docs_mart_contract(cfg: Config, args: argparse.Namespace) -> int:
    from auditlake_devtools.mart_contract import CONTRACT, mart_columns, write_contract
    from pipelines.lake.table_names import tables
    from pipelines.runtime.spark_session import build_spark

    columns = mart_columns(build_spark(cfg), tables(cfg).gold_schema)
    write_contract(columns, Path(args.out) if args.out else CONTRACT)
    log(f"mart contract: {len(columns)} marts, {sum(map(len, columns.values()))} columns -> {args.out or CONTRACT}")
    return 0


def register(sub) -> None:
    """Add the tooling commands to ``auditlake``'s sub-command parser."""
    from auditlake_devtools.sample.activity_log.writer import LAYOUTS

    p = sub.add_parser("demo", help="generate sample data and run every layer on the embedded default")
    p.set_defaults(func=cmd_demo, writes_lake=True)  # its refresh makes the analysts' copies

    p = sub.add_parser("generate", help="write sample data: `activity-log`, `server-logs`, `writeback` or `inventory`")
    generate = p.add_subparsers(dest="source", required=True)
    p = generate.add_parser("activity-log", help="a realistic sample Activity Log, as Tableau delivers it")
    p.add_argument("--out", required=True)
    p.add_argument("--events", type=positive_int, required=True)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--start", type=iso_time, help="first event hour, ISO-8601 (default from conf)")
    p.add_argument("--days", type=positive_int, help="days of activity (default from conf)")
    p.add_argument(
        "--dirty", action="store_true", help="add what real feeds contain (malformed lines, duplicates, ...)"
    )
    p.add_argument(
        "--layout",
        choices=list(LAYOUTS),
        default="auditlake",
        help="auditlake: site/ and tenant/ folders; date_first / schema_first: Tableau's own trees "
        "(pod=…/siteLuid=…/…, tenant files without siteLuid=)",
    )
    p.add_argument(
        "--live-feed",
        action="store_true",
        help="also what the live feed carries beyond the bundled references (eventOutcome, "
        "eventProcessedTime, serviceName, vizql_http_request, bridge_job, login_authentication, "
        "add_delete_group_to_group_set)",
    )
    p.add_argument(
        "--security-stories",
        action="store_true",
        help="also a situation for each detection report (escalation, impersonation, mass download, "
        "a leaver's token, a new sign-in address, security changes at night)",
    )
    p.add_argument(
        "--snapshots",
        action="store_true",
        help="also the hourly entity snapshots Cloud Manager delivers beside the log (users, groups, "
        "group_members, workbooks, datasources: …/entityType=<type>/part-00000.parquet per site)",
    )
    p.add_argument(
        "--snapshot-every",
        type=positive_int,
        default=1,
        metavar="H",
        help="with --snapshots: one snapshot every H hours from the window's start (default 1)",
    )
    p.set_defaults(func=cmd_generate_activity_log)

    p = generate.add_parser(
        "server-logs", help="a sample Tableau Server log tree: Activity Log files of several nodes, rotated"
    )
    p.add_argument("--out", required=True, help="the tree's root (a folder per node)")
    p.add_argument("--events", type=positive_int, required=True, help="site events generated (as activity-log)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--start", type=iso_time, help="first event hour, ISO-8601 (default from conf)")
    p.add_argument("--days", type=positive_int, help="days of activity (default from conf)")
    p.add_argument("--nodes", type=positive_int, default=2)
    p.add_argument("--zone", default="Europe/Berlin", help="the servers' time zone: native lines' ts is local")
    p.add_argument("--rotate-lines", type=positive_int, default=50_000, help="lines per file before it rotates")
    p.set_defaults(func=cmd_generate_server_logs)

    p = generate.add_parser(
        "inventory",
        help="the sample sites' users, content and permissions, as `auditlake inventory` writes them from "
        "Tableau's REST API (served on loopback from the world of --seed and --start)",
    )
    p.add_argument("--out", required=True, help="the landing tree to write")
    p.add_argument("--seed", type=int, default=42, help="the world's seed (as generate activity-log)")
    p.add_argument("--start", type=iso_time, help="the log's first day (default generate.start): the same world")
    p.add_argument("--at", type=iso_time, help="the hour the state is taken at (default --start)")
    p.set_defaults(func=cmd_generate_inventory)

    p = generate.add_parser("writeback", help="a sample Write-Back historical_audit export")
    p.add_argument("--out", required=True, help="export file: .ndjson or .csv")
    p.add_argument("--rows", type=positive_int, default=300, help="user actions (data changes land in both databases)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--dirty", action="store_true", help="add rows with impossible values (quarantined in silver)")
    p.set_defaults(func=cmd_generate_writeback)

    p = sub.add_parser("bench", help="measure a layer, or the whole refresh as history grows (docs/performance.md)")
    p.add_argument(
        "--layer",
        choices=["ingest", "all", "export", "refresh", "history", "serve", "trail", "server-logs"],
        default="ingest",
        help="ingest: bronze and silver on the generated set and a many-small-files set, beside Spark's "
        "bare scan and DuckDB; all: one refresh of every layer per delivery batch; export: the Hyper "
        "export, full and after a +1%% delivery, beside Spark's bare copy; refresh: whole "
        "`auditlake refresh` processes on the demo's sample: first load, nothing new, a delivery; "
        "history: a delivery's gold on 0.5M events of history and on --events (silver seeded); "
        "serve: --sessions analysts on the analysts' server of this lake, alone and beside an abusive session, "
        "with one session each, a session per statement (closed, after GetTables and GetColumns, never closed); "
        "trail: the signed digest's share of a +1%% delivery's refresh, and `verify` beside Spark's bare scan; "
        "server-logs: a Tableau Server log tree copied and landed, beside Spark's bare scan of it",
    )
    p.add_argument("--events", type=positive_int, default=1_000_000)
    p.add_argument("--batches", type=positive_int, default=10, help="--layer all: deliveries the events arrive in")
    p.add_argument(
        "--delivery",
        type=positive_int,
        help="--layer refresh / history: the new events of the delivery measured (the next day's; "
        "default: BENCH_DELIVERY in auditlake_devtools/bench.py)",
    )
    p.add_argument("--sessions", type=positive_int, default=8, help="--layer serve: ordinary analysts' sessions")
    p.add_argument("--seconds", type=positive_int, default=120, help="--layer serve: how long each phase runs")
    p.add_argument("--doc", default="docs/performance.md")
    p.set_defaults(func=cmd_bench, writes_lake=True)  # its refreshes make the analysts' copies

    p = sub.add_parser("docs", help="`analyst-guide`, `mart-contract`: a committed file written from this lake")
    docs = p.add_subparsers(dest="doc", required=True)
    p = docs.add_parser("analyst-guide", help="after `make demo`: each SQL block's output table from the demo lake")
    p.add_argument("--guide", help="the guide to rewrite (default docs/analyst-guide.md)")
    p.set_defaults(func=cmd_docs_analyst_guide)
    p = docs.add_parser("mart-contract", help="after a refresh: every mart's columns and types, from the lake's gold")
    p.add_argument("--out", help="the list to write (default dbt_project/contract/marts.yml)")
    p.set_defaults(func=cmd_docs_mart_contract)
