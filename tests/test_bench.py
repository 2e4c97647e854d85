"""The benchmarks' parts: delivery batches, increments, seeded history, the typed floor and a delivery's floor."""

from __future__ import annotations

import re

import pytest

from auditlake_devtools.bench import _slope, delivery_batches

_DAY = re.compile(r"y=\d{4}/m=\d{2}/d=\d{2}")


def test_delivery_batches_cut_consecutive_hours_and_keep_every_file(tmp_path):
    files = []
    for day in ("01", "02"):
        for hour in ("00", "05", "23"):
            for kind in ("site/siteLuid=a", "tenant/tenantId=t"):
                path = tmp_path / kind / f"y=2026/m=06/d={day}/h={hour}/eventType=x/part-00000.json"
                path.parent.mkdir(parents=True)
                path.write_text("{}\n")
                files.append(path)
    batches = delivery_batches(tmp_path, 3)
    assert [len(b) for b in batches] == [4, 4, 4]
    assert sorted(p for b in batches for p in b) == sorted(files)
    hours = [sorted({p.as_posix().split("/d=")[1][:7] for p in b}) for b in batches]
    assert hours == [["01/h=00", "01/h=05"], ["01/h=23", "02/h=00"], ["02/h=05", "02/h=23"]]
    with pytest.raises(ValueError, match="6 hours of activity cannot make 7 batches"):
        delivery_batches(tmp_path, 7)


def test_slope_is_seconds_per_event_of_history():
    assert _slope([100, 200, 300], [10.0, 10.0, 10.0]) == 0.0
    assert _slope([100, 200, 300], [10.0, 20.0, 30.0]) == pytest.approx(0.1)


def test_the_all_layers_report_gives_gold_growth_and_dbt_nodes_side_by_side():
    from auditlake_devtools.bench import _all_figures, render_all
    from pipelines.config.load import load_config

    def batch(n: int, history: int, gold: float, nodes) -> dict:
        return {
            "batch": n,
            "files": 1,
            "rows_in": 10,
            "rows_out": 10,
            "history": history,
            "seconds": {"bronze": 1.0, "silver": 2.0, "gold": gold},
            "total_s": 3.0 + gold,
            "dbt_nodes": nodes,
        }

    rows = [
        batch(1, 100_000, 40.0, []),
        batch(2, 200_000, 20.0, [("dim_users", "model", 4.0), ("primary_key_fct_logins_event_id.1", "test", 1.0)]),
        batch(3, 300_000, 21.0, [("dim_users", "model", 5.0), ("primary_key_fct_logins_event_id.1", "test", 0.5)]),
    ]
    text = render_all(_all_figures(1000, {"files": 3, "bytes": 1e6}, 3, rows), load_config("test"))
    assert "(gold alone: +1.0 s)" in text
    assert "| `dim_users` | 4.0 | 5.0 |" in text
    assert "batch 3: models 5.0 s, tests 0.5 s" in text


