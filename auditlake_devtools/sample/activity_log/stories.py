"""Story lines: short, coherent sequences of events.

Each story takes the generator ``g`` (for its random stream, world and
``emit``), a site and a start time in microseconds, and emits records with
increasing times. Stories that change the world (ownership transfers, group
membership) change it, so later records agree with what happened.

The background volume is made of sessions (sign-in, view accesses, sign-out),
background jobs moving through their states, token and data-source traffic and
tenant sign-ins; the rarer stories are scheduled a number of times scaled to the
requested event count.
"""

from __future__ import annotations

from .records import pick_actor
from .values import HOUR_US, SITE_ROLE_NAMES, new_uuid

SEC = 1_000_000
MIN = 60 * SEC

# How far past its start time a unit may write (the writer keeps 3 hours open).
UNIT_SPAN_US = 100 * MIN

_ERRORS = [
    "Com.tableausoftware.nativeapi.dll.DataSourceException: Unable to connect to the server. "
    "Check that the server is running.",
    "The extract refresh exceeded the time limit of 7200 seconds.",
    "Invalid username or password for the embedded credentials.",
    "ORA-12170: TNS:Connect timeout occurred",
    "Snowflake: JWT token is invalid (error 390144).",
]
_ATTACKER_IPS = ["203.0.113.77", "203.0.113.14", "198.51.100.203", "192.0.2.66"]
_CAPS = [
    (9, "Read"),
    (8, "Filter"),
    (5, "ExportData"),
    (6, "ExportImage"),
    (12, "ViewUnderlyingData"),
    (13, "WebAuthoring"),
    (14, "Write"),
    (3, "ChangePermissions"),
    (4, "Delete"),
    (1, "AddComment"),
]


def _jitter(g) -> int:
    return g.rng.randrange(SEC)


# ---------------------------------------------------------------- background units
def session(g, site, t0: int) -> int:
    """hist_login -> hist_access_view x n (some hist_access_datasource) -> hist_logout (mostly)."""
    rng = g.rng
    actor = pick_actor(site, rng)
    c = g.ctx(site, actor, t0)
    c.session = new_uuid(rng)
    attempts = 0
    if g.live_feed and rng.random() < 0.1:  # the sign-in's own audit record, after a failed try at times
        attempts = sign_in_attempts(g, c, failures=1 if rng.random() < 0.15 else 0)
        c.us += rng.randint(50, 900) * 1000
        t0 = c.us
    g.emit("hist_login", c)
    n = 0
    if actor.site_role_id != 8:  # the unlicensed sign in and see nothing
        n = min(14, 1 + int(rng.expovariate(0.2)))
    wbs = site.content["workbook"]
    wb = wbs[int(rng.triangular(0, len(wbs) - 1, 0))]
    t = t0
    for _ in range(n):
        t += rng.randint(4, 360) * SEC + _jitter(g)
        if rng.random() < 0.25:
            wb = rng.choice(wbs)
        c.us, c.subject = t, rng.choice(wb.children)
        g.emit("hist_access_view", c)
        if g.live_feed:  # the browser's requests to the view, from the user's address and browser
            for _ in range(rng.randint(1, 3)):
                c.us += rng.randint(200, 4000) * 1000
                c.job = {"duration": rng.randint(40, 3000)}  # milliseconds
                g.emit("vizql_http_request", c, edition="current")
            c.us, c.job = t, None
        if rng.random() < 0.04:
            t += rng.randint(2, 60) * SEC
            c.us, c.subject = t, rng.choice(site.content["datasource"])
            g.emit("hist_access_datasource", c)
    if rng.random() < 0.08:  # some sessions just time out: no hist_logout
        return attempts + 1 + n
    c.us, c.subject = t + rng.randint(30, 900) * SEC + _jitter(g), None
    g.emit("hist_logout", c)
    return attempts + 2 + n


# login_authentication's documented failures, the wrong password most often
_SIGN_IN_FAILURES = [
    ("unauthorized", "Invalid username or password"),
    ("unauthorized", "Invalid username or password"),
    ("unauthorized", "Multi-factor authentication failed"),
    ("client_error", "The sign-in request was malformed"),
    ("internal_error", "The identity provider did not respond"),
]


