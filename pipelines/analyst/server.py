"""The analysts' Thrift server: a process of its own that can reach the masked analyst tables and
nothing else. Started by ``auditlake serve`` (role analyst, pipelines/serve.py), which runs it as
an OS user who cannot read the lake's files and hands it its settings on standard input:

    python -m pipelines.analyst.server < spec.json

Why a process of its own: Spark has no authorization, and a Thrift session can read any file its
process can (``delta.`path```, ``CREATE TABLE ... LOCATION``), call static Java methods
(``reflect``) and read every setting of its session. So this process has its own throwaway
metastore (one view per analyst table, made from ``catalog.json`` at start and again when it
changes), runs as a user the lake's folders shut out, starts from an environment with no secret
in it, and is never given the pseudonym key. The one secret it needs, the TLS keystore's password,
is a JVM system property only while the server opens its TLS socket: afterwards no SQL setting,
JVM system property, environment variable or command-line argument holds it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading

from pyspark.sql import SparkSession

from pipelines import storage
from pipelines.analyst.publish import catalog_text
from pipelines.sql import sql_string

RESYNC_SECONDS = 30  # how often the catalog is looked at for tables added, removed or changed
# what the metastore's column comment holds (Hive's COLUMNS_V2.COMMENT): a longer one fails the view's
# CREATE after ten retries two seconds apart (20 s per view, at every start and re-sync), and Spark then
# stores the view without its columns
COLUMN_COMMENT_MAX = 256


def column_comment(text: str) -> str:
    """``text`` as a view column's comment: cut to what the metastore holds, an ellipsis marking the cut."""
    return text if len(text) <= COLUMN_COMMENT_MAX else text[: COLUMN_COMMENT_MAX - 1] + "\u2026"


def unreadable_check(private: list[str]) -> str | None:
    """The first of the lake's private folders this process can open, or None."""
    for path in private:
        if os.path.exists(path) and os.access(path, os.R_OK | os.X_OK):
            return path
    return None


def session(spec: dict) -> SparkSession:
    state = spec["state_dir"]
    jars = spec["jars"]
    conf = {
        "spark.jars": ",".join(jars),
        "spark.driver.extraClassPath": ":".join(jars),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": f"{state}/warehouse",
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={state}/metastore_db;create=true",
        "spark.driver.extraJavaOptions": (
            f"-Dderby.system.home={state} -Dlog4j2.configurationFile={spec['log4j']} -Dauditlake.log.dir={state}/logs"
        ),
        "spark.local.dir": f"{state}/tmp",
        "spark.driver.memory": spec["driver_memory"],
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # ${env:...}, ${system:...} and ${spark:...} in a statement would read this process's settings
        "spark.sql.variable.substitute": "false",
        "spark.hadoop.hive.server2.thrift.bind.host": spec["host"],
        "spark.hadoop.hive.server2.thrift.port": str(spec["port"]),
        **spec["server_conf"],
    }
    builder = SparkSession.builder.appName("auditlake-analysts").master("local[2]")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def sync_views(spark: SparkSession, tables_dir: str, catalog: dict) -> int:
    """One view per analyst table in the catalog's schema (columns and comments listed by
    GetColumns, which lists none for a Delta table); views of tables gone are dropped. -> views."""
    schema = catalog["schema"]
    spark.sql(f"CREATE DATABASE IF NOT EXISTS `{schema}`")
    marts = catalog["marts"]
    for name, entry in sorted(marts.items()):
        path = storage.join(tables_dir, name)
        fields = spark.read.format("delta").load(path).schema.fieldNames()
        docs = entry.get("columns") or {}
        columns = ",\n  ".join(
            f"`{f}`" + (f" COMMENT {sql_string(column_comment(docs[f]))}" if docs.get(f) else "") for f in fields
        )
        comment = f"\nCOMMENT {sql_string(entry['description'])}" if entry.get("description") else ""
        selected = ", ".join(f"`{f}`" for f in fields)
        spark.sql(
            f"CREATE OR REPLACE VIEW `{schema}`.`{name}` (\n  {columns}\n){comment}\n"
            f"AS SELECT {selected} FROM delta.`{path}`"
        )
    for row in spark.sql(f"SHOW VIEWS IN `{schema}`").collect():
        if row["viewName"] not in marts:
            spark.sql(f"DROP VIEW IF EXISTS `{schema}`.`{row['viewName']}`")
    return len(marts)


def main() -> int:
    spec = json.loads(sys.stdin.read())
    readable = unreadable_check(spec["private"])
    if readable:
        print(
            f"serve: refused: the analysts' server runs as uid {os.getuid()}, who can read {readable}: run it "
            "as a user the lake's folders shut out (serve.analyst_os_user; docs/operations.md)",
            file=sys.stderr,
        )
        return 2
    from pipelines.serve import keystore_password, start_thrift_server

    spark = session(spec)
    tables_dir = spec["tables_dir"]
    with keystore_password(spark, spec.get("keystore_password")):  # from before the first catalog use
        text = catalog_text(spark, spec["analyst_dir"])
        views = sync_views(spark, tables_dir, json.loads(text))
        server = start_thrift_server(spark, spec["host"], spec["port"], spec["ldap"])
    print(
        f"serve: analysts' server listening on {spec['host']}:{spec['port']} ({views} tables in "
        f"{json.loads(text)['schema']}, masked)",
        flush=True,
    )
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(RESYNC_SECONDS):
        latest = catalog_text(spark, spec["analyst_dir"])
        if latest and latest != text:
            text = latest
            views = sync_views(spark, tables_dir, json.loads(text))
            print(f"serve: {views} analyst tables after a refresh", flush=True)
    server.stop()
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