def test_the_refresh_report_compares_the_delivery_with_the_faster_idle_run_and_says_where_time_went():
    from auditlake_devtools.bench_refresh import _gaps, render_refresh
    from pipelines.config.load import load_config

    lines = [
        (5.0, "refresh r1: layers bronze, silver, gold"),
        (6.0, "WARNING: Using incubator modules"),
        (40.0, "silver: site: gate passed"),
        (42.0, "feed: 3 hours updated"),
        (140.0, "gold: 105 pass, 39 success in 98.0s"),
        (150.0, "refresh r1 done: bronze 9.0s, silver 30.0s"),
    ]
    assert _gaps(lines, top=2) == [(98.0, "gold: 105 pass, 39 success in 98.0s"), (35.0, "silver: site: gate passed")]

    def run(label: str, wall: float) -> dict:
        return {"label": label, "wall_s": wall, "layers": {"bronze": 1.0, "silver": 2.0, "gold": 3.0}, "lines": lines}

    delivered = run("+400 events", 150.0)
    delivered["dbt"] = {
        "elapsed_s": 98.0,
        "kinds": {"model": (39, 300.0), "test": (105, 200.0)},
        "slowest": [(17.5, "model", "rpt_feed_gaps")],
    }
    fig = {
        "events": 20_000,
        "delivery": 400,
        "runs": [
            run("first load", 400.0),
            run("nothing new", 1.5),
            run("nothing new, --force", 60.0),
            delivered,
            run("nothing new, again", 1.2),
        ],
    }
    fig["warm"] = [("nothing new (the process's first run)", 25.0), ("+400 events", 80.0)]
    text = render_refresh(fig, load_config("test"))
    assert "**2.5x**" in text  # 150 / 60, the run of every layer with nothing new
    assert "one that stops before Spark (the faster of the two): 125x" in text  # 150 / min(1.5, 1.2)
    assert "nothing new: **1.2 s**" in text
    assert "| +400 events | **80.0** |" in text  # the same run in a warm `refresh --every` process
    assert "- 98.0 s: `gold: 105 pass, 39 success in 98.0s`" in text
    assert "39 models 300 thread-s, 105 tests 200 thread-s" in text
    assert "| +400 events | **150.0** | 1.0 | 2.0 | 3.0 |" in text
    assert "dbt's floor" not in text  # a bench without the floor's figures says nothing of it

    fig["floor"] = {
        "mix": {"view": 2, "table": 3, "merge": 0, "append": 1, "test": 10},
        "threads": 2,
        "build": {"elapsed_s": 70.0, "thread_s": {"view": 1.0, "table": 9.0, "append": 2.0, "test": 20.0}},
        "plain_s": {"view": 0.4, "table": 6.0, "append": 1.0, "test": 5.0},
    }
    text = render_refresh(fig, load_config("test"))
    assert "2 views, 3 tables, 1 incremental appends and 10 data tests" in text
    assert "**70 s** elapsed; the delivery's build took 98 s, **1.40x its floor**" in text
    assert "view 0.5 / 0.2, table 3.0 / 2.0, append 2.0 / 1.0, test 2.0 / 0.5" in text
    assert "one after another: 12 s" in text
    assert "at that floor: 122 s = **2.0x** the `--force` run" in text  # 150 - 98 + 70, over 60


def test_a_builds_node_mix_counts_its_models_by_materialization_and_its_data_tests():
    from auditlake_devtools.bench_dbt_floor import node_mix

    def node(kind: str, materialized: str | None = None, strategy: str | None = None) -> dict:
        config = {"materialized": materialized, **({"incremental_strategy": strategy} if strategy else {})}
        return {"resource_type": kind, "config": config}

    manifest = {
        "nodes": {
            "model.p.a": node("model", "view"),
            "model.p.b": node("model", "table"),
            "model.p.c": node("model", "incremental", "merge"),
            "model.p.d": node("model", "incremental"),  # dbt-spark's default strategy: append
            "model.p.e": node("model", "table"),  # not run by this build
            "test.p.t1": node("test", "test"),
            "test.p.t2": node("test", "test"),
        }
    }
    ran = ["model.p.a", "model.p.b", "model.p.c", "model.p.d", "test.p.t1", "test.p.t2"]
    mix = node_mix(manifest, {"results": [{"unique_id": uid} for uid in ran]})
    assert mix == {"view": 1, "table": 1, "merge": 1, "append": 1, "test": 2}


