"""Run with the clients' own Python (.cache/clients, impyla): sign in to the Thrift server as a
user, run one query and print its rows as JSON.

    python query_as.py HOST PORT USER QUERY
"""

import json
import sys

from impala.dbapi import connect

host, port, user, query = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
conn = connect(host=host, port=port, auth_mechanism="PLAIN", user=user, password="-", timeout=120)
cursor = conn.cursor()
cursor.execute(query)
print(json.dumps([list(row) for row in cursor.fetchall()], default=str))
conn.close()
