"""The cluster profile: a real Spark standalone master and two workers on loopback (started by
`auditlake cluster start`) run a refresh of bronze and silver, with the tables and checkpoints at
file: URIs (the code path object storage takes), and give the same silver tables as local mode.
(Gold is dbt's SQL on the same session: what the cluster changes is where bronze's and silver's
Python-side typing and writes run, so the marts are not built again here: CI time, issue 30.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditlake_devtools.pg_server import free_port
from auditlake_devtools.variant import variant_environ
from pipelines.config.load import load_config
from pipelines.runtime.standalone import ClusterError, Standalone
from tests.lake import WRITE_COLUMNS, row_differences

pytestmark = [pytest.mark.slow(minutes=5), pytest.mark.subprocess]
PROJECT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cluster_environ(lake_dir, gold_lake):
    root = lake_dir / "cluster"
    environ = variant_environ(root, "cluster")
    port, webui = free_port(), free_port()
    environ.update(
        AUDITLAKE__CLUSTER__PORT=str(port),
        AUDITLAKE__CLUSTER__WEBUI_PORT=str(webui),
        AUDITLAKE__SPARK__MASTER=f"spark://127.0.0.1:{port}",
        # URIs, not paths: Spark and the lakehouse go through Hadoop's FileSystem, as for s3a://
        AUDITLAKE__PATHS__WAREHOUSE_DIR=(root / "warehouse").as_uri(),
        AUDITLAKE__PATHS__CHECKPOINT_DIR=(root / "checkpoints").as_uri(),
        # the files the local lake was refreshed from (both deliveries), and its Write-Back export (the
        # one naming a person of its events, not the default source)
        AUDITLAKE__PATHS__LANDING_DIR=gold_lake[0].path("paths.landing_dir").as_uri(),
        AUDITLAKE__WRITEBACK__SOURCE="file",
        AUDITLAKE__WRITEBACK__FILE__PATH=str(gold_lake[0].path("writeback.file.path")),
        # the driver as cron starts a refresh: the JIT's C1 alone, fewer CPU-seconds for a short-lived process
        AUDITLAKE__SPARK__JIT="c1",
    )
    environ.pop("AUDITLAKE_ENV", None)
    cluster = Standalone.from_config(load_config("cluster", environ=environ))
    cluster.start(log=lambda _m: None)
    try:
        yield environ, cluster
    finally:
        cluster.stop(log=lambda _m: None)


@pytest.mark.e2e
def test_refresh_on_a_standalone_cluster_gives_the_local_silver_tables(spark, gold_lake, cluster_environ):
    environ, cluster = cluster_environ
    local_cfg = gold_lake[0]
    run = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "--env", "cluster", "refresh", "--layers", "bronze,silver"],
        cwd=PROJECT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=2400,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "silver:" in run.stdout

    # the work ran on the cluster: the master saw the application, with executors on its workers
    apps = [a for a in (cluster.state() or {}).get("completedapps", []) if a["name"] == "auditlake"]
    assert len(apps) == 1, cluster.state()
    executor_logs = list((cluster.root).glob("worker-*/app-*/*/stderr"))
    assert len({p.parts[-4] for p in executor_logs}) == 2, "both workers ran executors"

    # same tables, same rows (except when and by which run each row was written, and the file's
    # name: a URI here)
    cluster_cfg = load_config("cluster", environ=environ)
    assert cluster_cfg.warehouse_dir.startswith("file:")
    silver_local, silver_cluster = local_cfg.get("silver.schema"), cluster_cfg.get("silver.schema")
    ignore = (*WRITE_COLUMNS, "source_file")
    for name in ("site_events", "tenant_events", "quarantine", "duplicate_records", "writeback_audit"):
        there = spark.read.format("delta").load(f"{cluster_cfg.warehouse_dir}/{silver_cluster}.db/{name}")
        here = spark.table(f"{silver_local}.{name}")
        assert sorted(there.columns) == sorted(here.columns), name
        assert there.count() == here.count(), name
        assert row_differences(here, there, ignore=ignore) == 0, f"{name} differs"

    # and the run log in the cluster's ops table: both layers succeeded
    ops = f"{cluster_cfg.warehouse_dir}/{cluster_cfg.get('ops.schema')}.db"
    runs = spark.read.format("delta").load(f"{ops}/refresh_runs")
    layers = sorted((r["layer"], r["status"]) for r in runs.collect())
    assert layers == [("bronze", "succeeded"), ("silver", "succeeded")]


def test_cluster_start_refuses_a_second_start_and_stop_ends_every_daemon(tmp_path):
    environ = dict(
        os.environ,
        AUDITLAKE__PATHS__DATA_DIR=str(tmp_path),
        AUDITLAKE__CLUSTER__WORKERS="1",
        AUDITLAKE__CLUSTER__PORT=str(free_port()),
        AUDITLAKE__CLUSTER__WEBUI_PORT=str(free_port()),
    )
    cluster = Standalone.from_config(load_config("cluster", environ=environ))
    cluster.start(log=lambda _m: None)
    try:
        assert cluster.running() == ["master", "worker-1"]
        with pytest.raises(ClusterError, match="already running"):
            cluster.start(log=lambda _m: None)
    finally:
        cluster.stop(log=lambda _m: None)
    assert cluster.running() == [] and cluster.state() is None
