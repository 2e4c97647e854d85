"""The Activity Log generator's records against the event registry: every event type of both
families, each with every documented attribute of its type, the legacy attribute set, the envelope
shape, varied time formats; a tiny run still covers the registry, and the record builders."""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict

import pytest

from auditlake_devtools.sample.activity_log import attribute_list, build_record, full_record, generate_activity_log
from auditlake_devtools.sample.activity_log.records import generated_specs
from pipelines.activity_log.registry import event_specs
from tests.generated_log import attributes, event_type, parse_time

JSON_TYPES = {"string": str, "int": int, "bigint": int, "boolean": bool, "double": float, "timestamp": str}
# what a run without --live-feed writes: every type of the bundled references
ALL_TYPES = set(generated_specs())


def _typed_ok(value, spark_type: str) -> bool:
    if spark_type in ("int", "bigint") and isinstance(value, bool):
        return False
    return isinstance(value, JSON_TYPES[spark_type])


def test_every_event_type_of_both_families_appears(clean_log):
    seen = {(rel.split("/")[0], event_type(r, rel)) for rel, r, _ in clean_log.records}
    assert ALL_TYPES <= seen
    assert seen <= ALL_TYPES  # nothing invented in a clean run


def test_each_type_has_a_record_with_every_documented_attribute(clean_log):
    by_type = defaultdict(list)
    for rel, r, _ in clean_log.records:
        by_type[(rel.split("/")[0], event_type(r, rel))].append(attributes(r))
    for spec in generated_specs().values():
        wanted = attribute_list(spec, "full")
        ok = [
            a
            for a in by_type[(spec.family, spec.event_type)]
            if all(n in a and a[n] is not None and (n == "eventType" or _typed_ok(a[n], t)) for n, t in wanted)
        ]
        assert ok, f"{spec.family}/{spec.event_type}: no record with all {len(wanted)} attributes"


def test_legacy_records_carry_the_legacy_attribute_set(clean_log):
    legacy_types = [s for s in event_specs("site") if "legacy" in s.editions]
    assert len(legacy_types) == 55
    keysets = defaultdict(set)
    for rel, r, _ in clean_log.records:
        if rel.startswith("site/"):
            keysets[event_type(r, rel)].add(frozenset(attributes(r)) - {"eventType"})
    for spec in legacy_types:
        legacy = frozenset(n for n, _ in attribute_list(spec, "legacy"))
        assert legacy in keysets[spec.event_type], spec.event_type
        assert {"actorUserId", "eventTime", "siteLuid"} <= legacy and "actorUserLuid" not in legacy
    own_common = {s.event_type: set(s.legacy_common) for s in legacy_types}  # e.g. hist_delete_system_user's siteRoleId
    for rel, r, _ in clean_log.records:
        a = attributes(r)
        if "actorUserLuid" not in a and "tenantId" not in a:  # a legacy record
            assert {"actorUserId", "eventTime", "siteLuid"} <= set(a)
            newer = {"initiatingUserLuid", "licensingRoleName", "siteRoleId", "systemAdminLevel"}
            assert not (newer - own_common[event_type(r, rel)]) & set(a)


def test_envelope_shape(clean_log):
    envs = [r for _, r, _ in clean_log.records if "metadata" in r]
    assert envs and {"site", "tenant"} <= {("tenant" if "tenantId" in r["event"] else "site") for r in envs}
    for r in envs:
        assert set(r) == {"traceUuid", "event", "metadata"}
        assert set(r["metadata"]) == {"eventType", "eventVersion", "emittedAt"}
        assert r["metadata"]["eventVersion"] == "1.0"
        assert "eventType" not in r["event"] or r["metadata"]["eventType"].endswith("materialized_views")
        assert parse_time(r["metadata"]["emittedAt"]) >= parse_time(r["event"]["eventTime"])
        if "traceUuid" in r["event"]:
            assert r["event"]["traceUuid"] == r["traceUuid"]


def test_time_formats_vary_but_parse(clean_log):
    times = [attributes(r)["eventTime"] for _, r, _ in clean_log.records]
    assert any(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", t) for t in times)
    assert any(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", t) for t in times)
    assert any(t.endswith("+00:00") for t in times)


def test_tiny_run_still_covers_the_registry(tmp_path):
    s = generate_activity_log(tmp_path, 10, seed=3, days=1, dirty=True)
    assert {et for _, et in ALL_TYPES} <= set(s["event_types"])
    assert s["records"] > 10  # documented: coverage comes first
    assert all(n >= 2 for n in s["dirty"].values())


@pytest.mark.parametrize("shape", ["flat", "envelope"])
def test_build_record_fills_every_attribute_with_its_type(shape):
    rng = random.Random(5)
    for spec in event_specs():
        for edition in spec.editions:
            rec = build_record(spec, rng, shape=shape, edition=edition)
            attrs = attributes(rec)
            if shape == "flat" or "metadata" in rec:  # Tableau's emitter leaves the type to the folder
                et = rec["eventType"] if shape == "flat" else rec["metadata"]["eventType"]
                assert et == spec.event_type
            for name, t in attribute_list(spec, edition):
                assert name in attrs, (spec.event_type, edition, name)
                if not (shape == "flat" and name == "eventType"):
                    assert _typed_ok(attrs[name], t), (spec.event_type, edition, name, attrs[name])
            json.dumps(rec)


def test_build_record_value_formats():
    rng = random.Random(9)
    uuid_re = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
    big = False
    for spec in event_specs():
        for _ in range(3):
            rec = full_record(spec, rng)
            for name, t in attribute_list(spec, "full"):
                v = rec[name]
                if t == "string" and name.endswith(("Luid", "Uuid", "Guid")):
                    assert uuid_re.match(v), (spec.event_type, name, v)
                if t == "string" and (name.endswith("Time") or name == "expiresAt"):
                    parse_time(v)
                if t == "string" and name.lower().endswith("email"):
                    assert re.fullmatch(r"[^@\s]+@[a-z0-9.-]+\.[a-z]+", v), v
                if name.endswith("IpAddress"):
                    assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", v)
                if t == "bigint" and v > 2**31:
                    big = True
    assert big
    with pytest.raises(ValueError):
        build_record(next(s for s in event_specs("tenant")), rng, edition="legacy")
