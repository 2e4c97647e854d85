"""Record shapes and per-event-type templates.

A template is the ordered list of ``(attribute name, value getter)`` for one
event type in one edition, compiled once from the registry. Building a record
is a dict comprehension over it plus the shape wrapper:

* flat:     ``{"eventType": t, <attributes>}``
* envelope: ``{"traceUuid": u, "event": {<attributes>},
              "metadata": {"eventType": t, "eventVersion": "1.0", "emittedAt": <iso>}}``

Editions: ``current`` = the family's common attributes + the event's current
attributes; ``legacy`` (site only) = ``actorUserId``, ``eventTime``, ``siteLuid``
+ the event's legacy attributes (``isError``, ``impersonatedUserId``,
``serviceName``, ``traceUuid`` ... as the registry lists them); ``full`` = the
union of both plus the common attributes (used for registry coverage).

What the registry learnt from the live feed (edition ``live_feed``: four common site attributes,
``vizql_http_request``, ``bridge_job``, ``add_delete_group_to_group_set``, ``login_authentication``) is
left out unless asked for (``live_feed=True``, the generator's ``--live-feed``), so the default output
stays what it was; a live-feed event type asked for by name carries its attributes and the live common
ones.
"""

from __future__ import annotations

import random
from functools import cache, lru_cache

from pipelines.activity_log.registry import common_attributes, event_specs

from .values import DAY_US, HOUR_US, Ctx, compile_getter, iso, new_uuid, time_variant
from .world import World, build_world

LEGACY_BASE = ("actorUserId", "eventTime", "siteLuid")
CONTENT_KINDS = (
    "view",
    "workbook",
    "datasource",
    "flow",
    "flow_draft",
    "metric",
    "collection",
    "column",
    "table",
    "database",
    "data_role",
    "published_connection",
    "dqi",
)
_KIND_BY_LUID = (
    ("metric", "metricLuid"),
    ("flow_draft", "flowDraftLuid"),
    ("flow", "flowLuid"),
    ("datasource", "datasourceLuid"),
    ("workbook", "workbookLuid"),
    ("collection", "collectionLuid"),
    ("column", "columnLuid"),
    ("table", "tableLuid"),
    ("database", "databaseLuid"),
    ("data_role", "dataRoleLuid"),
    ("published_connection", "publishedConnectionLuid"),
    ("dqi", "dataQualityIndicatorLuid"),
)
_SPEC_TYPES = {
    "int": "int",
    "bigint": "bigint",
    "boolean": "boolean",
    "double": "double",
    "string": "string",
    "timestamp": "timestamp",
}
LIVE_FEED = "live_feed"  # the registry's edition of what the live feed adds to the references


def live_feed_only(spec) -> bool:
    """An event type only the live feed documents (not in the bundled references)."""
    return LIVE_FEED in spec.editions and not ({"current", "legacy"} & set(spec.editions))


def generated_specs(live_feed: bool = False) -> dict:
    """{(family, event_type): EventSpec} the generator writes: the references' types, and the
    live feed's with ``live_feed``."""
    return {k: s for k, s in specs_by_type().items() if live_feed or not live_feed_only(s)}


@cache
def specs_by_type() -> dict:
    """{(family, event_type): EventSpec}."""
    return {(s.family, s.event_type): s for s in event_specs()}


@cache
def subject_kind(family: str, event_type: str) -> str:
    """What a record of this type is about, judged from the attributes it documents."""
    spec = specs_by_type()[(family, event_type)]
    names = {a.name for a in spec.attributes}
    if family == "tenant":
        return "tenant"
    if event_type in ("background_job", "bridge_job"):
        return "job"
    if "viewLuid" in names and ("sheetId" in names or "vizqlSessionId" in names):
        return "view"
    for kind, attr in _KIND_BY_LUID:
        if attr in names:
            return kind
    if "consecutiveFailureCount" in names:
        return "task"
    if "dayOfWeekMask" in names:
        return "schedule"
    if "siteEventLuid" in names:
        return "site"
    if "contentLuid" in names or "granteeLuid" in names:
        return "content"
    if "groupLuid" in names and "userLuid" in names:
        return "group_member"
    if "userLuid" in names or "targetUserLuid" in names:
        return "user"
    if "groupLuid" in names:
        return "group"
    if "projectLuid" in names:
        return "project"
    if "workbookId" in names:
        return "workbook"
    return "actor"


