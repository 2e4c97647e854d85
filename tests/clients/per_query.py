"""Run with the clients' own Python (.cache/clients, impyla): clients as BI tools and scripts behave, a
new connection and session for each statement, most of them never closed. Reads a JSON job on stdin:

    {"host", "port", "user", "password", "ca_cert" (PEM path or null), "statements": [...],
     "processes": N, "per_process": M, "close_every": K, "timeout": seconds, "idle_after": seconds}

Each of N processes first opens one session it leaves idle on an open connection, then runs M
statements (``statements`` round and round), each on a connection and session of its own, closing
every K-th and abandoning the others; then, once its idle session has been idle ``idle_after``
seconds, it tries it again. Prints
{"results": [{"ok", "seconds", "error"?}], "idle": [the idle sessions' outcome: "answered" or the
error]} as JSON.

The abandoned connections and cursors stay referenced until the process ends (``os._exit``): impyla's
cursor is freed by Python's cycle collector, which can run its ``__del__`` (a CloseOperation and a
CloseSession on the cursor's connection) in the middle of another call on that same connection. The
replies then cross, and a statement fails with ``KeyError: None``, ``'NoneType' object has no attribute
'columns'`` or waits for the client's read timeout, the server having answered (docs/operations.md).
"""

import json
import multiprocessing
import os
import sys
import time

from impala.dbapi import connect

job = json.load(sys.stdin)
tls = {"use_ssl": True, "ca_cert": job["ca_cert"]} if job.get("ca_cert") else {}


def _connect():
    return connect(
        host=job["host"],
        port=job["port"],
        auth_mechanism="PLAIN",
        user=job["user"],
        password=job.get("password") or "-",
        timeout=job["timeout"],
        **tls,
    )


def _client(index: int, out) -> None:
    abandoned = []  # held until the process ends
    try:
        out.put(_statements(index, abandoned))
    except Exception as exc:  # the idle session would not open: the test reads why
        out.put({"results": [{"ok": False, "seconds": 0.0, "error": f"{type(exc).__name__}: {exc}"[:300]}], "idle": ""})
    out.close()
    out.join_thread()
    os._exit(0)  # the abandoned connections are dropped with the process, never closed


def _statements(index: int, abandoned: list) -> dict:
    idle_conn = _connect()
    idle = idle_conn.cursor()
    idle.execute("SELECT 1")
    idle.fetchall()
    idle_since = time.monotonic()
    results = []
    statements = job["statements"]
    for turn in range(job["per_process"]):
        started = time.monotonic()
        try:
            conn = _connect()
            cursor = conn.cursor()
            cursor.execute(statements[(index + turn) % len(statements)])
            cursor.fetchall()
            if turn % job["close_every"] == 0:
                cursor.close()
                conn.close()
            else:
                abandoned.append((conn, cursor))
            results.append({"ok": True, "seconds": time.monotonic() - started})
        except Exception as exc:  # the test reads what the client said
            error = f"{type(exc).__name__}: {exc}"[:300]
            results.append({"ok": False, "seconds": time.monotonic() - started, "error": error})
    time.sleep(max(0.0, idle_since + job["idle_after"] - time.monotonic()))
    try:
        idle.execute("SELECT 1")
        idle.fetchall()
        outcome = "answered"
    except Exception as exc:
        outcome = f"{type(exc).__name__}: {exc}"[:300]
    return {"results": results, "idle": outcome}


if __name__ == "__main__":
    queue = multiprocessing.Queue()
    clients = [multiprocessing.Process(target=_client, args=(i, queue)) for i in range(job["processes"])]
    for client in clients:
        client.start()
    reports = [queue.get(timeout=900) for _ in clients]
    for client in clients:
        client.join()
    results = [result for report in reports for result in report["results"]]
    print(json.dumps({"results": results, "idle": [report["idle"] for report in reports]}))
