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
from pipelines.config import LAYER_SCHEMAS, Config, load_config, variant_environ
from pipelines.refresh import new_run_id


def _bench_cfg(cfg: Config, root: Path) -> Config:
    """Same settings, but a lakehouse of its own (never the real one's tables or checkpoints)."""
    return load_config(cfg.env, environ=variant_environ(root / "lake", "bench"))


def _fresh_lake(spark, bcfg: Config) -> None:
    shutil.rmtree(bcfg.data_dir, ignore_errors=True)
    gold = bcfg.get("gold.schema")
    for schema in [bcfg.get(f"{layer}.schema") for layer in LAYER_SCHEMAS] + [f"{gold}_staging"]:
        spark.sql(f"DROP DATABASE IF EXISTS {schema} CASCADE")


def _dataset(cfg: Config, events: int, log) -> tuple[Path, dict]:
    from pipelines.generate import generate_activity_log

    root = cfg.data_dir / "bench" / f"events-{events}"
    landing = root / "landing"
    marker = root / "generated.ok"
    if marker.is_file():
        _drop_increments(landing)
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


_INCREMENT_PREFIX = "part-increment-"


def _drop_increments(landing: Path) -> None:
    """Files an incremental measurement added to a reused data set are not part of it."""
    for path in landing.rglob(f"{_INCREMENT_PREFIX}*"):
        path.unlink()


def _timed(fn):
    started = time.monotonic()
    value = fn()
    return value, time.monotonic() - started


def _prepare(cfg: Config, events: int, log):
    """The data set, a fresh bench lake, and the bare scan measured after a warm-up scan."""
    from pipelines.spark_session import build_spark

    landing, data = _dataset(cfg, events, log)
    bcfg = _bench_cfg(cfg, landing.parent)
    spark = build_spark(cfg)
    _fresh_lake(spark, bcfg)

    def bare_scan() -> int:
        return spark.read.option("recursiveFileLookup", "true").text(str(landing)).count()

    log("bench: warm-up scan (fills the OS file cache; not measured)")
    bare_scan()
    lines, bare_s = _timed(bare_scan)
    log(f"bench: bare text scan: {lines} lines in {bare_s:.1f}s")
    return spark, landing, data, bcfg, lines, bare_s


def bench_bronze(cfg: Config, events: int, log) -> dict:
    spark, landing, data, bcfg, lines, bare_s = _prepare(cfg, events, log)
    results, bronze_s = _timed(lambda: bronze.land_bronze(spark, bcfg, new_run_id(), source_dir=landing, log=log))
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


def duckdb_convert(landing: Path, out: Path, union_by_name: bool) -> tuple[int, int]:
    """The reference a user might pick instead: DuckDB's read_json_auto -> Parquet, same files.

    ``union_by_name`` keeps every attribute of every file (the faithful conversion); without it
    DuckDB takes the schema of a sample and drops the keys it did not see. -> (rows, columns)."""
    import duckdb

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    con = duckdb.connect()
    # Same 2 cores as Spark; leave memory for the Spark driver in the same run; spill to disk.
    con.execute("SET threads TO 2")
    con.execute("SET memory_limit = '8GB'")
    con.execute("SET preserve_insertion_order = false")
    con.execute(f"SET temp_directory = '{out / 'spill'}'")
    glob = str(landing / "**" / "*.json*")
    src = f"read_json_auto('{glob}', format='newline_delimited', ignore_errors=true" + (
        ", union_by_name=true)" if union_by_name else ")"
    )
    target = out / "events.parquet"
    con.execute(f"COPY (SELECT * FROM {src}) TO '{target}' (FORMAT parquet)")
    rows = con.execute(f"SELECT count(*) FROM '{target}'").fetchone()[0]
    columns = len(con.execute(f"DESCRIBE SELECT * FROM '{target}'").fetchall())
    return rows, columns


