"""The analysts' Thrift server: a process of its own that can reach the masked analyst tables and
nothing else. Started by ``auditlake serve`` (role analyst, pipelines/serving/thrift.py), which runs it as
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

Why analysts cannot harm each other (pipelines/analyst/guard.py): every statement of an analyst's
session passes a read-only check inside the server, and its time, result size, threads and task
slots are bounded. The views are the server's own: re-made when they differ from the catalogue.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from py4j.protocol import Py4JError
from pyspark.sql import SparkSession

from pipelines.analyst.guard import EXTENSION_CLASS
from pipelines.analyst.publish import CATALOG_FILE, catalog_text
from pipelines.lake import storage
from pipelines.lake.sql_text import sql_string

# the exit code and line of a server that will not start: its launcher reports the line and stops
REFUSED = 2
CANNOT_START = "serve: cannot start: "
# the exit code and line of a server whose JVM died under it (its launcher tells how, and starts it again)
JVM_ENDED = 3
JVM_ENDED_LINE = "serve: jvm ended: "
RESYNC_SECONDS = 30  # how often the catalog is looked at for tables added, removed or changed
# what the metastore's column comment holds (Hive's COLUMNS_V2.COMMENT): a longer one fails the view's
# CREATE after the metastore's retries (slowing every start and re-sync), and Spark then stores the
# view without its columns
COLUMN_COMMENT_MAX = 256
# how long a gateway that stopped answering is given to show its JVM's exit: a killed JVM closes its
# socket before its exit code can be read
JVM_EXIT_WAIT_SECONDS = 10


def column_comment(text: str) -> str:
    """``text`` as a view column's comment: cut to what the metastore holds, an ellipsis marking the cut."""
    return text if len(text) <= COLUMN_COMMENT_MAX else text[: COLUMN_COMMENT_MAX - 1] + "\u2026"


class Unreachable(Exception):
    """The analyst tables cannot be opened by this process's user: the message names the folder."""


def reachable_check(analyst_dir: str) -> None:
    """Raise ``Unreachable`` naming the first folder above (or at) the analyst tables this user cannot
    cross, or the catalogue it cannot read."""
    target = os.path.join(analyst_dir, CATALOG_FILE)
    path = os.path.abspath(analyst_dir)
    chain = [path, *[str(p) for p in Path(path).parents]][::-1]
    for folder in chain:
        if os.path.isdir(folder) and not os.access(folder, os.X_OK):
            raise Unreachable(
                f"the analysts' server runs as uid {os.getuid()}, who cannot cross {folder}: let other users "
                f"cross it (chmod o+x {folder}) or set analyst.dir outside it"
            )
    if not os.access(target, os.R_OK):
        raise Unreachable(
            f"the analysts' server runs as uid {os.getuid()}, who cannot read {target}: run `auditlake refresh` "
            "(it writes the analyst tables readable by others)"
        )


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
        "spark.sql.extensions": f"io.delta.sql.DeltaSparkSessionExtension,{EXTENSION_CLASS}",
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
        **spec["bounds_conf"],
    }
    builder = SparkSession.builder.appName("auditlake-analysts").master(f"local[{spec['task_slots']}]")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    # this session makes the views: the one the read-only check lets write (every analyst's is another)
    spark._jvm.auditlake.serve.ReadOnlyExtension.trust(spark._jsparkSession)
    return spark


def view_query(fields: list[str], path: str) -> str:
    """What a view runs: the analyst table's columns, as the metastore keeps the view's text."""
    return f"SELECT {', '.join(f'`{f}`' for f in fields)} FROM delta.`{path}`"


def views_differ(spark: SparkSession, schema: str, expected: dict[str, str]) -> str | None:
    """How the schema's views differ from what ``sync_views`` made (a view missing, added or changed),
    or None. Analysts cannot change them (the read-only check); this catches whatever else might."""
    present = {row["viewName"] for row in spark.sql(f"SHOW VIEWS IN `{schema}`").collect()}
    if present != set(expected):
        return f"views {', '.join(sorted(present ^ set(expected)))} missing or unknown"
    for name, query in sorted(expected.items()):
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED `{schema}`.`{name}`").collect()
        if next((r["data_type"] for r in rows if r["col_name"] == "View Text"), None) != query:
            return f"view {name} changed"
    return None


