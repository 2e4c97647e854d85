"""Benchmarks (not tests): measure the refresh against the bare cost of reading the same files.

``auditlake bench --layer ingest --events 1000000`` generates (or reuses) a sample Activity Log
and a many-small-files delivery under ``<data_dir>/bench``, then times, in one process on the same
files: Spark's bare ``spark.read.text(...).count()``, DuckDB doing bronze's work, bronze, silver,
a refresh with nothing new and a +1% delivery. ``--layer all`` times the whole refresh per delivery
as history grows. Figures are written into ``docs/performance.md`` between markers, so re-running
replaces the previous figures of that benchmark only.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

from auditlake_devtools import machine_speed
from auditlake_devtools.bench_datasets import (
    DATASET_SEED,
    HOUR_FOLDER,
    drop_increments,
    generated_dataset,
    increment_days,
)
from auditlake_devtools.bench_delivery_floor import (
    StepClock,
    commits_between,
    jobs_between,
    lake_versions,
    profile,
    spark_jobs,
    unit_costs,
)
from auditlake_devtools.bench_harness import bench_cfg, dbt_node_seconds, fresh_lake, ingest_cfg, timed
from auditlake_devtools.bench_history import bench_history, render_history
from auditlake_devtools.bench_refresh import bench_refresh, render_refresh
from auditlake_devtools.bench_serve import bench_serve, render_serve
from auditlake_devtools.bench_server_logs import bench_server_logs, render_server_logs
from auditlake_devtools.bench_trail import bench_trail, render_trail
from pipelines.config.load import Config


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


def _small_files(cfg: Config, log) -> tuple[Path, dict]:
    """A delivery of one record per file (a small site's hourly files): a generated log whose files
    are cut into one file per line (gzip kept where the original was)."""
    import gzip

    from auditlake_devtools.sample.activity_log import generate_activity_log

    root = cfg.data_dir / "bench" / f"small-files-{SMALL_FILES_EVENTS}"
    landing = root / "landing"
    if not (root / "generated.ok").is_file():
        shutil.rmtree(root, ignore_errors=True)
        source = root / "source"
        generate_activity_log(source, SMALL_FILES_EVENTS, seed=3, days=60)
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            data = path.read_bytes()
            gz = path.name.endswith(".gz")
            lines = (gzip.decompress(data) if gz else data).splitlines(keepends=True)
            stem = path.name.split(".")[0]
            for i, line in enumerate(lines):
                target = landing / path.relative_to(source).parent / f"{stem}-{i:04d}.json{'.gz' if gz else ''}"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(gzip.compress(line, mtime=0) if gz else line)
        shutil.rmtree(source)
        (root / "generated.ok").write_text("ok\n")
    drop_increments(landing)
    files = [p for p in landing.rglob("*") if p.is_file()]
    log(f"bench: small-files set: {len(files)} files under {landing}")
    return landing, {"files": len(files), "bytes": sum(p.stat().st_size for p in files)}


SMALL_FILES_EVENTS = 30_000


def duckdb_routing(landing: Path, out: Path) -> int:
    """The single-machine alternative, doing bronze's work: every line of every file as a JSON object
    (read_ndjson_objects), the routing fields (event type and time, from either record shape) and a
    SHA-256 of the line, into Parquet. -> rows written."""
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
    target = out / "bronze.parquet"
    con.execute(
        f"""COPY (
          SELECT filename AS source_file, json AS raw_line,
                 coalesce(json->'metadata'->>'eventType', json->>'eventType') AS event_type,
                 coalesce(json->'event'->>'eventTime', json->>'eventTime') AS event_time,
                 sha256(json::VARCHAR) AS content_hash
          FROM read_ndjson_objects('{glob}', filename = true, ignore_errors = true)
        ) TO '{target}' (FORMAT parquet)"""
    )
    return con.execute(f"SELECT count(*) FROM '{target}'").fetchone()[0]


def floor_schema_ddl() -> str:
    """The registry's silver types as one read schema for both record shapes: every documented
    attribute of either family at the top level (a flat record) and under ``event`` (an envelope),
    typed as silver's wide column (the widest type where two documents differ)."""
    from pipelines.activity_log import FAMILIES
    from pipelines.activity_log.silver.plan import family_plan, widest_type

    types: dict[str, set[str]] = {}
    for family in FAMILIES:
        for column in family_plan(family).columns:
            types.setdefault(column.attribute, set()).add(column.physical_type)
    for name in ("eventType", "traceUuid"):
        types.setdefault(name, {"string"})
    types["eventTime"] = {"timestamp"}  # documented as text; silver types it (event_time)
    fields = [f"`{name}` {widest_type(t)}" for name, t in types.items()]
    event = ", ".join(f.replace("` ", "`: ", 1) for f in fields)
    return ", ".join(fields) + f", `metadata` struct<`eventType`: string>, `event` struct<{event}>"


def typed_floor(spark, landing: Path, out: Path) -> int:
    """Spark's own typed floor for silver (issue 30): the same files read by ``spark.read.json`` with
    the registry's silver types (``floor_schema_ddl``), written as Parquet. No deduplication, no
    quarantine, no gate: what typing alone costs on this engine. -> rows written."""
    shutil.rmtree(out, ignore_errors=True)
    frame = spark.read.option("recursiveFileLookup", "true").schema(floor_schema_ddl()).json(str(landing))
    frame.write.parquet(str(out))
    return spark.read.parquet(str(out)).count()


def _add_increment(landing: Path, events: int, seed: int = 2) -> int:
    """``events`` more events for the next day, landed at once (increment_days); -> files landed."""
    return sum(increment_days(landing, events, seed))


def _where_time_goes(jobs: list[dict], top: int = 6) -> list[str]:
    """The longest of ``jobs`` (spark_jobs): 'seconds s, tasks tasks: call site'."""
    longest = sorted(jobs, key=lambda j: -j["seconds"])[:top]
    return [f"{j['seconds']:.1f} s, {j['tasks']} tasks: {j['name'].split(' at ')[-1][:70]}" for j in longest]


def _measure_ingest(spark, cfg: Config, name: str, landing: Path, data: dict, events: int, log) -> dict:
    from pipelines.refresh import run_refresh

    bcfg = ingest_cfg(cfg, landing.parent)
    fresh_lake(spark, bcfg)

    def bare_scan() -> int:
        return spark.read.option("recursiveFileLookup", "true").text(str(landing)).count()

    log(f"bench [{name}]: warm-up scan (fills the OS file cache; not measured)")
    bare_scan()
    lines, bare_s = timed(bare_scan)
    log(f"bench [{name}]: bare text scan: {lines} lines in {bare_s:.1f}s")
    try:
        duck_rows, duck_s = timed(lambda: duckdb_routing(landing, landing.parent / "duckdb"))
        duck = {"rows": duck_rows, "seconds": duck_s, "error": None}
        log(
            f"bench [{name}]: duckdb read_ndjson_objects + routing + sha256 -> parquet: {duck_rows} rows in "
            f"{duck_s:.1f}s"
        )
    except Exception as exc:  # the reference failing is a finding, reported as such
        duck = {"rows": 0, "seconds": float("nan"), "error": str(exc).splitlines()[0][:160]}
        log(f"bench [{name}]: duckdb failed: {duck['error']}")

    floor_rows, floor_s = timed(lambda: typed_floor(spark, landing, landing.parent / "typed-floor"))
    log(
        f"bench [{name}]: typed floor (spark.read.schema(silver types).json -> parquet): {floor_rows} rows in "
        f"{floor_s:.1f}s"
    )
    shutil.rmtree(landing.parent / "typed-floor", ignore_errors=True)

    def refresh(log=lambda _m: None) -> dict:
        report = run_refresh(spark, bcfg, ["bronze", "silver"], source_dir=landing, log=log)
        runs = {r.layer: r for r in report.runs}
        return {
            "bronze_s": runs["bronze"].seconds,
            "silver_s": runs["silver"].seconds,
            "rows": runs["bronze"].rows_in,
            "events": runs["silver"].rows_out,
        }

    jobs_before = spark_jobs(spark)
    full = refresh()
    full["jobs"] = _where_time_goes(jobs_between(jobs_before, spark_jobs(spark)))
    if full["rows"] != lines:
        raise RuntimeError(f"bronze landed {full['rows']} rows but the files hold {lines} lines")
    log(f"bench [{name}]: bronze {full['bronze_s']:.1f}s, silver {full['silver_s']:.1f}s ({full['events']} events)")
    nothing = refresh()
    log(
        f"bench [{name}]: refresh with nothing new: bronze {nothing['bronze_s']:.1f}s, "
        f"silver {nothing['silver_s']:.1f}s"
    )
    added = _add_increment(landing, max(1, events // 100))
    versions_before, jobs_before = lake_versions(spark, bcfg), spark_jobs(spark)
    clock = StepClock()
    incr, wall_s = timed(lambda: refresh(log=clock))
    delivered = jobs_between(jobs_before, spark_jobs(spark))
    commits = commits_between(versions_before, lake_versions(spark, bcfg))
    incr["jobs"] = _where_time_goes(delivered)
    incr["profile"] = profile(wall_s, delivered, commits, unit_costs(spark))
    incr["steps"] = clock.longest()
    if not incr["rows"]:
        raise RuntimeError(f"the +1% delivery ({added} files) landed nothing")
    log(
        f"bench [{name}]: +1% delivery ({incr['rows']} lines): bronze {incr['bronze_s']:.1f}s, "
        f"silver {incr['silver_s']:.1f}s"
    )
    drop_increments(landing)
    return {
        "name": name,
        "files": data["files"],
        "megabytes": data["bytes"] / 1e6,
        "lines": lines,
        "bare_s": bare_s,
        "duck": duck,
        "floor_s": floor_s,
        "full": full,
        "nothing": nothing,
        "incr": incr,
    }


def bench_ingest(cfg: Config, events: int, log) -> list[dict]:
    from pipelines.runtime.spark_session import build_spark

    spark = build_spark(cfg)
    landing, data = generated_dataset(cfg, events, log)
    small, small_data = _small_files(cfg, log)
    return [
        _measure_ingest(spark, cfg, f"{events:,} events", landing, data, events, log),
        _measure_ingest(spark, cfg, "small files", small, small_data, SMALL_FILES_EVENTS, log),
    ]


def render_ingest(sets: list[dict], cfg: Config) -> str:
    out = [
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine_speed.describe()}, Spark master "
        f"`{cfg.get('spark.master')}`, driver memory {cfg.get('spark.driver_memory')}; one process, the "
        "same files for every step; bronze and silver are `auditlake refresh --layers bronze,silver` "
        "(gates included, no write-back source).",
        "",
        "| step | "
        + " | ".join(
            f"{s['name']}: {s['lines']:,} lines in {s['files']:,} files ({s['megabytes']:.0f} MB)" for s in sets
        )
        + " |",
        "|---|" + "---:|" * len(sets),
    ]

    def row(label: str, cell) -> None:
        out.append(f"| {label} | " + " | ".join(cell(s) for s in sets) + " |")

    row("Spark bare `spark.read.text(...).count()`", lambda s: f"{s['bare_s']:.1f} s")
    row(
        "DuckDB `read_ndjson_objects` + routing fields + SHA-256 -> Parquet",
        lambda s: f"{s['duck']['seconds']:.1f} s" if not s["duck"]["error"] else f"failed: {s['duck']['error']}",
    )
    row(
        "Spark's typed floor: `spark.read.schema(<silver's types>).json(...)` -> Parquet",
        lambda s: f"{s['floor_s']:.1f} s",
    )
    row(
        "**bronze** landing (ledger, decode, routing, hash, Delta)",
        lambda s: f"**{s['full']['bronze_s']:.1f} s** ({s['full']['bronze_s'] / s['bare_s']:.2f}x bare)",
    )
    row(
        "bronze -> **silver** (typed, deduplicated, gate)",
        lambda s: f"**{s['full']['silver_s']:.1f} s** ({s['full']['silver_s'] / s['floor_s']:.2f}x the typed floor)",
    )
    row("**bronze + silver**", lambda s: f"**{_both(s, 'full'):.1f} s**")
    row("refresh with **nothing new** (bronze + silver)", lambda s: f"{_both(s, 'nothing'):.1f} s")
    row(
        "**+1% delivery** (bronze + silver)",
        lambda s: (
            f"{_both(s, 'incr'):.1f} s ({_both(s, 'incr') / _both(s, 'full'):.1%} of the full load; "
            f"{_both(s, 'incr') / _both(s, 'nothing'):.1f}x nothing new)"
        ),
    )
    out += [
        "",
        "Targets (issue 30): bronze at most 3x the bare scan on both sets; silver at most 2x the typed floor "
        "on the 1M set; a +1% delivery at most 5% of the full load on the 1M set, and the small-files set's at "
        "most 3x a refresh with nothing new.",
    ]
    for s in sets:
        if s["full"].get("jobs"):
            out += ["", f"Longest Spark jobs of the full load, {s['name']}:", ""]
            out += [f"- {line}" for line in s["full"]["jobs"]]
    for s in sets:
        if s["incr"].get("profile"):
            out += ["", _render_delivery_floor(s)]
    return "\n".join(out)


def _render_delivery_floor(s: dict) -> str:
    """The +1% delivery's jobs and commits, and its floor (auditlake_devtools/bench_delivery_floor.py)."""
    p, full, nothing = s["incr"]["profile"], _both(s, "full"), _both(s, "nothing")
    unit, commits = p["unit"], p["commits"]
    lines = [
        f"**The +1% delivery's fixed cost, {s['name']}** ({s['incr']['rows']:,} lines): the `refresh` took "
        f"{p['seconds']:.1f} s, {p['jobs']} Spark jobs (running for {p['job_seconds']:.1f} s) and "
        f"{sum(commits.values())} Delta commits ("
        + ", ".join(f"{name} {n}" for name, n in commits.items())
        + f"). Here one Delta commit of one row takes {unit['append_s']:.2f} s ({unit['jobs_per_append']:.0f} "
        f"jobs) and a one-row Spark job {unit['job_s']:.2f} s: the delivery's commits and its other jobs at "
        f"those costs are its floor, **{p['floor_s']:.1f} s = {p['floor_s'] / full:.1%} of the full load, "
        f"{p['floor_s'] / nothing:.1f}x nothing new** (the delivery: {_both(s, 'incr') / full:.1%}, "
        f"{_both(s, 'incr') / nothing:.1f}x).",
    ]
    if s["incr"].get("steps"):
        lines += ["", "Its longest steps (seconds since the refresh's log line before):", ""]
        lines += [f"- {seconds:.1f} s: {line}" for seconds, line in s["incr"]["steps"]]
    if s["incr"].get("jobs"):
        lines += ["", "Its longest jobs:", ""] + [f"- {line}" for line in s["incr"]["jobs"]]
    return "\n".join(lines)


def _both(s: dict, run: str) -> float:
    """Bronze's and silver's seconds of one refresh of a measured set."""
    return s[run]["bronze_s"] + s[run]["silver_s"]


def delivery_batches(landing: Path, batches: int) -> list[list[Path]]:
    """The data set's files cut into ``batches`` deliveries of consecutive hours (as Tableau
    delivers them: each batch is newer activity than the one before)."""
    by_hour: dict[tuple, list[Path]] = {}
    for path in landing.rglob("*"):
        if path.is_file():
            match = HOUR_FOLDER.search(path.as_posix())
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
    from pipelines.runtime.spark_session import build_spark

    dataset, data = generated_dataset(cfg, events, log)
    bcfg = bench_cfg(cfg, dataset.parent)
    spark = build_spark(cfg)
    fresh_lake(spark, bcfg)
    landing = bcfg.path("paths.landing_dir")
    rows = []
    for number, files in enumerate(delivery_batches(dataset, batches), start=1):
        _deliver(files, dataset, landing)
        log(f"bench: batch {number}/{batches}: {len(files)} files delivered, refreshing every layer")
        report, seconds = timed(lambda: run_refresh(spark, bcfg, list(LAYERS), log=lambda _m: None))
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
                "dbt_nodes": [] if report.gold_skipped else dbt_node_seconds(),
            }
        )
        log(
            f"bench: batch {number}/{batches}: {layer['silver'].rows_out} new events ({history} in silver) in "
            f"{seconds:.1f}s (" + ", ".join(f"{n} {r.seconds:.1f}s" for n, r in layer.items()) + ")"
        )
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
        "gold_slope": _slope([r["history"] for r in incremental], [r["seconds"].get("gold", 0) for r in incremental]),
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
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine_speed.describe()}, Spark master "
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
        f"**{fig['slope'] * 100_000:+.1f} s per 100,000 rows of history** "
        f"(gold alone: {fig['gold_slope'] * 100_000:+.1f} s).",
    ]
    if len(fig["batches"]) > 2 and fig["batches"][1]["dbt_nodes"] and fig["batches"][-1]["dbt_nodes"]:
        first, last = fig["batches"][1], fig["batches"][-1]
        lines += [
            "",
            f"dbt's slowest nodes (thread seconds; dbt runs 4 threads), batch 2 and batch {last['batch']}:",
            "",
            f"| node | batch 2 s | batch {last['batch']} s |",
            "|---|---:|---:|",
        ]
        at_first = {name: secs for name, _kind, secs in first["dbt_nodes"]}
        for name, _kind, secs in last["dbt_nodes"][:10]:
            lines.append(f"| `{name[:70]}` | {at_first.get(name, float('nan')):.1f} | {secs:.1f} |")
        for label, batch in (("batch 2", first), (f"batch {last['batch']}", last)):
            by_kind: dict[str, float] = {}
            for _name, kind, secs in batch["dbt_nodes"]:
                by_kind[kind] = by_kind.get(kind, 0.0) + secs
            lines.append(f"\n{label}: " + ", ".join(f"{k}s {v:.1f} s" for k, v in sorted(by_kind.items())) + ".")
    return "\n".join(lines)