def test_the_history_report_compares_the_deliverys_gold_and_names_the_models_that_grew():
    from auditlake_devtools.bench_history import render_history
    from pipelines.config.load import load_config

    def run(history: int, gold: float, nodes) -> dict:
        return {
            "size": history,
            "history": history,
            "weeks": history // 100_000,
            "base_s": 50.0,
            "seed_s": 1.0,
            "first_gold_s": 90.0,
            "first": {"delivered": 9_990, "seconds": {"gold": gold * 2}, "total_s": 300.0 + history // 100_000},
            "delivered": 10_000,
            "seconds": {"bronze": 4.0, "silver": 20.0, "gold": gold},
            "total_s": 24.0 + gold,
            "dbt_nodes": nodes,
        }

    small = run(500_000, 80.0, [("dim_users", "model", 10.0), ("fct_logins", "model", 5.0)])
    large = run(
        2_000_000, 100.0, [("dim_users", "model", 25.0), ("fct_logins", "model", 5.5), ("rpt_new", "model", 2.0)]
    )
    text = render_history([small, large], load_config("test"))
    assert "**1.25x**" in text  # 100 / 80: the second delivery's
    assert (
        "| the first delivery: new events, gold, whole refresh | 9,990, 160.0 s, 305.0 s | 9,990, 200.0 s, 320.0 s |"
        in text
    )
    assert "| dim_users | model | 10.0 | 25.0 | +15.0 |" in text
    assert text.index("| dim_users |") < text.index("| rpt_new |") < text.index("| fct_logins |")


def test_the_trail_report_gives_the_digests_share_of_its_refresh_and_verify_beside_the_bare_scan():
    from auditlake_devtools.bench_trail import render_trail
    from pipelines.config.load import load_config

    fig = {
        "events": 200_000,
        "files": 4_000,
        "megabytes": 150.0,
        "lines": 202_000,
        "full": {"refresh_s": 100.0, "digest_s": 2.0, "lines": 200_000},
        "delivery": {"refresh_s": 20.0, "digest_s": 1.5, "lines": 2_000},
        "bare_s": 4.0,
        "verify_s": 10.0,
        "verified": {"digests": 2, "files": 4_000, "rows": 206_000},
        "verify_steps": [(0.5, "verify: 2/2 digests valid"), (6.0, "verify: 4,000/4,000 files as landed")],
    }
    text = render_trail(fig, load_config("test"))
    assert "| its digest (every file's SHA-256, the rows' Merkle roots, signed) | 2.00 | 2.0% of the refresh |" in text
    assert "| **its digest** | 1.50 | **7.5% of the refresh** |" in text
    assert "at most 5% of its refresh: **7.5%**, missed." in text
    assert "| 10.0 | **2.5x the bare scan** |" in text
    assert "- 6.0 s: `verify: 4,000/4,000 files as landed`\n- 3.5 s: after its last line" in text
    fig["delivery"]["digest_s"] = 1.0
    assert "**5.0%**, met." in render_trail(fig, load_config("test"))


def test_the_trail_bench_times_the_digest_the_refresh_writes_and_puts_it_back(monkeypatch):
    from auditlake_devtools.bench_trail import digest_clock
    from pipelines.refresh import layers

    def write_digest(*args, **kwargs):
        return ("written", args, kwargs)

    monkeypatch.setattr(layers, "write_digest", write_digest)
    with digest_clock() as seconds:
        assert layers.write_digest("cfg", "refresh", "r1", log=print) == (
            "written",
            ("cfg", "refresh", "r1"),
            {"log": print},
        )
    assert len(seconds) == 1 and seconds[0] >= 0
    assert layers.write_digest is write_digest


def test_an_ingest_benchs_lake_is_its_own_without_write_back_and_takes_more_settings(tmp_path):
    from auditlake_devtools.bench_harness import ingest_cfg
    from pipelines.config.load import load_config

    cfg = load_config("test")
    bcfg = ingest_cfg(cfg, tmp_path, {"AUDITLAKE__SOURCES__SERVER_LOGS__TIMEZONE": "Europe/Berlin"})
    assert bcfg.data_dir == tmp_path / "lake" != cfg.data_dir
    assert bcfg.settings.bronze.schema == "bronze_bench"
    assert bcfg.settings.writeback.source == "none"
    assert bcfg.settings.sources.server_logs.timezone == "Europe/Berlin"


def test_an_increment_of_two_days_lands_a_day_at_a_time(tmp_path):
    from auditlake_devtools.bench_datasets import drop_increments, increment_days
    from auditlake_devtools.sample.activity_log import generate_activity_log

    landing = tmp_path / "landing"
    generate_activity_log(landing, 300, seed=7, days=1)
    before = {p for p in landing.rglob("*") if p.is_file()}

    def days_landed() -> set[str]:
        return {
            m.group(0)
            for p in landing.rglob("*")
            if p.is_file() and p not in before
            for m in [_DAY.search(p.as_posix())]
            if m
        }

    days = increment_days(landing, 600, seed=7, days=2)
    first = next(days)
    assert first > 0 and len(days_landed()) == 1
    second = next(days)
    assert second > 0 and len(days_landed()) == 2
    assert max(days_landed()) > min(days_landed()) > max(_DAY.search(p.as_posix()).group(0) for p in before)
    assert len({p for p in landing.rglob("*") if p.is_file()} - before) == first + second
    with pytest.raises(StopIteration):
        next(days)
    drop_increments(landing)
    assert {p for p in landing.rglob("*") if p.is_file()} == before


def test_seeded_history_is_earlier_weeks_with_their_own_occurrence_ids(spark, tmp_path):
    from auditlake_devtools.bench_history import seed_history

    user, job = "0a5f1e2c-1111-4222-8333-944455556666", "7b3c2d1e-aaaa-4bbb-8ccc-ddddeeeeffff"
    rows = spark.createDataFrame(
        [
            ("e1", "2026-06-08 10:00:00", "2026-06-08", user, job),
            ("e2", "2026-06-09 11:00:00", "2026-06-09", user, None),
        ],
        "event_id string, event_time string, event_date string, actor_user_luid string, job_luid string",
    ).selectExpr(
        "event_id",
        "cast(event_time as timestamp) event_time",
        "cast(event_date as date) event_date",
        "actor_user_luid",
        "job_luid",
    )
    rows.write.format("delta").save(str(tmp_path / "t"))
    spark.sql(f"CREATE TABLE bench_seed_test USING delta LOCATION '{tmp_path / 't'}'")
    try:
        assert seed_history(spark, "bench_seed_test", 2) == 6
        seeded = spark.table("bench_seed_test").collect()
    finally:
        spark.sql("DROP TABLE bench_seed_test")
    assert len({r.event_id for r in seeded}) == 6
    assert sorted(str(r.event_date) for r in seeded) == [
        "2026-05-25",
        "2026-05-26",
        "2026-06-01",
        "2026-06-02",
        "2026-06-08",
        "2026-06-09",
    ]
    assert {r.actor_user_luid for r in seeded} == {user}  # the same people
    jobs = [r.job_luid for r in seeded if r.job_luid]
    assert len(set(jobs)) == 3 and all(len(j) == 36 and j.count("-") == 4 and j == j.lower() for j in jobs)
    assert sum(r.job_luid is None for r in seeded) == 3


def test_the_typed_floor_reads_both_record_shapes_with_silvers_types(spark, tmp_path):
    import json

    from auditlake_devtools.bench import typed_floor

    landing = tmp_path / "landing"
    landing.mkdir()
    flat = {"eventType": "hist_login", "eventTime": "2026-06-01T10:00:00.123456789Z", "actorUserLuid": "u1"}
    envelope = {
        "metadata": {"eventType": "hist_login"},
        "event": {"eventTime": "2026-06-01T11:00:00Z", "actorUserLuid": "u2"},
    }
    (landing / "part-00000.json").write_text(json.dumps(flat) + "\n" + json.dumps(envelope) + "\n")
    assert typed_floor(spark, landing, tmp_path / "out") == 2
    read = spark.read.parquet(str(tmp_path / "out"))
    assert dict(read.dtypes)["eventTime"] == "timestamp"
    times = read.selectExpr("coalesce(eventTime, event.eventTime) t").where("t is not null").count()
    assert times == 2


def test_a_deliverys_floor_counts_its_commits_and_jobs_at_one_rows_cost(spark, tmp_path):
    """The ingest bench's floor (auditlake_devtools/bench_delivery_floor.py): the lake's tables and their
    commits, jobs that overlap counted once, the floor's arithmetic and its lines in the report."""
    from auditlake_devtools.bench import render_ingest
    from auditlake_devtools.bench_delivery_floor import (
        FLOOR_SCHEMA,
        StepClock,
        busy_seconds,
        commits_between,
        lake_versions,
        profile,
        unit_costs,
    )
    from auditlake_devtools.variant import variant_environ
    from pipelines.config.load import load_config

    cfg = load_config("test", environ=variant_environ(tmp_path / "lake", "floor"))
    spark.sql("CREATE SCHEMA IF NOT EXISTS bronze_floor")
    try:
        spark.sql("CREATE TABLE bronze_floor.raw (id long) USING delta")
        spark.sql("CREATE VIEW bronze_floor.raw_view AS SELECT * FROM bronze_floor.raw")
        before = lake_versions(spark, cfg)
        assert before == {"bronze_floor.raw": 0}  # the view is no table; absent schemas are skipped
        spark.sql("INSERT INTO bronze_floor.raw VALUES (1)")
        spark.sql("INSERT INTO bronze_floor.raw VALUES (2)")
        spark.sql("CREATE TABLE bronze_floor.ledger (id long) USING delta")
        assert commits_between(before, lake_versions(spark, cfg)) == {"bronze_floor.ledger": 1, "bronze_floor.raw": 2}
    finally:
        spark.sql("DROP SCHEMA IF EXISTS bronze_floor CASCADE")

    unit = unit_costs(spark, repeats=1)
    assert unit["append_s"] > unit["job_s"] > 0 and not spark.catalog.databaseExists(FLOOR_SCHEMA)
    # the test session has no UI: no job is counted, the floor is the commits alone
    assert unit["jobs_per_append"] == 0

    jobs = [{"start": 0.0, "end": 2.0}, {"start": 1.0, "end": 3.0}, {"start": 5.0, "end": 6.0}]
    assert busy_seconds(jobs) == 4.0
    unit = {"append_s": 0.5, "jobs_per_append": 2, "job_s": 0.1}
    p = profile(9.0, jobs, {"bronze.raw_site": 2, "ops.file_ledger": 1}, unit)
    assert p["floor_s"] == pytest.approx(3 * 0.5)  # 3 jobs, all of them the commits'
    p = profile(9.0, jobs * 3, {"bronze.raw_site": 2}, unit)
    assert p["floor_s"] == pytest.approx(2 * 0.5 + 5 * 0.1) and p["jobs"] == 9

    clock = StepClock()
    for line in ("refresh: layers bronze, silver", "bronze: done\nand more", "silver: site: typed", "feed: updated"):
        clock(line)
    clock.lines = [(seconds, line) for seconds, (_s, line) in zip((0.1, 3.0, 1.0, 4.9), clock.lines, strict=True)]
    assert clock.longest(2) == [(3.0, "bronze: done"), (4.9, "feed: updated")]  # in the order they ran

    def refresh(bronze_s: float, silver_s: float) -> dict:
        return {"bronze_s": bronze_s, "silver_s": silver_s, "rows": 100, "events": 100}

    s = {
        "name": "1,000 events",
        "files": 10,
        "megabytes": 1.0,
        "lines": 1000,
        "bare_s": 1.0,
        "duck": {"seconds": 1.0, "error": None},
        "floor_s": 2.0,
        "full": refresh(10.0, 20.0),
        "nothing": refresh(1.0, 2.0),
        "incr": {
            **refresh(2.0, 4.0),
            "profile": p,
            "jobs": ["1.0 s, 1 tasks: silver: site: writes"],
            "steps": clock.longest(2),
        },
    }
    report = render_ingest([s], cfg)
    assert "9 Spark jobs (running for 4.0 s) and 2 Delta commits (bronze.raw_site 2)" in report
    assert "**1.5 s = 5.0% of the full load, 0.5x nothing new** (the delivery: 20.0%, 2.0x)" in report
    assert "- 1.0 s, 1 tasks: silver: site: writes" in report
    assert "- 3.0 s: bronze: done\n- 4.9 s: feed: updated" in report


def test_the_machines_speed_reading_gives_compute_and_memory_seconds(monkeypatch):
    from auditlake_devtools import machine_speed

    monkeypatch.setattr(machine_speed, "STEPS", 30_000)
    monkeypatch.setattr(machine_speed, "READS", 50_000)
    monkeypatch.setattr(machine_speed, "CELLS", 40_000)
    text = machine_speed.describe.__wrapped__()  # a reading of its own (describe keeps its process's first)
    compute, memory = (float(x) for x in re.findall(r"(?:compute|memory) (\d+\.\d+) s", text))
    assert 0 < compute < 5 and 0 < memory < 5 and "cores" in text, text
    assert machine_speed.describe() is machine_speed.describe()  # read once per process


def test_the_serve_bench_runs_the_analyst_guides_queries_and_judges_the_target():
    from auditlake_devtools.bench_serve import MODES, error_kinds, guide_queries, render_serve

    queries = guide_queries()
    assert len(queries) >= 10
    assert all("analyst." in q and "gold." not in q for q in queries)
    figures = {"answers": 100, "per_second": 2.0, "p50": 0.5, "p95": 1.0, "max": 3.0, "errors": 0, "first_error": ""}
    alone = {**figures, "abusive": 0, "abusive_refused": 0, "error_kinds": {}}
    beside = {**figures, "p95": 2.5, "abusive": 6, "abusive_refused": 6, "error_kinds": {}}
    fig = {
        "sessions": 8,
        "seconds": 60,
        "queries": len(queries),
        "timeout": 300,
        "machine": "a machine",
        "up": True,
        "modes": {mode: {"alone": dict(alone), "beside": dict(beside)} for mode in MODES},
    }
    assert "one long-lived session each: p95 beside 2.50x alone, 0 errors, max 3.00 s: not met" in render_serve(fig)
    for phases in fig["modes"].values():
        phases["beside"]["p95"] = 1.5
    dropped = fig["modes"]["dropped"]["beside"]
    dropped.update(errors=3, error_kinds=error_kinds(["KeyError: None", "KeyError: None", "TTransportException: 7"]))
    text = render_serve(fig)
    assert "one long-lived session each: p95 beside 1.50x alone, 0 errors, max 3.00 s: met" in text
    assert "a session per statement, never closed: p95 beside 1.50x alone, 3 errors, max 3.00 s: not met" in text
    assert "- a session per statement, never closed, beside: 2 x `KeyError: None`" in text
    assert "1 x `TTransportException: N`" in text
    assert len([ln for ln in text.splitlines() if ln.startswith("| ")]) == 1 + 2 * len(MODES)
