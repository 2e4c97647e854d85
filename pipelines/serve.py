"""`auditlake serve`: the Spark Thrift Server (HiveThriftServer2, shipped with PySpark) over the
lakehouse, for JDBC/ODBC clients: beeline, BI tools, Tableau's Spark SQL connector.

The server runs inside the lakehouse's own SparkSession (``startWithContext``), so it sees the
same Delta catalog, warehouse and metastore as the refresh. With the embedded Derby metastore
it holds the metastore while it runs: stop it before a refresh (docs/operations.md).
"""

from __future__ import annotations

import signal
import socket
import threading
import time

from pyspark.sql import SparkSession

from pipelines.config import Config


def jdbc_url(cfg: Config) -> str:
    return f"jdbc:hive2://{cfg.get('serve.host')}:{cfg.get('serve.port')}/default"


def start_thrift_server(spark: SparkSession, cfg: Config, timeout: float = 120):
    """Start HiveThriftServer2 in this session's JVM and wait until it accepts connections;
    returns the server (call ``.stop()``). Host and port are part of the session's configuration
    (``serve.host``, ``serve.port``, set by ``spark_session``): the server reads them from the
    session's Hive client, which is fixed when the session first touches the metastore."""
    host, port = cfg.get("serve.host"), cfg.get("serve.port")
    server_class = spark._jvm.org.apache.spark.sql.hive.thriftserver.HiveThriftServer2
    server = server_class.startWithContext(spark._jsparkSession.sqlContext())
    # the listener starts on a thread of its own, after startWithContext returns
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, port), timeout=2).close()
            return server
        except OSError:
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"the Thrift server did not listen on {host}:{port} within {timeout:.0f}s") from None
            time.sleep(0.5)


def serve_forever(spark: SparkSession, cfg: Config, log=print) -> None:
    """Serve until SIGINT / SIGTERM, then stop the server and the session."""
    server = start_thrift_server(spark, cfg)
    log(f"serve: Spark Thrift Server listening on {jdbc_url(cfg)} (Ctrl-C to stop)")
    log(f"serve: try  beeline -u {jdbc_url(cfg)} -e 'SHOW TABLES IN {cfg.get('gold.schema')}'")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    log("serve: stopping")
    server.stop()
    spark.stop()


def beeline_rows(url: str, query: str, timeout: float = 300) -> list[list[str]]:
    """Run ``query`` with the beeline JDBC client shipped with PySpark; the CSV rows, header first."""
    import csv
    import os
    import subprocess
    from pathlib import Path

    import pyspark

    spark_home = Path(pyspark.__file__).parent
    proc = subprocess.run(
        [str(spark_home / "bin" / "beeline"), "-u", url, "--outputformat=csv2", "--silent=true", "-e", query],
        capture_output=True, text=True, timeout=timeout, env={**os.environ, "SPARK_HOME": str(spark_home)},
    )
    if proc.returncode != 0:
        raise RuntimeError(f"beeline failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    # beeline echoes its prompt before the first line: "0: jdbc:hive2://...> header"
    lines = [line.split("> ", 1)[-1] if line.startswith("0: jdbc:") else line for line in proc.stdout.splitlines()]
    return [row for row in csv.reader(line for line in lines if line.strip())]