def _duckdb_reference(landing: Path, union_by_name: bool, log) -> dict:
    label = "union_by_name" if union_by_name else "sampled schema"
    try:
        (rows, columns), seconds = _timed(lambda: duckdb_convert(landing, landing.parent / "duckdb", union_by_name))
        log(f"bench: duckdb read_json_auto ({label}) -> parquet: {rows} rows, {columns} columns in {seconds:.1f}s")
        return {"rows": rows, "columns": columns, "seconds": seconds, "error": None}
    except Exception as exc:  # the reference failing is a finding, reported as such
        error = str(exc).splitlines()[0][:160]
        log(f"bench: duckdb read_json_auto ({label}) -> parquet failed: {error}")
        return {"rows": 0, "columns": 0, "seconds": float("nan"), "error": error}


def bench_silver(cfg: Config, events: int, log) -> dict:
    from pipelines.generate import generate_activity_log
    from pipelines.silver.promote import promote_silver

    spark, landing, data, bcfg, lines, bare_s = _prepare(cfg, events, log)
    landed, bronze_s = _timed(lambda: bronze.land_bronze(spark, bcfg, new_run_id(), source_dir=landing, log=log))
    log(f"bench: bronze: {sum(r.rows_landed for r in landed)} rows in {bronze_s:.1f}s")
    promoted, silver_s = _timed(lambda: promote_silver(spark, bcfg, new_run_id(), log=log))
    inserted = sum(r.inserted for r in promoted)
    log(f"bench: bronze->silver: {inserted} events in {silver_s:.1f}s")
    duck_union = _duckdb_reference(landing, True, log)
    duck_sampled = _duckdb_reference(landing, False, log)

    # Incremental: 1% more events in new files, then one bronze+silver refresh.
    extra_events = max(1, events // 100)
    extra_root = landing.parent / "increment"
    shutil.rmtree(extra_root, ignore_errors=True)
    generate_activity_log(extra_root, extra_events, seed=2, days=1, start=None)
    moved = 0
    for path in sorted(extra_root.rglob("*")):
        if path.is_file():
            target = landing / path.relative_to(extra_root)
            target = target.with_name(f"{_INCREMENT_PREFIX}{moved:05d}-{target.name}")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(path), target)
            moved += 1
    shutil.rmtree(extra_root, ignore_errors=True)
    # the same two steps as the full run above (no quality gates, no write-back source)
    landed_incr, incr_bronze_s = _timed(
        lambda: bronze.land_bronze(spark, bcfg, new_run_id(), source_dir=landing, log=log)
    )
    _, incr_silver_s = _timed(lambda: promote_silver(spark, bcfg, new_run_id(), log=log))
    incr_s = incr_bronze_s + incr_silver_s
    incr_rows = sum(r.rows_landed for r in landed_incr)
    log(f"bench: incremental refresh of {incr_rows} new lines in {incr_s:.1f}s")
    _drop_increments(landing)
    full_s = bronze_s + silver_s
    return {
        "events": events,
        "lines": lines,
        "files": data["files"],
        "megabytes": data["bytes"] / 1e6,
        "bare_s": bare_s,
        "bronze_s": bronze_s,
        "silver_s": silver_s,
        "inserted": inserted,
        "duck_union": duck_union,
        "duck_sampled": duck_sampled,
        "incr_lines": incr_rows,
        "incr_bronze_s": incr_bronze_s,
        "incr_silver_s": incr_silver_s,
        "incr_s": incr_s,
        "ratio_incr": incr_s / full_s,
    }


def _duck_row(label: str, duck: dict, lines: int) -> str:
    if duck["error"]:
        return f"| {label} | failed: {duck['error']} | |"
    return (
        f"| {label} ({duck['rows']:,} rows, {duck['columns']} columns, untyped) | {duck['seconds']:.1f} "
        f"| {lines / duck['seconds']:,.0f} |"
    )


