"""Runs the dbt project (gold) in-process on the pipeline's SparkSession.

dbt-spark's ``session`` method takes the SparkSession of the process it runs in, so the Delta
and metastore settings of ``pipelines.runtime.spark_session`` apply to dbt too (target ``pipeline`` in
dbt_project/profiles.yml). Schemas and report thresholds come from conf/, passed as dbt vars.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pyspark.sql import SparkSession

from pipelines.activity_log import FAMILIES
from pipelines.config.load import Config
from pipelines.config.project import DBT_DIR, INSTALLED
from pipelines.errors import CheckFailed, UsageError
from pipelines.gold.selection import moved_sources_selection
from pipelines.lake.table_names import tables
from pipelines.runtime.spark_session import small_input_below

# a build's inputs that change every build, for dbt's macros (macros/run_inputs.sql reads this name)
RUN_INPUTS_ENV = "AUDITLAKE_DBT_RUN"


class GoldError(CheckFailed):
    """dbt reported a failed model or test."""


@dataclass
class GoldResult:
    command: str
    seconds: float = 0.0
    statuses: dict[str, int] = field(default_factory=dict)  # status -> node count
    failures: list[str] = field(default_factory=list)


def _detection_vars(detections: dict) -> dict:
    """conf gold.detections -> dbt vars: a section's keys as <section>_<key>, a single value as itself."""
    out = {}
    for name, value in detections.items():
        if isinstance(value, dict):
            out.update({f"{name}_{key}": v for key, v in value.items()})
        else:
            out[name] = value
    return out


def dbt_vars(cfg: Config) -> dict:
    """conf -> dbt vars: the same on every build (a var that changes makes dbt parse the whole project
    again; what changes per build goes in the environment: ``run_inputs``)."""
    return {
        "silver_schema": cfg.settings.silver.schema,
        "failed_login_burst_failures": cfg.settings.gold.failed_login_burst.failures,
        "failed_login_burst_window_minutes": cfg.settings.gold.failed_login_burst.window_minutes,
        "inactive_user_days": cfg.settings.gold.inactive_user_days,
        **_detection_vars(cfg.get("gold.detections")),
        "ops_schema": cfg.settings.ops.schema,
        "feed_baseline_days": cfg.settings.feed.baseline_days,
        "feed_usual_share": cfg.settings.feed.usual_share,
        "feed_report_days": cfg.settings.feed.report_days,
    }


def run_inputs(tests_since: str | None = None) -> str:
    """What one build needs that changes every build, as the JSON dbt's macros read from ``RUN_INPUTS_ENV``
    (macros/run_inputs.sql): ``tests_since``, the staging and incremental-mart tests check the rows
    promoted after it (macros/test_scope.sql), and an empty incremental mart reads from it."""
    return json.dumps({"tests_since": tests_since} if tests_since else {})


def _dbt_output(variable: str, folder: str, cfg: Config | None) -> Path:
    given = os.environ.get(variable)
    if given:  # made absolute here: dbt would take a relative one from the project's folder
        return Path(given).resolve()
    # an installed package's dbt project is read-only: dbt writes beside the lake's other state
    return cfg.data_dir / "dbt" / folder if INSTALLED and cfg is not None else DBT_DIR / folder


def dbt_target_dir(cfg: Config | None = None) -> Path:
    """Where dbt writes its compiled SQL, manifest and run results: ``DBT_TARGET_PATH``, else
    dbt_project/target in a checkout, else (installed) ``<data_dir>/dbt/target``."""
    return _dbt_output("DBT_TARGET_PATH", "target", cfg)


def dbt_log_dir(cfg: Config | None = None) -> Path:
    """Where dbt writes dbt.log: ``DBT_LOG_PATH``, else dbt_project/logs, else (installed) ``<data_dir>/dbt/logs``."""
    return _dbt_output("DBT_LOG_PATH", "logs", cfg)


def merge_windows(cfg: Config | None = None) -> dict[str, str]:
    """Table -> its window column, for the models configured with ``merge_window`` (macros/merge_window.sql),
    from the manifest of dbt's last run ({} before any): the compaction keeps them in that column's order."""
    path = dbt_target_dir(cfg) / "manifest.json"
    if not path.is_file():
        return {}
    nodes = json.loads(path.read_text(encoding="utf-8"))["nodes"].values()
    return {
        n["alias"]: n["config"]["merge_window"]
        for n in nodes
        if n["resource_type"] == "model" and n["config"].get("merge_window")
    }


def _split_vars(args: list[str]) -> tuple[list[str], dict]:
    """``args`` without a caller's ``--vars X`` (dbt keeps only the last ``--vars``, which is conf's), and X:
    the caller's vars go over conf's (e.g. ``--vars '{access_review_as_of: "2026-06-04"}'``)."""
    rest, given = [], {}
    items = iter(args)
    for arg in items:
        if arg == "--vars" or arg.startswith("--vars="):
            text = arg.partition("=")[2] if "=" in arg else next(items, "")
            value = yaml.safe_load(text) if text.strip() else {}
            if not isinstance(value, dict):
                raise UsageError(f"dbt --vars: {text!r} is not a mapping (e.g. '{{name: value}}')")
            given.update(value)
        else:
            rest.append(arg)
    return rest, given


