"""``auditlake inventory`` against a Tableau REST API on loopback (auditlake_devtools/tableau_server.py)
serving sample sites built from the generator's world (auditlake_devtools/sample/tableau_site.py), with
``tableauserverclient`` itself on the client side: what reaches the server (every listing paged, each
item's connections and permission rules, each project's default permissions), the snapshot files it
leaves in the landing tree, one-line refusals with the other sites going on, no secret in any file; then
one lake: bronze and silver keep the files as entity histories, Tableau's own snapshot winning its hour."""

from __future__ import annotations

import math
import os
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from auditlake_devtools.sample.activity_log.snapshots import SCHEMAS as GENERATED_SCHEMAS
from auditlake_devtools.sample.activity_log.snapshots import entity_rows
from auditlake_devtools.sample.activity_log.world import build_world
from auditlake_devtools.sample.tableau_site import EMBEDDED_PASSWORD, LOCKED_PROJECT, NEVER_OPENED, sample_site
from auditlake_devtools.tableau_server import NO_API_ACCESS, TableauServer
from pipelines.activity_log.bronze.land import land_bronze
from pipelines.activity_log.bronze.layout import classify
from pipelines.cli import main
from pipelines.config.load import load_config
from pipelines.entity_snapshots.silver import promote_snapshots
from pipelines.inventory import ENTITY_TYPES, SCHEMAS
from pipelines.inventory.files import snapshot_path
from pipelines.inventory.run import inventory, inventory_before_refresh
from pipelines.lake.table_names import tables
from pipelines.refresh import command as refresh_command
from pipelines.refresh import new_run_id
from tests.generated_log import SNAPSHOT_COLUMNS
from tests.lake import variant_environ

pytestmark = [pytest.mark.slow(minutes=1)]  # the lake's test: a session's first bronze and silver tables

TOKEN_NAME, TOKEN = "auditlake-inventory", "pat-secret-for-inventory-tests"
NOW = datetime(2026, 6, 8, 14, 37, tzinfo=UTC)
HOUR = datetime(2026, 6, 8, 14, tzinfo=UTC)
PAGE = 5
WORLD = build_world(42)
SITES = dict(sample_site(WORLD, i) for i in (0, 1))
NORTHWIND, CONTOSO = list(SITES)


@pytest.fixture
def tableau():
    server = TableauServer.start(token_name=TOKEN_NAME, token_secret=TOKEN, content=dict(SITES))
    yield server
    server.stop()


def _cfg(tmp_path, tableau, name="inventory", sites=(NORTHWIND, CONTOSO)):
    environ = variant_environ(tmp_path, name)
    environ.setdefault("AUDITLAKE_PSEUDONYM_KEY", "p" * 64)
    environ |= {
        "AUDITLAKE__TABLEAU__SERVER_URL": tableau.url,
        "AUDITLAKE__INVENTORY__SITES": "[" + ", ".join(sites) + "]",
        "AUDITLAKE__INVENTORY__PAGE_SIZE": str(PAGE),
        "AUDITLAKE_TABLEAU_TOKEN_NAME": TOKEN_NAME,
        "AUDITLAKE_TABLEAU_TOKEN": TOKEN,
    }
    return load_config("test", environ=environ), environ


@pytest.fixture
def token(monkeypatch):
    """The token in the environment, where the inventory reads it."""
    monkeypatch.setenv("AUDITLAKE_TABLEAU_TOKEN_NAME", TOKEN_NAME)
    monkeypatch.setenv("AUDITLAKE_TABLEAU_TOKEN", TOKEN)
    monkeypatch.delenv("TSC_PAGE_SIZE", raising=False)


@pytest.fixture
def setup(tmp_path, tableau, token):
    cfg, _ = _cfg(tmp_path, tableau)
    return cfg, cfg.path("paths.landing_dir")


def _read(root, site, entity_type) -> list[dict]:
    return pq.read_table(snapshot_path(root, site.luid, HOUR, entity_type)).to_pylist()