def bench_export(cfg: Config, events: int, log) -> dict:
    """The Hyper export (issue 29) on a lake of ``events`` refreshed through gold: the first export
    (every mart), one with nothing new, one after a +1% delivery's refresh, and the packaged data
    source; beside Spark's bare copy of the same analysts' tables to Parquet (the export's first half)."""
    from auditlake_devtools.sample.activity_log import generate_activity_log
    from pipelines.analyst.publish import read_catalog, tables_location
    from pipelines.hyper.export import export_hyper, hyper_path
    from pipelines.hyper.tdsx import write_tdsx
    from pipelines.lake import storage
    from pipelines.refresh import run_refresh
    from pipelines.runtime.spark_session import build_spark

    root = cfg.data_dir / "bench" / f"export-{events}"
    bcfg = bench_cfg(cfg, root)  # with the bundled Write-Back export: gold reads it
    spark = build_spark(cfg)  # the session's scratch space outside the bench lake, which is wiped
    fresh_lake(spark, bcfg)
    landing = bcfg.path("paths.landing_dir")
    generate_activity_log(landing, events, seed=DATASET_SEED, days=7)
    quiet = lambda _m: None  # noqa: E731
    _report, refresh_s = timed(lambda: run_refresh(spark, bcfg, ["bronze", "silver", "gold"], log=quiet))
    log(f"bench: lake of {events} events refreshed in {refresh_s:.0f}s")
    names = sorted(read_catalog(spark, bcfg)["marts"])
    rows = sum(spark.read.format("delta").load(storage.join(tables_location(bcfg), n)).count() for n in names)

    def bare_copy() -> None:
        for name in names:
            frame = spark.read.format("delta").load(storage.join(tables_location(bcfg), name))
            frame.write.mode("overwrite").parquet(str(root / "bare" / name))

    _none, bare_s = timed(bare_copy)
    shutil.rmtree(hyper_path(bcfg).parent, ignore_errors=True)
    full, full_s = timed(lambda: export_hyper(spark, bcfg, log=quiet))
    again, again_s = timed(lambda: export_hyper(spark, bcfg, log=quiet))
    package, tdsx_s = timed(lambda: write_tdsx(full.path))
    _add_increment(landing, max(1, events // 100))
    _report, increment_refresh_s = timed(lambda: run_refresh(spark, bcfg, ["bronze", "silver", "gold"], log=quiet))
    increment, increment_s = timed(lambda: export_hyper(spark, bcfg, log=quiet))
    figures = {
        "events": events,
        "marts": len(names),
        "rows": rows,
        "bare_s": bare_s,
        "full_s": full_s,
        "full_rows": sum(m.rows for m in full.written),
        "again_s": again_s,
        "again_written": len(again.written),
        "tdsx_s": tdsx_s,
        "tdsx_mb": package.stat().st_size / 1e6,
        "hyper_mb": full.path.stat().st_size / 1e6,
        "increment_refresh_s": increment_refresh_s,
        "increment_s": increment_s,
        "increment_rows": sum(m.rows for m in increment.written),
        "increment_tables": dict(collections.Counter(m.action for m in increment.written)),
    }
    log(f"bench: export full {full_s:.1f}s, nothing new {again_s:.2f}s, +1% {increment_s:.1f}s")
    return figures


def render_export(fig: dict, cfg: Config) -> str:
    rate = lambda rows, seconds: f"{rows / seconds:,.0f} rows/s" if seconds else "-"  # noqa: E731
    kinds = ", ".join(f"{n} {a}" for a, n in sorted(fig["increment_tables"].items())) or "none"
    return "\n".join(
        [
            f"`auditlake bench --layer export --events {fig['events']}` on {machine_speed.describe()}, "
            f"{datetime.now(UTC):%Y-%m-%d}: a lake of {fig['events']:,} generated events refreshed through gold, "
            f"{fig['marts']} analyst marts holding {fig['rows']:,} rows; one process, one Spark session.",
            "",
            "| | seconds | rows written | rate |",
            "|---|---:|---:|---:|",
            f"| Spark's bare copy of the analysts' tables to Parquet (reference) | {fig['bare_s']:.1f} "
            f"| {fig['rows']:,} | {rate(fig['rows'], fig['bare_s'])} |",
            f"| first export (every mart; {fig['hyper_mb']:.1f} MB of Hyper) | {fig['full_s']:.1f} "
            f"| {fig['full_rows']:,} | {rate(fig['full_rows'], fig['full_s'])} |",
            f"| export with nothing new | {fig['again_s']:.2f} | {fig['again_written']} tables | |",
            f"| `.tdsx` packaged ({fig['tdsx_mb']:.1f} MB) | {fig['tdsx_s']:.1f} | | |",
            f"| export after a +1% delivery's refresh ({kinds}) | {fig['increment_s']:.1f} | {fig['increment_rows']:,} "
            f"| {rate(fig['increment_rows'], fig['increment_s'])} |",
            "",
            f"The +1% delivery's refresh (every layer) took {fig['increment_refresh_s']:.1f}s; the export after it "
            f"{fig['increment_s'] / fig['full_s']:.0%} of the first.",
        ]
    )


# The delivery a layer's bench measures by default: the demo's hourly few hundred; issue 30's +10,000 on a long history.
BENCH_DELIVERY = {"refresh": 400, "history": 10_000}


def run_bench(
    cfg: Config,
    layer: str,
    events: int,
    out_doc: Path,
    batches: int = 10,
    log=print,
    delivery: int | None = None,
    sessions: int = 8,
    seconds: int = 120,
):
    delivery = delivery or BENCH_DELIVERY.get(layer)
    if layer == "refresh":
        figures = bench_refresh(cfg, delivery, log)
        write_section(out_doc, "refresh", render_refresh(figures, cfg))
    elif layer == "all":
        figures = bench_all(
            cfg, events, batches, log, on_batch=lambda f: write_section(out_doc, "all", render_all(f, cfg))
        )
        log(f"bench: last / first incremental refresh {figures['flatness']:.2f}x")
    elif layer == "history":
        figures = bench_history(cfg, events, delivery, log)
        write_section(out_doc, "history", render_history(figures, cfg))
    elif layer == "ingest":
        figures = bench_ingest(cfg, events, log)
        write_section(out_doc, "ingest", render_ingest(figures, cfg))
    elif layer == "export":
        figures = bench_export(cfg, events, log)
        write_section(out_doc, "export", render_export(figures, cfg))
    elif layer == "serve":
        figures = bench_serve(cfg, sessions, seconds, log)
        write_section(out_doc, "serve", render_serve(figures))
    elif layer == "server-logs":
        figures = bench_server_logs(cfg, events, log)
        write_section(out_doc, "server-logs", render_server_logs(figures, cfg))
    elif layer == "trail":
        figures = bench_trail(cfg, events, log)
        write_section(out_doc, "trail", render_trail(figures, cfg))
    else:
        raise ValueError(f"no benchmark for layer {layer!r}")
    log(f"bench: figures written to {out_doc}")
    return figures
