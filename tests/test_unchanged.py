"""A refresh with nothing new stops before Spark starts (pipelines/refresh/nothing_new.py): what the file system
tells, and a lake refreshed through every layer by the command itself."""

from __future__ import annotations

import json
import os
from datetime import timedelta

from auditlake_devtools.sample.activity_log import generate_activity_log
from auditlake_devtools.sample.activity_log.generator import DEFAULT_START
from pipelines.alerts.webhook import AlertsReport
from pipelines.config.load import load_config
from pipelines.refresh import LAYERS, RefreshReport, left_nothing_to_retry, nothing_new
from tests.lake import use_variant, variant_environ


def _commit(table: os.PathLike, version: int) -> None:
    log = os.path.join(table, nothing_new.DELTA_LOG)
    os.makedirs(log, exist_ok=True)
    with open(os.path.join(log, f"{version:020d}.json"), "w", encoding="utf-8") as f:
        f.write("{}\n")


def test_the_landing_counts_per_date_folder_and_a_table_by_its_newest_commit(tmp_path):
    landing = tmp_path / "landing"
    day = landing / "site" / "siteLuid=a" / "y=2026" / "m=06" / "d=08" / "h=01" / "eventType=hist_login"
    day.mkdir(parents=True)
    (day / "part-00000.json").write_text('{"a": 1}\n')
    (landing / "loose.json").write_text("{}\n")
    before, files = nothing_new.landing_by_day(str(landing))
    assert files == 2 and set(before) == {"2026-06-08", nothing_new.UNDATED}
    (day / "part-00001.json").write_text('{"a": 2}\n')  # a new file: its day only
    after, _ = nothing_new.landing_by_day(str(landing))
    assert after["2026-06-08"] != before["2026-06-08"] and after[nothing_new.UNDATED] == before[nothing_new.UNDATED]
    os.utime(landing / "loose.json", ns=(0, 0))  # rewritten in place: same name and size, another time
    assert nothing_new.landing_by_day(str(landing))[0][nothing_new.UNDATED] != after[nothing_new.UNDATED]

    warehouse = tmp_path / "warehouse"
    table = warehouse / "silver.db" / "site_events"
    _commit(table, 0)
    state, tables_seen = nothing_new.tree_state(str(warehouse))
    assert tables_seen == 1
    (table / "event_date=2026-06-08").mkdir()
    (table / "event_date=2026-06-08" / "part-0.parquet").write_bytes(b"x")  # data without a commit: not read
    assert nothing_new.tree_state(str(warehouse))[0] == state
    _commit(table, 1)
    assert nothing_new.tree_state(str(warehouse))[0] != state
    state = nothing_new.tree_state(str(warehouse))[0]
    (warehouse / "silver.db" / "half_made").mkdir()  # a table a killed run began: no log yet
    (warehouse / "silver.db" / "half_made" / "part-0.parquet").write_bytes(b"x")
    assert nothing_new.tree_state(str(warehouse))[0] != state


def test_a_check_names_what_changed_and_the_old_date_folders(tmp_path):
    cfg = load_config("test", environ=variant_environ(tmp_path, "check"))
    landing = cfg.path("paths.landing_dir")
    generate_activity_log(landing, 40, seed=3, days=2)
    first = nothing_new.check(cfg)
    assert not first.nothing_new and first.changed == ["no complete refresh recorded"]
    nothing_new.record(cfg, first.inputs, "run-1", ["feed: a note"], DEFAULT_START.date())
    again = nothing_new.check(cfg)
    assert again.nothing_new and again.record["run_id"] == "run-1" and again.record["notes"] == ["feed: a note"]
    # a delivery into a date folder older than the listing's window, and another configuration
    generate_activity_log(landing, 10, seed=4, days=1, start=DEFAULT_START - timedelta(days=30))
    other = load_config("test", environ={**variant_environ(tmp_path, "check"), "AUDITLAKE__GOLD__THREADS": "1"})
    verdict = nothing_new.check(other)
    assert not verdict.nothing_new
    old = (DEFAULT_START - timedelta(days=30)).date().isoformat()
    assert verdict.old_days == [old]
    assert verdict.changed == [f"the landing files (date folder {old})", "the configuration"]
    nothing_new.forget(cfg)
    assert nothing_new.recorded(cfg) is None
    assert nothing_new.not_told(cfg, None) is None
    jdbc = {"AUDITLAKE__WRITEBACK__SOURCE": "jdbc", "AUDITLAKE_WRITEBACK_PASSWORD": "x"}
    assert "JDBC" in nothing_new.not_told(
        load_config("test", environ={**variant_environ(tmp_path, "check"), **jdbc}), None
    )


def test_a_run_leaving_an_alert_pending_or_a_layer_out_records_nothing():
    environ = {**os.environ, "AUDITLAKE__ALERTS__ON_REFRESH": "true", "AUDITLAKE__ALERTS__WEBHOOK_URL_ENV": "HOOK"}
    cfg = load_config("test", environ={**environ, "HOOK": "http://127.0.0.1:9/"})
    assert left_nothing_to_retry(cfg, RefreshReport("r", list(LAYERS), alerts=AlertsReport()))
    assert not left_nothing_to_retry(cfg, RefreshReport("r", list(LAYERS), alerts=AlertsReport(pending=1)))
    assert not left_nothing_to_retry(cfg, RefreshReport("r", list(LAYERS)))  # alerts not sent at all
    assert not left_nothing_to_retry(cfg, RefreshReport("r", ["bronze", "silver"], alerts=AlertsReport()))


def _stop(*_args, **_kwargs):
    raise RuntimeError("stopped by the test")


