"""An analysts' copy following its mart's change data feed (pipelines/analyst/publish.py): after any
mix of inserts, updates, deletes and compaction it equals the mart masked, row for row; where it
cannot follow (the mart replaced, a copy not the one the catalogue names, no feed) it is made whole."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame

from pipelines.analyst.publish import MartDoc, publish_mart
from pipelines.personal_data import EMAIL
from pipelines.personal_data.pseudonym import pseudonym

KEY = b"k" * 40
DOC = MartDoc("a mart", {"email": "who"}, {"email": EMAIL})
SCHEMA = "analyst_feed_test"
FILES_OVER = 3


@pytest.fixture()
def mart(spark, tmp_path):
    spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    spark.sql(f"CREATE SCHEMA {SCHEMA} LOCATION '{tmp_path / 'schema'}'")
    yield f"{SCHEMA}.m", str(tmp_path / "copy")
    spark.sql(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")


def _create(spark, table: str, feed: bool) -> None:
    props = " TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')" if feed else ""
    spark.sql(f"CREATE TABLE {table} (id INT, email STRING, n DOUBLE) USING delta{props}")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a@x.org', 1.0), (2, NULL, 2.0), (3, 'c@x.org', NULL), "
              "(4, 'd@x.org', 4.0)")


def _version(spark, table: str) -> int:
    return spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").first()["version"]


def _publish(spark, table: str, copy: str, before: dict) -> tuple[str, dict]:
    how, version, copy_version, _ = publish_mart(spark, table, copy, DOC, KEY, before, _version(spark, table),
                                                 FILES_OVER)
    return how, {"source_version": version, "copy_version": copy_version}


def _assert_masked_copy(spark, table: str, copy: str) -> None:
    expected = [(r["id"], pseudonym(r["email"], KEY), r["n"]) for r in spark.table(table).collect()]
    held: DataFrame = spark.read.format("delta").load(copy)
    assert sorted(map(tuple, held.collect()), key=str) == sorted(expected, key=str)


def test_a_copy_follows_inserts_updates_deletes_and_compaction(spark, mart):
    table, copy = mart
    _create(spark, table, feed=True)
    how, entry = _publish(spark, table, copy, {})
    assert how == "copied"
    _assert_masked_copy(spark, table, copy)
    for statement in (
        f"INSERT INTO {table} VALUES (5, 'e@x.org', 5.0)",
        f"UPDATE {table} SET email = 'b@x.org' WHERE id = 2",  # NULL -> a value
        f"UPDATE {table} SET n = 9.0 WHERE id = 1",
        f"UPDATE {table} SET n = 1.0 WHERE id = 1",  # and back: no net change
        f"UPDATE {table} SET email = 'erased:0123' WHERE id = 4",  # as an erasure rewrites
        f"DELETE FROM {table} WHERE id = 3",
        f"MERGE INTO {table} t USING (SELECT 6 AS id, 'f@x.org' AS email, 6.0 AS n UNION ALL "
        "SELECT 5, 'e2@x.org', 5.5) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        f"OPTIMIZE {table}",
    ):
        spark.sql(statement)
    how, after = _publish(spark, table, copy, entry)
    assert how == "followed"
    _assert_masked_copy(spark, table, copy)
    assert after["copy_version"] == entry["copy_version"] + 1, "the changes in one commit of the copy"

    # a copy changed after the catalogue was written (a kill between the two) is made whole
    spark.sql(f"INSERT INTO {table} VALUES (7, 'g@x.org', 7.0)")
    assert _publish(spark, table, copy, entry | {"source_version": after["source_version"]})[0] == "copied"
    _assert_masked_copy(spark, table, copy)

    # the mart replaced (dbt's CREATE OR REPLACE of a table model or a full refresh): made whole
    _, entry = _publish(spark, table, copy, {})
    spark.sql(f"CREATE OR REPLACE TABLE {table} USING delta TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true') "
              f"AS SELECT id + 10 AS id, email, n FROM {table}")
    assert _publish(spark, table, copy, entry)[0] == "copied"
    _assert_masked_copy(spark, table, copy)


def test_a_copy_of_a_mart_with_no_feed_is_made_whole_and_the_feed_turned_on(spark, mart):
    table, copy = mart
    _create(spark, table, feed=False)
    how, entry = _publish(spark, table, copy, {})
    assert how == "copied"
    assert spark.sql(f"SHOW TBLPROPERTIES {table} ('delta.enableChangeDataFeed')").first()["value"] == "true"
    spark.sql(f"UPDATE {table} SET email = 'z@x.org' WHERE id = 1")
    for i in range(FILES_OVER + 1):  # each followed change adds a file to the copy: compacted past the rule
        spark.sql(f"INSERT INTO {table} VALUES ({8 + i}, 'h@x.org', 8.0)")
        how, entry = _publish(spark, table, copy, entry)
        assert how == "followed"
    _assert_masked_copy(spark, table, copy)
    assert spark.sql(f"DESCRIBE DETAIL delta.`{copy}`").first()["numFiles"] <= FILES_OVER