def pick_actor(site, rng: random.Random):
    return rng.choices(site.active_users, cum_weights=site.active_weights)[0]


def resolve(c: Ctx, kind: str) -> Ctx:
    """Fill the entity roles a record of ``kind`` needs that the caller left empty."""
    rng, site = c.rng, c.site
    if kind in CONTENT_KINDS:
        if c.subject is None:
            c.subject = rng.choice(site.content[kind])
        if c.old_owner is None:
            c.old_owner = rng.choice(site.users[:24])
        if c.src_project is None:
            c.src_project = rng.choice(site.projects)
        if c.user is None:
            c.user = c.subject.owner
    elif kind == "project":
        if c.subject is None:
            c.subject = rng.choice(site.projects[6:])  # nested ones: parentProjectLuid is a real LUID
        if c.old_owner is None:
            c.old_owner = rng.choice(site.admins)
        if c.src_project is None:
            c.src_project = rng.choice(site.projects[:6])
    elif kind in ("task", "job"):
        if c.task is None:
            c.task = rng.choice(site.tasks)
        if c.subject is None:
            c.subject = c.task.obj
    elif kind == "schedule":
        if c.subject is None:
            c.subject = c.schedule = rng.choice(site.schedules)
        if c.actor is None:
            c.actor = rng.choice(site.admins)
    elif kind == "site":
        c.subject = site
        if c.actor is None:
            c.actor = site.admins[0]
    elif kind == "content":
        if c.subject is None:
            pool = rng.choice(("workbook", "workbook", "datasource", "project", "view", "flow"))
            c.subject = rng.choice(site.content[pool])
        if c.content is None:
            c.content = c.subject
        if c.grantee is None:
            c.grantee = rng.choice(site.groups) if rng.random() < 0.5 else rng.choice(site.users)
        if c.old_owner is None:
            c.old_owner = rng.choice(site.users[:24])
        if c.src_project is None:
            c.src_project = rng.choice(site.projects)
        if c.user is None:
            c.user = c.subject.owner
    elif kind == "group_member":
        if c.group is None:
            c.group = rng.choice(site.groups[1:])
        if c.subject is None:
            c.subject = c.group
        if c.user is None:
            c.user = rng.choice(c.group.members)
        if c.actor is None:
            c.actor = rng.choice(site.admins)
    elif kind == "user":
        if c.user is None:
            c.user = rng.choice(site.users)
        if c.subject is None:
            c.subject = c.user
        if c.actor is None:
            c.actor = rng.choice(site.admins)
    elif kind == "group":
        if c.group is None:
            c.group = rng.choice(site.groups[1:])
        if c.subject is None:
            c.subject = c.group
        if c.actor is None:
            c.actor = rng.choice(site.admins)
    elif kind == "workbook":
        if c.subject is None:
            c.subject = rng.choice(site.content["workbook"])
    elif kind == "tenant":
        if c.user is None:
            c.user = rng.choice(site.users)
    if c.actor is None:
        c.actor = pick_actor(site, rng)
    return c


class Template:
    __slots__ = ("family", "event_type", "edition", "items", "has_event_type_attr", "trace_attr")

    def __init__(self, family, event_type, edition, items):
        self.family = family
        self.event_type = event_type
        self.edition = edition
        self.items = items
        self.has_event_type_attr = any(n == "eventType" for n, _ in items)
        self.trace_attr = any(n == "traceUuid" for n, _ in items)

    def attrs(self, c: Ctx) -> dict:
        return {n: g(c) for n, g in self.items}


