"""What every bench's run stands on: a lakehouse of its own, wiped before it is measured; a timer;
the seconds of each node of dbt's last build."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from auditlake_devtools.sample import BUNDLED_EXPORT
from auditlake_devtools.variant import variant_environ
from pipelines.config.load import Config, load_config
from pipelines.lake.table_names import tables

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T = TypeVar("T")


def bench_cfg(cfg: Config, root: Path) -> Config:
    """Same settings, but a lakehouse of its own (never the real one's tables or checkpoints), with the
    bundled Write-Back export, as the demo lands it."""
    environ = variant_environ(root / "lake", "bench")
    environ["AUDITLAKE__WRITEBACK__SOURCE"] = "file"
    environ["AUDITLAKE__WRITEBACK__FILE__PATH"] = str(BUNDLED_EXPORT)
    return load_config(cfg.env, environ=environ)


def ingest_cfg(cfg: Config, root: Path, overrides: Mapping[str, str] | None = None) -> Config:
    """The bench's own lakehouse; no write-back source (the Activity Log is what is measured).
    ``overrides``: more settings, as environment variables (``AUDITLAKE__SECTION__KEY``)."""
    environ = variant_environ(root / "lake", "bench")
    environ["AUDITLAKE__WRITEBACK__SOURCE"] = "none"
    environ.update(overrides or {})
    return load_config(cfg.env, environ=environ)


def fresh_lake(spark: SparkSession, bcfg: Config) -> None:
    """The bench's lakehouse emptied: its folder and every schema of its tables dropped."""
    shutil.rmtree(bcfg.data_dir, ignore_errors=True)
    for schema in tables(bcfg).table_schemas:
        spark.sql(f"DROP DATABASE IF EXISTS {schema} CASCADE")


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """``fn()``'s value and the seconds it took."""
    started = time.monotonic()
    value = fn()
    return value, time.monotonic() - started


def dbt_node_seconds(results: dict | None = None) -> list[tuple[str, str, float]]:
    """(node name, kind: model / test / unit_test, seconds) of the last dbt build, slowest first
    (``results``: a run_results.json as read; default dbt's own, in its target folder)."""
    from pipelines.gold.run import dbt_target_dir

    if results is None:
        results = json.loads((dbt_target_dir() / "run_results.json").read_text())
    nodes = [
        (r["unique_id"].split(".", 2)[2], r["unique_id"].split(".")[0], float(r["execution_time"]))
        for r in results["results"]
    ]
    return sorted(nodes, key=lambda n: -n[2])
