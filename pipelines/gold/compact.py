"""Compaction of the gold marts after a build (Delta OPTIMIZE), by a stated rule.

Every incremental MERGE adds small files to a mart, and Delta OSS's auto compaction ignores
files written by earlier sessions (delta-io/delta#4487), so a mart refreshed hourly would gain
hundreds of files. The rule: after a successful gold build, a mart holding more than
``gold.compact_files_over`` data files is compacted (and so is an analysts' copy that followed its
mart's changes, pipelines/analyst/publish.py). Reading the file counts is a look at each
mart's Delta log (no data read); OPTIMIZE runs only where the rule says so.

OPTIMIZE packs only the files smaller than ``KEEP_FILES_FROM_BYTES``; larger ones stay as they are
(rewriting large files that no merge touched is work for nothing; Delta's own floor is 1 GB).

A windowed mart (dbt config ``merge_window``: fct_background_jobs, fct_sessions) is kept instead in
files of about ``ORDERED_FILE_BYTES`` in the order of its window column (``OPTIMIZE ... ZORDER BY``
that column, a rewrite of the whole mart): a delivery's merge skips every file older than its window
and rewrites only the newest few. Its first build writes it in that order but in files as large as
Spark's shuffle makes them (at 10M events of history, fct_sessions' newer half in one file, which
every merge rewrote), so the rule rewrites it too where its files average more than twice the size;
and it allows the mart its ordered files on top of ``gold.compact_files_over``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pyspark.sql import SparkSession

from pipelines.lake.delta_tables import table_files, table_names
from pipelines.runtime.spark_session import session_conf

# Delta's OPTIMIZE leaves a file of at least this many bytes as it is (its default: 1 GB)
MIN_FILE_SIZE = "spark.databricks.delta.optimize.minFileSize"
KEEP_FILES_FROM_BYTES = 16 * 1024 * 1024
# the size of the files OPTIMIZE ... ZORDER BY writes (its default: 1 GB)
MAX_FILE_SIZE = "spark.databricks.delta.optimize.maxFileSize"
# a windowed mart's files: about 100,000 sessions or jobs each, what a merge rewrites at most per file
ORDERED_FILE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Compaction:
    mart: str
    files_before: int
    files_after: int
    seconds: float
    ordered_by: str | None = None  # a windowed mart's window column: rewritten whole in its order


def mart_tables(spark: SparkSession, schema: str) -> list[str]:
    """The schema's tables: not its views, nor the temporary views dbt's merges leave."""
    return sorted(table_names(spark, schema, views=False))


def _detail(spark: SparkSession, table: str) -> tuple[int, int]:
    """``table``'s data files and their bytes in its current Delta version (from its log: table_files,
    else ``DESCRIBE DETAIL``). A gold refresh asks it of every mart and intermediate table."""
    found = table_files(spark, table)
    if found is not None:
        return found
    row = spark.sql(f"DESCRIBE DETAIL {table}").first()
    return row["numFiles"], row["sizeInBytes"]


def data_files(spark: SparkSession, table: str) -> int:
    """How many data files ``table``'s current Delta version has (from its log)."""
    return _detail(spark, table)[0]


def _due(files: int, size: int, files_over: int, ordered_bytes: int | None) -> bool:
    if ordered_bytes is None:
        return files > files_over
    # past its ordered files' count by the allowance, or in files much larger than a merge should rewrite
    return files > files_over + size // ordered_bytes or (files > 0 and size / files > 2 * ordered_bytes)


def compact(
    spark: SparkSession,
    table: str,
    files_over: int,
    keep_from_bytes: int = KEEP_FILES_FROM_BYTES,
    ordered_by: str | None = None,
    ordered_bytes: int = ORDERED_FILE_BYTES,
) -> Compaction | None:
    """OPTIMIZE ``table`` (a name or ``delta.`path```) if it has more than ``files_over`` data files,
    packing only its files smaller than ``keep_from_bytes``; a windowed mart's (``ordered_by``: its
    window column) rewritten whole in files of about ``ordered_bytes`` in that column's order, by the
    rule the module's docstring gives."""
    before, size = _detail(spark, table)
    if not _due(before, size, files_over, ordered_bytes if ordered_by else None):
        return None
    started = time.monotonic()
    # read when OPTIMIZE plans; nothing else runs meanwhile
    if ordered_by:
        with session_conf(spark, {MAX_FILE_SIZE: str(ordered_bytes)}):
            spark.sql(f"OPTIMIZE {table} ZORDER BY (`{ordered_by}`)")
    else:
        with session_conf(spark, {MIN_FILE_SIZE: str(keep_from_bytes)}):
            spark.sql(f"OPTIMIZE {table}")
    return Compaction(table, before, data_files(spark, table), time.monotonic() - started, ordered_by)


def log_compaction(c: Compaction, files_over: int, log=print) -> None:
    why = (
        f"rewritten in the order of {c.ordered_by}, files of about {ORDERED_FILE_BYTES // 2**20} MB"
        if c.ordered_by
        else f"more than {files_over} files"
    )
    log(f"gold: compacted {c.mart}: {c.files_before} -> {c.files_after} files in {c.seconds:.1f}s ({why})")


def compact_marts(
    spark: SparkSession, schema: str, files_over: int, ordered: dict[str, str] | None = None, log=print
) -> list[Compaction]:
    """OPTIMIZE every mart of ``schema`` with more than ``files_over`` data files, ``ordered`` (mart -> its
    window column, pipelines/gold/run.py merge_windows) by their own rule; -> what was done."""
    ordered = ordered or {}
    done = [
        c
        for name in mart_tables(spark, schema)
        if (c := compact(spark, f"{schema}.{name}", files_over, ordered_by=ordered.get(name)))
    ]
    for c in done:
        log_compaction(c, files_over, log)
    return done
