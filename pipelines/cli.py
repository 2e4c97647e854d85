"""``auditlake``: the command-line entry point.

    auditlake setup                         fetch Delta's JARs into the project cache (once)
    auditlake registry --format json        print the event registry
    auditlake generate --out DIR --events N [--seed S] [--start ISO --days D] [--dirty] [--layout L]
    auditlake generate-writeback --out FILE [--rows N] [--seed S] [--dirty]
    auditlake refresh --layers bronze [--source DIR]
    auditlake gold staging | dbt ARGS       regenerate dbt staging models; run dbt in-process
    auditlake sql "SELECT ..." [--format table|csv|json]
    auditlake serve                         Spark Thrift Server (JDBC/ODBC) on serve.host:serve.port
    auditlake cluster start|stop|status    a Spark standalone master + workers here (for --env cluster)
    auditlake demo                          generate sample data, refresh every layer, summarise
    auditlake bench --layer ingest|all --events N [--batches B]

Global: ``--env NAME`` (default $AUDITLAKE_ENV or ``local``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from pipelines.config import Config, ConfigError, load_config
from pipelines.generate.writer import LAYOUTS
from pipelines.ops import RefreshBusyError, refresh_lock

# Exit codes a scheduler can act on: 1 failed, 2 bad configuration, 75 (EX_TEMPFAIL) another
# refresh is running, try again later.
EXIT_BUSY = 75


def _iso(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time: {text!r}") from exc
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from exc
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def _log(msg: str) -> None:
    print(msg, flush=True)


def cmd_setup(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.jars import fetch_jars, missing_jars

    if not missing_jars(cfg):
        if args.verbose:
            _log("setup: Delta JARs already cached")
        return 0
    fetch_jars(cfg, log=_log)
    _log(f"setup: JARs cached in {cfg.path('paths.jars_dir')}")
    return 0


def cmd_registry(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.registry import load_registry

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


def _generate(cfg: Config, out: Path, events: int, seed: int, start: datetime, days: int, dirty: bool,
              layout: str = "auditlake") -> dict:
    from pipelines.generate import generate_activity_log

    started = time.monotonic()
    summary = generate_activity_log(out, events, seed=seed, start=start, days=days, dirty=dirty, progress=_log,
                                    layout=layout)
    _log(
        f"generate: {summary['records']} records in {summary['lines']} lines, {summary['files']} files "
        f"({summary['gzip_files']} gzip) under {out} in the {layout} layout in {time.monotonic() - started:.1f}s"
        + (f"; dirty: {json.dumps(summary['dirty'], sort_keys=True)}" if dirty else "")
    )
    return summary


def cmd_generate(cfg: Config, args: argparse.Namespace) -> int:
    start = args.start or _iso(cfg.get("generate.start"))
    days = args.days or cfg.get("generate.days")
    _generate(cfg, Path(args.out), args.events, args.seed, start, days, args.dirty, args.layout)
    return 0


def cmd_generate_writeback(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.writeback.generate import generate_historical_audit, write_export

    rows = generate_historical_audit(args.rows, seed=args.seed, dirty=args.dirty)
    path = write_export(Path(args.out), rows)
    _log(f"generate-writeback: {len(rows)} historical_audit rows ({args.rows} actions, both databases) -> {path}")
    return 0


def _print_summary(spark, cfg: Config, started: float) -> None:
    from pipelines.reconcile import format_files, format_reconciliation, reconcile, reconcile_files
    from pipelines.refresh import table_counts

    counts = table_counts(spark, cfg)
    width = max([len(table) for table, _, _ in counts] + [34]) + 1
    _log("")
    _log(f"{'table':<{width}} {'rows':>10}  note")
    for table, rows, note in counts:
        _log(f"{table:<{width}} {rows:>10}  {note}")
    files = reconcile_files(spark, cfg)
    if files is not None:
        _log("")
        _log(format_files(files))
    results = reconcile(spark, cfg)
    if results:
        _log("")
        _log(format_reconciliation(results, []))
    _log(f"time taken: {time.monotonic() - started:.1f}s")


def cmd_refresh(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.refresh import parse_layers, run_refresh
    from pipelines.spark_session import build_spark

    started = time.monotonic()
    layers = parse_layers(args.layers)
    source = Path(args.source) if args.source else None
    if source is not None and not source.is_dir():
        raise ConfigError(f"--source {source}: no such folder")
    with refresh_lock(cfg, wait_seconds=args.wait, log=_log):
        spark = build_spark(cfg)
        run_refresh(spark, cfg, layers, source, log=_log, full_listing=args.full_listing)
        if args.summary:  # reads every table whole: a look at the lake, not a cost for every run
            _print_summary(spark, cfg, started)
        else:
            _log(f"time taken: {time.monotonic() - started:.1f}s")
    return 0


def cmd_gold(cfg: Config, args: argparse.Namespace) -> int:
    """`auditlake gold staging` (from the registry) or `auditlake gold dbt ARGS` (in-process, on the
    lakehouse's own Spark session: the way to run dbt while honouring conf/)."""
    if args.action == "staging":
        from pipelines.gold.staging import write_staging

        write_staging(log=_log)
        return 0
    from pipelines.gold.run import run_dbt
    from pipelines.spark_session import build_spark

    if not args.dbt_args:
        raise ConfigError("auditlake gold dbt: give dbt's arguments, e.g. `auditlake gold dbt build`")
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
    from pipelines.serve import serve_forever
    from pipelines.spark_session import build_spark

    serve_forever(build_spark(cfg), cfg, log=_log)
    return 0


def cmd_reconcile(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.reconcile import format_files, format_reconciliation, reconcile, reconcile_files, run_figures
    from pipelines.spark_session import build_spark

    spark = build_spark(cfg)
    files = reconcile_files(spark, cfg)
    results = reconcile(spark, cfg)
    if not results and files is None:
        _log("reconcile: nothing landed yet")
        return 0
    if files is not None:
        _log(format_files(files))
        _log("")
    _log(format_reconciliation(results, run_figures(spark, cfg)))
    return 0 if all(r.balanced for r in results) and (files is None or files.balanced) else 1


def cmd_dq_report(cfg: Config, args: argparse.Namespace) -> int:
    """Rebuild the Data Docs site and summarise the latest validation run from ops.dq_results."""
    from pipelines.quality.gate import QualityGate
    from pipelines.spark_session import build_spark
    from pipelines.tables import tables

    spark = build_spark(cfg)
    index = QualityGate(spark, cfg, log=_log).build_data_docs()
    table = tables(cfg).dq_results
    if spark.catalog.tableExists(table):
        last = spark.sql(f"SELECT run_id FROM {table} ORDER BY validated_at DESC LIMIT 1").first()
        rows = spark.sql(
            f"SELECT checkpoint, severity, count(*) AS checked, count_if(NOT success) AS failed FROM {table} "
            f"WHERE run_id = '{last['run_id']}' GROUP BY checkpoint, severity ORDER BY checkpoint, severity"
        ).collect()
        _log(f"latest run {last['run_id']}:")
        for r in rows:
            _log(f"  {r['checkpoint']:<45} {r['severity']:<9} {r['checked']:>4} checked {r['failed']:>4} failed")
    _log(f"Data Docs: {index}")
    return 0


def cmd_demo(cfg: Config, args: argparse.Namespace) -> int:
    """Generate sample data into the landing folder (once) and refresh every layer."""
    from pipelines.refresh import LAYERS, run_refresh
    from pipelines.spark_session import build_spark

    started = time.monotonic()
    landing = cfg.path("paths.landing_dir")
    if landing.is_dir() and any(landing.iterdir()):
        _log(f"demo: sample data already in {landing} (delete {cfg.data_dir} to start over)")
    else:
        _generate(
            cfg,
            landing,
            cfg.get("generate.events"),
            cfg.get("generate.seed"),
            _iso(cfg.get("generate.start")),
            cfg.get("generate.days"),
            dirty=True,
            layout=cfg.get("generate.layout"),
        )
    with refresh_lock(cfg, log=_log):
        spark = build_spark(cfg)
        run_refresh(spark, cfg, list(LAYERS), None, log=_log)
        _print_summary(spark, cfg, started)
    return 0


def cmd_cluster(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.standalone import Standalone

    cluster = Standalone.from_config(cfg)
    if args.action == "start":
        cluster.start(log=_log)
        _log(f"cluster: up; run `auditlake --env cluster refresh` (spark.master {cluster.master_url}), "
             "then `auditlake cluster stop`")
    elif args.action == "stop":
        cluster.stop(log=_log)
    else:
        state = cluster.state()
        running = cluster.running()
        print(json.dumps({"master": cluster.master_url, "processes": running,
                          "alive_workers": (state or {}).get("aliveworkers", 0),
                          "cores": (state or {}).get("cores", 0), "status": (state or {}).get("status", "DOWN")}))
        return 0 if state else 1
    return 0


def cmd_bench(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.bench import run_bench

    run_bench(cfg, layer=args.layer, events=args.events, out_doc=Path(args.doc), batches=args.batches, log=_log)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="auditlake", description="Audit lakehouse for Tableau")
    parser.add_argument("--env", help="configuration environment (conf/<env>.yaml); default $AUDITLAKE_ENV or local")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("setup", help="fetch Delta's JARs into the project cache (idempotent)")
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(func=cmd_setup)

    p = sub.add_parser("registry", help="print the event registry")
    p.add_argument("--format", choices=["json", "summary"], default="summary")
    p.set_defaults(func=cmd_registry)

    p = sub.add_parser("generate", help="write a realistic sample Activity Log")
    p.add_argument("--out", required=True)
    p.add_argument("--events", type=_positive, required=True)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--start", type=_iso, help="first event hour, ISO-8601 (default from conf)")
    p.add_argument("--days", type=_positive, help="days of activity (default from conf)")
    p.add_argument(
        "--dirty", action="store_true", help="add what real feeds contain (malformed lines, duplicates, ...)"
    )
    p.add_argument("--layout", choices=list(LAYOUTS), default="auditlake",
                   help="auditlake: site/ and tenant/ folders; date_first / schema_first: Tableau's own trees "
                        "(pod=…/siteLuid=…/…, tenant files without siteLuid=)")
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("generate-writeback", help="write a sample Write-Back historical_audit export")
    p.add_argument("--out", required=True, help="export file: .ndjson or .csv")
    p.add_argument("--rows", type=_positive, default=300, help="user actions (data changes land in both databases)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--dirty", action="store_true", help="add rows with impossible values (quarantined in silver)")
    p.set_defaults(func=cmd_generate_writeback)

    p = sub.add_parser("refresh", help="run the layered refresh")
    p.add_argument(
        "--layers", default="bronze,silver,gold", help="comma-separated layers (default: bronze,silver,gold)"
    )
    p.add_argument("--source", help="landing root to read (default paths.landing_dir): the project's site/ and "
                                    "tenant/ folders or Tableau's siteLuid=/eventType= layouts, in any mix")
    p.add_argument("--full-listing", action="store_true",
                   help="walk every folder of the landing root, not only recent date folders")
    p.add_argument(
        "--wait", type=float, default=0.0, metavar="SECONDS",
        help="if another refresh is running, wait up to this long for it (default: exit at once, code 75)",
    )
    p.add_argument("--summary", action="store_true",
                   help="then print rows per table, quarantine by reason, files by verdict and the whole-lake "
                        "reconciliation (reads all of history: slower as the lake grows)")
    p.set_defaults(func=cmd_refresh)

    p = sub.add_parser("serve", help="start the Spark Thrift Server (JDBC/ODBC) over the lakehouse")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("sql", help="run one SQL query on the lakehouse and print the result")
    p.add_argument("query")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--limit", type=_positive, default=1000, help="print at most this many rows (default 1000)")
    p.set_defaults(func=cmd_sql)

    p = sub.add_parser("gold", help="gold (dbt): `staging` rewrites the generated staging models; `dbt ARGS` runs dbt")
    p.add_argument("action", choices=["staging", "dbt"])
    p.add_argument("dbt_args", nargs=argparse.REMAINDER, help="for `dbt`: its arguments (build ...)")
    p.set_defaults(func=cmd_gold)

    p = sub.add_parser("reconcile", help="check bronze rows = silver + duplicates + quarantined (+ pending)")
    p.set_defaults(func=cmd_reconcile)

    p = sub.add_parser("dq", help="data quality: `auditlake dq report` builds the Data Docs site")
    p.add_argument("action", choices=["report"])
    p.set_defaults(func=cmd_dq_report)

    p = sub.add_parser("demo", help="generate sample data and run every layer on the embedded default")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("cluster", help="a Spark standalone master + workers on this machine (conf: cluster:)")
    p.add_argument("action", choices=["start", "stop", "status"])
    p.set_defaults(func=cmd_cluster)

    p = sub.add_parser("bench", help="measure a layer, or the whole refresh as history grows (docs/performance.md)")
    p.add_argument("--layer", choices=["ingest", "all"], default="ingest",
                   help="ingest: bronze and silver on the generated set and a many-small-files set, beside Spark's "
                        "bare scan and DuckDB; all: one refresh of every layer per delivery batch")
    p.add_argument("--events", type=_positive, default=1_000_000)
    p.add_argument("--batches", type=_positive, default=10, help="--layer all: deliveries the events arrive in")
    p.add_argument("--doc", default="docs/performance.md")
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        cfg = load_config(args.env)
        return args.func(cfg, args)
    except ConfigError as exc:
        print(f"auditlake: configuration error: {exc}", file=sys.stderr)
        return 2
    except RefreshBusyError as exc:
        print(f"auditlake: {exc}", file=sys.stderr)
        return EXIT_BUSY
    except Exception as exc:  # one line a person can act on; the whole story in the log file
        print(f"auditlake: error: {_one_line(exc)}", file=sys.stderr)
        where = _write_traceback(cfg if "cfg" in locals() else None)
        if where:
            print(f"auditlake: details (Java stack trace, plan) in {where}", file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    """The first line of what went wrong: for a Spark error its own message, without the JVM stack
    trace and plan Spark appends."""
    text = str(exc).strip() or type(exc).__name__
    for marker in ("\nJVM stacktrace:", "\n\tat ", "\n== "):
        text = text.split(marker)[0]
    lines = [ln for ln in text.splitlines() if ln.strip()]
    head = lines[0] if lines else text
    return head if len(lines) <= 1 or len(head) > 80 else f"{head} {lines[1].strip()}"


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
