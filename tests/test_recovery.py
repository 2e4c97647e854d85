"""A table creation killed between Delta's first commit and the metastore's registration leaves a
folder no table name points at: the next refresh removes it when it holds no committed row (or
when its schema is derived, as gold is), and stops with a clear message when it does."""

from __future__ import annotations

import pytest
from delta.tables import DeltaTable

from pipelines.lake.table_names import tables
from pipelines.refresh.recovery import (
    OrphanTableError,
    clear_interrupted_creates,
    clear_killed_checkpoint_writes,
    schema_location,
)


def test_an_interrupted_create_is_cleared_and_a_folder_with_rows_is_not(spark):
    schema = "recovery_check"
    spark.sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    spark.sql(f"CREATE SCHEMA {schema}")
    spark.sql(f"CREATE TABLE {schema}.kept (id BIGINT) USING delta")
    location = schema_location(spark, schema)
    # what a kill leaves: the CREATE TABLE commit written, the name never registered
    DeltaTable.create(spark).location(f"{location}/events_raw").addColumn("id", "BIGINT").execute()
    assert not spark.catalog.tableExists(f"{schema}.events_raw")
    with pytest.raises(Exception, match="DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION|LOCATION_ALREADY_EXISTS"):
        spark.sql(f"CREATE TABLE {schema}.events_raw (id BIGINT) USING delta")

    assert clear_interrupted_creates(spark, schema, log=lambda _m: None) == ["events_raw"]
    spark.sql(f"CREATE TABLE {schema}.events_raw (id BIGINT) USING delta")  # now it can be created
    assert spark.catalog.tableExists(f"{schema}.kept")  # registered tables are left alone

    # a folder whose log committed rows is never removed
    spark.range(3).write.format("delta").save(f"{location}/with_rows")
    with pytest.raises(OrphanTableError, match="committed rows"):
        clear_interrupted_creates(spark, schema, log=lambda _m: None)
    assert spark.read.format("delta").load(f"{location}/with_rows").count() == 3
    # ...but in a derived schema (gold: dbt rebuilds every table from silver) it is
    assert clear_interrupted_creates(spark, schema, log=lambda _m: None, derived=True) == ["with_rows"]
    spark.sql(f"DROP SCHEMA {schema} CASCADE")


def test_a_killed_checkpoint_write_no_longer_stops_the_first_batch(spark, tmp_path):
    source, checkpoints = tmp_path / "in", tmp_path / "checkpoints"
    source.mkdir()
    (source / "part-0.json").write_text('{"a": 1}\n')
    # what a kill during the first offsets write leaves: the temporary file, never renamed
    offsets = checkpoints / "bronze_site" / "offsets"
    offsets.mkdir(parents=True)
    (offsets / ".0.6f1c2d-killed.tmp").write_text("v1\n")

    def run_stream() -> None:
        query = (
            spark.readStream.text(str(source))
            .writeStream.format("delta")
            .option("checkpointLocation", str(checkpoints / "bronze_site"))
            .trigger(availableNow=True)
            .start(str(tmp_path / "table"))
        )
        query.awaitTermination()

    with pytest.raises(Exception, match="STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY"):
        run_stream()
    removed = clear_killed_checkpoint_writes(spark, str(checkpoints), log=lambda _m: None)
    assert [r.rsplit("/", 1)[1] for r in removed] == [".0.6f1c2d-killed.tmp"]
    run_stream()
    assert spark.read.format("delta").load(str(tmp_path / "table")).count() == 1


def test_a_refresh_clears_killed_creates_in_every_schema_it_writes(cfg):
    """gold's staging schema holds dbt's incremental intermediate tables: a create killed there must be
    cleared (as a derived table) like gold's, or every later refresh fails on the leftover folder."""
    from pipelines.refresh import recovered_schemas

    schemas = dict(recovered_schemas(cfg))
    assert schemas[tables(cfg).gold_staging_schema] is True and schemas[cfg.get("gold.schema")] is True
    assert schemas[cfg.get("bronze.schema")] is False and schemas[cfg.get("silver.schema")] is False
