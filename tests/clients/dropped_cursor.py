"""impyla's dropped cursors, shown against any HiveServer2 (run with the clients' Python, .cache/clients):

    .cache/clients/bin/python tests/clients/dropped_cursor.py HOST PORT [STATEMENTS]

One connection, a new cursor per statement, the previous one dropped without ``close()``, as a
script or notebook often does. impyla (0.24) keeps a cursor in a reference cycle, so it is freed by
Python's cycle collector, whenever an allocation triggers it, and its ``__del__`` then sends
CloseOperation and CloseSession on the connection: often while another cursor's call on that same
connection waits for its reply. The replies cross, and a statement fails with ``KeyError: None``,
``'NoneType' object has no attribute 'columns'``, ``TypeError: object of type 'NoneType' has no len()``
or a read timeout (20 s here, for a statement the server answers at once), the server having
answered. Prints each statement that failed and how many finalizers ran inside another call; exits 1
when a statement failed. ``cursor.close()`` each time, or one cursor per connection, and none fails.
"""

import sys
import time
import traceback

from impala import hiveserver2
from impala.dbapi import connect

host, port = sys.argv[1], int(sys.argv[2])
count = int(sys.argv[3]) if len(sys.argv) > 3 else 200
finalizer = hiveserver2.HiveServer2Cursor.__del__
inside = []


def watched(cursor):
    # the frames of the call this finalizer interrupted, if any: a reply being read on the connection
    calls = [f.name for f in traceback.extract_stack()[:-1] if f.name == "_rpc" or f.name.startswith("recv_")]
    if calls:
        inside.append(calls)
    finalizer(cursor)


hiveserver2.HiveServer2Cursor.__del__ = watched


def _connect():
    return connect(host=host, port=port, auth_mechanism="PLAIN", user="probe", password="-", timeout=20)


conn, failed = _connect(), 0
for turn in range(count):
    started = time.monotonic()
    try:
        cursor = conn.cursor()  # the previous cursor is dropped here, never closed
        cursor.execute("SELECT 1")
        cursor.fetchall()
    except Exception as exc:
        failed += 1
        print(f"statement {turn}: {type(exc).__name__}: {exc} after {time.monotonic() - started:.1f} s", flush=True)
        conn = _connect()
reading = sum(any(c.startswith("recv_") for c in calls) for calls in inside)
print(f"{count} statements, {failed} failed; {len(inside)} finalizers inside another call, {reading} reading its reply")
sys.exit(1 if failed else 0)
