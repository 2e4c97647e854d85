"""``auditlake export hyper``: every analyst-facing mart, masked as the analysts see it, in one
multi-table Hyper file (Tableau's own engine, ``tableauhyperapi``), kept current incrementally.

Source: the analysts' copies of the marts (pipelines/analyst/publish.py: personal columns are
keyed pseudonyms there), never gold itself. Each mart is a table ``"Extract"."<mart>"`` with
Tableau-friendly types: 64-bit integers, doubles, booleans, text, timestamps (UTC, without a zone);
an array, map or struct column becomes its JSON text.

Fast path: Spark writes the rows to Parquet in a staging folder beside the file and Hyper reads
them with ``external(...)``: no row-by-row insert.

Incremental. The file keeps its own marks (table ``"auditlake"."export_marks"``): per mart, the
version of the analysts' copy it holds and, for a fact, the newest ``silver_ingest_ts`` exported.

- A fact (a mart dbt builds incrementally with a ``unique_key``, holding ``silver_ingest_ts``): its
  rows newer than the mark are upserted, their keys deleted and the rows inserted (``fct_sessions``
  and ``fct_background_jobs`` rewrite a row under its key with a newer timestamp).
- Any other mart (dimensions, reports): replaced whole when its copy's version moved.
- Everything is written again when the pseudonym key changed (every pseudonym did), when an erasure
  was recorded since the last export (the erased person's identifiers leave this copy too), or for
  a mart whose columns changed.

A second export with nothing new writes nothing: ``auditlake.hyper.state.json`` beside the file says
what the last export was made from (the copies' versions, the key id, the erasures), and when that has
not moved Hyper does not open the file. Every step can be repeated: a run killed midway applies its
batches again on the next run (the upsert deletes before it inserts), then moves the marks and the state.
"""

from __future__ import annotations

import json
import re
import shutil
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StructType, TimestampType

from pipelines.analyst.publish import MARTS_DIR, analyst_tables_published, read_catalog, tables_location
from pipelines.config.load import Config
from pipelines.errors import InputError
from pipelines.lake import storage
from pipelines.lake.table_names import tables
from pipelines.runtime.spark_session import small_tables

HYPER_FILE = "auditlake.hyper"
SCHEMA = "Extract"  # the schema Tableau's extracts use
MARKS_SCHEMA, MARKS_TABLE = "auditlake", "export_marks"
WATERMARK = "silver_ingest_ts"
STAGING_PREFIX = ".staging-"
STATE_SUFFIX = ".state.json"
# a mart's row in the marks table; the row named META holds the file's key id and erasure count
META = "*"
_CONFIG = re.compile(r"\{\{\s*config\((?P<args>.*?)\)\s*\}\}", re.S)


class HyperExportError(InputError):
    """The export cannot run (no analysts' tables yet, an output that is not a local folder)."""


@dataclass
class MartExport:
    name: str
    mode: str  # upsert | replace
    action: str = "unchanged"  # unchanged | appended | replaced | created
    rows: int = 0


@dataclass
class HyperReport:
    path: Path
    marts: list[MartExport] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    full: bool = False

    @property
    def written(self) -> list[MartExport]:
        return [m for m in self.marts if m.action != "unchanged"]

    @property
    def summary(self) -> str:
        if not self.written and not self.dropped:
            return f"export hyper: nothing new; {self.path} unchanged ({len(self.marts)} tables)"
        rows = sum(m.rows for m in self.written)
        by_action: dict[str, int] = {}
        for m in self.written:
            by_action[m.action] = by_action.get(m.action, 0) + 1
        actions = ", ".join(f"{n} {a}" for a, n in sorted(by_action.items()))
        return (
            f"export hyper: {rows} rows into {self.path} ({actions}; {len(self.marts) - len(self.written)} "
            f"unchanged{', everything rewritten' if self.full else ''}) in {self.seconds:.1f}s"
        )


