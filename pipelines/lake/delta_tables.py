"""Small Delta Lake helpers the layers share: create a table once, read its commit history, work
on several small tables at once."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pyspark.sql import Row, SparkSession

from pipelines.lake import storage

# Small tables' jobs (a copy, a vacuum) are mostly the driver's planning, listing and commits, with the
# cores idle between short tasks: a few at once on one session fill them.
TABLES_AT_ONCE = 4
# While set, the note Delta writes into each commit the session makes (its history's ``userMetadata``):
# a run names its commits, to find them after a kill.
COMMIT_NOTE = "spark.databricks.delta.commitInfo.userMetadata"


def for_each_table(work: Callable[[str], object], names: Iterable[str]) -> None:
    """``work(name)`` for each name, ``TABLES_AT_ONCE`` at a time (Spark runs jobs from several
    threads); the first error is raised once all have ended."""
    with ThreadPoolExecutor(max_workers=TABLES_AT_ONCE) as pool:
        futures = [pool.submit(work, name) for name in names]
    for future in futures:
        future.result()


def ensure_schema(spark: SparkSession, schema: str) -> None:
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")


def table_names(spark: SparkSession, schema: str, views: bool = True) -> set[str]:
    """The names of ``schema``'s tables (and views unless ``views=False``), no temporary views.
    Names only: ``catalog.listTables`` fetches every table's metadata (seconds for silver's views)."""
    names = {r["tableName"] for r in spark.sql(f"SHOW TABLES IN {schema}").collect() if not r["isTemporary"]}
    if not views:
        names -= {r["viewName"] for r in spark.sql(f"SHOW VIEWS IN {schema}").collect()}
    return names


def create_table_if_missing(
    spark: SparkSession,
    name: str,
    schema_ddl: str,
    properties: dict[str, str] | None = None,
    partition_by: str | None = None,
) -> bool:
    """Create ``name`` empty (its first commit adds no file, so a kill mid-create leaves nothing that
    pipelines/refresh/recovery.py would have to keep); -> True when it was created now."""
    if spark.catalog.tableExists(name):
        return False
    ensure_schema(spark, name.split(".")[0])
    props = ", ".join(f"'{k}' = '{v}'" for k, v in (properties or {}).items())
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {name} ({schema_ddl}) USING delta"
        + (f" PARTITIONED BY ({partition_by})" if partition_by else "")
        + (f" TBLPROPERTIES ({props})" if props else "")
    )
    return True


def latest_commit_info(spark: SparkSession, table: str, n: int) -> list[Row]:
    """The table's last ``n`` commits as ``DESCRIBE HISTORY`` gives them (``version``, ``operation``,
    ``userMetadata``, ``operationMetrics``, ...), newest first."""
    return spark.sql(f"DESCRIBE HISTORY {table} LIMIT {int(n)}").collect()


def latest_commits(spark: SparkSession, table: str, n: int) -> list[str | None]:
    """The ``userMetadata`` of the table's last ``n`` commits, newest first."""
    return [r["userMetadata"] for r in latest_commit_info(spark, table, n)]


def table_version(spark: SparkSession, table: str) -> int:
    """The table's latest version (a name, or ``delta.`<path>```). Read from Delta's log object, brought up
    to date (one listing of ``_delta_log``), where ``DESCRIBE HISTORY`` plans and runs two queries, far
    longer (a refresh asks for dozens of versions: gold's inputs, each analyst copy). A table
    that is not Delta, or a Delta release without that method, gets ``DESCRIBE HISTORY`` and its error."""
    version = _log_version(spark, table)
    if version is None:
        version = spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").select("version").first()[0]
    return int(version)


def _log_snapshot(spark: SparkSession, table: str):
    """The table's latest snapshot from Delta's log object (None: no such table, not Delta, or
    another Delta API)."""
    try:
        jss = spark._jsparkSession
        ident = jss.sessionState().sqlParser().parseTableIdentifier(table)
        none = spark._jvm.scala.Option.empty()
        log = spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(jss, ident)
        return log.update(False, none, none)
    except Exception:
        return None


def log_location(spark: SparkSession, table: str) -> str:
    """Where the table's ``_delta_log`` folder is (a path or URI)."""
    jss = spark._jsparkSession
    ident = jss.sessionState().sqlParser().parseTableIdentifier(table)
    return str(spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(jss, ident).logPath().toString())


def commit_file(version: int) -> str:
    return f"{version:020d}.json"


def commit_file_sha256s(spark: SparkSession, table: str, first: int, last: int) -> dict[str, str | None]:
    """{version: SHA-256 of its commit file} for versions ``first`` to ``last`` (None: the file is gone,
    past the log's retention)."""
    if last < first:
        return {}
    folder = log_location(spark, table)
    sums: dict[str, str | None] = {}
    for version in range(max(first, 0), last + 1):
        location = storage.join(folder, commit_file(version))
        local = storage.local_path(location)
        if local is not None:
            try:
                sums[str(version)] = hashlib.sha256(Path(local).read_bytes()).hexdigest()
            except FileNotFoundError:
                sums[str(version)] = None
        else:
            found = storage.exists(spark, location)
            sums[str(version)] = hashlib.sha256(storage.read_bytes(spark, location)).hexdigest() if found else None
    return sums


def _log_version(spark: SparkSession, table: str) -> int | None:
    snapshot = _log_snapshot(spark, table)
    version = -1 if snapshot is None else snapshot.version()
    return int(version) if version >= 0 else None  # -1: no Delta log there


def table_files(spark: SparkSession, table: str) -> tuple[int, int] | None:
    """(data files, their bytes) of the table's current version, from Delta's log (its checksum file: no
    data file is read, no query planned: half of ``DESCRIBE DETAIL``'s time); None when it cannot tell
    (no Delta table there)."""
    snapshot = _log_snapshot(spark, table)
    try:
        if snapshot is None or snapshot.version() < 0:
            return None
        return int(snapshot.numOfFiles()), int(snapshot.sizeInBytes())
    except Exception:  # another Delta API
        return None


def table_bytes(spark: SparkSession, table: str) -> int | None:
    """The size of the table's current files (table_files); None when it cannot tell."""
    files = table_files(spark, table)
    return None if files is None else files[1]