def test_every_entity_is_read_page_by_page_and_lands_as_a_snapshot_file(setup, tableau):
    cfg, root = setup
    lines = []
    report = inventory(cfg, now=NOW, log=lines.append)
    assert all(r.status < 300 for r in tableau.received), [(r.op, r.path, r.status) for r in tableau.received]
    assert [r.details["site"] for r in tableau.of("signin")] == [NORTHWIND, CONTOSO]
    assert len(tableau.of("signout")) == 2
    for site in SITES.values():
        got = [r for r in tableau.received if site.luid in r.path]
        for op, items in (("users", site.users), ("groups", site.groups), ("projects", site.projects),
                          ("workbooks", site.workbooks), ("views", site.views), ("datasources", site.datasources),
                          ("flows", site.flows)):  # fmt: skip
            pages = [r.query["pageNumber"] for r in got if r.op == op]
            assert pages == [str(n) for n in range(1, math.ceil(len(items) / PAGE) + 1)], op
            assert {r.query["pageSize"] for r in got if r.op == op} == {str(PAGE)}
        assert {r.details["group_id"] for r in got if r.op == "group_users"} == {g["id"] for g in site.groups}
        assert [r.query.get("resultlevel") for r in got if r.op == "group_sets"] == ["members"]
        assert {r.query.get("fields") for r in got if r.op == "users"} == {"_all_"}  # lastLogin, authSetting, ...
        for kind, items in (("workbook", site.workbooks), ("datasource", site.datasources), ("flow", site.flows)):
            assert sorted(r.details["item_id"] for r in got if r.op == f"{kind}_connections") == sorted(
                i["id"] for i in items
            )
        for kind, items in (("project", site.projects), ("workbook", site.workbooks), ("view", site.views),
                            ("datasource", site.datasources), ("flow", site.flows)):  # fmt: skip
            assert sorted(r.details["item_id"] for r in got if r.op == f"{kind}_permissions") == sorted(
                i["id"] for i in items
            )
        templates = sorted(
            (r.details["item_id"], r.details["content_type"]) for r in got if r.op == "default_permissions"
        )
        assert templates == sorted((p["id"], t) for p in site.projects for t in ("workbooks", "datasources", "flows"))
    assert [s.refused for s in report.sites] == [None, None] and report.files == 2 * len(ENTITY_TYPES)
    assert lines[-1].startswith("inventory: 2 of 2 sites read, 26 snapshot files for 2026-06-08 14:00 UTC")
    for site in SITES.values():
        for entity_type in ENTITY_TYPES:
            path = snapshot_path(root, site.luid, HOUR, entity_type)
            info = classify(path.relative_to(root).as_posix())
            assert (info.entity_type, info.snapshot_hour, info.skip) == (entity_type, "2026-06-08 14:00:00", None)
            assert pq.read_schema(path).names == SCHEMAS[entity_type].names
        assert sorted(r["luid"] for r in _read(root, site, "users")) == sorted(u["id"] for u in site.users)
    assert not [p for p in root.rglob("*") if p.name.startswith(".")]  # no temporary file left


def test_a_second_run_in_the_same_hour_keeps_the_hours_files(setup, tableau):
    cfg, root = setup
    inventory(cfg, now=NOW, log=lambda _line: None)
    before = {p: p.read_bytes() for p in root.rglob("*.parquet")}
    SITES[NORTHWIND].users[0]["siteRole"] = "Viewer"  # changed since: the next hour shows it
    try:
        again = inventory(cfg, now=NOW.replace(minute=59), log=lambda _line: None)
        assert again.files == 0 and {p: p.read_bytes() for p in root.rglob("*.parquet")} == before
        later = inventory(cfg, now=NOW.replace(hour=15), log=lambda _line: None)
    finally:
        SITES[NORTHWIND].users[0]["siteRole"] = sample_site(WORLD, 0)[1].users[0]["siteRole"]
    assert later.files == 2 * len(ENTITY_TYPES)
    next_hour = pq.read_table(snapshot_path(root, SITES[NORTHWIND].luid, HOUR.replace(hour=15), "users")).to_pylist()
    assert next_hour[0]["site_role"] == "Viewer"


