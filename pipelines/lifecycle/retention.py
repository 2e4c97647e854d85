"""Retention: ``auditlake retention apply [--dry-run]``. Activity Log rows older than their rules keep
them (``retention.rules``) are retired from bronze, silver (events, duplicates, quarantine), gold (rebuilt
without them) and the analysts' copies, and their old file versions vacuumed: storage limitation (GDPR
Art. 5(1)(e)) on an audit trail that otherwise keeps everything. Rows under a legal hold stay.

A run is written down before anything is deleted: the retired rows in ``ops.retired_rows`` (id, content
hash, run, file: never their content), a row of ``ops.retention_runs`` (pending), and a signed digest
listing each row by table and run, so ``verify`` accounts for them. Then the deletes, each keyed on the
rows written down, so a run killed anywhere is finished by the next ``retention apply``. Reconciliation
counts retired rows as a category of their own: the file ledger's rows = bronze's + retired.
"""

from __future__ import annotations

import getpass
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.activity_log import FAMILIES
from pipelines.analyst.publish import tables_location as analyst_tables_location
from pipelines.config.load import Config
from pipelines.config.settings import RetentionRule
from pipelines.errors import CheckFailed
from pipelines.gold import inputs as gold_inputs
from pipelines.integrity.capture import write_digest
from pipelines.integrity.digest_log import DigestLog
from pipelines.lake import storage
from pipelines.lake.delta_tables import create_table_if_missing, table_names
from pipelines.lake.table_names import tables
from pipelines.lifecycle import scope
from pipelines.lifecycle.holds import active_holds
from pipelines.personal_data.erase.readers import require_promoted
from pipelines.personal_data.erase.vacuum import vacuum
from pipelines.runtime.spark_session import append_rows

RETIRED_SCHEMA = (
    "retention_id string, family string, bronze_id string, content_hash string, run_id string, source_file string"
)
RUNS_SCHEMA = (
    "retention_id string, started_at timestamp, finished_at timestamp, requested_by string, rules string, "
    "rows_by_family map<string,bigint>, status string"
)
PENDING, DONE = "pending", "done"
ON_REFRESH_EVERY = timedelta(days=1)


class RetentionRefused(CheckFailed):
    """A pending run lists rows the rules and holds do not let go now: nothing is retired."""


@dataclass
class RetentionReport:
    retention_id: str | None
    rows_by_family: dict[str, int]
    dry_run: bool

    @property
    def rows(self) -> int:
        return sum(self.rows_by_family.values())


def _days(rule: RetentionRule) -> int:
    return int(rule.keep.removesuffix("d"))


def _matches(rule: RetentionRule, family: str) -> Column | None:
    """Which of ``family``'s bronze rows the rule speaks of (None: none of them)."""
    if rule.family and rule.family != family:
        return None
    match = F.lit(True)
    if rule.event_type:
        match = match & (scope.event_type() == rule.event_type)
    if rule.site:
        match = match & (F.coalesce(scope.site_luid(), F.lit("")) == rule.site.strip().lower())
    return match


def expired(rules: list[RetentionRule], family: str, now: datetime) -> Column:
    """Rows some rule matches, older than the longest ``keep`` of the rules that match them."""
    keeps = [F.when(m, F.lit(_days(r))) for r in rules if (m := _matches(r, family)) is not None]
    if not keeps:
        return F.lit(False)
    keep = F.greatest(*keeps) if len(keeps) > 1 else keeps[0]
    cutoff = F.lit(now) - F.make_dt_interval(days=keep)
    return F.coalesce(keep.isNotNull() & (scope.event_time() < cutoff), F.lit(False))


def _candidates(spark: SparkSession, cfg: Config, now: datetime) -> DataFrame | None:
    rules = list(cfg.settings.retention.rules)
    holds = active_holds(spark, cfg)
    parts = []
    for family in FAMILIES:
        table = tables(cfg).bronze_raw(family)
        if not spark.catalog.tableExists(table):
            continue
        held = F.lit(False)
        for hold in holds:
            held = held | F.coalesce(hold.covers(), F.lit(False))
        parts.append(
            spark.table(table)
            .where(expired(rules, family, now) & ~held)
            .select(F.lit(family).alias("family"), "bronze_id", "content_hash", "run_id", "source_file")
        )
    if not parts:
        return None
    frame = parts[0]
    for part in parts[1:]:
        frame = frame.unionByName(part)
    return frame


def _pending_run(spark: SparkSession, cfg: Config) -> str | None:
    runs = tables(cfg).retention_runs
    if not spark.catalog.tableExists(runs):
        return None
    row = spark.table(runs).where(F.col("status") == PENDING).orderBy("started_at").first()
    return row["retention_id"] if row else None


