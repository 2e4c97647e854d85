"""Silver typing on tiny inline frames: no files, no tables, the real Spark transforms."""

from __future__ import annotations

import json
import random
from datetime import datetime

import pytest

from auditlake_devtools.sample.activity_log import full_record
from pipelines.activity_log.bronze import to_bronze_rows
from pipelines.activity_log.registry import event_spec, event_specs
from pipelines.activity_log.silver.plan import column_name, family_plan, snake_case
from pipelines.activity_log.silver.transform import decide, to_silver

SITE = "11111111-2222-3333-4444-555555555555"


def bronze_frame(spark, lines: list[str], family: str = "site", folder_type: str | list | None = None):
    """``folder_type``: the ``eventType=`` folder of every line, of each line (a list), or none."""
    folders = folder_type if isinstance(folder_type, list) else [folder_type] * len(lines)

    def path(i: int) -> str:
        return f"/landing/{family}/" + (f"eventType={folders[i]}/" if folders[i] else "") + f"part-{i}.json"

    raw = spark.createDataFrame(
        [(line, path(i), 100, None) for i, line in enumerate(lines)],
        "value string, source_file string, source_file_size long, source_file_mtime timestamp",
    )
    return to_bronze_rows(raw, family, "run-t")


def silver_of(spark, records: list, family: str = "site", folder_type: str | list | None = None):
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    frames = to_silver(bronze_frame(spark, lines, family, folder_type), family)
    return [r.asDict() for r in frames.events.collect()], [r.asDict() for r in frames.quarantine.collect()]


def login(**extra):
    rec = {
        "eventType": "hist_login",
        "eventTime": "2026-06-01T10:00:00.123456Z",
        "actorUserId": 42,
        "actorUserLuid": "aaaaaaaa-0000-0000-0000-000000000001",
        "siteLuid": SITE,
        "siteRoleId": 11,
        "systemAdminLevel": 10,
        "actorExternalId": "ext-1",
    }
    rec.update(extra)
    return rec


def envelope(rec: dict) -> dict:
    event = {k: v for k, v in rec.items() if k != "eventType"}
    return {"traceUuid": "t-1", "event": event, "metadata": {"eventType": rec["eventType"], "eventVersion": "1.0"}}


def test_snake_case_names():
    assert snake_case("actorUserLuid") == "actor_user_luid"
    assert snake_case("totalStorageQuotaUsed") == "total_storage_quota_used"
    assert column_name("eventType") == "attr_event_type"  # the materialized-views events' own attribute
    assert column_name("eventTime") == "event_time"


def test_typed_columns_and_codes(spark):
    events, quarantine = silver_of(spark, [login()])
    assert quarantine == []
    (row,) = events
    assert row["event_type"] == "hist_login"
    assert row["event_time"] == datetime(2026, 6, 1, 10, 0, 0, 123456)
    assert row["event_date"].isoformat() == "2026-06-01"
    assert row["actor_user_id"] == 42 and row["site_role_id"] == 11 and row["system_admin_level"] == 10
    assert row["actor_external_id"] == "ext-1"
    assert row["record_shape"] == "flat" and row["edition"] == "current"
    assert row["_rescued_data"] is None
    assert row["source_file"].endswith("part-0.json") and row["bronze_run_id"] == "run-t"


# (eventTime as written, the UTC time silver keeps): the session time zone is UTC
EVENT_TIME_FORMS = [
    ("2024-06-16T18:03:47.203309Z", datetime(2024, 6, 16, 18, 3, 47, 203309)),
    ("2024-06-16T18:03:47Z", datetime(2024, 6, 16, 18, 3, 47)),
    ("2024-06-16T20:03:47+02:00", datetime(2024, 6, 16, 18, 3, 47)),
    ("2024-06-16T18:03:47.5-01:30", datetime(2024, 6, 16, 19, 33, 47, 500000)),
]


def test_event_time_forms_are_utc(spark):
    # one transform for every form (each is seconds of planning): the actor's id tells the records apart
    events, quarantine = silver_of(
        spark, [login(eventTime=text, actorUserId=i) for i, (text, _) in enumerate(EVENT_TIME_FORMS)]
    )
    assert quarantine == []
    assert {e["actor_user_id"]: e["event_time"] for e in events} == dict(enumerate(t for _, t in EVENT_TIME_FORMS))