def test_the_files_hold_the_sample_sites_cases(setup, tableau):
    cfg, root = setup
    inventory(cfg, now=NOW, log=lambda _line: None)
    site = SITES[NORTHWIND]
    world_site = WORLD.sites[0]
    users = {u["luid"]: u for u in _read(root, site, "users")}
    assert {u.luid for u in world_site.users} < set(users)  # the log's LUIDs: marts join the two
    idle = next(u for u in users.values() if u["name"] == "idle.creator")
    assert idle["site_role"] == "Creator" and idle["last_login"] is None
    assert users[world_site.users[0].luid]["last_login"] is not None
    owners = {w["name"]: w["owner_luid"] for w in _read(root, site, "workbooks")}
    assert owners[NEVER_OPENED] not in users  # owned by a deleted user
    assert users[owners["Archived Forecast"]]["site_role"] == "Unlicensed"
    projects = {p["name"]: p for p in _read(root, site, "projects")}
    assert projects[LOCKED_PROJECT]["content_permissions"] == "LockedToProject"
    assert all(p["parent_project_luid"] for p in projects.values() if p["name"] == "Forecasts")
    all_users = next(g["luid"] for g in _read(root, site, "groups") if g["name"] == "All Users")
    rules = _read(root, site, "permissions")
    assert {"item_type": "project", "item_luid": projects[LOCKED_PROJECT]["luid"], "grantee_type": "group",
            "grantee_luid": all_users, "capability": "Read", "mode": "Allow"} in rules  # fmt: skip
    denies = {(r["item_type"], r["grantee_type"], r["capability"]) for r in rules if r["mode"] == "Deny"}
    assert denies == {("workbook", "group", "ExportData"), ("workbook", "user", "Read")}
    assert ("flow", "group_set") in {(r["item_type"], r["grantee_type"]) for r in rules}
    defaults = _read(root, site, "default_permissions")
    assert {(d["content_type"], d["grantee_luid"], d["capability"], d["mode"]) for d in defaults} >= {
        ("workbook", all_users, "Read", "Allow"),
        ("datasource", all_users, "Connect", "Allow"),
    }
    connections = _read(root, site, "data_connections")
    embedded = [c for c in connections if c["embed_password"]]
    assert [(c["item_type"], c["user_name"]) for c in embedded] == [("datasource", "svc_reporting")]
    assert {c["item_type"] for c in connections} == {"workbook", "datasource", "flow"}
    assert {c["datasource_luid"] for c in connections if c["item_type"] == "workbook"} == {site.datasources[0]["id"]}
    members = {(m["group_luid"], m["user_luid"]) for m in _read(root, site, "group_members")}
    assert (all_users, idle["luid"]) in members
    assert [len(s["luid"]) for s in _read(root, site, "group_sets")] == [36]
    assert len(_read(root, site, "group_set_members")) == 2
    certified = {d["name"]: d["is_certified"] for d in _read(root, site, "datasources")}
    assert certified == {d["name"]: d["isCertified"] for d in site.datasources}


def test_no_secret_is_ever_written(setup, tableau):
    cfg, root = setup
    inventory(cfg, now=NOW, log=lambda _line: None)
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files and not [p for p in files if EMBEDDED_PASSWORD.encode() in p.read_bytes()]
    assert not [p for p in files if TOKEN.encode() in p.read_bytes()]
    assert not [c for s in SCHEMAS.values() for c in s.names if "password" in c and c != "embed_password"]


def test_the_shared_types_start_with_the_snapshot_contract():
    """Gold reads users, groups, members, workbooks and data sources alike from either source: the
    generator takes these columns from inventory's, so they are checked against the contract's own
    copy, not the generator's."""
    for entity_type, contract in SNAPSHOT_COLUMNS.items():
        mine = [(f.name, str(f.type)) for f in SCHEMAS[entity_type]]
        assert mine[: len(contract)] == contract, entity_type


def test_a_site_without_rest_access_is_said_and_the_others_go_on(setup, tableau):
    cfg, root = setup
    tableau.refuse_sites[NORTHWIND] = NO_API_ACCESS
    lines = []
    report = inventory(cfg, now=NOW, log=lines.append)
    assert [bool(s.refused) for s in report.sites] == [True, False]
    said = [line for line in lines if NORTHWIND in line]
    assert len(said) == 1 and "403157" in said[0] and "no REST API access" in said[0] and "\n" not in said[0]
    assert not (root / f"siteLuid={SITES[NORTHWIND].luid}").exists()
    assert snapshot_path(root, SITES[CONTOSO].luid, HOUR, "permissions").is_file()


@pytest.mark.parametrize(
    "refused, left_out",
    [
        ("flows", {"flows", "permissions", "data_connections"}),
        ("default_permissions", {"projects", "permissions", "default_permissions"}),
    ],
)
def test_a_type_refused_is_left_out_and_the_rest_lands(setup, tableau, refused, left_out):
    """A partial snapshot would read as rows gone: a type with a refused call is not written at all."""
    cfg, root = setup
    tableau.refuse[refused] = (403, "403004", "Forbidden", f"{refused} are not available on this site")
    lines = []
    report = inventory(cfg, now=NOW, log=lines.append)
    for site in SITES.values():
        written = {
            p.parent.name.removeprefix("entityType=") for p in (root / f"siteLuid={site.luid}").rglob("*.parquet")
        }
        assert written == set(ENTITY_TYPES) - left_out
    assert all(s.left_out for s in report.sites) and any("403004" in line for line in lines)


