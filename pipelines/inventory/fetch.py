"""One site's state through ``tableauserverclient``: every listing page by page (``TSC.Pager``), each
item's connections and permission rules, turned into rows of the columns ``SCHEMAS`` declares.

A type's rows are complete or absent: a snapshot is a site's whole state, so a type one of whose calls
was refused (a site without flows, say) is left out of this hour rather than written in part, which
silver would read as rows gone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pipelines.errors import one_line

# grantee element names in a permissions answer -> the rows' grantee_type
GRANTEES = {"user": "user", "group": "group", "groupSet": "group_set"}
# project default permission templates read (the content types a project holds for the audit's questions)
DEFAULT_TEMPLATES = ("workbook", "datasource", "flow")
SERVER_ADMINISTRATOR = "ServerAdministrator"


@dataclass
class SiteState:
    """What one site gave: rows per entity type, and a line per type left out."""

    rows: dict[str, list[dict]] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)


def _tags(item) -> list[str]:
    return sorted(item.tags or [])


def _size(value) -> int | None:
    return int(value) if value not in (None, "") else None


def _rules(item_type: str, item_luid: str, rules) -> list[dict]:
    return [
        {
            "item_type": item_type,
            "item_luid": item_luid,
            "grantee_type": GRANTEES.get(rule.grantee.tag_name, rule.grantee.tag_name),
            "grantee_luid": rule.grantee.id,
            "capability": capability,
            "mode": mode,
        }
        for rule in rules
        for capability, mode in sorted(rule.capabilities.items())
    ]


def _connections(item_type: str, item_luid: str, connections) -> list[dict]:
    return [
        {
            "luid": c.id,
            "item_type": item_type,
            "item_luid": item_luid,
            "connection_type": c.connection_type,
            "server_address": c.server_address,
            "server_port": c.server_port,
            "user_name": c.username,
            "embed_password": bool(c.embed_password),
            "auth_type": c.auth_type,
            "datasource_luid": c.datasource_id,
        }
        for c in connections
    ]


def read_site(server, page_size: int, log: Callable[[str], None] = print) -> SiteState:
    """Every entity type of the site ``server`` is signed in to. A refusal (``ServerResponseError``) of
    one type's calls leaves that type out and is said in one line; the others go on."""
    import tableauserverclient as TSC

    state = SiteState()

    def listing(
        endpoint, key: str, row: Callable, related: Callable | None = None, related_keys: tuple[str, ...] = (), **kwargs
    ) -> dict[str, list[dict]]:
        """Every item of ``endpoint``, page by page (``TSC.Pager``): its row under ``key``, and what
        ``related`` reads of it (calls of its own, item by item) under ``related_keys``, present even
        when there is no item."""
        got: dict[str, list[dict]] = {key: [], **{k: [] for k in related_keys}}
        for item in TSC.Pager(endpoint, TSC.RequestOptions(pagesize=page_size), **kwargs):
            got[key].append(row(item))
            for k, rows in (related(item) if related else {}).items():
                got[k] += rows
        return got

    def take(types: tuple[str, ...], read: Callable[[], dict[str, list[dict]]]) -> dict[str, list[dict]]:
        try:
            got = read()
        except TSC.ServerResponseError as exc:
            line = f"{', '.join(types)}: Tableau answered {exc.code}: {exc.summary} ({one_line(exc.detail or '')})"
            state.left_out.append(line)
            log(f"inventory: site {server.site_id}: {line}; left out of this snapshot")
            return {}
        state.rows.update(got)
        return got

    def user(u) -> dict:
        return {
            "luid": u.id,
            "id": None,
            "name": u.name,
            "display_name": u.fullname,
            "email": u.email,
            "site_role": u.site_role,
            "is_system_admin": u.site_role == SERVER_ADMINISTRATOR,
            "created_at": None,
            "auth_setting": u.auth_setting,
            "last_login": u.last_login,
            "domain_name": u.domain_name,
            "locale": u.locale,
            "language": u.language,
        }

    def group(g) -> dict:
        return {
            "luid": g.id,
            "id": None,
            "name": g.name,
            "domain_name": g.domain_name,
            "minimum_site_role": g.minimum_site_role,
            "license_mode": g.license_mode,
        }

    def group_members(g) -> dict[str, list[dict]]:
        server.groups.populate_users(g, TSC.RequestOptions(pagesize=page_size))
        return {"group_members": [{"group_luid": g.id, "user_luid": u.id} for u in g.users]}

    def group_set(s) -> dict:
        return {"luid": s.id, "name": s.name}

    def group_set_members(s) -> dict[str, list[dict]]:  # listed with its members: no call of its own
        return {"group_set_members": [{"group_set_luid": s.id, "group_luid": g.id} for g in s.groups]}

    def project(p) -> dict:
        return {
            "luid": p.id,
            "name": p.name,
            "description": p.description,
            "parent_project_luid": p.parent_id,
            "owner_luid": p.owner_id,
            "content_permissions": p.content_permissions,
        }

    def project_rules(p) -> dict[str, list[dict]]:
        server.projects.populate_permissions(p)
        rules = _rules("project", p.id, p.permissions)  # read now: populating only sets what reads them
        defaults = []
        for content_type in DEFAULT_TEMPLATES:
            getattr(server.projects, f"populate_{content_type}_default_permissions")(p)
            for rule in _rules("project", p.id, getattr(p, f"default_{content_type}_permissions")):
                defaults.append(
                    {"project_luid": p.id, "content_type": content_type}
                    | {k: rule[k] for k in ("grantee_type", "grantee_luid", "capability", "mode")}
                )
        return {"permissions": rules, "default_permissions": defaults}

    def content(kind: str, endpoint, row: Callable, connections: bool) -> Callable[[], dict[str, list[dict]]]:
        def related(item) -> dict[str, list[dict]]:
            links = []
            if connections:
                endpoint.populate_connections(item)
                links = _connections(kind, item.id, item.connections)
            endpoint.populate_permissions(item)
            return {f"{kind}_connections": links, f"{kind}_permissions": _rules(kind, item.id, item.permissions)}

        return lambda: listing(endpoint, f"{kind}s", row, related, (f"{kind}_connections", f"{kind}_permissions"))

    def workbook(w) -> dict:
        return {
            "luid": w.id,
            "id": None,
            "name": w.name,
            "project_luid": w.project_id,
            "owner_luid": w.owner_id,
            "size": _size(w.size),
            "created_at": w.created_at,
            "updated_at": w.updated_at,
            "content_url": w.content_url,
            "show_tabs": w.show_tabs,
            "has_extracts": w.has_extracts,
            "tags": _tags(w),
        }

    def view(v) -> dict:
        return {
            "luid": v.id,
            "name": v.name,
            "workbook_luid": v.workbook_id,
            "project_luid": v.project_id,
            "owner_luid": v.owner_id,
            "content_url": v.content_url,
            "sheet_type": v.sheet_type,
            "created_at": v.created_at,
            "updated_at": v.updated_at,
            "tags": _tags(v),
        }

    def datasource(d) -> dict:
        return {
            "luid": d.id,
            "id": None,
            "name": d.name,
            "project_luid": d.project_id,
            "owner_luid": d.owner_id,
            "size": _size(d.size),
            "created_at": d.created_at,
            "updated_at": d.updated_at,
            "content_url": d.content_url,
            "datasource_type": d.datasource_type,
            "is_certified": bool(d.certified),
            "certification_note": d.certification_note,
            "has_extracts": _bool(d.has_extracts),
            "tags": _tags(d),
        }

    def flow(f) -> dict:
        return {
            "luid": f.id,
            "name": f.name,
            "project_luid": f.project_id,
            "owner_luid": f.owner_id,
            "created_at": f.created_at,
            "updated_at": f.updated_at,
            "tags": _tags(f),
        }

    take(("users",), lambda: listing(server.users, "users", user))
    take(
        ("groups", "group_members"), lambda: listing(server.groups, "groups", group, group_members, ("group_members",))
    )
    if _version(server.version) >= (3, 22):  # group sets came with this version of the API
        take(
            ("group_sets", "group_set_members"),
            lambda: listing(
                server.group_sets,
                "group_sets",
                group_set,
                group_set_members,
                ("group_set_members",),
                result_level="members",
            ),
        )
    # permissions and connections are one type each across the kinds of item: complete only when every
    # kind's calls succeeded
    ruled = ("permissions", "default_permissions")
    parts = [take(("projects", *ruled), lambda: listing(server.projects, "projects", project, project_rules, ruled))]
    for kind, endpoint, row, links in (
        ("workbook", server.workbooks, workbook, True),
        ("view", server.views, view, False),
        ("datasource", server.datasources, datasource, True),
        ("flow", server.flows, flow, True),
    ):
        got = take((f"{kind}s",), content(kind, endpoint, row, links))
        parts.append(got)
        for key in (f"{kind}_connections", f"{kind}_permissions"):
            state.rows.pop(key, None)
    # connections need every kind of item read; permission rules the projects too
    every_kind = all(parts[1:])
    rules = ("permissions", *(f"{k}_permissions" for k in KINDS))
    _combine(state, parts, "permissions", rules, every_kind and bool(parts[0]))
    _combine(state, parts, "data_connections", tuple(f"{k}_connections" for k in KINDS), every_kind)
    return state


KINDS = ("workbook", "view", "datasource", "flow")


def _combine(state: SiteState, parts: list[dict], name: str, keys: tuple[str, ...], complete: bool) -> None:
    if not complete:
        state.rows.pop(name, None)
        state.left_out.append(f"{name}: some items could not be read")
        return
    state.rows[name] = [row for part in parts for key in keys for row in part.get(key, [])]


def _bool(value) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    return str(value).lower() == "true"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in str(text).split(".") if p.isdigit())
