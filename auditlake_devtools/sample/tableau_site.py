"""The sample sites as Tableau's REST API shows them, for the loopback Tableau server
(``auditlake_devtools/tableau_server.py``) that ``auditlake inventory`` reads in tests and demos.

Built from the generator's world (``activity_log/world.py``), so users, groups, projects and content
carry the LUIDs the generated Activity Log names and marts can join the two. Each site then gets the
cases the state reports look for, none of which the log can show:

- a workbook nobody ever opened (it is not in the world, so no event names it), owned by a user who has
  been deleted (its owner LUID is no user's);
- a licensed Creator who never signs in (no ``lastLogin``, no event) and an Unlicensed user who owns a
  workbook;
- a grant to the "All Users" group, on a project and as the project's default for workbooks;
- a data source connection with embedded credentials (its password is held here and never sent);
- a project whose permissions are locked (``LockedToProject``);
- Deny rules: a group denied ExportData on a workbook, a user denied Read on another;
- a group set of two groups.

``auditlake generate inventory`` serves them and runs ``auditlake inventory`` against them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

from auditlake_devtools.tableau_server import SiteContent, TableauServer
from pipelines.config.load import load_config
from pipelines.inventory.run import InventoryReport, inventory

from .activity_log.values import SITE_ROLE_NAMES
from .activity_log.world import build_world

EMBEDDED_PASSWORD = "sample-db-password-never-sent"  # a test proves no file ever holds it
LOCKED_PROJECT = "Finance"  # its contentPermissions is LockedToProject
NEVER_OPENED = "Legacy KPIs"  # the workbook no event names, owned by a deleted user


def _time(us: int) -> str:
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _luid(site, name: str) -> str:
    return str(uuid.uuid5(uuid.UUID(site.luid), name))


def _content(c, **extra) -> dict:
    return {
        "id": c.luid,
        "name": c.name,
        "contentUrl": c.repo_url,
        "createdAt": _time(c.created_us),
        "updatedAt": _time(c.updated_us or c.created_us),
        "projectId": c.project.luid,
        "ownerId": c.owner.luid,
        "tags": [],
        **extra,
    }


def sample_site(world, index: int = 0, roles: Mapping[str, int] | None = None) -> tuple[str, SiteContent]:
    """(content URL, the site) for the world's site ``index`` as it stands. ``roles`` (user LUID -> site
    role id) overrides the world's role, as the generator's snapshots do for a silent change."""
    site = world.sites[index]
    roles = roles or {}
    start = world.start_us
    held = SiteContent(site.luid)
    for i, u in enumerate(site.users):
        held.users.append(
            {
                "id": u.luid,
                "name": u.name,
                "fullName": u.display,
                "email": u.email,
                "siteRole": SITE_ROLE_NAMES[roles.get(u.luid, u.site_role_id)],
                "authSetting": "ServerDefault",
                "lastLogin": _time(start - (1 + i % 48) * 3_600_000_000),
                "locale": u.locale,
                "language": u.language,
                "domain": "local",
            }
        )
    never, unlicensed, deleted = (_luid(site, n) for n in ("never-signs-in", "unlicensed-owner", "deleted-owner"))
    held.users += [
        {"id": never, "name": "idle.creator", "fullName": "Idle Creator", "email": f"idle.creator@{site.domain}",
         "siteRole": "Creator", "authSetting": "ServerDefault", "domain": "local"},
        {"id": unlicensed, "name": "former.analyst", "fullName": "Former Analyst",
         "email": f"former.analyst@{site.domain}", "siteRole": "Unlicensed", "authSetting": "ServerDefault",
         "lastLogin": _time(start - 400 * 24 * 3_600_000_000), "domain": "local"},
    ]  # fmt: skip
    on_site = {u.luid for u in site.users}  # the stories leave the users they delete in the member lists
    for g in site.groups:
        members = [u.luid for u in g.members if u.luid in on_site]
        held.groups.append({"id": g.luid, "name": g.name, "domain": g.domain, "members": members})
    all_users = next(g for g in site.groups if g.name == "All Users")
    all_users_row = next(g for g in held.groups if g["id"] == all_users.luid)
    all_users_row["members"] += [never, unlicensed]
    others = [g for g in site.groups if g is not all_users]
    held.group_sets.append(
        {"id": _luid(site, "group-set"), "name": "Reviewers", "groups": [g.luid for g in others[:2]]}
    )
    for p in site.projects:
        held.projects.append(
            {
                "id": p.luid,
                "name": p.name,
                "description": p.description,
                "parentProjectId": p.parent.luid if p.parent else None,
                "contentPermissions": "LockedToProject" if p.name == LOCKED_PROJECT else "ManagedByOwner",
                "ownerId": p.owner.luid,
            }
        )
    locked = next(p for p in site.projects if p.name == LOCKED_PROJECT)
    held.permissions[("projects", locked.luid)] = [
        ("group", all_users.luid, {"Read": "Allow"}),
        ("group", others[0].luid, {"Read": "Allow", "Write": "Allow"}),
    ]
    held.default_permissions[(locked.luid, "workbooks")] = [
        ("group", all_users.luid, {"Read": "Allow", "ExportData": "Allow"}),
        ("group", others[1].luid, {"ExportData": "Deny"}),
    ]
    held.default_permissions[(locked.luid, "datasources")] = [("group", all_users.luid, {"Connect": "Allow"})]
    workbooks = site.content["workbook"]
    for w in workbooks:
        held.workbooks.append(_content(w, size=w.size, showTabs=True, hasExtracts=w.extract))
    legacy, archived = _luid(site, NEVER_OPENED), _luid(site, "Archived Forecast")
    held.workbooks += [
        {"id": legacy, "name": NEVER_OPENED, "contentUrl": "LegacyKPIs",
         "createdAt": _time(start - 900 * 86_400_000_000), "updatedAt": _time(start - 800 * 86_400_000_000),
         "projectId": locked.luid, "ownerId": deleted,
         "size": 120_000, "showTabs": False, "hasExtracts": False, "tags": ["legacy"]},
        {"id": archived, "name": "Archived Forecast", "contentUrl": "ArchivedForecast",
         "createdAt": _time(start - 500 * 86_400_000_000), "updatedAt": _time(start - 450 * 86_400_000_000),
         "projectId": locked.luid, "ownerId": unlicensed, "size": 56_000, "showTabs": True, "hasExtracts": True,
         "tags": []},
    ]  # fmt: skip
    for v in site.content["view"]:
        held.views.append(
            {
                "id": v.luid,
                "name": v.name,
                "contentUrl": v.repo_url,
                "sheetType": v.sheet_type,
                "createdAt": _time(v.created_us),
                "updatedAt": _time(v.updated_us or v.created_us),
                "workbookId": v.parent.luid,
                "projectId": v.project.luid,
                "ownerId": v.owner.luid,
                "tags": [],
            }
        )
    datasources = site.content["datasource"]
    for d in datasources:
        held.datasources.append(
            _content(
                d,
                type="hyper" if d.extract else "postgres",
                size=d.size,
                isCertified=d.certified,
                certificationNote="checked by the data team" if d.certified else None,
                hasExtracts=d.extract,
            )
        )
        held.connections[("datasources", d.luid)] = [
            {"id": _luid(site, f"conn-{d.luid}"), "type": "postgres", "serverAddress": "db.example.internal",
             "serverPort": "5432", "userName": "reporting", "embedPassword": False,
             "authenticationType": "username-password"},
        ]  # fmt: skip
        held.permissions[("datasources", d.luid)] = [("group", others[0].luid, {"Connect": "Allow", "Read": "Allow"})]
    embedded = held.connections[("datasources", datasources[0].luid)][0]
    embedded.update(embedPassword=True, userName="svc_reporting", password=EMBEDDED_PASSWORD)
    for w in workbooks:
        held.connections[("workbooks", w.luid)] = [
            {"id": _luid(site, f"conn-{w.luid}"), "type": "sqlproxy", "serverAddress": "localhost",
             "serverPort": "8060", "userName": "", "embedPassword": False, "datasourceId": datasources[0].luid},
        ]  # fmt: skip
    for f in site.content["flow"]:
        held.flows.append(_content(f))
        held.connections[("flows", f.luid)] = [
            {"id": _luid(site, f"conn-{f.luid}"), "type": "snowflake", "serverAddress": "acme.snowflakecomputing.com",
             "serverPort": "443", "userName": "prep", "embedPassword": False},
        ]  # fmt: skip
        del held.flows[-1]["tags"]
    held.permissions[("workbooks", workbooks[0].luid)] = [
        ("group", all_users.luid, {"Read": "Allow", "Filter": "Allow"}),
        ("group", others[1].luid, {"ExportData": "Deny"}),
    ]
    held.permissions[("workbooks", workbooks[1].luid)] = [
        ("group", others[0].luid, {"Read": "Allow"}),
        ("user", site.users[-1].luid, {"Read": "Deny"}),
    ]
    held.permissions[("views", workbooks[0].children[0].luid)] = [("user", site.users[0].luid, {"Read": "Allow"})]
    held.permissions[("flows", site.content["flow"][0].luid)] = [
        ("groupSet", held.group_sets[0]["id"], {"Read": "Allow"})
    ]
    return site.url, held


def write_sample_inventory(
    cfg,
    out: Path,
    seed: int,
    start: datetime,
    at: datetime,
    log=print,
    world=None,
    roles: Mapping[str, int] | None = None,
) -> InventoryReport:
    """``auditlake generate inventory``: every site of the world of ``seed`` and ``start`` (the ones
    ``generate activity-log`` writes the log of) served on loopback, and ``auditlake inventory`` run
    against it into ``out`` as of ``at``: the product's own client writes the files, as it would from
    Tableau. The token is made up for the run and put where ``tableau.token_*_env`` point.

    ``world`` is that world as the log's stories left it (``build_world(seed, start)``, as it stands
    before them, when None); ``roles`` as :func:`sample_site`'s."""
    world = world if world is not None else build_world(seed, start)
    content = dict(sample_site(world, i, roles) for i in range(len(world.sites)))
    name, token = "auditlake-sample", uuid.uuid4().hex
    server = TableauServer.start(token_name=name, token_secret=token, content=content)
    variables = {cfg.get("tableau.token_name_env"): name, cfg.get("tableau.token_secret_env"): token}
    before = {k: os.environ.get(k) for k in variables}
    try:
        os.environ.update(variables)
        sample = load_config(
            cfg.env,
            environ=os.environ
            | {"AUDITLAKE__TABLEAU__SERVER_URL": server.url, "AUDITLAKE__INVENTORY__SITES": f"[{', '.join(content)}]"},
        )
        return inventory(sample, dest=out, now=at, log=log)
    finally:
        server.stop()
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
