"""Read ``historical_audit``: from an export file, or from the databases over JDBC.

Both readers return the same shape: the documented columns as *strings*, as they came
(the JDBC reader has PostgreSQL cast each column to text, so no driver or JVM time zone
touches a date), plus ``database`` (the role: metadata or persistence), ``parse_status``,
``raw_record`` and ``source`` (lineage: the file path, or ``jdbc://host:port/database``).

The JDBC reader is incremental: it asks only for rows whose ``ACTIONDATE_UTC`` is at or
after ``since`` (the watermark less the overlap) -- and for rows with no date at all, which a
watermark would otherwise never reach. A failed connection or login raises
``WritebackSourceError`` with one line naming host, port and database.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.config.load import Config, secret
from pipelines.errors import ExternalError
from pipelines.writeback import COLUMNS, ROLE_FIELD

SOURCE_COLUMNS = [*COLUMNS, "database", "parse_status", "raw_record", "source"]
_REQUIRED_DB_COLUMNS = ("ID", "ACTIONDATE_UTC")


class WritebackSourceError(ExternalError):
    """A write-back database could not be read (one line: host, port, database, cause)."""


def source_kind(cfg: Config) -> str:
    return cfg.settings.writeback.source


def configured_databases(cfg: Config) -> dict[str, str]:
    """role -> database name, for the roles with a database configured."""
    return {role: name for role, name in cfg.settings.writeback.databases.items() if name}


# ---- file export -----------------------------------------------------------------------------


def _pick(columns_by_upper: dict[str, Column], name: str) -> Column:
    col = columns_by_upper.get(name)
    return (col if col is not None else F.lit(None)).cast("string").alias(name)


def read_file_export(spark: SparkSession, path: Path, default_database: str) -> DataFrame:
    """Every record of a CSV or NDJSON export, as strings; column names matched case-insensitively.

    A line of an NDJSON file that is not a JSON object is kept (``parse_status`` =
    ``malformed``) with its text in ``raw_record``; blank lines are not records.
    """
    path = Path(path)
    if path.suffix.lower() == ".csv":
        frame = spark.read.option("header", True).option("inferSchema", False).csv(str(path))
        by_upper = {c.upper(): F.col(f"`{c}`") for c in frame.columns}
        raw = F.to_json(F.struct(*[F.col(f"`{c}`") for c in frame.columns]))
        status = F.lit("ok")
    else:
        lines = spark.read.text(str(path)).where(F.trim("value") != "")
        # map<string,string>: numbers and nested values keep their JSON text; NULL when not an object
        parsed = F.from_json("value", "map<string,string>")
        frame = lines.select(
            "value",
            F.map_from_entries(
                F.transform(F.map_entries(parsed), lambda e: F.struct(F.upper(e["key"]), e["value"]))
            ).alias("_m"),
        )
        by_upper = {c: F.col("_m")[c] for c in [*COLUMNS, ROLE_FIELD]}
        raw = F.col("value")
        status = F.when(F.col("_m").isNull(), "malformed").otherwise("ok")
    role = F.coalesce(F.nullif(F.trim(_pick(by_upper, ROLE_FIELD)), F.lit("")), F.lit(default_database))
    return frame.select(
        *[_pick(by_upper, c) for c in COLUMNS],
        role.alias("database"),
        status.alias("parse_status"),
        raw.alias("raw_record"),
        F.lit(str(path)).alias("source"),
    )


def no_rows(spark: SparkSession) -> DataFrame:
    """A source with nothing to land, in a source's columns (all strings)."""
    return spark.createDataFrame([], ", ".join(f"`{c}` string" for c in SOURCE_COLUMNS))


# ---- JDBC ------------------------------------------------------------------------------------


def jdbc_source_name(cfg: Config, database: str) -> str:
    return f"jdbc://{cfg.get('writeback.jdbc.host')}:{cfg.get('writeback.jdbc.port')}/{database}"


