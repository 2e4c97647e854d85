"""The analyst schema: a view per gold mart, whose columns BI tools can list (Delta tables list
none through the Thrift server's GetColumns: delta-io/delta#662)."""

from __future__ import annotations

import json
import subprocess

import pytest

from pipelines.config import PROJECT_ROOT
from pipelines.gold.analyst_views import mart_docs
from pipelines.gold.compact import mart_tables
from pipelines.tables import tables

CLIENT_PYTHON = PROJECT_ROOT / ".cache" / "clients" / "bin" / "python"  # made by `make clients`
GET_COLUMNS = PROJECT_ROOT / "tests" / "clients" / "get_columns.py"


def test_every_mart_has_a_view_with_its_columns_and_dbt_docs(spark, gold_lake):
    t = tables(gold_lake[0])
    marts = mart_tables(spark, t.gold_schema)
    docs = mart_docs()
    assert set(marts) == set(docs)  # every documented mart was built
    for name in marts:
        view = spark.table(t.analyst(name))
        mart = spark.table(t.gold(name))
        assert [(f.name, f.dataType) for f in view.schema] == [(f.name, f.dataType) for f in mart.schema], name
        comments = {r["col_name"]: r["comment"] for r in spark.sql(f"DESCRIBE TABLE {t.analyst(name)}").collect()}
        documented = {c: d for c, d in docs[name][1].items() if d}
        assert {c: comments.get(c) for c in documented} == documented, name
    assert spark.table(t.analyst("fct_logins")).count() == spark.table(t.gold("fct_logins")).count() > 0


@pytest.mark.subprocess
def test_an_odbc_style_client_lists_every_analyst_views_columns(spark, cfg, gold_lake):
    """impyla (the metadata calls of an ODBC driver) on the Spark Thrift Server: GetTables finds a
    view per mart, GetColumns returns each one's columns with types and dbt's descriptions."""
    from pipelines.serve import start_thrift_server

    assert CLIENT_PYTHON.exists(), f"{CLIENT_PYTHON} missing: `make clients` installs the test clients"
    t = tables(gold_lake[0])
    server = start_thrift_server(spark, cfg)
    try:
        proc = subprocess.run(
            [str(CLIENT_PYTHON), str(GET_COLUMNS), cfg.get("serve.host"), str(cfg.get("serve.port")), t.analyst_schema],
            capture_output=True, text=True, timeout=600,
        )
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    listed = json.loads(proc.stdout)
    marts = mart_tables(spark, t.gold_schema)
    assert sorted(listed) == marts
    for name in marts:
        fields = spark.table(t.gold(name)).schema.fields
        assert [c[0] for c in listed[name]] == [f.name for f in fields], name
        assert all(c[1] for c in listed[name]), f"{name}: a column without a type"
    remarks = {c[0]: c[2] for c in listed["fct_logins"]}
    assert remarks["event_id"] == "The silver event this row came from."