def hyper_path(cfg: Config, out: str | None = None) -> Path:
    """The Hyper file: ``<out>/auditlake.hyper``; out defaults to ``hyper.out_dir`` (``<data_dir>/hyper``)."""
    where = out if out is not None else str(cfg.settings.hyper.out_dir or "")
    if storage.is_uri(where):
        raise HyperExportError(f"hyper output {where}: Hyper writes a local file; give a folder on this machine")
    folder = Path(where).expanduser() if where else cfg.data_dir / "hyper"
    return (folder if folder.is_absolute() else Path.cwd() / folder) / HYPER_FILE


def incremental_keys() -> dict[str, str]:
    """Mart -> its unique_key, for the marts dbt builds incrementally (the config() of their SQL)."""
    keys = {}
    for path in sorted(MARTS_DIR.rglob("*.sql")):
        found = _CONFIG.search(path.read_text(encoding="utf-8"))
        if found and re.search(r"materialized\s*=\s*['\"]incremental['\"]", found["args"]):
            key = re.search(r"unique_key\s*=\s*['\"](\w+)['\"]", found["args"])
            if key:
                keys[path.stem] = key[1]
    return keys


def hyper_frame(frame: DataFrame) -> DataFrame:
    """``frame`` in types Tableau reads from Hyper: nested values as JSON text, timestamps without a zone
    (UTC wall clock: the session's time zone is UTC)."""
    columns = []
    for f in frame.schema.fields:
        col = F.col(f"`{f.name}`")
        if isinstance(f.dataType, ArrayType | MapType | StructType):
            col = F.to_json(col)
        elif isinstance(f.dataType, TimestampType):
            col = col.cast("timestamp_ntz")
        columns.append(col.alias(f.name))
    return frame.select(*columns)


def _signature(frame: DataFrame, masked: list[str]) -> str:
    """The columns, their types and which are masked: a column masked since the last export (a new
    personal tag) is in every row the file holds, so a change here writes the mart again whole."""
    return ",".join(
        f"{f.name}:{f.dataType.simpleString()}{':masked' if f.name in masked else ''}" for f in frame.schema.fields
    )


