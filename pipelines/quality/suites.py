"""Expectation suites as code: reviewable, diffable, built from the registry where it makes sense.

Each expectation carries ``meta.key`` (a short stable name), ``meta.severity`` (``critical`` acts,
``warning`` is reported), the severity coming from ``quality.severity`` in conf (default
``quality.default_severity``), and ``meta.kind``, what a critical failure does (``KINDS``):

- ``row``: the expectation judges one row at a time. The rows it rejects are set aside to quarantine
  with the expectation's key as the reason before the gate runs (``row_rules``), and the rest of the
  batch goes on: no single row stops the line.
- ``share``: a share of the batch (parse rate, type rate, quarantine ratio), a circuit breaker for a
  broken feed. It stops the batch only when the batch has ``quality.thresholds.min_rows_for_shares``
  rows or more: on a handful of rows a share says nothing about the feed.
- ``batch``: an invariant of the batch as a whole (reconciliation, uniqueness across the batch, each
  file landed once, the lake's own ingest columns, a mart's contract). It stops the promotion.

Suites validate frames prepared by ``pipelines.quality.frames``:
- ``bronze_rows``: the bronze rows a silver batch is about to promote;
- ``silver_events``: the typed events that batch is about to write (one suite per family);
- ``silver_batch``: one row of batch figures (quarantine ratio, reconciliation difference).
"""

from __future__ import annotations

from dataclasses import dataclass

import great_expectations as gx
from great_expectations import expectations as gxe
from pyspark.sql import Column
from pyspark.sql import functions as F

from pipelines.activity_log.silver.plan import family_plan
from pipelines.activity_log.silver.transform import RowRule
from pipelines.config.load import Config
from pipelines.lake.sql_text import UUID_PATTERN
from pipelines.quality.frames import event_time_in_window
from pipelines.writeback import ACTIONS as WRITEBACK_ACTIONS


@dataclass(frozen=True)
class SuiteSpec:
    name: str
    expectations: tuple


ROW, SHARE, BATCH = "row", "share", "batch"
# What each expectation judges: a property of the check, not an operator's choice (its severity is).
KINDS = {
    "json_parse_rate": SHARE,
    "event_type_present": SHARE,
    # written by bronze itself, whatever the input: a NULL there is the lake's fault, not a row's
    "ingest_metadata_not_null": BATCH,
    "source_file_landed_once": BATCH,
    "event_id_unique": BATCH,
    "event_id_not_null": ROW,
    "event_time_not_null": ROW,
    "event_time_in_window": ROW,
    "event_type_known": ROW,
    "luid_shape": ROW,
    "documented_codes": ROW,
    "documented_values": ROW,
    "quarantine_ratio": SHARE,
    "reconciliation_exact": BATCH,
    "gold_reconciliation_exact": BATCH,
    "mart_key_unique": BATCH,
    "login_outcome_known": ROW,
    "owner_changed": ROW,
    "writeback_action_known": ROW,
}


def _meta(cfg: Config, key: str) -> dict:
    # one of pipelines.config.settings.SEVERITIES: load_config checked every quality.severity entry and the default
    severity = cfg.settings.quality.severity.get(key, cfg.settings.quality.default_severity)
    return {"key": key, "severity": severity, "kind": KINDS[key]}


def bronze_rows_suite(cfg: Config) -> SuiteSpec:
    t = cfg.get("quality.thresholds")
    m = lambda key: _meta(cfg, key)  # noqa: E731
    return SuiteSpec(
        "bronze_rows",
        (
            gxe.ExpectColumnValuesToBeInSet(
                column="parse_status", value_set=["ok"], mostly=t["min_parse_rate"], meta=m("json_parse_rate")
            ),
            gxe.ExpectColumnValuesToBeInSet(
                column="event_type_present",
                value_set=[True],
                mostly=t["min_event_type_rate"],
                meta=m("event_type_present"),
            ),
            *[
                gxe.ExpectColumnValuesToNotBeNull(column=c, meta=m("ingest_metadata_not_null"))
                for c in ("bronze_id", "source_file", "ingest_ts", "run_id", "content_hash")
            ],
            gxe.ExpectColumnValuesToBeBetween(
                column="source_file_runs", min_value=1, max_value=1, meta=m("source_file_landed_once")
            ),
        ),
    )


def silver_events_suite(cfg: Config, family: str) -> SuiteSpec:
    m = lambda key: _meta(cfg, key)  # noqa: E731
    plan = family_plan(family)
    expectations = [
        gxe.ExpectColumnValuesToBeUnique(column="event_id", meta=m("event_id_unique")),
        gxe.ExpectColumnValuesToNotBeNull(column="event_id", meta=m("event_id_not_null")),
        gxe.ExpectColumnValuesToNotBeNull(column="event_time", meta=m("event_time_not_null")),
        gxe.ExpectColumnValuesToBeBetween(
            column="event_time_in_window", min_value=1, max_value=1, meta=m("event_time_in_window")
        ),
        gxe.ExpectColumnValuesToBeInSet(
            column="event_type", value_set=list(plan.event_types), meta=m("event_type_known")
        ),
    ]
    # LUIDs are UUIDs wherever the reference says LUID.
    for col in plan.common:
        if col.attribute.endswith("Luid"):
            expectations.append(
                gxe.ExpectColumnValuesToMatchRegex(column=col.column, regex=UUID_PATTERN, meta=m("luid_shape"))
            )
    # Codes the reference spells out stay within their documented values.
    for col in plan.common:
        if col.codes:
            expectations.append(
                gxe.ExpectColumnValuesToBeInSet(
                    column=col.column,
                    value_set=sorted({code for code, _ in col.codes + col.legacy_codes}),
                    meta=m("documented_codes"),
                )
            )
    # Values a source lists for an attribute (eventOutcome's): another value is reported, not stopped, as a
    # newer feed may well use one the documentation does not list yet.
    for col in plan.common:
        if col.values:
            expectations.append(
                gxe.ExpectColumnValuesToBeInSet(
                    column=col.column, value_set=list(col.values), meta=m("documented_values")
                )
            )
    return SuiteSpec(f"silver_events_{family}", tuple(expectations))


