"""Reconciliation: every file seen is landed, quarantined or skipped with a reason, and the rows of
the landed files are bronze's rows (entity snapshots included); every bronze row is a silver event, a
removed duplicate, or quarantined; every bronze entity snapshot is applied to its history, late, or
not promoted yet, with its rows.

Rows are checked one by one on ``bronze_id`` (not just by counting), so a row in two places or in
none shows up; files on (path, size, time) against the file ledger. Per-run figures come from
``ops.silver_batches``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.activity_log import bronze
from pipelines.activity_log.bronze import ledger
from pipelines.command.console import log
from pipelines.config.load import Config
from pipelines.lake.table_names import tables


@dataclass
class FamilyReconciliation:
    family: str
    bronze_rows: int
    silver_events: int
    duplicates: int
    quarantined: int
    pending: int  # bronze rows not promoted yet (silver not run since they landed)
    accounted_twice: int  # bronze rows found in more than one place: must be 0

    @property
    def balanced(self) -> bool:
        return (
            self.accounted_twice == 0
            and self.bronze_rows == self.silver_events + self.duplicates + self.quarantined + self.pending
        )


def reconcile_family(spark: SparkSession, cfg: Config, family: str) -> FamilyReconciliation | None:
    source = tables(cfg).bronze_raw(family)
    if not spark.catalog.tableExists(source):
        return None
    t = tables(cfg)
    outputs = []
    if spark.catalog.tableExists(t.silver_events(family)):
        outputs = [
            spark.table(t.silver_events(family)).select("bronze_id", F.lit("silver").alias("place")),
            spark.table(t.duplicates)
            .where(F.col("family") == family)
            .select("bronze_id", F.lit("duplicate").alias("place")),
            spark.table(t.quarantine)
            .where(F.col("family") == family)
            .select("bronze_id", F.lit("quarantine").alias("place")),
        ]
    bronze_ids = spark.table(source).select("bronze_id")
    if outputs:
        placed = outputs[0].unionByName(outputs[1]).unionByName(outputs[2])
        per_row = (
            bronze_ids.join(placed, "bronze_id", "left")
            .groupBy("bronze_id")
            .agg(F.count("place").alias("places"), F.first("place", ignorenulls=True).alias("place"))
        )
    else:
        per_row = bronze_ids.withColumn("places", F.lit(0)).withColumn("place", F.lit(None).cast("string"))
    row = per_row.agg(
        F.count("*").alias("bronze_rows"),
        F.count_if((F.col("place") == "silver") & (F.col("places") == 1)).alias("silver"),
        F.count_if((F.col("place") == "duplicate") & (F.col("places") == 1)).alias("duplicate"),
        F.count_if((F.col("place") == "quarantine") & (F.col("places") == 1)).alias("quarantine"),
        F.count_if(F.col("places") == 0).alias("pending"),
        F.count_if(F.col("places") > 1).alias("twice"),
    ).first()
    return FamilyReconciliation(
        family, row["bronze_rows"], row["silver"], row["duplicate"], row["quarantine"], row["pending"], row["twice"]
    )


@dataclass
class FileReconciliation:
    verdicts: list[tuple[str, str, int, int]]  # (status, reason, files, rows) from the file ledger
    ledger_rows: int  # rows the ledger says its landed files hold
    bronze_rows: int
    bronze_files_not_ledgered: int  # files with rows in bronze and no landed verdict: must be 0
    retired: int = 0  # rows of landed files a retention run retired (ops.retired_rows)

    @property
    def balanced(self) -> bool:
        return self.ledger_rows == self.bronze_rows + self.retired and self.bronze_files_not_ledgered == 0


def reconcile_files(spark: SparkSession, cfg: Config) -> FileReconciliation | None:
    t = tables(cfg)
    if not spark.catalog.tableExists(t.file_ledger):
        return None
    landed = spark.table(t.file_ledger).where(F.col("status") == ledger.LANDED)
    bronze_files = None
    bronze_rows = 0
    sources = [t.bronze_raw(f) for f in bronze.FAMILIES] + [t.bronze_entity(e) for e in t.entity_types(spark)]
    for table in sources:
        if spark.catalog.tableExists(table):
            part = spark.table(table).groupBy("source_file", "source_file_size").count()
            bronze_files = part if bronze_files is None else bronze_files.unionByName(part)
    missing = 0
    if bronze_files is not None:
        bronze_files = bronze_files.persist()
        bronze_rows = bronze_files.agg(F.sum("count")).first()[0] or 0
        missing = bronze_files.join(
            landed.select(F.col("path").alias("source_file"), F.col("size").alias("source_file_size")),
            ["source_file", "source_file_size"],
            "left_anti",
        ).count()
        bronze_files.unpersist()
    ledger_rows = landed.agg(F.sum("rows")).first()[0] or 0
    retired = spark.table(t.retired_rows).count() if spark.catalog.tableExists(t.retired_rows) else 0
    return FileReconciliation(ledger.file_counts(spark, t), ledger_rows, bronze_rows, missing, retired)


def format_files(r: FileReconciliation) -> str:
    lines = [f"{'files':<12} {'reason':<24} {'count':>8} {'rows':>10}"]
    lines += [f"{status:<12} {reason or '-':<24} {files:>8} {rows:>10}" for status, reason, files, rows in r.verdicts]
    check = (
        "ok"
        if r.balanced
        else (
            f"MISMATCH ({r.bronze_files_not_ledgered} bronze files without a landed verdict)"
            if r.bronze_files_not_ledgered
            else "MISMATCH"
        )
    )
    retired = f" + retired {r.retired}" if r.retired else ""
    lines.append(f"rows of landed files {r.ledger_rows}, rows in bronze {r.bronze_rows}{retired}: {check}")
    return "\n".join(lines)


@dataclass
class SnapshotReconciliation:
    entity_type: str
    bronze_rows: int
    applied_rows: int  # in snapshots silver applied to the history
    late_rows: int  # in snapshots older than their site's history: kept in bronze only
    quarantined_rows: int  # in snapshots with rows silver cannot key: kept in bronze only
    pending_rows: int  # in snapshots silver has not seen yet
    hours_miscounted: int  # (site, hour) whose bronze rows differ from what silver recorded: must be 0

    @property
    def balanced(self) -> bool:
        kept = self.applied_rows + self.late_rows + self.quarantined_rows + self.pending_rows
        return self.hours_miscounted == 0 and self.bronze_rows == kept


def reconcile_snapshots(spark: SparkSession, cfg: Config) -> list[SnapshotReconciliation]:
    """Per entity type: every bronze snapshot (site, hour) is applied, late, or not promoted yet, with
    the row count silver recorded for it."""
    from pipelines.entity_snapshots.silver import APPLIED, LATE, QUARANTINED

    t = tables(cfg)
    out = []
    for entity_type in t.entity_types(spark):
        delivered = (
            spark.table(t.bronze_entity(entity_type))
            .groupBy(F.col("snapshot_site_luid").alias("site_luid"), "snapshot_hour")
            .agg(F.count(F.lit(1)).alias("bronze"))
        )
        seen = (
            spark.table(t.snapshot_hours)
            .where(F.col("entity_type") == entity_type)
            .select("site_luid", "snapshot_hour", "rows", "status")
            if spark.catalog.tableExists(t.snapshot_hours)
            else None
        )
        if seen is None:
            seen = spark.createDataFrame([], "site_luid string, snapshot_hour timestamp, rows long, status string")
        r = (
            delivered.join(seen, ["site_luid", "snapshot_hour"], "left")
            .agg(
                F.sum("bronze").alias("bronze"),
                F.sum(F.when(F.col("status") == APPLIED, F.col("rows"))).alias("applied"),
                F.sum(F.when(F.col("status") == LATE, F.col("rows"))).alias("late"),
                F.sum(F.when(F.col("status") == QUARANTINED, F.col("rows"))).alias("quarantined"),
                F.sum(F.when(F.col("status").isNull(), F.col("bronze"))).alias("pending"),
                F.count_if(F.col("status").isNotNull() & (F.col("rows") != F.col("bronze"))).alias("miscounted"),
            )
            .first()
        )
        out.append(
            SnapshotReconciliation(
                entity_type,
                r["bronze"] or 0,
                r["applied"] or 0,
                r["late"] or 0,
                r["quarantined"] or 0,
                r["pending"] or 0,
                r["miscounted"],
            )
        )
    return out


def format_snapshots(results: list[SnapshotReconciliation]) -> str:
    lines = [f"{'snapshots':<16} {'bronze':>9} {'applied':>9} {'late':>7} {'set aside':>9} {'pending':>8}  check"]
    for r in results:
        status = "ok" if r.balanced else f"MISMATCH ({r.hours_miscounted} snapshot hours miscounted)"
        lines.append(
            f"{r.entity_type:<16} {r.bronze_rows:>9} {r.applied_rows:>9} {r.late_rows:>7} "
            f"{r.quarantined_rows:>9} {r.pending_rows:>8}  {status}"
        )
    return "\n".join(lines)


def reconcile(spark: SparkSession, cfg: Config) -> list[FamilyReconciliation]:
    return [r for f in bronze.FAMILIES if (r := reconcile_family(spark, cfg, f)) is not None]


def run_figures(spark: SparkSession, cfg: Config, limit: int = 20) -> list[dict]:
    """Per refresh run: bronze rows promoted, new events, duplicates, quarantined."""
    batches = tables(cfg).silver_batches
    if not spark.catalog.tableExists(batches):
        return []
    rows = (
        spark.table(batches)
        .groupBy("silver_run_id", "family")
        .agg(
            *[F.sum(c).alias(c) for c in ("bronze_rows", "inserted", "duplicates", "quarantined")],
            F.min("processed_at").alias("started"),
        )
        .orderBy(F.col("started").desc(), "family")
        .limit(limit)
        .collect()
    )
    return [r.asDict() for r in rows]


def format_reconciliation(results: list[FamilyReconciliation], runs: list[dict]) -> str:
    lines = [f"{'family':<8} {'bronze':>9} {'silver':>9} {'dupes':>7} {'quarant.':>8} {'pending':>8}  check"]
    for r in results:
        status = "ok" if r.balanced else f"MISMATCH ({r.accounted_twice} rows counted twice)"
        lines.append(
            f"{r.family:<8} {r.bronze_rows:>9} {r.silver_events:>9} {r.duplicates:>7} {r.quarantined:>8} "
            f"{r.pending:>8}  {status}"
        )
    if runs:
        lines.append("")
        lines.append(f"{'silver run':<28} {'family':<7} {'bronze':>8} {'new':>8} {'dupes':>6} {'quar.':>6}  check")
        for run in runs:
            ok = run["bronze_rows"] == run["inserted"] + run["duplicates"] + run["quarantined"]
            lines.append(
                f"{run['silver_run_id']:<28} {run['family']:<7} {run['bronze_rows']:>8} {run['inserted']:>8} "
                f"{run['duplicates']:>6} {run['quarantined']:>6}  {'ok' if ok else 'MISMATCH'}"
            )
    return "\n".join(lines)


def print_lake_checks(spark: SparkSession, cfg: Config) -> bool:
    """Files by verdict, bronze = silver + duplicates + quarantine per family and per silver run, the
    entity snapshots; whether all of it balances (``auditlake reconcile`` and ``refresh --summary``)."""
    files = reconcile_files(spark, cfg)
    results = reconcile(spark, cfg)
    if not results and files is None:
        log("reconcile: nothing landed yet")
        return True
    if files is not None:
        log(format_files(files))
        log("")
    log(format_reconciliation(results, run_figures(spark, cfg)))
    snapshots = reconcile_snapshots(spark, cfg)
    if snapshots:
        log("")
        log(format_snapshots(snapshots))
    return all(r.balanced for r in results + snapshots) and (files is None or files.balanced)