def test_same_event_same_id_in_either_shape_and_number_as_string(spark):
    flat = login()
    as_string = login(actorUserId="42", siteRoleId="11")
    events, _ = silver_of(spark, [flat, envelope(flat), as_string, login(actorUserId=43)])
    ids = [e["event_id"] for e in events]
    assert ids[0] == ids[1] == ids[2]
    assert ids[3] != ids[0]
    assert events[1]["record_shape"] == "envelope" and events[1]["envelope_trace_uuid"] == "t-1"
    assert events[2]["actor_user_id"] == 42 and events[2]["_rescued_data"] is None


def test_bad_values_and_unknown_attributes_are_rescued(spark):
    rec = login(actorUserId="forty-two", quantumFlux={"a": 1}, newField2027="x", systemAdminLevel=1.5)
    (row,), quarantine = silver_of(spark, [rec])
    assert quarantine == []
    assert row["actor_user_id"] is None and row["system_admin_level"] is None
    rescued = json.loads(row["_rescued_data"])
    assert rescued == {
        "actorUserId": "forty-two",
        "systemAdminLevel": "1.5",
        "quantumFlux": '{"a":1}',
        "newField2027": "x",
    }


def test_attribute_documented_for_another_event_type_is_rescued(spark):
    # jobId is a background_job attribute, not a hist_login one
    (row,), _ = silver_of(spark, [login(jobId=7)])
    assert row["job_id"] is None
    assert json.loads(row["_rescued_data"]) == {"jobId": "7"}


def test_quarantine_reasons(spark):
    lines = [
        "",
        '{"eventType": "hist_login", "eventTime": ',
        json.dumps({"eventTime": "2026-06-01T10:00:00Z"}),  # type from the folder: an event
        json.dumps(login(eventType="hist_quantum_teleport")),
        json.dumps(login(eventTime="not-a-time")),
        json.dumps({k: v for k, v in login().items() if k != "eventTime"}),
        json.dumps(login(eventType="hist_logout")),  # the folder says hist_login
        json.dumps(login(eventType="hist_quantum_teleport")),  # no folder
    ]
    events, quarantine = silver_of(spark, lines, folder_type=["hist_login"] * 7 + [None])
    reasons = sorted((q["reason"], q["event_type"]) for q in quarantine)
    assert reasons == [
        ("bad_event_time", "hist_login"),
        ("bad_event_time", "hist_login"),
        ("blank_line", None),
        ("event_type_mismatch", "hist_logout"),
        ("event_type_mismatch", "hist_quantum_teleport"),
        ("malformed_json", None),
        ("unknown_event_type", "hist_quantum_teleport"),
    ]
    mismatch = next(q for q in quarantine if q["event_type"] == "hist_logout")
    assert mismatch["detail"] == "the record says hist_logout, its eventType= folder says hist_login"
    assert len(events) == 1 and events[0]["event_type"] == "hist_login"
    assert all(q["raw_line"] is not None and q["source_file"] and q["detail"] for q in quarantine)


def test_missing_event_type_everywhere_is_quarantined(spark):
    raw = spark.createDataFrame(
        [('{"eventTime": "2026-06-01T10:00:00Z"}', "/landing/site/part-0.json", 1, None)],
        "value string, source_file string, source_file_size long, source_file_mtime timestamp",
    )
    frames = to_silver(to_bronze_rows(raw, "site", "r"), "site")
    assert [q["reason"] for q in frames.quarantine.collect()] == ["missing_event_type"]


