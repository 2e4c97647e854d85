"""Tableau Server's log files as a source: ``auditlake bench --layer server-logs --events 1000000``.

A log tree of ``events`` generated site events (two nodes, files rotated, the three line shapes)
under ``<data_dir>/bench/server-logs``, then, in one session on the same files: Spark's bare
``spark.read.text(...).count()`` of the tree after a warm-up scan, the copy of its lines into the
landing tree (``pipelines/server_logs``), and bronze landing the copies, in a lake of the bench's own.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

from auditlake_devtools import machine_speed
from auditlake_devtools.bench_harness import fresh_lake, ingest_cfg, timed
from pipelines.config.load import Config

ZONE = "Europe/Berlin"


def _tree(cfg: Config, events: int, log) -> tuple[Path, int]:
    from auditlake_devtools.sample.server_logs import ServerLogTree, generated_site_events

    root = cfg.data_dir / "bench" / "server-logs"
    tree = root / f"tree-{events}"
    done = root / f"tree-{events}.lines"  # beside the tree: its scan counts log lines only
    if done.is_file():
        return tree, int(done.read_text())
    shutil.rmtree(tree, ignore_errors=True)
    log(f"bench [server-logs]: generating a log tree of {events} events (once; reused by later runs)")
    written = ServerLogTree(tree, nodes=2, zone=ZONE, rotate_lines=50_000).append(
        generated_site_events(events, 42, datetime(2026, 6, 1, tzinfo=UTC), 7)
    )
    done.write_text(str(written))
    return tree, written


def bench_server_logs(cfg: Config, events: int, log) -> dict:
    from pipelines.activity_log.bronze.land import land_bronze
    from pipelines.refresh.layers import new_run_id
    from pipelines.runtime.spark_session import build_spark
    from pipelines.server_logs.pieces import copy_new_lines
    from pipelines.server_logs.roots import configured_roots

    tree, lines = _tree(cfg, events, log)
    roots = [{"path": str(tree / n), "node": n} for n in ("node1", "node2")]
    bcfg = ingest_cfg(
        cfg,
        tree.parent,
        {
            "AUDITLAKE__SOURCES__SERVER_LOGS__ROOTS": json.dumps(roots),
            "AUDITLAKE__SOURCES__SERVER_LOGS__TIMEZONE": ZONE,
        },
    )
    spark = build_spark(cfg)  # the session of the lake it runs from; the bench's tables are schemas of their own
    fresh_lake(spark, bcfg)
    shutil.rmtree(bcfg.landing_dir, ignore_errors=True)

    def bare_scan() -> int:
        return spark.read.option("recursiveFileLookup", "true").text(str(tree)).count()

    bare_scan()  # fills the OS file cache for both
    scanned, bare_s = timed(bare_scan)
    log(f"bench [server-logs]: bare text scan: {scanned} lines in {bare_s:.1f}s")
    s = bcfg.settings.sources.server_logs
    copied, copy_s = timed(
        lambda: copy_new_lines(
            spark, configured_roots(bcfg), s.timezone, bcfg.landing_dir, bcfg.checkpoint_dir, log=lambda _m: None
        )
    )
    log(f"bench [server-logs]: copy: {copied.lines} lines in {copied.pieces} pieces in {copy_s:.1f}s")
    landed, bronze_s = timed(lambda: land_bronze(spark, bcfg, new_run_id(), log=lambda _m: None))
    rows = sum(r.rows_landed for r in landed)
    log(f"bench [server-logs]: bronze: {rows} rows in {bronze_s:.1f}s")
    return {
        "events": events,
        "lines": lines,
        "scanned": scanned,
        "copied": copied.lines,
        "pieces": copied.pieces,
        "rows": rows,
        "bare_s": bare_s,
        "copy_s": copy_s,
        "bronze_s": bronze_s,
        "speed": machine_speed.describe(),
    }


def render_server_logs(fig: dict, cfg: Config) -> str:
    ratio = (fig["copy_s"] + fig["bronze_s"]) / fig["bare_s"] if fig["bare_s"] else float("nan")
    return "\n".join(
        [
            f"`auditlake bench --layer server-logs --events {fig['events']}`: a Tableau Server log tree of "
            f"{fig['lines']:,} lines (two nodes, files rotated every 50,000 lines; flat, envelope and native "
            f"lines), one session, `spark.master` {cfg.settings.spark.master}; {fig['speed']}.",
            "",
            "| step | lines / rows | seconds |",
            "|---|---:|---:|",
            f"| Spark's bare `read.text().count()` of the tree | {fig['scanned']:,} | {fig['bare_s']:.1f} |",
            f"| copy into the landing tree ({fig['pieces']} pieces) | {fig['copied']:,} | {fig['copy_s']:.1f} |",
            f"| bronze: land the pieces | {fig['rows']:,} | {fig['bronze_s']:.1f} |",
            f"| copy + bronze beside the bare scan | | {ratio:.1f}x |",
        ]
    )
