"""Compaction of a mart's files by the rule pipelines/gold/compact.py states, on small Delta tables of
the test's own (no gold build: these run beside the shared lake's modules, not after them)."""

from __future__ import annotations

from pipelines.gold.compact import MAX_FILE_SIZE, MIN_FILE_SIZE, compact
from pipelines.lake.delta_tables import table_files


def test_compaction_packs_the_small_files_and_leaves_the_large_ones(spark, tmp_path):
    """A windowed mart is written in time order so that a merge rewrites only its newest files: a
    compaction must not pack its large files into one (Delta's own floor is 1 GB)."""
    table = f"delta.`{tmp_path / 'mart'}`"
    spark.range(200_000).selectExpr("id", "sha2(cast(id as string), 256) as h").coalesce(1).write.format("delta").save(
        str(tmp_path / "mart")
    )
    large = set(spark.sql(f"select input_file_name() from {table}").distinct().first())
    for i in range(4):
        spark.range(i, i + 1).selectExpr("id", "'small' as h").write.format("delta").mode("append").save(
            str(tmp_path / "mart")
        )
    detail = spark.sql(f"DESCRIBE DETAIL {table}").first()
    size = detail["sizeInBytes"]
    assert table_files(spark, table) == (detail["numFiles"], size) == (5, size)  # Delta's log, no query planned
    rows = spark.sql(f"select * from {table}").collect()
    done = compact(spark, table, files_over=2, keep_from_bytes=size // 2)  # the large file is past half
    assert (done.files_before, done.files_after) == (5, 2)
    files = {r[0] for r in spark.sql(f"select input_file_name() from {table}").distinct().collect()}
    assert large <= files  # not rewritten
    assert sorted(spark.sql(f"select * from {table}").collect()) == sorted(rows)
    assert compact(spark, table, files_over=1, keep_from_bytes=size * 2).files_after == 1  # all small: one file
    assert spark.conf.get(MIN_FILE_SIZE, None) is None  # the session's setting is put back


def test_a_windowed_mart_is_kept_in_ordered_files_a_merge_skips(spark, tmp_path):
    """A windowed mart's large files (a first build) and the small ones its merges add are rewritten in
    the order of its window column, in files of about the bound: a merge of the newest rows reads only
    the newest files."""
    path = str(tmp_path / "mart")
    table = f"delta.`{path}`"
    spark.range(60_000).selectExpr(
        "id", "timestamp'2026-01-01' + make_dt_interval(0, 0, 0, id * 60) as at", "sha2(cast(id as string), 256) as h"
    ).repartition(2).write.format("delta").save(path)  # two large files, every time in each
    size = spark.sql(f"DESCRIBE DETAIL {table}").first()["sizeInBytes"]
    bound = size // 6
    rows = sorted(spark.sql(f"select * from {table}").collect())
    assert compact(spark, table, files_over=32, ordered_by="at", ordered_bytes=size) is None  # files fit the bound
    done = compact(spark, table, files_over=32, ordered_by="at", ordered_bytes=bound)
    assert (done.files_before, done.ordered_by) == (2, "at") and 4 <= done.files_after <= 8, done
    assert sorted(spark.sql(f"select * from {table}").collect()) == rows
    spans = spark.sql(
        f"select min(at) as lo, max(at) as hi from {table} group by input_file_name() order by lo"
    ).collect()
    # in order: each file starts at or after most of the one before it (Delta's range partitioning samples)
    assert all(b.lo > a.lo and b.hi > a.hi for a, b in zip(spans, spans[1:], strict=False)), spans
    assert compact(spark, table, files_over=32, ordered_by="at", ordered_bytes=bound) is None  # now within the rule
    newest = spans[-1].lo
    spark.sql(
        f"merge into {table} t using (select {59_999} as id, timestamp'2026-03-01' as at, 'new' as h) s "
        f"on t.id = s.id and t.at >= timestamp'{newest}' when matched then update set *"
    )
    metrics = spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").first()["operationMetrics"]
    assert int(metrics["numTargetFilesRemoved"]) == 1 and int(metrics["numTargetRowsCopied"]) < len(rows) // 3, metrics
    assert spark.conf.get(MAX_FILE_SIZE, None) is None  # the session's setting is put back