def test_alias_and_legacy_edition(spark):
    tenant = {"eventType": "batch_revoke_sessions", "eventTime": "2026-06-01T10:00:00Z", "sessionUserId": "u1"}
    (row,), _ = silver_of(spark, [tenant], family="tenant", folder_type="batch_revoke_session")
    assert row["event_type"] == "batch_revoke_session" and row["session_user_id"] == "u1"
    legacy = {
        "eventType": "add_delete_user_to_group",
        "eventTime": "2026-06-01T10:00:00Z",
        "actorUserId": 5,
        "siteLuid": SITE,
        "isError": False,
        "serviceName": "vizportal",
        "traceUuid": "tr",
        "groupId": 3,
    }
    (row,), _ = silver_of(spark, [legacy])
    assert row["edition"] == "legacy" and row["service_name"] == "vizportal" and row["trace_uuid"] == "tr"
    assert row["_rescued_data"] is None


def test_duplicates_keep_the_earliest_copy_and_replays_are_recognised(spark):
    lines = [json.dumps(r) for r in (login(), envelope(login()), login(actorUserId=7), login(actorUserId=8))]
    # materialised: bronze_id is a uuid() drawn at landing, stored by bronze; here it must be drawn once
    events = to_silver(bronze_frame(spark, lines), "site").events.localCheckpoint()
    rows = {r["source_file"].rsplit("/", 1)[1]: r for r in events.collect()}
    existing = spark.createDataFrame(
        [
            (rows["part-2.json"]["event_id"], "another-bronze-row"),
            (rows["part-3.json"]["event_id"], rows["part-3.json"]["bronze_id"]),
        ],
        "event_id string, bronze_id string",
    )
    got = {r["bronze_id"]: r["decision"] for r in decide(events, existing).collect()}
    by_file = {name: got[row["bronze_id"]] for name, row in rows.items()}
    # same ingest time: the file order decides which copy is kept
    assert by_file == {
        "part-0.json": "new",
        "part-1.json": "same_batch",
        "part-2.json": "already_in_silver",
        "part-3.json": "replayed",
    }


def _expected(value, spark_type: str):
    if spark_type in ("int", "bigint"):
        return int(value)
    if spark_type == "double":
        return float(value)
    if spark_type == "boolean":
        return bool(value)
    if spark_type == "timestamp":
        return datetime.fromisoformat(value.replace("Z", "+00:00")).replace(tzinfo=None)
    return value if isinstance(value, str) else json.dumps(value)


@pytest.mark.parametrize("family", ["site", "tenant"])
def test_registry_coverage_every_attribute_of_every_event_type(spark, family):
    """A record with every documented attribute of every event type types back to its input."""
    rng = random.Random(5)
    plan = family_plan(family)
    records = {spec.event_type: full_record(spec, rng) for spec in event_specs(family)}
    lines = [json.dumps(r) for r in records.values()]
    frames = to_silver(bronze_frame(spark, lines, family), family)
    assert frames.quarantine.count() == 0
    rows = {r["event_type"]: r.asDict() for r in frames.events.collect()}
    assert set(rows) == set(records)
    mismatches = []
    for event_type, record in records.items():
        row = rows[event_type]
        assert row["_rescued_data"] is None, (event_type, row["_rescued_data"])
        for col in plan.event_columns(event_type):
            if col.attribute == "eventTime":
                continue
            if col.attribute == "eventType":  # flat record: the key names the event
                continue
            assert col.attribute in record, f"{event_type}.{col.attribute} missing from the generated record"
            want = _expected(record[col.attribute], col.documented_type(event_type))
            got = row[col.column]
            if col.physical_type == "string" and col.documented_type(event_type) != "string":
                got = _expected(got, col.documented_type(event_type))
            if got != want:
                mismatches.append((event_type, col.attribute, want, got))
    assert mismatches == []
    assert event_spec(family, next(iter(records))).family == family


def test_event_time_to_utc_date_boundary(spark):
    (row,), _ = silver_of(spark, [login(eventTime="2026-06-01T23:30:00-02:00")])
    assert row["event_time"] == datetime(2026, 6, 2, 1, 30) and row["event_date"].isoformat() == "2026-06-02"


# ---------------------------------------------------------------- records as Tableau's own code writes them

UPPER_ACTOR = "AAAAAAAA-0000-0000-0000-00000000000A"