def sync_views(spark: SparkSession, tables_dir: str, catalog: dict) -> dict[str, str]:
    """One view per analyst table in the catalog's schema (columns and comments listed by
    GetColumns, which lists none for a Delta table); views of tables gone are dropped. -> each
    view's query, as the metastore keeps it."""
    schema = catalog["schema"]
    spark.sql(f"CREATE DATABASE IF NOT EXISTS `{schema}`")
    marts = catalog["marts"]
    made = {}
    for name, entry in sorted(marts.items()):
        path = storage.join(tables_dir, name)
        fields = spark.read.format("delta").load(path).schema.fieldNames()
        docs = entry.get("columns") or {}
        columns = ",\n  ".join(
            f"`{f}`" + (f" COMMENT {sql_string(column_comment(docs[f]))}" if docs.get(f) else "") for f in fields
        )
        comment = f"\nCOMMENT {sql_string(entry['description'])}" if entry.get("description") else ""
        made[name] = view_query(fields, path)
        spark.sql(f"CREATE OR REPLACE VIEW `{schema}`.`{name}` (\n  {columns}\n){comment}\nAS {made[name]}")
    for row in spark.sql(f"SHOW VIEWS IN `{schema}`").collect():
        if row["viewName"] not in marts:
            spark.sql(f"DROP VIEW IF EXISTS `{schema}`.`{row['viewName']}`")
    return made


def jvm_ended(is_stopped: Callable[[], bool], jvm) -> str | None:
    """How the server's JVM ended (its exit code, negative for a signal; ``stopped`` for a Spark context
    an error no statement caught has stopped, as ``is_stopped`` asks the JVM), or None while it serves."""
    if jvm.poll() is not None:
        return str(jvm.returncode)
    try:
        stopped = is_stopped()
    except (Py4JError, OSError):
        return jvm_exit(jvm)
    return "stopped" if stopped else None


def jvm_exit(jvm) -> str | None:
    """After a gateway call failed: the JVM's exit code once it has ended, or None when it still runs
    (a call can fail inside a live JVM: a heap a statement exhausted fails the gateway's thread too).
    py4j raises its own error for the call the JVM's death broke, and the socket's own error
    (``ConnectionRefusedError``) for every call after it."""
    try:
        return str(jvm.wait(timeout=JVM_EXIT_WAIT_SECONDS))
    except subprocess.TimeoutExpired:
        return None


def look_again(spark: SparkSession, spec: dict, text: str, views: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The catalogue read again: the views made again after a refresh changed it, or when they differ
    from what was made. -> the catalogue's text and the views now."""
    tables_dir = spec["tables_dir"]
    latest = catalog_text(spark, spec["analyst_dir"])
    if latest and latest != text:
        views = sync_views(spark, tables_dir, json.loads(latest))
        print(f"serve: {len(views)} analyst tables after a refresh", flush=True)
        return latest, views
    if (drift := views_differ(spark, json.loads(text)["schema"], views)) is not None:
        views = sync_views(spark, tables_dir, json.loads(text))
        print(f"serve: the analysts' views differed from the catalogue ({drift}): made again", flush=True)
    return text, views


def main() -> int:
    spec = json.loads(sys.stdin.read())
    readable = unreadable_check(spec["private"])
    if readable:
        print(
            f"{CANNOT_START}the analysts' server runs as uid {os.getuid()}, who can read {readable}: run it "
            "as a user the lake's folders shut out (serve.analyst_os_user; docs/operations.md)",
            file=sys.stderr,
        )
        return REFUSED
    try:
        reachable_check(spec["analyst_dir"])
    except Unreachable as exc:
        print(f"{CANNOT_START}{exc}", file=sys.stderr)
        return REFUSED
    from pipelines.serving.thrift import keystore_password, start_thrift_server

    spark = session(spec)
    tables_dir = spec["tables_dir"]
    with keystore_password(spark, spec.get("keystore_password")):  # from before the first catalog use
        text = catalog_text(spark, spec["analyst_dir"])
        views = sync_views(spark, tables_dir, json.loads(text))
        server = start_thrift_server(spark, spec["host"], spec["port"], spec["ldap"])
    schema = json.loads(text)["schema"]
    print(
        f"serve: analysts' server listening on {spec['host']}:{spec['port']} ({len(views)} tables in "
        f"{schema}, masked, read-only)",
        flush=True,
    )
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    jvm = spark.sparkContext._gateway.proc  # the JVM pyspark started: watched, so a death is told at once
    context_stopped = spark.sparkContext._jsc.sc().isStopped  # by an error no statement caught (a service thread's)
    next_sync = time.monotonic() + RESYNC_SECONDS
    while not stop.wait(1):
        if (ended := jvm_ended(context_stopped, jvm)) is not None:
            print(f"{JVM_ENDED_LINE}{ended}", flush=True)
            return JVM_ENDED
        if time.monotonic() < next_sync:
            continue
        next_sync = time.monotonic() + RESYNC_SECONDS
        try:
            text, views = look_again(spark, spec, text, views)
        except Exception as exc:  # noqa: BLE001 - whatever a dying JVM makes a call raise (pyspark wraps some)
            # the JVM died mid-call (told on the next turn, with how), or a call failed inside it (a heap a
            # statement exhausted can fail the gateway's thread too): the server itself goes on serving
            if jvm_exit(jvm) is None:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                print(f"serve: the views' check failed ({first}); trying again in {RESYNC_SECONDS} s", flush=True)
    server.stop()
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
