"""An analysts' copy following its mart (pipelines/analyst/publish.py): the rows the mart's change data
feed says its commits inserted are appended, masked, while the mart only gains rows; a commit that
changed or removed rows, a replaced mart, a copy not the one the catalogue names or a mart with no
feed make it whole. Either way the copy equals the mart masked, row for row."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, Row

from pipelines.analyst.publish import MartDoc, _only_inserts, publish_mart
from pipelines.personal_data import EMAIL
from pipelines.personal_data.pseudonym import pseudonym

KEY = b"k" * 40
DOC = MartDoc("a mart", {"email": "who"}, {"email": EMAIL})
SCHEMA = "analyst_feed_test"
FILES_OVER = 3  # a copy's files past which it is compacted, in the test that checks it


@pytest.fixture()
def mart(spark, tmp_path):
    spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    spark.sql(f"CREATE SCHEMA {SCHEMA} LOCATION '{tmp_path / 'schema'}'")
    yield f"{SCHEMA}.m", str(tmp_path / "copy")
    spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")


def _create(spark, table: str, feed: bool) -> None:
    props = " TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')" if feed else ""
    spark.sql(f"CREATE TABLE {table} (id INT, email STRING, n DOUBLE) USING delta{props}")
    spark.sql(
        f"INSERT INTO {table} VALUES (1, 'a@x.org', 1.0), (2, NULL, 2.0), (3, 'c@x.org', NULL), (4, 'd@x.org', 4.0)"
    )


def _version(spark, table: str) -> int:
    return spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").first()["version"]


def _publish(spark, table: str, copy: str, before: dict, files_over: int = 100) -> tuple[str, dict]:
    published = publish_mart(spark, table, copy, DOC, KEY, before, _version(spark, table), files_over)
    return published.how, {
        "source_version": published.source_version,
        "copy_version": published.copy_version,
        "mart_id": published.mart_id,
    }


def _assert_masked_copy(spark, table: str, copy: str) -> None:
    expected = [(r["id"], pseudonym(r["email"], KEY), r["n"]) for r in spark.table(table).collect()]
    held: DataFrame = spark.read.format("delta").load(copy)
    assert sorted(map(tuple, held.collect()), key=str) == sorted(expected, key=str)


def test_a_copy_appends_a_marts_new_rows_and_is_made_whole_after_a_change(spark, mart):
    table, copy = mart
    _create(spark, table, feed=True)
    how, entry = _publish(spark, table, copy, {})
    assert how == "copied"
    _assert_masked_copy(spark, table, copy)
    # an incremental mart's merge of new events, an append, a compaction: rows gained only
    spark.sql(
        f"MERGE INTO {table} t USING (SELECT 5 AS id, 'e@x.org' AS email, 5.0 AS n UNION ALL "
        "SELECT 6, NULL, NULL) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    spark.sql(f"INSERT INTO {table} VALUES (7, 'g@x.org', 7.0)")
    spark.sql(f"OPTIMIZE {table}")
    how, after = _publish(spark, table, copy, entry)
    assert how == "appended"
    _assert_masked_copy(spark, table, copy)
    assert after["copy_version"] == entry["copy_version"] + 1, "the new rows in one commit of the copy"

    # a copy changed after the catalogue was written (a kill between the two: the catalogue still names
    # the version before): made whole, not appended to again
    assert _publish(spark, table, copy, entry)[0] == "copied"
    _assert_masked_copy(spark, table, copy)

    # a merge that updated a row, an erasure's update, a delete, a replacement: made whole
    for statement in (
        f"MERGE INTO {table} t USING (SELECT 5 AS id, 'e2@x.org' AS email, 5.5 AS n) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        f"UPDATE {table} SET email = 'erased:0123' WHERE id = 4",
        f"DELETE FROM {table} WHERE id = 3",
        f"CREATE OR REPLACE TABLE {table} USING delta TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true') "
        f"AS SELECT id + 10 AS id, email, n FROM {table}",
        f"INSERT INTO {table} VALUES (20, 'k@x.org', 1.0)",  # below: as if the mart were another table
    ):
        _, entry = _publish(spark, table, copy, {})
        spark.sql(statement)
        if statement.startswith("INSERT"):  # a mart dropped and made again: a new table id, rows of its own
            entry["mart_id"] = "another table"
        assert _publish(spark, table, copy, entry)[0] == "copied", statement
        _assert_masked_copy(spark, table, copy)


def test_only_commits_that_add_rows_or_change_none_are_followed():
    def commit(operation, parameters=None, metrics=None):
        return Row(operation=operation, operationParameters=parameters or {}, operationMetrics=metrics or {})

    merge = {"numTargetRowsInserted": "5", "numTargetRowsUpdated": "0", "numTargetRowsDeleted": "0"}
    assert _only_inserts(commit("MERGE", metrics=merge))
    assert _only_inserts(commit("WRITE", {"mode": "Append"})) and _only_inserts(commit("OPTIMIZE"))
    assert not _only_inserts(commit("MERGE", metrics=merge | {"numTargetRowsUpdated": "1"}))
    assert not _only_inserts(commit("MERGE", metrics={"numTargetRowsInserted": "5"})), "a metric missing"
    assert not _only_inserts(commit("WRITE", {"mode": "Overwrite"}))
    for operation in ("UPDATE", "DELETE", "RESTORE", "CREATE OR REPLACE TABLE AS SELECT"):
        assert not _only_inserts(commit(operation)), operation


def test_a_copy_of_a_mart_with_no_feed_is_made_whole_and_the_feed_turned_on(spark, mart):
    table, copy = mart
    _create(spark, table, feed=False)
    how, entry = _publish(spark, table, copy, {})
    assert how == "copied"
    assert spark.sql(f"SHOW TBLPROPERTIES {table} ('delta.enableChangeDataFeed')").first()["value"] == "true"
    for i in range(FILES_OVER + 1):  # each append adds a file to the copy: compacted past the rule
        spark.sql(f"INSERT INTO {table} VALUES ({8 + i}, 'h@x.org', 8.0)")
        how, entry = _publish(spark, table, copy, entry, FILES_OVER)
        assert how == "appended"
    _assert_masked_copy(spark, table, copy)
    assert spark.sql(f"DESCRIBE DETAIL delta.`{copy}`").first()["numFiles"] <= FILES_OVER
    # a mart below analyst.append_from_mb is copied whole: cheaper than the queries of an append
    spark.sql(f"INSERT INTO {table} VALUES (30, 'm@x.org', 3.0)")
    small = publish_mart(spark, table, copy, DOC, KEY, entry, _version(spark, table), 100, append_from_bytes=2**40)
    assert small.how == "copied"
    _assert_masked_copy(spark, table, copy)
