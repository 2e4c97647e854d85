"""Typed attribute values.

Times are integers of microseconds since the Unix epoch (UTC) inside the
generator and become ISO-8601 strings only when a record is built. Every
attribute name of the registry has a getter here that reads the entities of a
:class:`Ctx` (the site, the acting user, the subject of the event, ...); names
without a getter fall back to a value made from the name and the documented
type, so a registry that grows still yields filled, typed records.
"""

from __future__ import annotations

import json
import random
import uuid
from datetime import UTC, datetime

from pipelines.activity_log.registry import common_attributes

# Site role names as the reference spells them out (the siteRoleId codes in the registry).
SITE_ROLE_NAMES = dict(next(a for a in common_attributes("site") if a.name == "siteRoleId").codes)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
HOUR_US = 3_600_000_000
DAY_US = 24 * HOUR_US
_hour_prefix: dict[int, str] = {}


def to_us(dt: datetime) -> int:
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    delta = dt - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _prefix(hour: int) -> str:
    p = _hour_prefix.get(hour)
    if p is None:
        p = datetime.fromtimestamp(hour * 3600, tz=UTC).strftime("%Y-%m-%dT%H:")
        _hour_prefix[hour] = p
    return p


def iso(us: int, variant: int = 0) -> str:
    """ISO-8601 UTC. variant 0: micros+Z, 1: no fraction+Z, 2: millis+Z, 3: micros+00:00."""
    sec, frac = divmod(us, 1_000_000)
    hour, rem = divmod(sec, 3600)
    m, s = divmod(rem, 60)
    p = _prefix(hour)
    if variant == 0:
        return f"{p}{m:02d}:{s:02d}.{frac:06d}Z"
    if variant == 1:
        return f"{p}{m:02d}:{s:02d}Z"
    if variant == 2:
        return f"{p}{m:02d}:{s:02d}.{frac // 1000:03d}Z"
    return f"{p}{m:02d}:{s:02d}.{frac:06d}+00:00"


def iso_micro(us: int) -> str:
    return iso(us, 0)


def time_variant(rng: random.Random) -> int:
    r = rng.random()
    return 0 if r < 0.8 else 1 if r < 0.9 else 2 if r < 0.95 else 3


def new_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


class Ctx:
    """Everything one record's values are drawn from."""

    __slots__ = (
        "world",
        "site",
        "actor",
        "subject",
        "user",
        "group",
        "content",
        "grantee",
        "new_owner",
        "old_owner",
        "src_project",
        "task",
        "schedule",
        "job",
        "rng",
        "us",
        "variant",
        "trace",
        "session",
        "family",
        "event_type",
        "token",
        "ip",
        "agent",  # a browser other than the actor's usual one
        "initiator",  # who acted, when not the actor (an admin acting as the user)
    )

    def __init__(self, world, site, actor, rng, us, family="site", event_type=""):
        self.world = world
        self.site = site
        self.actor = actor
        self.rng = rng
        self.us = us
        self.family = family
        self.event_type = event_type
        self.variant = 0
        self.subject = self.user = self.group = self.content = self.grantee = None
        self.new_owner = self.old_owner = self.src_project = self.task = None
        self.schedule = self.job = self.trace = self.session = self.token = self.ip = None
        self.agent = self.initiator = None


# ---------------------------------------------------------------- helpers
_WORDS = (
    "quarterly revenue pipeline forecast regional detail operations customer finance "
    "inventory churn trend summary audit metric certified daily weekly review dashboard"
).split()
_SERVICES = ["vizportal", "vizportal", "vizqlserver", "sitesaml", "backgrounder"]
_CAPABILITIES = [
    (1, "AddComment"),
    (2, "ChangeHierarchy"),
    (3, "ChangePermissions"),
    (4, "Delete"),
    (5, "ExportData"),
    (6, "ExportImage"),
    (7, "ExportXml"),
    (8, "Filter"),
    (9, "Read"),
    (10, "ShareView"),
    (11, "ViewComments"),
    (12, "ViewUnderlyingData"),
    (13, "WebAuthoring"),
    (14, "Write"),
    (15, "CreateRefreshMetrics"),
    (16, "RunExplainData"),
]


def sentence(rng: random.Random, n: int = 5) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n)).capitalize()


def _subject_owner(c: Ctx):
    s = c.subject
    return getattr(s, "owner", None) or c.actor


