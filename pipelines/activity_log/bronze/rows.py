"""Lines + file metadata -> bronze rows (DataFrame in, DataFrame out; no I/O).

A line that is not JSON is landed too, flagged by ``parse_status``; nothing is dropped here.
``event_type`` and ``event_time`` are lifted from any of the three record shapes (flat; the envelope
``{traceUuid, event[, metadata]}``: Tableau's emitter writes it without ``metadata``, the type then
travels outside the line; Tableau Server's native log line ``{ts, pid, …, site, user, k, v}`` with
the event as its ``v``), falling back to the ``eventType=`` folder for the type.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

# Only the routing fields are parsed here; silver parses the full record.
_ROUTING_SCHEMA = (
    "eventType string, eventTime string, siteLuid string, tenantId string, event string, metadata string, "
    "ts string, v string, _corrupt_record string"
)
BOM = "\ufeff"

BRONZE_COLUMNS = [
    "bronze_id",
    "raw_line",
    "parse_status",
    "record_shape",
    "event_type",
    "event_type_from_folder",
    "event_time",
    "family",
    "source_file",
    "source_file_size",
    "source_file_mtime",
    "content_hash",
    "ingest_ts",
    "run_id",
]
BRONZE_SCHEMA = (
    "bronze_id string, raw_line string, parse_status string, record_shape string, event_type string, "
    "event_type_from_folder boolean, event_time string, family string, source_file string, "
    "source_file_size long, source_file_mtime timestamp, content_hash string, ingest_ts timestamp, run_id string"
)


def lineage_path(file_path: Column) -> Column:
    """A file's path as bronze records it (``source_file``), from Spark's ``_metadata.file_path``."""
    # _metadata.file_path is a URI (spaces as %20, a literal '+' left as is): keep the readable
    # form the listing gives. '+' is protected first because url_decode reads it as a space.
    return F.regexp_replace(F.url_decode(F.replace(file_path, F.lit("+"), F.lit("%2B"))), r"^file:(//)?", "")


def strip_bom(line: Column) -> Column:
    """A UTF-8 BOM that sticks to a line: parse without it (the raw text keeps it)."""
    return F.when(line.startswith(BOM), F.substring(line, 2, 1 << 30)).otherwise(line)


def to_bronze_rows(raw: DataFrame, family: str | None, run_id: str) -> DataFrame:
    """``raw`` has ``value`` (the line), ``source_file``, ``source_file_size``, ``source_file_mtime``
    and, when ``family`` is None, ``path_family`` (the family the file's path says, or NULL: then
    the record decides: ``siteLuid`` makes it a site event, ``tenantId`` a tenant one, else site)."""
    line = F.col("value")
    parsable = strip_bom(line)
    parsed = F.from_json(
        parsable, _ROUTING_SCHEMA, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt_record"}
    )
    is_blank = F.trim(parsable) == ""
    is_object = parsed.isNotNull() & parsed["_corrupt_record"].isNull() & ~is_blank
    # No documented attribute is called ``event``: an object under that name is an envelope's event.
    is_envelope = is_object & F.coalesce(F.ltrim(parsed["event"]).startswith("{"), F.lit(False))
    # A native log line's event is its object ``v``, beside the line's own time ``ts``.
    is_native = (
        is_object
        & ~is_envelope
        & parsed["ts"].isNotNull()
        & F.coalesce(F.ltrim(parsed["v"]).startswith("{"), F.lit(False))
    )

    def field(name: str) -> Column:
        return (
            F.when(is_envelope, F.get_json_object(parsed["event"], f"$.{name}"))
            .when(is_native, F.get_json_object(parsed["v"], f"$.{name}"))
            .otherwise(parsed[name])
        )

    record_type = (
        F.when(
            is_envelope,
            F.coalesce(
                F.get_json_object(parsed["metadata"], "$.eventType"), F.get_json_object(parsed["event"], "$.eventType")
            ),
        )
        .when(is_native, F.get_json_object(parsed["v"], "$.eventType"))
        .otherwise(parsed["eventType"])
    )
    folder_type = F.nullif(F.regexp_extract(F.col("source_file"), r"/eventType=([^/]+)/", 1), F.lit(""))
    if family is not None:
        family_col = F.lit(family)
    else:
        by_record = F.when(is_object & field("tenantId").isNotNull() & field("siteLuid").isNull(), "tenant")
        family_col = F.coalesce(F.col("path_family"), by_record, F.lit("site"))
    return raw.select(
        # Stored once at landing, so silver can tell a replayed batch from a true duplicate.
        F.expr("uuid()").alias("bronze_id"),
        line.alias("raw_line"),
        F.when(is_blank, "blank").when(is_object, "ok").otherwise("malformed").alias("parse_status"),
        F.when(is_envelope, "envelope").when(is_native, "native").when(is_object, "flat").alias("record_shape"),
        F.when(is_object, F.coalesce(record_type, folder_type)).alias("event_type"),
        (is_object & record_type.isNull() & folder_type.isNotNull()).alias("event_type_from_folder"),
        F.when(is_object, field("eventTime")).alias("event_time"),
        family_col.alias("family"),
        F.col("source_file"),
        F.col("source_file_size"),
        F.col("source_file_mtime"),
        F.sha2(line, 256).alias("content_hash"),
        F.current_timestamp().alias("ingest_ts"),
        F.lit(run_id).alias("run_id"),
    )
