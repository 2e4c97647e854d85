"""Bronze rows -> typed silver events and quarantine rows (DataFrame in, DataFrames out; no I/O).

Every bronze row ends in exactly one place: a silver event, a duplicate of one, or
quarantine with a machine-readable reason. Values that do not fit their documented
type, and attributes the registry does not document for the event type, are kept
in ``_rescued_data`` (a JSON object of their raw text) and the row still lands.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from pipelines.silver.plan import (
    CURRENT_ONLY_COMMON,
    FamilyPlan,
    family_plan,
    wide_field_names,
    wide_schema_ddl,
)

_BOM = "\ufeff"

# Quarantine reasons (machine-readable).
BLANK_LINE = "blank_line"
MALFORMED_JSON = "malformed_json"
MISSING_EVENT_TYPE = "missing_event_type"
UNKNOWN_EVENT_TYPE = "unknown_event_type"
BAD_EVENT_TIME = "bad_event_time"
QUARANTINE_REASONS = (BLANK_LINE, MALFORMED_JSON, MISSING_EVENT_TYPE, UNKNOWN_EVENT_TYPE, BAD_EVENT_TIME)

QUARANTINE_COLUMNS = [
    "bronze_id", "family", "reason", "detail", "event_type", "raw_line", "source_file",
    "bronze_run_id", "bronze_ingest_ts",
]
LINEAGE_COLUMNS = ["bronze_id", "source_file", "bronze_run_id", "bronze_ingest_ts"]


@dataclass
class SilverFrames:
    events: DataFrame  # typed rows, one per bronze row that is an event (duplicates not yet removed)
    quarantine: DataFrame


def _lit_array(values) -> Column:
    return F.array(*[F.lit(v) for v in values]) if values else F.array().cast("array<string>")


def _canonical_event_type(plan: FamilyPlan, raw_type: Column) -> Column:
    """The registry's name for ``raw_type`` (aliases resolved), NULL when the registry does not know it."""
    names = {e: e for e in plan.event_types} | dict(plan.aliases)
    lookup = F.create_map(*[F.lit(x) for pair in sorted(names.items()) for x in pair])
    return F.try_element_at(lookup, raw_type)


def _typed(raw: Column, spark_type: str) -> Column:
    # try_cast: a value that does not fit becomes NULL here and is rescued below.
    return raw.try_cast(spark_type)


def to_silver(bronze_rows: DataFrame, family: str) -> SilverFrames:
    """Split and type one family's bronze rows. ``bronze_rows`` has the bronze table's columns."""
    return split_classified(classify(bronze_rows, family), family)


def classify(bronze_rows: DataFrame, family: str) -> DataFrame:
    """Parse each bronze row once and give it a quarantine reason (NULL for a real event)."""
    plan = family_plan(family)
    rows = bronze_rows.select(
        "bronze_id", "raw_line", "parse_status", "record_shape", "event_type", "source_file",
        F.col("run_id").alias("bronze_run_id"), F.col("ingest_ts").alias("bronze_ingest_ts"),
    )
    line = F.col("raw_line")
    parsable = F.when(line.startswith(_BOM), F.substring(line, 2, 1 << 30)).otherwise(line)
    # One parse of the line for flat records; envelopes parse their event object a second time.
    top = F.from_json(parsable, wide_schema_ddl(plan, extra=("event", "metadata")))
    top_attrs = F.struct(*[F.col(f"_top.`{n}`") for n in wide_field_names(plan)])
    is_envelope = F.col("record_shape") == "envelope"
    rows = rows.withColumn("_top", top).withColumn(
        "_attrs", F.when(is_envelope, F.from_json(F.col("_top.event"), wide_schema_ddl(plan))).otherwise(top_attrs)
    ).withColumn(
        "_attrs_json", F.when(is_envelope, F.col("_top.event")).otherwise(parsable)
    ).withColumn("_canonical_type", _canonical_event_type(plan, F.col("event_type")))
    rows = rows.withColumn("event_time", F.col("_attrs.eventTime").try_cast("timestamp"))

    reason = (
        F.when(F.col("parse_status") == "blank", F.lit(BLANK_LINE))
        .when(F.col("parse_status") != "ok", F.lit(MALFORMED_JSON))
        .when(F.col("event_type").isNull(), F.lit(MISSING_EVENT_TYPE))
        .when(F.col("_canonical_type").isNull(), F.lit(UNKNOWN_EVENT_TYPE))
        .when(F.col("event_time").isNull(), F.lit(BAD_EVENT_TIME))
    )
    detail = (
        F.when(reason == UNKNOWN_EVENT_TYPE, F.concat(F.lit("event type not in the registry: "), F.col("event_type")))
        .when(reason == BAD_EVENT_TIME, F.concat(F.lit("eventTime not a timestamp: "),
                                                 F.coalesce(F.col("_attrs.eventTime"), F.lit("(missing)"))))
        .when(reason == MISSING_EVENT_TYPE, F.lit("no eventType in the record, its metadata or its folder"))
        .when(reason == MALFORMED_JSON, F.lit("line is not a JSON object"))
        .when(reason == BLANK_LINE, F.lit("empty line"))
    )
    return rows.withColumn("_reason", reason).withColumn("_detail", detail)


