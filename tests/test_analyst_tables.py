"""The analysts' copy of gold (pipelines/analyst/publish.py): one Delta table per mart, its personal
columns masked in the files with keyed pseudonyms; and the check that keeps the marts' tags
complete: a mart column holding a value silver's catalogue calls personal must be tagged."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from pipelines.analyst.publish import (
    CATALOG_FILE,
    mart_docs,
    masked_columns,
    masked_sql,
    publish_analyst_tables,
    tables_location,
)
from pipelines.analyst.server import COLUMN_COMMENT_MAX, sync_views
from pipelines.config.settings import Settings
from pipelines.gold.compact import mart_tables
from pipelines.lake import storage
from pipelines.lake.table_names import tables
from pipelines.personal_data import MASKED_ROLES, NONE, PERSON_KEY, RAW, catalogue
from pipelines.personal_data.pseudonym import pseudonym
from tests.lake import clear_person_keys, fingerprints


def _copy(spark, cfg, name: str) -> DataFrame:
    return spark.read.format("delta").load(storage.join(tables_location(cfg), name))


def test_every_mart_has_a_masked_copy_with_its_rows_columns_and_docs(spark, gold_lake):
    cfg = gold_lake[0]
    t = tables(cfg)
    marts = mart_tables(spark, t.gold_schema)
    docs = mart_docs()
    assert set(marts) == set(docs)  # every documented mart was built
    catalog = json.loads(storage.read_text(spark, storage.join(cfg.analyst_dir, CATALOG_FILE)))
    assert sorted(catalog["marts"]) == marts
    key = os.environ["AUDITLAKE_PSEUDONYM_KEY"].encode()
    assert os.environ["AUDITLAKE_PSEUDONYM_KEY"] not in json.dumps(catalog)
    copies, expected, masked_values, clear_values = {}, {}, [], []
    for name in marts:
        mart, copy = spark.table(t.gold(name)), _copy(spark, cfg, name)
        masked, roles = masked_columns(docs[name]), docs[name].personal
        # a masked column is text (an integer user id too), every other one the mart's type
        assert [(f.name, f.dataType) for f in copy.schema] == [
            (f.name, StringType() if f.name in masked else f.dataType) for f in mart.schema
        ], name
        documented = {c: d for c, d in docs[name].columns.items() if d}
        assert {f.name: f.metadata.get("comment") for f in copy.schema if f.name in documented} == documented, name
        assert sorted(masked) == catalog["marts"][name]["masked"]
        # row for row the mart masked, whether the copy was made whole or followed the mart's changes
        copies[name] = copy
        expected[name] = mart.selectExpr(
            *[f"{masked_sql(c, roles[c], key)} AS `{c}`" if c in masked else f"`{c}`" for c in mart.columns]
        )
        for c in sorted(masked):
            clear = F.col(f"`{c}`").cast("string")
            masked_values.append(copy.select(F.lit(f"{name}.{c}").alias("column"), F.col(f"`{c}`").alias("value")))
            clear_values.append(
                mart.select(
                    F.lit(f"{name}.{c}").alias("column"),
                    (F.lower(clear) if roles[c] == PERSON_KEY else clear).alias("value"),
                )
            )
    # fingerprints of every copy and every masked mart, then the masked columns' values, in four jobs, not
    # three per mart (tests/lake.py: CI time, issue 30)
    assert fingerprints(copies) == fingerprints(expected)

    def values(frames: list[DataFrame]) -> dict[str, tuple]:
        figures = reduce(DataFrame.unionByName, frames).groupBy("column")
        rows = figures.agg(F.countDistinct("value"), F.expr("count_if(value NOT LIKE 'pii:%')")).collect()
        return {r[0]: (r[1], r[2]) for r in rows}

    masked_figures, clear_figures = values(masked_values), values(clear_values)
    assert {c: unmasked for c, (_, unmasked) in masked_figures.items() if unmasked} == {}, "unmasked values"
    # the pseudonym neither lost nor merged values
    assert {c: d for c, (d, _) in masked_figures.items()} == {c: d for c, (d, _) in clear_figures.items()}
    # the second delivery's new events (the tenant's) were appended to the event marts' copies, not copied whole
    appended = {
        name
        for name in marts  # its last commits: the append, and perhaps a compaction after it
        if any(
            c["operationParameters"].get("mode") == "Append"
            for c in spark.sql(f"DESCRIBE HISTORY delta.`{storage.join(tables_location(cfg), name)}` LIMIT 2").collect()
        )
    }
    assert {"fct_logins", "fct_tenant_security_changes"} <= appended, appended
    # the same value reads the same in every table (joins still join), and it is the keyed one
    email = spark.table(t.gold("fct_logins")).where("user_email IS NOT NULL").select("user_email").first()[0]
    assert _copy(spark, cfg, "fct_logins").where(F.col("user_email") == pseudonym(email, key)).count() > 0
    joined = (
        _copy(spark, cfg, "fct_logins")
        .select("user_email")
        .distinct()
        .join(_copy(spark, cfg, "dim_users").select("user_email").distinct(), "user_email")
        .count()
    )
    clear = (
        spark.table(t.gold("fct_logins"))
        .select("user_email")
        .distinct()
        .join(spark.table(t.gold("dim_users")).select("user_email").distinct(), "user_email")
        .count()
    )
    assert joined == clear > 0


def test_a_publish_with_nothing_new_copies_nothing_and_a_new_key_copies_everything(spark, gold_lake):
    cfg = gold_lake[0]
    publish_analyst_tables(spark, cfg, log=lambda _m: None)  # the copies as current as the marts (whatever ran before)
    quiet = []
    assert publish_analyst_tables(spark, cfg, log=quiet.append) == []
    said = (
        f"gold: 0 of {len(mart_docs())} analyst tables brought up to date in {tables_location(cfg)} "
        f"(0 by their mart's new rows, 0 copied whole; "
        f"{sum(len(masked_columns(d)) for d in mart_docs().values())} personal columns as keyed pseudonyms) in "
    )
    assert len(quiet) == 1 and quiet[0].startswith(said) and quiet[0].endswith("s"), quiet
    values = {**cfg.values, "analyst": {**cfg.get("analyst"), "pseudonym_key_env": "ROTATED_KEY"}}
    rotated = replace(cfg, values=values, settings=Settings.model_validate(values))
    # the shared lake's copies keep the rotated key afterwards: the tests after this one need no key
    os.environ["ROTATED_KEY"] = "r" * 40
    try:
        assert len(publish_analyst_tables(spark, rotated, log=quiet.append)) == len(mart_docs())
    finally:
        del os.environ["ROTATED_KEY"]
    email = _copy(spark, cfg, "fct_logins").where("user_email IS NOT NULL").select("user_email").first()[0]
    clear = spark.table(tables(cfg).gold("fct_logins")).where("user_email IS NOT NULL").select("user_email")
    assert email in {pseudonym(r[0], b"r" * 40) for r in clear.collect()}


def _personal_values(spark, cfg) -> DataFrame:
    """Every value silver holds as a person's key, an e-mail, a name or a network trace (a by_event
    column's only on its events), but those it also holds where nothing personal is (a user named like
    a workbook, a group's LUID as a permission rule's grantee: such a value says nothing about a column).
    Raw text is left out: it is masked whole, and a part of it may be anything. One scan per silver
    table."""
    t = tables(cfg)
    sources = {"site": t.silver_events("site"), "tenant": t.silver_events("tenant"), "writeback": t.writeback_audit}
    roles = [r for r in MASKED_ROLES if r != RAW]
    personal, other = [], []
    for source, table in sources.items():
        frame = spark.table(table)
        text = {f.name for f in frame.schema.fields if isinstance(f.dataType, StringType)}
        mine, theirs = [F.col(c).cast("string") for c in catalogue().columns(source, *roles)], []
        for column in sorted(text & set(catalogue().columns(source, NONE))):
            events = [e for per_role in catalogue().by_event[source].get(column, {}).values() for e in per_role]
            on_person_events = F.col("event_type").isin(*events) if events else F.lit(False)
            mine.append(F.when(on_person_events, F.col(column)))
            theirs.append(F.when(~on_person_events, F.col(column)))
        for found, values in ((personal, mine), (other, theirs)):
            if values:
                found.append(frame.select(F.explode(F.array(*values)).alias("value")))
    other.append(spark.table(f"{t.silver_schema}.entity_groups_history").select(F.lower("luid").alias("value")))
    values = reduce(DataFrame.unionByName, personal).where("value IS NOT NULL AND length(value) > 3").distinct()
    return values.join(reduce(DataFrame.unionByName, other).distinct(), "value", "left_anti").cache()


def test_the_servers_views_list_each_column_with_its_description_as_the_metastore_holds_it(spark, gold_lake):
    """The analysts' server's views (``sync_views``, here on this session's own metastore): each column with
    its description as its comment. A description past what the metastore holds is cut to it, not refused
    ten times two seconds apart, at every start, and the view stored without its columns."""
    cfg = gold_lake[0]
    catalog = json.loads(storage.read_text(spark, storage.join(cfg.analyst_dir, CATALOG_FILE)))
    too_long = {
        f"{mart}.{column}": len(text)
        for mart, entry in catalog["marts"].items()
        for column, text in entry["columns"].items()
        if len(text) > COLUMN_COMMENT_MAX
    }
    assert too_long == {}, f"descriptions (dbt_project/models/marts) an analyst would see cut: {too_long}"
    name = "fct_logins"
    entry = catalog["marts"][name]
    column = next(iter(entry["columns"]))
    long = "x" * COLUMN_COMMENT_MAX + " and more"
    entry = {**entry, "columns": {**entry["columns"], column: long}}
    schema = "test_server_views"
    try:
        assert list(sync_views(spark, tables_location(cfg), {"schema": schema, "marts": {name: entry}})) == [name]
        listed = {c.name: c.description for c in spark.catalog.listColumns(f"{schema}.{name}")}
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {schema} CASCADE")
    assert list(listed) == _copy(spark, cfg, name).columns
    assert listed[column] == long[: COLUMN_COMMENT_MAX - 1] + "\u2026"
    assert {c: d for c, d in listed.items() if d and c != column} == {
        c: d for c, d in entry["columns"].items() if c != column
    }


def test_a_mart_column_holding_a_personal_value_is_tagged_with_a_masked_role(spark, gold_lake):
    """Data, not names: a mart column (string) that holds a value that silver's catalogue calls a person's
    key, an e-mail, a name or a network trace must carry meta {personal: <masked role>} in the marts' YAML."""
    cfg = gold_lake[0]
    t = tables(cfg)
    values = _personal_values(spark, cfg)
    assert values.count() > 100
    docs = mart_docs()
    untagged = {}
    for name in mart_tables(spark, t.gold_schema):
        mart = spark.table(t.gold(name))
        masked = masked_columns(docs[name])
        candidates = [f.name for f in mart.schema if isinstance(f.dataType, StringType) and f.name not in masked]
        if not candidates:
            continue
        stacked = mart.select(
            F.explode(
                F.array(*[F.struct(F.lit(c).alias("column"), F.col(c).alias("value")) for c in candidates])
            ).alias("cell")
        ).select("cell.*")
        hits = stacked.join(values, "value", "left_semi").groupBy("column").agg(F.min("value").alias("e"))
        untagged.update({f"{name}.{r['column']}": r["e"] for r in hits.collect()})  # column -> one value held
    values.unpersist()
    assert untagged == {}, f"mart columns holding personal values without meta {{personal: ...}}: {untagged}"


def test_the_analysts_tables_hold_no_person_luid_in_clear_and_still_join_on_it(spark, gold_lake):
    """No cell of any analysts' table (a text, an integer, an array's element) equals a person's LUID or
    user id that silver holds; the pseudonym is the same in every table, so a join of two copies on it
    gives the rows the same join of the marts gives."""
    cfg = gold_lake[0]
    copies = {name: _copy(spark, cfg, name) for name in mart_tables(spark, tables(cfg).gold_schema)}
    found = clear_person_keys(spark, cfg, copies)
    assert found == {}, f"person LUIDs in clear in the analysts' tables ({tables_location(cfg)}): {found}"
    # a sign-in joined to its user's role versions, on the pseudonymised (site, user) key, in copies and marts
    gold = tables(cfg).gold

    def joined(logins: DataFrame, users: DataFrame) -> int:
        return logins.join(users, ["site_luid", "user_luid"]).count()

    in_gold = joined(spark.table(gold("fct_logins")), spark.table(gold("dim_users")))
    assert in_gold > 0
    assert joined(_copy(spark, cfg, "fct_logins"), _copy(spark, cfg, "dim_users")) == in_gold
