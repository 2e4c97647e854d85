"""Gold over a long history: ``auditlake bench --layer history --events 10000000``.

Issue 30's third target: a delivery's gold build should not grow with the years of history under
it. For each history size (0.5M events, then ``--events``) the bench makes a lake of its own:
a generated week of activity (100,000 events) through bronze and silver as the refresh does,
then silver seeded straight to the size asked by copies of that week, each shifted a week further
back (a long history in seconds instead of hours of landing); gold built once on it; then two
deliveries of ``--delivery`` new events each, the two days after the newest, each refreshed through
every layer. The figure compared is the second delivery's gold time (dbt build, gate, analysts'
copies), with dbt's slowest models at both sizes: the ones that grow are the ones still recomputing
history. The second, because an hourly lake's deliveries follow other deliveries; the first after
the seeding is shown beside it (it once read every seeded silver file again, each holding the marts'
newest silver_ingest_ts, until gold's marks became the end of that second: pipelines/lake/silver_stamp.py).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from auditlake_devtools import machine_speed
from auditlake_devtools.bench_datasets import DATASET_SEED, drop_increments, generated_dataset, increment_days
from auditlake_devtools.bench_harness import bench_cfg, dbt_node_seconds, fresh_lake, timed
from pipelines.config.load import Config

SMALL_HISTORY = 500_000
BASE_EVENTS = 100_000  # one generated week, copied back in time to the size asked
# Ids that name one occurrence (a record, a job run, a session, a request), not a long-lived entity:
# each copy of the week gets its own, so a copied job or session is another one. Users, sites,
# groups and content keep their ids: the same people and workbooks over the years.
OCCURRENCE_COLUMNS = (
    "bronze_id",
    "trace_uuid",
    "envelope_trace_uuid",
    "job_luid",
    "request_id",
    "session_id",
    "site_event_luid",
    "vizql_session_id",
    "initiating_session_id",
    "new_session_id",
)


def _copy_id(column: str) -> str:
    """SQL: ``column`` made unique to its copy, still UUID-shaped (silver's identifier form)."""
    digest = f"substr(sha2(concat(`{column}`, ':', copy), 256), 1, 32)"
    return (
        f"CASE WHEN `{column}` IS NULL THEN NULL ELSE "
        f"regexp_replace({digest}, '^(.{{8}})(.{{4}})(.{{4}})(.{{4}})(.{{12}})$', '$1-$2-$3-$4-$5') END"
    )


def seed_history(spark, table: str, copies: int) -> int:
    """Append ``copies`` copies of ``table``'s rows, copy k shifted k weeks back, with new event ids
    and occurrence ids (``OCCURRENCE_COLUMNS``). -> rows in the table after."""
    if copies <= 0:
        return spark.table(table).count()
    rows = spark.table(table)
    string_columns = {f.name for f in rows.schema.fields if f.dataType.simpleString() == "string"}
    shifted = {
        "event_id": "sha2(concat(event_id, ':', copy), 256)",
        "event_time": "event_time - make_dt_interval(copy * 7)",
        "event_date": "to_date(event_time - make_dt_interval(copy * 7))",
    } | {c: _copy_id(c) for c in OCCURRENCE_COLUMNS if c in string_columns}
    copied = rows.crossJoin(spark.range(1, copies + 1).withColumnRenamed("id", "copy"))
    copied = copied.selectExpr(*[f"{shifted[c]} AS `{c}`" if c in shifted else f"`{c}`" for c in rows.columns])
    copied.write.insertInto(table)
    return spark.table(table).count()


def _history_lake(spark, cfg: Config, size: int, delivery: int, log) -> dict:
    from pipelines.activity_log import FAMILIES
    from pipelines.lake.table_names import tables
    from pipelines.refresh import run_refresh

    landing, _data = generated_dataset(cfg, BASE_EVENTS, log)
    bcfg = bench_cfg(cfg, landing.parent.parent / f"history-{size}")
    fresh_lake(spark, bcfg)
    name = f"{size:,} events"
    report, base_s = timed(
        lambda: run_refresh(spark, bcfg, ["bronze", "silver"], source_dir=landing, log=lambda _m: None)
    )
    base_rows = {r.layer: r for r in report.runs}["silver"].rows_out
    copies = max(1, round(size / base_rows)) - 1
    log(
        f"bench [history {name}]: a week of {base_rows:,} events through bronze and silver in {base_s:.1f}s; "
        f"seeding {copies} earlier weeks"
    )
    started = time.monotonic()
    history = sum(seed_history(spark, tables(bcfg).silver_events(f), copies) for f in FAMILIES)
    seed_s = time.monotonic() - started
    log(f"bench [history {name}]: silver holds {history:,} events ({copies + 1} weeks) after {seed_s:.1f}s of seeding")
    report, first_s = timed(lambda: run_refresh(spark, bcfg, ["gold"], log=lambda _m: None))
    log(f"bench [history {name}]: gold built once on the whole history in {first_s:.1f}s")
    # one generation for both (the same world as the week's: its sites and users have history)
    days = increment_days(landing, 2 * delivery, seed=DATASET_SEED, days=2)
    try:
        first, second = (
            _delivery(spark, bcfg, landing, next(days), f"{name}, {which}", log) for which in ("first", "second")
        )
    finally:
        days.close()
        drop_increments(landing)
    return {
        "size": size,
        "history": history,
        "weeks": copies + 1,
        "base_s": base_s,
        "seed_s": seed_s,
        "first_gold_s": first_s,
        "first": first,
        **second,
    }


def _delivery(spark, bcfg: Config, landing, added: int, name: str, log) -> dict:
    """Refresh every layer over the files just landed; -> its figures and dbt's node times."""
    from pipelines.refresh import LAYERS, run_refresh

    report, total_s = timed(lambda: run_refresh(spark, bcfg, list(LAYERS), source_dir=landing, log=lambda _m: None))
    layers = {r.layer: r for r in report.runs}
    if not layers["bronze"].rows_in:
        raise RuntimeError(f"bench: the delivery ({added} files) landed nothing")
    seconds = {n: r.seconds for n, r in layers.items()}
    log(
        f"bench [history {name} delivery]: {layers['silver'].rows_out:,} events in {total_s:.1f}s ("
        + ", ".join(f"{n} {s:.1f}s" for n, s in seconds.items())
        + ")"
    )
    return {
        "delivered": layers["silver"].rows_out,
        "seconds": seconds,
        "total_s": total_s,
        "dbt_nodes": dbt_node_seconds(),
    }


def bench_history(cfg: Config, events: int, delivery: int, log) -> list[dict]:
    from pipelines.runtime.spark_session import build_spark

    spark = build_spark(cfg)
    return [_history_lake(spark, cfg, size, delivery, log) for size in sorted({min(SMALL_HISTORY, events), events})]


def render_history(runs: list[dict], cfg: Config, top: int = 12) -> str:
    small, large = runs[0], runs[-1]
    out = [
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine_speed.describe()}, Spark master "
        f"`{cfg.get('spark.master')}`, driver memory {cfg.get('spark.driver_memory')}; one process. Each lake: a "
        f"generated week ({BASE_EVENTS:,} events) through bronze and silver, silver seeded with copies of it a week "
        "further back each (new event, job, session and request ids; the same users, sites and content), gold "
        "built once, then two deliveries of a day's events each, each refreshed through every layer: the second is "
        "compared, as an hourly lake's deliveries follow other deliveries (the first after the seeding is shown "
        "too).",
        "",
        "| | " + " | ".join(f"{r['history']:,} events of history ({r['weeks']} weeks)" for r in runs) + " |",
        "|---|" + "---:|" * len(runs),
    ]

    def row(label: str, cell) -> None:
        out.append(f"| {label} | " + " | ".join(cell(r) for r in runs) + " |")

    row("the generated week through bronze and silver", lambda r: f"{r['base_s']:.1f} s")
    row("seeding silver (copies of the week)", lambda r: f"{r['seed_s']:.1f} s")
    row("gold built once on the whole history", lambda r: f"{r['first_gold_s']:.1f} s")
    row(
        "the first delivery: new events, gold, whole refresh",
        lambda r: f"{r['first']['delivered']:,}, {r['first']['seconds']['gold']:.1f} s, {r['first']['total_s']:.1f} s",
    )
    row("the delivery (the second): new events", lambda r: f"{r['delivered']:,}")
    for layer in ("bronze", "silver"):
        row(f"the delivery: {layer}", lambda r, layer=layer: f"{r['seconds'].get(layer, 0):.1f} s")
    gold = small["seconds"]["gold"]
    row(
        "**the delivery: gold** (dbt build, gate, analysts' copies)",
        lambda r: f"**{r['seconds']['gold']:.1f} s** ({r['seconds']['gold'] / gold:.2f}x)",
    )
    row("the delivery's whole refresh", lambda r: f"{r['total_s']:.1f} s")
    out += [
        "",
        f"Target (issue 30): the delivery's gold at {large['history']:,} events of history at most 1.2x its "
        f"time at {small['history']:,}: **{large['seconds']['gold'] / small['seconds']['gold']:.2f}x**.",
        "",
    ]
    before = {(n, k): s for n, k, s in small["dbt_nodes"]}
    grown = sorted(
        ((s - before.get((n, k), 0.0), n, k, before.get((n, k), 0.0), s) for n, k, s in large["dbt_nodes"]),
        reverse=True,
    )[:top]
    out += [
        f"dbt's nodes of the delivery's build that grew most with history (seconds at {small['history']:,} -> "
        f"{large['history']:,}; a table model is rebuilt from all of history, an incremental one reads the "
        "new rows and merges them into a mart that grew with it; dbt runs several nodes at once, so a "
        "node's time includes waiting for the others):",
        "",
        "| node | kind | small | large | grew |",
        "|---|---|---:|---:|---:|",
    ]
    out += [f"| {n} | {k} | {a:.1f} | {b:.1f} | {d:+.1f} |" for d, n, k, a, b in grown]
    return "\n".join(out)
