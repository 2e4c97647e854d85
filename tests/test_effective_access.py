"""The state marts' hand-worked cases (rpt_effective_access, rpt_orphaned_content): their dbt unit
tests (fixed rows of the entity histories in, the rows Tableau's rules give out) run alone on an
empty lake, since they read only the entity histories, so a change to the permission rules is checked
without the shared gold lake (tests/test_gold_build.py runs them again with every other unit test).
Then the sample server's own rules end to end: ``auditlake inventory`` against the loopback Tableau
server, bronze, silver's histories and the mart, read for cases worked out by hand from the rules the
sample site holds (auditlake_devtools/sample/tableau_site.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from auditlake_devtools.sample.activity_log.world import build_world
from auditlake_devtools.sample.tableau_site import LOCKED_PROJECT, NEVER_OPENED, sample_site
from auditlake_devtools.tableau_server import TableauServer
from pipelines.activity_log.bronze.land import land_bronze
from pipelines.config.load import load_config
from pipelines.entity_snapshots.silver import promote_snapshots
from pipelines.gold.run import run_dbt
from pipelines.inventory.run import inventory
from pipelines.lake.table_names import tables
from pipelines.refresh import new_run_id
from tests.lake import variant_environ

pytestmark = [pytest.mark.dbt]

UNIT_TESTS = ("effective_access_resolved_as_tableau_does", "orphaned_content_owned_by_deleted_or_unlicensed_users")


def test_effective_access_and_orphaned_content_follow_tableaus_rules(spark, lake_dir):
    cfg = load_config("test", environ=variant_environ(lake_dir, "effective_access"))
    for layer in ("silver", "ops", "gold"):
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS {cfg.get(f'{layer}.schema')}")
    select = [f"test_name:{name}" for name in UNIT_TESTS]
    result = run_dbt(spark, cfg, ["test", "--quiet", "--select", *select], raise_on_failure=False)
    assert not result.failures and result.statuses.get("pass", 0) == len(UNIT_TESTS), result


TOKEN_NAME, TOKEN = "auditlake-inventory", "pat-secret-for-access-tests"


@pytest.mark.slow(minutes=2)  # a lake of its own: every entity type's bronze and silver tables, one mart
def test_the_sample_servers_rules_give_the_access_worked_out_by_hand(spark, lake_dir, monkeypatch):
    site_url, held = sample_site(build_world(42), 0)
    server = TableauServer.start(token_name=TOKEN_NAME, token_secret=TOKEN, content={site_url: held})
    monkeypatch.setenv("AUDITLAKE_TABLEAU_TOKEN_NAME", TOKEN_NAME)
    monkeypatch.setenv("AUDITLAKE_TABLEAU_TOKEN", TOKEN)
    environ = variant_environ(lake_dir, "effective_access_sample") | {
        "AUDITLAKE__TABLEAU__SERVER_URL": server.url,
        "AUDITLAKE__INVENTORY__SITES": f"[{site_url}]",
    }
    cfg = load_config("test", environ=environ)
    try:
        report = inventory(cfg, now=datetime(2026, 6, 8, 14, 37, tzinfo=UTC), log=lambda _line: None)
        assert len(report.sites) == 1 and not report.refused, report
    finally:
        server.stop()
    run_id = new_run_id()
    land_bronze(spark, cfg, run_id, log=lambda _m: None)
    assert not [p for p in promote_snapshots(spark, cfg, run_id, log=lambda _m: None) if p.problems]
    for layer in ("silver", "ops", "gold"):
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS {cfg.get(f'{layer}.schema')}")
    result = run_dbt(spark, cfg, ["run", "--quiet", "--select", "rpt_effective_access"], raise_on_failure=False)
    assert not result.failures, result

    user = {u["name"]: u["id"] for u in held.users if u["name"] != "ldubois"}  # two users share that name
    item = {c["name"]: c["id"] for c in held.workbooks + held.flows}
    rows = spark.table(f"{tables(cfg).gold_schema}.rpt_effective_access").collect()
    grants: dict[tuple[str, str], dict[str, str]] = {}
    for r in rows:
        grants.setdefault((r["item_luid"], r["user_luid"]), {})[r["capability"]] = r["granted_by"]
    assert {r["as_of"] for r in rows} == {datetime(2026, 6, 8, 14)}

    def held_by(name: str, on: str) -> dict[str, str]:
        return grants.get((item[on], user[name]), {})

    locked = f"project_default:{LOCKED_PROJECT}"
    # the locked project's default rules for workbooks: All Users Read and ExportData, Sales Leadership
    # denied ExportData; a Viewer in All Users only holds both, one in Sales Leadership only Read
    assert held_by("rjohnson", NEVER_OPENED) == {"Read": locked, "ExportData": locked}
    assert held_by("tnovak", NEVER_OPENED) == {"Read": locked}
    # the project's owner is a site administrator: everything, as an administrator
    assert set(held_by("ptanaka", NEVER_OPENED).values()) == {"site_role_admin"}
    assert {"Read", "Write", "ExportData", "ChangePermissions"} <= set(held_by("ptanaka", NEVER_OPENED))
    # Unlicensed holds nothing, not even on the workbook the user owns
    assert not [k for k in grants if k[1] == user["former.analyst"]]
    # Pricing Study: All Users Read and Filter; nothing grants a Viewer ExportData there
    assert held_by("rjohnson", "Pricing Study") == {"Read": "group_rule:All Users", "Filter": "group_rule:All Users"}
    # Revenue Forecast: Finance Analysts Read (an Explorer in it), its owner everything, a Viewer outside nothing
    assert held_by("jobrien", "Revenue Forecast") == {"Read": "group_rule:Finance Analysts"}
    assert held_by("enovak", "Revenue Forecast").get("Write") == "owner"
    assert held_by("rjohnson", "Revenue Forecast") == {}
    # the flow's rule is for the group set Reviewers: users in both Finance Analysts and Sales Leadership
    assert held_by("ewright", "Clean Orders") == {"Read": "group_rule:Reviewers"}
    assert held_by("scosta", "Clean Orders") == held_by("jobrien", "Clean Orders") == {}  # in one of the two