def test_a_wrong_token_fails_in_one_line(tmp_path, tableau, monkeypatch, capsys):
    _, environ = _cfg(tmp_path, tableau, "inventory_cli")
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AUDITLAKE_TABLEAU_TOKEN", "not-the-secret")
    assert main(["--env", "test", "inventory"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("auditlake: ") and "no site could be read" in err[0]
    assert "refused the personal access token" in err[0] and "401001" in err[0]
    assert "Traceback" not in "\n".join(err) and "not-the-secret" not in "\n".join(err)
    assert tableau.ops() == ["signin", "signin"]


def test_the_inventory_before_a_refresh_never_stops_it(setup, tableau):
    cfg, _ = setup
    tableau.token_secret = "changed"
    lines = []
    assert inventory_before_refresh(cfg, log=lines.append) is None
    assert lines[-1].startswith("refresh: the inventory failed, the refresh goes on without it: inventory: no site")


def test_a_refresh_with_on_refresh_takes_an_inventory_before_bronze(tmp_path, tableau, token, monkeypatch):
    _, environ = _cfg(tmp_path, tableau, "inventory_refresh", sites=(NORTHWIND,))
    cfg = load_config("test", environ=environ | {"AUDITLAKE__INVENTORY__ON_REFRESH": "true"})
    seen, lines = [], []

    def layers(*_args) -> bool:  # what the layers would find in the landing tree
        seen.append(sorted(cfg.path("paths.landing_dir").rglob("*.parquet")))
        return True

    monkeypatch.setattr(refresh_command, "_refresh_in_spark", layers)
    monkeypatch.setattr(refresh_command, "log", lines.append)
    assert refresh_command.refresh(cfg, ["bronze", "silver"])
    assert len(seen[0]) == len(ENTITY_TYPES)  # written before the layers ran
    assert any(line.startswith("inventory: 1 of 1 sites read") for line in lines)


def test_generate_inventory_writes_the_generated_logs_world(tmp_path, monkeypatch):
    """The same seed and start as `generate activity-log`: the LUIDs its log and snapshots name."""
    monkeypatch.delenv("AUDITLAKE_TABLEAU_TOKEN", raising=False)
    out = tmp_path / "landing"
    assert main(["--env", "test", "generate", "inventory", "--out", str(out), "--at", "2026-06-03T10:20:00Z"]) == 0
    world = build_world(42, datetime(2026, 6, 1, tzinfo=UTC))
    for site in world.sites:
        path = snapshot_path(out, site.luid, datetime(2026, 6, 3, 10, tzinfo=UTC), "users")
        assert {u["luid"] for u in entity_rows(site, "users")} < {u["luid"] for u in pq.read_table(path).to_pylist()}
    assert len(list(out.rglob("*.parquet"))) == len(world.sites) * len(ENTITY_TYPES)
    assert "AUDITLAKE_TABLEAU_TOKEN" not in os.environ  # the made-up token is not left behind


def _tableau_snapshot(root, site_luid, entity_type, rows, schema) -> None:
    folder = snapshot_path(root, site_luid, HOUR, entity_type).parent
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), folder / "part-00000.parquet")


def test_bronze_and_silver_keep_the_inventory_as_histories_tableaus_snapshot_winning(spark, lake_dir, tableau, token):
    cfg, _ = _cfg(lake_dir, tableau, "inventory_lake", sites=(NORTHWIND,))
    root = cfg.path("paths.landing_dir")
    inventory(cfg, now=NOW, log=lambda _line: None)
    site = SITES[NORTHWIND]
    kept = ("users", "permissions", "data_connections")  # each type is a table and commits of its own: few
    for path in root.rglob("*.parquet"):
        if path.parent.name.removeprefix("entityType=") not in kept:
            path.unlink()
    # Tableau's own users snapshot of the same site and hour: two users only, as Tableau keeps them
    tableau_users = [
        {"luid": u["id"], "id": 7, "name": u["name"], "display_name": None, "email": None,
         "site_role": "Viewer", "is_system_admin": False, "created_at": None}
        for u in site.users[:2]
    ]  # fmt: skip
    _tableau_snapshot(root, site.luid, "users", tableau_users, GENERATED_SCHEMAS["users"])
    run_id = new_run_id()
    land_bronze(spark, cfg, run_id, log=lambda _m: None)
    promoted = {p.entity_type: p for p in promote_snapshots(spark, cfg, run_id, log=lambda _m: None)}
    assert set(promoted) == set(kept) and not [p for p in promoted.values() if p.problems]
    t = tables(cfg)
    users = spark.table(t.entity_history("users"))
    assert sorted((r["luid"], r["site_role"]) for r in users.collect()) == sorted(
        (u["luid"], "Viewer") for u in tableau_users
    )
    assert spark.table(t.bronze_entity("users")).count() == len(site.users) + 2  # bronze keeps both files
    rules = spark.table(t.entity_history("permissions")).where(F.col("is_current"))
    expected = _read(root, site, "permissions")
    assert rules.count() == len(expected) and rules.select("entity_key").distinct().count() == len(expected)
    assert {r["site_luid"] for r in rules.collect()} == {site.luid}
    embedded = spark.table(t.entity_history("data_connections")).where("embed_password").collect()
    assert [r["user_name"] for r in embedded] == ["svc_reporting"]
