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

from .values import iso_micro, to_us

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
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0 Safari/537.36",
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


def build_world(seed: int = 42, start: datetime | None = None) -> World:
    """The world for ``seed``; content creation dates lie before ``start``."""
    rng = random.Random(f"world-{seed}")
    start = start or datetime(2026, 6, 1, tzinfo=UTC)
    start_us = to_us(start)
    day = 86_400_000_000
    next_id = [1000 + rng.randrange(9000)]

    def nid() -> int:
        next_id[0] += rng.randint(1, 37)
        return next_id[0]

    all_users: list[User] = []
    sites: list[Site] = []
    sys_admins_left = 2
    for si, (sname, url, domain) in enumerate(_SITES):
        site = Site(
            index=si,
            id=rng.randint(2, 900),
            luid=_uuid(rng),
            name=sname,
            url=url,
            domain=domain,
            users=[],
            groups=[],
            projects=[],
            content={},
            schedules=[],
            tasks=[],
        )
        names_seen: set[str] = set()
        roles = list(_ROLE_PLAN)
        if si == 0:
            roles[-1] = 7  # one guest
            roles[-3] = 1  # one support user
        for ui, role in enumerate(roles):
            while True:
                first, last = rng.choice(_FIRST), rng.choice(_LAST)
                if (first, last) not in names_seen:
                    names_seen.add((first, last))
                    break
            uname = f"{first[0]}{last}".translate(_ASCII).lower()
            email = f"{first}.{last}".translate(_ASCII).lower() + f"@{domain}"
            sal = 0
            if sys_admins_left and role == 11 and ui == 0 and si < 2:
                sal = 10
                sys_admins_left -= 1
            lang, loc = rng.choice(_LANGS)
            user = User(
                id=nid(),
                luid=_uuid(rng),
                name=uname,
                display=f"{first} {last}",
                email=email,
                site_role_id=role,
                system_admin_level=sal,
                licensing=LICENSING_ROLE[role],
                site_index=si,
                tenant_user_id=_uuid(rng),
                tenant_role="TenantAdmin"
                if (role == 11 and ui == 0)
                else ("SiteAdmin" if role in (0, 11) else "User"),
                ip=f"10.{20 + si}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
                if rng.random() < 0.7
                else f"198.51.100.{rng.randint(1, 254)}",
                user_agent=rng.choice(_UAS[:5]),
                language=lang,
                locale=loc,
                created_us=start_us - rng.randint(30, 900) * day,
            )
            site.users.append(user)
            all_users.append(user)
        # groups
        all_users_group = Group(
            id=nid(), luid=_uuid(rng), name="All Users", domain="local", members=list(site.users)
        )
        site.groups.append(all_users_group)
        for gname in _GROUP_NAMES:
            members = rng.sample(site.users, rng.randint(4, 14))
            members.sort(key=lambda u: u.id)
            site.groups.append(
                Group(
                    id=nid(),
                    luid=_uuid(rng),
                    name=gname,
                    domain="local" if rng.random() < 0.6 else domain,
                    members=members,
                )
            )
        for g in site.groups:
            for u in g.members:
                u.groups.append(g)
        creators = [u for u in site.users if u.site_role_id in (0, 2, 10, 11)]
        site.admins = [u for u in site.users if u.is_admin]

        def content(kind: str, name: str, owner: User, project, repo: str, size: int, **kw) -> Content:
            created = start_us - rng.randint(10, 700) * day - rng.randrange(day)
            updated = created + rng.randint(0, max(1, (start_us - created) // day - 1)) * day
            return Content(
                kind=kind,
                id=nid(),
                luid=_uuid(rng),
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

        # projects: a few top-level, some nested
        for pname in _TOP_PROJECTS:
            site.projects.append(content("project", pname, rng.choice(site.admins), None, "", 0))
        for pname in _SUB_PROJECTS:
            parent = rng.choice(site.projects[1 : len(_TOP_PROJECTS)])
            p = content("project", pname, rng.choice(creators), None, "", 0, parent=parent)
            site.projects.append(p)
        for p in site.projects:
            p.project = p  # a project's projectLuid is itself
        wbs, views = [], []
        for wname in rng.sample(_WB_SUBJECTS, 22):
            owner = rng.choice(creators)
            repo = wname.replace(" ", "")
            wb = content(
                "workbook",
                wname,
                owner,
                rng.choice(site.projects),
                repo,
                rng.randint(40_000, 90_000_000),
                extract=rng.random() < 0.5,
            )
            for vi, vname in enumerate(rng.sample(_VIEW_NAMES, rng.randint(2, 6))):
                v = content(
                    "view",
                    vname,
                    owner,
                    wb.project,
                    f"{repo}/sheets/{vname.replace(' ', '')}",
                    0,
                    parent=wb,
                    index=vi,
                    sheet_type=rng.choice(["view", "view", "dashboard", "story"]),
                    fields=", ".join(rng.sample(_FIELDS, rng.randint(2, 6))),
                )
                v.revision = wb.revision
                v.created_us = wb.created_us
                wb.children.append(v)
                views.append(v)
            wbs.append(wb)
        site.content["workbook"] = wbs
        site.content["view"] = views
        site.content["project"] = site.projects
        dss = []
        for dname in _DS_NAMES:
            owner = rng.choice(creators)
            dss.append(
                content(
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
        site.content["datasource"] = dss
        flows, drafts = [], []
        for fname in ["Clean Orders", "Prep GL", "Merge Leads", "Daily Snapshot"]:
            f = content(
                "flow",
                fname,
                rng.choice(creators),
                rng.choice(site.projects),
                fname.replace(" ", ""),
                rng.randint(5_000, 40_000_000),
            )
            flows.append(f)
        for f in flows[:3]:
            d = content(
                "flow_draft",
                f.name + " (draft)",
                f.owner,
                f.project,
                f.repo_url + "Draft",
                rng.randint(2_000_000_000, 9_000_000_000),
                parent=f,
            )
            drafts.append(d)
        site.content["flow"] = flows
        site.content["flow_draft"] = drafts
        for kind, names in _MISC_KINDS.items():
            lst = []
            for n in names:
                c = content(
                    kind,
                    n,
                    rng.choice(creators),
                    rng.choice(site.projects),
                    n.replace(" ", ""),
                    rng.randint(1_000, 5_000_000),
                )
                if kind == "metric":
                    c.parent = rng.choice(views)
                lst.append(c)
            site.content[kind] = lst
        # schedules and tasks
        for name, stype, interval, start_min in _SCHEDULES:
            site.schedules.append(
                Schedule(
                    id=nid(),
                    luid=_uuid(rng),
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
        extractables = [c for c in wbs + dss if c.extract]
        for i, obj in enumerate(extractables):
            site.tasks.append(
                Task(
                    id=nid(),
                    luid=_uuid(rng),
                    type="IncrementExtractTask" if i % 5 == 4 else "RefreshExtractTask",
                    obj=obj,
                    schedule=rng.choice(site.schedules),
                    creator=obj.owner,
                    priority=rng.choice([10, 50, 70]),
                    fail_rate=0.85 if i == 1 else rng.choice([0.02, 0.05, 0.1]),
                )
            )
        for wb in rng.sample(wbs, 5):
            site.tasks.append(
                Task(
                    id=nid(),
                    luid=_uuid(rng),
                    type="SubscriptionTask",
                    obj=wb,
                    schedule=rng.choice(site.schedules),
                    creator=rng.choice(site.users[:20]),
                    priority=50,
                    fail_rate=0.03,
                )
            )
        for f in flows:
            site.tasks.append(
                Task(
                    id=nid(),
                    luid=_uuid(rng),
                    type="FlowRunTask",
                    obj=f,
                    schedule=rng.choice(site.schedules),
                    creator=f.owner,
                    priority=50,
                    fail_rate=0.08,
                )
            )
        for t in site.tasks:
            t.last_success_us = start_us - rng.randint(1, 72) * 3_600_000_000
        # who is active, and how much (viewers and explorers browse most)
        weights = {0: 3, 1: 0.5, 2: 4, 3: 5, 7: 0.5, 8: 0.05, 9: 6, 10: 4, 11: 3}
        cum = 0.0
        for u in site.users:
            cum += weights[u.site_role_id] * rng.uniform(0.3, 2.0)
            site.active_users.append(u)
            site.active_weights.append(cum)
        sites.append(site)

    tname = "Northwind Holdings"
    tenant = Tenant(
        id=_uuid(rng),
        name=tname,
        uri="https://northwind-holdings.cloudmanager.tableau.example.com",
        pod_uri="https://prod-useast-b.online.tableau.example.com",
        org62_id="00D" + "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789") for _ in range(12)),
        saml_resource_id=_uuid(rng),
        oidc_resource_id=_uuid(rng),
        private_connection_id=_uuid(rng),
        admins=[u for u in all_users if u.tenant_role == "TenantAdmin"],
    )
    return World(seed=seed, sites=sites, tenant=tenant, users=all_users, start_us=start_us)


def describe(world: World) -> str:
    """A one-paragraph human description (for logs)."""
    parts = [
        f"{s.name} ({s.url}, {s.luid}): {len(s.users)} users, {len(s.groups)} groups, "
        f"{len(s.content['workbook'])} workbooks, {len(s.content['view'])} views"
        for s in world.sites
    ]
    return (
        f"tenant {world.tenant.name} ({world.tenant.id}); "
        + "; ".join(parts)
        + f"; window starts {iso_micro(world.start_us)}"
    )
