"""Benchmarks (not tests): measure a layer against the bare cost of reading the same files.

``auditlake bench --layer bronze --events 1000000`` generates (or reuses) a sample
Activity Log under ``<data_dir>/bench``, then times, in one process on the same files:
a bare ``spark.read.text(...).count()`` and a full bronze landing into a fresh table.
Figures are written into ``docs/performance.md`` between markers, so re-running
replaces the previous figures of that layer only.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

from pipelines import bronze
from pipelines.config import Config, load_config
from pipelines.refresh import new_run_id


def _bench_cfg(cfg: Config, root: Path) -> Config:
    """Same settings, but checkpoints and tables of their own (never the real lakehouse's)."""
    environ = dict(os.environ)
    environ["AUDITLAKE__PATHS__DATA_DIR"] = str(root / "lake")
    environ["AUDITLAKE__BRONZE__SCHEMA"] = "bench_bronze"
    return load_config(cfg.env, environ=environ)


def _dataset(cfg: Config, events: int, log) -> tuple[Path, dict]:
    from pipelines.generate import generate_activity_log

    root = cfg.data_dir / "bench" / f"events-{events}"
    landing = root / "landing"
    marker = root / "generated.ok"
    if marker.is_file():
        log(f"bench: reusing {landing}")
        files = [p for p in landing.rglob("*") if p.is_file()]
        return landing, {"files": len(files), "bytes": sum(p.stat().st_size for p in files), "reused": True}
    shutil.rmtree(root, ignore_errors=True)
    started = time.monotonic()
    summary = generate_activity_log(landing, events, seed=1, days=7, progress=log)
    log(f"bench: generated {summary['records']} records in {time.monotonic() - started:.0f}s")
    marker.write_text("ok\n")
    files = [p for p in landing.rglob("*") if p.is_file()]
    return landing, {"files": len(files), "bytes": sum(p.stat().st_size for p in files), "reused": False}


def _timed(fn):
    started = time.monotonic()
    value = fn()
    return value, time.monotonic() - started


def bench_bronze(cfg: Config, events: int, log) -> dict:
    from pipelines.spark_session import build_spark

    landing, data = _dataset(cfg, events, log)
    bcfg = _bench_cfg(cfg, landing.parent)
    shutil.rmtree(bcfg.data_dir, ignore_errors=True)
    spark = build_spark(cfg)
    spark.sql(f"DROP DATABASE IF EXISTS {bcfg.get('bronze.schema')} CASCADE")

    def bare_scan() -> int:
        return spark.read.option("recursiveFileLookup", "true").text(str(landing)).count()

    log("bench: warm-up scan (fills the OS file cache; not measured)")
    bare_scan()
    lines, bare_s = _timed(bare_scan)
    log(f"bench: bare text scan: {lines} lines in {bare_s:.1f}s")
    results, bronze_s = _timed(lambda: bronze.land_bronze(spark, bcfg, new_run_id(), log=log))
    rows = sum(r.rows_landed for r in results)
    log(f"bench: bronze landing: {rows} rows in {bronze_s:.1f}s")
    if rows != lines:
        raise RuntimeError(f"bronze landed {rows} rows but the files hold {lines} lines")
    return {
        "events": events,
        "lines": lines,
        "files": data["files"],
        "megabytes": data["bytes"] / 1e6,
        "bare_s": bare_s,
        "bronze_s": bronze_s,
        "ratio": bronze_s / bare_s,
    }


def _machine() -> str:
    return f"{os.cpu_count()} cores, {platform.system()} {platform.machine()}, Python {platform.python_version()}"


def render_bronze(fig: dict, cfg: Config) -> str:
    return "\n".join(
        [
            f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {_machine()}, Spark master "
            f"`{cfg.get('spark.master')}`, driver memory {cfg.get('spark.driver_memory')}.",
            "",
            f"Data: {fig['events']:,} generated events, {fig['lines']:,} lines in {fig['files']:,} files "
            f"({fig['megabytes']:.0f} MB on disk, about 1 file in 5 gzip-compressed, both record shapes).",
            "",
            "| step | seconds | lines/s |",
            "|---|---:|---:|",
            f"| bare `spark.read.text(...).count()` | {fig['bare_s']:.1f} | {fig['lines'] / fig['bare_s']:,.0f} |",
            f"| bronze landing (parse routing fields, hash, Delta append, checkpoint) | {fig['bronze_s']:.1f} "
            f"| {fig['lines'] / fig['bronze_s']:,.0f} |",
            "",
            f"Ratio bronze / bare scan: **{fig['ratio']:.2f}x** (target: at most 2x).",
        ]
    )


def write_section(doc: Path, layer: str, body: str) -> None:
    """Replace (or add) the ``layer`` section of the performance document."""
    begin, end = f"<!-- bench:{layer}:begin -->", f"<!-- bench:{layer}:end -->"
    text = (
        doc.read_text(encoding="utf-8") if doc.is_file() else "# Performance\n\nFigures written by `auditlake bench`.\n"
    )
    block = f"{begin}\n{body}\n{end}"
    if begin in text:
        text = re.sub(re.escape(begin) + r".*?" + re.escape(end), lambda _m: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + f"\n\n## {layer}\n\n{block}\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text, encoding="utf-8")


def run_bench(cfg: Config, layer: str, events: int, out_doc: Path, log=print) -> dict:
    if layer != "bronze":
        raise ValueError(f"no benchmark for layer {layer!r} yet")
    figures = bench_bronze(cfg, events, log)
    write_section(out_doc, "bronze", render_bronze(figures, cfg))
    log(f"bench: ratio {figures['ratio']:.2f}x; figures written to {out_doc}")
    return figures
