"""The state marts' hand-worked cases (rpt_effective_access, rpt_orphaned_content): their dbt unit
tests (fixed rows of the entity histories in, the rows Tableau's rules give out) run alone on an
empty lake, since they read only the entity histories, so a change to the permission rules is checked
without the shared gold lake (tests/test_gold_build.py runs them again with every other unit test)."""

from __future__ import annotations

import pytest

from pipelines.config.load import load_config
from pipelines.gold.run import run_dbt
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