def silver_batch_suite(cfg: Config) -> SuiteSpec:
    t = cfg.get("quality.thresholds")
    m = lambda key: _meta(cfg, key)  # noqa: E731
    return SuiteSpec(
        "silver_batch",
        (
            gxe.ExpectColumnValuesToBeBetween(
                column="quarantine_ratio", min_value=0, max_value=t["max_quarantine_ratio"], meta=m("quarantine_ratio")
            ),
            gxe.ExpectColumnValuesToBeInSet(
                column="reconciliation_difference", value_set=[0], meta=m("reconciliation_exact")
            ),
        ),
    )


def row_rules(cfg: Config, spec: SuiteSpec) -> list[RowRule]:
    """The suite's critical ``row`` expectations as conditions silver applies before the gate (a row
    rejects when the expectation would count it unexpected), so the rows they reject are set aside and
    the gate sees a batch they pass. Built from the expectations
    themselves (their column, value set, bounds or pattern): a rule exists once, in the suite. A
    warning is only reported, so it sets nothing aside."""
    # a column the frames derive for the gate: its condition, and the column the detail quotes
    derived = {"event_time_in_window": (event_time_in_window(cfg).cast("int"), "event_time")}
    rules = []
    for e in spec.expectations:
        if e.meta["kind"] != ROW or e.meta["severity"] != "critical":
            continue
        value, shown = derived.get(e.column, (F.col(e.column), e.column))
        quoted = F.coalesce(F.col(shown).cast("string"), F.lit("NULL"))
        detail = F.concat(F.lit(f"quality gate: {shown} = "), quoted)
        rules.append(RowRule(e.meta["key"], ~_passes(e, value), detail))
    return rules


def _passes(e, value: Column) -> Column:
    """Whether a row's ``value`` meets expectation ``e``, as GX judges it (these types ignore NULLs,
    but for the one about NULLs). Never NULL itself."""
    if isinstance(e, gxe.ExpectColumnValuesToNotBeNull):
        return value.isNotNull()
    if isinstance(e, gxe.ExpectColumnValuesToBeInSet):
        ok = value.isin(list(e.value_set))
    elif isinstance(e, gxe.ExpectColumnValuesToBeBetween):
        ok = F.lit(True)
        if e.min_value is not None:
            ok = ok & (value >= e.min_value)
        if e.max_value is not None:
            ok = ok & (value <= e.max_value)
    elif isinstance(e, gxe.ExpectColumnValuesToMatchRegex):
        ok = value.rlike(e.regex)
    else:
        raise TypeError(f"no row condition for {type(e).__name__} ({e.meta['key']})")
    return value.isNull() | F.coalesce(ok, F.lit(False))


def build_suite(spec: SuiteSpec) -> gx.ExpectationSuite:
    suite = gx.ExpectationSuite(name=spec.name)
    for expectation in spec.expectations:
        suite.add_expectation(expectation)
    return suite


# ---------------------------------------------------------------- silver -> gold
def gold_reconciliation_suite(cfg: Config) -> SuiteSpec:
    """One row per event-level mart: its rows against the silver rows of the event types it covers."""
    return SuiteSpec(
        "gold_reconciliation",
        (
            gxe.ExpectColumnValuesToBeInSet(
                column="difference", value_set=[0], meta=_meta(cfg, "gold_reconciliation_exact")
            ),
        ),
    )


def gold_logins_suite(cfg: Config) -> SuiteSpec:
    return SuiteSpec(
        "fct_logins",
        (
            gxe.ExpectColumnValuesToBeUnique(column="event_id", meta=_meta(cfg, "mart_key_unique")),
            gxe.ExpectColumnValuesToBeInSet(
                column="outcome", value_set=["success", "failure"], meta=_meta(cfg, "login_outcome_known")
            ),
        ),
    )


def gold_ownership_suite(cfg: Config) -> SuiteSpec:
    return SuiteSpec(
        "fct_ownership_transfers",
        (
            gxe.ExpectColumnValuesToBeUnique(column="event_id", meta=_meta(cfg, "mart_key_unique")),
            gxe.ExpectColumnValuesToBeInSet(column="owner_changed", value_set=[True], meta=_meta(cfg, "owner_changed")),
        ),
    )


def gold_writeback_suite(cfg: Config) -> SuiteSpec:
    return SuiteSpec(
        "fct_writeback_changes",
        (
            gxe.ExpectColumnValuesToBeUnique(column="action_id", meta=_meta(cfg, "mart_key_unique")),
            gxe.ExpectColumnValuesToBeInSet(
                column="action_name",
                value_set=list(WRITEBACK_ACTIONS),
                meta=_meta(cfg, "writeback_action_known"),
            ),
        ),
    )
