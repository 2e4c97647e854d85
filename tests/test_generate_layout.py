"""The Activity Log generator's files: the same seed gives the same bytes, the summary is what was
written, the folders and partition values follow the layout (and Tableau's layouts hold the same
files), records in a file in time order, a file count bounded as volume grows, progress reported."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import timedelta

import pytest

from auditlake_devtools.sample.activity_log import DIRTY_KINDS, build_world, generate_activity_log
from tests.generated_log import EVENTS, LAYOUT, SEED, START, attributes, digest, event_type, parse_time, physical_lines


@pytest.mark.parametrize("dirty_flag", [False, True])
def test_same_seed_gives_identical_bytes(tmp_path, dirty_flag):
    a, b = tmp_path / "a", tmp_path / "b"
    sa = generate_activity_log(a, 1200, seed=11, days=2, dirty=dirty_flag)
    sb = generate_activity_log(b, 1200, seed=11, days=2, dirty=dirty_flag)
    da, db = digest(a), digest(b)
    assert len(da) == sa["files"] > 50
    assert da == db
    assert sa == sb


def test_different_seed_gives_different_data(tmp_path):
    generate_activity_log(tmp_path / "a", 800, seed=1, days=1)
    generate_activity_log(tmp_path / "b", 800, seed=2, days=1)
    da, db = digest(tmp_path / "a"), digest(tmp_path / "b")
    assert set(da.values()).isdisjoint(db.values())
    sites_a = {rel.split("/")[1] for rel in da if rel.startswith("site/")}
    sites_b = {rel.split("/")[1] for rel in db if rel.startswith("site/")}
    assert len(sites_a) == len(sites_b) == 3 and sites_a.isdisjoint(sites_b)


def test_summary_matches_what_was_written(clean_log):
    s = clean_log.summary
    assert s["files"] == len(clean_log.files)
    assert s["gzip_files"] == sum(rel.endswith(".gz") for rel in clean_log.files)
    assert s["lines"] == sum(physical_lines(raw) for raw in clean_log.files.values())
    assert s["records"] == len(clean_log.records) == s["lines"]  # clean: one record per line
    assert s["records"] == EVENTS  # large enough for an exact count
    assert sum(s["by_family"].values()) == sum(s["by_shape"].values()) == sum(s["by_edition"].values()) == s["records"]
    fam = Counter(rel.split("/")[0] for rel, _, _ in clean_log.records)
    assert dict(fam) == s["by_family"]
    shapes = Counter("envelope" if "event" in r else "flat" for _, r, _ in clean_log.records)
    assert dict(shapes) == s["by_shape"]
    assert s["event_types"] == sorted({event_type(r, rel) for rel, r, _ in clean_log.records})
    assert set(s["dirty"]) == set(DIRTY_KINDS) and not any(s["dirty"].values())


def test_proportions(clean_log):
    s = clean_log.summary
    assert 0.02 < s["by_family"]["tenant"] / s["records"] < 0.15
    assert 0.05 < s["by_shape"]["envelope"] / s["records"] < 0.2
    assert s["by_edition"]["legacy"] > 55  # one per legacy type at least, plus ~10% of the volume
    assert 0.1 < s["gzip_files"] / s["files"] < 0.32


def test_layout_and_partition_values(clean_log):
    world = build_world(SEED, START)
    site_luids = {s.luid for s in world.sites}
    for rel, raw in clean_log.files.items():
        m = LAYOUT.match(rel)
        assert m, rel
        if m["gz"]:
            assert clean_log.root.joinpath(rel).read_bytes()[:2] == b"\x1f\x8b"
        assert raw.endswith(b"\n") and b"\r" not in raw and not raw.startswith(b"\xef\xbb\xbf")
        if m["family"] == "site":
            assert m["key"] == "siteLuid" and m["part"] in site_luids
        else:
            assert m["key"] == "tenantId" and m["part"] == world.tenant.id
        assert m["n"] == "00000"
    for rel, rec, _ in clean_log.records:
        m = LAYOUT.match(rel)
        attrs = attributes(rec)
        assert event_type(rec, rel) == m["et"]
        if m["family"] == "site":
            assert attrs["siteLuid"].lower() == m["part"]  # Tableau's emitter writes LUIDs in upper case
        else:
            assert attrs["tenantId"] == m["part"]
        t = parse_time(attrs["eventTime"])
        assert t.utcoffset() == timedelta(0)
        assert (t.year, t.month, t.day, t.hour) == (int(m["y"]), int(m["m"]), int(m["d"]), int(m["h"])), rel
        assert START <= t < START + timedelta(days=7)


def test_records_in_a_file_are_in_time_order(clean_log):
    by_file = defaultdict(list)
    for rel, rec, _ in clean_log.records:
        # to the second: a time written without its fraction is the true time truncated
        by_file[rel].append(parse_time(attributes(rec)["eventTime"]).replace(microsecond=0))
    assert any(len(v) > 5 for v in by_file.values())
    for rel, times in by_file.items():
        assert times == sorted(times), rel


def test_one_file_per_partition_hour_and_type(clean_log):
    groups = {rel.rsplit("/", 1)[0] for rel in clean_log.files}
    assert len(groups) == len(clean_log.files)


def test_file_count_stays_bounded_as_volume_grows(tmp_path):
    # volume concentrates in a few types: 20k events in one day need far fewer than 20k files
    s = generate_activity_log(tmp_path, 20_000, seed=4, days=1)
    assert s["records"] == 20_000
    assert s["files"] < 1_500
    assert s["files"] == sum(1 for p in tmp_path.rglob("*") if p.is_file())


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


def test_progress_is_reported(tmp_path, monkeypatch):
    from auditlake_devtools.sample.activity_log import generator

    monkeypatch.setattr(generator, "PROGRESS_EVERY", 500)
    lines: list[str] = []
    s = generate_activity_log(tmp_path, 2100, seed=2, days=1, progress=lines.append)
    assert len(lines) == s["records"] // 500 and all("records" in line for line in lines)