def attribute_list(spec, edition: str, live_feed: bool = False) -> list[tuple[str, str]]:
    """``[(name, spark_type)]`` a record of ``spec`` carries in ``edition`` (or ``full``); with
    ``live_feed`` (always for a live-feed event type) the live feed's additions too. The edition
    ``live_feed`` is ``current`` with the additions."""
    live = live_feed or edition == LIVE_FEED or LIVE_FEED in spec.editions
    common = [(a.name, a.spark_type) for a in common_attributes(spec.family) if live or LIVE_FEED not in a.editions]
    if edition in ("current", LIVE_FEED):
        own = [
            (a.name, a.spark_type)
            for a in spec.attributes
            if "current" in a.editions or (live and LIVE_FEED in a.editions)
        ]
        return common + [x for x in own if x[0] not in dict(common)]
    if edition == "legacy":
        if "legacy" not in spec.editions:
            raise ValueError(f"{spec.event_type} has no legacy edition")
        # the family common attributes the legacy edition documents for this type (its own siteRoleId,
        # serviceName), the live feed's included: the legacy edition has them whatever ``live_feed`` says
        every = [(a.name, a.spark_type) for a in common_attributes(spec.family)]
        base = [x for x in every if x[0] in LEGACY_BASE + spec.legacy_common]
        own = [(a.name, a.spark_type) for a in spec.attributes if "legacy" in a.editions]
        return sorted(base + [x for x in own if x[0] not in LEGACY_BASE])
    if edition == "full":
        own = [(a.name, a.spark_type) for a in spec.attributes]
        # a common attribute only the live feed shares with the legacy edition (serviceName) is, without
        # the live feed's, what it was in the legacy edition: the event's own
        moved = [
            (a.name, a.spark_type)
            for a in common_attributes(spec.family)
            if a.name in spec.legacy_common and (a.name, a.spark_type) not in common
        ]
        return common + sorted(x for x in own + moved if x[0] not in dict(common))
    raise ValueError(f"unknown edition {edition!r}")


_templates: dict = {}


def template(spec, edition: str, live_feed: bool = False) -> Template:
    key = (spec.family, spec.event_type, edition, live_feed)
    t = _templates.get(key)
    if t is None:
        items = []
        for n, st in attribute_list(spec, edition, live_feed):
            getter = compile_getter(spec.family, n, _SPEC_TYPES[st])
            if (edition, n) == ("legacy", "siteRoleId"):
                getter = _legacy_code(getter)
            elif n == "serviceName" and edition in ("current", LIVE_FEED):
                getter = _service_getter(spec.event_type)
            items.append((n, getter))
        t = _templates[key] = Template(spec.family, spec.event_type, edition, items)
    return t


# The legacy edition numbers site roles its own way: current code -> the legacy code of that role
# (SiteAdministrator*, Publisher for Creator and ExplorerCanPublish, Interactor for Explorer, ...).
_LEGACY_SITE_ROLE = {0: 0, 1: 1, 2: 2, 3: 3, 7: 7, 8: 8, 9: 5, 10: 2, 11: 0}


def _service_getter(event_type: str):
    """The live feed's serviceName: the service that writes ``event_type``, the same for every record of
    it (no random draw, so the records around it stay what they were)."""
    if event_type.startswith(("vizql_", "hist_access_")):
        service = "vizqlserver"
    elif event_type in ("background_job", "bridge_job") or "extract" in event_type:
        service = "backgrounder"
    else:
        service = "vizportal"
    return lambda _c: service


def _legacy_code(getter):
    return lambda c: _LEGACY_SITE_ROLE.get(getter(c), 8)


