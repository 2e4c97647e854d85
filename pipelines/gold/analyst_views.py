"""The analyst-facing schema: one view per gold mart, so BI tools see every column.

Delta keeps a table's schema in its transaction log, not in the metastore, so the Thrift
server's GetColumns (what Tableau's Spark SQL connector and other ODBC/JDBC tools call to list a
table's fields) returns nothing for a Delta table (delta-io/delta#662). A view's columns are in
the metastore. After each gold build, ``<analyst schema>.<mart>`` is (re)created as a view that
selects the mart's columns by name, with the descriptions of dbt's docs (the marts' schema YAML)
as column and view comments. dbt, time travel (``gold.<mart> VERSION AS OF n``) and the refresh
work on the Delta tables underneath as before.
"""

from __future__ import annotations

import yaml
from pyspark.sql import SparkSession

from pipelines.config import Config
from pipelines.delta_util import ensure_schema, table_names
from pipelines.gold.compact import mart_tables
from pipelines.gold.staging import DBT_DIR
from pipelines.sql import sql_string
from pipelines.tables import tables

MARTS_DIR = DBT_DIR / "models" / "marts"


def mart_docs() -> dict[str, tuple[str, dict[str, str]]]:
    """Mart -> (its description, column -> description), from the marts' schema YAML files."""
    docs: dict[str, tuple[str, dict[str, str]]] = {}
    for path in sorted(MARTS_DIR.rglob("*.yml")):
        for model in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("models") or []:
            columns = {c["name"]: " ".join(str(c.get("description") or "").split()) for c in model.get("columns") or []}
            docs[model["name"]] = (" ".join(str(model.get("description") or "").split()), columns)
    return docs


def _view_sql(spark: SparkSession, source: str, view: str, docs: tuple[str, dict[str, str]]) -> str:
    description, column_docs = docs
    fields = spark.table(source).schema.fieldNames()
    columns = ",\n  ".join(
        f"`{name}`" + (f" COMMENT {sql_string(column_docs[name])}" if column_docs.get(name) else "") for name in fields
    )
    comment = f"\nCOMMENT {sql_string(description)}" if description else ""
    selected = ", ".join(f"`{name}`" for name in fields)
    return f"CREATE OR REPLACE VIEW {view} (\n  {columns}\n){comment}\nAS SELECT {selected} FROM {source}"


def publish_analyst_views(spark: SparkSession, cfg: Config, log=print) -> list[str]:
    """(Re)create a view per gold mart in the analyst schema and drop the views of marts that are
    gone; -> the views' names."""
    t = tables(cfg)
    ensure_schema(spark, t.analyst_schema)
    docs = mart_docs()
    marts = mart_tables(spark, t.gold_schema)
    for name in marts:
        spark.sql(_view_sql(spark, t.gold(name), t.analyst(name), docs.get(name, ("", {}))))
    for gone in sorted(table_names(spark, t.analyst_schema) - set(marts)):
        spark.sql(f"DROP VIEW IF EXISTS {t.analyst(gone)}")
    log(f"gold: {len(marts)} analyst views in {t.analyst_schema} (columns listed for BI tools)")
    return marts


def analyst_views_current(spark: SparkSession, cfg: Config) -> bool:
    """Whether the analyst schema has exactly one view per gold mart (names only: cheap)."""
    t = tables(cfg)
    if not spark.catalog.databaseExists(t.analyst_schema):
        return False
    return table_names(spark, t.analyst_schema) == set(mart_tables(spark, t.gold_schema))
