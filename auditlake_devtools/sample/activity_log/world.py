"""A small, coherent Tableau Cloud world built from a seed.

Three sites with users, groups, projects, workbooks and their views, data
sources, flows, the smaller content kinds (metrics, collections, catalog
objects), schedules and tasks, plus the Cloud Manager tenant that owns the sites.
Every event the generator writes names entities from here, so a view access
points at a real view of a real workbook of the site the record sits under.

Everything is drawn from one ``random.Random`` in a fixed order: the same seed
gives the same world.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from .values import DAY_US, HOUR_US, to_us

LICENSING_ROLE = {
    0: "Explorer",
    1: "Explorer",
    2: "Explorer",
    3: "Explorer",
    7: "Guest",
    8: "Unlicensed",
    9: "Viewer",
    10: "Creator",
    11: "Creator",
}
# Site role codes handed out to the ~40 users of a site, in order (first ones are admins).
_ROLE_PLAN = [
    11,
    11,
    0,
    10,
    10,
    10,
    10,
    10,
    10,
    2,
    2,
    2,
    2,
    2,
    3,
    3,
    3,
    3,
    3,
    3,
    3,
    3,
    3,
    3,
    9,
    9,
    9,
    9,
    9,
    9,
    9,
    9,
    9,
    9,
    9,
    9,
    9,
    9,
    8,
    8,
]

_FIRST = [
    "Ava",
    "Liam",
    "Noah",
    "Emma",
    "Olivia",
    "Mateo",
    "Sofia",
    "Lucas",
    "Mia",
    "Ethan",
    "Amelia",
    "Hiro",
    "Yuki",
    "Priya",
    "Arjun",
    "Chen",
    "Wei",
    "Fatima",
    "Omar",
    "Lena",
    "Jonas",
    "Søren",
    "Zoë",
    "José",
    "Chloé",
    "Björn",
    "Aisha",
    "Kwame",
    "Nadia",
    "Ivan",
    "Marta",
    "Paolo",
    "Grace",
    "Daniel",
    "Sara",
    "Tomás",
    "Ingrid",
    "Rafael",
    "Elena",
    "Mohammed",
    "Hannah",
    "Leo",
    "Nora",
    "Felix",
    "Julia",
    "Mason",
    "Aria",
    "Kai",
    "Layla",
    "Ruben",
]
_LAST = [
    "Smith",
    "García",
    "Müller",
    "Kim",
    "Nguyen",
    "Patel",
    "Rossi",
    "Silva",
    "Johnson",
    "Brown",
    "Tanaka",
    "Sato",
    "Kowalski",
    "Novak",
    "Dubois",
    "Larsen",
    "O'Brien",
    "Chen",
    "Singh",
    "Haddad",
    "Okafor",
    "Andersen",
    "Fischer",
    "Lopez",
    "Martin",
    "Walker",
    "Young",
    "Ivanova",
    "Costa",
    "Jensen",
    "Nakamura",
    "Schmidt",
    "Wright",
    "Hughes",
    "Moreau",
    "Becker",
]
_ASCII = str.maketrans(
    {
        "ø": "o",
        "ö": "o",
        "ü": "u",
        "é": "e",
        "á": "a",
        "í": "i",
        "ë": "e",
        "ó": "o",
        "'": "",
        "Ø": "O",
        "Ö": "O",
        "Ü": "U",
        "É": "E",
    }
)

_SITES = [
    ("Northwind Analytics", "northwind", "northwind-traders.example.com"),
    ("Contoso Finance", "contosofinance", "contoso.example.com"),
    ("Fabrikam Field Ops", "fabrikamops", "fabrikam.example.org"),
]
_TOP_PROJECTS = ["Default", "Finance", "Sales", "Operations", "Marketing", "People"]
_SUB_PROJECTS = ["Forecasts", "EMEA", "Americas", "Certified", "Sandbox", "Archive", "Quarterly Close"]
_WB_SUBJECTS = [
    "Sales Pipeline",
    "Executive Overview",
    "Revenue Forecast",
    "Churn Analysis",
    "Inventory Health",
    "Support Tickets",
    "Marketing Funnel",
    "Headcount",
    "Cash Flow",
    "Supply Chain",
    "Customer 360",
    "Regional Performance",
    "Pricing Study",
    "Web Traffic",
    "Budget vs Actuals",
    "Quota Attainment",
    "Returns Analysis",
    "Shipping Times",
    "Product Mix",
    "Campaign ROI",
    "Hiring Funnel",
    "Expense Audit",
    "Store Sales",
    "Logistics KPIs",
    "Daily Flash",
]
_VIEW_NAMES = [
    "Overview",
    "By Region",
    "Trend",
    "Detail",
    "Top Customers",
    "Map",
    "Summary",
    "YoY",
    "Drilldown",
    "Scorecard",
    "KPIs",
    "Forecast",
]
_FIELDS = [
    "Sales",
    "Profit",
    "Region",
    "Order Date",
    "Customer Name",
    "Category",
    "Quantity",
    "Discount",
    "Segment",
    "Ship Mode",
    "State",
    "Headcount",
    "Budget",
    "Actual",
]
_DS_NAMES = [
    "Orders",
    "Superstore",
    "Salesforce Opportunities",
    "Snowflake Finance Mart",
    "HR Core",
    "Zendesk Tickets",
    "Inventory Snapshot",
    "Web Analytics",
    "GL Transactions",
    "Marketing Leads",
    "Shipments",
    "Product Catalog",
]
_GROUP_NAMES = [
    "Finance Analysts",
    "Sales Leadership",
    "Data Stewards",
    "Operations",
    "Marketing",
    "Executives",
]
_SCHEDULES = [
    ("Hourly", 1, 60, 0),
    ("Daily 6AM", 2, 1440, 360),
    ("Nightly", 2, 1440, 120),
    ("Weekday Mornings", 2, 1440, 420),
    ("Weekly Monday", 3, 10080, 300),
    ("Monthly Close", 4, 0, 240),
]
_MISC_KINDS = {
    "metric": ["Revenue MTD", "Open Tickets", "Churn Rate", "Pipeline Coverage"],
    "collection": ["Quarterly Review", "Onboarding Pack", "Exec Favorites"],
    "column": ["ORDER_ID", "CUSTOMER_EMAIL", "AMOUNT_USD", "REGION_CODE"],
    "table": ["FACT_ORDERS", "DIM_CUSTOMER", "GL_ENTRIES", "DIM_PRODUCT"],
    "database": ["ANALYTICS_PROD", "FINANCE_DW", "HR_CORE"],
    "data_role": ["Country Names", "Cost Center", "Product SKU"],
    "published_connection": ["Snowflake Prod", "Salesforce OAuth", "Postgres Ops"],
    "dqi": ["Stale Data", "Under Maintenance", "Deprecated"],
}


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


@dataclass(eq=False, repr=False)
class User:
    id: int
    luid: str
    name: str  # sign-in user name
    display: str
    email: str
    site_role_id: int
    system_admin_level: int
    licensing: str
    site_index: int
    tenant_user_id: str
    tenant_role: str
    ip: str
    user_agent: str
    language: str
    locale: str
    groups: list = field(default_factory=list)
    created_us: int = 0

    @property
    def is_admin(self) -> bool:
        return self.site_role_id in (0, 11)


@dataclass(eq=False, repr=False)
class Group:
    id: int
    luid: str
    name: str
    domain: str
    members: list


@dataclass(eq=False, repr=False)
class Content:
    """Any piece of site content (project, workbook, view, data source, flow, metric, ...)."""

    kind: str
    id: int
    luid: str
    name: str
    description: str
    owner: User
    project: Content | None
    repo_url: str
    revision: str
    size: int
    created_us: int
    updated_us: int
    parent: Content | None = None  # parent project, or the workbook of a view, flow of a draft
    children: list = field(default_factory=list)  # views of a workbook
    index: int = 0
    sheet_type: str = "view"
    fields: str = ""
    certified: bool = False
    extract: bool = False


@dataclass(eq=False, repr=False)
class Schedule:
    id: int
    luid: str
    name: str
    schedule_type: int
    minute_interval: int
    start_at_minute: int
    priority: int
    day_of_week_mask: int
    day_of_month_mask: int
    is_serial: bool


@dataclass(eq=False, repr=False)
class Task:
    id: int
    luid: str
    type: str
    obj: Content
    schedule: Schedule
    creator: User
    priority: int
    fail_rate: float
    consecutive_failures: int = 0
    last_success_us: int = 0


@dataclass(eq=False, repr=False)
class Site:
    index: int
    id: int
    luid: str
    name: str
    url: str
    domain: str
    users: list
    groups: list
    projects: list
    content: dict  # kind -> list[Content]
    schedules: list
    tasks: list
    active_users: list = field(default_factory=list)
    active_weights: list = field(default_factory=list)  # cumulative
    admins: list = field(default_factory=list)


@dataclass(eq=False, repr=False)
class Tenant:
    id: str
    name: str
    uri: str
    pod_uri: str
    org62_id: str
    saml_resource_id: str
    oidc_resource_id: str
    private_connection_id: str
    admins: list


@dataclass(eq=False, repr=False)
class World:
    seed: int
    sites: list
    tenant: Tenant
    users: list
    start_us: int


_UAS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.4 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Tableau Desktop 2024.2.0 (20242.24.0613.0931) 64-bit",
    "TableauMobile/24.6 (iPhone; iOS 17.5)",
    "python-requests/2.32.3 tableauserverclient/0.31",
]
_LANGS = [
    ("en", "en-US"),
    ("en", "en-GB"),
    ("fr", "fr-FR"),
    ("de", "de-DE"),
    ("ja", "ja-JP"),
    ("es", "es-ES"),
]


# How much each site role browses, relative to the others (viewers and explorers browse most).
_ROLE_ACTIVITY = {0: 3, 1: 0.5, 2: 4, 3: 5, 7: 0.5, 8: 0.05, 9: 6, 10: 4, 11: 3}


class _Draws:
    """The world's one random stream with the shared id counter and clock every builder below draws from."""

    def __init__(self, rng: random.Random, start_us: int) -> None:
        self.rng = rng
        self.start_us = start_us
        self.next_id = 1000 + rng.randrange(9000)
        self.sys_admins_left = 2

    def nid(self) -> int:
        """The next numeric id: increasing across the whole world, with random gaps like a real repository."""
        self.next_id += self.rng.randint(1, 37)
        return self.next_id

    def uuid(self) -> str:
        """A fresh LUID drawn from the world's stream, so the same seed gives the same LUIDs."""
        return _uuid(self.rng)

    def content(self, kind: str, name: str, owner: User, project, repo: str, size: int, **kw) -> Content:
        """One content item with fresh ids and creation/update dates before the window start."""
        rng, day = self.rng, DAY_US
        created = self.start_us - rng.randint(10, 700) * day - rng.randrange(day)
        updated = created + rng.randint(0, max(1, (self.start_us - created) // day - 1)) * day
        return Content(
            kind=kind,
            id=self.nid(),
            luid=self.uuid(),
            name=name,
            description=f"{name} ({kind.replace('_', ' ')})",
            owner=owner,
            project=project,
            repo_url=repo,
            revision=f"1.{rng.randint(0, 14)}",
            size=size,
            created_us=created,
            updated_us=updated,
            **kw,
        )


def build_world(seed: int = 42, start: datetime | None = None) -> World:
    """The world for ``seed``; content creation dates lie before ``start``."""
    rng = random.Random(f"world-{seed}")
    start = start or datetime(2026, 6, 1, tzinfo=UTC)
    draws = _Draws(rng, to_us(start))
    sites = [_build_site(draws, si, sname, url, domain) for si, (sname, url, domain) in enumerate(_SITES)]
    all_users = [u for site in sites for u in site.users]
    tenant = _build_tenant(draws, all_users)
    return World(seed=seed, sites=sites, tenant=tenant, users=all_users, start_us=draws.start_us)


def _build_site(draws: _Draws, si: int, name: str, url: str, domain: str) -> Site:
    """One site with its users, groups, content, schedules and tasks, built in the fixed draw order."""
    site = Site(
        index=si,
        id=draws.rng.randint(2, 900),
        luid=draws.uuid(),
        name=name,
        url=url,
        domain=domain,
        users=[],
        groups=[],
        projects=[],
        content={},
        schedules=[],
        tasks=[],
    )
    _add_users(draws, site)
    _add_groups(draws, site)
    creators = [u for u in site.users if u.site_role_id in (0, 2, 10, 11)]
    site.admins = [u for u in site.users if u.is_admin]
    _add_projects(draws, site, creators)
    site.content["workbook"], site.content["view"] = _workbooks(draws, site, creators)
    site.content["project"] = site.projects
    site.content["datasource"] = _datasources(draws, site, creators)
    site.content["flow"] = _flows(draws, site, creators)
    site.content["flow_draft"] = _flow_drafts(draws, site.content["flow"])
    _add_misc_content(draws, site, creators)
    _add_schedules(draws, site)
    _add_tasks(draws, site)
    _add_activity_weights(draws, site)
    return site


def _site_roles(si: int) -> list[int]:
    """The site role of each user slot; the first site also gets one guest and one support user."""
    roles = list(_ROLE_PLAN)
    if si == 0:
        roles[-1] = 7  # one guest
        roles[-3] = 1  # one support user
    return roles


def _unique_name(rng: random.Random, names_seen: set) -> tuple[str, str]:
    """A (first, last) name not yet used on the site, so no two of its users share a display name."""
    while True:
        first, last = rng.choice(_FIRST), rng.choice(_LAST)
        if (first, last) not in names_seen:
            names_seen.add((first, last))
            return first, last


def _add_users(draws: _Draws, site: Site) -> None:
    """The site's ~40 users, one per role slot, so every role the events mention exists."""
    names_seen: set[tuple[str, str]] = set()
    for ui, role in enumerate(_site_roles(site.index)):
        first, last = _unique_name(draws.rng, names_seen)
        site.users.append(_make_user(draws, site, ui, role, first, last))


def _system_admin_level(draws: _Draws, si: int, ui: int, role: int) -> int:
    """10 for the first admin of each of the first two sites (at most two system admins), else 0."""
    if draws.sys_admins_left and role == 11 and ui == 0 and si < 2:
        draws.sys_admins_left -= 1
        return 10
    return 0


def _make_user(draws: _Draws, site: Site, ui: int, role: int, first: str, last: str) -> User:
    """One user of ``site`` with sign-in name, email, tenant role, network address and client from the name/role."""
    rng, si = draws.rng, site.index
    uname = f"{first[0]}{last}".translate(_ASCII).lower()
    email = f"{first}.{last}".translate(_ASCII).lower() + f"@{site.domain}"
    sal = _system_admin_level(draws, si, ui, role)
    lang, loc = rng.choice(_LANGS)
    return User(
        id=draws.nid(),
        luid=draws.uuid(),
        name=uname,
        display=f"{first} {last}",
        email=email,
        site_role_id=role,
        system_admin_level=sal,
        licensing=LICENSING_ROLE[role],
        site_index=si,
        tenant_user_id=draws.uuid(),
        tenant_role="TenantAdmin" if (role == 11 and ui == 0) else ("SiteAdmin" if role in (0, 11) else "User"),
        ip=f"10.{20 + si}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        if rng.random() < 0.7
        else f"198.51.100.{rng.randint(1, 254)}",
        user_agent=rng.choice(_UAS[:5]),
        language=lang,
        locale=loc,
        created_us=draws.start_us - rng.randint(30, 900) * DAY_US,
    )


def _add_groups(draws: _Draws, site: Site) -> None:
    """The site's All Users group plus the named groups with random members, linked onto each member."""
    rng = draws.rng
    site.groups.append(
        Group(id=draws.nid(), luid=draws.uuid(), name="All Users", domain="local", members=list(site.users))
    )
    for gname in _GROUP_NAMES:
        members = rng.sample(site.users, rng.randint(4, 14))
        members.sort(key=lambda u: u.id)
        site.groups.append(
            Group(
                id=draws.nid(),
                luid=draws.uuid(),
                name=gname,
                domain="local" if rng.random() < 0.6 else site.domain,
                members=members,
            )
        )
    for g in site.groups:
        for u in g.members:
            u.groups.append(g)


def _add_projects(draws: _Draws, site: Site, creators: list) -> None:
    """Admin-owned top-level projects, then nested ones under them; a project's projectLuid is itself."""
    rng = draws.rng
    for pname in _TOP_PROJECTS:
        site.projects.append(draws.content("project", pname, rng.choice(site.admins), None, "", 0))
    for pname in _SUB_PROJECTS:
        parent = rng.choice(site.projects[1 : len(_TOP_PROJECTS)])
        p = draws.content("project", pname, rng.choice(creators), None, "", 0, parent=parent)
        site.projects.append(p)
    for p in site.projects:
        p.project = p  # a project's projectLuid is itself


def _workbooks(draws: _Draws, site: Site, creators: list) -> tuple[list, list]:
    """22 workbooks in random projects, each with its views; returns (workbooks, all their views)."""
    rng = draws.rng
    wbs, views = [], []
    for wname in rng.sample(_WB_SUBJECTS, 22):
        owner = rng.choice(creators)
        wb = draws.content(
            "workbook",
            wname,
            owner,
            rng.choice(site.projects),
            wname.replace(" ", ""),
            rng.randint(40_000, 90_000_000),
            extract=rng.random() < 0.5,
        )
        _add_views(draws, wb)
        views.extend(wb.children)
        wbs.append(wb)
    return wbs, views


def _add_views(draws: _Draws, wb: Content) -> None:
    """The 2-6 sheets of one workbook, sharing its owner, project, revision and creation date."""
    rng = draws.rng
    for vi, vname in enumerate(rng.sample(_VIEW_NAMES, rng.randint(2, 6))):
        v = draws.content(
            "view",
            vname,
            wb.owner,
            wb.project,
            f"{wb.repo_url}/sheets/{vname.replace(' ', '')}",
            0,
            parent=wb,
            index=vi,
            sheet_type=rng.choice(["view", "view", "dashboard", "story"]),
            fields=", ".join(rng.sample(_FIELDS, rng.randint(2, 6))),
        )
        v.revision = wb.revision
        v.created_us = wb.created_us
        wb.children.append(v)


def _datasources(draws: _Draws, site: Site, creators: list) -> list:
    """One published data source per name in ``_DS_NAMES``, some certified, most extracts."""
    rng = draws.rng
    dss = []
    for dname in _DS_NAMES:
        owner = rng.choice(creators)
        dss.append(
            draws.content(
                "datasource",
                dname,
                owner,
                rng.choice(site.projects),
                dname.replace(" ", ""),
                rng.randint(10_000, 2_000_000_000),
                certified=rng.random() < 0.3,
                extract=rng.random() < 0.7,
            )
        )
    return dss


def _flows(draws: _Draws, site: Site, creators: list) -> list:
    """The site's four Prep flows, in random projects with creator owners."""
    rng = draws.rng
    return [
        draws.content(
            "flow",
            fname,
            rng.choice(creators),
            rng.choice(site.projects),
            fname.replace(" ", ""),
            rng.randint(5_000, 40_000_000),
        )
        for fname in ["Clean Orders", "Prep GL", "Merge Leads", "Daily Snapshot"]
    ]


def _flow_drafts(draws: _Draws, flows: list) -> list:
    """A draft of each of the first three flows, with the flow's owner and project and the flow as parent."""
    rng = draws.rng
    return [
        draws.content(
            "flow_draft",
            f.name + " (draft)",
            f.owner,
            f.project,
            f.repo_url + "Draft",
            rng.randint(2_000_000_000, 9_000_000_000),
            parent=f,
        )
        for f in flows[:3]
    ]


def _add_misc_content(draws: _Draws, site: Site, creators: list) -> None:
    """The smaller kinds (metrics, collections, catalog objects, ...); each metric hangs off a view."""
    rng = draws.rng
    for kind, names in _MISC_KINDS.items():
        lst = []
        for n in names:
            c = draws.content(
                kind,
                n,
                rng.choice(creators),
                rng.choice(site.projects),
                n.replace(" ", ""),
                rng.randint(1_000, 5_000_000),
            )
            if kind == "metric":
                c.parent = rng.choice(site.content["view"])
            lst.append(c)
        site.content[kind] = lst


def _add_schedules(draws: _Draws, site: Site) -> None:
    """The site's schedules from ``_SCHEDULES``, with day masks derived from their names."""
    rng = draws.rng
    for name, stype, interval, start_min in _SCHEDULES:
        site.schedules.append(
            Schedule(
                id=draws.nid(),
                luid=draws.uuid(),
                name=name,
                schedule_type=stype,
                minute_interval=interval,
                start_at_minute=start_min,
                priority=rng.choice([10, 50, 50, 75]),
                day_of_week_mask=62 if "Weekday" in name else (2 if "Monday" in name else 127),
                day_of_month_mask=1 if "Monthly" in name else 0,
                is_serial=rng.random() < 0.3,
            )
        )


def _add_tasks(draws: _Draws, site: Site) -> None:
    """The background tasks the job events run (extracts, subscriptions, flows), each with a last success time."""
    _add_extract_tasks(draws, site)
    _add_subscription_tasks(draws, site)
    _add_flow_tasks(draws, site)
    for t in site.tasks:
        t.last_success_us = draws.start_us - draws.rng.randint(1, 72) * HOUR_US


def _add_extract_tasks(draws: _Draws, site: Site) -> None:
    """A refresh task (every fifth incremental) per extract workbook/data source; the second one mostly fails."""
    rng = draws.rng
    extractables = [c for c in site.content["workbook"] + site.content["datasource"] if c.extract]
    for i, obj in enumerate(extractables):
        site.tasks.append(
            Task(
                id=draws.nid(),
                luid=draws.uuid(),
                type="IncrementExtractTask" if i % 5 == 4 else "RefreshExtractTask",
                obj=obj,
                schedule=rng.choice(site.schedules),
                creator=obj.owner,
                priority=rng.choice([10, 50, 70]),
                fail_rate=0.85 if i == 1 else rng.choice([0.02, 0.05, 0.1]),
            )
        )


def _add_subscription_tasks(draws: _Draws, site: Site) -> None:
    """Subscriptions to five random workbooks, created by early (mostly admin/creator) users."""
    rng = draws.rng
    for wb in rng.sample(site.content["workbook"], 5):
        site.tasks.append(
            Task(
                id=draws.nid(),
                luid=draws.uuid(),
                type="SubscriptionTask",
                obj=wb,
                schedule=rng.choice(site.schedules),
                creator=rng.choice(site.users[:20]),
                priority=50,
                fail_rate=0.03,
            )
        )


def _add_flow_tasks(draws: _Draws, site: Site) -> None:
    """A scheduled run task per flow, created by the flow's owner."""
    rng = draws.rng
    for f in site.content["flow"]:
        site.tasks.append(
            Task(
                id=draws.nid(),
                luid=draws.uuid(),
                type="FlowRunTask",
                obj=f,
                schedule=rng.choice(site.schedules),
                creator=f.owner,
                priority=50,
                fail_rate=0.08,
            )
        )


def _add_activity_weights(draws: _Draws, site: Site) -> None:
    """Cumulative per-user activity weights (by role, jittered) so the generator picks active users realistically."""
    cum = 0.0
    for u in site.users:
        cum += _ROLE_ACTIVITY[u.site_role_id] * draws.rng.uniform(0.3, 2.0)
        site.active_users.append(u)
        site.active_weights.append(cum)


def _build_tenant(draws: _Draws, all_users: list) -> Tenant:
    """The Cloud Manager tenant that owns the sites; its admins are the users with the TenantAdmin role."""
    rng = draws.rng
    return Tenant(
        id=draws.uuid(),
        name="Northwind Holdings",
        uri="https://northwind-holdings.cloudmanager.tableau.example.com",
        pod_uri="https://prod-useast-b.online.tableau.example.com",
        org62_id="00D" + "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789") for _ in range(12)),
        saml_resource_id=draws.uuid(),
        oidc_resource_id=draws.uuid(),
        private_connection_id=draws.uuid(),
        admins=[u for u in all_users if u.tenant_role == "TenantAdmin"],
    )