def emitter_record(attrs: dict, trace: str, us: int) -> dict:
    """The envelope as Tableau's own emitter writes it: no ``metadata`` (the type is the file's
    ``eventType=`` folder), a nine-digit fraction on ``eventTime``, LUIDs in upper case."""
    event = {k: (v.upper() if isinstance(v, str) and k.endswith("Luid") else v) for k, v in attrs.items()}
    when = event.get("eventTime")
    if isinstance(when, str) and when.endswith("Z") and len(when) == 27:  # ….ffffffZ: three digits more
        event["eventTime"] = f"{when[:-1]}{(us * 7) % 1000:03d}Z"
    return {"traceUuid": trace.upper(), "event": event}


def shape_record(
    event_type: str, attrs: dict, shape: str, us: int, rng: random.Random, trace: str | None = None
) -> dict:
    if shape == "flat":
        rec = {"eventType": event_type}
        rec.update(attrs)
        if rec["eventType"] != event_type:  # an attribute literally named eventType
            rec["eventType"] = event_type
        return rec
    if shape == "envelope":
        if us % 3 == 0:  # a third of envelopes come from Tableau's emitter
            trace = trace or attrs.get("traceUuid") or new_uuid(rng)
            rng.randint(20_000, 4_000_000)  # the draw an emittedAt takes: the stream stays the same
            return emitter_record(attrs, trace, us)
        return {
            "traceUuid": trace or attrs.get("traceUuid") or new_uuid(rng),
            "event": attrs,
            "metadata": {
                "eventType": event_type,
                "eventVersion": "1.0",
                "emittedAt": iso(us + rng.randint(20_000, 4_000_000), 0),
            },
        }
    raise ValueError(f"unknown shape {shape!r}")


def render(spec, c: Ctx, edition: str = "current", shape: str = "flat", live_feed: bool = False) -> dict:
    """One record of ``spec`` from a resolved context."""
    c.event_type = spec.event_type
    c.family = spec.family
    t = template(spec, edition, live_feed)
    return shape_record(spec.event_type, t.attrs(c), shape, c.us, c.rng, c.trace)


# ---------------------------------------------------------------- public helpers
@lru_cache(maxsize=4)
def default_world(seed: int = 42) -> World:
    return build_world(seed)


def _context(spec, rng: random.Random, world: World | None) -> Ctx:
    world = world or default_world()
    site = rng.choice(world.sites)
    us = world.start_us + rng.randrange(7 * DAY_US)
    c = Ctx(world, site, None, rng, us, spec.family, spec.event_type)
    c.variant = time_variant(rng)
    resolve(c, subject_kind(spec.family, spec.event_type))
    return c


def build_record(
    spec, rng: random.Random, shape: str = "flat", edition: str = "current", world: World | None = None
) -> dict:
    """One record of ``spec`` with every attribute of ``edition`` filled with a typed value.

    ``world`` defaults to the seed-42 world; entities are drawn from it with ``rng``.
    """
    if edition not in ("current", "legacy", LIVE_FEED):
        raise ValueError(f"unknown edition {edition!r}")
    if edition == "legacy" and (spec.family != "site" or "legacy" not in spec.editions):
        raise ValueError(f"{spec.family}/{spec.event_type} has no legacy edition")
    c = _context(spec, rng, world)
    return render(spec, c, edition, shape)


def full_record(spec, rng: random.Random, edition: str | None = None, world: World | None = None) -> dict:
    """A flat record carrying the union of every attribute of every edition of ``spec``
    plus the family's common attributes, the live feed's included (``edition`` only validates
    the request)."""
    if edition is not None and edition not in spec.editions:
        raise ValueError(f"{spec.event_type} has no {edition} edition")
    c = _context(spec, rng, world)
    return render(spec, c, "full", "flat", live_feed=True)


__all__ = [
    "build_record",
    "full_record",
    "render",
    "resolve",
    "template",
    "subject_kind",
    "attribute_list",
    "shape_record",
    "specs_by_type",
    "generated_specs",
    "live_feed_only",
    "pick_actor",
    "HOUR_US",
]