def test_the_emitters_envelope_without_metadata_lands_typed_from_its_folder(spark):
    """``{"traceUuid", "event"}``: no metadata, no eventType; nine fractional digits."""
    flat = login(eventTime="2026-03-10T00:41:38.499721Z")
    event = {k: v for k, v in flat.items() if k != "eventType"} | {"eventTime": "2026-03-10T00:41:38.499721141Z"}
    emitted = {"traceUuid": "5D0C7F0E-9A8B-4C3D-8E2F-1A2B3C4D5E6F", "event": event}
    events, quarantine = silver_of(spark, [emitted, flat], folder_type="hist_login")
    assert quarantine == []
    by_shape = {r["record_shape"]: r for r in events}
    row = by_shape["envelope"]
    assert row["event_type"] == "hist_login" and row["event_time"] == datetime(2026, 3, 10, 0, 41, 38, 499721)
    assert row["envelope_trace_uuid"] == "5d0c7f0e-9a8b-4c3d-8e2f-1a2b3c4d5e6f"
    assert row["envelope_event_version"] is None and row["_rescued_data"] is None
    assert row["event_id"] == by_shape["flat"]["event_id"]  # the same event in the other shape


def test_luids_are_lower_cased_and_other_ids_keep_their_case(spark):
    lower = login(actorUserLuid=UPPER_ACTOR.lower())
    upper = login(actorUserLuid=UPPER_ACTOR, actorExternalId="Ext-ABC")
    events, _ = silver_of(spark, [lower, envelope(upper)])
    rows = {r["record_shape"]: r for r in events}
    assert rows["envelope"]["actor_user_luid"] == rows["flat"]["actor_user_luid"] == UPPER_ACTOR.lower()
    assert rows["envelope"]["actor_external_id"] == "Ext-ABC"  # not a UUID: an opaque id keeps its case
    assert rows["envelope"]["site_luid"] == SITE
    # tenant: ids that are UUIDs, alone or as a comma list
    tenant_id = "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0"
    site_ids = "AAAAAAAA-1111-2222-3333-444444444444, BBBBBBBB-1111-2222-3333-444444444444"
    rec = {
        "eventType": "update_private_connection",
        "eventTime": "2026-06-01T10:00:00Z",
        "tenantId": tenant_id,
        "newSiteIds": site_ids,
        "initiatingUserId": "Admin-1",
    }
    (row,), _ = silver_of(spark, [rec], family="tenant")
    assert row["tenant_id"] == tenant_id.lower() and row["new_site_ids"] == site_ids.lower()
    assert row["initiating_user_id"] == "Admin-1"


# (family, a record with a documented integer past 32 bits, its column)
WIDE_INTEGERS = [
    ("site", {"eventType": "hist_publish_datasource", "size": 3_000_000_000}, "size"),  # bytes
    ("site", {"eventType": "content_owner_change", "contentId": 4_294_967_296}, "content_id"),  # an id
    ("site", {"eventType": "hist_access_summary_data", "viewCount": 2_500_000_000}, "view_count"),  # a count
    ("site", {"eventType": "hist_login", "actorUserId": 9_007_199_254_740_993}, "actor_user_id"),  # common
    ("tenant", {"eventType": "site_limits_change", "newViewerCapacity": 5_000_000_000}, "new_viewer_capacity"),
]


def test_integers_past_32_bits_keep_their_value(spark):
    # one transform per family (each is seconds of planning): the event type tells the records apart
    for family in ("site", "tenant"):
        cases = [(record, column) for f, record, column in WIDE_INTEGERS if f == family]
        where = {"siteLuid": SITE} if family == "site" else {}
        events, quarantine = silver_of(
            spark, [{"eventTime": "2026-06-01T10:00:00Z", **where, **record} for record, _ in cases], family=family
        )
        assert quarantine == [], family
        rows = {e["event_type"]: e for e in events}
        for record, column in cases:
            value = next(v for k, v in record.items() if k != "eventType")
            row = rows[record["eventType"]]
            assert row[column] == value and row["_rescued_data"] is None, (family, column)


