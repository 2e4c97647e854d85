"""The dbt project kept in step: dbt-project-evaluator's rules on the shared lake's manifest, a
primary-key test on every model, the generated staging layer, the docs, the profile for plain dbt and
the vars' defaults against conf."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pipelines.config.load import CONF_DIR, load_config
from pipelines.config.project import DBT_DIR
from pipelines.gold.run import dbt_target_dir, dbt_vars, run_dbt
from pipelines.gold.staging import stale_files
from pipelines.runtime.jars import jar_paths
from pipelines.runtime.spark_session import spark_conf
from tests.lake import KEYED

pytestmark = [pytest.mark.slow(minutes=2)]

# dbt-project-evaluator's rules that apply here, checked on the manifest of the lake's build (the
# package cannot be installed: dbt's package hub is not reachable from these machines); its rule of
# a primary-key test on every model is test_every_model_has_a_primary_key_test's. Each exception
# says why; a new breach fails, and so does an exception that no longer applies.
SOURCES_READ_OUTSIDE_STAGING = {
    # silver typed the entity snapshots already; one macro (snapshot_history) reads them for all
    "int_snapshot_site_roles": "entity_snapshots",
    "int_snapshot_group_members": "entity_snapshots",
    "int_snapshot_content_owners": "entity_snapshots",
    "rpt_access_review": "entity_snapshots, snapshot_ops: the hours applied, through snapshot_history",
    "rpt_access_log_discrepancies": "entity_snapshots, snapshot_ops: All Users, the hours, through snapshot_history",
    "rpt_effective_access": "entity_snapshots, snapshot_ops: the state as of an hour, through snapshot_history",
    "rpt_all_users_grants": "entity_snapshots: the current rules, through snapshot_history",
    "rpt_orphaned_content": "entity_snapshots: the current content and users, through snapshot_history",
    "rpt_embedded_credentials": "entity_snapshots: the current connections, through snapshot_history",
    "rpt_stale_content": "entity_snapshots: the content no event names, through snapshot_history",
    "rpt_inactive_licensed_users": "entity_snapshots: the users no event names, through snapshot_history",
}
DIMENSIONS_FROM_FACTS: dict[str, str] = {}  # none: dim_users' names come from int_user_identities


def test_the_project_keeps_the_evaluator_rules_that_apply(gold_lake):
    manifest = json.loads((dbt_target_dir() / "manifest.json").read_text(encoding="utf-8"))
    models = {uid: n for uid, n in manifest["nodes"].items() if n["resource_type"] == "model"}

    def parents(node, prefix):
        return [d for d in node["depends_on"]["nodes"] if d.split(".")[-1].startswith(prefix) or d.startswith(prefix)]

    reads_sources = {
        n["name"]
        for n in models.values()
        if parents(n, "source.") and not n["original_file_path"].startswith("models/staging/")
    }
    assert reads_sources == set(SOURCES_READ_OUTSIDE_STAGING)
    from_facts = {n["name"] for n in models.values() if n["name"].startswith("dim_") and parents(n, "fct_")}
    assert from_facts == set(DIMENSIONS_FROM_FACTS)


def test_dbt_docs_generate(spark, gold_lake):
    cfg, _, _ = gold_lake
    run_dbt(spark, cfg, ["docs", "generate", "--quiet"])
    catalog = json.loads((dbt_target_dir() / "catalog.json").read_text())
    assert any(key.endswith(".fct_logins") for key in catalog["nodes"])
    manifest = json.loads((dbt_target_dir() / "manifest.json").read_text())
    personal = {
        c["name"]: c["meta"]["personal"]
        for n in manifest["nodes"].values()
        if n["name"] == "fct_logins"
        for c in n["columns"].values()
        if c.get("meta", {}).get("personal")
    }
    assert personal == {
        "user_email": "email",
        "user_luid": "person_key",
        "tenant_user_id": "person_key",
        "ip_address": "network",
        "user_agent": "network",
        "session_id": "network",
    }


def test_generated_staging_is_up_to_date():
    assert stale_files() == [], "run `auditlake gold staging` and commit the result"


def test_every_model_has_a_primary_key_test():
    """Every model's key is tested: on the model, or (a view whose rows a mart keeps: testing the view
    would recompute it from all of silver on every build) on the column its meta key_tested_in names."""
    models = {
        m["name"]: m
        for p in (DBT_DIR / "models").rglob("_*__models.yml")
        for m in yaml.safe_load(p.read_text())["models"]
    }
    tested = {
        f"{name}.{c['name']}"
        for name, m in models.items()
        for c in m.get("columns", [])
        if "primary_key" in (c.get("data_tests") or [])
    }
    # a key of several columns: a model-level primary_key test on an expression of them
    tested |= {
        f"{name}.*"
        for name, m in models.items()
        if any(isinstance(t, dict) and "primary_key" in t for t in m.get("data_tests") or [])
    }
    untested = []
    for name, model in models.items():
        elsewhere = ((model.get("config") or {}).get("meta") or {}).get("key_tested_in")
        if not any(t.startswith(f"{name}.") for t in tested) and elsewhere not in tested:
            untested.append(name)
    assert untested == []
    assert {p.stem for p in (DBT_DIR / "models").rglob("*.sql")} == set(models)


def test_profile_for_plain_dbt_matches_the_pipeline_session(cfg):
    """`dbt build` from dbt_project/ starts its own session: same JARs, extensions, catalog."""
    profile = yaml.safe_load((DBT_DIR / "profiles.yml").read_text())["auditlake"]["outputs"]["local"]
    params = profile["server_side_parameters"]
    conf = spark_conf(cfg)
    assert [Path(p).name for p in params["spark.jars"].split(",")] == [
        p.name for p in jar_paths(cfg) if "postgresql" not in p.name
    ]
    for key in ("spark.sql.extensions", "spark.sql.catalog.spark_catalog", "spark.sql.session.timeZone"):
        assert params[key] == conf[key], key


def test_dbt_var_defaults_match_conf():
    project = yaml.safe_load((DBT_DIR / "dbt_project.yml").read_text())["vars"]
    base = load_config("local", conf_dir=CONF_DIR, environ=dict(KEYED))
    for key, value in dbt_vars(base).items():
        assert project[key] == value, key