def render_silver(fig: dict, cfg: Config) -> str:
    full = fig["bronze_s"] + fig["silver_s"]
    ratios = [
        f"bronze+silver / DuckDB ({name}): **{full / d['seconds']:.2f}x**"
        for name, d in (("union_by_name", fig["duck_union"]), ("sampled schema", fig["duck_sampled"]))
        if not d["error"]
    ]
    return "\n".join(
        [
            f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {_machine()}, Spark master "
            f"`{cfg.get('spark.master')}`, driver memory {cfg.get('spark.driver_memory')}.",
            "",
            f"Data: {fig['events']:,} generated events, {fig['lines']:,} lines in {fig['files']:,} files "
            f"({fig['megabytes']:.0f} MB).",
            "",
            "| step | seconds | lines/s |",
            "|---|---:|---:|",
            f"| bare `spark.read.text(...).count()` | {fig['bare_s']:.1f} | {fig['lines'] / fig['bare_s']:,.0f} |",
            f"| bronze landing | {fig['bronze_s']:.1f} | {fig['lines'] / fig['bronze_s']:,.0f} |",
            f"| bronze -> silver ({fig['inserted']:,} typed events, views included) | {fig['silver_s']:.1f} "
            f"| {fig['lines'] / fig['silver_s']:,.0f} |",
            f"| **bronze + silver** | **{full:.1f}** | {fig['lines'] / full:,.0f} |",
            _duck_row("DuckDB `read_json_auto(union_by_name=true)` -> Parquet", fig["duck_union"], fig["lines"]),
            _duck_row("DuckDB `read_json_auto` (sampled schema) -> Parquet", fig["duck_sampled"], fig["lines"]),
            f"| incremental: +{fig['incr_lines']:,} lines (1%): bronze {fig['incr_bronze_s']:.1f}s "
            f"+ silver {fig['incr_silver_s']:.1f}s | {fig['incr_s']:.1f} | |",
            "",
            ("; ".join(ratios) or "No DuckDB ratio: both reference conversions failed")
            + f". Incremental 1% / full: **{fig['ratio_incr']:.1%}** (target at most 10%).",
        ]
    )


_HOUR = re.compile(r"/y=(\d{4})/m=(\d{2})/d=(\d{2})/h=(\d{2})/")


def delivery_batches(landing: Path, batches: int) -> list[list[Path]]:
    """The data set's files cut into ``batches`` deliveries of consecutive hours (as Tableau
    delivers them: each batch is newer activity than the one before)."""
    by_hour: dict[tuple, list[Path]] = {}
    for path in landing.rglob("*"):
        if path.is_file():
            match = _HOUR.search(path.as_posix())
            by_hour.setdefault(match.groups() if match else ("",), []).append(path)
    hours = sorted(by_hour)
    if len(hours) < batches:
        raise ValueError(f"{len(hours)} hours of activity cannot make {batches} batches")
    cuts = [round(i * len(hours) / batches) for i in range(batches + 1)]
    return [sorted(p for h in hours[cuts[i] : cuts[i + 1]] for p in by_hour[h]) for i in range(batches)]


def _deliver(files: list[Path], source: Path, landing: Path) -> None:
    for path in files:
        target = landing / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)  # the data set stays whole for the next run
        except OSError:
            shutil.copy2(path, target)


def bench_all(cfg: Config, events: int, batches: int, log, on_batch=None) -> dict:
    """End-to-end ``auditlake refresh`` (every layer, gates included) per delivery as history grows.
    ``on_batch(figures)`` is called after each batch (a long run leaves its figures as it goes)."""
    from pipelines.refresh import LAYERS, run_refresh
    from pipelines.spark_session import build_spark

    dataset, data = _dataset(cfg, events, log)
    bcfg = _bench_cfg(cfg, dataset.parent)
    spark = build_spark(cfg)
    _fresh_lake(spark, bcfg)
    landing = bcfg.path("paths.landing_dir")
    rows = []
    for number, files in enumerate(delivery_batches(dataset, batches), start=1):
        _deliver(files, dataset, landing)
        log(f"bench: batch {number}/{batches}: {len(files)} files delivered, refreshing every layer")
        report, seconds = _timed(lambda: run_refresh(spark, bcfg, list(LAYERS), log=lambda _m: None))
        layer = {r.layer: r for r in report.runs}
        history = sum(r["rows_out"] for r in rows) + layer["silver"].rows_out
        rows.append(
            {
                "batch": number,
                "files": len(files),
                "rows_in": layer["bronze"].rows_in,
                "rows_out": layer["silver"].rows_out,
                "history": history,
                "seconds": {name: run.seconds for name, run in layer.items()},
                "total_s": seconds,
            }
        )
        log(f"bench: batch {number}/{batches}: {layer['silver'].rows_out} new events ({history} in silver) in "
            f"{seconds:.1f}s (" + ", ".join(f"{n} {r.seconds:.1f}s" for n, r in layer.items()) + ")")
        figures = _all_figures(events, data, batches, rows)
        if on_batch is not None:
            on_batch(figures)
    return figures


