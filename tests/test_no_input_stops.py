"""No input stops the line: a delivery of nothing but stray rows (one of each kind a source can send)
goes through a real refresh with each row set aside with its reason, and the delivery after it flows;
a batch a share threshold stopped is released by the operator's one command, or after its hold."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from auditlake_devtools.sample.activity_log import generate_activity_log
from auditlake_devtools.sample.writeback import AuditRow, generate_historical_audit, write_export
from pipelines.config.load import load_config
from pipelines.integrity.reconcile import reconcile, reconcile_snapshots
from pipelines.lake.table_names import tables
from pipelines.refresh import run_refresh
from tests.lake import move_day, use_variant, variant_environ

pytestmark = pytest.mark.slow(minutes=2)

QUIET = {"log": lambda _m: None}
SITE = "7c0e6b52-2d3a-4f59-9b1e-5a4d3c2b1a09"
ACTOR = "0b7d5d8e-9f4e-4c1b-9a51-3f0e0f2a1c11"
ZONE = "Europe/Berlin"


def _login(**values) -> dict:
    record = {
        "eventType": "hist_login",
        "eventTime": "2026-06-01T12:00:00.123456789Z",
        "actorUserId": 7,
        "actorUserLuid": ACTOR,
        "siteLuid": SITE,
        "siteRoleId": 11,
    }
    return {k: v for k, v in (record | values).items() if v is not None}


# each stray line, alone in a file of its own outside any eventType= folder: the reason silver gives it
STRAY_LINES = {
    "no_type": (_login(eventType=None), "missing_event_type"),
    "envelope_without_metadata": (
        {"traceUuid": "5d0c7f0e-9a8b-4c3d-8e2f-1a2b3c4d5e6f", "event": _login(eventType=None)},
        "missing_event_type",
    ),
    "unknown_type": (_login(eventType="hist_summon_dragon"), "unknown_event_type"),
    "bad_time": (_login(eventTime="06/16/2024 18:03:47"), "bad_event_time"),
    "future_time": (_login(eventTime="2099-01-01T00:00:00Z"), "event_time_in_window"),
    "luid_shape": (_login(actorUserLuid="not-a-luid"), "luid_shape"),
    "undocumented_code": (_login(siteRoleId=99), "documented_codes"),
}
# a Tableau Server log line (a native line: its event in v) with no type anywhere
NATIVE_WITHOUT_TYPE = {
    "ts": "2026-06-01T14:00:00.000",
    "site": SITE,
    "k": "cepp-canonical-event",
    "v": {"actorUserId": 1},
}


@pytest.fixture(scope="module")
def lake(spark, lake_dir, tmp_path_factory):
    work = tmp_path_factory.mktemp("stray")
    environ = variant_environ(lake_dir, "stray") | {
        "AUDITLAKE__WRITEBACK__SOURCE": "file",
        "AUDITLAKE__WRITEBACK__FILE__PATH": str(work / "historical_audit.ndjson"),
        "AUDITLAKE__SOURCES__SERVER_LOGS__TIMEZONE": ZONE,
        "AUDITLAKE__SOURCES__SERVER_LOGS__ROOTS": json.dumps([{"path": str(work / "logs" / "node1"), "node": "node1"}]),
    }
    cfg = load_config("test", environ=environ)
    generated = work / "generated"
    generate_activity_log(generated, 300, seed=17, days=2, snapshots=True, snapshot_every=12)
    (work / "logs" / "node1" / "vizportal").mkdir(parents=True)
    writeback = generate_historical_audit(40, seed=3)
    write_export(work / "historical_audit.ndjson", writeback)
    move_day(generated, cfg.path("paths.landing_dir"), "01")
    run_refresh(spark, cfg, ["bronze", "silver"], **QUIET)
    return cfg, work, generated, writeback


def _stray_delivery(cfg, work: Path, writeback: list[AuditRow]) -> None:
    """One file per stray line (a dated folder, no eventType=), a Server log line without a type, a users
    snapshot whose file lacks the key column, and a Write-Back row without its ID."""
    folder = cfg.path("paths.landing_dir") / "site" / f"siteLuid={SITE}" / "y=2026" / "m=06" / "d=01" / "h=12"
    folder.mkdir(parents=True, exist_ok=True)
    for name, (record, _) in STRAY_LINES.items():
        (folder / f"stray-{name}.json").write_text(json.dumps(record) + "\n", encoding="utf-8")
    log = work / "logs" / "node1" / "vizportal" / "vizportal_0-cepp-canonical-events_0.log"
    log.write_text(json.dumps(NATIVE_WITHOUT_TYPE) + "\n", encoding="utf-8")
    # the users snapshot of day 1's last hour again, an hour later, from a file without the key column
    snapshot = max(p for p in cfg.path("paths.landing_dir").rglob("entityType=users/*.parquet") if "/d=01/" in str(p))
    keyless = Path(str(snapshot.parent).replace("/h=12/", "/h=13/")) / "part-00000.parquet"
    keyless.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pq.read_table(snapshot).drop(["luid"]), keyless)
    no_id = AuditRow("metadata", writeback[-1].values | {"ID": None, "ACTIONNAME": "INSERT_DATA"})
    write_export(work / "historical_audit.ndjson", [*writeback, no_id])


def test_stray_rows_are_set_aside_with_their_reasons_and_the_next_delivery_flows(spark, lake):
    cfg, work, generated, writeback = lake
    t = tables(cfg)
    site_before = spark.table(t.silver_events("site")).count()
    _stray_delivery(cfg, work, writeback)

    report = run_refresh(spark, cfg, ["bronze", "silver"], **QUIET)  # a gate stopping it would raise here

    (site,) = [r for r in report.silver if r.family == "site"]
    assert (site.bronze_rows, site.inserted, site.quarantined) == (len(STRAY_LINES) + 1, 0, len(STRAY_LINES) + 1)
    quarantine = spark.table(t.quarantine).where(F.col("silver_run_id") == report.run_id)
    reasons = {
        r["source_file"].rsplit("/", 1)[-1]: (r["reason"], r["detail"], r["raw_line"]) for r in quarantine.collect()
    }
    for name, (record, reason) in STRAY_LINES.items():
        got, _, raw = reasons[f"stray-{name}.json"]
        assert (got, json.loads(raw)) == (reason, record), name
    assert reasons["stray-luid_shape.json"][1] == "quality gate: actor_user_luid = not-a-luid"
    assert reasons["stray-future_time.json"][1].startswith("quality gate: event_time = 2099-01-01")
    native = [v for k, v in reasons.items() if k.startswith("vizportal_0-cepp-canonical-events_0")]
    assert [reason for reason, _, _ in native] == ["missing_event_type"]
    # the gate saw the batch without them, and recorded what was set aside before it looked
    noted = spark.table(t.dq_results).where(F.col("run_id") == report.run_id).where("observed_value LIKE '%set aside%'")
    assert {r["expectation_key"] for r in noted.collect()} == {"event_time_in_window", "luid_shape", "documented_codes"}

    (users,) = [p for p in report.snapshots if p.entity_type == "users"]
    assert users.hours_set_aside == 1 and "no value in any key column (luid)" in users.problems[0]
    hours = spark.table(t.snapshot_hours).where("entity_type = 'users' AND status = 'quarantined'").collect()
    assert [h["snapshot_hour"] for h in hours] == [datetime(2026, 6, 1, 13)]
    wb = spark.table(t.writeback_quarantine).where(F.col("silver_run_id") == report.run_id).collect()
    assert [r["reason"] for r in wb] == ["null_id"]

    # the next delivery flows: every layer's figures move, and the lake still balances
    move_day(generated, cfg.path("paths.landing_dir"), "02")
    # (the Server log's piece sits in a folder of the day it was copied, later than June's: an ordinary
    # listing would skip June's folders, which `auditlake refresh` sees changed and walks in full)
    report = run_refresh(spark, cfg, ["bronze", "silver"], full_listing=True, **QUIET)
    (site,) = [r for r in report.silver if r.family == "site"]
    assert site.inserted > 0 and spark.table(t.silver_events("site")).count() == site_before + site.inserted
    (users,) = [p for p in report.snapshots if p.entity_type == "users"]
    assert users.hours_applied >= 1 and users.hours_set_aside == 0
    assert all(r.balanced for r in reconcile(spark, cfg))
    assert all(r.balanced for r in reconcile_snapshots(spark, cfg))
    assert sum(r.quarantined_rows for r in reconcile_snapshots(spark, cfg)) > 0


def test_a_stopped_batch_says_how_to_release_it_and_later_deliveries_wait_only_that_long(
    spark, lake_dir, tmp_path, monkeypatch, capsys
):
    """A broken feed (a large batch mostly not JSON) trips the parse rate, a circuit breaker: the batch
    stops, says so in one line with the command that releases it, and holds what comes after it; the
    operator's `refresh --release quarantine` sets it aside and the held delivery flows. A second broken
    batch is set aside by a refresh once it has been held quality.hold_stopped_hours."""
    from pipelines.cli import main

    use_variant(monkeypatch, lake_dir, "stopped")
    cfg = load_config("test", environ=variant_environ(lake_dir, "stopped"))
    t, landing = tables(cfg), cfg.path("paths.landing_dir")
    generated = tmp_path / "generated"
    generate_activity_log(generated, 200, seed=23, days=3)

    def broken(name: str) -> None:  # a gateway's error pages, and a few sound lines among them
        bad = landing / "site" / f"siteLuid={SITE}" / "y=2026" / "m=06" / "d=01" / "h=09" / name
        bad.parent.mkdir(parents=True, exist_ok=True)
        sound = [json.dumps(_login(actorUserId=n, eventTime=f"2026-06-01T09:{n:02d}:00Z")) for n in range(20)]
        bad.write_text("\n".join(["<html>gateway timeout</html>"] * 150 + sound) + "\n", encoding="utf-8")

    broken("part-broken-1.json")
    assert main(["--env", "test", "refresh", "--layers", "bronze,silver"]) == 1
    err = capsys.readouterr().err.splitlines()[0]  # (the next line: where the traceback was written)
    assert "expectation json_parse_rate" in err
    assert re.search(r"site bronze versions \d+\.\.\d+ held since", err)
    assert "`auditlake refresh --release quarantine`" in err

    move_day(generated, landing, "01")  # a good delivery waits behind the stopped batch
    assert main(["--env", "test", "refresh", "--layers", "bronze,silver"]) == 1
    assert re.search(r"site bronze versions \d+\.\.\d+ held since", capsys.readouterr().err)
    assert not spark.catalog.tableExists(t.silver_events("site")) or not spark.table(t.silver_events("site")).count()

    assert main(["--env", "test", "refresh", "--layers", "bronze,silver", "--release", "quarantine"]) == 0
    out = capsys.readouterr().out
    assert "released (quarantine) by the operator" in out
    # its sound rows set aside as stopped; the others keep their own reason (replayable by it)
    stopped = spark.table(t.quarantine).where("reason = 'gate_stopped'")
    assert stopped.count() == 20 and stopped.first()["detail"].startswith("the batch was stopped (")
    assert spark.table(t.quarantine).where("reason = 'malformed_json'").count() == 150
    promoted = spark.table(t.silver_events("site")).count()
    assert promoted > 0

    broken("part-broken-2.json")  # stopped again, the next delivery held behind it
    assert main(["--env", "test", "refresh", "--layers", "bronze,silver"]) == 1
    move_day(generated, landing, "02")
    assert main(["--env", "test", "refresh", "--layers", "bronze,silver"]) == 1
    capsys.readouterr()
    # no longer than the hold: at 0, the next refresh sets it aside by itself and the delivery flows
    monkeypatch.setenv("AUDITLAKE__QUALITY__HOLD_STOPPED_HOURS", "0")
    assert main(["--env", "test", "refresh", "--layers", "bronze,silver"]) == 0
    assert "has been held quality.hold_stopped_hours (0)" in capsys.readouterr().out
    assert spark.table(t.quarantine).where("reason = 'gate_stopped'").count() == 40
    assert spark.table(t.silver_events("site")).count() > promoted
    assert all(r.balanced for r in reconcile(spark, cfg))
