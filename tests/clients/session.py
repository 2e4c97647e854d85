"""Run with the clients' own Python (.cache/clients, impyla): one signed-in session on a Thrift
server running a list of statements, as an analyst would type them, and (optionally) the metadata
calls an ODBC driver makes (GetTables, then GetColumns per table). Reads a JSON job on stdin:

    {"host", "port", "user", "password", "ca_cert" (PEM path or null), "statements": [...],
     "columns_of": schema or null, "configuration": the session's settings as a client sends them}

and prints {"results": [{"statement", "ok", "rows" | "error", "seconds"}], "columns": {table: [[name,
type, remarks]]}} as JSON. A statement that fails is recorded and the session goes on (a new connection
when the old one broke). A refused sign-in exits 1 with the client's error on stderr.
"""

import json
import sys
import time

from impala.dbapi import connect

job = json.load(sys.stdin)
tls = {"use_ssl": True, "ca_cert": job["ca_cert"]} if job.get("ca_cert") else {}


def session():
    return connect(
        host=job["host"],
        port=job["port"],
        auth_mechanism="PLAIN",
        user=job["user"],
        password=job.get("password") or "-",
        timeout=120,
        **tls,
    )


try:
    conn = session()
    cursor = conn.cursor(configuration=job.get("configuration"))
except Exception as exc:  # the test reads what the client said
    print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
    raise SystemExit(1) from None
results = []
for statement in job.get("statements") or []:
    started = time.monotonic()
    try:
        cursor.execute(statement)
        try:
            rows = [list(row) for row in cursor.fetchall()] if cursor.description else []
        except IndexError:  # impyla on an empty result that declares a column (ADD JAR, CREATE FUNCTION)
            rows = []
        results.append({"statement": statement, "ok": True, "rows": rows, "seconds": time.monotonic() - started})
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        results.append({"statement": statement, "ok": False, "error": error, "seconds": time.monotonic() - started})
        try:
            cursor.close()
        except Exception:
            conn = session()
        cursor = conn.cursor()
columns = {}
if job.get("columns_of"):
    cursor.get_tables(database_name=job["columns_of"])  # GetTables
    for table in sorted(row[2] for row in cursor.fetchall()):
        operation = cursor.session.get_table_schema(table, job["columns_of"])  # GetColumns
        columns[table] = [[row[3], row[5], row[11]] for row in operation.fetch()]  # COLUMN_NAME, TYPE_NAME, REMARKS
        operation.close()
conn.close()
print(json.dumps({"results": results, "columns": columns}, default=str))