def _subject_project(c: Ctx):
    s = c.subject
    p = getattr(s, "project", None)
    return p if p is not None else c.site.projects[0]


def _workbook(c: Ctx):
    s = c.subject
    if s is not None and s.kind == "view":
        return s.parent
    if s is not None and s.kind == "workbook":
        return s
    if s is not None and s.kind == "metric":
        return s.parent.parent
    return c.site.content["workbook"][0]


def _view(c: Ctx):
    s = c.subject
    if s is not None and s.kind == "view":
        return s
    if s is not None and s.kind == "metric":
        return s.parent
    return _workbook(c).children[0]


def _user(c: Ctx):
    return c.user or c.actor


def _group(c: Ctx):
    return c.group or c.site.groups[1]


def _content(c: Ctx):
    return c.content or c.subject or c.site.content["workbook"][0]


def _content_type(c: Ctx) -> str:
    return {
        "workbook": "workbook",
        "view": "view",
        "datasource": "datasource",
        "flow": "flow",
        "project": "project",
        "metric": "metric",
        "flow_draft": "flow",
    }.get(_content(c).kind, "workbook")


def _grantee(c: Ctx):
    return c.grantee or c.actor


def _grantee_type(c: Ctx) -> str:
    return "group" if _grantee(c).__class__.__name__ == "Group" else "user"


def _new_owner(c: Ctx):
    return c.new_owner or _subject_owner(c)


def _old_owner(c: Ctx):
    return c.old_owner or c.actor


def _src_project(c: Ctx):
    return c.src_project or c.site.projects[0]


def _task(c: Ctx):
    if c.task is not None:
        return c.task
    return c.site.tasks[0]


def _schedule(c: Ctx):
    if c.schedule is not None:
        return c.schedule
    if c.subject is not None and c.subject.__class__.__name__ == "Schedule":
        return c.subject
    return _task(c).schedule


def _bigsize(c: Ctx) -> int:
    s = getattr(c.subject, "size", 0) or 0
    if c.rng.random() < 0.3:
        return s + 2**31 + c.rng.randrange(2**33)
    return s or c.rng.randint(1_000, 2**31 - 1)


def group_set(site, k: int) -> tuple[int, str]:
    """(id, LUID) of a site's ``k``-th group set: the world has no group sets of its own, so they are
    named from the site (the same ones in every run)."""
    return site.id * 100 + k + 1, _stable_uuid(f"{site.url}-group-set-{k}")


def _job(c: Ctx) -> dict:
    return c.job or {}


def _trace(c: Ctx) -> str:
    if c.trace is None:
        c.trace = new_uuid(c.rng)
    return c.trace


def _session(c: Ctx) -> str:
    if c.session is None:
        c.session = new_uuid(c.rng)
    return c.session


def _settings(c: Ctx, new: bool) -> str:
    t = c.world.tenant
    kind = "oidc" if "oidc" in c.event_type else "saml"
    cfg = {
        "enabled": True,
        "idpEntityId": f"https://idp.{c.site.domain}/{kind}/{t.id[:8]}",
        "signatureAlgorithm": "SHA256" if new else "SHA1",
        "certificateExpiresAt": "2027-03-01T00:00:00Z" if new else "2026-07-01T00:00:00Z",
    }
    return json.dumps(cfg, sort_keys=True, separators=(",", ":"))


_URL_PATHS = {
    "user_login_create_session": "auth/sessions",
    "update_session": "auth/sessions/current",
    "revoke_session": "auth/sessions/{id}",
    "batch_revoke_session": "users/{id}/sessions",
    "personal_access_token_login": "auth/pat/sessions",
    "create_personal_access_token": "pats",
    "revoke_personal_access_token": "pats/{id}",
    "update_personal_access_token": "pats/{id}",
    "list_personal_access_tokens": "pats",
    "batch_revoke_personal_access_token": "users/{id}/pats",
    "get_users": "users",
    "get_sites": "sites",
    "tcm_activity_log_access": "activitylog/events",
}


def _initiating_url(c: Ctx) -> str:
    path = _URL_PATHS.get(c.event_type, c.event_type.replace("_", "-"))
    return f"{c.world.tenant.uri}/api/v1/{path.replace('{id}', c.actor.tenant_user_id[:8])}"


def _ip(c: Ctx) -> str:
    return c.ip or c.actor.ip