def test_legacy_codes_are_decoded_with_the_legacy_list(spark):
    from pipelines.activity_log.silver.views import event_attribute_columns

    legacy = {
        "eventType": "hist_delete_system_user",
        "eventTime": "2026-06-01T10:00:00Z",
        "actorUserId": 5,
        "siteLuid": SITE,
        "siteRoleId": 4,
        "licensingRoleName": "Viewer",
        "name": "ann",
    }
    current = login(siteRoleId=9)
    legacy_basic = legacy | {"siteRoleId": 9}
    lines = [json.dumps(r) for r in (legacy, current, legacy_basic)]
    events = to_silver(bronze_frame(spark, lines), "site").events
    decode = next(
        sql for sql, name, _ in event_attribute_columns("site", "hist_delete_system_user") if name == "site_role"
    )
    got = sorted(
        (r["edition"], r["site_role_id"], r["site_role"])
        for r in events.selectExpr("edition", "site_role_id", f"{decode} AS site_role").collect()
    )
    assert got == [("current", 9, "Viewer"), ("legacy", 4, "ViewerWithPublish"), ("legacy", 9, "BasicUser")]


def test_the_help_pages_newer_types_and_attributes_are_typed(spark):
    """add_delete_group_to_group_set, login_authentication and serviceName (common now): each attribute in
    its typed column, none rescued; a legacy record that documents serviceName keeps its edition."""
    from pipelines.activity_log.silver.views import event_attribute_columns

    group_set = "CCCCCCCC-1111-2222-3333-444444444444"
    common = {"eventTime": "2026-06-01T10:00:00Z", "siteLuid": SITE, "actorUserLuid": UPPER_ACTOR}
    records = [
        envelope(
            {
                "eventType": "add_delete_group_to_group_set",
                **common,
                "groupId": 7,
                "groupLuid": "dddddddd-1111-2222-3333-444444444444",
                "groupSetId": 3_000_000_001,
                "groupSetLuid": group_set,
                "groupSetOperation": "add",
                "isError": False,
                "eventOutcome": "success",
                "serviceName": "vizportal",
            }
        ),
        {
            "eventType": "login_authentication",
            **common,
            "eventOutcome": "unauthorized",
            "eventOutcomeReason": "Invalid username or password",
            "serviceName": "vizportal",
        },
        {  # the legacy edition: serviceName documented on the event, no current-only common attribute
            "eventType": "add_delete_user_to_group",
            "eventTime": "2026-06-01T10:00:00Z",
            "siteLuid": SITE,
            "actorUserId": 42,
            "groupId": 7,
            "groupLuid": "dddddddd-1111-2222-3333-444444444444",
            "groupOperation": "add",
            "userId": 43,
            "isError": False,
            "serviceName": "sitesaml",
        },
    ]
    events, quarantine = silver_of(spark, records)
    assert quarantine == []
    rows = {r["event_type"]: r for r in events}
    changed = rows["add_delete_group_to_group_set"]
    assert changed["group_set_id"] == 3_000_000_001 and changed["group_id"] == 7
    assert changed["group_set_luid"] == group_set.lower() and changed["group_set_operation"] == "add"
    assert changed["is_error"] is False and changed["service_name"] == "vizportal"
    sign_in = rows["login_authentication"]
    assert (sign_in["event_outcome"], sign_in["event_outcome_reason"]) == (
        "unauthorized",
        "Invalid username or password",
    )
    assert sign_in["actor_user_luid"] == UPPER_ACTOR.lower() and sign_in["edition"] == "current"
    legacy = rows["add_delete_user_to_group"]
    assert legacy["edition"] == "legacy" and legacy["service_name"] == "sitesaml"
    assert all(r["_rescued_data"] is None for r in events)
    # the views: the group set's own columns, typed, and serviceName on every event type
    view = {name: typ for _, name, typ in event_attribute_columns("site", "add_delete_group_to_group_set")}
    assert {k: view[k] for k in ("group_set_id", "group_set_luid", "group_set_operation", "is_error")} == {
        "group_set_id": "bigint",
        "group_set_luid": "string",
        "group_set_operation": "string",
        "is_error": "boolean",
    }
    sign_in_view = {name for _, name, _ in event_attribute_columns("site", "login_authentication")}
    assert {"event_outcome", "event_outcome_reason", "service_name"} <= sign_in_view
    assert "group_set_luid" not in sign_in_view