def apply_retention(
    spark: SparkSession,
    cfg: Config,
    dry_run: bool = False,
    requested_by: str | None = None,
    log=print,
    build_gold: Callable[[], object] | None = None,
) -> RetentionReport:
    """Retire what the rules say has expired (a pending run is finished first). ``build_gold`` builds
    gold again once its tables are dropped (the refresh's gold layer: this module does not import the
    refresh). The caller holds the refresh lock."""
    t = tables(cfg)
    pending = _pending_run(spark, cfg)
    if not dry_run:
        # silver promotes from bronze's change feed: retired rows it has not read yet would come back
        require_promoted(spark, cfg)
    if pending and not dry_run:
        log(f"retention {pending}: finishing a run a crash left pending")
        return _finish(spark, cfg, pending, log, build_gold)
    if not cfg.settings.retention.rules:
        log("retention: no rules (retention.rules): everything is kept")
        return RetentionReport(None, {}, dry_run)
    now = datetime.now(UTC)
    candidates = _candidates(spark, cfg, now)
    if candidates is None:
        log("retention: no Activity Log rows yet")
        return RetentionReport(None, {}, dry_run)
    candidates = candidates.localCheckpoint()
    by_family = {r["family"]: r["n"] for r in candidates.groupBy("family").agg(F.count("*").alias("n")).collect()}
    if dry_run or not by_family:
        per_type = ", ".join(f"{f}: {n:,}" for f, n in sorted(by_family.items())) or "none"
        said = " (dry run: nothing changed)" if dry_run else ""
        log(f"retention: {sum(by_family.values()):,} rows expired ({per_type}){said}")
        return RetentionReport(None, by_family, dry_run)
    retention_id = f"retention-{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
    create_table_if_missing(spark, t.retired_rows, RETIRED_SCHEMA)
    create_table_if_missing(spark, t.retention_runs, RUNS_SCHEMA)
    # the run first, pending: a kill after it leaves a run the next one finishes (its rows, if any, counted
    # from ops.retired_rows then), never rows written down under no run
    rules_text = "; ".join(r.model_dump_json() for r in cfg.settings.retention.rules)
    row = (retention_id, now, None, requested_by or getpass.getuser(), rules_text, by_family, PENDING)
    append_rows(spark, cfg, [row], RUNS_SCHEMA, t.retention_runs)
    columns = [c.split(" ")[0] for c in RETIRED_SCHEMA.split(", ")]
    retired = candidates.withColumn("retention_id", F.lit(retention_id)).select(*columns)
    retired.write.format("delta").mode("append").saveAsTable(t.retired_rows)
    log(f"retention {retention_id}: {sum(by_family.values()):,} rows to retire, written down; retiring")
    return _finish(spark, cfg, retention_id, log, build_gold, chosen_now=True)


def _sign(spark: SparkSession, cfg: Config, retention_id: str, log) -> None:
    """The run's signed record, before its first delete (once: a rerun finds it in the log)."""
    log_ = DigestLog(cfg.digest_dir, spark)
    for stored in log_.digests()[0]:
        if stored.kind == "retention" and any(
            r.get("retention_id") == retention_id for r in (stored.parsed() or {}).get("retention") or []
        ):
            return
    write_digest(
        cfg, "retention", retention_id, spark, log=log, extra={"retention": [_record(spark, cfg, retention_id)]}
    )


def _record(spark: SparkSession, cfg: Config, retention_id: str) -> dict:
    """The signed record: every retired row by table and run (its id and landing hash)."""
    t = tables(cfg)
    run = spark.table(t.retention_runs).where(F.col("retention_id") == retention_id).first()
    rows: dict[str, dict[str, list]] = {}
    retired = spark.table(t.retired_rows).where(F.col("retention_id") == retention_id)
    for r in retired.select("family", "run_id", "bronze_id", "content_hash").collect():
        rows.setdefault(t.bronze_raw(r["family"]), {}).setdefault(r["run_id"], []).append(
            [r["bronze_id"], r["content_hash"]]
        )
    for runs in rows.values():
        for ids in runs.values():
            ids.sort()
    return {
        "retention_id": retention_id,
        "at": run["started_at"].astimezone(UTC).isoformat(),
        "requested_by": run["requested_by"],
        "rules": run["rules"],
        "rows": rows,
    }


def _refuse_unlawful(spark: SparkSession, cfg: Config, retention_id: str) -> None:
    """A run is finished only while every row it lists is expired under the configured rules and under no
    legal hold, checked again now: the rows written down live in the lake's own tables, which whoever can
    write its folders can fill, and the run's digest is signed when it is finished."""
    t = tables(cfg)
    listed = spark.table(t.retired_rows).where(F.col("retention_id") == retention_id).select("family", "bronze_id")
    candidates = _candidates(spark, cfg, datetime.now(UTC)) if cfg.settings.retention.rules else None
    unlawful = listed if candidates is None else listed.join(candidates, ["family", "bronze_id"], "left_anti")
    n = unlawful.count()
    if n:
        why = "not expired under retention.rules, or held" if candidates is not None else "listed with no rules"
        raise RetentionRefused(
            f"retention {retention_id}: {n} of the rows it lists in {t.retired_rows} are {why}: nothing "
            f"retired (a run this lake did not start, or rules changed since); see {t.retention_runs}"
        )


