"""The file ledger (``bronze.file_ledger``): every file bronze has seen, once per version of it.

A row per (path, size, modification time) says what became of that file: ``landed`` (its rows
are in bronze; an empty file lands with 0 rows), ``quarantined`` (it could not be read: not the
gzip its name says, a gzip stream cut short; the reason is kept and the rest of the delivery
lands), ``skipped`` (not Activity Log records: entity snapshots, marker files; counted), or
``changed`` (a landed file that came back with another size or time: reported, never landed a
second time). A quarantined or skipped file that is replaced is read again on the next run. A
Server log piece an erasure rewrote (``ops.erased_files``) is known at its new size and time.

Bronze commits its rows first, then the ledger (one commit per run). A run killed between the
two left a bronze commit the ledger does not know: ``recover_unledgered`` rebuilds those rows
from bronze itself (every bronze row names its file, size and time), so the files are not landed
twice. Each bronze commit carries its run id as Delta ``userMetadata`` to find it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.activity_log.bronze.decode import UNREADABLE
from pipelines.activity_log.bronze.layout import FAMILIES, SKIP_DETAIL, PathInfo, classify
from pipelines.activity_log.bronze.listing import ListedFile
from pipelines.lake.delta_tables import create_table_if_missing, latest_commits
from pipelines.lake.table_names import Tables
from pipelines.runtime.spark_session import session_conf

LANDED, QUARANTINED, SKIPPED, CHANGED = "landed", "quarantined", "skipped", "changed"
STATUSES = (LANDED, QUARANTINED, SKIPPED, CHANGED)
CHANGED_AFTER_LANDING = "changed_after_landing"
COMMIT_MARK = "auditlake bronze run "

LEDGER_SCHEMA = (
    "path string, family string, layout string, event_type_folder string, path_date date, size long, "
    "mtime timestamp, status string, reason string, detail string, rows long, run_id string, recorded_at timestamp, "
    "entity_type string"
)


@dataclass(frozen=True)
class LedgerEntry:
    path: str
    info: PathInfo
    size: int
    mtime_ms: int
    status: str
    reason: str | None = None
    detail: str | None = None
    rows: int = 0

    def row(self, run_id: str, now: datetime) -> tuple:
        mtime = datetime.fromtimestamp(self.mtime_ms / 1000, tz=UTC)  # aware: read as UTC by any path into Spark
        return (
            self.path,
            self.info.family,
            self.info.layout,
            self.info.event_type,
            self.info.path_date,
            self.size,
            mtime,
            self.status,
            self.reason,
            self.detail,
            self.rows,
            run_id,
            now,
            self.info.entity_type,
        )


def ensure_ledger(spark: SparkSession, t: Tables) -> None:
    create_table_if_missing(
        spark, t.file_ledger, LEDGER_SCHEMA, {"delta.dataSkippingStatsColumns": "path,path_date,status,run_id"}
    )
    if "entity_type" not in spark.table(t.file_ledger).columns:  # a ledger from before entity snapshots
        spark.sql(f"ALTER TABLE {t.file_ledger} ADD COLUMNS (entity_type string)")


def known_versions(spark: SparkSession, t: Tables, since: date | None) -> dict[str, dict[tuple[int, int], str]]:
    """path -> {(size, mtime ms): status} for the files a listing from ``since`` can find."""
    ledger = spark.table(t.file_ledger)
    if since is not None:
        ledger = ledger.where((F.col("path_date") >= F.lit(since)) | F.col("path_date").isNull())
    rows = ledger.select("path", "size", F.expr("unix_millis(mtime)").alias("ms"), "status").collect()
    out: dict[str, dict[tuple[int, int], str]] = {}
    for r in rows:
        versions = out.setdefault(r["path"], {})
        if versions.get((r["size"], r["ms"])) in (None, SKIPPED):  # a later read outranks an old skip
            versions[(r["size"], r["ms"])] = r["status"]
    # a Server log piece an erasure rewrote is the landed file, with the person pseudonymised: not new
    if spark.catalog.tableExists(t.erased_files):
        erased = spark.table(t.erased_files).select("path", "size", F.expr("unix_millis(mtime)").alias("ms"))
        for r in erased.collect():
            out.setdefault(r["path"], {})[(r["size"], r["ms"])] = LANDED
    return out


def newest_path_date(spark: SparkSession, t: Tables) -> date | None:
    return spark.table(t.file_ledger).agg(F.max("path_date")).first()[0]


def has_landed(spark: SparkSession, t: Tables) -> bool:
    return spark.table(t.file_ledger).where(F.col("status") == LANDED).limit(1).count() > 0


def plan_files(
    listed: list[ListedFile], known: dict[str, dict[tuple[int, int], str]]
) -> tuple[list[ListedFile], list[LedgerEntry]]:
    """-> (files to read, entries decided without reading: skipped, unreadable, changed)."""
    to_read, decided = [], []
    for f in listed:
        versions = known.get(f.path, {})
        if (f.size, f.mtime_ms) in versions and not (versions[(f.size, f.mtime_ms)] == SKIPPED and not f.info.skip):
            continue  # this very version was decided by an earlier run (a skip this release reads is read)
        if LANDED in versions.values():
            before = ", ".join(
                f"{s} bytes at {datetime.fromtimestamp(m / 1000, tz=UTC):%Y-%m-%d %H:%M:%S}"
                for (s, m), st in versions.items()
                if st == LANDED
            )
            decided.append(
                LedgerEntry(
                    f.path,
                    f.info,
                    f.size,
                    f.mtime_ms,
                    CHANGED,
                    CHANGED_AFTER_LANDING,
                    f"landed before as {before}; now {f.size} bytes: not landed again (a corrected copy under a "
                    "new name lands)",
                )
            )
        elif f.info.skip:
            decided.append(
                LedgerEntry(f.path, f.info, f.size, f.mtime_ms, SKIPPED, f.info.skip, SKIP_DETAIL[f.info.skip])
            )
        elif not f.readable:
            decided.append(
                LedgerEntry(
                    f.path,
                    f.info,
                    f.size,
                    f.mtime_ms,
                    QUARANTINED,
                    UNREADABLE,
                    "the file system refuses to open it (permissions)",
                )
            )
        else:
            to_read.append(f)
    return to_read, decided


def _ledger_frame(spark: SparkSession, rows: list[tuple]) -> DataFrame:
    """Ledger rows as a Spark frame through Arrow (pandas): a list of tuples is converted one row at a time
    in Python, slow for a landing of many small files. The rows' times are aware (UTC): a
    naive one would be read in the process's local zone without Arrow and in the session's with it."""
    import pandas as pd

    names = [field.split(" ")[0] for field in LEDGER_SCHEMA.split(", ")]
    frame = pd.DataFrame(rows, columns=names).astype({"size": "Int64", "rows": "Int64"})  # NULL stays NULL
    with session_conf(spark, {"spark.sql.execution.arrow.pyspark.enabled": "true"}):  # whatever spark.extra_conf says
        return spark.createDataFrame(frame, LEDGER_SCHEMA)


def record(spark: SparkSession, t: Tables, entries: list[LedgerEntry], run_id: str) -> None:
    if not entries:
        return
    now = datetime.now(UTC)
    frame = _ledger_frame(spark, [e.row(run_id, now) for e in entries])
    frame.write.format("delta").mode("append").saveAsTable(t.file_ledger)


def recover_unledgered(spark: SparkSession, t: Tables, root: str, log=print) -> int:
    """Ledger the files of bronze commits a killed run made but did not ledger; -> files recovered."""
    recovered = 0
    log("bronze: the last run stopped before its ledger commit; checking bronze for files it landed")
    prefix = root.rstrip("/") + "/"
    # every bronze table a run writes names each row's file, size, time and run in the same columns
    for family, table in [(f, t.bronze_raw(f)) for f in FAMILIES] + [
        (f"entity {e}", t.bronze_entity(e)) for e in t.entity_types(spark)
    ]:
        if not spark.catalog.tableExists(table):
            continue
        runs = [m[len(COMMIT_MARK) :] for m in latest_commits(spark, table, 3) if m and m.startswith(COMMIT_MARK)]
        if not runs:
            continue
        known = spark.table(t.file_ledger).select(
            F.col("path").alias("source_file"), F.col("size").alias("bytes"), F.expr("unix_millis(mtime)").alias("ms")
        )
        files = (
            spark.table(table)
            .where(F.col("run_id").isin(runs))
            .groupBy("run_id", "source_file")
            .agg(
                F.first("source_file_size").alias("bytes"),
                F.expr("unix_millis(first(source_file_mtime))").alias("ms"),
                F.count(F.lit(1)).alias("rows"),
            )
            .join(known, ["source_file", "bytes", "ms"], "left_anti")
            .collect()
        )
        for run_id in sorted({r["run_id"] for r in files}):
            entries = [
                LedgerEntry(
                    r["source_file"],
                    classify(
                        r["source_file"][len(prefix) :] if r["source_file"].startswith(prefix) else r["source_file"]
                    ),
                    r["bytes"],
                    r["ms"],
                    LANDED,
                    rows=r["rows"],
                )
                for r in files
                if r["run_id"] == run_id
            ]
            record(spark, t, entries, run_id)
            recovered += len(entries)
            log(f"bronze: ledgered {len(entries)} {family} files landed by interrupted run {run_id}")
    return recovered


def compact(spark: SparkSession, t: Tables) -> None:
    spark.sql(f"OPTIMIZE {t.file_ledger}")


def file_counts(spark: SparkSession, t: Tables) -> list[tuple[str, str, int, int]]:
    """(status, reason, files, rows) over the latest verdict of every file version."""
    if not spark.catalog.tableExists(t.file_ledger):
        return []
    rows = spark.sql(
        f"SELECT status, coalesce(reason, '') AS reason, count(*) AS files, sum(rows) AS rows "
        f"FROM {t.file_ledger} GROUP BY 1, 2 ORDER BY 1, 2"
    ).collect()
    return [(r["status"], r["reason"], r["files"], r["rows"] or 0) for r in rows]