def sign_in_attempts(g, c, failures: int = 0, succeed: bool = True) -> int:
    """login_authentication (the help pages' record of a site sign-in) from ``c.us`` on: ``failures``
    failed tries a few seconds apart, then the success unless not ``succeed``; ``c.us`` ends at the
    last. Live feed only."""
    rng = g.rng
    for i in range(failures):
        if i:
            c.us += rng.randint(3, 20) * SEC + _jitter(g)
        outcome, reason = rng.choice(_SIGN_IN_FAILURES)
        c.job = {"outcome": outcome, "reason": reason}
        g.emit("login_authentication", c, edition="current")
    c.job = None
    if succeed:
        c.us += rng.randint(3, 20) * SEC if failures else 0
        g.emit("login_authentication", c, edition="current")
    return failures + succeed


_JOB_TYPES = {
    "RefreshExtractTask": "RefreshExtracts",
    "IncrementExtractTask": "IncrementExtracts",
    "SubscriptionTask": "Subscriptions",
    "FlowRunTask": "RunFlow",
}


def background_job(g, site, t0: int, task=None, fail: bool | None = None) -> int:
    """background_job Pending -> InProgress -> Success|Failed (same jobLuid), then what it did."""
    rng = g.rng
    task = task or rng.choice(site.tasks)
    failed = rng.random() < task.fail_rate if fail is None else fail
    queue = rng.randint(1, 240) * SEC + _jitter(g)
    run = (rng.randint(20, 1500) if not failed else rng.randint(5, 600)) * SEC + _jitter(g)
    job = {
        "id": g.next_job_id(),
        "luid": new_uuid(rng),
        "type": _JOB_TYPES[task.type],
        "initiated_us": t0,
        "run_now": rng.random() < 0.05,
        "state": "Pending",
        "duration": 0,
        "notes": "",
    }
    c = g.ctx(site, task.creator, t0)
    c.task, c.subject, c.job = task, task.obj, job
    g.emit("background_job", c)
    c.us = t0 + queue
    job["state"], job["duration"] = "InProgress", queue // 1000
    g.emit("background_job", c)
    t_end = t0 + queue + run
    c.us = t_end
    error = rng.choice(_ERRORS)
    job["state"] = "Failed" if failed else "Success"
    job["duration"] = (queue + run) // 1000
    job["notes"] = error if failed else ""
    g.emit("background_job", c)
    n = 3
    if failed:
        task.consecutive_failures += 1
    else:
        task.consecutive_failures = 0
        task.last_success_us = t_end
    obj = task.obj
    c.us = t_end + rng.randint(1, 20) * SEC
    if task.type in ("RefreshExtractTask", "IncrementExtractTask"):
        verb = "refresh" if task.type == "RefreshExtractTask" else "increment"
        if obj.kind == "workbook":
            et = f"hist_{verb}_workbook_extracts"
        else:
            et = "hist_refresh_datasource_extract" if verb == "refresh" else "hist_increment_datasource_extract"
        job["failed"] = failed
        job["details"] = error if failed else f"Extract {verb} completed: {rng.randint(1_000, 9_000_000)} rows"
        g.emit(et, c)
        n += 1
    elif task.type == "SubscriptionTask" and not failed:
        for view in obj.children[: rng.randint(1, 2)]:
            c.subject, c.schedule = view, task.schedule
            g.emit("hist_send_subscription_email_for_view", c)
            n += 1
    elif task.type == "FlowRunTask":
        g.emit("hist_run_flow_scheduled", c)
        n += 1
    if g.live_feed and obj.kind == "datasource" and task.type == "RefreshExtractTask" and rng.random() < 0.5:
        n += bridge_job(g, site, t0 + rng.randint(1, 120) * SEC, task)
    return n


