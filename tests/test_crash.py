"""Crash safety: real `auditlake refresh` processes killed with SIGKILL mid-run, then simply run
again, end with exactly the tables an uninterrupted run gives (no duplicate, no lost event, the
same marts)."""

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
from pipelines.config import load_config
from pipelines.gold.compact import mart_tables
from pipelines.refresh import run_refresh
from tests.lake import RUN_COLUMNS, row_differences, variant_environ

pytestmark = [pytest.mark.slow(minutes=15), pytest.mark.subprocess, pytest.mark.dbt]
LAYERS = "bronze,silver,gold"
REFERENCE = "crash_ref"  # the uninterrupted refresh's schemas: <layer>_crash_ref, in this session
# One refresh killed at the first point, its re-run killed at the second (starting from the state the
# first kill left), that one's re-run at the third, then a re-run that finishes. Each point: a stdout
# line and the seconds to wait after it, or (gold) a test on the gold folder, polled.
BRONZE_KILL = ("bronze: tenant: committed", 0.0)  # after bronze's commits, before the ledger's
SILVER_KILL = ("silver: site: writing", 0.3)  # while silver writes its four tables


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


def _gold_half_written(gold_dir: Path, marts: int):
    """-> a test that turns true once half the marts have a Delta folder: some written, some not."""
    return lambda: len(_delta_tables(gold_dir)) >= marts // 2


def _delta_tables(folder: Path) -> list[str]:
    return sorted(p.parent.name for p in folder.glob("*/_delta_log")) if folder.is_dir() else []


@pytest.fixture(scope="module")
def uninterrupted(spark, lake_dir, tmp_path_factory):
    """One delivery (with what real feeds hold besides clean records) and the lakehouse an
    uninterrupted refresh makes of it, in this session: -> (delivery, reference config)."""
    source = tmp_path_factory.mktemp("crash") / "delivery"
    generate_activity_log(source, 600, seed=23, days=1, dirty=True)
    reference = load_config("test", environ=variant_environ(lake_dir, REFERENCE))
    run_refresh(spark, reference, LAYERS.split(","), source, log=lambda _m: None)
    return source, reference


def test_a_refresh_killed_in_each_layer_reruns_to_the_tables_of_an_uninterrupted_one(spark, tmp_path, uninterrupted):
    """Killed after bronze's commits, its re-run while silver writes, that one's re-run with some marts
    written and others not, then a re-run: the tables of one uninterrupted refresh, row for row (but
    for when each row reached silver)."""
    source, reference = uninterrupted
    crashed = tmp_path / "crashed"
    schema = {layer: reference.get(f"{layer}.schema") for layer in ("bronze", "silver", "gold")}
    marts = mart_tables(spark, schema["gold"])
    gold_dir = crashed / "warehouse" / "gold.db"
    for where, kill in (("bronze", {"kill_at": BRONZE_KILL}), ("silver", {"kill_at": SILVER_KILL}),
                        ("gold", {"kill_when": _gold_half_written(gold_dir, len(marts))})):
        code, out = _refresh(crashed, source, **kill)
        assert code == -signal.SIGKILL, f"killed in {where}: {out[-3000:]}"
    written = _delta_tables(gold_dir)
    assert 0 < len(written) < len(marts), f"killed mid-gold: {len(written)} of {len(marts)} marts written"
    code, out = _refresh(crashed, source)
    assert code == 0, out[-3000:]

    def ref(layer: str, name: str):
        return spark.table(f"{schema[layer]}.{name}")

    for family in ("site", "tenant"):
        bronze = [ref("bronze", f"{family}_events_raw"), _table(spark, crashed, "bronze", f"{family}_events_raw")]
        key = ["source_file", "content_hash"]
        assert bronze[1].count() == bronze[0].count() > 0, family
        assert bronze[1].select(*key).exceptAll(bronze[0].select(*key)).count() == 0
        silver = [ref("silver", f"{family}_events"), _table(spark, crashed, "silver", f"{family}_events")]
        assert silver[1].count() == silver[0].count() > 0, family
        assert silver[1].select("event_id").distinct().count() == silver[1].count(), "duplicate events"
        assert silver[1].select("event_id").exceptAll(silver[0].select("event_id")).count() == 0
    for name in ("quarantine", "duplicate_records", "writeback_audit"):
        counts = [ref("silver", name).count(), _table(spark, crashed, "silver", name).count()]
        assert counts[1] == counts[0], name
    assert ref("silver", "quarantine").count() > 0, "the delivery's dirty records were quarantined"
    # the file ledger: every file once, with the same verdict and row count
    ledgers = [t.select("path", "status", "reason", "rows")
               for t in (ref("bronze", "file_ledger"), _table(spark, crashed, "bronze", "file_ledger"))]
    assert ledgers[1].count() == ledgers[0].count() > 0
    assert row_differences(ledgers[0], ledgers[1]) == 0
    # the marts
    assert _delta_tables(gold_dir) == marts
    for name in marts:
        here, there = ref("gold", name), _table(spark, crashed, "gold", name)
        assert there.count() == here.count(), name
        assert row_differences(here, there, ignore=RUN_COLUMNS) == 0, f"{name} differs"