def split_classified(rows: DataFrame, family: str) -> SilverFrames:
    """Classified rows -> (typed events, quarantine rows)."""
    quarantine = rows.where(F.col("_reason").isNotNull()).select(
        "bronze_id", F.lit(family).alias("family"), F.col("_reason").alias("reason"),
        F.col("_detail").alias("detail"), "event_type", "raw_line", "source_file",
        "bronze_run_id", "bronze_ingest_ts",
    )
    events = _type_events(rows.where(F.col("_reason").isNull()), family_plan(family))
    return SilverFrames(events=events, quarantine=quarantine)


def _type_events(rows: DataFrame, plan: FamilyPlan) -> DataFrame:
    event_type = F.col("_canonical_type")
    typed_cols: list[Column] = []
    bad_names: list[Column] = []
    bad_values: list[Column] = []
    for col in plan.columns:
        if col.attribute == "eventTime":
            continue  # typed as event_time above
        raw = F.col(f"_attrs.`{col.attribute}`")
        if col.attribute == "eventType":
            # In a flat record the top-level eventType names the event; only an envelope's
            # event object can carry the documented attribute of that name.
            raw = F.when(F.col("record_shape") == "envelope", raw)
        applies = F.lit(True) if col.common else event_type.isin(*col.event_types)
        if col.common or col.uniform:
            cast_ok = _typed(raw, col.physical_type).isNotNull()
        else:  # the same name documented with different types: check against this event's own type
            cast_ok = F.lit(False)
            for spark_type in sorted({t for _, t in col.types_by_event}):
                types_here = [e for e, t in col.types_by_event if t == spark_type]
                cast_ok = F.when(event_type.isin(*types_here), _typed(raw, spark_type).isNotNull()).otherwise(cast_ok)
        bad = raw.isNotNull() & applies & ~cast_ok
        typed_cols.append(F.when(applies & cast_ok, _typed(raw, col.physical_type)).alias(col.column))
        bad_names.append(F.when(bad, F.lit(col.attribute)))
        bad_values.append(F.when(bad, raw))

    known_keys = F.create_map(*[x for e, keys in plan.keys_by_event for x in (F.lit(e), _lit_array(keys + ("eventType",)))])
    unknown_keys = F.array_except(F.json_object_keys("_attrs_json"), F.try_element_at(known_keys, event_type))
    unknown_map = F.when(
        F.size(unknown_keys) > 0,
        F.map_filter(
            F.from_json("_attrs_json", "map<string,string>"), lambda k, _v: F.array_contains(unknown_keys, k)
        ),
    )
    bad_map = F.map_from_arrays(F.array_compact(F.array(*bad_names)), F.array_compact(F.array(*bad_values)))
    rescued = F.map_concat(F.coalesce(unknown_map, F.create_map().cast("map<string,string>")), bad_map)

    present = [F.col(f"_attrs.`{name}`").isNotNull() for name in CURRENT_ONLY_COMMON if plan.family == "site"]
    looks_legacy = ~_any(present) if present else F.lit(False)
    edition = F.when(event_type.isin(*plan.legacy_event_types) & looks_legacy, "legacy").otherwise("current")

    typed = rows.select(
        event_type.alias("event_type"),
        "event_time",
        F.to_date("event_time").alias("event_date"),
        F.lit(plan.family).alias("family"),
        "record_shape",
        edition.alias("edition"),
        *typed_cols,
        F.when(F.col("record_shape") == "envelope", F.col("_top.traceUuid")).alias("envelope_trace_uuid"),
        F.when(F.col("record_shape") == "envelope", F.get_json_object("_top.metadata", "$.eventVersion"))
        .alias("envelope_event_version"),
        F.when(F.size(rescued) > 0, F.to_json(rescued)).alias("_rescued_data"),
        *LINEAGE_COLUMNS,
    )
    # Same event, same id: the typed content (not the record shape, file or envelope) decides.
    content = F.to_json(F.struct(*[F.col(c.column) for c in plan.columns if c.attribute != "eventTime"]))
    event_id = F.sha2(
        F.concat_ws("\u0001", F.lit(plan.family), F.col("event_type"),
                    F.date_format("event_time", "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"), content,
                    F.coalesce(F.col("_rescued_data"), F.lit(""))),
        256,
    )
    return typed.select(event_id.alias("event_id"), "*")


def _any(conds: list[Column]) -> Column:
    out = conds[0]
    for c in conds[1:]:
        out = out | c
    return out


def deduplicate_events(events: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(first copy of each event_id, the other copies). The earliest landed copy wins."""
    order = Window.partitionBy("event_id").orderBy("bronze_ingest_ts", "source_file", "bronze_id")
    ranked = events.withColumn("_copy", F.row_number().over(order))
    first = ranked.where(F.col("_copy") == 1).drop("_copy")
    others = ranked.where(F.col("_copy") > 1).drop("_copy")
    return first, others