def _stable_uuid(name: str) -> str:
    """A version-4-shaped UUID that is the same for the same ``name`` (no draw from the seed)."""
    return str(uuid.UUID(bytes=uuid.uuid5(uuid.NAMESPACE_DNS, name).bytes, version=4))


def _vizql_session(c: Ctx) -> str:
    """One VizQL session per sign-in session and view."""
    return uuid.uuid5(uuid.NAMESPACE_OID, f"{_session(c)}/{_view(c).luid}").hex.upper()


# ---------------------------------------------------------------- getters
# name -> f(ctx). Values are already of the right JSON type for the usual
# documented type; compile_getter() fixes the few names documented with two types.
G: dict = {
    # site common
    "actorUserId": lambda c: c.actor.id,
    "actorUserLuid": lambda c: c.actor.luid,
    "initiatingUserId": lambda c: (c.initiator or c.actor).id,
    "initiatingUserLuid": lambda c: (c.initiator or c.actor).luid,
    "licensingRoleName": lambda c: c.actor.licensing,
    "siteLuid": lambda c: c.site.luid,
    "siteRoleId": lambda c: c.actor.site_role_id,
    "systemAdminLevel": lambda c: c.actor.system_admin_level,
    "eventTime": lambda c: iso(c.us, c.variant),
    # legacy-only
    "isError": lambda c: c.rng.random() < 0.02,
    "impersonatedUserId": lambda c: c.actor.id,
    "serviceName": lambda c: c.rng.choice(_SERVICES),
    "traceUuid": _trace,
    # naming of the subject
    "name": lambda c: c.subject.name if c.subject is not None else c.site.name,
    "description": lambda c: getattr(c.subject, "description", "") or sentence(c.rng),
    "caption": lambda c: _view(c).name,
    "title": lambda c: _view(c).name if c.task is None else f"{c.task.type}: {c.task.obj.name}",
    "subtitle": lambda c: f"{_task(c).obj.kind.title()} on {_schedule(c).name}",
    "formerName": lambda c: (c.job or {}).get("formerName") or getattr(c.subject, "name", "x") + " (old)",
    "ownerLuid": lambda c: _subject_owner(c).luid,
    "ownerName": lambda c: _subject_owner(c).name,
    "projectLuid": lambda c: _subject_project(c).luid,
    "projectName": lambda c: _subject_project(c).name,
    "parentProjectLuid": lambda c: c.subject.parent.luid if getattr(c.subject, "parent", None) is not None else "",
    "repositoryUrl": lambda c: getattr(c.subject, "repo_url", "") or c.site.url,
    "revision": lambda c: getattr(c.subject, "revision", "1.0"),
    "siteName": lambda c: c.site.name,
    "urlNamespace": lambda c: c.site.url,
    "siteEventLuid": lambda c: new_uuid(c.rng),
    "createdAt": lambda c: iso_micro(
        (c.job or {}).get("created_us") or getattr(c.subject, "created_us", c.us - 30 * DAY_US)
    ),
    "updatedAt": lambda c: iso_micro(getattr(c.subject, "updated_us", c.us - DAY_US)),
    "publishedAt": lambda c: iso_micro(getattr(c.subject, "updated_us", c.us - DAY_US)),
    "firstPublishedAt": lambda c: iso_micro(getattr(c.subject, "created_us", c.us - 30 * DAY_US)),
    "lastPublishedAt": lambda c: iso_micro(getattr(c.subject, "updated_us", c.us - DAY_US)),
    "extractsRefreshedAt": lambda c: iso_micro(c.us - (c.us % HOUR_US) - 6 * HOUR_US),
    "extractsIncrementedAt": lambda c: iso_micro(c.us - (c.us % HOUR_US) - 30 * HOUR_US),
    "details": lambda c: (c.job or {}).get("details", "Extract operation completed"),
    "isFailure": lambda c: bool((c.job or {}).get("failed", False)),
    # views / workbooks
    "viewLuid": lambda c: _view(c).luid,
    "sheetId": lambda c: _view(c).name,
    "sheetName": lambda c: _view(c).name,
    "sheetType": lambda c: _view(c).sheet_type,
    "index": lambda c: _view(c).index,
    "fields": lambda c: _view(c).fields,
    "workbookLuid": lambda c: _workbook(c).luid,
    "workbookName": lambda c: _workbook(c).name,
    "workbookId": lambda c: _workbook(c).id,
    "contentVersion": lambda c: int(getattr(c.subject, "revision", "1.1").split(".")[1]) + 1,
    "documentVersion": lambda c: "18.1",
    "dataEngineExtracts": lambda c: _workbook(c).extract,
    "refreshableExtracts": lambda c: _workbook(c).extract,
    "incrementableExtracts": lambda c: _workbook(c).extract and _workbook(c).id % 3 == 0,
    "defaultViewIndex": lambda c: 0,
    "displayTabs": lambda c: _workbook(c).id % 2 == 0,
    "isPrivate": lambda c: False,
    "publishedAllSheets": lambda c: True,
    "modifiedByUserLuid": lambda c: _subject_owner(c).luid,
    "thumbUserLuid": lambda c: _subject_owner(c).luid,
    "viewCount": lambda c: 10 + (_workbook(c).id % 997),
    "size": lambda c: getattr(c.subject, "size", 0) or c.rng.randint(1000, 10_000_000),
    # data sources
    "datasourceLuid": lambda c: c.subject.luid,
    "certificationNote": lambda c: "Certified by Data Stewards" if c.subject.certified else "Not certified",
    "isCertified": lambda c: c.subject.certified,
    "remoteQueryAgentName": lambda c: "bridge-agent-01" if c.subject.id % 4 == 0 else "none",
    "usingRemoteQueryAgent": lambda c: c.subject.id % 4 == 0,
    "actorExternalId": lambda c: c.actor.email,
    "groupNames": lambda c: ", ".join(g.name for g in c.actor.groups),
    # flows, metrics, misc kinds
    "flowLuid": lambda c: c.subject.parent.luid if c.subject.kind == "flow_draft" else c.subject.luid,
    "flowDraftLuid": lambda c: c.subject.luid,
    "metricLuid": lambda c: c.subject.luid,
    "customizedViewLuid": lambda c: new_uuid(random.Random(c.subject.luid)),
    "suspendState": lambda c: 0,
    "collectionLuid": lambda c: c.subject.luid,
    "columnLuid": lambda c: c.subject.luid,
    "tableLuid": lambda c: c.subject.luid,
    "databaseLuid": lambda c: c.subject.luid,
    "dataRoleLuid": lambda c: c.subject.luid,
    "publishedConnectionLuid": lambda c: c.subject.luid,
    "activated": lambda c: True,
    "dataQualityIndicatorLuid": lambda c: c.subject.luid,
    "dataQualityType": lambda c: c.subject.name,
    "isActive": lambda c: True,
    "isSevere": lambda c: c.subject.name == "Deprecated",
    "message": lambda c: f"{c.subject.name}: see the data stewards channel",
    "userDisplayName": lambda c: _user(c).display,
    "sourceProjectLuid": lambda c: _src_project(c).luid,
    "sourceProjectName": lambda c: _src_project(c).name,
    "destinationProjectLuid": lambda c: _subject_project(c).luid,
    "destinationProjectName": lambda c: _subject_project(c).name,
    "controllingProjectLuid": lambda c: _subject_project(c).luid,
    "projectOperation": lambda c: c.rng.choice(["lock", "unlock"]),
    "state": lambda c: "Active",
    # the materialized-views events document an attribute literally named eventType
    "eventType": lambda c: c.event_type.split("_")[1].title(),
    # users, groups
    "userLuid": lambda c: _user(c).luid,
    "userId": lambda c: _user(c).id,
    "userName": lambda c: _user(c).name,
    "email": lambda c: _user(c).email,
    "formerEmail": lambda c: _user(c).email.replace("@", ".old@"),
    "siteAdminLevel": lambda c: 1 if _user(c).is_admin else 0,
    "forUserName": lambda c: _user(c).name,
    "siteRole": lambda c: SITE_ROLE_NAMES[_user(c).site_role_id],
    "targetUserId": lambda c: _user(c).id,
    "targetUserLuid": lambda c: _user(c).luid,
    "userOperation": lambda c: (c.job or {}).get("op", "create"),
    "actorUsername": lambda c: c.actor.name,
    "initiatingUsername": lambda c: c.actor.name,
    "groupLuid": lambda c: _group(c).luid,
    "groupId": lambda c: _group(c).id,
    "groupName": lambda c: _group(c).name,
    "groupDomain": lambda c: _group(c).domain,
    "groupOperation": lambda c: (c.job or {}).get("op", "add"),
    "actorGroupLuid": lambda c: _group(c).luid,
    "scopedMetricId": lambda c: new_uuid(c.rng),
    "subscriptionOperation": lambda c: c.rng.choice(["subscribe", "unsubscribe"]),
    # permissions
    "authorizableType": lambda c: _content_type(c).title() if _content_type(c) != "datasource" else "Datasource",
    "capabilityId": lambda c: (c.job or {}).get("cap", _CAPABILITIES[8])[0],
    "capabilityValue": lambda c: (c.job or {}).get("cap", _CAPABILITIES[8])[1],
    "contentId": lambda c: _content(c).id,
    "contentLuid": lambda c: _content(c).luid,
    "contentName": lambda c: _content(c).name,
    "contentType": _content_type,
    "granteeId": lambda c: _grantee(c).id,
    "granteeLuid": lambda c: _grantee(c).luid,
    "granteeType": _grantee_type,
    "granteeValue": lambda c: f"{_grantee_type(c)} {(c.job or {}).get('mode', 'allow')}",
    "permissionType": lambda c: (c.job or {}).get("ptype", "explicit"),
    "templateType": lambda c: c.rng.choice(["Workbook", "Datasource", "Flow"]),
    # ownership / containers
    "newOwnerId": lambda c: _new_owner(c).id,
    "newOwnerLuid": lambda c: _new_owner(c).luid,
    "newOwnerName": lambda c: _new_owner(c).name,
    "oldOwnerId": lambda c: _old_owner(c).id,
    "oldOwnerLuid": lambda c: _old_owner(c).luid,
    "oldOwnerName": lambda c: _old_owner(c).name,
    "newContactLuid": lambda c: _new_owner(c).luid,
    "newContactName": lambda c: _new_owner(c).name,
    "oldContactLuid": lambda c: _old_owner(c).luid,
    "oldContactName": lambda c: _old_owner(c).name,
    "newContainerLuid": lambda c: _subject_project(c).luid,
    "newContainerType": lambda c: "Project",
    "oldContainerLuid": lambda c: _src_project(c).luid,
    "oldContainerType": lambda c: "Project",
    # tokens
    "refreshTokenGuid": lambda c: c.token or new_uuid(c.rng),
    "deviceName": lambda c: c.rng.choice(["iPhone 15", "Pixel 8", "iPad Pro", "Tableau Desktop"]),
    "sessionId": _session,
    "clientId": lambda c: (c.job or {}).get("client") or f"pat-{c.actor.name}",
    "lastUsedAt": lambda c: iso_micro(c.us - c.rng.randint(1, 72) * HOUR_US),
    "expiresAt": lambda c: iso_micro(c.us + (c.job or {}).get("ttl_h", 24 * 180) * HOUR_US),
    # schedules and tasks
    "scheduleLuid": lambda c: _schedule(c).luid,
    "scheduleName": lambda c: _schedule(c).name,
    "active": lambda c: True,
    "dayOfMonthMask": lambda c: _schedule(c).day_of_month_mask,
    "dayOfWeekMask": lambda c: _schedule(c).day_of_week_mask,
    "startAtMinute": lambda c: _schedule(c).start_at_minute,
    "endAtMinute": lambda c: min(1439, _schedule(c).start_at_minute + 600),
    "endScheduleAt": lambda c: "2027-12-31T23:59:59Z",
    "isSerial": lambda c: _schedule(c).is_serial,
    "minuteInterval": lambda c: _schedule(c).minute_interval,
    "priority": lambda c: _task(c).priority if c.task is not None else _schedule(c).priority,
    "scheduleType": lambda c: _schedule(c).schedule_type,
    "scheduledAction": lambda c: 0 if _task(c).type != "SubscriptionTask" else 1,
    "taskLuid": lambda c: _task(c).luid,
    "taskId": lambda c: _task(c).id,
    "objLuid": lambda c: _task(c).obj.luid,
    "objName": lambda c: _task(c).obj.name,
    "objType": lambda c: _task(c).obj.kind.title() if _task(c).obj.kind != "datasource" else "Datasource",
    "objOwnerLuid": lambda c: _task(c).obj.owner.luid,
    "objOwnerName": lambda c: _task(c).obj.owner.name,
    "objRepositoryUrl": lambda c: _task(c).obj.repo_url,
    "objRevision": lambda c: _task(c).obj.revision,
    "objSize": lambda c: _task(c).obj.size,
    "creatorLuid": lambda c: _task(c).creator.luid,
    "creatorName": lambda c: _task(c).creator.name,
    "type": lambda c: _task(c).type,
    "consecutiveFailureCount": lambda c: _task(c).consecutive_failures,
    "historicalQueueTime": lambda c: c.rng.randint(1, 900),
    "historicalRunTime": lambda c: c.rng.randint(5, 3600),
    "lastSuccessCompletedAt": lambda c: iso_micro(_task(c).last_success_us),
    # background_job
    "jobId": lambda c: _job(c).get("id", 1),
    "jobLuid": lambda c: _job(c).get("luid") or new_uuid(c.rng),
    "jobType": lambda c: _job(c).get("type", "RefreshExtracts"),
    "eventState": lambda c: _job(c).get("state", "Success"),
    "duration": lambda c: _job(c).get("duration", 0),
    "eventInitiatedTime": lambda c: iso_micro(_job(c).get("initiated_us", c.us)),
    "isRunNow": lambda c: _job(c).get("run_now", False),
    "notes": lambda c: _job(c).get("notes", ""),
    "args": lambda c: json.dumps([_task(c).obj.luid, _task(c).obj.kind], separators=(",", ":")),
    "podName": lambda c: f"prod-useast-b-bg-{(_task(c).id % 12) + 1:02d}",
    "projectOwnerEmail": lambda c: _task(c).obj.project.owner.email,
    "projectOwnerLuid": lambda c: _task(c).obj.project.owner.luid,
    "siteId": lambda c: c.site.id,
    "timeZone": lambda c: 0,
    # live feed (--live-feed): the common attributes the bundled site reference lacks
    "eventOutcome": lambda c: (c.job or {}).get("outcome", "success"),  # the help pages' values, lower case
    "eventOutcomeReason": lambda c: (c.job or {}).get("reason", "Completed successfully"),
    "eventProcessedTime": lambda c: iso_micro(c.us + c.rng.randint(2, 900) * 1_000_000),
    # help pages: a group added to or removed from one of the site's group sets
    "groupSetId": lambda c: group_set(c.site, _job(c).get("group_set", 0))[0],
    "groupSetLuid": lambda c: group_set(c.site, _job(c).get("group_set", 0))[1],
    "groupSetOperation": lambda c: _job(c).get("op", "add"),
    # live feed: vizql_http_request (a browser's request to a view)
    "ipAddress": _ip,
    "userAgent": lambda c: c.agent or c.actor.user_agent,
    "method": lambda c: "POST" if c.rng.random() < 0.7 else "GET",
    "endpointName": lambda c: c.rng.choice(["bootstrapSession", "render-tooltip-server", "select", "get-world-update"]),
    "referrer": lambda c: f"https://online.tableau.com/#/site/{c.site.url}/views/{_view(c).repo_url}",
    "requestId": lambda c: new_uuid(c.rng),
    "requestUri": lambda c: (
        f"/vizql/t/{c.site.url}/w/{_workbook(c).repo_url}/v/{_view(c).name.replace(' ', '')}"
        f"/sessions/{_vizql_session(c)}"
    ),
    "siteUri": lambda c: c.site.url,
    "viewName": lambda c: _view(c).name,
    "viewRepoUrl": lambda c: _view(c).repo_url,
    "vizqlSessionId": lambda c: _vizql_session(c),
    "workbookRevision": lambda c: _as_int(lambda c2: _workbook(c2).revision)(c),
    # live feed: bridge_job (a job Tableau Bridge runs on the customer's network)
    "bridgeClientComputerName": lambda c: f"BRIDGE-{c.site.url.upper()}-0{1 + _job(c).get('id', 0) % 2}",
    "bridgeClientDeviceLuid": lambda c: _stable_uuid(f"{c.site.url}-{_job(c).get('id', 0) % 2}"),
    "bridgeClientOwnerLuid": lambda c: c.site.admins[0].luid,
    "bridgeClientOwnerName": lambda c: c.site.admins[0].name,
    "bridgeClientVersion": lambda c: "20243.24.1010.1544",
    "poolId": lambda c: _stable_uuid(f"{c.site.url}-pool"),
    "poolName": lambda c: f"{c.site.url} pool",
    # site storage
    "totalStorageQuotaLimit": lambda c: 1_099_511_627_776,
    "totalStorageQuotaUsed": lambda c: 412_316_860_416 + (c.us // 1_000_000) % 2_000_000_000,
    "totalPercentageStorageQuotaUsed": lambda c: round(
        (412_316_860_416 + (c.us // 1_000_000) % 2_000_000_000) / 1_099_511_627_776 * 100, 4
    ),
}

# Tenant family: same names can mean other things there, so they get their own table.
TG: dict = {
    "eventOutcome": lambda c: (c.job or {}).get("outcome", "Success"),
    "eventOutcomeReason": lambda c: (c.job or {}).get("reason", "Completed successfully"),
    "eventTime": lambda c: iso(c.us, c.variant),
    "initiatingSessionId": _session,
    "initiatingUrl": _initiating_url,
    "initiatingUserAgent": lambda c: c.agent or c.actor.user_agent,
    "initiatingUserDisplayName": lambda c: c.actor.display,
    "initiatingUserEmail": lambda c: c.actor.email,
    "initiatingUserIpAddress": _ip,
    "initiatingUserId": lambda c: c.actor.tenant_user_id,
    "initiatingUserRole": lambda c: c.actor.tenant_role,
    "podUri": lambda c: c.world.tenant.pod_uri,
    "siteId": lambda c: c.site.luid,
    "siteName": lambda c: c.site.name,
    "siteUri": lambda c: f"{c.world.tenant.pod_uri}/#/site/{c.site.url}",
    "tenantId": lambda c: c.world.tenant.id,
    "tenantName": lambda c: c.world.tenant.name,
    "tenantUri": lambda c: c.world.tenant.uri,
    "traceUuid": _trace,
    # event attributes
    "patUserId": lambda c: _user(c).tenant_user_id,
    "sessionUserId": lambda c: _user(c).tenant_user_id,
    "isSecretUpdated": lambda c: c.rng.random() < 0.5,
    "newSettingsValue": lambda c: _settings(c, True),
    "oldSettingsValue": lambda c: _settings(c, False),
    "resourceId": lambda c: (
        c.world.tenant.oidc_resource_id if "oidc" in c.event_type else c.world.tenant.saml_resource_id
    ),
    "expiresAt": lambda c: iso_micro(c.us + (c.job or {}).get("ttl_h", 24 * 90) * HOUR_US),
    "tokenId": lambda c: (c.token or {}).get("id") or new_uuid(c.rng),
    "tokenName": lambda c: (c.token or {}).get("name") or f"{_user(c).name}-automation",
    "description": lambda c: "PrivateLink to the analytics VPC",
    "endpointServiceName": lambda c: "com.amazonaws.vpce.us-east-1.vpce-svc-0a1b2c3d4e5f60718",
    "name": lambda c: "analytics-vpc-link",
    "privateConnectionId": lambda c: c.world.tenant.private_connection_id,
    "region": lambda c: "us-east-1",
    "email": lambda c: _user(c).email,
    "language": lambda c: _user(c).language,
    "locale": lambda c: _user(c).locale,
    "userId": lambda c: _user(c).tenant_user_id,
    "userName": lambda c: _user(c).email,
    "idpConfigurationId": lambda c: (
        c.world.tenant.saml_resource_id if "saml" in c.event_type else c.world.tenant.oidc_resource_id
    ),
    "idpConfigurationName": lambda c: "Okta SAML" if "saml" in c.event_type else "Entra OIDC",
    "sourceTenantId": lambda c: new_uuid(random.Random(c.world.tenant.id)),
    "sourceTenantName": lambda c: "Northwind Legacy",
    "sourceTenantUri": lambda c: "https://northwind-legacy.cloudmanager.tableau.example.com",
    "newSessionId": lambda c: (c.job or {}).get("new_session") or new_uuid(c.rng),
    "newCreatorCapacity": lambda c: 60,
    "oldCreatorCapacity": lambda c: 50,
    "newExplorerCapacity": lambda c: 200,
    "oldExplorerCapacity": lambda c: 150,
    "newViewerCapacity": lambda c: 1000,
    "oldViewerCapacity": lambda c: 800,
    "newCreatorCapacityIsDefaultCloudLimit": lambda c: False,
    "oldCreatorCapacityIsDefaultCloudLimit": lambda c: True,
    "newExplorerCapacityIsDefaultCloudLimit": lambda c: False,
    "oldExplorerCapacityIsDefaultCloudLimit": lambda c: True,
    "newViewerCapacityIsDefaultCloudLimit": lambda c: False,
    "oldViewerCapacityIsDefaultCloudLimit": lambda c: True,
    "newDescription": lambda c: "PrivateLink to the analytics VPC (prod)",
    "oldDescription": lambda c: "PrivateLink to the analytics VPC",
    "newSiteIds": lambda c: ",".join(s.luid for s in c.world.sites),
    "oldSiteIds": lambda c: c.world.sites[0].luid,
    "newStatus": lambda c: "ACTIVE",
    "oldStatus": lambda c: "PROVISIONING",
    "newTenantName": lambda c: c.world.tenant.name,
    "newTenantOrg62Id": lambda c: c.world.tenant.org62_id,
    "oldTenantOrg62Id": lambda c: c.world.tenant.org62_id[:-3] + "000",
    "newTenantUri": lambda c: c.world.tenant.uri,
    "newEmail": lambda c: _user(c).email,
    "oldEmail": lambda c: _user(c).email.replace("@", ".old@"),
    "newLanguage": lambda c: _user(c).language,
    "oldLanguage": lambda c: "en",
    "newLocale": lambda c: _user(c).locale,
    "oldLocale": lambda c: "en-US",
    "newIdp": lambda c: "SAML",
    "oldIdp": lambda c: "TableauIDWithMFA",
    "newRole": lambda c: (c.job or {}).get("new_role", "Creator"),
    "oldRole": lambda c: (c.job or {}).get("old_role", "Explorer"),
    "idpId": lambda c: (c.job or {}).get("idp_id", c.world.tenant.saml_resource_id),
    "idpName": lambda c: (c.job or {}).get("idp_name", "Okta SAML"),
    "suspensionSource": lambda c: "ADMIN",
    "eventProcessedTimeStart": lambda c: iso_micro(c.us - c.us % HOUR_US - 24 * HOUR_US),
    "eventProcessedTimeEnd": lambda c: iso_micro(c.us - c.us % HOUR_US),
    "eventTypeAccessed": lambda c: c.rng.choice(["user_login_create_session", "all", "create_user"]),
}


# ---------------------------------------------------------------- fallbacks and typing
def fallback(name: str, spark_type: str):
    """A getter for a name we know nothing about, from its spelling and type."""
    low = name.lower()
    if spark_type == "boolean":
        return lambda c: c.rng.random() < 0.5
    if spark_type == "int":
        return lambda c: c.rng.randint(0, 5000)
    if spark_type == "bigint":
        return lambda c: c.rng.randint(0, 2**31 - 1) if c.rng.random() < 0.7 else c.rng.randint(2**31, 2**40)
    if spark_type == "double":
        return lambda c: round(c.rng.uniform(0, 100), 4)
    if low.endswith(("luid", "uuid", "guid")):
        return lambda c: new_uuid(c.rng)
    if low.endswith(("time", "at")):
        return lambda c: iso_micro(c.us - c.rng.randint(0, 48) * HOUR_US)
    if "email" in low:
        return lambda c: c.actor.email
    if "ipaddress" in low:
        return lambda c: c.actor.ip
    if low.endswith("id"):
        return lambda c: new_uuid(c.rng)
    return lambda c: sentence(c.rng, 3)


def _as_int(f):
    def g(c):
        v = f(c)
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, int):
            return v
        try:
            return int(str(v).split(".")[-1])
        except ValueError:
            return 1

    return g


def _as_str(f):
    def g(c):
        v = f(c)
        return v if isinstance(v, str) else str(v)

    return g


_INT_STATE = lambda c: 0 if c.task is None or c.rng.random() < 0.9 else 1  # noqa: E731


def compile_getter(family: str, name: str, spark_type: str):
    """The value function for one attribute, guaranteed to return its JSON type."""
    if name == "size" and spark_type == "bigint":
        return _bigsize
    if name == "state" and spark_type in ("int", "bigint"):  # hist_*_task: a code, elsewhere a word
        return _INT_STATE
    table = TG if family == "tenant" else G
    f = table.get(name) or fallback(name, spark_type)
    if spark_type in ("int", "bigint"):
        return f if name not in ("contentVersion",) else _as_int(f)
    if spark_type == "string":
        return f if name not in ("contentVersion", "revision", "siteId") else _as_str(f)
    return f
