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

from devtools.sample.activity_log import generate_activity_log
from pipelines.gold.compact import mart_tables
from tests.lake import RUN_COLUMNS, row_differences

pytestmark = [pytest.mark.slow, pytest.mark.subprocess, pytest.mark.dbt]
LAYERS = "bronze,silver"  # the gold kill has its own test (it compares with the gold tests' marts)
# (stdout line that marks the moment, seconds to wait after it, then SIGKILL): one refresh killed at
# the first, its re-run killed at the second (starting from the state the first kill left), then a
# re-run that finishes
KILL_POINTS = [
    # after bronze's commits, before the ledger's (test_bronze also makes that state directly)
    ("bronze: tenant: committed", 0.0),
    # silver while it writes its four tables (events, duplicates, quarantine, batch figures)
    ("silver: site: writing", 0.3),
]


def _environ(data_dir: Path) -> dict[str, str]:
    environ = dict(os.environ)
    environ["AUDITLAKE__PATHS__DATA_DIR"] = str(data_dir)
    environ["AUDITLAKE__PATHS__LANDING_DIR"] = str(data_dir / "landing")
    environ["AUDITLAKE__QUALITY__CONTEXT_DIR"] = str(data_dir / "gx_context")
    return environ


def _refresh(
    data_dir: Path, source: Path, kill_at: tuple[str, float] | None = None, layers: str = LAYERS, kill_when=None
) -> tuple[int, str]:
    """Run a refresh in its own process; SIGKILL it ``kill_at`` (a stdout line, then a delay) or
    as soon as ``kill_when()`` turns true (polled)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", "--env", "test", "refresh", "--layers", layers,
         "--source", str(source)],
        env=_environ(data_dir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    lines: list[str] = []
    killed = threading.Event()

    def kill() -> None:
        if not killed.is_set():
            os.kill(proc.pid, signal.SIGKILL)
            killed.set()

    def watch() -> None:
        while proc.poll() is None and not killed.is_set():
            if kill_when():
                kill()
            time.sleep(0.2)

    if kill_when is not None:
        threading.Thread(target=watch, daemon=True).start()
    for line in proc.stdout:
        lines.append(line)
        if kill_at and kill_at[0] in line and not killed.is_set():
            time.sleep(kill_at[1])
            kill()
    proc.wait(timeout=1800)
    if kill_at or kill_when:
        assert killed.is_set(), f"never reached the kill point:\n{''.join(lines)[-3000:]}"
    return proc.returncode, "".join(lines)


def _table(spark, data_dir: Path, schema: str, name: str):
    return spark.read.format("delta").load(str(data_dir / "warehouse" / f"{schema}.db" / name))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> tuple[Path, Path]:
    """One delivery and the lakehouse an uninterrupted refresh makes of it (shared by the kill points)."""
    root = tmp_path_factory.mktemp("crash")
    source, reference = root / "delivery", root / "reference"
    generate_activity_log(source, 600, seed=23, days=1, dirty=True)
    code, out = _refresh(reference, source)
    assert code == 0, out[-3000:]
    return source, reference


def test_a_refresh_killed_at_each_step_reruns_to_the_same_tables_as_an_uninterrupted_one(
    spark, tmp_path, uninterrupted
):
    source, reference = uninterrupted
    crashed = tmp_path / "crashed"
    for kill_at in KILL_POINTS:
        code, out = _refresh(crashed, source, kill_at=kill_at)
        assert code == -signal.SIGKILL, f"{kill_at[0]}: {out[-3000:]}"
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
    # the file ledger: every file once, with the same verdict and row count
    ledgers = [_table(spark, d, "bronze", "file_ledger").select("path", "status", "reason", "rows")
               for d in (reference, crashed)]
    assert ledgers[1].count() == ledgers[0].count() > 0
    assert row_differences(ledgers[0], ledgers[1]) == 0


def _delta_tables(folder: Path) -> list[str]:
    return sorted(p.parent.name for p in folder.glob("*/_delta_log")) if folder.is_dir() else []


def test_a_refresh_killed_while_gold_builds_reruns_to_the_same_marts(spark, gold_lake, tmp_path):
    """Killed with some marts written and others not: the re-run gives the marts a refresh of the
    same files gave in the gold tests (row for row, but for when each row reached silver)."""
    local_cfg = gold_lake[0]
    gold_local = local_cfg.get("gold.schema")
    marts = mart_tables(spark, gold_local)
    crashed = tmp_path / "crashed"
    gold_dir = crashed / "warehouse" / "gold.db"
    source = local_cfg.path("paths.landing_dir")

    code, out = _refresh(crashed, source, layers="bronze,silver,gold",
                         kill_when=lambda: len(_delta_tables(gold_dir)) >= len(marts) // 2)
    assert code == -signal.SIGKILL, out[-3000:]
    written = _delta_tables(gold_dir)
    assert 0 < len(written) < len(marts), f"killed mid-gold: {len(written)} of {len(marts)} marts written"
    code, out = _refresh(crashed, source, layers="bronze,silver,gold")
    assert code == 0, out[-3000:]

    assert _delta_tables(gold_dir) == marts
    for name in marts:
        here = spark.table(f"{gold_local}.{name}")
        there = _table(spark, crashed, "gold", name)
        assert there.count() == here.count(), name
        assert row_differences(here, there, ignore=RUN_COLUMNS) == 0, f"{name} differs"
