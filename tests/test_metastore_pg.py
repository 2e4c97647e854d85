"""The PostgreSQL-backed Hive metastore (conf/pgmeta.yaml): a refresh runs while the Thrift
server is up on the same lakehouse, and a JDBC client sees what the refresh wrote. (With the
embedded Derby metastore the second process could not even open the metastore.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auditlake_devtools.pg_server import PgServer, free_port
from auditlake_devtools.sample.activity_log import generate_activity_log
from pipelines.serving.thrift import beeline_rows

pytestmark = [pytest.mark.slow(minutes=4), pytest.mark.subprocess, pytest.mark.e2e]


@pytest.fixture(scope="module")
def pg():
    server = PgServer.start()
    server.create_database("auditlake_metastore")
    yield server
    server.stop()


def _environ(pg: PgServer, data_dir: Path, thrift_port: int) -> dict[str, str]:
    environ = dict(os.environ)
    environ.update(
        {
            "AUDITLAKE__PATHS__DATA_DIR": str(data_dir),
            "AUDITLAKE__PATHS__LANDING_DIR": str(data_dir / "landing"),
            "AUDITLAKE__QUALITY__CONTEXT_DIR": str(data_dir / "gx_context"),
            "AUDITLAKE__SPARK__DRIVER_MEMORY": "1g",
            "AUDITLAKE__METASTORE__POSTGRESQL__HOST": pg.host,
            "AUDITLAKE__METASTORE__POSTGRESQL__PORT": str(pg.port),
            "AUDITLAKE__METASTORE__POSTGRESQL__USER": pg.user,
            "AUDITLAKE_METASTORE_PASSWORD": pg.password,
            "AUDITLAKE__SERVE__AUDITOR_PORT": str(thrift_port),  # the auditors' server reads the lake's metastore
        }
    )
    return environ


def test_refresh_runs_while_the_thrift_server_serves_the_same_metastore(spark, pg, tmp_path):
    port = free_port()
    environ = _environ(pg, tmp_path / "lake", port)
    source = tmp_path / "delivery"
    generate_activity_log(source, 400, seed=3, days=1)
    server = subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", "--env", "pgmeta", "serve", "--role", "auditor"],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline, seen = time.monotonic() + 240, []
        for line in server.stdout:
            seen.append(line)
            if "listening on" in line or time.monotonic() > deadline:
                break
        assert "listening on" in seen[-1], "".join(seen)[-3000:]
        refresh = subprocess.run(
            [
                sys.executable,
                "-m",
                "pipelines.cli",
                "--env",
                "pgmeta",
                "refresh",
                "--layers",
                "bronze,silver",
                "--source",
                str(source),
            ],
            # as cron starts a refresh: the JIT's C1 alone, fewer CPU-seconds for a short-lived process (the
            # server beside it lives long: C2 repays there)
            env={**environ, "AUDITLAKE__SPARK__JIT": "c1"},
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert refresh.returncode == 0, (refresh.stdout + refresh.stderr)[-4000:]
        written = spark.read.format("delta").load(str(tmp_path / "lake" / "warehouse" / "silver.db" / "site_events"))
        rows = beeline_rows(f"jdbc:hive2://127.0.0.1:{port}/default", "SELECT count(*) AS n FROM silver.site_events")
        assert rows == [["n"], [str(written.count())]]
        # the metastore's own tables are in PostgreSQL
        assert "site_events" in pg.psql("auditlake_metastore", 'SELECT "TBL_NAME" FROM "TBLS";')
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