def _erasures_done(spark: SparkSession, cfg: Config) -> int:
    name = tables(cfg).erasures
    return spark.table(name).where("status = 'done'").count() if spark.catalog.tableExists(name) else 0


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class _Staging:
    """Parquet files Spark writes for Hyper to read, in a folder beside the Hyper file."""

    def __init__(self, folder: Path):
        self.folder = folder

    def write(self, frame: DataFrame, name: str) -> str | None:
        """``frame`` as Parquet; -> Hyper's ``external(...)`` of its files (None: no row)."""
        target = self.folder / name
        frame.write.mode("overwrite").parquet(str(target))
        files = sorted(str(p) for p in target.glob("part-*.parquet"))
        if not files:
            return None
        return "external(ARRAY[" + ", ".join(_sql_text(f) for f in files) + "])"

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def export_hyper(spark: SparkSession, cfg: Config, out: str | None = None, log=print) -> HyperReport:
    """Bring ``<out>/auditlake.hyper`` up to date with the analysts' tables (see the module's doc)."""
    from tableauhyperapi import Connection, CreateMode, HyperProcess, Telemetry

    started = time.monotonic()
    if not cfg.settings.analyst.enabled or not analyst_tables_published(spark, cfg):
        raise HyperExportError("no analysts' tables to export yet: run `auditlake refresh` (every layer) first")
    path = hyper_path(cfg, out)
    path.parent.mkdir(parents=True, exist_ok=True)
    catalog = read_catalog(spark, cfg)
    key_id, erasures = catalog.get("key_id") or "", _erasures_done(spark, cfg)
    keys = incremental_keys()
    report = HyperReport(path)
    # what the last export wrote from (beside the file, written after it): the same again -> nothing to do,
    # and Hyper does not even open the file (an open can rewrite its pages)
    state_file = path.with_name(path.name + STATE_SUFFIX)
    state = {
        "key_id": key_id,
        "erasures": erasures,
        "marts": {
            name: [entry["source_version"], entry.get("copy_version")]  # a mask changed: a new copy
            for name, entry in sorted(catalog["marts"].items())
        },
    }
    if path.is_file() and state_file.is_file() and json.loads(state_file.read_text(encoding="utf-8")) == state:
        report.marts = [MartExport(name, "upsert" if name in keys else "replace") for name in state["marts"]]
        report.seconds = time.monotonic() - started
        log(report.summary)
        return report
    state_file.unlink(missing_ok=True)
    staging = _Staging(path.parent / f"{STAGING_PREFIX}{uuid.uuid4().hex[:8]}")
    # Parquet timestamps Hyper reads (Spark's default INT96 is not one of them)
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    # the copies' Parquet written for Hyper, with the small-input settings while the marts are small
    copies = [f"delta.`{storage.join(tables_location(cfg), name)}`" for name in catalog["marts"]]
    with small_tables(spark, cfg, copies):
        try:
            with HyperProcess(Telemetry.DO_NOT_SEND_USAGE_DATA_TO_TABLEAU, parameters={"log_config": ""}) as hyper:
                with Connection(hyper.endpoint, str(path), CreateMode.CREATE_IF_NOT_EXISTS) as conn:
                    marks = _read_marks(conn)
                    meta = marks.pop(META, None)
                    report.full = meta is None or meta["key_id"] != key_id or meta["erasures"] != erasures
                    present = _tables(conn, SCHEMA)
                    new_marks = {}
                    for name, entry in sorted(catalog["marts"].items()):
                        # reading the table's schema runs no Spark job: a mart whose copy did not move costs nothing
                        frame = hyper_frame(spark.read.format("delta").load(storage.join(tables_location(cfg), name)))
                        mode = "upsert" if name in keys and WATERMARK in frame.columns else "replace"
                        done = MartExport(name, mode)
                        report.marts.append(done)
                        mark, version = marks.get(name), entry["source_version"]
                        signature = _signature(frame, entry.get("masked") or [])
                        new_marks[name] = dict(mark or {}, mode=mode, signature=signature, source_version=version)
                        whole = (
                            report.full
                            or mark is None
                            or name not in present
                            or mark["mode"] != mode
                            or mark["signature"] != signature
                        )
                        if not whole and mark["source_version"] == version:
                            continue
                        if whole or mode == "replace":
                            done.rows = _replace(conn, staging, frame, name)
                            done.action = "replaced" if name in present else "created"
                            if mode == "upsert":
                                new_marks[name]["watermark"] = _newest(conn, f"{_q(SCHEMA)}.{_q(name)}")
                            continue
                        since = mark["watermark"]  # None: the mart had no row yet
                        batch = frame if since is None else frame.where(F.col(WATERMARK) > F.lit(since))
                        source = staging.write(batch, name)
                        newest = _newest(conn, source) if source else None
                        if newest is not None:
                            done.rows = _upsert(conn, source, name, keys[name])
                            done.action = "appended"
                            new_marks[name]["watermark"] = newest
                    for gone in sorted(present - set(catalog["marts"])):
                        conn.execute_command(f"DROP TABLE IF EXISTS {_q(SCHEMA)}.{_q(gone)}")
                        report.dropped.append(gone)
                    if report.written or report.dropped or new_marks != marks or report.full:
                        new_marks[META] = {"key_id": key_id, "erasures": erasures}
                        _write_marks(conn, new_marks)
        finally:
            staging.remove()
            spark.conf.unset("spark.sql.parquet.outputTimestampType")
    state_file.write_text(json.dumps(state, sort_keys=True), encoding="utf-8")
    report.seconds = time.monotonic() - started
    log(report.summary)
    return report


