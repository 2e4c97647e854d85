"""What a bronze Activity Log row is about, read from the row itself: its time, its site and whether it
names a person. Legal holds and retention rules select rows by these, in bronze and for its readers."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


def event_time() -> Column:
    """The record's ``eventTime`` as silver types it (NULL when it does not cast: such a row is never
    expired)."""
    return F.col("event_time").try_cast("timestamp")


def site_luid() -> Column:
    """The record's ``siteLuid`` (a flat record's, or an emitter envelope's event's), lower case."""
    return F.lower(
        F.coalesce(F.get_json_object("raw_line", "$.siteLuid"), F.get_json_object("raw_line", "$.event.siteLuid"))
    )


def names_any(values: list[str]) -> Column:
    """The raw line holds one of ``values`` (LUIDs and e-mails, compared in lower case)."""
    text = F.lower(F.col("raw_line"))
    hit = F.lit(False)
    for value in values:
        hit = hit | text.contains(value.lower())
    return hit