def bridge_job(g, site, t0: int, task) -> int:
    """bridge_job InProgress -> Success|Failed: a refresh Tableau Bridge runs on the customer's network."""
    rng = g.rng
    failed = rng.random() < task.fail_rate
    run = rng.randint(30, 1200) * SEC + _jitter(g)
    job = {
        "id": g.next_job_id(),
        "luid": new_uuid(rng),
        "type": "RefreshExtractsViaBridge",
        "state": "InProgress",
        "duration": 0,
        "notes": "",
    }
    c = g.ctx(site, task.creator, t0)
    c.task, c.subject, c.job = task, task.obj, job
    g.emit("bridge_job", c, edition="current")
    c.us = t0 + run
    job["state"], job["duration"] = ("Failed" if failed else "Success"), run // 1000
    if failed:
        job["notes"], job["outcome"] = rng.choice(_ERRORS), "internal_error"
        job["reason"] = "Bridge client could not reach the data source"
    g.emit("bridge_job", c, edition="current")
    return 2


def token_traffic(g, site, t0: int) -> int:
    """REST / mobile clients: PAT sign-in or refresh-token use, then a data source or view."""
    rng = g.rng
    r = rng.random()
    if r < 0.4 and g.tokens:
        tok = rng.choice(g.tokens)
        site = tok["site"]
        c = g.ctx(site, tok["user"], t0)
        c.job = {"client": tok["name"], "created_us": tok["created_us"], "ttl_h": tok["ttl_h"]}
        g.emit("hist_login_with_pat", c)
        tc = g.ctx(site, tok["user"], t0 - rng.randint(50, 900) * 1000, family="tenant")
        tc.token, tc.user = tok, tok["user"]
        g.emit("personal_access_token_login", tc, family="tenant")
        c.us, c.subject, c.job = t0 + rng.randint(1, 30) * SEC, rng.choice(site.content["datasource"]), None
        g.emit("hist_access_datasource", c)
        return 3
    actor = pick_actor(site, rng)
    c = g.ctx(site, actor, t0)
    c.token = new_uuid(rng)
    if r < 0.6:
        g.emit("hist_issue_refresh_token", c)
    else:
        g.emit("hist_redeem_refresh_token", c)
    c.us, c.subject = t0 + rng.randint(1, 90) * SEC, rng.choice(site.content["view"])
    g.emit("hist_access_view", c)
    return 2


def datasource_access(g, site, t0: int) -> int:
    c = g.ctx(site, pick_actor(site, g.rng), t0)
    c.subject = g.rng.choice(site.content["datasource"])
    g.emit("hist_access_datasource", c)
    return 1


def tenant_login(g, site, t0: int) -> int:
    """Cloud Manager sign-in, sometimes extended later."""
    rng = g.rng
    user = pick_actor(site, rng)
    c = g.ctx(site, user, t0, family="tenant")
    c.user = user
    c.session = new_uuid(rng)
    c.job = {"new_session": c.session, "ttl_h": 8}
    g.emit("user_login_create_session", c, family="tenant")
    n = 1
    if rng.random() < 0.35:
        c.us = t0 + rng.randint(10, 90) * MIN
        c.job = {"ttl_h": 8}
        g.emit("update_session", c, family="tenant")
        n += 1
    return n


def tenant_api(g, site, t0: int) -> int:
    rng = g.rng
    admin = rng.choice(g.world.tenant.admins + site.admins)
    c = g.ctx(site, admin, t0, family="tenant")
    et = rng.choice(["get_users", "get_users", "get_sites", "list_personal_access_tokens", "tcm_activity_log_access"])
    g.emit(et, c, family="tenant")
    return 1


def tail_event(g, site, t0: int) -> int:
    """One record of a rarely seen type, with coherent entities."""
    family, et = g.rng.choice(g.tail_types)
    c = g.ctx(site, None, t0, family=family)
    g.resolve(c, family, et)
    g.emit(et, c, family=family)
    return 1


BACKGROUND = [  # (unit, share of records, mean records per unit)
    (session, 0.55, 7.0),
    (background_job, 0.26, 3.8),
    (token_traffic, 0.06, 2.3),
    (datasource_access, 0.045, 1.0),
    (tenant_login, 0.035, 1.35),
    (tenant_api, 0.012, 1.0),
    (tail_event, 0.003, 1.0),
]


