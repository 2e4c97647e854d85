"""Analysts' sessions against a Thrift server, for ``auditlake bench --layer serve``: run with the
clients' own Python (``.cache/clients``, impyla: the calls BI tools make), not the project's.
Reads a JSON job on stdin:

    {"host", "port", "sessions", "seconds", "queries": [...], "abusive": [...]}

``sessions`` ordinary sessions, each on its own connection, run ``queries`` round and round for
``seconds``; with ``abusive``, one more session runs those statements over and over meanwhile (the
statements it finished in that time are reported).
Prints {"ordinary": [{"seconds", "ok", "error"}], "abusive": [...], "wall": s} as JSON.
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
            error = f"{type(exc).__name__}: {exc}"[:300]
            out.append({"seconds": time.monotonic() - started, "ok": False, "error": error})
            try:
                cursor.close()
            except Exception:
                pass
            conn = _connect()
            cursor = conn.cursor()
        if once_each and turn >= len(statements):
            break
    conn.close()


started = time.monotonic()
until = started + job["seconds"]
ordinary: list[dict] = []
abusive: list[dict] = []
threads = [threading.Thread(target=_run, args=(job["queries"], until, ordinary)) for _ in range(job["sessions"])]
for thread in threads:
    thread.start()
if job.get("abusive"):  # not waited for: its statement in flight at the end is dropped with its connection
    threading.Thread(target=_run, args=(job["abusive"], until, abusive), daemon=True).start()
for thread in threads:
    thread.join()
print(json.dumps({"ordinary": ordinary, "abusive": list(abusive), "wall": time.monotonic() - started}))
sys.stdout.flush()
os._exit(0)  # the abusive session's thread may still wait on the server
