"""Compaction of the gold marts after a build (Delta OPTIMIZE), by a stated rule.

Every incremental MERGE adds small files to a mart, and Delta OSS's auto compaction ignores
files written by earlier sessions (delta-io/delta#4487), so a mart refreshed hourly would gain
hundreds of files. The rule: after a successful gold build, a mart holding more than
``gold.compact_files_over`` data files is compacted (and so is an analysts' copy that followed its
mart's changes, pipelines/analyst/publish.py). Reading the file counts is a look at each
mart's Delta log (no data read); OPTIMIZE runs only where the rule says so.

OPTIMIZE packs only the files smaller than ``KEEP_FILES_FROM_BYTES``; larger ones stay as they are.
The windowed marts (fct_background_jobs, fct_sessions) are written in time order, so that a
delivery's merge rewrites only the files of the newest jobs and sessions; packing every file into
one (Delta's own floor is 1 GB) would undo that order at the first compaction, and rewriting large
files that no merge touched is work for nothing in any mart.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pyspark.sql import SparkSession

from pipelines.delta_util import table_names

# Delta's OPTIMIZE leaves a file of at least this many bytes as it is (its default: 1 GB)
MIN_FILE_SIZE = "spark.databricks.delta.optimize.minFileSize"
KEEP_FILES_FROM_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Compaction:
    mart: str
    files_before: int
    files_after: int
    seconds: float


def mart_tables(spark: SparkSession, schema: str) -> list[str]:
    """The schema's tables: not its views, nor the temporary views dbt's merges leave."""
    return sorted(table_names(spark, schema, views=False))


def data_files(spark: SparkSession, table: str) -> int:
    """How many data files ``table``'s current Delta version has (from its log)."""
    return spark.sql(f"DESCRIBE DETAIL {table}").first()["numFiles"]


def compact(
    spark: SparkSession, table: str, files_over: int, keep_from_bytes: int = KEEP_FILES_FROM_BYTES
) -> Compaction | None:
    """OPTIMIZE ``table`` (a name or ``delta.`path```) if it has more than ``files_over`` data files,
    packing only its files smaller than ``keep_from_bytes``."""
    before = data_files(spark, table)
    if before <= files_over:
        return None
    started = time.monotonic()
    previous = spark.conf.get(MIN_FILE_SIZE, None)
    spark.conf.set(MIN_FILE_SIZE, str(keep_from_bytes))  # read when OPTIMIZE plans; nothing else runs meanwhile
    try:
        spark.sql(f"OPTIMIZE {table}")
    finally:
        if previous is None:
            spark.conf.unset(MIN_FILE_SIZE)
        else:
            spark.conf.set(MIN_FILE_SIZE, previous)
    return Compaction(table, before, data_files(spark, table), time.monotonic() - started)


def log_compaction(c: Compaction, files_over: int, log=print) -> None:
    log(
        f"gold: compacted {c.mart}: {c.files_before} -> {c.files_after} files in {c.seconds:.1f}s "
        f"(more than {files_over} files)"
    )


def compact_marts(spark: SparkSession, schema: str, files_over: int, log=print) -> list[Compaction]:
    """OPTIMIZE every mart of ``schema`` with more than ``files_over`` data files; -> what was done."""
    done = [c for name in mart_tables(spark, schema) if (c := compact(spark, f"{schema}.{name}", files_over))]
    for c in done:
        log_compaction(c, files_over, log)
    return done
