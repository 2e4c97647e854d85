"""The Activity Log generator's dirty run: each kind of dirt counted, in the files and records as
counted, unknown attributes and bad values in records of their own, duplicates in the other shape,
and every clean record kept."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta

import pytest

from auditlake_devtools.sample.activity_log import DIRTY_KINDS, UNKNOWN_TYPES, attribute_list, generate_activity_log
from pipelines.activity_log.registry import event_specs
from tests.generated_log import EVENTS, LAYOUT, SEED, START, Run, attributes, event_type, parse_time, physical_lines

BAD_TIMES = ("not-a-time", "2024-13-45T99:00:00Z", "", "06/16/2024 18:03:47")


@pytest.fixture(scope="module")
def dirty(tmp_path_factory) -> Run:
    root = tmp_path_factory.mktemp("dirty")
    return Run(root, generate_activity_log(root, EVENTS, seed=SEED, start=START, days=7, dirty=True))


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
    assert dirty.summary["lines"] == sum(physical_lines(raw) for raw in files.values())
    assert dirty.summary["records"] == len(dirty.records)


def test_dirty_records_exist(dirty):
    d = dirty.summary["dirty"]
    recs = dirty.records
    unknown = [(rel, r) for rel, r, _ in recs if event_type(r, rel) in UNKNOWN_TYPES]
    assert len(unknown) == d["unknown_event_type"]
    assert all(f"eventType={event_type(r, rel)}/" in rel for rel, r in unknown)
    missing = [(rel, r) for rel, r, _ in recs if event_type(r, rel) is None]
    assert len(missing) == d["missing_event_type"] and all("/eventType=" in rel for rel, _ in missing)
    bad_time = [
        r
        for _, r, _ in recs
        if attributes(r).get("eventTime") in ("not-a-time", "2024-13-45T99:00:00Z", "", "06/16/2024 18:03:47")
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
            isinstance(attributes(r).get(n), str) and attributes(r)[n].isdigit()
            for n in int_names.get(event_type(r, rel) or "", ())
        )
    ]
    assert len(as_string) >= d["number_as_string"]
    # late: the event hour is 1-48 hours before the hour folder
    late = 0
    for rel, r, _ in recs:
        m = LAYOUT.match(rel)
        try:
            t = parse_time(attributes(r)["eventTime"])
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
        key = (rel.split("/")[0], event_type(r, rel))
        if key not in specs:
            continue
        a = attributes(r)
        documented = dict(attribute_list(specs[key], "full"))
        # a known, timed event: the dirt is in its attributes only
        t = parse_time(a["eventTime"]) if a.get("eventTime") not in BAD_TIMES else None
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
        if id(attributes(r)) in ids:
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
    pairs = sum(1 for rel, r, _ in dirty.records if "event" in r and flat.get(key(r["event"])) == event_type(r, rel))
    assert pairs >= dirty.summary["dirty"]["duplicate_other_shape"]


def test_dirty_run_keeps_every_clean_record(clean_log, dirty):
    dirty_lines = Counter(line for _, _, line in dirty.records)
    clean_lines = Counter(line for _, _, line in clean_log.records)
    assert not clean_lines - dirty_lines
    assert dirty.summary["records"] > clean_log.summary["records"]
