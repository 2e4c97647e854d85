"""Run with the clients' own Python (.cache/clients, impyla): list a schema's tables with the
HiveServer2 metadata calls an ODBC/JDBC driver such as Tableau's makes (GetTables, then
GetColumns per table) and print {table: [[column, type, remarks], ...]} as JSON.

    python get_columns.py HOST PORT SCHEMA
"""

import json
import sys

from impala.dbapi import connect

host, port, schema = sys.argv[1], int(sys.argv[2]), sys.argv[3]
conn = connect(host=host, port=port, auth_mechanism="PLAIN", user="analyst", password="-", timeout=120)
cursor = conn.cursor()
cursor.get_tables(database_name=schema)  # GetTables
tables = sorted(row[2] for row in cursor.fetchall())
out = {}
for table in tables:
    operation = cursor.session.get_table_schema(table, schema)  # GetColumns
    out[table] = [[row[3], row[5], row[11]] for row in operation.fetch()]  # COLUMN_NAME, TYPE_NAME, REMARKS
    operation.close()
conn.close()
print(json.dumps(out))
