"""Bronze rows -> typed silver events and quarantine rows (DataFrame in, DataFrames out; no I/O).

Every bronze row ends in exactly one place: a silver event, a duplicate of one, or
quarantine with a machine-readable reason. Values that do not fit their documented
type, and attributes the registry does not document for the event type, are kept
in ``_rescued_data`` (a JSON object of their raw text) and the row still lands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from pipelines.activity_log import native_lines
from pipelines.activity_log.bronze.rows import strip_bom
from pipelines.activity_log.silver.plan import (
    UUID_VALUE_REGEX,
    FamilyPlan,
    family_plan,
    wide_schema_ddl,
)
from pipelines.lake.sql_text import sql_string

# Quarantine reasons (machine-readable).
BLANK_LINE = "blank_line"
MALFORMED_JSON = "malformed_json"
MISSING_EVENT_TYPE = "missing_event_type"
UNKNOWN_EVENT_TYPE = "unknown_event_type"
BAD_EVENT_TIME = "bad_event_time"
EVENT_TYPE_MISMATCH = "event_type_mismatch"
# A batch a quality gate stopped, set aside whole by the operator's release or after its hold.
GATE_STOPPED = "gate_stopped"

LINEAGE_COLUMNS = ["bronze_id", "source_file", "bronze_run_id", "bronze_ingest_ts"]
# A native log line's own fields beside its event ``v``: its local time and its site.
NATIVE_LINE_FIELDS = ("v", "ts", "site")


@dataclass(frozen=True)
class RowRule:
    """A check on one typed row (the quality gate's row expectations: ``pipelines.quality.suites.row_rules``):
    a row it ``rejects`` goes to quarantine with its ``key`` as the reason and ``detail`` as the detail."""

    key: str
    rejects: Column
    detail: Column


@dataclass
class SilverFrames:
    events: DataFrame  # typed rows, one per bronze row that is an event (duplicates not yet removed)
    quarantine: DataFrame


def _canonical_event_type(plan: FamilyPlan, raw_type: str) -> Column:
    """The registry's name for ``raw_type`` (aliases resolved), NULL when the registry does not know it."""
    names = {e: e for e in plan.event_types} | dict(plan.aliases)
    lookup = _sql_map({k: sql_string(v) for k, v in names.items()})
    return F.expr(f"try_element_at({lookup}, `{raw_type}`)")


def _sql_map(entries: dict[str, str]) -> str:
    """A SQL map literal; values are SQL expressions. (Built as text: one call into the JVM,
    where thousands of Column objects through py4j would take seconds per batch.)"""
    return "map(" + ", ".join(f"{sql_string(k)}, {v}" for k, v in sorted(entries.items())) + ")"


def _sql_in(column: str, values) -> str:
    values = list(values)
    return f"{column} IN ({', '.join(sql_string(v) for v in values)})" if values else "FALSE"


def to_silver(bronze_rows: DataFrame, family: str) -> SilverFrames:
    """Split and type one family's bronze rows. ``bronze_rows`` has the bronze table's columns."""
    staged = stage(bronze_rows, family)
    return SilverFrames(events=events_of(staged), quarantine=quarantine_of(staged, family))


# what a staged row keeps beside the typed columns: its fate, and the bronze columns the quarantine and
# the gate's bronze rows check read (bronze_of: the batch is not read from bronze a second time)
_STAGE_EXTRAS = ("_reason", "_detail", "_bronze_event_type", "_quarantined_line", "_parse_status", "_content_hash")


def stage(bronze_rows: DataFrame, family: str, rules: Sequence[RowRule] = ()) -> DataFrame:
    """One pass over a batch: every row typed, with its quarantine reason (NULL for an event).

    One frame serves both outputs so a batch is parsed and typed once; the raw line is kept
    only for rows that go to quarantine. ``rules``: checks on the typed row (the quality gate's row
    expectations); the first a row fails sets it aside, its key the reason."""
    rows = classify(bronze_rows, family).selectExpr(
        "*",
        "event_type AS _bronze_event_type",
        "parse_status AS _parse_status",
        "content_hash AS _content_hash",
    )
    keep = tuple(c for c in _STAGE_EXTRAS if c != "_quarantined_line") + ("raw_line",)
    typed = set_aside(_type_events(rows, family_plan(family), keep=keep), rules)
    return typed.withColumn("_quarantined_line", F.when(F.col("_reason").isNotNull(), F.col("raw_line"))).drop(
        "raw_line"
    )


def set_aside(typed: DataFrame, rules: Sequence[RowRule]) -> DataFrame:
    """``typed`` with the rows a rule rejects given a quarantine reason (rows already quarantined keep
    theirs): a row one check rejects is set aside and the rest of its batch goes on."""
    if not rules:
        return typed
    reason, detail = F.col("_reason"), F.col("_detail")
    new_reason = F.when(reason.isNotNull(), reason)
    new_detail = F.when(reason.isNotNull(), detail)
    for rule in rules:
        new_reason = new_reason.when(rule.rejects, F.lit(rule.key))
        new_detail = new_detail.when(rule.rejects, rule.detail)
    return typed.withColumns({"_reason": new_reason, "_detail": new_detail})  # both read the reason before


def events_of(staged: DataFrame) -> DataFrame:
    return staged.where(F.col("_reason").isNull()).drop(*_STAGE_EXTRAS)


def bronze_of(staged: DataFrame) -> DataFrame:
    """The staged batch's bronze columns, one row per bronze row (the raw line of quarantined rows only)."""
    return staged.select(
        "bronze_id",
        "source_file",
        F.col("bronze_run_id").alias("run_id"),
        F.col("bronze_ingest_ts").alias("ingest_ts"),
        F.col("_content_hash").alias("content_hash"),
        F.col("_parse_status").alias("parse_status"),
        F.col("_bronze_event_type").alias("event_type"),
        F.col("_quarantined_line").alias("raw_line"),
    )


def quarantine_of(staged: DataFrame, family: str) -> DataFrame:
    return staged.where(F.col("_reason").isNotNull()).select(
        "bronze_id",
        F.lit(family).alias("family"),
        F.col("_reason").alias("reason"),
        F.col("_detail").alias("detail"),
        F.col("_bronze_event_type").alias("event_type"),
        F.col("_quarantined_line").alias("raw_line"),
        "source_file",
        "bronze_run_id",
        "bronze_ingest_ts",
    )


def classify(bronze_rows: DataFrame, family: str) -> DataFrame:
    """Parse each bronze row once and give it a quarantine reason (NULL for a real event)."""
    plan = family_plan(family)
    rows = bronze_rows.select(
        "bronze_id",
        "raw_line",
        "parse_status",
        "record_shape",
        "event_type",
        "event_type_from_folder",
        "source_file",
        "content_hash",
        F.col("run_id").alias("bronze_run_id"),
        F.col("ingest_ts").alias("bronze_ingest_ts"),
    )
    line = F.col("raw_line")
    parsable = strip_bom(line)
    # One parse of the line for flat records; envelopes parse their event object a second time.
    # The envelope's event object is parsed with the same struct type, so a flat record's attributes
    # are the top-level struct itself (no copy of ~250 fields per row).
    wide = wide_schema_ddl(plan, extra=("event", "metadata") + NATIVE_LINE_FIELDS)
    is_envelope = F.col("record_shape") == "envelope"
    is_native = F.col("record_shape") == "native"
    rows = (
        rows.withColumn("_top", F.from_json(parsable, wide))
        .withColumn(
            "_attrs",
            F.when(is_envelope, F.from_json(F.col("_top.event"), wide))
            .when(is_native, F.from_json(F.col("_top.v"), wide))
            .otherwise(F.col("_top")),
        )
        .withColumn(
            "_attrs_json",
            F.when(is_envelope, F.col("_top.event")).when(is_native, F.col("_top.v")).otherwise(parsable),
        )
        .withColumn("_canonical_type", _canonical_event_type(plan, "event_type"))
        .withColumn("_folder_type", F.nullif(F.regexp_extract("source_file", r"/eventType=([^/]+)/", 1), F.lit("")))
    )
    # Nine fractional digits (Tableau's emitter) cast too: Spark keeps the microseconds. A native
    # line without the event's own eventTime has its ``ts``: the server's wall clock, read in the
    # zone its copy's folder names (the session's zone is UTC, so the cast keeps the wall clock).
    local_ts = native_lines.utc_time(F.col("_top.ts"), F.col("source_file"))
    rows = rows.withColumn(
        "event_time",
        F.coalesce(
            F.col("_attrs.eventTime").try_cast("timestamp"),
            F.when(is_native & F.col("_attrs.eventTime").isNull(), local_ts),
        ),
    )
    # The record (or its metadata) and its eventType= folder name different types: neither is trusted.
    folder_canonical = F.coalesce(_canonical_event_type(plan, "_folder_type"), F.col("_folder_type"))
    mismatch = (
        ~F.coalesce(F.col("event_type_from_folder"), F.lit(False))
        & F.col("_folder_type").isNotNull()
        & (folder_canonical != F.coalesce(F.col("_canonical_type"), F.col("event_type")))
    )

    reason = (
        F.when(F.col("parse_status") == "blank", F.lit(BLANK_LINE))
        .when(F.col("parse_status") != "ok", F.lit(MALFORMED_JSON))
        .when(F.col("event_type").isNull(), F.lit(MISSING_EVENT_TYPE))
        .when(mismatch, F.lit(EVENT_TYPE_MISMATCH))
        .when(F.col("_canonical_type").isNull(), F.lit(UNKNOWN_EVENT_TYPE))
        .when(F.col("event_time").isNull(), F.lit(BAD_EVENT_TIME))
    )
    detail = (
        F.when(reason == UNKNOWN_EVENT_TYPE, F.concat(F.lit("event type not in the registry: "), F.col("event_type")))
        .when(
            (reason == BAD_EVENT_TIME) & is_native & F.col("_attrs.eventTime").isNull(),
            F.concat(
                F.lit("no eventTime, and the line's ts is local time of an unknown zone "),
                F.lit("(Tableau Server's logs are copied with sources.server_logs.timezone): "),
                F.coalesce(F.col("_top.ts"), F.lit("(missing)")),
            ),
        )
        .when(
            reason == BAD_EVENT_TIME,
            F.concat(F.lit("eventTime not a timestamp: "), F.coalesce(F.col("_attrs.eventTime"), F.lit("(missing)"))),
        )
        .when(reason == MISSING_EVENT_TYPE, F.lit("no eventType in the record, its metadata or its folder"))
        .when(
            reason == EVENT_TYPE_MISMATCH,
            F.concat(
                F.lit("the record says "),
                F.col("event_type"),
                F.lit(", its eventType= folder says "),
                F.col("_folder_type"),
            ),
        )
        .when(reason == MALFORMED_JSON, F.lit("line is not a JSON object"))
        .when(reason == BLANK_LINE, F.lit("empty line"))
    )
    return rows.withColumn("_reason", reason).withColumn("_detail", detail)


def _type_events(rows: DataFrame, plan: FamilyPlan, keep: tuple[str, ...] = ()) -> DataFrame:
    """Typed columns, rescue and identity, as SQL text (see ``_sql_map`` for why text).

    Written for speed on rows that carry a few dozen of a family's ~250 attributes: each column
    tests its raw value for NULL first (an absent attribute costs one check), and only columns whose
    cast can fail (not strings) are checked for values to rescue. One projection types, the next
    adds the event id; nothing per attribute is materialised in between."""
    etype = "`_canonical_type`"
    typed: list[str] = []
    bad_names: list[str] = []
    bad_values: list[str] = []
    bad_conditions: list[str] = []
    for col in (c for c in plan.columns if c.attribute != "eventTime"):
        raw = f"`_attrs`.`{col.attribute}`"
        if col.identifier:
            raw = _lower_uuid(raw)
        if col.attribute == "eventType":
            # In a flat record the top-level eventType names the event; only an envelope's (or a
            # native line's) event object can carry the documented attribute of that name.
            raw = f"CASE WHEN record_shape IN ('envelope', 'native') THEN {raw} END"
        elif col.attribute == "siteLuid":
            # One Server hosts many sites: an event without its siteLuid has its native line's site (a LUID).
            site = native_lines.site_luid_sql("`_top`.`site`")
            raw = f"coalesce({raw}, CASE WHEN record_shape = 'native' THEN {site} END)"
        applies = "TRUE" if col.common else _sql_in(etype, col.event_types)
        if col.common or col.uniform:
            fits = f"try_cast({raw} AS {col.physical_type}) IS NOT NULL"
            can_fail = col.physical_type != "string"
        else:  # one name, several documented types: check against this event type's own
            arms = " ".join(
                f"WHEN {_sql_in(etype, [e for e, t in col.types_by_event if t == spark_type])} "
                f"THEN try_cast({raw} AS {spark_type}) IS NOT NULL"
                for spark_type in sorted({t for _, t in col.types_by_event})
            )
            fits = f"CASE {arms} ELSE FALSE END"
            can_fail = True
        if col.common:
            typed.append(f"try_cast({raw} AS {col.physical_type}) AS `{col.column}`")
        elif col.uniform:
            typed.append(
                f"CASE WHEN {raw} IS NOT NULL AND {applies} THEN try_cast({raw} AS {col.physical_type}) END"
                f" AS `{col.column}`"
            )
        else:
            typed.append(
                f"CASE WHEN {raw} IS NOT NULL AND {fits} THEN try_cast({raw} AS {col.physical_type}) END"
                f" AS `{col.column}`"
            )
        if can_fail:  # a string always casts to string: nothing to rescue
            bad = f"{raw} IS NOT NULL AND {applies} AND NOT ({fits})"
            bad_conditions.append(bad)
            bad_names.append(f"CASE WHEN {bad} THEN {sql_string(col.attribute)} END")
            bad_values.append(f"CASE WHEN {bad} THEN {raw} END")

    known = _sql_map(
        {e: "array(" + ", ".join(sql_string(k) for k in keys + ("eventType",)) + ")" for e, keys in plan.keys_by_event}
    )
    unknown_keys = f"array_except(json_object_keys(`_attrs_json`), try_element_at({known}, {etype}))"
    edition = _edition_sql(plan, etype)
    rescued_map = (
        "map_concat("
        f"  CASE WHEN size({unknown_keys}) > 0 THEN map_filter(from_json(`_attrs_json`, 'map<string,string>'),"
        f"    (k, v) -> array_contains({unknown_keys}, k)) ELSE map() END,"
        f"  map_from_arrays(array_compact(array({', '.join(bad_names) or 'CAST(NULL AS STRING)'})),"
        f"                  array_compact(array({', '.join(bad_values) or 'CAST(NULL AS STRING)'})))"
        ")"
    )
    # map_filter and array_compact are higher-order functions, which Spark evaluates without code
    # generation (with everything below them): run them only for the rare row with something to rescue.
    anything_bad = " OR ".join(f"({b})" for b in bad_conditions) or "FALSE"
    rescued = f"CASE WHEN size({unknown_keys}) > 0 OR {anything_bad} THEN nullif(to_json({rescued_map}), '{{}}') END"
    typed_frame = rows.selectExpr(
        f"{etype} AS event_type",
        "event_time",
        "to_date(event_time) AS event_date",
        f"{sql_string(plan.family)} AS family",
        "record_shape",
        f"{edition} AS edition",
        *typed,
        f"CASE WHEN record_shape = 'envelope' THEN {_lower_uuid('`_top`.`traceUuid`')} END AS envelope_trace_uuid",
        "CASE WHEN record_shape = 'envelope' THEN get_json_object(`_top`.`metadata`, '$.eventVersion') END"
        " AS envelope_event_version",
        f"{rescued} AS `_rescued_data`",
        *LINEAGE_COLUMNS,
        *keep,
    )
    # Same event, same id: the typed content (not the record shape, file or envelope) decides.
    content = "to_json(struct(" + ", ".join(f"`{c.column}`" for c in plan.columns if c.attribute != "eventTime") + "))"
    event_id = (
        f"sha2(concat_ws('\\u0001', family, event_type, date_format(event_time, \"yyyy-MM-dd'T'HH:mm:ss.SSSSSS\"), "
        f"{content}, coalesce(`_rescued_data`, '')), 256) AS event_id"
    )
    return typed_frame.selectExpr(event_id, "*")


def _lower_uuid(raw: str) -> str:
    """``raw`` in lower case when it is a UUID (or a list of them), as it came otherwise. A value
    already in lower case skips the regular expression (most do: 10-15% of a large batch's typing)."""
    return (
        f"CASE WHEN {raw} = lower({raw}) THEN {raw} "
        f"WHEN {raw} RLIKE {sql_string(UUID_VALUE_REGEX)} THEN lower({raw}) ELSE {raw} END"
    )


def _edition_sql(plan: FamilyPlan, etype: str) -> str:
    """'legacy' for a record of a type the legacy edition documents that carries none of the
    attributes only a current record of that type carries; 'current' otherwise."""
    if plan.family != "site" or not plan.legacy_event_types:
        return "'current'"
    by_markers: dict[tuple[str, ...], list[str]] = {}
    for event_type in plan.legacy_event_types:
        by_markers.setdefault(plan.legacy_markers(event_type), []).append(event_type)
    arms = " ".join(
        f"WHEN {_sql_in(etype, types)} THEN " + (" AND ".join(f"`_attrs`.`{n}` IS NULL" for n in markers) or "TRUE")
        for markers, types in sorted(by_markers.items())
    )
    return f"CASE WHEN CASE {arms} ELSE FALSE END THEN 'legacy' ELSE 'current' END"


NEW, SAME_BATCH, ALREADY_IN_SILVER, REPLAYED = "new", "same_batch", "already_in_silver", "replayed"


def decide(events: DataFrame, existing: DataFrame) -> DataFrame:
    """(bronze_id, decision) for every event of a batch, on narrow columns only.

    ``existing``: (event_id, bronze_id) already in silver. The earliest landed copy of an
    event_id in the batch is its candidate, the other copies are ``same_batch`` duplicates; a
    candidate silver already holds under another bronze_id is ``already_in_silver``; under its
    own bronze_id it is ``replayed`` (written by an earlier attempt of this batch)."""
    keys = events.select("event_id", "bronze_id", "bronze_ingest_ts", "source_file")
    order = Window.partitionBy("event_id").orderBy("bronze_ingest_ts", "source_file", "bronze_id")
    ranked = keys.withColumn("_copy", F.row_number().over(order))
    held = existing.select("event_id", F.col("bronze_id").alias("_existing"))
    decision = (
        F.when(F.col("_copy") > 1, SAME_BATCH)
        .when(F.col("_existing").isNull(), NEW)
        .when(F.col("_existing") == F.col("bronze_id"), REPLAYED)
        .otherwise(ALREADY_IN_SILVER)
    )
    return ranked.join(held, "event_id", "left").select("bronze_id", "event_id", decision.alias("decision"))
