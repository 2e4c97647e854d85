"""Run with the clients' own Python (.cache/clients, impyla): sign in to the Thrift server with a
user name and password (SASL PLAIN, as Tableau's Spark SQL connector does with "Username and
Password"), over TLS when a CA certificate (PEM) is given; run one query and print its rows as JSON.
A refused sign-in exits 1 with the client's error on stderr.

    python sign_in.py HOST PORT USER PASSWORD CA_CERT_PEM_OR_- QUERY
"""

import json
import sys

from impala.dbapi import connect

host, port, user, password, ca_cert, query = sys.argv[1], int(sys.argv[2]), *sys.argv[3:7]
tls = {"use_ssl": True, "ca_cert": ca_cert} if ca_cert != "-" else {}
try:
    conn = connect(host=host, port=port, auth_mechanism="PLAIN", user=user, password=password, timeout=60, **tls)
    cursor = conn.cursor()
    cursor.execute(query)
    rows = [list(row) for row in cursor.fetchall()]
    conn.close()
except Exception as exc:  # the test reads what the client said
    print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
    raise SystemExit(1) from None
print(json.dumps(rows, default=str))
