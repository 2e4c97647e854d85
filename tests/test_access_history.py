"""Access as of any hour (dbt_project/models/marts/access_history/): the snapshot marts built by dbt
on a small lake made by hand: silver's entity histories as the silver contract gives them (the
columns as delivered plus silver's own), ops.snapshot_hours, and the three Activity Log facts the
snapshots are compared with. Only these models and their data tests run here; their unit tests
run on the shared gold lake (tests/test_gold_build.py), where no snapshots exist."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime

import pytest

from pipelines.config.load import load_config
from pipelines.errors import UsageError
from pipelines.gold import run as gold_run
from pipelines.gold.run import run_dbt
from tests.lake import variant_environ

pytestmark = [pytest.mark.dbt]

SITE = "5a5a5a5a-0000-4000-8000-0000000000aa"
U1, U2, U3, U4 = ("0000000a-0000-4000-8000-00000000000" + str(i) for i in (1, 2, 3, 4))
G1, G2 = "0000000b-0000-4000-8000-000000000001", "0000000b-0000-4000-8000-000000000002"
W1, D1 = "0000000c-0000-4000-8000-000000000001", "0000000d-0000-4000-8000-000000000001"
SELECT = [
    "--select",
    "path:models/intermediate/snapshots",
    "path:models/marts/access_history",
    "--exclude",
    "test_type:unit",
]


def at(hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 6, 1, hour, minute)


def user(luid, role, email=None, name=None):
    # the delivered files have no display_name: the marts read it as NULL
    return {
        "luid": luid,
        "id": luid[-1],
        "name": name or "user" + luid[-1],
        "email": email or f"{luid[-1]}@example.com",
        "site_role": role,
        "is_system_admin": False,
        "created_at": at(0),
    }


def content(luid, name, owner):
    return {
        "luid": luid,
        "id": luid[-1],
        "name": name,
        "project_luid": "p",
        "owner_luid": owner,
        "size": 2**33,
        "created_at": at(0),
        "updated_at": at(0),
    }


# The site hour by hour: every snapshot of every entity type (hours 0 to 4).
# users: u1 gets a new e-mail at 2 (same role) and becomes Creator at 3; u3 Viewer -> Creator at 1;
# u4 is missing from the snapshot at 2 and back at 3; u2 arrives with its LUID in upper case.
SNAPSHOTS = {
    "users": {
        0: [user(U1, "Viewer", name="ann"), user(U2.upper(), "Explorer"), user(U3, "Viewer"), user(U4, "Viewer")],
        1: [user(U1, "Viewer", name="ann"), user(U2.upper(), "Explorer"), user(U3, "Creator"), user(U4, "Viewer")],
        2: [user(U1, "Viewer", "ann@example.com", "ann"), user(U2.upper(), "Explorer"), user(U3, "Creator")],
        3: [
            user(U1, "Creator", "ann@example.com", "ann"),
            user(U2.upper(), "Explorer"),
            user(U3, "Creator"),
            user(U4, "Viewer"),
        ],
    },
    "groups": {
        h: [
            {"luid": G1, "id": "1", "name": "Analysts", "domain_name": "local"},
            {"luid": G2, "id": "2", "name": "Admins", "domain_name": "local"},
        ]
        for h in range(5)
    },
    # u2 joins g1 at 2; u1 leaves g2 at 3; u3 leaves g1 at 2, deleted at 01:40 (no event per group)
    "group_members": {
        0: [
            {"group_luid": G1, "user_luid": U1},
            {"group_luid": G2, "user_luid": U1},
            {"group_luid": G1, "user_luid": U3},
        ],
        1: [
            {"group_luid": G1, "user_luid": U1},
            {"group_luid": G2, "user_luid": U1},
            {"group_luid": G1, "user_luid": U3},
        ],
        2: [
            {"group_luid": G1, "user_luid": U1},
            {"group_luid": G2, "user_luid": U1},
            {"group_luid": G1, "user_luid": U2},
        ],
        3: [{"group_luid": G1, "user_luid": U1}, {"group_luid": G1, "user_luid": U2}],
        4: [{"group_luid": G1, "user_luid": U1}, {"group_luid": G1, "user_luid": U2}],
    },
    # w1 renamed at 1 (same owner), to u2 at 2; d1 to u1 at 4
    "workbooks": {
        0: [content(W1, "Sales", U1)],
        1: [content(W1, "Sales v2", U1)],
        **{h: [content(W1, "Sales v2", U2)] for h in (2, 3, 4)},
    },
    "datasources": {**{h: [content(D1, "Orders", U3)] for h in range(4)}, 4: [content(D1, "Orders", U1)]},
}
SNAPSHOTS["users"][4] = SNAPSHOTS["users"][3]

SCHEMAS = {
    "users": "luid string, id string, name string, email string, site_role string, is_system_admin boolean, "
    "created_at timestamp",
    "groups": "luid string, id string, name string, domain_name string",
    "group_members": "group_luid string, user_luid string",
    "workbooks": "luid string, id string, name string, project_luid string, owner_luid string, size bigint, "
    "created_at timestamp, updated_at timestamp",
}
SCHEMAS["datasources"] = SCHEMAS["workbooks"]
SILVER_COLUMNS = (
    "site_luid string, entity_key string, valid_from timestamp, valid_to timestamp, is_current boolean, "
    "row_hash string, source_file string, silver_run_id string, silver_ingest_ts timestamp"
)
KEYS = {"group_members": ("group_luid", "user_luid")}

# Activity Log events, as the facts hold them: (event_id, type, time, user / group / content ...)
ROLE_EVENTS = [("r1", at(2, 40), U1), ("r2", at(1, 30), U2), ("r3", at(3, 30), U4)]
DELETIONS = [("d1", at(1, 40), U3)]
MEMBERSHIP_EVENTS = [
    ("m1", "hist_add_user_to_group", at(1, 10), G1, U2, "added"),
    ("m2", "hist_add_user_to_group", at(2, 20), G2, U3, "added"),
]
OWNERSHIP_EVENTS = [
    ("o1", "content_owner_change", at(1, 44), W1, U1, U2),
    ("o2", "hist_change_workbook_ownership", at(1, 45), W1, U1, U2),
]


def history(entity: str) -> list[tuple]:
    """silver's type-2 rows from the snapshots: a version per key and content, from the first hour that
    shows it to the first hour that shows other content or no row (NULL while current)."""
    columns = [c.split()[0] for c in SCHEMAS[entity].split(", ")]
    hours, versions, open_ = sorted(SNAPSHOTS[entity]), [], {}
    for hour in hours:
        rows = {"|".join(r[k] for k in KEYS.get(entity, ("luid",))).lower(): r for r in SNAPSHOTS[entity][hour]}
        for key in [k for k, v in open_.items() if rows.get(k) != v[0]]:
            versions.append((*open_.pop(key), at(hour)))
        for key, row in rows.items():
            open_.setdefault(key, (row, key, at(hour)))
    versions += [(*v, None) for v in open_.values()]
    return [
        (
            *[row[c] for c in columns],
            SITE,
            key,
            start,
            end,
            end is None,
            hashlib.sha256(json.dumps(row, default=str, sort_keys=True).encode()).hexdigest(),
            f"siteLuid={SITE}/entityType={entity}/part-0.parquet",
            "run-1",
            at(5),
        )
        for row, key, start, end in versions
    ]


@pytest.fixture(scope="module")
def access_lake(spark, lake_dir):
    cfg = load_config("test", environ=variant_environ(lake_dir, "access_history"))
    silver, ops, gold = (cfg.get(f"{layer}.schema") for layer in ("silver", "ops", "gold"))
    for schema in (silver, ops, gold):
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    for entity in SNAPSHOTS:
        _save(spark, history(entity), f"{SCHEMAS[entity]}, {SILVER_COLUMNS}", f"{silver}.entity_{entity}_history")
    hours = [
        (entity, SITE.upper(), at(h), len(rows), "applied", "run-1", at(5), at(5))
        for entity, snapshots in SNAPSHOTS.items()
        for h, rows in snapshots.items()
    ]
    hours.append(("users", SITE, datetime(2026, 6, 2), 3, "late", "run-2", at(5), at(5)))  # never applied
    _save(
        spark,
        hours,
        "entity_type string, site_luid string, snapshot_hour timestamp, rows bigint, status string, "
        "run_id string, bronze_ingest_ts timestamp, recorded_at timestamp",
        f"{ops}.snapshot_hours",
    )
    facts = {
        "fct_user_lifecycle": (
            [
                (
                    e,
                    "site",
                    "hist_update_user_site_role",
                    t,
                    SITE,
                    U1,
                    None,
                    u,
                    None,
                    None,
                    None,
                    "site_role_changed",
                    None,
                    None,
                    at(5),
                )
                for e, t, u in ROLE_EVENTS
            ]
            + [
                (e, "site", "hist_delete_user", t, SITE, U1, None, u, None, None, None, "deleted", None, None, at(5))
                for e, t, u in DELETIONS
            ],
            "event_id string, family string, event_type string, event_time timestamp, site_luid string, "
            "actor_user_luid string, actor_tenant_user_id string, user_luid string, tenant_user_id string, "
            "user_name string, user_email string, action string, old_role string, new_role string, "
            "silver_ingest_ts timestamp",
        ),
        "fct_group_membership_changes": (
            [(e, typ, t, SITE, U1, g, None, u, None, change, at(5)) for e, typ, t, g, u, change in MEMBERSHIP_EVENTS],
            "event_id string, event_type string, event_time timestamp, site_luid string, actor_user_luid string, "
            "group_luid string, group_name string, user_luid string, user_name string, change string, "
            "silver_ingest_ts timestamp",
        ),
        "fct_ownership_transfers": (
            [
                (e, typ, t, SITE, U1, "workbook", c, "Sales v2", old, None, new, None, at(5))
                for e, typ, t, c, old, new in OWNERSHIP_EVENTS
            ],
            "event_id string, source_event_type string, event_time timestamp, site_luid string, "
            "actor_user_luid string, content_type string, content_luid string, content_name string, "
            "old_owner_luid string, old_owner_name string, new_owner_luid string, new_owner_name string, "
            "silver_ingest_ts timestamp",
        ),
    }
    for name, (rows, schema) in facts.items():
        _save(spark, rows, schema, f"{gold}.{name}")
    result = run_dbt(spark, cfg, ["build", "--quiet", *SELECT])
    return cfg, result


def _save(spark, rows: list[tuple], schema: str, table: str) -> None:
    spark.createDataFrame(rows, schema).createOrReplaceTempView("access_history_rows")
    spark.sql(f"CREATE OR REPLACE TABLE {table} USING delta AS SELECT * FROM access_history_rows")
    spark.catalog.dropTempView("access_history_rows")


def _rows(spark, cfg, name: str) -> list:
    return spark.table(f"{cfg.get('gold.schema')}.{name}").collect()


def test_the_models_and_their_data_tests_pass(access_lake):
    _, result = access_lake
    assert not result.failures
    assert result.statuses.get("success") == 6  # three intermediate views, three marts
    assert result.statuses.get("pass", 0) >= 10  # a primary key per model, accepted values, ...


def test_access_history_answers_as_of_every_hour_exactly(spark, access_lake):
    cfg, _ = access_lake
    gold = cfg.get("gold.schema")
    for hour in range(5):
        t = at(hour, 30)
        held = spark.sql(
            f"SELECT * FROM {gold}.fct_access_history WHERE valid_from <= timestamp '{t}' "
            f"AND (valid_to > timestamp '{t}' OR valid_to IS NULL)"
        ).collect()
        roles = {(r["user_luid"], r["site_role"]) for r in held if r["subject"] == "site_role"}
        assert roles == {(u["luid"].lower(), u["site_role"]) for u in SNAPSHOTS["users"][hour]}, hour
        members = {(r["group_luid"], r["user_luid"]) for r in held if r["subject"] == "group_membership"}
        assert members == {(m["group_luid"], m["user_luid"]) for m in SNAPSHOTS["group_members"][hour]}, hour
        owners = {(r["content_luid"], r["user_luid"]) for r in held if r["subject"] == "content_ownership"}
        assert owners == {
            (c["luid"], c["owner_luid"]) for e in ("workbooks", "datasources") for c in SNAPSHOTS[e][hour]
        }, hour
    # consecutive versions of one role, membership or owner are one interval; a gap is two
    intervals = {
        (
            r["subject"],
            r["user_luid"],
            r["group_luid"],
            r["content_luid"],
            r["valid_from"].hour,
            r["valid_to"].hour if r["valid_to"] else None,
        )
        for r in _rows(spark, cfg, "fct_access_history")
    }
    assert ("site_role", U1, None, None, 0, 3) in intervals  # the new e-mail at 2 is not a new interval
    assert {i for i in intervals if i[0] == "site_role" and i[1] == U4} == {
        ("site_role", U4, None, None, 0, 2),
        ("site_role", U4, None, None, 3, None),
    }
    assert ("content_ownership", U1, None, W1, 0, 2) in intervals  # renamed at 1, same owner
    assert len(intervals) == 15


def test_access_review_defaults_to_the_latest_applied_hour(spark, access_lake):
    cfg, _ = access_lake
    review = {r["user_luid"]: r for r in _rows(spark, cfg, "rpt_access_review")}
    assert set(review) == {U1, U2, U3, U4}
    assert {r["as_of"] for r in review.values()} == {r["snapshot_hour"] for r in review.values()} == {at(4)}
    u1 = review[U1]
    assert (u1["site_role"], u1["groups"], u1["owned_datasources"]) == ("Creator", "Analysts", 1)
    assert review[U3]["groups"] is None and review[U3]["group_count"] == 0
    assert u1["user_display_name"] is None  # not delivered: a typed NULL


def test_access_review_as_of_a_given_time(spark, access_lake):
    cfg, _ = access_lake
    # as an auditor asks for it: `auditlake gold dbt run --select rpt_access_review --vars '{...}'`
    run_dbt(
        spark,
        cfg,
        ["run", "--quiet", "--select", "rpt_access_review", "--vars", '{access_review_as_of: "2026-06-01 02:30:00"}'],
    )
    review = {r["user_luid"]: r for r in _rows(spark, cfg, "rpt_access_review")}
    assert set(review) == {U1, U2, U3}  # u4 was missing from the snapshot at 2
    u1 = review[U1]
    assert (u1["user_name"], u1["user_email"], u1["site_role"]) == ("ann", "ann@example.com", "Viewer")
    assert (u1["groups"], u1["group_count"], u1["owned_content"]) == ("Admins, Analysts", 2, 0)
    assert (review[U2]["owned_workbooks"], review[U3]["owned_datasources"]) == (1, 1)
    assert {(r["as_of"], r["snapshot_hour"]) for r in review.values()} == {(at(2, 30), at(2))}
    with pytest.raises(gold_run.GoldError, match="access_review_as_of"):
        run_dbt(
            spark,
            cfg,
            ["run", "--quiet", "--select", "rpt_access_review", "--vars", "{access_review_as_of: last tuesday}"],
        )
    with pytest.raises(UsageError, match="not a mapping"):
        run_dbt(spark, cfg, ["run", "--select", "rpt_access_review", "--vars=2026-06-01"])


def test_discrepancies_between_the_snapshots_and_the_activity_log(spark, access_lake):
    cfg, _ = access_lake
    found = {
        (
            r["seen_in"],
            r["subject"],
            r["user_luid"],
            r["group_luid"],
            r["content_luid"],
            r["detail"],
            r["changed_after"],
            r["changed_by"],
            r["event_id"],
        )
        for r in _rows(spark, cfg, "rpt_access_log_discrepancies")
    }
    assert found == {
        # u3's role change at 1, no event; u1's at 3 has its event at 02:40
        ("snapshots_only", "site_role", U3, None, None, "site role Viewer -> Creator", at(0), at(1), None),
        # an event at 01:30 for u2, whose role the snapshots at 2 and 3 show unchanged
        ("activity_log_only", "site_role", U2, None, None, "site role changed", at(1, 30), at(1, 30), "r2"),
        # u1 left g2 at 3 with no event; u2's joining g1 at 2 has its event at 01:10; u3's leaving g1 at 2
        # is explained by u3's deletion at 01:40
        ("snapshots_only", "group_membership", U1, G2, None, "removed from group", at(2), at(3), None),
        # u3 added to g2 at 02:20 by the log, in no snapshot
        ("activity_log_only", "group_membership", U3, G2, None, "added to group", at(2, 20), at(2, 20), "m2"),
        # d1 to u1 at 4 with no event; w1's transfer at 2 has two events (content_owner_change and the hist_ one)
        ("snapshots_only", "content_ownership", U1, None, D1, f"owner {U3} -> {U1}", at(3), at(4), None),
    }  # r3 (u4 at 03:30) waits for the snapshot after 4