def _finish(
    spark: SparkSession, cfg: Config, retention_id: str, log, build_gold, chosen_now: bool = False
) -> RetentionReport:
    """Retire the rows run ``retention_id`` wrote down. ``chosen_now``: this process chose them a moment
    ago under the rules and holds; a pending run's rows are checked against them again first."""
    t = tables(cfg)
    if not chosen_now:
        _refuse_unlawful(spark, cfg, retention_id)
    if cfg.settings.integrity.enabled:
        _sign(spark, cfg, retention_id, log)
    retired = spark.table(t.retired_rows).where(F.col("retention_id") == retention_id).select("family", "bronze_id")
    touched = []
    for family in FAMILIES:
        ids = retired.where(F.col("family") == family).select("bronze_id")
        for name, extra in (
            (t.silver_events(family), None),
            (t.duplicates, F.col("t.family") == family),
            (t.quarantine, F.col("t.family") == family),
            (t.bronze_raw(family), None),  # last: a rerun finds the rows its readers still held
        ):
            if not spark.catalog.tableExists(name):
                continue
            condition = F.col("t.bronze_id") == F.col("r.bronze_id")
            if extra is not None:
                condition = condition & extra
            DeltaTable.forName(spark, name).alias("t").merge(ids.alias("r"), condition).whenMatchedDelete().execute()
            touched.append(name)
    _rebuild_gold(spark, cfg, log, build_gold)
    copies = _analyst_copies(spark, cfg)  # their old versions hold the retired rows too
    vacuum(spark, sorted(set(touched)) + copies, int(cfg.settings.retention.vacuum_retain_hours), log)
    counts = {r["family"]: r["n"] for r in retired.groupBy("family").agg(F.count("*").alias("n")).collect()}
    figures = F.create_map(*[F.lit(x) for family, n in sorted(counts.items()) for x in (family, n)])
    DeltaTable.forName(spark, t.retention_runs).update(
        condition=F.col("retention_id") == retention_id,
        set={
            "status": F.lit(DONE),
            "finished_at": F.current_timestamp(),
            "rows_by_family": figures.cast("map<string,bigint>"),
        },
    )
    log(f"retention {retention_id}: {sum(counts.values()):,} rows retired from bronze, silver, gold and the copies")
    return RetentionReport(retention_id, dict(counts), False)


def _analyst_copies(spark: SparkSession, cfg: Config) -> list[str]:
    if not cfg.settings.analyst.enabled:
        return []
    location = analyst_tables_location(cfg)
    return [
        f"delta.`{storage.join(location, name)}`" for name, is_dir in storage.list_status(spark, location) if is_dir
    ]


def _rebuild_gold(spark: SparkSession, cfg: Config, log, build_gold) -> None:
    """Gold without the retired rows: its tables dropped and built again from silver (its incremental
    marts would keep them), and the analysts' copies with it; nothing when gold was never built."""
    t = tables(cfg)
    if not spark.catalog.databaseExists(t.gold_schema) or not table_names(spark, t.gold_schema):
        return
    for schema in t.derived_schemas:
        if spark.catalog.databaseExists(schema):
            stored = table_names(spark, schema, views=False)
            for name in sorted(table_names(spark, schema) - stored):
                spark.sql(f"DROP VIEW IF EXISTS {schema}.{name}")
            for name in sorted(stored):
                spark.sql(f"DROP TABLE IF EXISTS {schema}.{name}")
    gold_inputs.forget_built(spark, cfg)
    log("retention: gold dropped; building it again from silver")
    if build_gold is not None:
        build_gold()


def due_on_refresh(spark: SparkSession, cfg: Config, log=print) -> bool:
    """Whether a refresh retires expired rows now (``retention.on_refresh``): at most once a day, as a
    run rebuilds gold whenever anything expired, and rows expire by the hour."""
    if not (cfg.settings.retention.on_refresh and cfg.settings.retention.rules):
        return False
    runs = tables(cfg).retention_runs
    if spark.catalog.tableExists(runs):
        last = spark.table(runs).agg(F.max("started_at")).first()[0]
        if last is not None and last.astimezone(UTC) > datetime.now(UTC) - ON_REFRESH_EVERY:
            log(f"retention: last run {last:%Y-%m-%d %H:%M}: the next one a day after it")
            return False
    return True
