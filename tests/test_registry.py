"""The event registry: derived from the references, committed, and right where it matters."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pipelines.activity_log.registry import REGISTRY_PATH, common_attributes, event_spec, event_specs, load_registry
from pipelines.activity_log.registry.build import build_registry, normalise_type, reference_checksums, render
from tests.conftest import REFERENCE_DIR


def test_committed_registry_is_what_the_references_give():
    # never skipped: without the references this cannot check, so it fails and says why
    assert REFERENCE_DIR.is_dir(), f"the Tableau references are not at {REFERENCE_DIR} (../shared/reference)"
    assert reference_checksums(REFERENCE_DIR) == load_registry()["source_sha256"], (
        "a reference changed since event_registry.json was built: run `make registry` and commit it"
    )
    rebuilt = render(build_registry(REFERENCE_DIR))
    assert rebuilt == REGISTRY_PATH.read_text(encoding="utf-8"), (
        "event_registry.json is stale: run `make registry` and commit it"
    )


def test_counts_per_family_and_edition():
    site = event_specs("site")
    tenant = event_specs("tenant")
    assert len(site) == 213  # 209 from the references, 4 from the live-feed additions
    assert sum("legacy" in s.editions for s in site) == 55
    assert sum("live_feed" in s.editions for s in site) == 4
    assert len(tenant) == 35
    # 9 + eventOutcome, eventOutcomeReason, eventProcessedTime, serviceName
    assert len(common_attributes("site")) == 13
    assert len(common_attributes("tenant")) == 19


@pytest.mark.parametrize(
    ("documented", "spark_type"),
    [
        ("integer", "bigint"),  # 64-bit: the references call sizes past 32 bits "integer"
        ("long", "bigint"),
        ("bool", "boolean"),
        ("boolean", "boolean"),
        ("float", "double"),
        ("string", "string"),
        ("sring", "string"),
        ("Email address of the user", "string"),
    ],
)
def test_type_normalisation(documented, spark_type):
    assert normalise_type(documented) == spark_type


def _attr(family, event, name):
    return next(a for a in event_spec(family, event).attributes if a.name == name)


def test_spot_values():
    assert _attr("site", "background_job", "duration").spark_type == "bigint"
    assert _attr("site", "background_job", "scheduleName").spark_type == "string"  # "sring" in the reference
    assert _attr("site", "background_job", "isRunNow").spark_type == "boolean"
    # a wrapped cell: the description continues on the next line of the reference
    assert _attr("site", "background_job", "eventState").description == "State of the job"
    names = {a.name for a in event_spec("site", "hist_login").attributes}
    assert {"actorExternalId", "groupNames", "siteName", "impersonatedUserId"} <= names
    assert _attr("site", "hist_login", "impersonatedUserId").editions == ("legacy",)
    assert event_spec("site", "set_permissions").deprecated is False
    create = event_spec("site", "create_permissions")
    assert create.deprecated and create.replaced_by == "set_permissions"
    assert {"current", "legacy"} == set(create.editions)
    site_common = {a.name: a.spark_type for a in common_attributes("site")}
    assert site_common["siteRoleId"] == "bigint" and site_common["actorUserLuid"] == "string"


def test_nameless_email_rows_are_repaired():
    email = _attr("site", "hist_create_user", "email")
    assert email.spark_type == "string" and "Email" in email.description
    assert _attr("tenant", "create_user", "email").spark_type == "string"


def test_legacy_only_attributes_are_kept():
    spec = event_spec("site", "add_delete_user_to_group")
    legacy = {a.name: a for a in spec.attributes}
    for name in ("impersonatedUserId", "traceUuid"):
        assert legacy[name].editions == ("legacy",)
    assert set(legacy["isError"].editions) == {"current", "legacy"}
    # serviceName is common now (the help pages' Server edition); its legacy records still carry it
    assert "serviceName" not in legacy and "serviceName" in spec.legacy_common


def test_the_help_pages_newer_types_and_values_are_recorded_as_live_feed_additions():
    registry = load_registry()
    assert registry["sources"]["live_feed"] == "live_feed_additions.yaml"
    group_sets = event_spec("site", "add_delete_group_to_group_set")
    assert group_sets.editions == ("live_feed",)
    assert {a.name: (a.spark_type, a.editions) for a in group_sets.attributes} == {
        "groupId": ("bigint", ("live_feed",)),
        "groupLuid": ("string", ("live_feed",)),
        "groupSetId": ("bigint", ("live_feed",)),
        "groupSetLuid": ("string", ("live_feed",)),
        "groupSetOperation": ("string", ("live_feed",)),
        "isError": ("boolean", ("live_feed",)),
    }
    sign_in = event_spec("site", "login_authentication")
    assert sign_in.editions == ("live_feed",) and sign_in.attributes == ()  # the common attributes only
    common = {a.name: a for a in common_attributes("site")}
    assert common["eventOutcome"].values == ("success", "unauthorized", "client_error", "internal_error")
    assert common["serviceName"].editions == ("legacy", "live_feed") and common["serviceName"].spark_type == "string"
    owners = [s.event_type for s in event_specs("site") if "serviceName" in s.legacy_common]
    assert len(owners) == 13 and all("legacy" in event_spec("site", e).editions for e in owners)
    assert not any(a.name == "serviceName" for s in event_specs("site") for a in s.attributes)


def test_alias_from_the_intro_sentence():
    assert event_spec("tenant", "batch_revoke_sessions").event_type == "batch_revoke_session"
    with pytest.raises(KeyError, match="unknown tenant event type"):
        event_spec("tenant", "hist_login")


def test_spanish_descriptions_are_attached():
    ev = load_registry()["families"]["site"]["events"]["add_delete_user_to_group"]
    assert ev["description_es"] and ev["description_es"] != ev["description"]


@pytest.mark.subprocess
def test_registry_cli_prints_json():
    out = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "registry", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out)["families"]["site"]["events"]["hist_login"]["event_type"] == "hist_login"


def test_documented_codes_are_parsed():
    common = {a.name: dict(a.codes) for a in common_attributes("site")}
    assert common["siteRoleId"][11] == "SiteAdministratorCreator"
    assert common["siteRoleId"][0] == "SiteAdministratorExplorer"
    assert sorted(common["siteRoleId"]) == [0, 1, 2, 3, 7, 8, 9, 10, 11]
    assert common["systemAdminLevel"] == {10: "System Admin", 0: "Not a system admin"}
    assert dict(_attr("site", "hist_create_user", "siteAdminLevel").codes) == {5: "Site Admin", 0: "Not a site admin"}
