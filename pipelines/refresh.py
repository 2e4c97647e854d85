"""The layered refresh: run the requested layers in order and report what each did."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import SparkSession

from pipelines import bronze
from pipelines.config import Config
from pipelines.gold.checks import validate_gold
from pipelines.gold.run import GoldError, GoldResult, build_gold
from pipelines.quality.gate import QualityGate
from pipelines.silver import promote
from pipelines.tables import tables
from pipelines.writeback import bronze as writeback_bronze
from pipelines.writeback import silver as writeback_silver
from pipelines.writeback.source import WritebackSourceError

LAYERS = ("bronze", "silver", "gold")


def new_run_id() -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


@dataclass
class RefreshReport:
    run_id: str
    layers: list[str]
    bronze: list[bronze.LandingResult] = field(default_factory=list)
    silver: list[promote.PromotionResult] = field(default_factory=list)
    data_docs: Path | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    # the Write-Back audit source, by layer: "bronze" -> WritebackLanding, "silver" -> WritebackPromotion
    writeback: dict[str, object] = field(default_factory=dict)
    gold: GoldResult | None = None


def parse_layers(text: str) -> list[str]:
    """``"bronze,silver"`` -> ordered, validated layer list."""
    wanted = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [w for w in wanted if w not in LAYERS]
    if unknown or not wanted:
        raise ValueError(f"unknown layer(s) {', '.join(unknown) or '(none given)'}; available: {', '.join(LAYERS)}")
    return [layer for layer in LAYERS if layer in wanted]


def run_refresh(
    spark: SparkSession, cfg: Config, layers: list[str], source_dir: Path | None = None, log=print
) -> RefreshReport:
    report = RefreshReport(new_run_id(), layers)
    log(f"refresh {report.run_id}: layers {', '.join(layers)} (env {cfg.env})")
    if "bronze" in layers:
        started = time.monotonic()
        report.bronze = bronze.land_bronze(spark, cfg, report.run_id, source_dir, log=log)
        report.seconds["bronze"] = time.monotonic() - started
        started = time.monotonic()
        report.writeback["bronze"] = writeback_bronze.land_writeback(spark, cfg, report.run_id, log=log)
        report.seconds["writeback_bronze"] = time.monotonic() - started
    if "silver" in layers:
        started = time.monotonic()
        gate = QualityGate(spark, cfg, log=log) if cfg.get("quality.enabled") else None
        try:
            report.silver = promote.promote_silver(spark, cfg, report.run_id, log=log, gate=gate)
        finally:
            if gate is not None:  # the report is built also (above all) when a gate stopped the run
                report.data_docs = gate.build_data_docs()
                failed = sum(not o.success for o in gate.outcomes)
                log(f"quality: {len(gate.outcomes)} expectations checked, {failed} failed; "
                    f"Data Docs: {report.data_docs}")
        report.seconds["silver"] = time.monotonic() - started
        started = time.monotonic()
        report.writeback["silver"] = writeback_silver.promote_writeback(spark, cfg, report.run_id, log=log)
        report.seconds["writeback_silver"] = time.monotonic() - started
    if "gold" in layers:
        started = time.monotonic()
        _require_silver(spark, cfg)
        report.gold = build_gold(spark, cfg, log=log)
        if cfg.get("quality.enabled"):
            gate = QualityGate(spark, cfg, log=log)
            try:
                validate_gold(spark, cfg, gate, report.run_id)
            finally:
                report.data_docs = gate.build_data_docs()
                failed = sum(not o.success for o in gate.outcomes)
                log(f"quality: silver -> gold, {len(gate.outcomes)} expectations checked, {failed} failed")
        report.seconds["gold"] = time.monotonic() - started
    writeback_errors = getattr(report.writeback.get("bronze"), "errors", None)
    if writeback_errors:  # the other sources and layers ran; the refresh still ends in error
        raise WritebackSourceError("; ".join(writeback_errors))
    return report


def _require_silver(spark: SparkSession, cfg: Config) -> None:
    """Gold reads silver's tables: say so plainly instead of a dbt stack trace."""
    t = tables(cfg)
    wanted = [t.silver_events(f) for f in bronze.FAMILIES] + [t.writeback_audit]
    missing = [name for name in wanted if not spark.catalog.tableExists(name)]
    if missing:
        raise GoldError(f"gold reads silver, which has no {', '.join(missing)} yet: run the silver layer first "
                        "(auditlake refresh --layers bronze,silver,gold)")


def _quarantine_by_reason(spark: SparkSession, table: str) -> list[tuple[str, int, str]]:
    if not spark.catalog.tableExists(table):
        return []
    rows = spark.sql(f"SELECT reason, count(*) AS n FROM {table} GROUP BY reason ORDER BY reason").collect()
    return [(f"{table} [{r['reason']}]", r["n"], "") for r in rows]


def table_counts(spark: SparkSession, cfg: Config) -> list[tuple[str, int, str]]:
    """(table, rows, note) for every lakehouse table that exists."""
    out = []
    for family in bronze.FAMILIES:
        table = bronze.bronze_table(cfg, family)
        if spark.catalog.tableExists(table):
            row = spark.sql(f"SELECT count(*) AS n, count_if(parse_status <> 'ok') AS bad FROM {table}").first()
            out.append((table, row["n"], f"{row['bad']} lines not JSON (kept, flagged)"))
    t = tables(cfg)
    for family in bronze.FAMILIES:
        table = t.silver_events(family)
        if spark.catalog.tableExists(table):
            row = spark.sql(
                f"SELECT count(*) AS n, count(DISTINCT event_type) AS types, "
                f"count_if(_rescued_data IS NOT NULL) AS rescued FROM {table}"
            ).first()
            out.append((table, row["n"], f"{row['types']} event types, {row['rescued']} rows with _rescued_data"))
    out += _quarantine_by_reason(spark, t.quarantine)
    if spark.catalog.tableExists(t.duplicates):
        out.append((t.duplicates, spark.table(t.duplicates).count(), "copies removed, kept for audit"))
    if spark.catalog.tableExists(t.writeback_raw):
        row = spark.sql(
            f"SELECT count(*) AS n, count_if(database = 'metadata') AS m, count_if(database = 'persistence') AS p "
            f"FROM {t.writeback_raw}"
        ).first()
        out.append((t.writeback_raw, row["n"], f"{row['m']} from metadata, {row['p']} from persistence"))
    if spark.catalog.tableExists(t.writeback_audit):
        row = spark.sql(
            f"SELECT count(*) AS n, count_if(seen_in_metadata AND seen_in_persistence) AS both "
            f"FROM {t.writeback_audit}"
        ).first()
        out.append((t.writeback_audit, row["n"], f"{row['both']} seen in both databases"))
    out += _quarantine_by_reason(spark, t.writeback_quarantine)
    gold = cfg.get("gold.schema")
    if spark.catalog.databaseExists(gold):
        for table in sorted(spark.catalog.listTables(gold), key=lambda x: x.name):
            if table.tableType != "VIEW" and not table.isTemporary:
                out.append((f"{gold}.{table.name}", spark.table(f"{gold}.{table.name}").count(), "gold mart"))
    return out
