"""Operating the refresh: one at a time (a lock file), and a run log (``ops.refresh_runs``).

The lock is an advisory ``flock`` on ``<data_dir>/refresh.lock``, taken before Spark starts.
The kernel drops it when the holder exits in any way (kill -9 included), so a crashed refresh
never leaves a stale lock behind; the file only tells who holds it.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from pyspark.sql import SparkSession

from pipelines.config.load import Config
from pipelines.errors import BusyError
from pipelines.lake.delta_tables import ensure_schema
from pipelines.lake.table_names import tables
from pipelines.runtime.spark_session import append_rows

LOCK_FILE = "refresh.lock"
RUN_LOG_SCHEMA = (
    "run_id string, layer string, status string, started_at timestamp, finished_at timestamp, "
    "seconds double, rows_in long, rows_out long, quarantined long, duplicates long, detail string, "
    "env string, host string, pid int"
)


class RefreshBusyError(BusyError):
    """Another refresh holds the lock."""


@contextmanager
def refresh_lock(cfg: Config, wait_seconds: float = 0.0, log=print) -> Iterator[None]:
    """Hold the lakehouse's refresh lock for the duration of the block.

    With ``wait_seconds`` > 0, wait that long for a running refresh to finish; otherwise (or
    when the wait runs out) raise ``RefreshBusyError`` naming the holder."""
    cfg.data_dir.mkdir(parents=True, exist_ok=True)
    path = cfg.data_dir / LOCK_FILE
    handle = open(path, "a+")  # noqa: SIM115 - held open for the lock's lifetime
    deadline = time.monotonic() + wait_seconds
    announced = False
    try:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "unknown"
                if time.monotonic() >= deadline:
                    raise RefreshBusyError(
                        f"another refresh is running ({holder}; lock {path}): it will finish on its own; "
                        "run again then, or pass --wait SECONDS to queue behind it"
                    ) from None
                if not announced:
                    log(f"refresh: waiting up to {wait_seconds:.0f}s for the running refresh ({holder})")
                    announced = True
                time.sleep(min(2.0, max(0.1, deadline - time.monotonic())))
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}\n")
        handle.flush()
        yield
    finally:
        handle.close()  # closing releases the lock


@dataclass
class LayerRun:
    run_id: str
    layer: str
    status: str  # succeeded | failed | skipped (gold: nothing it reads changed)
    started_at: datetime
    finished_at: datetime
    seconds: float
    rows_in: int = 0
    rows_out: int = 0
    quarantined: int = 0
    duplicates: int = 0
    detail: str = ""
    env: str = ""
    host: str = ""
    pid: int = 0


def record_layer_run(spark: SparkSession, cfg: Config, run: LayerRun) -> None:
    """Append one row to ops.refresh_runs (created on first use)."""
    t = tables(cfg)
    ensure_schema(spark, t.ops_schema)
    run.env, run.host, run.pid = cfg.env, socket.gethostname(), os.getpid()
    append_rows(spark, cfg, [asdict(run)], RUN_LOG_SCHEMA, t.refresh_runs)


def last_success_start(spark: SparkSession, cfg: Config, layer: str) -> str | None:
    """When the last successful run of ``layer`` started, as Spark's timestamp text in the
    session's time zone (the form dbt compares silver_ingest_ts with), or None."""
    table = tables(cfg).refresh_runs
    if not spark.catalog.tableExists(table):
        return None
    row = spark.sql(
        f"SELECT cast(max(started_at) AS string) FROM {table} WHERE layer = '{layer}' AND status = 'succeeded'"
    ).first()
    return row[0] if row else None