# ---------------------------------------------------------------- scheduled stories
def failed_signin_burst(g, site, t0: int) -> int:
    """Many failed Cloud Manager sign-ins for one account from one foreign IP (with the live feed, failed
    site sign-ins for the same user too)."""
    rng = g.rng
    victim = rng.choice(site.users[:30])
    ip = rng.choice(_ATTACKER_IPS)
    n = rng.randint(8, 25)
    t = t0
    c = g.ctx(site, victim, t, family="tenant")
    c.user, c.ip = victim, ip
    for _ in range(n):
        c.us = t
        c.session = new_uuid(rng)
        c.job = {"outcome": "Failure", "reason": "Invalid credentials", "ttl_h": 0}
        g.emit("user_login_create_session", c, family="tenant")
        t += rng.randint(1, 12) * SEC + _jitter(g)
    if g.live_feed:  # the same password tried on the site: its own failed sign-ins, for the user
        sc = g.ctx(site, victim, t)
        n += sign_in_attempts(g, sc, failures=rng.randint(5, 10), succeed=False)
    # the real user signs in later from their usual address; an admin kills the sessions
    c.ip, c.us = None, t + rng.randint(5, 40) * MIN
    c.session = new_uuid(rng)
    c.job = {"new_session": c.session, "ttl_h": 8}
    g.emit("user_login_create_session", c, family="tenant")
    admin = rng.choice(g.world.tenant.admins)
    a = g.ctx(site, admin, c.us + rng.randint(1, 10) * MIN, family="tenant")
    a.user = victim
    g.emit("batch_revoke_session", a, family="tenant")
    return n + 2


def permission_edit(g, site, t0: int) -> int:
    """An owner or admin sets several capabilities for one grantee on one item."""
    rng = g.rng
    kind = rng.choice(["workbook", "workbook", "datasource", "project", "view"])
    item = rng.choice(site.content[kind])
    actor = item.owner if rng.random() < 0.6 else rng.choice(site.admins)
    grantee = rng.choice(site.groups) if rng.random() < 0.6 else rng.choice(site.users)
    c = g.ctx(site, actor, t0)
    c.subject = c.content = item
    c.grantee = grantee
    n = rng.randint(2, 6)
    for cap in rng.sample(_CAPS, n):
        c.job = {"cap": cap, "mode": "allow" if rng.random() < 0.85 else "deny", "ptype": "explicit"}
        g.emit("set_permissions", c, trace=None)
        c.us += rng.randint(0, 900_000)
    if rng.random() < 0.2:
        c.job = {"cap": rng.choice(_CAPS), "mode": "allow"}
        g.emit("delete_permissions", c)
        n += 1
    return n


def deprecated_permissions(g, site, t0: int) -> int:
    """create_permissions / update_permissions (replaced by set_permissions in October 2024)."""
    rng = g.rng
    item = rng.choice(site.content["workbook"])
    c = g.ctx(site, item.owner, t0)
    c.subject = c.content = item
    c.grantee = rng.choice(site.groups)
    trace = new_uuid(rng)
    c.job = {"cap": _CAPS[0], "mode": "allow"}
    g.emit("create_permissions", c, trace=trace, edition="legacy" if rng.random() < 0.5 else None)
    c.us += rng.randint(1, 300) * SEC
    c.job = {"cap": _CAPS[1], "mode": "deny", "ptype": "explicit"}
    g.emit("update_permissions", c, trace=trace)
    return 2


_OWNERSHIP = {
    "workbook": "hist_change_workbook_ownership",
    "datasource": "hist_change_datasource_ownership",
    "flow": "hist_change_flow_ownership",
    "project": "hist_change_project_ownership",
    "metric": "hist_change_metric_ownership",
    "collection": "hist_change_collection_ownership",
    "data_role": "hist_change_data_role_ownership",
    "published_connection": "hist_change_published_connection_ownership",
}


def ownership_transfer(g, site, t0: int) -> int:
    """content_owner_change + the matching hist_change_*_ownership; the world remembers."""
    rng = g.rng
    kind = rng.choice(
        [
            "workbook",
            "workbook",
            "datasource",
            "datasource",
            "flow",
            "project",
            "metric",
            "collection",
            "data_role",
            "published_connection",
        ]
    )
    item = rng.choice(site.content[kind] if kind != "project" else site.projects[6:])
    creators = [u for u in site.users if u.site_role_id in (0, 2, 10, 11) and u is not item.owner]
    new = rng.choice(creators)
    old = item.owner
    admin = rng.choice(site.admins)
    c = g.ctx(site, admin, t0)
    c.subject = c.content = item
    c.old_owner, c.new_owner = old, new
    item.owner = new
    n = 1
    if kind in ("workbook", "datasource", "flow", "project"):
        g.emit("content_owner_change", c)
        c.us += rng.randint(10, 900) * 1000
        n += 1
    g.emit(_OWNERSHIP[kind], c)
    return n


