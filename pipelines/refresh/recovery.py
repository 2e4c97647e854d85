"""Recovering from a refresh killed mid-write: what a kill leaves that a plain re-run trips on.

1. A table being created.

Creating a Delta table is two steps: Delta writes the table's folder (its first commit, and for
CREATE TABLE AS the data files before it), then the metastore registers the name. A refresh
killed between the two leaves a folder in the schema's location that no table name points at;
the next attempt to create the table stops with DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION.
Such a folder holds no committed row (no commit in its log adds a file: nothing was ever
readable through the table), so removing it loses nothing; the rows come again from the
source, whose checkpoint or watermark never recorded them as done. A folder whose log did
commit rows is never touched: the run stops and says how to register it. Except in gold:
every gold table is derived (dbt rebuilds it from silver), and CREATE TABLE AS commits its rows
*before* the metastore registers the name, so a kill in that window is ordinary there; the
folder is removed and the re-run builds the table again.

2. A stream checkpoint file being written. Spark writes each one to a hidden temporary file and
renames it; a kill in between leaves ``.<batch>.<uuid>.tmp``. Spark never reads those, but since
4.1 a query about to run its first batch refuses an ``offsets`` folder that is not empty
(STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY). They are removed before the streams start.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from pipelines.errors import InputError
from pipelines.lake import storage
from pipelines.lake.delta_tables import table_names


class OrphanTableError(InputError):
    """A table folder with committed rows that the metastore does not know."""


def schema_location(spark: SparkSession, schema: str) -> str | None:
    if not spark.catalog.databaseExists(schema):
        return None
    rows = spark.sql(f"DESCRIBE SCHEMA EXTENDED {schema}").collect()
    return next((r[1] for r in rows if r[0].lower() == "location"), None)


def _commits_rows(spark: SparkSession, table_dir: str) -> bool:
    log = storage.join(table_dir, "_delta_log")
    for name, is_dir in storage.list_status(spark, log):
        if not is_dir and name.endswith(".json") and name[:20].isdigit():
            if '{"add":' in (storage.read_text(spark, storage.join(log, name)) or ""):
                return True
    return False


def clear_interrupted_creates(spark: SparkSession, schema: str, log=print, derived: bool = False) -> list[str]:
    """Remove the folders a killed table creation left in ``schema``'s location; -> their names.
    ``derived``: every table of ``schema`` is rebuilt from another layer, so a folder is removed
    even when it committed rows."""
    location = schema_location(spark, schema)
    if location is None:
        return []
    registered = {name.lower() for name in table_names(spark, schema)}
    cleared = []
    for name, is_dir in storage.list_status(spark, location):
        if not is_dir or name.lower() in registered or name.startswith(("_", ".")):
            continue
        folder = storage.join(location, name)
        held_rows = _commits_rows(spark, folder)
        if held_rows and not derived:
            raise OrphanTableError(
                f"{folder} holds a Delta table with committed rows that the metastore does not list as "
                f"{schema}.{name}: register it (CREATE TABLE {schema}.{name} USING delta LOCATION '{folder}') "
                "or move it away, then run again"
            )
        storage.delete(spark, folder)
        cleared.append(name)
        why = "its rows are rebuilt from the layer below" if held_rows else "before it held any row"
        log(f"recovery: removed {folder}: a creation of {schema}.{name} was interrupted ({why})")
    return cleared


def _is_temp_file(name: str) -> bool:
    return name.startswith(".") and (name.endswith(".tmp") or name.endswith(".tmp.crc"))


def clear_killed_checkpoint_writes(spark: SparkSession, checkpoint_root: str, log=print) -> list[str]:
    """Remove the temporary files of interrupted checkpoint writes under every stream checkpoint
    in ``checkpoint_root`` (only their metadata folders: offsets, commits, sources/<n>)."""
    removed = []
    for name, is_dir in storage.list_status(spark, checkpoint_root):
        if not is_dir:
            continue
        checkpoint = storage.join(checkpoint_root, name)
        sources = storage.join(checkpoint, "sources")
        folders = [storage.join(checkpoint, "offsets"), storage.join(checkpoint, "commits")]
        folders += [storage.join(sources, s) for s, d in storage.list_status(spark, sources) if d]
        for folder in folders:
            for entry, entry_is_dir in storage.list_status(spark, folder):
                if not entry_is_dir and _is_temp_file(entry):
                    storage.delete(spark, storage.join(folder, entry))
                    removed.append(storage.join(folder, entry))
    if removed:
        log(
            f"recovery: removed {len(removed)} temporary file(s) of interrupted checkpoint writes under "
            f"{checkpoint_root}"
        )
    return removed
