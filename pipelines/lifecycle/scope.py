"""What a bronze Activity Log row is about, read from the row itself: its time, its site and whether it
names a person. Legal holds and retention rules select rows by these, in bronze and for its readers."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from pipelines.activity_log import native_lines


def _field(name: str) -> Column:
    """A field of the raw line (a flat record's, an emitter envelope's event's, or a native log line's
    event's): the content the landing hash covers, not bronze's routing columns beside it, which no
    hash does."""
    return F.coalesce(
        F.get_json_object("raw_line", f"$.{name}"),
        F.get_json_object("raw_line", f"$.event.{name}"),
        F.get_json_object("raw_line", f"$.v.{name}"),
    )


def event_time() -> Column:
    """The record's ``eventTime`` as silver types it, or a native log line's local ``ts`` in the zone of
    its copy (NULL when neither casts: such a row is never expired)."""
    return F.coalesce(
        _field("eventTime").try_cast("timestamp"),
        F.when(
            F.get_json_object("raw_line", "$.v").isNotNull(),
            native_lines.utc_time(F.get_json_object("raw_line", "$.ts"), F.col("source_file")),
        ),
    )


def event_type() -> Column:
    """The record's ``eventType`` (an envelope's metadata may hold it), else the one its folder gave."""
    return F.coalesce(_field("eventType"), F.get_json_object("raw_line", "$.metadata.eventType"), F.col("event_type"))


def site_luid() -> Column:
    """The record's ``siteLuid`` (a flat record's, an emitter envelope's or a native line's event's), lower
    case; else a native line's ``site`` when it is a LUID (as silver reads it)."""
    return F.coalesce(
        F.lower(_field("siteLuid")),
        F.when(
            F.get_json_object("raw_line", "$.v").isNotNull(),
            native_lines.site_luid(F.get_json_object("raw_line", "$.site")),
        ),
    )


def names_any(values: list[str]) -> Column:
    """The raw line holds one of ``values`` (LUIDs and e-mails, compared in lower case)."""
    text = F.lower(F.col("raw_line"))
    hit = F.lit(False)
    for value in values:
        hit = hit | text.contains(value.lower())
    return hit