def offboarding(g, site, t0: int) -> int:
    """A leaver: an admin hands their content to a colleague, then deletes the user."""
    rng = g.rng
    owned = {}
    for kind in ("workbook", "datasource", "flow"):
        for item in site.content[kind]:
            owned.setdefault(item.owner.luid, (item.owner, []))[1].append((kind, item))
    admins = {a.luid for a in site.admins}
    leavers = [owner for owner, items in owned.values() if owner.luid not in admins and owner in site.users]
    if not leavers:
        return 0
    leaver = rng.choice(leavers)
    heir = rng.choice([u for u in site.users if u.site_role_id in (10, 11) and u is not leaver])
    admin = rng.choice(site.admins)
    c = g.ctx(site, admin, t0)
    n = 0
    for kind, item in owned[leaver.luid][1][:6]:
        c.subject = c.content = item
        c.old_owner, c.new_owner = leaver, heir
        item.owner = heir
        g.emit("content_owner_change", c)
        c.us += rng.randint(5, 300) * 1000
        g.emit(_OWNERSHIP[kind], c)
        c.us += rng.randint(5, 120) * SEC
        n += 2
    c.content = None
    c.user = c.subject = leaver
    c.job = {"op": "delete"}
    g.emit("user_create_delete", c)
    c.us += rng.randint(1, 900) * 1000
    g.emit("hist_delete_user", c)
    site.users.remove(leaver)  # gone: later stories no longer pick them
    return n + 2


def group_membership(g, site, t0: int) -> int:
    """add_delete_user_to_group + hist_add_user_to_group / hist_delete_user_from_group."""
    rng = g.rng
    group = rng.choice(site.groups[1:])
    outsiders = [u for u in site.users if u not in group.members]
    add = bool(outsiders) and (rng.random() < 0.6 or len(group.members) < 3)
    user = rng.choice(outsiders) if add else rng.choice(group.members)
    c = g.ctx(site, rng.choice(site.admins), t0)
    c.group = c.subject = group
    c.user = user
    c.job = {"op": "add" if add else "delete"}
    g.emit("add_delete_user_to_group", c)
    c.us += rng.randint(5, 500) * 1000
    g.emit("hist_add_user_to_group" if add else "hist_delete_user_from_group", c)
    if add:
        group.members.append(user)
        user.groups.append(group)
    else:
        group.members.remove(user)
        user.groups.remove(group)
    if g.live_feed and rng.random() < 0.5:  # the group joins or leaves one of the site's group sets
        member = (group.luid, rng.randrange(2))
        c.us += rng.randint(5, 120) * SEC
        c.job = {"op": "delete" if member in g.group_set_members else "add", "group_set": member[1]}
        g.emit("add_delete_group_to_group_set", c, edition="current")
        g.group_set_members ^= {member}
        return 3
    return 2


def extract_failure(g, site, t0: int) -> int:
    """The chronically failing extract task fails again (then sometimes succeeds on a run-now)."""
    rng = g.rng
    task = max(site.tasks, key=lambda t: (t.fail_rate, -t.id))
    n = background_job(g, site, t0, task=task, fail=True)
    if rng.random() < 0.3:
        n += background_job(g, site, t0 + 45 * MIN, task=task, fail=False)
    return n


