"""The Activity Log generator: layout, determinism, registry coverage, stories, dirt, and the
entity snapshots beside the log.

Pure Python, no Spark: everything is read back from the files with json, gzip and pyarrow.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from auditlake_devtools.sample.activity_log import (
    DIRTY_KINDS,
    ENTITY_TYPES,
    UNKNOWN_TYPES,
    attribute_list,
    build_record,
    build_world,
    full_record,
    generate_activity_log,
)
from auditlake_devtools.sample.activity_log.records import generated_specs
from auditlake_devtools.sample.activity_log.values import SITE_ROLE_NAMES
from pipelines.activity_log.registry import event_specs

SEED = 7
EVENTS = 3000
START = datetime(2026, 6, 1, tzinfo=UTC)
LAYOUT = re.compile(
    r"^(?P<family>site|tenant)/(?P<key>siteLuid|tenantId)=(?P<part>[0-9a-f-]{36})"
    r"/y=(?P<y>\d{4})/m=(?P<m>\d{2})/d=(?P<d>\d{2})/h=(?P<h>\d{2})"
    r"/eventType=(?P<et>[a-z0-9_]+)/part-(?P<n>\d{5})\.json(?P<gz>\.gz)?$"
)
BAD_TIMES = ("not-a-time", "2024-13-45T99:00:00Z", "", "06/16/2024 18:03:47")
JSON_TYPES = {"string": str, "int": int, "bigint": int, "boolean": bool, "double": float, "timestamp": str}
# what a run without --live-feed writes: every type of the bundled references
ALL_TYPES = set(generated_specs())


# ------------------------------------------------------------------ reading back
def _raw(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def _physical_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _event_type(rec: dict, rel: str | None = None) -> str | None:
    """The record's own type; for an envelope from Tableau's emitter (no metadata), its folder's."""
    if "event" not in rec:
        return rec.get("eventType")
    if "metadata" in rec:
        return rec["metadata"].get("eventType")
    m = re.search(r"eventType=([^/]+)", rel or "")
    return m[1] if m else None


def _attrs(rec: dict) -> dict:
    return rec["event"] if "event" in rec else rec


def _luids(attrs: dict) -> dict:
    """``attrs`` with LUIDs in lower case, as the world holds them (Tableau's emitter writes upper case)."""
    return {k: (v.lower() if isinstance(v, str) and k.endswith("Luid") else v) for k, v in attrs.items()}