def test_nothing_new_starts_no_spark_an_old_folder_is_walked_and_a_failed_run_leaves_no_record(
    tmp_path, monkeypatch, capsys
):
    """The command's wiring, Spark and the layers stubbed to stop where they would start (a whole
    refresh records and the next one stops before Spark in tests/test_wheel.py)."""
    from pipelines.cli import main
    from pipelines.refresh import command as refresh_module
    from pipelines.runtime import spark_session

    use_variant(monkeypatch, tmp_path, "wiring")
    cfg = load_config("test")
    generate_activity_log(cfg.path("paths.landing_dir"), 40, seed=5, days=2)
    nothing_new.record(
        cfg, nothing_new.check(cfg).inputs, "run-1", ["feed: site s has gone quiet"], DEFAULT_START.date()
    )
    command = ["--env", "test", "refresh"]

    monkeypatch.setattr(spark_session, "build_spark", _stop)
    capsys.readouterr()
    assert main(command) == 0
    out = capsys.readouterr().out
    assert "refresh: nothing new since refresh run-1" in out and "Spark not started" in out
    assert "feed: site s has gone quiet" in out  # what the recorded run said whatever it found
    # an idle period still gets its signed digest (without Spark), so a missing period shows
    assert "integrity: digest 00000001-refresh.json: 0 files, 0 rows, 0 erasure records, signed" in out
    assert main([*command, "--force"]) != 0 and "stopped by the test" in capsys.readouterr().err
    assert nothing_new.recorded(cfg) is None  # a run that fails leaves no record: the next one runs every layer

    asked = {}
    monkeypatch.setattr(spark_session, "build_spark", lambda _cfg: None)
    monkeypatch.setattr(refresh_module, "run_refresh", lambda *a, **k: asked.update(k) or _stop())
    assert main(command) != 0  # no record: what earlier listings skipped is unknown, so every folder
    assert "bronze walks every folder: no complete refresh is recorded" in capsys.readouterr().out
    assert asked["full_listing"] is True

    nothing_new.record(cfg, nothing_new.check(cfg).inputs, "run-2", [], DEFAULT_START.date())
    generate_activity_log(cfg.path("paths.landing_dir"), 10, seed=6, days=1, start=DEFAULT_START - timedelta(days=30))
    asked.clear()
    assert main(command) != 0
    out = capsys.readouterr().out
    assert "changed since refresh run-2: the landing files (date folder " in out
    assert "bronze walks every folder" in out and asked["full_listing"] is True

    # with --summary, recorded only when the lake balances (else it exits 1 and the next run is in full)
    from pipelines.activity_log import feed
    from pipelines.activity_log.bronze import land

    monkeypatch.setattr(refresh_module, "run_refresh", lambda *a, **k: RefreshReport("run-3", list(LAYERS)))
    monkeypatch.setattr(feed, "quiet_site_lines", lambda *a: [])
    monkeypatch.setattr(land, "listing_window_start", lambda *a: None)
    for balanced in (True, False):
        monkeypatch.setattr(refresh_module, "print_summary", lambda *a, b=balanced: b)
        assert main([*command, "--summary"]) == (0 if balanced else 1)
        assert (nothing_new.recorded(cfg) or {}).get("run_id") == ("run-3" if balanced else None)


def test_the_command_lists_and_copies_the_server_logs_once_and_bronze_copies_only_without_it(tmp_path, monkeypatch):
    """The copy before Spark is the refresh's only one: the check reads its listing of the roots, and
    it goes down to the layers, so bronze copies again only for a caller of ``run_refresh`` alone."""
    from pipelines.cli import main
    from pipelines.refresh import command as refresh_module
    from pipelines.refresh import layers
    from pipelines.runtime import spark_session
    from pipelines.server_logs import discover, pieces

    use_variant(monkeypatch, tmp_path, "server_logs_once")
    log_file = tmp_path / "logs" / "vizqlserver" / "vizqlserver_0-cepp-canonical-events_0.log"
    log_file.parent.mkdir(parents=True)
    log_file.write_text('{"eventType":"login","eventTime":"2026-06-08T10:00:00Z"}\n')
    monkeypatch.setenv("AUDITLAKE__SOURCES__SERVER_LOGS__TIMEZONE", "Europe/Berlin")
    monkeypatch.setenv(
        "AUDITLAKE__SOURCES__SERVER_LOGS__ROOTS", json.dumps([{"path": str(tmp_path / "logs"), "node": "n1"}])
    )
    listings = []

    def find_logs(roots):
        listings.append(roots)
        return discover.find_logs(roots)

    monkeypatch.setattr(pieces, "find_logs", find_logs)
    monkeypatch.setattr(nothing_new, "find_logs", find_logs)
    asked = {}
    monkeypatch.setattr(spark_session, "build_spark", lambda _cfg: None)
    monkeypatch.setattr(refresh_module, "run_refresh", lambda *a, **k: asked.update(k) or _stop())
    assert main(["--env", "test", "refresh"]) != 0
    copied = asked["server_logs"]
    assert len(listings) == 1 and (copied.files, copied.lines) == (1, 1)

    cfg = load_config("test")
    assert nothing_new.check(cfg, copied.listed).inputs.other == nothing_new.current_inputs(cfg).other
    copies = []
    monkeypatch.setattr(layers, "copy_server_logs", lambda *a, **k: copies.append(a) or pieces.CopyResult())
    monkeypatch.setattr(layers, "land_bronze", lambda *a, **k: [])
    monkeypatch.setattr(layers.writeback_bronze, "land_writeback", lambda *a, **k: None)
    layers._bronze(None, cfg, RefreshReport("r", ["bronze"], server_logs=copied), None, log=lambda _m: None)
    assert copies == []
    layers._bronze(None, cfg, RefreshReport("r", ["bronze"]), None, log=lambda _m: None)
    assert len(copies) == 1
