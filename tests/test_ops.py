"""Operating the refresh: one at a time, a run log per layer, `auditlake sql` output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime

import pytest

from pipelines.config.load import load_config
from pipelines.lake.run_log import LOCK_FILE, RefreshBusyError, refresh_lock
from pipelines.serving.query import format_rows
from tests.lake import variant_environ

QUIET = {"log": lambda _m: None}


@pytest.mark.subprocess
def test_a_second_refresh_exits_at_once_naming_the_running_one(lake_dir):
    environ = variant_environ(lake_dir, "ops_lock")
    cfg = load_config("test", environ=environ)
    with refresh_lock(cfg, **QUIET):
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "pipelines.cli", "--env", "test", "refresh"],
            env=environ,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 75, proc.stderr
        assert "another refresh is running" in proc.stderr and f"pid {os.getpid()}" in proc.stderr
        assert time.monotonic() - started < 60  # no Spark was started
    assert not (cfg.data_dir / "warehouse").exists()  # the refused run touched nothing


@pytest.mark.subprocess
def test_wait_gives_up_after_the_timeout_and_the_lock_is_free_afterwards(lake_dir):
    cfg = load_config("test", environ=variant_environ(lake_dir, "ops_wait"))
    with refresh_lock(cfg, **QUIET):
        started = time.monotonic()
        with pytest.raises(RefreshBusyError, match="--wait"):
            with refresh_lock(cfg, wait_seconds=1.0, **QUIET):
                pass
        assert time.monotonic() - started >= 1.0
    with refresh_lock(cfg, **QUIET):  # released on exit
        assert (cfg.data_dir / LOCK_FILE).read_text().startswith(f"pid {os.getpid()}")


@pytest.mark.subprocess
def test_a_killed_refresh_leaves_no_stale_lock(lake_dir):
    environ = variant_environ(lake_dir, "ops_kill")
    cfg = load_config("test", environ=environ)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from pipelines.config.load import load_config\n"
            "from pipelines.lake.run_log import refresh_lock\n"
            "with refresh_lock(load_config('test'), log=print):\n    print('held', flush=True); time.sleep(300)",
        ],
        env=environ,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RefreshBusyError):
            with refresh_lock(cfg, **QUIET):
                pass
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        with refresh_lock(cfg, wait_seconds=5, **QUIET):
            pass
    finally:
        holder.kill()


def test_sql_output_formats():
    columns, rows = ["event_type", "n", "at"], [("hist_login", 3, datetime(2026, 6, 1, 9, 0)), ("x,y", None, None)]
    table = format_rows(columns, rows, "table")
    assert "| hist_login | 3    | 2026-06-01 09:00:00 |" in table and "(2 rows)" in table
    assert format_rows(columns, rows, "csv").splitlines() == [
        "event_type,n,at",
        "hist_login,3,2026-06-01 09:00:00",
        '"x,y",,',
    ]
    lines = [json.loads(line) for line in format_rows(columns, rows, "json").splitlines()]
    assert lines[0] == {"event_type": "hist_login", "n": 3, "at": "2026-06-01 09:00:00"} and lines[1]["n"] is None
