"""The analyst-facing schema: one view per gold mart, so BI tools see every column.

Delta keeps a table's schema in its transaction log, not in the metastore, so the Thrift
server's GetColumns (what Tableau's Spark SQL connector and other ODBC/JDBC tools call to list a
table's fields) returns nothing for a Delta table (delta-io/delta#662). A view's columns are in
the metastore. After each gold build, ``<analyst schema>.<mart>`` is (re)created as a view that
selects the mart's columns by name, with the descriptions of dbt's docs (the marts' schema YAML)
as column and view comments. dbt, time travel (``gold.<mart> VERSION AS OF n``) and the refresh
work on the Delta tables underneath as before.

The columns dbt's docs tag as PII (``meta: {pii: true}``) are masked in those views for every
user but the configured auditors (``gold.pii_auditors``): the Thrift server runs each statement
as the signed-in user, so ``current_user()`` in the view decides. The mask is a pseudonym, the
same for the same value in every view, so joins, distinct counts and group-bys still work.
Spark itself enforces nothing on the other schemas (docs/operations.md says what is and is not).
"""

from __future__ import annotations

from typing import NamedTuple

import yaml
from pyspark.sql import SparkSession

from pipelines.config import Config
from pipelines.delta_util import ensure_schema, table_names
from pipelines.gold.compact import mart_tables
from pipelines.gold.staging import DBT_DIR
from pipelines.sql import sql_string
from pipelines.tables import tables

MARTS_DIR = DBT_DIR / "models" / "marts"
# Records the auditors a view was made for, so a changed list re-creates the views.
AUDITORS_PROPERTY = "auditlake.pii_auditors"


class MartDoc(NamedTuple):
    description: str
    columns: dict[str, str]  # column -> description
    pii: frozenset[str]  # columns tagged meta: {pii: true}


def mart_docs() -> dict[str, MartDoc]:
    """Mart -> its description, column descriptions and PII columns, from the marts' schema YAML."""
    docs: dict[str, MartDoc] = {}
    for path in sorted(MARTS_DIR.rglob("*.yml")):
        for model in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("models") or []:
            columns = model.get("columns") or []
            docs[model["name"]] = MartDoc(
                " ".join(str(model.get("description") or "").split()),
                {c["name"]: " ".join(str(c.get("description") or "").split()) for c in columns},
                frozenset(c["name"] for c in columns if _tagged_pii(c)),
            )
    return docs


def _tagged_pii(column: dict) -> bool:
    # dbt reads column meta at the top level or under config: (newer dbt)
    return bool((column.get("meta") or {}).get("pii") or ((column.get("config") or {}).get("meta") or {}).get("pii"))


def pseudonym_sql(expr: str) -> str:
    """The mask of a PII value: stable, one-way, NULL stays NULL."""
    return f"concat('pii:', substr(sha2(cast({expr} AS STRING), 256), 1, 16))"


def _column_sql(name: str, pii: bool, auditors: list[str]) -> str:
    if not pii:
        return f"`{name}`"
    masked = pseudonym_sql(f"`{name}`")
    if not auditors:
        return f"{masked} AS `{name}`"
    readers = ", ".join(sql_string(a) for a in auditors)
    return f"CASE WHEN current_user() IN ({readers}) THEN `{name}` ELSE {masked} END AS `{name}`"


def _auditors_key(auditors: list[str]) -> str:
    return ",".join(sorted(auditors))


def _view_sql(spark: SparkSession, source: str, view: str, doc: MartDoc, auditors: list[str]) -> str:
    fields = spark.table(source).schema.fieldNames()
    columns = ",\n  ".join(
        f"`{name}`" + (f" COMMENT {sql_string(doc.columns[name])}" if doc.columns.get(name) else "") for name in fields
    )
    comment = f"\nCOMMENT {sql_string(doc.description)}" if doc.description else ""
    properties = f"\nTBLPROPERTIES ({sql_string(AUDITORS_PROPERTY)} = {sql_string(_auditors_key(auditors))})"
    selected = ", ".join(_column_sql(name, name in doc.pii, auditors) for name in fields)
    return f"CREATE OR REPLACE VIEW {view} (\n  {columns}\n){comment}{properties}\nAS SELECT {selected} FROM {source}"


def publish_analyst_views(spark: SparkSession, cfg: Config, log=print) -> list[str]:
    """(Re)create a view per gold mart in the analyst schema and drop the views of marts that are
    gone; -> the views' names."""
    t = tables(cfg)
    ensure_schema(spark, t.analyst_schema)
    docs = mart_docs()
    auditors = list(cfg.get("gold.pii_auditors"))
    marts = mart_tables(spark, t.gold_schema)
    for name in marts:
        doc = docs.get(name, MartDoc("", {}, frozenset()))
        spark.sql(_view_sql(spark, t.gold(name), t.analyst(name), doc, auditors))
    for gone in sorted(table_names(spark, t.analyst_schema) - set(marts)):
        spark.sql(f"DROP VIEW IF EXISTS {t.analyst(gone)}")
    masked = sum(len(docs[name].pii) for name in marts if name in docs)
    log(f"gold: {len(marts)} analyst views in {t.analyst_schema} (columns listed for BI tools; "
        f"{masked} PII columns masked but for {len(auditors)} auditors)")
    return marts


def analyst_views_current(spark: SparkSession, cfg: Config) -> bool:
    """Whether the analyst schema has exactly one view per gold mart, each made for the
    configured auditors (names and a property: no data read)."""
    t = tables(cfg)
    if not spark.catalog.databaseExists(t.analyst_schema):
        return False
    marts = mart_tables(spark, t.gold_schema)
    if table_names(spark, t.analyst_schema) != set(marts):
        return False
    wanted = _auditors_key(list(cfg.get("gold.pii_auditors")))
    return all(_view_auditors(spark, t.analyst(name)) == wanted for name in marts)


def _view_auditors(spark: SparkSession, view: str) -> str | None:
    rows = spark.sql(f"SHOW TBLPROPERTIES {view}").collect()
    return next((r["value"] for r in rows if r["key"] == AUDITORS_PROPERTY), None)
