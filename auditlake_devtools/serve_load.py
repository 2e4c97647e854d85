"""Analysts' sessions against a Thrift server, for ``auditlake bench --layer serve``: run with the
clients' own Python (``.cache/clients``, impyla: the calls BI tools make), not the project's.
Reads a JSON job on stdin:

    {"host", "port", "sessions", "seconds", "queries": [...], "abusive": [...], "mode", "schema"}

``sessions`` ordinary clients, each a thread, run ``queries`` round and round for ``seconds``, as
``mode`` says (default ``session``):

* ``session``: one connection and session per client, kept for the whole run;
* ``per_query``: a connection and session of its own for each statement, closed after it;
* ``dropped``: a connection and session for each statement, never closed: dropped with the process
  at its end, as a BI tool or a killed script leaves them (the server reclaims them when idle);
* ``metadata``: a connection and session for each statement, closed after it, which first lists
  ``schema``'s tables (GetTables) and one table's columns (GetColumns), as an ODBC driver does.

With ``abusive``, one more session runs those statements over and over meanwhile (the statements it
finished in that time are reported).
Prints {"ordinary": [{"seconds", "ok", "error"}], "abusive": [...], "wall": s} as JSON: a statement's
seconds count from its connection's opening in the modes that open one per statement.

The dropped connections stay referenced until the process ends (``os._exit``): impyla's cursor,
freed by Python's cycle collector, closes its operation and session from ``__del__`` on whatever
thread the collector runs, which can cross another call's replies on that connection (a client bug:
docs/operations.md), and would count as the server's error.
"""

import json
import os
import sys
import threading
import time

from impala.dbapi import connect

job = json.load(sys.stdin)


def _connect():
    return connect(host=job["host"], port=job["port"], auth_mechanism="PLAIN", user="bench", password="-", timeout=600)


def _run(statements: list[str], until: float, out: list, once_each: bool = False) -> None:
    conn = _connect()
    cursor = conn.cursor()
    turn = 0
    while time.monotonic() < until:
        statement = statements[turn % len(statements)]
        turn += 1
        started = time.monotonic()
        try:
            cursor.execute(statement)
            if cursor.description:
                cursor.fetchall()
            out.append({"seconds": time.monotonic() - started, "ok": True})
        except Exception as exc:  # the bench counts it
            out.append({"seconds": time.monotonic() - started, "ok": False, "error": _error(exc)})
            try:
                cursor.close()
            except Exception:
                pass
            conn = _connect()
            cursor = conn.cursor()
        if once_each and turn >= len(statements):
            break
    conn.close()


def _error(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


def _run_per_query(statements: list[str], until: float, out: list, mode: str, dropped: list) -> None:
    """A connection and session per statement (``per_query``, ``dropped``, ``metadata``)."""
    turn = 0
    tables: list[str] = []
    while time.monotonic() < until:
        statement = statements[turn % len(statements)]
        turn += 1
        started = time.monotonic()
        conn = cursor = None
        try:
            conn = _connect()
            cursor = conn.cursor()
            if mode == "metadata":
                cursor.get_tables(database_name=job["schema"])  # GetTables
                tables = sorted(row[2] for row in cursor.fetchall()) or tables
                if tables:
                    cursor.get_table_schema(tables[turn % len(tables)], job["schema"])  # GetColumns
            cursor.execute(statement)
            if cursor.description:
                cursor.fetchall()
            out.append({"seconds": time.monotonic() - started, "ok": True})
        except Exception as exc:  # the bench counts it
            out.append({"seconds": time.monotonic() - started, "ok": False, "error": _error(exc)})
        if mode == "dropped":
            dropped.append((conn, cursor))
            continue
        for thing in (cursor, conn):
            try:
                if thing is not None:
                    thing.close()
            except Exception:
                pass


started = time.monotonic()
until = started + job["seconds"]
ordinary: list[dict] = []
abusive: list[dict] = []
mode = job.get("mode", "session")
dropped: list = []  # held until the process ends
if mode == "session":
    threads = [threading.Thread(target=_run, args=(job["queries"], until, ordinary)) for _ in range(job["sessions"])]
else:
    threads = [
        threading.Thread(target=_run_per_query, args=(job["queries"], until, ordinary, mode, dropped))
        for _ in range(job["sessions"])
    ]
for thread in threads:
    thread.start()
if job.get("abusive"):  # not waited for: its statement in flight at the end is dropped with its connection
    threading.Thread(target=_run, args=(job["abusive"], until, abusive), daemon=True).start()
for thread in threads:
    thread.join()
print(json.dumps({"ordinary": ordinary, "abusive": list(abusive), "wall": time.monotonic() - started}))
sys.stdout.flush()
os._exit(0)  # the abusive session's thread may still wait on the server; the dropped are dropped
