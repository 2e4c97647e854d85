"""Tableau Server's native JSON log lines, ``{"ts", "pid", …, "site", "user", "k", "v"}``: what a
record of that shape says beside its event ``v``, read the same way by silver and by legal holds
and retention.

``ts`` is the server's local time without an offset: it is read in the zone the line's copy was
made with, which its folder names (``tz=<zone>``, ``/`` written as ``~``), so a later change of
``sources.server_logs.timezone`` does not move events copied before. ``site`` names the site when
it is a LUID (it can be a site's name: then the event's own ``siteLuid`` is all there is).
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from pipelines.lake.sql_text import UUID_PATTERN

_ZONE_FOLDER = r"/tz=([^/]+)/"


def zone_folder(zone: str) -> str:
    """The folder of the copies made with ``zone``."""
    return "tz=" + zone.replace("/", "~")


def zone_of(source_file: Column) -> Column:
    """The zone a copy's folder names; NULL for a file outside such a folder."""
    return F.replace(F.nullif(F.regexp_extract(source_file, _ZONE_FOLDER, 1), F.lit("")), F.lit("~"), F.lit("/"))


def utc_time(ts: Column, source_file: Column) -> Column:
    """``ts`` (local wall-clock text) as UTC; NULL when the zone is unknown or ``ts`` no time. The
    session's zone is UTC, so the cast keeps the wall clock as it is before the shift."""
    return F.to_utc_timestamp(ts.try_cast("timestamp"), zone_of(source_file))


def site_luid_sql(site: str) -> str:
    """SQL: the line's ``site`` (an expression) in lower case when it is a LUID, else NULL."""
    return f"CASE WHEN {site} RLIKE '{UUID_PATTERN}' THEN lower({site}) END"


def site_luid(site: Column) -> Column:
    return F.when(site.rlike(UUID_PATTERN), F.lower(site))