def _parse_time(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


class Run:
    """A generated directory read back: files, lines and parsed records with their file."""

    def __init__(self, root: Path, summary: dict):
        self.root, self.summary = root, summary
        self.files: dict[str, bytes] = {}
        self.records: list[tuple[str, dict, str]] = []  # (rel, record, raw line)
        self.bad_lines: list[tuple[str, str]] = []
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix != ".parquet":  # entity snapshots: read by Snapshots below
                rel = p.relative_to(root).as_posix()
                raw = _raw(p)
                self.files[rel] = raw
                text = raw.decode("utf-8-sig")
                for line in text.splitlines():
                    if not line.strip():
                        continue
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:
                        self.bad_lines.append((rel, line))
                        continue
                    if isinstance(rec, dict):
                        self.records.append((rel, rec, line))
                    else:
                        self.bad_lines.append((rel, line))

    def of_type(self, et: str):
        return [(rel, r) for rel, r, _ in self.records if _event_type(r, rel) == et]


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Run:
    root = tmp_path_factory.mktemp("clean")
    return Run(root, generate_activity_log(root, EVENTS, seed=SEED, start=START, days=7))


@pytest.fixture(scope="module")
def dirty(tmp_path_factory) -> Run:
    root = tmp_path_factory.mktemp("dirty")
    return Run(root, generate_activity_log(root, EVENTS, seed=SEED, start=START, days=7, dirty=True))


def _digest(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# ------------------------------------------------------------------ determinism
@pytest.mark.parametrize("dirty_flag", [False, True])
def test_same_seed_gives_identical_bytes(tmp_path, dirty_flag):
    a, b = tmp_path / "a", tmp_path / "b"
    sa = generate_activity_log(a, 1200, seed=11, days=2, dirty=dirty_flag)
    sb = generate_activity_log(b, 1200, seed=11, days=2, dirty=dirty_flag)
    da, db = _digest(a), _digest(b)
    assert len(da) == sa["files"] > 50
    assert da == db
    assert sa == sb


def test_different_seed_gives_different_data(tmp_path):
    generate_activity_log(tmp_path / "a", 800, seed=1, days=1)
    generate_activity_log(tmp_path / "b", 800, seed=2, days=1)
    da, db = _digest(tmp_path / "a"), _digest(tmp_path / "b")
    assert set(da.values()).isdisjoint(db.values())
    sites_a = {rel.split("/")[1] for rel in da if rel.startswith("site/")}
    sites_b = {rel.split("/")[1] for rel in db if rel.startswith("site/")}
    assert len(sites_a) == len(sites_b) == 3 and sites_a.isdisjoint(sites_b)


# ------------------------------------------------------------------ summary and layout
def test_summary_matches_what_was_written(clean):
    s = clean.summary
    assert s["files"] == len(clean.files)
    assert s["gzip_files"] == sum(rel.endswith(".gz") for rel in clean.files)
    assert s["lines"] == sum(_physical_lines(raw) for raw in clean.files.values())
    assert s["records"] == len(clean.records) == s["lines"]  # clean: one record per line
    assert s["records"] == EVENTS  # large enough for an exact count
    assert sum(s["by_family"].values()) == sum(s["by_shape"].values()) == sum(s["by_edition"].values()) == s["records"]
    fam = Counter(rel.split("/")[0] for rel, _, _ in clean.records)
    assert dict(fam) == s["by_family"]
    shapes = Counter("envelope" if "event" in r else "flat" for _, r, _ in clean.records)
    assert dict(shapes) == s["by_shape"]
    assert s["event_types"] == sorted({_event_type(r, rel) for rel, r, _ in clean.records})
    assert set(s["dirty"]) == set(DIRTY_KINDS) and not any(s["dirty"].values())


def test_proportions(clean):
    s = clean.summary
    assert 0.02 < s["by_family"]["tenant"] / s["records"] < 0.15
    assert 0.05 < s["by_shape"]["envelope"] / s["records"] < 0.2
    assert s["by_edition"]["legacy"] > 55  # one per legacy type at least, plus ~10% of the volume
    assert 0.1 < s["gzip_files"] / s["files"] < 0.32


def test_layout_and_partition_values(clean):
    world = build_world(SEED, START)
    site_luids = {s.luid for s in world.sites}
    for rel, raw in clean.files.items():
        m = LAYOUT.match(rel)
        assert m, rel
        if m["gz"]:
            assert clean.root.joinpath(rel).read_bytes()[:2] == b"\x1f\x8b"
        assert raw.endswith(b"\n") and b"\r" not in raw and not raw.startswith(b"\xef\xbb\xbf")
        if m["family"] == "site":
            assert m["key"] == "siteLuid" and m["part"] in site_luids
        else:
            assert m["key"] == "tenantId" and m["part"] == world.tenant.id
        assert m["n"] == "00000"
    for rel, rec, _ in clean.records:
        m = LAYOUT.match(rel)
        attrs = _attrs(rec)
        assert _event_type(rec, rel) == m["et"]
        if m["family"] == "site":
            assert attrs["siteLuid"].lower() == m["part"]  # Tableau's emitter writes LUIDs in upper case
        else:
            assert attrs["tenantId"] == m["part"]
        t = _parse_time(attrs["eventTime"])
        assert t.utcoffset() == timedelta(0)
        assert (t.year, t.month, t.day, t.hour) == (int(m["y"]), int(m["m"]), int(m["d"]), int(m["h"])), rel
        assert START <= t < START + timedelta(days=7)


def test_records_in_a_file_are_in_time_order(clean):
    by_file = defaultdict(list)
    for rel, rec, _ in clean.records:
        # to the second: a time written without its fraction is the true time truncated
        by_file[rel].append(_parse_time(_attrs(rec)["eventTime"]).replace(microsecond=0))
    assert any(len(v) > 5 for v in by_file.values())
    for rel, times in by_file.items():
        assert times == sorted(times), rel


def test_one_file_per_partition_hour_and_type(clean):
    groups = {rel.rsplit("/", 1)[0] for rel in clean.files}
    assert len(groups) == len(clean.files)


def test_file_count_stays_bounded_as_volume_grows(tmp_path):
    # volume concentrates in a few types: 20k events in one day need far fewer than 20k files
    s = generate_activity_log(tmp_path, 20_000, seed=4, days=1)
    assert s["records"] == 20_000
    assert s["files"] < 1_500
    assert s["files"] == sum(1 for p in tmp_path.rglob("*") if p.is_file())


# ------------------------------------------------------------------ registry coverage
def test_every_event_type_of_both_families_appears(clean):
    seen = {(rel.split("/")[0], _event_type(r, rel)) for rel, r, _ in clean.records}
    assert ALL_TYPES <= seen
    assert seen <= ALL_TYPES  # nothing invented in a clean run


def _typed_ok(value, spark_type: str) -> bool:
    if spark_type in ("int", "bigint") and isinstance(value, bool):
        return False
    return isinstance(value, JSON_TYPES[spark_type])


def test_each_type_has_a_record_with_every_documented_attribute(clean):
    by_type = defaultdict(list)
    for rel, r, _ in clean.records:
        by_type[(rel.split("/")[0], _event_type(r, rel))].append(_attrs(r))
    for spec in generated_specs().values():
        wanted = attribute_list(spec, "full")
        ok = [
            a
            for a in by_type[(spec.family, spec.event_type)]
            if all(n in a and a[n] is not None and (n == "eventType" or _typed_ok(a[n], t)) for n, t in wanted)
        ]
        assert ok, f"{spec.family}/{spec.event_type}: no record with all {len(wanted)} attributes"


def test_legacy_records_carry_the_legacy_attribute_set(clean):
    legacy_types = [s for s in event_specs("site") if "legacy" in s.editions]
    assert len(legacy_types) == 55
    keysets = defaultdict(set)
    for rel, r, _ in clean.records:
        if rel.startswith("site/"):
            keysets[_event_type(r, rel)].add(frozenset(_attrs(r)) - {"eventType"})
    for spec in legacy_types:
        legacy = frozenset(n for n, _ in attribute_list(spec, "legacy"))
        assert legacy in keysets[spec.event_type], spec.event_type
        assert {"actorUserId", "eventTime", "siteLuid"} <= legacy and "actorUserLuid" not in legacy
    own_common = {s.event_type: set(s.legacy_common) for s in legacy_types}  # e.g. hist_delete_system_user's siteRoleId
    for rel, r, _ in clean.records:
        a = _attrs(r)
        if "actorUserLuid" not in a and "tenantId" not in a:  # a legacy record
            assert {"actorUserId", "eventTime", "siteLuid"} <= set(a)
            newer = {"initiatingUserLuid", "licensingRoleName", "siteRoleId", "systemAdminLevel"}
            assert not (newer - own_common[_event_type(r, rel)]) & set(a)


def test_envelope_shape(clean):
    envs = [r for _, r, _ in clean.records if "metadata" in r]
    assert envs and {"site", "tenant"} <= {("tenant" if "tenantId" in r["event"] else "site") for r in envs}
    for r in envs:
        assert set(r) == {"traceUuid", "event", "metadata"}
        assert set(r["metadata"]) == {"eventType", "eventVersion", "emittedAt"}
        assert r["metadata"]["eventVersion"] == "1.0"
        assert "eventType" not in r["event"] or r["metadata"]["eventType"].endswith("materialized_views")
        assert _parse_time(r["metadata"]["emittedAt"]) >= _parse_time(r["event"]["eventTime"])
        if "traceUuid" in r["event"]:
            assert r["event"]["traceUuid"] == r["traceUuid"]


def test_time_formats_vary_but_parse(clean):
    times = [_attrs(r)["eventTime"] for _, r, _ in clean.records]
    assert any(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", t) for t in times)
    assert any(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", t) for t in times)
    assert any(t.endswith("+00:00") for t in times)


# ------------------------------------------------------------------ coherence and stories
def test_entities_are_coherent(clean):
    world = build_world(SEED, START)
    users = {s.luid: {u.luid: u for u in s.users} for s in world.sites}
    views = {s.luid: {v.luid: v for v in s.content["view"]} for s in world.sites}
    n = 0
    for _, r in clean.of_type("hist_access_view"):
        a = _luids(_attrs(r))
        site = a["siteLuid"]
        v = views[site][a["viewLuid"]]
        assert v.parent.luid == a["workbookLuid"] and v.parent.name == a["workbookName"]
        if "actorUserLuid" in a:
            u = users[site][a["actorUserLuid"]]
            assert (u.id, u.site_role_id, u.licensing) == (
                a["actorUserId"],
                a["siteRoleId"],
                a["licensingRoleName"],
            )
            assert a["systemAdminLevel"] in (0, 10) and a["actorExternalId"] == u.email
            n += 1
    assert n > 100
    roles = {_attrs(r)["siteRoleId"] for _, r, _ in clean.records if "siteRoleId" in _attrs(r)}
    assert roles <= {0, 1, 2, 3, 7, 8, 9, 10, 11} and len(roles) >= 6
    assert 10 in {_attrs(r)["systemAdminLevel"] for _, r, _ in clean.records if "systemAdminLevel" in _attrs(r)}


def test_sign_in_sessions(clean):
    """A user's hist_login is followed by their view accesses, then their hist_logout."""
    events = defaultdict(list)  # (site, user) -> [(time, type)]
    for et in ("hist_login", "hist_access_view", "hist_logout"):
        for _, r in clean.of_type(et):
            a = _attrs(r)
            events[(a["siteLuid"], a["actorUserId"])].append((_parse_time(a["eventTime"]), et))
    logins = complete = 0
    for seq in events.values():
        types = [et for _, et in sorted(seq)]
        for i, et in enumerate(types):
            if et != "hist_login":
                continue
            logins += 1
            j = i + 1
            while j < len(types) and types[j] == "hist_access_view":
                j += 1
            if j > i + 1 and j < len(types) and types[j] == "hist_logout":
                complete += 1
    # a sparse run: sessions of one user rarely overlap, so nearly every sign-in is a clean session
    assert logins >= 50 and complete / logins > 0.8


def test_background_jobs_move_through_states(clean):
    jobs = defaultdict(list)
    for _, r in clean.of_type("background_job"):
        a = _attrs(r)
        jobs[a["jobLuid"]].append((_parse_time(a["eventTime"]), a["eventState"], a["duration"], a["jobId"]))
    full = 0
    final_states = Counter()
    for seq in jobs.values():
        seq.sort()
        states = [s for _, s, _, _ in seq]
        if states[:2] == ["Pending", "InProgress"] and len(states) == 3:
            full += 1
            final_states[states[2]] += 1
            durations = [d for _, _, d, _ in seq]
            assert durations == sorted(durations) and durations[0] == 0 and durations[2] > 0
            assert len({j for *_, j in seq}) == 1
    assert full >= 20 and final_states["Success"] > 0 and final_states["Failed"] > 0
    failures = [
        a
        for _, r in clean.of_type("hist_refresh_datasource_extract") + clean.of_type("hist_refresh_workbook_extracts")
        for a in [_attrs(r)]
        if a.get("isFailure") is True
    ]
    assert failures and all(a["details"] for a in failures)


def test_admin_stories(clean):
    assert len(clean.of_type("set_permissions")) >= 2
    assert clean.of_type("create_permissions") and clean.of_type("update_permissions")
    # ownership: content_owner_change and the hist_ event agree on the new owner
    changes = {(_attrs(r)["contentLuid"], _attrs(r)["newOwnerLuid"]) for _, r in clean.of_type("content_owner_change")}
    hist = set()
    for kind in ("workbook", "datasource", "flow", "project"):
        for _, r in clean.of_type(f"hist_change_{kind}_ownership"):
            a = _attrs(r)
            hist.add((a.get(f"{kind}Luid") or a.get("projectLuid"), a["newOwnerLuid"]))
    assert changes & hist
    groups = {(_attrs(r)["groupLuid"], _attrs(r)["userLuid"]) for _, r in clean.of_type("add_delete_user_to_group")}
    member = {
        (_attrs(r)["groupLuid"], _attrs(r)["userLuid"])
        for et in ("hist_add_user_to_group", "hist_delete_user_from_group")
        for _, r in clean.of_type(et)
    }
    assert groups & member


def test_tenant_stories(clean):
    failures = Counter()
    for _, r in clean.of_type("user_login_create_session"):
        a = _attrs(r)
        if a["eventOutcome"] == "Failure":
            failures[(a["initiatingUserIpAddress"], a["initiatingUserEmail"])] += 1
    assert failures and max(failures.values()) >= 8
    created = {
        _attrs(r)["tokenId"]: _parse_time(_attrs(r)["eventTime"])
        for _, r in clean.of_type("create_personal_access_token")
    }
    revoked = {
        _attrs(r)["tokenId"]: _parse_time(_attrs(r)["eventTime"])
        for _, r in clean.of_type("revoke_personal_access_token")
    }
    used = defaultdict(list)
    for _, r in clean.of_type("personal_access_token_login"):
        used[_attrs(r)["tokenId"]].append(_parse_time(_attrs(r)["eventTime"]))
    lifecycle = [
        t for t in created if t in revoked and used.get(t) and created[t] < min(used[t]) and max(used[t]) < revoked[t]
    ]
    assert lifecycle
    assert clean.of_type("create_or_update_saml_config")


# ------------------------------------------------------------------ dirty
def test_dirty_counts(dirty):
    d = dirty.summary["dirty"]
    assert set(d) == set(DIRTY_KINDS)
    for kind, n in d.items():
        assert n >= 2, kind


def test_dirty_artifacts_exist_in_files(dirty):
    d = dirty.summary["dirty"]
    files = dirty.files
    assert sum(raw.startswith(b"\xef\xbb\xbf") for raw in files.values()) == d["bom"]
    assert sum(b"\r\n" in raw for raw in files.values()) == d["crlf"]
    truncated = [rel for rel, raw in files.items() if not raw.endswith(b"\n")]
    assert len(truncated) == d["truncated_file"] and all(rel.endswith(".json") for rel in truncated)
    for rel in truncated:
        last = files[rel].rsplit(b"\n", 1)[-1].decode("utf-8")
        with pytest.raises(json.JSONDecodeError):
            json.loads(last)
    blank = sum(1 for raw in files.values() for line in raw.decode("utf-8-sig").splitlines() if line == "")
    assert blank == d["blank_line"]
    assert len(dirty.bad_lines) == d["malformed_line"] + d["truncated_file"]
    assert dirty.summary["lines"] == sum(_physical_lines(raw) for raw in files.values())
    assert dirty.summary["records"] == len(dirty.records)


def test_dirty_records_exist(dirty):
    d = dirty.summary["dirty"]
    recs = dirty.records
    unknown = [(rel, r) for rel, r, _ in recs if _event_type(r, rel) in UNKNOWN_TYPES]
    assert len(unknown) == d["unknown_event_type"]
    assert all(f"eventType={_event_type(r, rel)}/" in rel for rel, r in unknown)
    missing = [(rel, r) for rel, r, _ in recs if _event_type(r, rel) is None]
    assert len(missing) == d["missing_event_type"] and all("/eventType=" in rel for rel, _ in missing)
    bad_time = [
        r
        for _, r, _ in recs
        if _attrs(r).get("eventTime") in ("not-a-time", "2024-13-45T99:00:00Z", "", "06/16/2024 18:03:47")
    ]
    assert len(bad_time) == d["bad_event_time"]
    int_names = {
        s.event_type: {n for n, t in attribute_list(s, "full") if t in ("int", "bigint")} for s in event_specs("site")
    }
    as_string = [
        r
        for rel, r, _ in recs
        if rel.startswith("site/")
        and any(
            isinstance(_attrs(r).get(n), str) and _attrs(r)[n].isdigit()
            for n in int_names.get(_event_type(r, rel) or "", ())
        )
    ]
    assert len(as_string) >= d["number_as_string"]
    # late: the event hour is 1-48 hours before the hour folder
    late = 0
    for rel, r, _ in recs:
        m = LAYOUT.match(rel)
        try:
            t = _parse_time(_attrs(r)["eventTime"])
        except (ValueError, KeyError):
            continue
        folder = datetime(int(m["y"]), int(m["m"]), int(m["d"]), int(m["h"]), tzinfo=UTC)
        lag = (folder - t.replace(minute=0, second=0, microsecond=0)).total_seconds() / 3600
        assert lag == 0 or 1 <= lag <= 48, rel
        late += lag >= 1
    assert late >= d["late_record"]
    # duplicates: the same line in two files
    where = defaultdict(set)
    for rel, _, line in recs:
        where[line].add(rel)
    assert sum(1 for files in where.values() if len(files) > 1) >= d["duplicate_record"]
    assert any(rel.endswith("part-00001.json") or rel.endswith("part-00001.json.gz") for rel in dirty.files)


def _castable(value, spark_type: str) -> bool:
    """Whether Spark could read ``value`` as ``spark_type`` (digit strings count: number_as_string)."""
    if spark_type in ("int", "bigint"):
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, str) and value.lstrip("-").isdigit())
    if spark_type == "boolean":
        return isinstance(value, bool) or (isinstance(value, str) and value.lower() in ("true", "false"))
    return True


def test_dirty_unknown_attributes_and_bad_values(dirty):
    d = dirty.summary["dirty"]
    assert d["unknown_attribute"] >= 2 and d["bad_value"] >= 2
    specs = {(s.family, s.event_type): s for s in event_specs()}
    registry_names = {n for s in specs.values() for n, _ in attribute_list(s, "full")}
    extra, bad = [], []
    for rel, r, _ in dirty.records:
        key = (rel.split("/")[0], _event_type(r, rel))
        if key not in specs:
            continue
        a = _attrs(r)
        documented = dict(attribute_list(specs[key], "full"))
        # a known, timed event: the dirt is in its attributes only
        t = _parse_time(a["eventTime"]) if a.get("eventTime") not in BAD_TIMES else None
        undocumented = set(a) - set(documented) - {"eventType"}
        if undocumented:
            assert t is not None and START <= t < START + timedelta(days=7), rel
            assert not undocumented & registry_names, undocumented
            extra.append((rel, a, undocumented))
        uncastable = [
            n
            for n, st in documented.items()
            if st in ("int", "bigint", "boolean") and n in a and a[n] is not None and not _castable(a[n], st)
        ]
        if uncastable:
            assert t is not None and START <= t < START + timedelta(days=7), rel
            assert len(uncastable) == 1, (rel, uncastable)
            bad.append((rel, a, uncastable[0], documented[uncastable[0]]))
    assert len(extra) == d["unknown_attribute"]
    assert len(bad) == d["bad_value"]
    assert any(isinstance(a[n], dict) for _, a, names in extra for n in names)
    # the value really is of the wrong kind: a word, a fraction, not a digit string
    for _, a, n, _ in bad:
        v = a[n]
        assert (isinstance(v, str) and not v.isdigit()) or (isinstance(v, float) and not v.is_integer())
    # every one of them is a record of its own, not a copy of another line
    lines = Counter(line for _, _, line in dirty.records)
    ids = {id(a) for _, a, _ in extra} | {id(a) for _, a, _, _ in bad}
    for _, r, line in dirty.records:
        if id(_attrs(r)) in ids:
            assert lines[line] == 1


def test_duplicate_in_other_shape(dirty):
    def key(attrs: dict) -> str:  # as Tableau's emitter would write it: LUIDs in upper case, 9 digits
        out = {k: (v.lower() if isinstance(v, str) and k.endswith("Luid") else v) for k, v in attrs.items()}
        if isinstance(out.get("eventTime"), str):
            out["eventTime"] = re.sub(r"(\.\d{6})\d{3}Z$", r"\1Z", out["eventTime"])
        return json.dumps(out, sort_keys=True)

    flat = {}
    for _, r, _ in dirty.records:
        if "event" not in r and "eventType" in r:
            flat[key({k: v for k, v in r.items() if k != "eventType"})] = r["eventType"]
    pairs = sum(1 for rel, r, _ in dirty.records if "event" in r and flat.get(key(r["event"])) == _event_type(r, rel))
    assert pairs >= dirty.summary["dirty"]["duplicate_other_shape"]


def test_dirty_run_keeps_every_clean_record(clean, dirty):
    dirty_lines = Counter(line for _, _, line in dirty.records)
    clean_lines = Counter(line for _, _, line in clean.records)
    assert not clean_lines - dirty_lines
    assert dirty.summary["records"] > clean.summary["records"]


def test_deprecated_permission_events_precede_the_cutover_when_the_window_allows(tmp_path):
    start = datetime(2024, 9, 27, tzinfo=UTC)
    generate_activity_log(tmp_path, 2000, seed=5, start=start, days=7)
    run = Run(tmp_path, {})
    cutover = datetime(2024, 10, 1, tzinfo=UTC)
    old = run.of_type("create_permissions") + run.of_type("update_permissions")
    assert len(old) >= 3
    assert all(_parse_time(_attrs(r)["eventTime"]) < cutover for _, r in old)
    assert any(_parse_time(_attrs(r)["eventTime"]) >= cutover for _, r in run.of_type("set_permissions"))


def test_progress_is_reported(tmp_path, monkeypatch):
    from auditlake_devtools.sample.activity_log import generator

    monkeypatch.setattr(generator, "PROGRESS_EVERY", 500)
    lines: list[str] = []
    s = generate_activity_log(tmp_path, 2100, seed=2, days=1, progress=lines.append)
    assert len(lines) == s["records"] // 500 and all("records" in line for line in lines)


# ------------------------------------------------------------------ small runs and record builders
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
            attrs = _attrs(rec)
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
                    _parse_time(v)
                if t == "string" and name.lower().endswith("email"):
                    assert re.fullmatch(r"[^@\s]+@[a-z0-9.-]+\.[a-z]+", v), v
                if name.endswith("IpAddress"):
                    assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", v)
                if t == "bigint" and v > 2**31:
                    big = True
    assert big
    with pytest.raises(ValueError):
        build_record(next(s for s in event_specs("tenant")), rng, edition="legacy")


def test_tableau_layouts_hold_the_same_files_at_tableau_paths(tmp_path):
    from pipelines.activity_log.bronze.layout import classify

    trees = {}
    for layout in ("auditlake", "date_first", "schema_first"):
        generate_activity_log(tmp_path / layout, 300, seed=5, days=1, dirty=True, layout=layout)
        trees[layout] = {
            p.relative_to(tmp_path / layout).as_posix(): p.read_bytes()
            for p in (tmp_path / layout).rglob("*")
            if p.is_file()
        }
    contents = {name: sorted(tree.values()) for name, tree in trees.items()}
    assert contents["date_first"] == contents["auditlake"] == contents["schema_first"]
    for name in ("date_first", "schema_first"):
        infos = [classify(rel) for rel in trees[name]]
        assert {i.layout for i in infos} == {name}
        assert {i.family for i in infos} == {"site", "tenant"}
        assert all(rel.startswith("pod=") for rel in trees[name])
    own = {rel: classify(rel).family for rel in trees["auditlake"]}
    assert all(family == rel.split("/")[0] for rel, family in own.items())


# ------------------------------------------------------------------ entity snapshots
SNAP_EVENTS = 600
_HOUR_DIR = r"(?P<hour>y=\d{4}/m=\d\d/d=\d\d/h=\d\d)"
_SITE_DIR = r"siteLuid=(?P<site>[0-9a-f-]{36})"
_ENTITY_DIR = r"entityType=(?P<entity>[a-z_]+)"
_PART = r"part-(?P<n>\d{5})\.parquet$"
SNAPSHOT_PATHS = {  # the contract: entityType= where the Activity Log has eventType=
    "auditlake": re.compile(rf"^site/{_SITE_DIR}/{_HOUR_DIR}/{_ENTITY_DIR}/{_PART}"),
    "date_first": re.compile(rf"^pod=[a-z0-9-]+/{_SITE_DIR}/{_HOUR_DIR}/{_ENTITY_DIR}/{_PART}"),
    "schema_first": re.compile(rf"^pod=[a-z0-9-]+/{_SITE_DIR}/{_ENTITY_DIR}/{_HOUR_DIR}/{_PART}"),
}
_TS = "timestamp[us, tz=UTC]"
_CONTENT_COLUMNS = [
    ("luid", "string"),
    ("id", "int64"),
    ("name", "string"),
    ("project_luid", "string"),
    ("owner_luid", "string"),
    ("size", "int64"),
    ("created_at", _TS),
    ("updated_at", _TS),
]
SNAPSHOT_COLUMNS = {  # written out here, not taken from the generator: gold depends on these names
    "users": [
        ("luid", "string"),
        ("id", "int64"),
        ("name", "string"),
        ("display_name", "string"),
        ("email", "string"),
        ("site_role", "string"),
        ("is_system_admin", "bool"),
        ("created_at", _TS),
    ],
    "groups": [("luid", "string"), ("id", "int64"), ("name", "string"), ("domain_name", "string")],
    "group_members": [("group_luid", "string"), ("user_luid", "string")],
    "workbooks": _CONTENT_COLUMNS,
    "datasources": _CONTENT_COLUMNS,
}
ADMIN_ROLES = {"SiteAdministratorExplorer", "SiteAdministratorCreator"}
# A story changes the world when it runs, in the hour it starts, and writes its records up to
# 100 minutes later (stories.UNIT_SPAN_US); within an hour, stories run in plan order, not in
# event-time order. So a record is judged by the first snapshot strictly after it (which the
# story's change always precedes), and two records about the same thing closer than this may
# have changed the world in either order.
NEAR = timedelta(hours=3)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _folder_hour(folder: str) -> datetime:
    y, m, d, h = (int(part.split("=")[1]) for part in folder.split("/"))
    return datetime(y, m, d, h, tzinfo=UTC)


class Snapshots:
    """The entity snapshots of a generated directory, read back with pyarrow."""

    def __init__(self, root: Path, layout: str = "auditlake"):
        self.tables: dict[tuple[str, datetime, str], pa.Table] = {}  # (site, hour, entity) -> part-00000
        self.others: list[str] = []  # any other part file (the poison one)
        self._rows: dict[tuple, list[dict]] = {}
        for p in sorted(root.rglob("*.parquet")):
            rel = p.relative_to(root).as_posix()
            m = SNAPSHOT_PATHS[layout].match(rel)
            assert m, rel
            if m["n"] != "00000":
                self.others.append(rel)
                continue
            key = (m["site"], _folder_hour(m["hour"]), m["entity"])
            self.tables[key] = pq.read_table(p)
            self._rows[key] = self.tables[key].to_pylist()
        self.hours = sorted({h for _, h, _ in self.tables})
        self.sites = sorted({s for s, _, _ in self.tables})

    def rows(self, site: str, hour: datetime, entity: str) -> list[dict]:
        return self._rows[(site, hour, entity)]

    def by_luid(self, site: str, hour: datetime, entity: str) -> dict[str, dict]:
        return {r["luid"]: r for r in self.rows(site, hour, entity)}

    def members(self, site: str, hour: datetime) -> set[tuple[str, str]]:
        return {(r["group_luid"], r["user_luid"]) for r in self.rows(site, hour, "group_members")}

    def after(self, t: datetime) -> datetime | None:
        return next((h for h in self.hours if h > t), None)


def _site_records(run: Run, et: str):
    """(site, attributes with LUIDs in lower case, event time) of each site record of ``et``."""
    for rel, r in run.of_type(et):
        if rel.startswith("site/"):
            a = _luids(_attrs(r))
            yield a["siteLuid"], a, _parse_time(a["eventTime"])


def _leavers(run: Run) -> dict[tuple[str, str], datetime]:
    """(site, user) -> when an administrator deleted the user (user_create_delete, operation delete)."""
    return {
        (s, a["targetUserLuid"]): t
        for s, a, t in _site_records(run, "user_create_delete")
        if a["userOperation"] == "delete"
    }


def _unlogged_changes(run: Run, snaps: Snapshots) -> list[tuple]:
    """Every difference between consecutive snapshots that no Activity Log record explains:
    (site, hour, entity, key, column, before, after). A change between the snapshots at h0 and h1
    is a story's that started in [h0, h1), so its records lie in [h0, h1 + 100 minutes)."""
    said = defaultdict(list)  # (site, what, key) -> event times
    for s, a, t in _site_records(run, "hist_update_user_site_role"):
        said[(s, "role", a["userLuid"])].append(t)
    for (s, user), t in _leavers(run).items():
        said[(s, "gone", user)].append(t)
    for s, a, t in _site_records(run, "add_delete_user_to_group"):
        said[(s, "member", (a["groupLuid"], a["userLuid"]))].append(t)
    for s, a, t in _site_records(run, "content_owner_change"):
        said[(s, "owner", a["contentLuid"])].append(t)
    for s, a, t in _site_records(run, "hist_publish_workbook"):
        said[(s, "updated", a["workbookLuid"])].append(t)
    explains = {
        ("users", "site_role"): "role",
        ("workbooks", "owner_luid"): "owner",
        ("datasources", "owner_luid"): "owner",
        ("workbooks", "updated_at"): "updated",
    }
    out = []
    for site in snaps.sites:
        for h0, h1 in pairwise(snaps.hours):

            def logged(what, key, h0=h0, h1=h1, site=site):
                return any(h0 <= t < h1 + NEAR for t in said[(site, what, key)])

            for entity in ("users", "groups", "workbooks", "datasources"):
                before, after = snaps.by_luid(site, h0, entity), snaps.by_luid(site, h1, entity)
                for luid in before.keys() - after.keys():
                    if not (entity == "users" and logged("gone", luid)):
                        out.append((site, h1, entity, luid, None, "present", "absent"))
                for luid in after.keys() - before.keys():
                    out.append((site, h1, entity, luid, None, "absent", "present"))
                for luid in before.keys() & after.keys():
                    for col, _ in SNAPSHOT_COLUMNS[entity]:
                        x, y = before[luid][col], after[luid][col]
                        if x != y and not logged(explains.get((entity, col)), luid):
                            out.append((site, h1, entity, luid, col, x, y))
            was, now = snaps.members(site, h0), snaps.members(site, h1)
            for pair in was ^ now:
                if not (logged("member", pair) or (pair in was and logged("gone", pair[1]))):
                    out.append((site, h1, "group_members", pair, None, pair in was, pair in now))
    return out


def _snapshot_run(root: Path, **kw) -> tuple[Run, Snapshots]:
    s = generate_activity_log(
        root, SNAP_EVENTS, seed=SEED, start=START, days=1, snapshots=True, security_stories=True, **kw
    )  # the security stories: a logged role change
    return Run(root, s), Snapshots(root)


@pytest.fixture(scope="module")
def snap(tmp_path_factory) -> tuple[Run, Snapshots]:
    return _snapshot_run(tmp_path_factory.mktemp("snap"))


@pytest.fixture(scope="module")
def snap_dirty(tmp_path_factory) -> tuple[Run, Snapshots]:
    return _snapshot_run(tmp_path_factory.mktemp("snap_dirty"), dirty=True)


def test_snapshot_files_sit_at_the_contract_paths_in_every_layout(tmp_path):
    from pipelines.activity_log.bronze.layout import classify

    trees, summaries = {}, {}
    for layout, pattern in SNAPSHOT_PATHS.items():
        root = tmp_path / layout
        summaries[layout] = generate_activity_log(
            root, 300, seed=5, start=START, days=1, dirty=True, layout=layout, snapshots=True, snapshot_every=6
        )
        tree = {}
        for p in root.rglob("*.parquet"):
            rel = p.relative_to(root).as_posix()
            m = pattern.match(rel)
            assert m, rel
            info = classify(rel)  # the lake's own reader takes it for a snapshot of that entity and hour
            assert (info.skip, info.entity_type) == (None, m["entity"]), rel
            assert info.snapshot_hour == f"{_folder_hour(m['hour']):%Y-%m-%d %H:%M:%S}"
            tree[(m["site"], m["hour"], m["entity"], m["n"])] = p.read_bytes()
        trees[layout] = tree
    assert trees["auditlake"] == trees["date_first"] == trees["schema_first"]  # the same files at other paths
    hours = {f"y=2026/m=06/d=01/h={h:02d}" for h in (0, 6, 12, 18)} | {"y=2026/m=06/d=02/h=00"}  # start to end
    good = {key for key in trees["auditlake"] if key[3] == "00000"}
    sites = {site.luid for site in build_world(5, START).sites}
    assert good == {(s, h, e, "00000") for s in sites for h in hours for e in ENTITY_TYPES}
    s = summaries["auditlake"]
    assert s["snapshots"]["files"] == len(good) == 3 * 5 * 5 and s["snapshots"]["hours"] == 5
    assert len(trees["auditlake"]) - len(good) == s["dirty"]["poison_snapshot"] == 1


def test_snapshots_hold_the_contract_columns_and_the_world(snap):
    run, snaps = snap
    half = START + timedelta(hours=12)
    assert snaps.hours == [START + timedelta(hours=h) for h in range(25)] and not snaps.others
    for (site, hour, entity), table in snaps.tables.items():
        locale = [("locale", "string")] if entity == "users" and hour >= half else []  # a schema change
        assert [(f.name, str(f.type)) for f in table.schema] == SNAPSHOT_COLUMNS[entity] + locale, (entity, hour)
        rows = snaps.rows(site, hour, entity)
        keys = [(r["group_luid"], r["user_luid"]) if entity == "group_members" else r["luid"] for r in rows]
        assert keys == sorted(set(keys)) and keys, (entity, hour)  # a stable order, one row per entity
    s = run.summary["snapshots"]
    assert (s["files"], s["hours"]) == (len(snaps.tables), 25) == (3 * 5 * 25, 25)
    assert s["by_entity"] == {e: sum(t.num_rows for k, t in snaps.tables.items() if k[2] == e) for e in ENTITY_TYPES}
    assert s["rows"] == sum(s["by_entity"].values())
    assert run.summary["silent_changes"] == [] and run.summary["dirty"]["poison_snapshot"] == 0
    # the first snapshot is the world before any story
    at = lambda us: _EPOCH + timedelta(microseconds=us)  # noqa: E731
    for site in build_world(SEED, START).sites:
        users = snaps.by_luid(site.luid, START, "users")
        assert len(users) == len(site.users)
        for u in site.users:
            row = users[u.luid]
            assert row == {
                "luid": u.luid,
                "id": u.id,
                "name": u.name,
                "display_name": u.display,
                "email": u.email,
                "site_role": SITE_ROLE_NAMES[u.site_role_id],
                "is_system_admin": u.system_admin_level > 0,
                "created_at": at(u.created_us),
            }
        locales = {r["luid"]: r["locale"] for r in snaps.rows(site.luid, half, "users")}
        assert locales == {u.luid: u.locale for u in site.users if u.luid in locales}
        groups = snaps.by_luid(site.luid, START, "groups")
        assert {(g.luid, g.id, g.name, g.domain) for g in site.groups} == {
            (r["luid"], r["id"], r["name"], r["domain_name"]) for r in groups.values()
        }
        assert snaps.members(site.luid, START) == {(g.luid, u.luid) for g in site.groups for u in g.members}
        for entity, kind in (("workbooks", "workbook"), ("datasources", "datasource")):
            rows = snaps.by_luid(site.luid, START, entity)
            assert rows == {
                c.luid: {
                    "luid": c.luid,
                    "id": c.id,
                    "name": c.name,
                    "project_luid": c.project.luid,
                    "owner_luid": c.owner.luid,
                    "size": c.size,
                    "created_at": at(c.created_us),
                    "updated_at": at(c.updated_us),
                }
                for c in site.content[kind]
            }


def test_snapshots_show_what_the_log_says_changed(snap):
    """Each role change, group membership and owner change in the log is in the first snapshot
    strictly after its event time (not the one at or after: a story starting on the hour changes
    the world after that hour's snapshot). Records about the same user, pair or item within NEAR
    of another are left out (the stories of an hour run in plan order, not time order)."""
    run, snaps = snap
    leavers = _leavers(run)

    def crowded(times: list, t: datetime) -> bool:
        return sum(abs(u - t) <= NEAR for u in times) > 1

    def leaves(site: str, user: str, by: datetime) -> bool:
        return (site, user) in leavers and leavers[(site, user)] <= by + NEAR

    checked = Counter()
    roles = list(_site_records(run, "hist_update_user_site_role"))
    times = defaultdict(list)
    for s, a, t in roles:
        times[(s, a["userLuid"])].append(t)
    for s, a, t in roles:
        at = snaps.after(t)
        if at is None or crowded(times[(s, a["userLuid"])], t) or leaves(s, a["userLuid"], at):
            continue
        row = snaps.by_luid(s, at, "users")[a["userLuid"]]
        assert (row["site_role"] in ADMIN_ROLES) == (a["siteAdminLevel"] == 1), (a, row)  # what the record states
        checked["role"] += 1
    members = list(_site_records(run, "add_delete_user_to_group"))
    times = defaultdict(list)
    for s, a, t in members:
        times[(s, a["groupLuid"], a["userLuid"])].append(t)
    for s, a, t in members:
        at = snaps.after(t)
        if at is None or crowded(times[(s, a["groupLuid"], a["userLuid"])], t) or leaves(s, a["userLuid"], at):
            continue
        assert ((a["groupLuid"], a["userLuid"]) in snaps.members(s, at)) == (a["groupOperation"] == "add"), a
        checked[a["groupOperation"]] += 1
    owners = [
        x for x in _site_records(run, "content_owner_change") if x[1]["contentType"] in ("workbook", "datasource")
    ]  # the kinds with a snapshot
    times = defaultdict(list)
    for s, a, t in owners:
        times[(s, a["contentLuid"])].append(t)
    for s, a, t in owners:
        at = snaps.after(t)
        if at is None or crowded(times[(s, a["contentLuid"])], t):
            continue
        row = snaps.by_luid(s, at, a["contentType"] + "s")[a["contentLuid"]]
        assert row["owner_luid"] == a["newOwnerLuid"], a
        checked["owner"] += 1
    assert checked["role"] >= 2 and checked["add"] + checked["delete"] >= 3 and checked["owner"] >= 3, checked
    # a logged change of role really happened (the privilege escalation): a role that differs between snapshots
    assert any(
        snaps.by_luid(s, h0, "users")[u]["site_role"] != snaps.by_luid(s, h1, "users")[u]["site_role"]
        for s in snaps.sites
        for h0, h1 in pairwise(snaps.hours)
        for u in snaps.by_luid(s, h0, "users").keys() & snaps.by_luid(s, h1, "users").keys()
    )


def test_every_change_between_snapshots_is_in_the_log(snap):
    """The other way round: a clean run's snapshots change only where a record says so."""
    assert _unlogged_changes(*snap) == []


def test_offboarded_users_vanish_from_later_snapshots(snap):
    run, snaps = snap
    leavers = _leavers(run)
    assert len(leavers) >= 2  # the offboarding story, and the leaver whose token lives on (security stories)
    for (site, user), t in leavers.items():
        # the story started at most 100 minutes before the record: two hours back, the user was there
        before = t.replace(minute=0, second=0, microsecond=0) - timedelta(hours=2)
        if before >= START:
            assert user in snaps.by_luid(site, before, "users")
        later = [h for h in snaps.hours if h > t]
        assert later
        for h in later:
            assert user not in snaps.by_luid(site, h, "users")
            assert all(u != user for _, u in snaps.members(site, h))


@pytest.mark.parametrize("dirty_flag", [False, True])
def test_snapshots_repeat_byte_for_byte_and_leave_the_log_alone(tmp_path, dirty_flag):
    kw = dict(seed=13, days=1, dirty=dirty_flag, security_stories=True)
    sa = generate_activity_log(tmp_path / "a", SNAP_EVENTS, snapshots=True, snapshot_every=3, **kw)
    sb = generate_activity_log(tmp_path / "b", SNAP_EVENTS, snapshots=True, snapshot_every=3, **kw)
    sc = generate_activity_log(tmp_path / "c", SNAP_EVENTS, **kw)
    da, db, dc = _digest(tmp_path / "a"), _digest(tmp_path / "b"), _digest(tmp_path / "c")
    assert da == db and sa == sb
    parquet = {rel for rel in da if rel.endswith(".parquet")}
    assert len(parquet) == sa["snapshots"]["files"] + dirty_flag == 3 * 5 * 9 + dirty_flag
    assert {rel: h for rel, h in da.items() if rel not in parquet} == dc  # the Activity Log: the same bytes
    assert not any(rel.endswith(".parquet") for rel in dc)
    rest = ("snapshots", "silent_changes", "dirty")
    assert {k: v for k, v in sa.items() if k not in rest} == {k: v for k, v in sc.items() if k not in rest}
    assert {k: v for k, v in sa["dirty"].items() if k != "poison_snapshot"} == sc["dirty"]
    assert "poison_snapshot" not in sc["dirty"] and sc["silent_changes"] == []
    assert sc["snapshots"] == {"files": 0, "rows": 0, "by_entity": dict.fromkeys(ENTITY_TYPES, 0), "hours": 0}
    assert len(sa["silent_changes"]) == sa["dirty"]["poison_snapshot"] == int(dirty_flag)


def test_dirty_snapshots_add_one_poison_file_and_one_silent_change(snap, snap_dirty):
    (run, clean), (drun, dirty) = snap, snap_dirty
    # the poison: a part-00001.parquet cut short beside a good part-00000
    assert drun.summary["dirty"]["poison_snapshot"] == 1
    [poison] = dirty.others
    path = drun.root / poison
    assert path.name == "part-00001.parquet"
    with pytest.raises(pa.ArrowInvalid):
        pq.read_table(path)
    assert path.with_name("part-00000.parquet").read_bytes().startswith(path.read_bytes())
    assert drun.summary["snapshots"] == run.summary["snapshots"]
    # the silent change: what the snapshots show and the log does not
    [change] = drun.summary["silent_changes"]
    site, user, hour = change["site_luid"], change["user_luid"], _parse_time(change["hour"])
    assert hour >= START + timedelta(hours=12) and hour in dirty.hours and change["old_role"] != change["new_role"]
    assert _unlogged_changes(drun, dirty) == [
        (site, hour, "users", user, "site_role", change["old_role"], change["new_role"])
    ]
    assert dirty.by_luid(site, hour, "users")[user]["site_role"] == change["new_role"]
    # the same run without dirt has the same snapshots but for that user's role, from that hour on
    assert clean.tables.keys() == dirty.tables.keys()
    for key, table in clean.tables.items():
        if not table.equals(dirty.tables[key]):
            assert key[0] == site and key[2] == "users" and key[1] >= hour, key
            diff = [(x, y) for x, y in zip(clean.rows(*key), dirty.rows(*key), strict=True) if x != y]
            assert [(x["luid"], x["site_role"], y["site_role"]) for x, y in diff] == [
                (user, change["old_role"], change["new_role"])
            ]
    # and the log goes on stating the old role for the user's own actions (the same log: see above)
    code = {name: c for c, name in SITE_ROLE_NAMES.items()}[change["old_role"]]
    stated = [
        a["siteRoleId"]
        for rel, r, _ in run.records
        for a in [_luids(_attrs(r))]
        if rel.startswith("site/") and a.get("actorUserLuid") == user and _parse_time(a["eventTime"]) >= hour
    ]
    assert all(c == code for c in stated)


def test_cli_and_demo_write_snapshots(tmp_path, monkeypatch, capsys):
    import argparse

    from auditlake_devtools import commands
    from pipelines.config.load import load_config
    from pipelines.refresh import command as refresh_command
    from tests.lake import KEYED

    parser = argparse.ArgumentParser()
    commands.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        [
            "generate",
            "activity-log",
            "--out",
            str(tmp_path / "cli"),
            "--events",
            "200",
            "--days",
            "1",
            "--snapshots",
            "--snapshot-every",
            "8",
        ]
    )
    assert args.func(load_config("test", environ=dict(KEYED)), args) == 0
    assert "entity snapshots: 60 Parquet files" in capsys.readouterr().out  # 3 sites x 5 types x 0, 8, 16, 24 h
    assert len(list((tmp_path / "cli").rglob("*.parquet"))) == 60
    # the demo takes generate.snapshots and generate.snapshot_every_hours (conf/base.yaml: true, 6)
    assert (
        load_config("test", environ=dict(KEYED)).get("generate.snapshots"),
        load_config("test", environ=dict(KEYED)).get("generate.snapshot_every_hours"),
    ) == (True, 6)
    cfg = load_config(
        "test",
        environ={
            **KEYED,
            "AUDITLAKE__PATHS__LANDING_DIR": str(tmp_path / "landing"),
            "AUDITLAKE__GENERATE__EVENTS": "200",
            "AUDITLAKE__GENERATE__DAYS": "1",
            "AUDITLAKE__GENERATE__SNAPSHOT_EVERY_HOURS": "12",
        },
    )
    # the layers' refresh needs Spark, tested elsewhere: here only what the demo generates
    monkeypatch.setattr(refresh_command, "refresh", lambda *a, **k: True)  # the lake balanced
    assert commands.cmd_demo(cfg, argparse.Namespace()) == 0
    snaps = Snapshots(tmp_path / "landing", cfg.get("generate.layout"))
    assert snaps.hours == [START + timedelta(hours=h) for h in (0, 12, 24)] and len(snaps.tables) == 3 * 5 * 3
    assert len(snaps.others) == 1  # the demo is dirty: its poison file