def silver_tables(cfg: Config) -> list[str]:
    """The silver tables gold reads: the events of each family and the Write-Back rows."""
    t = tables(cfg)
    return [*map(t.silver_events, FAMILIES), t.writeback_audit]


# set while a block of gold's queries runs under over_silver's decision (a nested one keeps it)
_SILVER_JUDGED: ContextVar[bool] = ContextVar("silver_judged", default=False)


@contextmanager
def over_silver(spark: SparkSession, cfg: Config) -> Iterator[None]:
    """Gold's queries over a small silver (fewer rows than ``spark.codegen_min_rows``) with the
    small-input settings: planning and compiling dbt's ~150 queries the adaptive, compiled way costs
    more than they take on a few thousand rows (docs/performance.md, "Small inputs"). A refresh's gold
    layer (dbt, its gate, compaction, the analysts' copies) and every dbt run of its own (``auditlake
    gold dbt``) run in one; inside another, the outer one's decision stands and silver is not counted
    again."""
    if _SILVER_JUDGED.get():
        yield
        return
    # Delta counts from its statistics; a table not made yet (dbt debug on a new lake) holds no row
    rows = sum(spark.table(name).count() for name in silver_tables(cfg) if spark.catalog.tableExists(name))
    judged = _SILVER_JUDGED.set(True)
    try:
        with small_input_below(spark, cfg, rows):
            yield
    finally:
        _SILVER_JUDGED.reset(judged)


def run_dbt(
    spark: SparkSession, cfg: Config, args: list[str], raise_on_failure: bool = True, tests_since: str | None = None
) -> GoldResult:
    """``dbt <args>`` on this process's SparkSession (``spark`` must be the active session); ``tests_since``:
    see ``run_inputs``."""
    from dbt.cli.main import dbtRunner  # heavy: only when gold runs

    assert SparkSession.getActiveSession() is spark or SparkSession.getActiveSession() is None
    args, given = _split_vars(args)
    env = {
        "AUDITLAKE_DBT_TARGET": "pipeline",
        "AUDITLAKE_GOLD_SCHEMA": cfg.settings.gold.schema,
        "AUDITLAKE_DBT_THREADS": str(cfg.settings.gold.threads),
        # as environment, not flags: a command that has no such flag (dbt debug) ignores it
        "DBT_TARGET_PATH": str(dbt_target_dir(cfg)),
        "DBT_LOG_PATH": str(dbt_log_dir(cfg)),
        RUN_INPUTS_ENV: run_inputs(tests_since),
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    started = time.monotonic()
    try:
        with over_silver(spark, cfg):
            res = dbtRunner().invoke(
                [
                    *args,
                    "--project-dir",
                    str(DBT_DIR),
                    "--profiles-dir",
                    str(DBT_DIR),
                    "--vars",
                    json.dumps({**dbt_vars(cfg), **given}),
                ]
            )
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    result = GoldResult(command=" ".join(args), seconds=time.monotonic() - started)
    for node in getattr(res.result, "results", None) or []:
        status = str(node.status)
        result.statuses[status] = result.statuses.get(status, 0) + 1
        if status in ("error", "fail"):
            result.failures.append(f"{node.node.name}: {status}: {(node.message or '').strip()[:500]}")
    if res.exception is not None:
        result.failures.append(f"dbt {args[0]} raised: {res.exception}")
    if raise_on_failure and (not res.success or result.failures):
        raise GoldError(f"dbt {result.command} failed:\n  " + "\n  ".join(result.failures or ["(see dbt output)"]))
    return result


def build_gold(
    spark: SparkSession,
    cfg: Config,
    full_refresh: bool = False,
    log=print,
    tests_since: str | None = None,
    unmoved: set[str] | frozenset[str] = frozenset(),
) -> GoldResult:
    """``dbt build``: every mart, incrementally unless ``full_refresh``, with its data tests; the tests
    of the staging views and incremental marts only over silver rows promoted after ``tests_since``
    when given; without the nodes that read only the silver tables ``unmoved`` since the last build
    (``inputs.unmoved_tables``; pipelines/gold/selection.py). dbt's unit tests check the SQL, not the
    data: they run in the test suite and with ``auditlake gold dbt test --select test_type:unit``, not on
    every refresh (a sixth of a build's time); the data tests only while ``gold.data_tests``."""
    data_tests = cfg.settings.gold.data_tests
    skipped = ["unit_test"] if data_tests else ["unit_test", "test"]
    args = ["build", "--quiet", "--exclude-resource-type", *skipped] + (["--full-refresh"] if full_refresh else [])
    since = (
        ""
        if full_refresh or not tests_since
        else f"; tests of staging and incremental marts over silver rows since {tests_since}"
    )
    since += "" if data_tests else "; no data tests (gold.data_tests: false)"
    selection = None if full_refresh else moved_sources_selection(dbt_target_dir(cfg) / "manifest.json", unmoved)
    if selection:
        args += ["--select", *selection[0]]
        since += f"; what reads only {', '.join(selection[1])} left as built (unchanged since the last build)"
    log(f"gold: dbt build{' --full-refresh' if full_refresh else ''} ({DBT_DIR.name}/){since}")
    result = run_dbt(spark, cfg, args, tests_since=None if full_refresh else tests_since)
    figures = ", ".join(f"{n} {s}" for s, n in sorted(result.statuses.items()))
    log(f"gold: {figures} in {result.seconds:.1f}s")
    return result