def _replace(conn, staging: _Staging, frame: DataFrame, name: str) -> int:
    table = f"{_q(SCHEMA)}.{_q(name)}"
    source = staging.write(frame, name)
    if source is None:  # Spark wrote no file: the columns from one empty partition's file
        source = staging.write(frame.limit(0).coalesce(1), name)
    if source is None:
        raise HyperExportError(f"{name}: Spark wrote no Parquet file for Hyper to read")
    conn.execute_command(f"CREATE SCHEMA IF NOT EXISTS {_q(SCHEMA)}")
    conn.execute_command(f"DROP TABLE IF EXISTS {table}")
    conn.execute_command(f"CREATE TABLE {table} AS SELECT * FROM {source}")
    return conn.execute_scalar_query(f"SELECT count(*) FROM {table}")


def _upsert(conn, source: str, name: str, key: str) -> int:
    """The batch's rows in place of the rows with the same keys (a row rewritten under its key
    replaces the one exported before; a batch applied twice gives the same table)."""
    table = f"{_q(SCHEMA)}.{_q(name)}"
    conn.execute_command(f"DELETE FROM {table} WHERE {_q(key)} IN (SELECT {_q(key)} FROM {source})")
    return conn.execute_command(f"INSERT INTO {table} SELECT * FROM {source}")


def _newest(conn, relation: str) -> datetime | None:
    """The newest ``silver_ingest_ts`` of a table or an ``external(...)`` source (None: no row)."""
    value = conn.execute_scalar_query(f"SELECT max({_q(WATERMARK)}) FROM {relation}")
    return value.to_datetime() if value is not None else None


_MARK_COLUMNS = ("mart", "mode", "signature", "source_version", "watermark", "key_id", "erasures")


def _tables(conn, schema: str) -> set[str]:
    """The tables of ``schema`` in the file (none when the schema is not there)."""
    if schema not in {str(s.name.unescaped) for s in conn.catalog.get_schema_names()}:
        return set()
    return {str(t.name.unescaped) for t in conn.catalog.get_table_names(schema)}


def _read_marks(conn) -> dict[str, dict]:
    if MARKS_TABLE not in _tables(conn, MARKS_SCHEMA):
        return {}
    rows = conn.execute_list_query(
        f"SELECT {', '.join(_q(c) for c in _MARK_COLUMNS)} FROM {_q(MARKS_SCHEMA)}.{_q(MARKS_TABLE)}"
    )
    marks = {}
    for mart, mode, signature, version, watermark, key_id, erasures in rows:
        marks[mart] = (
            {"key_id": key_id, "erasures": erasures}
            if mart == META
            else {
                "mode": mode,
                "signature": signature,
                "source_version": version,
                "watermark": watermark.to_datetime() if watermark is not None else None,
            }
        )
    return marks


def _write_marks(conn, marks: dict[str, dict]) -> None:
    table = f"{_q(MARKS_SCHEMA)}.{_q(MARKS_TABLE)}"
    conn.execute_command(f"CREATE SCHEMA IF NOT EXISTS {_q(MARKS_SCHEMA)}")
    conn.execute_command(f"DROP TABLE IF EXISTS {table}")
    conn.execute_command(
        f"CREATE TABLE {table} (mart text, mode text, signature text, source_version bigint, "
        "watermark timestamp, key_id text, erasures bigint)"
    )
    for mart, m in sorted(marks.items()):
        watermark = m.get("watermark")
        values = [
            _sql_text(mart),
            _nullable_text(m.get("mode")),
            _nullable_text(m.get("signature")),
            str(m["source_version"]) if m.get("source_version") is not None else "NULL",
            f"TIMESTAMP {_sql_text(watermark.isoformat(sep=' '))}" if isinstance(watermark, datetime) else "NULL",
            _nullable_text(m.get("key_id")),
            str(m["erasures"]) if m.get("erasures") is not None else "NULL",
        ]
        conn.execute_command(f"INSERT INTO {table} VALUES ({', '.join(values)})")


def _nullable_text(value: str | None) -> str:
    return "NULL" if value is None else _sql_text(value)
