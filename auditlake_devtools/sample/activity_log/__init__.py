"""Synthetic Tableau Activity Log, delivered the way extractors deliver it.

Modules:

* :mod:`.world`     the coherent entities (sites, users, groups, content, tasks, tenant)
* :mod:`.values`    typed attribute values and ISO-8601 times
* :mod:`.records`   per-type templates, record shapes (flat / envelope), editions
* :mod:`.stories`   story lines (sessions, jobs, permission edits, PATs, ...)
* :mod:`.dirty`     what real feeds contain besides clean records
* :mod:`.writer`    hourly partitioned NDJSON files, some gzip-compressed
* :mod:`.snapshots` hourly Parquet entity snapshots of each site, beside the log
* :mod:`.generator` the hour-by-hour run
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from .dirty import DIRTY_KINDS, FILE_KINDS, RECORD_KINDS, UNKNOWN_TYPES
from .generator import DEFAULT_START, Generator
from .records import attribute_list, build_record, full_record
from .snapshots import ENTITY_TYPES, SCHEMAS, SNAPSHOT_DIRTY_KINDS, silent_roles
from .world import World, build_world


def generate_activity_log(
    out_dir: Path,
    events: int,
    seed: int = 42,
    start: datetime | None = None,
    days: int = 7,
    dirty: bool = False,
    progress: Callable[[str], None] | None = None,
    layout: str = "auditlake",
    live_feed: bool = False,
    security_stories: bool = False,
    snapshots: bool = False,
    snapshot_every: int = 1,
    world: World | None = None,
) -> dict:
    """Write an Activity Log under ``out_dir`` as Tableau delivers it; return a summary.

    Layout: ``site/siteLuid=<luid>/y=YYYY/m=MM/d=DD/h=HH/eventType=<type>/part-NNNNN.json[.gz]``
    and ``tenant/tenantId=<id>/...`` the same way (``layout="auditlake"``), or Tableau's own
    ``date_first`` / ``schema_first`` trees (``pod=…/siteLuid=…/…``, see ``writer.py``: the same
    files, at other paths); one NDJSON record per line, UTF-8, ``\\n``
    line ends; about one file in five gzip-compressed. The hour folder is the hour of the
    record's ``eventTime`` (late records excepted). One file per (site or tenant, hour, event
    type) and run, plus ``part-00001`` files for redeliveries when ``dirty``.

    ``events`` is the number of clean records aimed at. On top of the background volume and
    the story lines, every event type of both families is written at least once with every
    documented attribute filled (one record with the union of the attributes of all
    editions, plus one legacy-edition record for each type that has a legacy edition), and
    every scheduled story appears at least once: for small ``events`` (below roughly 1,000)
    the real count exceeds ``events``; above that it equals ``events`` exactly. ``dirty``
    adds records (duplicates, late, unknown types, ...) and file damage on top, counted in
    ``summary["dirty"]``; the clean records are the same as without ``dirty``.

    ``start`` (default 2026-06-01T00:00:00Z; naive values are taken as UTC) and ``days`` give
    the window of event times. Same arguments, same bytes.

    ``live_feed`` adds what the live feed carries beyond the bundled references (the registry's
    ``live_feed`` edition): ``eventOutcome``, ``eventOutcomeReason``, ``eventProcessedTime`` and
    ``serviceName`` on every current-edition site record, ``vizql_http_request`` records for the views
    of sign-in sessions, ``bridge_job`` runs beside some background jobs, ``login_authentication``
    for some sign-ins (successes, failures with the documented outcomes) and
    ``add_delete_group_to_group_set`` after some group membership changes. Off, the output is what it
    was.

    ``security_stories`` adds a situation for each detection report (stories.SECURITY_STORIES: a
    privilege escalation, an impersonation, a mass download, a token used after its owner was
    deleted, sign-ins from a new address and browser, security changes at night). Off, the output
    is what it was.

    ``snapshots`` also writes what Cloud Manager delivers beside the log: each site's entities
    (``snapshots.ENTITY_TYPES``: users, groups, group_members, workbooks, datasources) as one
    Parquet file per (site, hour, entity type), ``…/h=HH/entityType=<type>/part-00000.parquet``
    where the log has ``eventType=`` (in ``schema_first``, before the hour), at the window's start
    and every ``snapshot_every`` hours up to and including its end. A snapshot at H is the state
    after every story of the hours before H, so it agrees with the log; ``users`` gains a
    ``locale`` column from the window's second half on. With ``dirty`` as well: one
    ``part-00001.parquet`` that is not Parquet (``dirty["poison_snapshot"]``) and one silent
    change, a user's site role changed in the snapshots and nowhere in the log
    (``silent_changes``). The Activity Log is the same bytes with snapshots on or off.

    Summary: ``files``, ``gzip_files``, ``lines`` (every physical line: the count of ``\\n``
    bytes of the decompressed file, plus one for a final line without a newline),
    ``records`` (JSON records written, duplicates included), ``bytes`` (on disk),
    ``by_family``, ``by_shape``, ``by_edition``, ``event_types`` (sorted, unknown dirty types
    included), ``dirty`` ({kind: count}, all zero when clean; ``poison_snapshot`` too with
    snapshots), ``seed``, ``start``, ``end``, ``snapshots`` (``files``: Parquet snapshot files, the
    poison one not counted; ``rows``; ``by_entity``: {type: rows}; ``hours``: snapshot hours; all
    zero without snapshots) and ``silent_changes`` ([{``site_luid``, ``user_luid``, ``old_role``,
    ``new_role``, ``hour``}], empty unless dirty with snapshots). ``files`` and the counts
    before it are the Activity Log's.
    ``progress`` is called with a short line every 100,000 records.

    ``world`` is the one the log is written of, ``build_world(seed, start)`` when None (pass that
    one for the same bytes). The stories change it as they run: afterwards it holds the sites as
    they stand at the window's end, as an inventory taken then would read them (the silent change
    excepted: it is in the snapshots only, see :func:`.snapshots.silent_roles`).
    """
    start = start or DEFAULT_START
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return Generator(
        out,
        int(events),
        seed,
        start,
        days,
        dirty,
        progress,
        layout,
        live_feed,
        security_stories,
        snapshots,
        int(snapshot_every),
        world,
    ).run()


__all__ = [
    "generate_activity_log",
    "build_record",
    "full_record",
    "attribute_list",
    "build_world",
    "silent_roles",
    "DIRTY_KINDS",
    "ENTITY_TYPES",
    "SCHEMAS",
    "SNAPSHOT_DIRTY_KINDS",
    "FILE_KINDS",
    "RECORD_KINDS",
    "UNKNOWN_TYPES",
    "DEFAULT_START",
]