def _all_figures(events: int, data: dict, planned: int, rows: list[dict]) -> dict:
    incremental = rows[1:]
    return {
        "events": events,
        "files": data["files"],
        "megabytes": data["bytes"] / 1e6,
        "planned": planned,
        "batches": rows,
        "flatness": incremental[-1]["total_s"] / incremental[0]["total_s"] if len(incremental) > 1 else float("nan"),
        "slope": _slope([r["history"] for r in incremental], [r["total_s"] for r in incremental]),
    }


def _slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares seconds per event of history (0 when there are too few points)."""
    if len(xs) < 2:
        return 0.0
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0


def render_all(fig: dict, cfg: Config) -> str:
    lines = [
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {_machine()}, Spark master "
        f"`{cfg.get('spark.master')}`, driver memory {cfg.get('spark.driver_memory')}.",
        "",
        f"Data: {fig['events']:,} generated events ({fig['files']:,} files, {fig['megabytes']:.0f} MB, 7 days), "
        f"delivered in {fig['planned']} batches of consecutive hours; after each delivery one "
        "`auditlake refresh` (bronze, gate, silver, gate, gold = dbt build of every model and test, gate).",
        "",
        "| batch | rows landed in bronze | new silver rows | silver rows in total | bronze s | silver s | gold s "
        "| refresh s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in fig["batches"]:
        sec = r["seconds"]
        lines.append(
            f"| {r['batch']} | {r['rows_in']:,} | {r['rows_out']:,} | {r['history']:,} | {sec.get('bronze', 0):.1f} "
            f"| {sec.get('silver', 0):.1f} | {sec.get('gold', 0):.1f} | **{r['total_s']:.1f}** |"
        )
    if len(fig["batches"]) < fig["planned"]:
        lines += ["", f"(The run stopped after {len(fig['batches'])} of {fig['planned']} batches.)"]
    lines += [
        "",
        f"Last incremental batch / first incremental batch (batch {len(fig['batches'])} / batch 2): "
        f"**{fig['flatness']:.2f}x** (flat = 1.0; batch 1 builds everything from nothing). "
        f"Least-squares growth over batches 2..{len(fig['batches'])}: "
        f"**{fig['slope'] * 100_000:+.1f} s per 100,000 rows of history**.",
    ]
    return "\n".join(lines)


def run_bench(cfg: Config, layer: str, events: int, out_doc: Path, batches: int = 10, log=print) -> dict:
    if layer == "all":
        figures = bench_all(cfg, events, batches, log,
                            on_batch=lambda f: write_section(out_doc, "all", render_all(f, cfg)))
        log(f"bench: last / first incremental refresh {figures['flatness']:.2f}x")
    elif layer == "bronze":
        figures = bench_bronze(cfg, events, log)
        write_section(out_doc, "bronze", render_bronze(figures, cfg))
    elif layer == "silver":
        figures = bench_silver(cfg, events, log)
        write_section(out_doc, "silver", render_silver(figures, cfg))
        log(f"bench: incremental {figures['ratio_incr']:.1%} of a full bronze+silver")
    else:
        raise ValueError(f"no benchmark for layer {layer!r}")
    log(f"bench: figures written to {out_doc}")
    return figures
