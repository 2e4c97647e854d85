"""Great Expectations gates: clean data passes, data broken on purpose is stopped with the right message."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from auditlake_devtools.sample.activity_log import generate_activity_log
from pipelines.activity_log.silver.transform import bronze_of, stage
from pipelines.config.load import load_config
from pipelines.lake.table_names import tables
from pipelines.quality.frames import bronze_rows_frame, silver_batch_frame, silver_events_frame
from pipelines.quality.gate import QualityGate, QualityGateError
from pipelines.quality.suites import bronze_rows_suite, silver_batch_suite, silver_events_suite
from pipelines.refresh import run_refresh
from tests.lake import use_variant, variant_environ

QUIET = {"log": lambda _m: None}


@pytest.fixture(scope="module")
def clean_lake(spark, lake_dir):
    cfg = load_config("test", environ=variant_environ(lake_dir, "dq_clean"))
    generate_activity_log(cfg.path("paths.landing_dir"), 800, seed=31, days=1)
    report = run_refresh(spark, cfg, ["bronze", "silver"], **QUIET)
    return cfg, report


@pytest.fixture(scope="module")
def gate(spark, clean_lake):
    cfg, _ = clean_lake
    return QualityGate(spark, cfg, **QUIET)


def test_clean_data_passes_and_every_result_is_recorded(spark, clean_lake):
    cfg, report = clean_lake
    assert sum(r.inserted for r in report.silver) > 0
    results = spark.table(tables(cfg).dq_results).where(F.col("run_id") == report.run_id)
    assert results.where("NOT success AND severity = 'critical'").count() == 0
    # one row per expectation per validation: 3 checkpoints per family batch
    checkpoints = {r["checkpoint"] for r in results.select("checkpoint").distinct().collect()}
    assert checkpoints == {
        "bronze_to_silver.bronze_rows",
        "bronze_to_silver.silver_events_site",
        "bronze_to_silver.silver_events_tenant",
        "bronze_to_silver.silver_batch",
    }
    per_validation = results.groupBy("checkpoint", "validated_at").count().collect()
    suite_sizes = {
        "bronze_to_silver.silver_batch": len(silver_batch_suite(cfg).expectations),
        "bronze_to_silver.silver_events_site": len(silver_events_suite(cfg, "site").expectations),
    }
    for row in per_validation:
        if row["checkpoint"] in suite_sizes:
            assert row["count"] == suite_sizes[row["checkpoint"]]


def test_data_docs_list_every_suite(clean_lake):
    cfg, report = clean_lake
    assert report.data_docs is not None and report.data_docs.is_file()
    site = report.data_docs.parent
    html = " ".join(p.read_text(encoding="utf-8", errors="ignore") for p in site.rglob("*.html"))
    for suite in ("bronze_rows", "silver_events_site", "silver_events_tenant", "silver_batch"):
        assert suite in html


def test_the_data_docs_keep_each_suites_newest_results(spark, lake_dir, tmp_path):
    """GX renders a page for every stored validation result and reads each for the index: the gate
    keeps each suite's newest quality.data_docs_runs, so an hourly refresh's site stays the size of a
    day (every outcome is in ops.dq_results)."""
    environ = variant_environ(lake_dir, "dq_clean") | {
        "AUDITLAKE__QUALITY__CONTEXT_DIR": str(tmp_path),
        "AUDITLAKE__QUALITY__DATA_DOCS_RUNS": "2",
    }
    cfg = load_config("test", environ=environ)
    gate = QualityGate(spark, cfg, **QUIET)
    for run in range(4):
        gate.validate("bronze_to_silver", silver_batch_suite(cfg), silver_batch_frame(10, 9, 1, 0), f"docs-{run}")
    index = gate.build_data_docs(only_new=True)

    runs = [r.to_tuple()[2] for r in gate.results]  # each validation's run time, as its folders name it
    assert len(set(runs)) == 4
    kept = {p.parent.name for p in (tmp_path / "gx" / "uncommitted" / "validations" / "silver_batch").rglob("*.json")}
    pages = {p.parent.name for p in (index.parent / "validations" / "silver_batch").rglob("*.html")}
    assert kept == pages == set(sorted(runs)[-2:])
    listed = index.read_text(encoding="utf-8")
    assert all(run in listed for run in sorted(runs)[-2:]) and not any(run in listed for run in sorted(runs)[:2])
    assert (index.parent / "expectations" / "silver_batch.html").is_file()  # the suite's own page


def test_a_checkpoint_is_stored_once_and_again_when_its_suite_changes(spark, lake_dir, tmp_path):
    """Storing a suite, its validation definition and its checkpoint cost every refresh, per family:
    a gate reuses what an earlier one stored while the suite is the same, and stores a changed suite (a
    stricter threshold) before judging by it."""
    environ = variant_environ(lake_dir, "dq_clean") | {"AUDITLAKE__QUALITY__CONTEXT_DIR": str(tmp_path)}
    cfg = load_config("test", environ=environ)
    stored = tmp_path / "gx" / "expectations" / "silver_batch.json"
    figures = silver_batch_frame(100, 96, 0, 4)  # a quarantine ratio of 0.04: within conf's 0.05

    def ratio_passed(config, run_id: str) -> bool:
        gate = QualityGate(spark, config, **QUIET)  # a new gate: a refresh in a new process
        try:
            gate.validate("bronze_to_silver", silver_batch_suite(config), figures, run_id)
        except QualityGateError:
            pass
        return [o.success for o in gate.outcomes if o.key == "quarantine_ratio"] == [True]

    assert ratio_passed(cfg, "first")
    written = stored.stat().st_mtime_ns
    assert ratio_passed(cfg, "same")
    assert stored.stat().st_mtime_ns == written, "an unchanged suite was stored again"
    stricter = load_config("test", environ=environ | {"AUDITLAKE__QUALITY__THRESHOLDS__MAX_QUARANTINE_RATIO": "0.03"})
    assert not ratio_passed(stricter, "stricter")
    assert stored.stat().st_mtime_ns != written and '"max_value": 0.03' in stored.read_text(encoding="utf-8")
    assert ratio_passed(cfg, "back")  # and back again


def test_the_commands_ci_reads_report_the_checks_and_fail_on_a_mismatch(
    spark, clean_lake, lake_dir, monkeypatch, capsys
):
    """`reconcile`, `dq report` and `refresh --summary` (the one .ci/run calls) print the lake's checks
    and the latest quality run; an unbalanced lake exits 1."""
    from pipelines.cli import main

    cfg, report = clean_lake
    use_variant(monkeypatch, lake_dir, "dq_clean")
    assert main(["--env", "test", "reconcile"]) == 0
    out = capsys.readouterr().out
    assert "MISMATCH" not in out and report.run_id in out  # families, files and this run's figures
    assert main(["--env", "test", "dq", "report"]) == 0
    out = capsys.readouterr().out
    assert f"latest quality run {report.run_id}:" in out and "bronze_to_silver.silver_batch" in out
    assert f"Data Docs: {report.data_docs}" in out

    ledger = tables(cfg).file_ledger  # one landed file forgotten by the ledger: bronze holds rows it cannot account for
    version = spark.sql(f"DESCRIBE HISTORY {ledger} LIMIT 1").first()["version"]
    forgotten = spark.table(ledger).where("status = 'landed'").agg(F.min("path")).first()[0]
    DeltaTable.forName(spark, ledger).delete(F.col("path") == forgotten)
    try:
        assert main(["--env", "test", "refresh", "--layers", "silver", "--summary"]) == 1
        out = capsys.readouterr().out
        assert "MISMATCH" in out and "latest quality run" in out
    finally:
        spark.sql(f"RESTORE TABLE {ledger} TO VERSION AS OF {version}")


def test_refresh_every_period_runs_in_one_process_and_a_failed_run_does_not_stop_it(
    spark, clean_lake, lake_dir, monkeypatch, capsys
):
    """`refresh --every`: runs on time in one process; the first run fails (its source down), the
    next ones still come; the exit code says one failed; a period it cannot read is a usage error."""
    import pipelines.refresh.command
    from pipelines.cli import main

    cfg, _ = clean_lake
    use_variant(monkeypatch, lake_dir, "dq_clean")
    assert main(["--env", "test", "refresh", "--every", "soon"]) == 2
    assert "--every 'soon': give a period such as 15m" in capsys.readouterr().err

    runs_table = tables(cfg).refresh_runs
    runs_before = spark.table(runs_table).select("run_id").distinct().count()
    real, calls = pipelines.refresh.command.run_refresh, []

    def first_fails(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the landing share is not mounted\nand a second line")
        return real(*args, **kwargs)

    monkeypatch.setattr(pipelines.refresh.command, "run_refresh", first_fails)
    assert main(["--env", "test", "refresh", "--layers", "silver", "--every", "1s", "--runs", "3"]) == 1
    out = capsys.readouterr().out
    assert "refresh every 1s: run 1 failed: the landing share is not mounted and a second line" in out
    assert out.count("refresh every 1s: next run at") == 2 and len(calls) == 3
    assert spark.table(runs_table).select("run_id").distinct().count() == runs_before + 2

    # every run failing (the JVM gone, say): it stops after three in a row, for a supervisor to restart it
    def always_fails(*_args, **_kwargs):
        raise RuntimeError("the landing share is not mounted")

    monkeypatch.setattr(pipelines.refresh.command, "run_refresh", always_fails)
    assert main(["--env", "test", "refresh", "--every", "1s"]) == 1  # no --runs: only the failures end it
    out = capsys.readouterr().out
    assert out.count("failed: the landing share is not mounted") == 3 and "3 runs in a row failed: stopping" in out
    assert main(["--env", "test", "refresh", "--every", "1h", "--wait", "60"]) == 2  # --wait is for one refresh


def _events(spark, cfg):
    # ordered so that every evaluation of the frame gives the same 50 rows (a bare limit may not)
    return spark.table(tables(cfg).silver_events("site")).orderBy("event_id").limit(50)


def _gate_message(gate, boundary, suite, frame) -> str:
    with pytest.raises(QualityGateError) as err:
        gate.validate(boundary, suite, frame, "test-run")
    return str(err.value)


def test_duplicate_event_ids_are_stopped(spark, clean_lake, gate):
    cfg, _ = clean_lake
    events = silver_events_frame(cfg, _events(spark, cfg))
    duplicated = events.unionByName(events.limit(1))
    message = _gate_message(gate, "bronze_to_silver", silver_events_suite(cfg, "site"), duplicated)
    assert "suite silver_events_site" in message and "expectation event_id_unique" in message
    assert re.search(r"1 of \d+ rows unexpected|2 of \d+ rows unexpected", message)


def test_future_timestamps_are_stopped(spark, clean_lake, gate):
    cfg, _ = clean_lake
    future = datetime.now() + timedelta(days=30)
    events = _events(spark, cfg)
    events = events.withColumn(
        "event_time",
        F.when(F.col("event_id") == F.lit(events.first()["event_id"]), F.lit(future)).otherwise(F.col("event_time")),
    )
    message = _gate_message(
        gate, "bronze_to_silver", silver_events_suite(cfg, "site"), silver_events_frame(cfg, events)
    )
    assert "expectation event_time_in_window" in message and "1 of 50 rows unexpected" in message


def test_unknown_role_codes_are_stopped(spark, clean_lake, gate):
    cfg, _ = clean_lake
    events = _events(spark, cfg).withColumn("site_role_id", F.lit(99))
    message = _gate_message(
        gate, "bronze_to_silver", silver_events_suite(cfg, "site"), silver_events_frame(cfg, events)
    )
    assert "expectation documented_codes" in message and "site_role_id" in message
    assert "[99" in message  # the offending values are shown


def test_broken_reconciliation_is_stopped(spark, clean_lake, gate):
    cfg, _ = clean_lake
    message = _gate_message(gate, "bronze_to_silver", silver_batch_suite(cfg), silver_batch_frame(100, 90, 3, 4))
    assert "suite silver_batch" in message and "expectation reconciliation_exact" in message


def _luid_shape_a_warning(lake_dir):
    environ = variant_environ(lake_dir, "dq_clean") | {"AUDITLAKE__QUALITY__SEVERITY__LUID_SHAPE": "warning"}
    return load_config("test", environ=environ)


def test_warning_is_reported_not_blocking(spark, clean_lake, lake_dir):
    cfg = _luid_shape_a_warning(lake_dir)
    events = _events(spark, cfg).withColumn("actor_user_luid", F.lit("not-a-luid"))
    outcomes = QualityGate(spark, cfg, **QUIET).validate(
        "bronze_to_silver", silver_events_suite(cfg, "site"), silver_events_frame(cfg, events), "w"
    )
    luid = [o for o in outcomes if o.key == "luid_shape" and o.column == "actor_user_luid"]
    assert luid and not luid[0].success and luid[0].severity == "warning"


def test_an_undocumented_event_outcome_is_reported_as_a_warning_not_stopped(spark, clean_lake):
    """eventOutcome's documented values (the registry's, from the help pages): another is told, and the
    batch goes on."""
    cfg, _ = clean_lake
    said: list[str] = []
    gate = QualityGate(spark, cfg, log=said.append)
    events = _events(spark, cfg)
    odd = events.select("event_id").first()[0]
    events = events.withColumn(
        "event_outcome",
        F.when(F.col("event_id") == odd, F.lit("denied")).otherwise(F.lit("success")),
    )
    outcomes = gate.validate(
        "bronze_to_silver", silver_events_suite(cfg, "site"), silver_events_frame(cfg, events), "w"
    )
    (outcome,) = [o for o in outcomes if o.key == "documented_values"]
    assert (outcome.success, outcome.severity, outcome.column) == (False, "warning", "event_outcome")
    row = events.where(F.col("event_id") == odd).first()
    # the offending row as the gate shows it: the identifying columns, text cut at 120 characters
    shown = ("event_id", "event_type", "event_time", "bronze_id", "source_file")
    context = {"event_outcome": "denied"} | {c: str(row[c])[:120] for c in shown}
    assert said == [
        "quality warning: suite silver_events_site, expectation documented_values "
        "[expect_column_values_to_be_in_set(event_outcome)]: 1 of 50 rows unexpected; "
        f'sample of offending values: ["denied"]; sample of offending rows: {json.dumps([context])}'
    ]


def test_a_file_landed_twice_stops_the_batch(spark, clean_lake):
    """The bronze rows check, on the batch as silver staged it, counts each file's landings: by two runs
    within the batch, or in the file ledger (an earlier run's verdict)."""
    cfg, _ = clean_lake
    t = tables(cfg)
    batch = bronze_of(stage(spark.table(t.bronze_raw("site")), "site")).localCheckpoint()  # typed once
    runs = bronze_rows_frame(spark, batch, t.file_ledger).agg(F.min("source_file_runs"), F.max("source_file_runs"))
    assert tuple(runs.first()) == (1, 1)
    one = batch.select("source_file").first()[0]
    again = batch.where(F.col("source_file") == one).withColumn("run_id", F.lit("another-run"))
    ledger_twice = f"{t.bronze_schema}.file_ledger_twice"
    ledger = spark.table(t.file_ledger)
    ledger.unionByName(ledger.where(F.col("path") == one)).write.format("delta").saveAsTable(ledger_twice)
    try:
        for frame in (
            bronze_rows_frame(spark, batch.unionByName(again), t.file_ledger),
            bronze_rows_frame(spark, batch, ledger_twice),
        ):
            twice = frame.where("source_file_runs = 2").select("source_file").distinct().collect()
            assert [r[0] for r in twice] == [one]
            with pytest.raises(QualityGateError, match="source_file_landed_once"):
                QualityGate(spark, cfg, **QUIET).validate("bronze_to_silver", bronze_rows_suite(cfg), frame, "twice")
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {ledger_twice}")


def test_pandas_and_spark_engines_judge_alike(spark, clean_lake):
    """Frames within quality.pandas_max_rows are checked by GX's pandas engine, larger ones by its
    Spark engine: both give the same verdicts, figures and samples."""
    cfg, _ = clean_lake
    events = (
        _events(spark, cfg)
        .withColumn("site_role_id", F.when(F.col("event_id") < "8", F.lit(99)).otherwise(F.col("site_role_id")))
        .withColumn("actor_user_luid", F.lit("not-a-luid"))
    )
    frame = silver_events_frame(cfg, events.unionByName(events.limit(1)))
    judged = {}
    for engine, max_rows in (("pandas", 1000), ("spark", 0)):
        gate = QualityGate(spark, cfg, **QUIET)
        gate.pandas_max_rows = max_rows
        with pytest.raises(QualityGateError):
            gate.validate("bronze_to_silver", silver_events_suite(cfg, "site"), frame, f"engines-{engine}")
        judged[engine] = sorted(
            (o.key, o.column or "", o.success, o.element_count, o.unexpected_count, sorted(map(str, o.sample)))
            for o in gate.outcomes
        )
    failed = {(key, column) for key, column, success, *_ in judged["pandas"] if not success}
    assert {
        ("event_id_unique", "event_id"),
        ("documented_codes", "site_role_id"),
        ("luid_shape", "actor_user_luid"),
    } <= failed
    assert judged["pandas"] == judged["spark"]


def test_the_spark_engine_counts_first_and_samples_only_what_was_unexpected(spark, clean_lake, lake_dir, monkeypatch):
    """A frame its caller counted too large for the pandas engine is not fetched to find that out. GX's
    Spark engine counts without samples (a sample query costs jobs over the whole frame), and runs again
    for the samples only when some value was unexpected."""
    cfg = _luid_shape_a_warning(lake_dir)
    clean = silver_events_frame(cfg, _events(spark, cfg))
    broken = clean.withColumn("actor_user_luid", F.lit("not-a-luid"))
    fetched = []
    to_pandas = type(clean).toPandas
    monkeypatch.setattr(type(clean), "toPandas", lambda frame: fetched.append(1) or to_pandas(frame))

    def stored(gate):  # per stored validation result: its engine, and each expectation's sample
        results = [gate.context.validation_results_store.get(key) for key in gate.results]
        return [
            (
                r.meta["active_batch_definition"]["datasource_name"],
                {e.expectation_config.kwargs.get("column"): e.result.get("partial_unexpected_list") for e in r.results},
            )
            for r in results
        ]

    gate = QualityGate(spark, cfg, **QUIET)
    gate.pandas_max_rows = 10
    gate.validate("bronze_to_silver", silver_events_suite(cfg, "site"), clean, "counted", rows=50)
    assert fetched == []
    [(engine, samples)] = stored(gate)
    assert engine == "auditlake_spark" and samples["event_id"] == []
    assert {o.element_count for o in gate.outcomes} == {50} and all(o.success for o in gate.outcomes)

    warned = []  # luid_shape made a warning: logged with its samples, not raised
    gate = QualityGate(spark, cfg, log=warned.append)
    gate.pandas_max_rows = 10
    gate.validate("bronze_to_silver", silver_events_suite(cfg, "site"), broken, "counted", rows=50)
    assert len(warned) == 1 and "luid_shape" in warned[0] and "not-a-luid" in warned[0]
    (_, counted), (engine, sampled) = stored(gate)
    assert engine == "auditlake_spark"
    assert counted["actor_user_luid"] == [] and sampled["actor_user_luid"] == ["not-a-luid"] * 5
    luid = next(o for o in gate.outcomes if o.column == "actor_user_luid")
    assert (luid.unexpected_count, luid.sample) == (50, ["not-a-luid"] * 5)
    assert fetched == []


def test_a_failed_gate_stops_the_refresh_and_leaves_silver_as_it_was(spark, lake_dir, monkeypatch, capsys):
    environ = variant_environ(lake_dir, "dq_broken")
    cfg = load_config("test", environ=environ)
    landing = cfg.path("paths.landing_dir")
    generate_activity_log(landing, 300, seed=41, days=1)
    # a delivery that is mostly not JSON: the parse rate drops below the threshold
    bad = landing / "site" / "broken" / "eventType=hist_login" / "part-00000.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("\n".join(["<html>gateway timeout</html>"] * 400) + "\n", encoding="utf-8")
    use_variant(monkeypatch, lake_dir, "dq_broken")
    from pipelines.cli import main

    code = main(["--env", "test", "refresh", "--layers", "bronze,silver"])
    err = capsys.readouterr().err
    assert code == 1
    assert "quality gate bronze_to_silver.bronze_rows stopped the promotion" in err
    assert "expectation json_parse_rate" in err and "gateway timeout" in err
    t = tables(cfg)
    assert spark.table(t.bronze_raw("site")).count() > 400  # bronze landed as it is
    assert spark.table(t.silver_events("site")).count() == 0  # nothing of the batch promoted
    failed = spark.table(t.dq_results).where("NOT success").select("expectation_key").collect()
    assert {r["expectation_key"] for r in failed} >= {"json_parse_rate"}
    assert json.loads(spark.table(t.dq_results).where("expectation_key = 'json_parse_rate'").first()["sample"])


def test_the_row_rules_reject_exactly_the_rows_the_gate_counts(spark, clean_lake):
    """Silver sets aside, before the gate, the rows its critical row expectations reject: the conditions
    are built from the expectations themselves, and reject just what GX counts unexpected (NULLs as GX
    judges them), so the gate then sees a batch they pass."""
    from pipelines.activity_log.silver.transform import set_aside
    from pipelines.quality.suites import row_rules

    cfg, _ = clean_lake
    ids = [r[0] for r in _events(spark, cfg).select("event_id").collect()]
    events = (
        _events(spark, cfg)
        .withColumn("site_role_id", F.when(F.col("event_id").isin(ids[:3]), F.lit(99)).otherwise(F.col("site_role_id")))
        .withColumn(
            "actor_user_luid",
            F.when(F.col("event_id").isin(ids[2:6]), F.lit("not-a-luid"))
            .when(F.col("event_id") == ids[6], F.lit(None))
            .otherwise(F.col("actor_user_luid")),
        )
        .withColumn(
            "event_time",
            F.when(F.col("event_id") == ids[7], F.lit(datetime(2099, 1, 1))).otherwise(F.col("event_time")),
        )
    )
    suite = silver_events_suite(cfg, "site")
    gate = QualityGate(spark, cfg, **QUIET)
    with pytest.raises(QualityGateError) as err:  # a row expectation the rows reach still stops: fail-safe
        gate.validate("bronze_to_silver", suite, silver_events_frame(cfg, events), "rules")
    assert all(key in err.value.stopped_by for key in ("event_time_in_window", "luid_shape", "documented_codes"))
    counted = {}
    for o in gate.outcomes:
        if o.unexpected_count:
            counted[o.key] = counted.get(o.key, 0) + o.unexpected_count

    unjudged = events.withColumn("_reason", F.lit(None).cast("string")).withColumn("_detail", F.lit(None))
    judged = set_aside(unjudged, row_rules(cfg, suite))
    rejected = {r["_reason"]: r["n"] for r in judged.groupBy("_reason").agg(F.count("*").alias("n")).collect()}
    # a row two rules reject is set aside under the first, in the suite's order (LUIDs before codes)
    assert rejected.pop(None) == 50 - 7
    assert rejected == {"event_time_in_window": 1, "luid_shape": 4, "documented_codes": 2}
    assert counted == {"event_time_in_window": 1, "documented_codes": 3, "luid_shape": 4}
    kept = judged.where("_reason IS NULL").drop("_reason", "_detail")
    fresh = silver_events_suite(cfg, "site")  # (a suite's expectations belong to the GX suite first built of them)
    gate.validate("bronze_to_silver", fresh, silver_events_frame(cfg, kept), "rules")  # passes


def test_a_share_stops_only_a_batch_large_enough_to_say_something_of_the_feed(spark, clean_lake):
    """A share threshold is a circuit breaker for a broken feed: on fewer rows than
    quality.thresholds.min_rows_for_shares it is told, not stopping; on a large batch it stops, unless the
    operator released that batch."""
    cfg, _ = clean_lake
    said: list[str] = []
    gate = QualityGate(spark, cfg, log=said.append)
    one_stray = silver_batch_frame(1, 0, 0, 1)  # one row, quarantined: a ratio of 1
    gate.validate("bronze_to_silver", silver_batch_suite(cfg), one_stray, "shares", batch_rows=1)
    assert (
        len(said) == 1
        and "a share judged on 1 rows (fewer than quality.thresholds.min_rows_for_shares, 100)" in said[0]
    )
    broken = silver_batch_frame(400, 100, 0, 300)
    with pytest.raises(QualityGateError, match="expectation quarantine_ratio") as err:
        gate.validate("bronze_to_silver", silver_batch_suite(cfg), broken, "shares", batch_rows=400)
    assert err.value.stopped_by == "bronze_to_silver.silver_batch quarantine_ratio"
    gate.validate("bronze_to_silver", silver_batch_suite(cfg), broken, "shares", batch_rows=400, waive_shares=True)
    assert "released by the operator, not stopping" in said[-1]
    with pytest.raises(QualityGateError, match="expectation reconciliation_exact"):  # a batch invariant: always
        gate.validate("bronze_to_silver", silver_batch_suite(cfg), silver_batch_frame(5, 3, 0, 1), "x", batch_rows=5)
