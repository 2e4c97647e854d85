"""The analyst schema: a view per gold mart, whose columns BI tools can list (Delta tables list
none through the Thrift server's GetColumns: delta-io/delta#662)."""

from __future__ import annotations

import json
import subprocess

import pytest

from pipelines.config import PROJECT_ROOT, load_config
from pipelines.gold.analyst_views import analyst_views_current, mart_docs, publish_analyst_views
from pipelines.gold.compact import mart_tables
from pipelines.tables import tables
from tests.lake import variant_environ

CLIENT_PYTHON = PROJECT_ROOT / ".cache" / "clients" / "bin" / "python"  # made by `make clients`
GET_COLUMNS = PROJECT_ROOT / "tests" / "clients" / "get_columns.py"
QUERY_AS = PROJECT_ROOT / "tests" / "clients" / "query_as.py"
# Column names that always hold a person's data: a mart column so named must be tagged PII.
PERSONAL = ("email", "ip_address", "user_agent", "user_name", "username", "owner_name")


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


def test_every_personal_column_of_a_mart_is_tagged_pii(spark, gold_lake):
    t = tables(gold_lake[0])
    docs = mart_docs()
    untagged = [
        f"{name}.{field}" for name in mart_tables(spark, t.gold_schema)
        for field in spark.table(t.gold(name)).schema.fieldNames()
        if any(marker in field for marker in PERSONAL) and field != "ip_address_type" and field not in docs[name].pii
    ]
    assert untagged == []
    assert all(docs[name].pii <= set(spark.table(t.gold(name)).schema.fieldNames()) for name in docs)


def test_pii_reads_as_a_stable_pseudonym_that_keeps_counts_and_joins(spark, gold_lake):
    """This session's user is no auditor (gold.pii_auditors is empty in the test conf)."""
    t = tables(gold_lake[0])
    for name, doc in mart_docs().items():
        for column in sorted(doc.pii):
            figures = f"SELECT count(DISTINCT `{column}`) AS d, count(`{column}`) AS n, " \
                      f"count_if(`{column}` NOT LIKE 'pii:%') AS unmasked FROM "
            masked, clear = (spark.sql(figures + source).first() for source in (t.analyst(name), t.gold(name)))
            assert masked["unmasked"] == 0, f"{name}.{column}"
            # one pseudonym per value: as many distinct values, as many non-NULL ones
            assert (masked["d"], masked["n"]) == (clear["d"], clear["n"]), f"{name}.{column}"
    # the same person has the same pseudonym in two marts: a join on the masked e-mail still matches
    joined = spark.sql(
        f"SELECT count(*) AS n FROM (SELECT DISTINCT user_email FROM {t.analyst('fct_logins')}) l "
        f"JOIN (SELECT DISTINCT user_email FROM {t.analyst('dim_users')}) u USING (user_email)"
    ).first()["n"]
    clear = spark.sql(
        f"SELECT count(*) AS n FROM (SELECT DISTINCT user_email FROM {t.gold('fct_logins')}) l "
        f"JOIN (SELECT DISTINCT user_email FROM {t.gold('dim_users')}) u USING (user_email)"
    ).first()["n"]
    assert joined == clear > 0


@pytest.mark.subprocess
def test_an_ordinary_user_reads_masked_pii_and_an_auditor_reads_it_in_clear(spark, cfg, gold_lake, lake_dir):
    """Two users sign in to the Thrift server (impyla) and read the same view: the user named in
    gold.pii_auditors sees the e-mail addresses, the other one their pseudonyms."""
    from pipelines.serve import start_thrift_server

    gold_cfg = gold_lake[0]
    t = tables(gold_cfg)
    environ = {**variant_environ(lake_dir, "gold"), "AUDITLAKE__GOLD__PII_AUDITORS": "[auditor]"}
    audited = load_config("test", environ=environ)
    assert not analyst_views_current(spark, audited)  # the views were made for no auditor
    publish_analyst_views(spark, audited, log=lambda _m: None)
    assert analyst_views_current(spark, audited) and not analyst_views_current(spark, gold_cfg)
    query = f"SELECT user_email FROM {t.analyst('fct_logins')} WHERE user_email IS NOT NULL ORDER BY event_id LIMIT 20"
    server = start_thrift_server(spark, cfg)
    try:
        seen = {}
        for user in ("analyst", "auditor"):
            proc = subprocess.run(
                [str(CLIENT_PYTHON), str(QUERY_AS), cfg.get("serve.host"), str(cfg.get("serve.port")), user, query],
                capture_output=True, text=True, timeout=300,
            )
            assert proc.returncode == 0, proc.stderr[-3000:]
            seen[user] = [row[0] for row in json.loads(proc.stdout)]
    finally:
        server.stop()
        publish_analyst_views(spark, gold_cfg, log=lambda _m: None)  # back to the shared lake's views
    clear = [r[0] for r in spark.sql(query.replace(t.analyst("fct_logins"), t.gold("fct_logins"))).collect()]
    assert seen["auditor"] == clear and all("@" in e for e in clear)
    assert len(seen["analyst"]) == len(clear) and all(e.startswith("pii:") for e in seen["analyst"])
    assert len(set(seen["analyst"])) == len(set(clear))
