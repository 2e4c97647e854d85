"""The personal-data catalogue (pipelines/personal_data/catalogue.yaml) is the one list: every silver
column has a role, staging's meta and the marts' tags agree with it, and the keyed pseudonym is
HMAC-SHA-256 in Spark as in Python."""

from __future__ import annotations

import hashlib
import hmac

import pytest
import yaml

from pipelines.activity_log.silver.plan import VIEW_HEAD, VIEW_TAIL, family_plan
from pipelines.analyst.publish import mart_docs
from pipelines.gold.staging import STAGING_DIR
from pipelines.personal_data import (
    MASKED_ROLES,
    META_KEY,
    PERSONAL_ROLES,
    SOURCES,
    CatalogueError,
    _parse,
    catalogue,
)
from pipelines.personal_data.pseudonym import pseudonym, pseudonym_sql
from pipelines.writeback.silver import AUDIT_COLUMNS


def silver_columns(source: str) -> list[str]:
    """The columns silver's table of ``source`` has, from the code that makes them."""
    if source == "writeback":
        return list(AUDIT_COLUMNS)
    plan = family_plan(source)
    return list(dict.fromkeys([*VIEW_HEAD, *(c.column for c in plan.columns), *VIEW_TAIL]))


@pytest.mark.parametrize("source", SOURCES)
def test_every_silver_column_has_exactly_one_role(source):
    listed = catalogue().roles[source]
    missing = [c for c in silver_columns(source) if c not in listed]
    assert not missing, f"{source}: columns without a role in catalogue.yaml: {missing}"
    assert not set(listed) - set(silver_columns(source)), "the catalogue lists columns silver does not have"


def test_a_column_listed_twice_or_a_group_under_the_wrong_role_is_refused():
    twice = {s: {"none": ["a"]} for s in SOURCES}
    twice["site"] = {"email": ["email"], "none": ["email"]}
    with pytest.raises(CatalogueError, match="site.email has two roles: email and none"):
        _parse(twice)
    wrong = {s: {"none": ["a"]} for s in SOURCES}
    wrong["tenant"] = {
        "email": ["email"],
        "person_name": ["user_name"],
        "people": [{"who": "user", "person_name": ["email"]}],
    }
    with pytest.raises(CatalogueError, match="people group 'user' lists \\['email'\\]"):
        _parse(wrong)


def test_staging_tags_each_column_with_its_catalogue_role():
    for source in SOURCES:
        models = yaml.safe_load((STAGING_DIR / source / f"_{source}__models.yml").read_text())["models"]
        for column in models[0]["columns"]:
            role = catalogue().role(source, column["name"])
            expected = {META_KEY: role} if role in PERSONAL_ROLES else None
            if source == "writeback" and role is None:
                continue  # renamed in staging (action_id, ...): none of them personal
            assert (column.get("meta") or None) == expected, f"{source}: {column['name']}"


def test_every_mart_tag_names_a_role_and_the_masked_ones_are_known():
    docs = mart_docs()
    tagged = {(name, column): role for name, doc in docs.items() for column, role in doc.personal.items()}
    assert tagged, "no mart column is tagged"
    assert set(tagged.values()) <= set(PERSONAL_ROLES)
    assert docs["fct_logins"].personal["user_email"] == "email"
    assert {"email", "network"} <= {tagged[k] for k in tagged if k[0] == "rpt_new_sign_in_sources"}
    assert set(tagged.values()) <= set(MASKED_ROLES)  # a person's key too: analysts read its pseudonym
    assert docs["fct_logins"].personal["user_luid"] == "person_key"
    assert "site_luid" not in docs["fct_logins"].personal  # a site is no person


KEY = b"k" * 40


def test_the_pseudonym_is_hmac_sha256_keyed():
    value = "jane.doe@corp.com"
    assert pseudonym(value, KEY) == "pii:" + hmac.new(KEY, value.encode(), hashlib.sha256).hexdigest()[:16]
    assert pseudonym(value, KEY) != "pii:" + hashlib.sha256(value.encode()).hexdigest()[:16]  # not unkeyed
    assert pseudonym(value, KEY) != pseudonym(value, b"other-key" * 4)
    assert pseudonym(None, KEY) is None


def test_spark_computes_the_same_pseudonym(spark):
    values = ["jane.doe@corp.com", "Zoë Åström", "10.0.0.1", "", "x" * 200, None]
    frame = spark.createDataFrame([(v,) for v in values], "v string")
    for key in (KEY, b"short-key-but-fine-for-the-test", b"long" * 40):  # under, at and over a block
        got = [r[0] for r in frame.selectExpr(pseudonym_sql("v", key)).collect()]
        assert got == [pseudonym(v, key) for v in values], key


def test_a_role_that_depends_on_the_event_names_event_types_that_have_the_column():
    for source in ("site", "tenant"):
        plan = family_plan(source)
        for column, per_role in catalogue().by_event[source].items():
            carrying = {e for c in plan.columns if c.column == column for e in c.event_types}
            for role, events in per_role.items():
                assert set(events) <= carrying, f"{source}.{column} as {role}: {set(events) - carrying}"
    assert "hist_delete_user" in catalogue().event_types("site", "name", "person_name")
    assert catalogue().role("site", "name") == "none"  # a workbook's name elsewhere
