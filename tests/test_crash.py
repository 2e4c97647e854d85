"""Crash safety: real `auditlake refresh` processes killed with SIGKILL mid-run, then simply run
again, end with exactly the tables an uninterrupted run gives (no duplicate, no lost event)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pipelines.generate import generate_activity_log

pytestmark = [pytest.mark.integration, pytest.mark.slow]
LAYERS = "bronze,silver"  # gold is one Delta commit per model and merges on keys; see docs/operations.md
# (stdout line that marks the moment, seconds to wait after it, then SIGKILL)
KILL_POINTS = [
    # right after silver wrote a batch, before its stream checkpoint commits
    pytest.param(("silver: site batch 0", 0.0), id="silver-batch-written"),
    # while bronze lands: one CI run in three, the re-run could not restart the tenant stream
    # (known, open in the operations issue); kept so the fix shows up as XPASS
    pytest.param(
        ("bronze: landing tenant", 1.5),
        id="bronze-landing",
        marks=pytest.mark.xfail(reason="a refresh killed while bronze lands can fail to restart", strict=False),
    ),
]


def _environ(data_dir: Path) -> dict[str, str]:
    environ = dict(os.environ)
    environ["AUDITLAKE__PATHS__DATA_DIR"] = str(data_dir)
    environ["AUDITLAKE__PATHS__LANDING_DIR"] = str(data_dir / "landing")
    environ["AUDITLAKE__QUALITY__CONTEXT_DIR"] = str(data_dir / "gx_context")
    return environ


def _refresh(data_dir: Path, source: Path, kill_at: tuple[str, float] | None = None) -> tuple[int, str]:
    """Run a refresh in its own process; with ``kill_at``, SIGKILL it at that moment."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", "--env", "test", "refresh", "--layers", LAYERS,
         "--source", str(source)],
        env=_environ(data_dir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    lines: list[str] = []
    killed = threading.Event()
    for line in proc.stdout:
        lines.append(line)
        if kill_at and kill_at[0] in line and not killed.is_set():
            time.sleep(kill_at[1])
            os.kill(proc.pid, signal.SIGKILL)
            killed.set()
    proc.wait(timeout=600)
    if kill_at:
        assert killed.is_set(), f"never reached {kill_at[0]!r}:\n{''.join(lines)[-3000:]}"
    return proc.returncode, "".join(lines)


def _table(spark, data_dir: Path, schema: str, name: str):
    return spark.read.format("delta").load(str(data_dir / "warehouse" / f"{schema}.db" / name))


@pytest.mark.parametrize("kill_at", KILL_POINTS)
def test_a_killed_refresh_reruns_to_the_same_tables_as_an_uninterrupted_one(spark, tmp_path, kill_at):
    source = tmp_path / "delivery"
    generate_activity_log(source, 1500, seed=23, days=1, dirty=True)
    reference, crashed = tmp_path / "reference", tmp_path / "crashed"

    code, out = _refresh(reference, source)
    assert code == 0, out[-3000:]
    code, out = _refresh(crashed, source, kill_at=kill_at)
    assert code == -signal.SIGKILL, out[-3000:]
    code, out = _refresh(crashed, source)
    assert code == 0, out[-3000:]

    for family in ("site", "tenant"):
        bronze = [_table(spark, d, "bronze", f"{family}_events_raw") for d in (reference, crashed)]
        key = ["source_file", "content_hash"]
        assert bronze[1].count() == bronze[0].count() > 0, family
        assert bronze[1].select(*key).exceptAll(bronze[0].select(*key)).count() == 0
        silver = [_table(spark, d, "silver", f"{family}_events") for d in (reference, crashed)]
        assert silver[1].count() == silver[0].count() > 0, family
        assert silver[1].select("event_id").distinct().count() == silver[1].count(), "duplicate events"
        assert silver[1].select("event_id").exceptAll(silver[0].select("event_id")).count() == 0
    for name in ("quarantine", "duplicate_records", "writeback_audit"):
        tables = [_table(spark, d, "silver", name) for d in (reference, crashed)]
        assert tables[1].count() == tables[0].count(), name
