"""Where the Activity Log generator writes its entity snapshots: at the contract's paths in every
layout, the same bytes again for the same seed with the log unchanged beside them, from the command
line and the demo."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from auditlake_devtools.sample.activity_log import ENTITY_TYPES, build_world, generate_activity_log
from tests.generated_log import SNAP_EVENTS, SNAPSHOT_PATHS, START, Snapshots, digest, folder_hour


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
            assert info.snapshot_hour == f"{folder_hour(m['hour']):%Y-%m-%d %H:%M:%S}"
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


@pytest.mark.parametrize("dirty_flag", [False, True])
def test_snapshots_repeat_byte_for_byte_and_leave_the_log_alone(tmp_path, dirty_flag):
    kw = dict(seed=13, days=1, dirty=dirty_flag, security_stories=True)
    sa = generate_activity_log(tmp_path / "a", SNAP_EVENTS, snapshots=True, snapshot_every=3, **kw)
    sb = generate_activity_log(tmp_path / "b", SNAP_EVENTS, snapshots=True, snapshot_every=3, **kw)
    sc = generate_activity_log(tmp_path / "c", SNAP_EVENTS, **kw)
    da, db, dc = digest(tmp_path / "a"), digest(tmp_path / "b"), digest(tmp_path / "c")
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


def test_cli_and_demo_write_snapshots(tmp_path, monkeypatch, capsys):
    import argparse

    from auditlake_devtools import commands
    from pipelines.config.load import load_config
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
    snaps = _demo(tmp_path, monkeypatch)
    assert snaps.hours == [START + timedelta(hours=h) for h in (0, 12, 24)] and len(snaps.tables) == 3 * 5 * 3
    assert len(snaps.others) == 1  # the demo is dirty: its poison file
    assert snaps.inventory and all(r.startswith("siteLuid=") for r in snaps.inventory)  # and its inventory


def _demo(tmp_path, monkeypatch) -> Snapshots:
    """What `auditlake demo` lands for a day of 200 events with snapshots every 12 hours (the layers'
    refresh needs Spark, tested elsewhere: here only what the demo generates)."""
    import argparse

    from auditlake_devtools import commands
    from pipelines.config.load import load_config
    from pipelines.refresh import command as refresh_command
    from tests.lake import KEYED

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
    monkeypatch.setattr(refresh_command, "refresh", lambda *a, **k: True)  # the lake balanced
    assert commands.cmd_demo(cfg, argparse.Namespace()) == 0
    return Snapshots(tmp_path / "landing", cfg.get("generate.layout"))


def _inventory_rows(landing: Path, site: str, entity: str) -> list[dict]:
    [path] = landing.glob(f"siteLuid={site}/**/entityType={entity}/inventory-*.parquet")
    return pq.read_table(path).to_pylist()


def test_the_demos_inventory_shows_the_sites_as_the_last_snapshot_does(tmp_path, monkeypatch):
    """Taken the hour after the last snapshot, the inventory changes no role, membership or owner: the
    audit of the audit log would report each such change as one the Activity Log never recorded. Its
    own cases aside: the users and workbooks no snapshot names."""
    snaps = _demo(tmp_path, monkeypatch)
    last = snaps.hours[-1]
    for site in snaps.sites:
        roles = {r["luid"]: r["site_role"] for r in _inventory_rows(tmp_path / "landing", site, "users")}
        snapshot_roles = {r["luid"]: r["site_role"] for r in snaps.rows(site, last, "users")}
        assert snapshot_roles.items() <= roles.items()
        own = roles.keys() - snapshot_roles.keys()
        assert len(own) == 2  # a Creator who never signs in, an Unlicensed owner
        members = {
            (r["group_luid"], r["user_luid"]) for r in _inventory_rows(tmp_path / "landing", site, "group_members")
        }
        assert {(g, u) for g, u in members if u not in own} == snaps.members(site, last)
        for entity in ("workbooks", "datasources"):
            owners = {r["luid"]: r["owner_luid"] for r in _inventory_rows(tmp_path / "landing", site, entity)}
            assert {r["luid"]: r["owner_luid"] for r in snaps.rows(site, last, entity)}.items() <= owners.items()