def jdbc_options(cfg: Config, database: str, environ: dict[str, str] | None = None) -> dict[str, str]:
    host, port = cfg.settings.writeback.jdbc.host, cfg.settings.writeback.jdbc.port
    timeout = cfg.settings.writeback.jdbc.connect_timeout_seconds
    return {
        "url": f"jdbc:postgresql://{host}:{port}/{database}?connectTimeout={timeout}&loginTimeout={timeout}",
        "driver": "org.postgresql.Driver",
        "user": cfg.settings.writeback.jdbc.user,
        "password": secret(cfg, "writeback.jdbc.password_env", environ),
        "fetchsize": "10000",
        # Text casts of timestamps in ISO form; a timestamptz column would print in UTC.
        "sessionInitStatement": "SET DateStyle = 'ISO, YMD'; SET TIME ZONE 'UTC'",
    }


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _cause(exc: BaseException) -> str:
    """The driver's own message (e.g. 'password authentication failed for user ...'), on one line."""
    text = str(exc)
    m = re.search(r"PSQLException: ([^\n]+)", text) or re.search(r"(?:Exception|Error): ([^\n]+)", text)
    line = (m.group(1) if m else text.strip().splitlines()[0] if text.strip() else type(exc).__name__).strip()
    return line if len(line) <= 300 else line[:297] + "..."


def _source_error(cfg: Config, role: str, database: str, exc: BaseException) -> WritebackSourceError:
    return WritebackSourceError(
        f"write-back {role} database unreachable or refused: host {cfg.get('writeback.jdbc.host')}, "
        f"port {cfg.get('writeback.jdbc.port')}, database {database}: {_cause(exc)}"
    )


def incremental_query(table: str, actual_columns: dict[str, str], since: datetime | None) -> str:
    """The SELECT sent to PostgreSQL: every documented column as text, from ``since`` on (or everything).

    ``actual_columns`` maps the documented name (upper case) to the name in the database
    (unquoted identifiers are folded to lower case by PostgreSQL). The watermark is an
    untyped literal, so it compares as a timestamp with a timestamp column and as text with
    a text column (ISO text sorts as time).
    """
    select = ", ".join(
        f"CAST({_quote(actual_columns[c])} AS text) AS {_quote(c)}"
        if c in actual_columns
        else f"CAST(NULL AS text) AS {_quote(c)}"
        for c in COLUMNS
    )
    query = f"SELECT {select} FROM {table}"
    if since is not None:
        utc = _quote(actual_columns["ACTIONDATE_UTC"])
        query += f" WHERE {utc} >= '{since:%Y-%m-%d %H:%M:%S.%f}' OR {utc} IS NULL"
    return query


def read_jdbc(
    spark: SparkSession,
    cfg: Config,
    role: str,
    database: str,
    since: datetime | None,
    environ: dict[str, str] | None = None,
) -> DataFrame:
    """The rows of one database from ``since`` on, read once and held (``localCheckpoint``)."""
    options = jdbc_options(cfg, database, environ)
    table = cfg.settings.writeback.jdbc.table
    try:
        probe = spark.read.format("jdbc").options(**options).option("query", f"SELECT * FROM {table} WHERE 1=0")
        actual = {f.name.upper(): f.name for f in probe.load().schema.fields}
        missing = [c for c in _REQUIRED_DB_COLUMNS if c not in actual]
        if missing:
            raise WritebackSourceError(
                f"write-back {role} database: table {table} has no column {', '.join(missing)} "
                f"(host {cfg.get('writeback.jdbc.host')}, port {cfg.get('writeback.jdbc.port')}, database {database})"
            )
        rows = (
            spark.read.format("jdbc").options(**options).option("query", incremental_query(table, actual, since)).load()
        )
        framed = rows.select(
            *[F.col(c) for c in COLUMNS],
            F.lit(role).alias("database"),
            F.lit("ok").alias("parse_status"),
            F.to_json(F.struct(*COLUMNS)).alias("raw_record"),
            F.lit(jdbc_source_name(cfg, database)).alias("source"),
        )
        return framed.localCheckpoint()  # one read: counts, watermark and write see the same rows
    except WritebackSourceError:
        raise
    except Exception as exc:  # py4j / Spark wrap the driver's PSQLException
        raise _source_error(cfg, role, database, exc) from None