def pat_lifecycle(g, site, t0: int) -> int:
    """A PAT is created, used for sign-ins over the following hours, then revoked."""
    rng = g.rng
    owner = rng.choice([u for u in site.users if u.site_role_id in (10, 11, 2)])
    tok = {
        "id": new_uuid(rng),
        "name": f"{owner.name}-{rng.choice(['etl', 'ci', 'backup', 'tabcmd'])}",
        "user": owner,
        "site": site,
        "created_us": t0,
        "ttl_h": 24 * 180,
    }
    c = g.ctx(site, owner, t0, family="tenant")
    c.token, c.user = tok, owner
    c.job = {"ttl_h": tok["ttl_h"]}
    g.emit("create_personal_access_token", c, family="tenant")
    end = min(g.end_us - 1, t0 + rng.randint(6, 60) * HOUR_US)
    uses = rng.randint(2, 8)
    step = max(1, (end - t0) // (uses + 1))
    t = t0
    for _ in range(uses):
        t += step
        tc = g.ctx(site, owner, t, family="tenant")
        tc.token, tc.user = tok, owner
        tc.job = {"new_session": new_uuid(rng), "ttl_h": 2}
        g.emit("personal_access_token_login", tc, family="tenant")
        sc = g.ctx(site, owner, t + rng.randint(50, 900) * 1000)
        sc.job = {"client": tok["name"], "created_us": t0, "ttl_h": tok["ttl_h"]}
        g.emit("hist_login_with_pat", sc)
    admin = rng.choice(g.world.tenant.admins)
    rc = g.ctx(site, admin, end, family="tenant")
    rc.token, rc.user = tok, owner
    g.emit("revoke_personal_access_token", rc, family="tenant")
    return 2 + 2 * uses


def saml_change(g, site, t0: int) -> int:
    """A tenant admin changes the SAML configuration; users sign in through it afterwards."""
    rng = g.rng
    admin = rng.choice(g.world.tenant.admins)
    c = g.ctx(site, admin, t0, family="tenant")
    g.emit("create_or_update_saml_config", c, family="tenant")
    n = 1
    for i in range(rng.randint(1, 4)):
        u = pick_actor(site, rng)
        lc = g.ctx(site, u, t0 + (i + 1) * rng.randint(1, 10) * MIN, family="tenant")
        lc.user = u
        lc.session = new_uuid(rng)
        lc.job = {
            "new_session": lc.session,
            "ttl_h": 8,
            "idp_id": g.world.tenant.saml_resource_id,
            "idp_name": "Okta SAML",
        }
        g.emit("user_login_create_session", lc, family="tenant")
        n += 1
    return n


def user_lifecycle(g, site, t0: int) -> int:
    """An admin licenses a user: site user_create_delete + hist_create_user, role changes on both sides."""
    rng = g.rng
    user = rng.choice([u for u in site.users if u.site_role_id in (8, 9, 3)])
    admin = rng.choice(site.admins)
    c = g.ctx(site, admin, t0)
    c.user = c.subject = user
    c.job = {"op": "create"}
    g.emit("user_create_delete", c)
    c.us += rng.randint(1, 900) * 1000
    g.emit("hist_create_user", c)
    c.us += rng.randint(1, 30) * MIN
    g.emit("hist_update_user_site_role", c)
    tc = g.ctx(site, rng.choice(g.world.tenant.admins), c.us + rng.randint(1, 60) * SEC, family="tenant")
    tc.user = user
    tc.job = {"old_role": "Viewer", "new_role": "Explorer"}
    g.emit("update_user_site_role", tc, family="tenant")
    return 4


def publish(g, site, t0: int) -> int:
    """A creator republishes a workbook: hist_publish_workbook + hist_publish_view per sheet."""
    rng = g.rng
    wb = rng.choice(site.content["workbook"])
    c = g.ctx(site, wb.owner, t0)
    c.subject = wb
    major, minor = wb.revision.split(".")
    wb.revision = f"{major}.{int(minor) + 1}"
    wb.updated_us = t0
    g.emit("hist_publish_workbook", c)
    for v in wb.children:
        v.revision = wb.revision
        c.subject = v
        c.us += rng.randint(10, 2000) * 1000
        g.emit("hist_publish_view", c)
    return 1 + len(wb.children)


# ---------------------------------------------------------------- security stories (--security-stories)
# One situation for each detection report (docs/analyst-guide.md "Detections"), so the demo shows
# every report with rows. Each stays within UNIT_SPAN_US of its start.
_SCRIPT_AGENT = "python-requests/2.32.3 tableauserverclient/0.31"


def _view_visit(g, site, c, t: int) -> int:
    """hist_login + a view (+ its browser requests with the live feed) as ``c``'s actor at ``t``."""
    c.us = t
    c.session = new_uuid(g.rng)
    g.emit("hist_login", c)
    c.us, c.subject = t + g.rng.randint(5, 60) * SEC, g.rng.choice(site.content["view"])
    g.emit("hist_access_view", c)
    n = 2
    if g.live_feed:
        c.us += g.rng.randint(200, 3000) * 1000
        c.job = {"duration": g.rng.randint(40, 3000)}
        g.emit("vizql_http_request", c, edition="current")
        c.job = None
        n += 1
    return n


def privilege_escalation(g, site, t0: int) -> int:
    """A Viewer or Explorer is made SiteAdministratorCreator (site and Cloud Manager), then uses it."""
    rng = g.rng
    candidates = [u for u in site.users if u.site_role_id in (9, 3) and u.system_admin_level == 0]
    if not candidates:
        return 0
    user = rng.choice(candidates)
    n = _view_visit(g, site, g.ctx(site, user, t0), t0)  # what they were
    old_role = SITE_ROLE_NAMES[user.site_role_id]
    admin = rng.choice(site.admins)
    c = g.ctx(site, admin, t0 + rng.randint(5, 30) * MIN)
    c.user = c.subject = user
    user.site_role_id = 11  # the world changes: later events state the new role
    g.emit("hist_update_user_site_role", c)
    tc = g.ctx(site, rng.choice(g.world.tenant.admins), c.us + rng.randint(1, 60) * SEC, family="tenant")
    tc.user = user
    tc.job = {"old_role": old_role, "new_role": "SiteAdministratorCreator"}
    g.emit("update_user_site_role", tc, family="tenant")
    return n + 2 + _view_visit(g, site, g.ctx(site, user, c.us + 5 * MIN), c.us + 5 * MIN)


def impersonation(g, site, t0: int) -> int:
    """An administrator signs in as a user and opens their views."""
    rng = g.rng
    user = rng.choice([u for u in site.users if not u.is_admin])
    c = g.ctx(site, user, t0)
    c.initiator = rng.choice(site.admins)
    return _view_visit(g, site, c, t0) + _view_visit(g, site, c, t0 + rng.randint(2, 20) * MIN)


def mass_download(g, site, t0: int) -> int:
    """One user downloads and exports dozens of workbooks and data sources in a quarter of an hour."""
    rng = g.rng
    user = rng.choice([u for u in site.users if u.site_role_id in (2, 3, 10)])
    c = g.ctx(site, user, t0)
    n = rng.randint(45, 60)
    for i in range(n):
        c.us = t0 + i * (15 * MIN // n) + _jitter(g)
        kind = rng.choice(["workbook", "workbook", "datasource"])
        c.subject = c.content = rng.choice(site.content[kind])
        et = {"workbook": "hist_download_workbook", "datasource": "hist_download_datasource"}[kind]
        if rng.random() < 0.2:
            et, c.subject = "hist_export_summary_data", rng.choice(site.content["view"])
        g.emit(et, c)
    return n


def token_after_offboarding(g, site, t0: int) -> int:
    """A leaver's personal access token keeps signing in after the user is deleted, from elsewhere."""
    rng = g.rng
    owners = [u for u in site.users if u.site_role_id in (10, 2) and not u.is_admin]
    if len(owners) < 2:
        return 0
    owner = rng.choice(owners)
    tok = {
        "id": new_uuid(rng),
        "name": f"{owner.name}-export",
        "user": owner,
        "site": site,
        "created_us": t0,
        "ttl_h": 24 * 365,
    }
    c = g.ctx(site, owner, t0, family="tenant")
    c.user = owner
    c.session = new_uuid(rng)
    c.job = {"new_session": c.session, "ttl_h": 8}
    g.emit("user_login_create_session", c, family="tenant")  # from their usual address
    c.us += rng.randint(1, 10) * MIN
    c.token, c.job = tok, {"ttl_h": tok["ttl_h"]}
    g.emit("create_personal_access_token", c, family="tenant")
    admin = rng.choice(site.admins)
    d = g.ctx(site, admin, c.us + rng.randint(10, 30) * MIN)
    d.user = d.subject = owner
    d.job = {"op": "delete"}
    g.emit("user_create_delete", d)
    d.us += rng.randint(1, 900) * 1000
    g.emit("hist_delete_user", d)
    td = g.ctx(site, rng.choice(g.world.tenant.admins), d.us + rng.randint(1, 60) * SEC, family="tenant")
    td.user = owner
    g.emit("delete_user", td, family="tenant")
    site.users.remove(owner)  # gone: later stories no longer pick them
    use = td.us + rng.randint(10, 40) * MIN
    tc = g.ctx(site, owner, use, family="tenant")
    tc.token, tc.user, tc.ip, tc.agent = tok, owner, rng.choice(_ATTACKER_IPS), _SCRIPT_AGENT
    tc.job = {"new_session": new_uuid(rng), "ttl_h": 2}
    g.emit("personal_access_token_login", tc, family="tenant")
    sc = g.ctx(site, owner, use + rng.randint(50, 900) * 1000)
    sc.ip = tc.ip
    sc.job = {"client": tok["name"], "created_us": t0, "ttl_h": tok["ttl_h"]}
    g.emit("hist_login_with_pat", sc)
    return 8


def new_sign_in_source(g, site, t0: int) -> int:
    """A known user signs in from an address and a browser never seen for them (late in the window)."""
    rng = g.rng
    user = pick_actor(site, rng)
    c = g.ctx(site, user, t0, family="tenant")
    c.user, c.ip, c.agent = user, rng.choice(_ATTACKER_IPS), _SCRIPT_AGENT
    c.session = new_uuid(rng)
    c.job = {"new_session": c.session, "ttl_h": 8}
    g.emit("user_login_create_session", c, family="tenant")
    s = g.ctx(site, user, t0 + rng.randint(1, 5) * MIN)
    s.ip, s.agent = c.ip, c.agent
    return 1 + _view_visit(g, site, s, s.us)


def off_hours_security_change(g, site, t0: int) -> int:
    """At night: sign-in rate limits reset for a user (site) and a tenant role raised (Cloud Manager)."""
    rng = g.rng
    t = t0 - t0 % (24 * HOUR_US) + rng.randint(1, 4) * HOUR_US + rng.randrange(HOUR_US)  # 01:00-05:59 UTC
    if not t0 - HOUR_US <= t <= t0 + UNIT_SPAN_US:
        t = t0  # the writer keeps only recent hours open: stay near the start
    admin = rng.choice(site.admins)
    c = g.ctx(site, admin, t)
    c.user = c.subject = rng.choice(site.users)
    g.emit("hist_update_system_user_reset_login_rate_limiting", c)
    tc = g.ctx(site, rng.choice(g.world.tenant.admins), t + rng.randint(1, 20) * MIN, family="tenant")
    tc.user = rng.choice(site.users)
    tc.job = {"old_role": "TenantUser", "new_role": "TenantAdmin"}
    g.emit("update_user_tenant_role", tc, family="tenant")
    return 2


# (story, hours it may start in: "late" = the second half of the window so the user has history)
SECURITY_STORIES = [
    (privilege_escalation, None),
    (impersonation, None),
    (mass_download, None),
    (token_after_offboarding, None),
    (new_sign_in_source, "late"),
    (new_sign_in_source, "late"),
    (off_hours_security_change, None),
]

# (story, records-per-story budget share denominator, minimum count)
SCHEDULED = [
    (failed_signin_burst, 150_000, 1),
    (permission_edit, 25_000, 2),
    (deprecated_permissions, 250_000, 1),
    (ownership_transfer, 60_000, 2),
    (offboarding, 200_000, 1),
    (group_membership, 50_000, 2),
    (extract_failure, 100_000, 2),
    (pat_lifecycle, 200_000, 1),
    (saml_change, 500_000, 1),
    (user_lifecycle, 150_000, 1),
    (publish, 40_000, 2),
]


def scheduled_counts(events: int) -> list[tuple]:
    """[(story, count)] for a run of ``events`` records."""
    return [(fn, max(minimum, events // per)) for fn, per, minimum in SCHEDULED]


__all__ = ["BACKGROUND", "SCHEDULED", "SECURITY_STORIES", "scheduled_counts", "UNIT_SPAN_US"]
