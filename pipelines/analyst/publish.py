"""The analysts' copy of gold, written by the refresh after each gold build.

Every mart becomes a Delta table at ``<analyst.dir>/tables/<mart>``: the mart's rows with each
column that dbt's docs give a masked role (``meta: {personal: <role>}``, the roles of
pipelines/personal_data) replaced by its keyed pseudonym. The values are masked in the files
themselves, so what reads them (the analysts' Thrift server, pipelines/analyst/server.py) cannot
see a clear value by any SQL. ``<analyst.dir>/catalog.json`` lists the tables with dbt's
descriptions (the analysts' server makes its views from it) and the gold version each copy was
made from: a mart whose version did not move since is not copied again.

The pseudonym key is the refresh's secret (``analyst.pseudonym_key_env``); it never leaves this process.
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import NamedTuple

import yaml
from pyspark.sql import SparkSession

from pipelines import storage
from pipelines.config import Config, secret
from pipelines.delta_util import for_each_table, table_version
from pipelines.gold.compact import mart_tables
from pipelines.gold.staging import DBT_DIR
from pipelines.personal_data import MASKED_ROLES, META_KEY, ROLES
from pipelines.personal_data.pseudonym import pseudonym, pseudonym_sql
from pipelines.tables import tables

MARTS_DIR = DBT_DIR / "models" / "marts"
CATALOG_FILE = "catalog.json"
TABLES_DIR = "tables"
KEY_ID_TEXT = "auditlake pseudonym key"


class MartDoc(NamedTuple):
    description: str
    columns: dict[str, str]  # column -> description
    personal: dict[str, str]  # column -> its role (meta: {personal: <role>})


def _meta(column: dict) -> dict:
    # dbt reads column meta at the top level or under config: (newer dbt)
    return {**((column.get("config") or {}).get("meta") or {}), **(column.get("meta") or {})}


def mart_docs() -> dict[str, MartDoc]:
    """Mart -> its description, column descriptions and personal columns, from the marts' schema YAML."""
    docs: dict[str, MartDoc] = {}
    for path in sorted(MARTS_DIR.rglob("*.yml")):
        for model in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("models") or []:
            columns = model.get("columns") or []
            personal = {c["name"]: _meta(c)[META_KEY] for c in columns if META_KEY in _meta(c)}
            unknown = {c: r for c, r in personal.items() if r not in ROLES}
            if unknown:
                raise ValueError(f"{path}: {model['name']}: meta {META_KEY} must be one of "
                                 f"{', '.join(ROLES)}: {unknown}")
            docs[model["name"]] = MartDoc(
                " ".join(str(model.get("description") or "").split()),
                {c["name"]: " ".join(str(c.get("description") or "").split()) for c in columns},
                personal,
            )
    return docs


GLOSSARY_FILE = Path(__file__).with_name("column_glossary.yaml")


@functools.cache
def column_glossary() -> dict[str, str]:
    """Column name -> its description, for the names several marts share (column_glossary.yaml)."""
    entries = yaml.safe_load(GLOSSARY_FILE.read_text(encoding="utf-8"))["columns"]
    return {name: " ".join(str(text).split()) for name, text in entries.items()}


def column_description(doc: MartDoc, column: str) -> str:
    """A mart column's description: the mart's schema YAML, else the shared glossary ("" for neither)."""
    return doc.columns.get(column) or column_glossary().get(column, "")


def masked_columns(doc: MartDoc) -> set[str]:
    return {c for c, role in doc.personal.items() if role in MASKED_ROLES}


def pseudonym_key(cfg: Config) -> bytes:
    return secret(cfg, "analyst.pseudonym_key_env").encode("utf-8")


def key_id(key: bytes) -> str:
    """Names the key without revealing it (the pseudonym of a fixed text): a rotation is seen."""
    return pseudonym(KEY_ID_TEXT, key)


def analyst_tables_published(spark: SparkSession, cfg: Config) -> bool:
    """Whether the analysts' tables were written (their catalog exists): a gold build that is
    skipped still writes them on a lake that never had them."""
    return storage.exists(spark, storage.join(cfg.analyst_dir, CATALOG_FILE))


def tables_location(cfg: Config) -> str:
    return storage.join(cfg.analyst_dir, TABLES_DIR)


def catalog_text(spark: SparkSession, analyst_dir: str) -> str | None:
    """The catalog as written (None before the first copy): the analysts' server compares it."""
    return storage.read_text(spark, storage.join(analyst_dir, CATALOG_FILE))


def read_catalog(spark: SparkSession, cfg: Config) -> dict:
    text = catalog_text(spark, cfg.analyst_dir)
    return json.loads(text) if text else {"marts": {}}


def _copy_mart(spark: SparkSession, source: str, target: str, doc: MartDoc, key: bytes) -> None:
    frame = spark.table(source)
    masked = masked_columns(doc)
    selected = [f"{pseudonym_sql(f'`{name}`', key)} AS `{name}`" if name in masked else f"`{name}`"
                for name in frame.columns]
    copy = frame.selectExpr(*selected)
    # dbt's descriptions as the columns' comments (DESCRIBE shows them; the server's views repeat them)
    copy = copy.select(*[copy[name].alias(name, metadata={"comment": doc.columns[name]})
                         if doc.columns.get(name) else copy[name] for name in copy.columns])
    copy.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(target)


def publish_analyst_tables(spark: SparkSession, cfg: Config, log=print, force: bool = False) -> list[str]:
    """Copy every gold mart whose version moved since its last copy (all with ``force``) into the
    analysts' tables, masked; remove the copies of marts that are gone; rewrite the catalog.
    -> the marts copied."""
    t = tables(cfg)
    docs = mart_docs()
    marts = mart_tables(spark, t.gold_schema)
    catalog_before = read_catalog(spark, cfg)
    before = catalog_before["marts"]
    key = pseudonym_key(cfg)
    # a new key (rotation) changes every pseudonym: every table is copied again
    force = force or catalog_before.get("key_id") != key_id(key)
    todo, entries = {}, {}  # todo: mart -> (its copy's location, its docs)
    for name in marts:
        version = table_version(spark, t.gold(name))
        doc = docs.get(name, MartDoc("", {}, {}))
        target = storage.join(tables_location(cfg), name)
        if force or (before.get(name) or {}).get("source_version") != version or not storage.is_dir(spark, target):
            todo[name] = (target, doc)
        entries[name] = {"source_version": version, "description": doc.description,
                         "columns": {c: d for c, d in doc.columns.items() if d},
                         "masked": sorted(masked_columns(doc))}
    started = time.monotonic()
    for_each_table(lambda name: _copy_mart(spark, t.gold(name), *todo[name], key), todo)
    copied = list(todo)
    for gone in sorted(set(before) - set(marts)):
        storage.delete(spark, storage.join(tables_location(cfg), gone))
    catalog = {"schema": cfg.get("analyst.schema"), "key_id": key_id(key), "marts": entries}
    storage.write_text(spark, storage.join(cfg.analyst_dir, CATALOG_FILE),
                       json.dumps(catalog, indent=1, sort_keys=True))
    masked = sum(len(e["masked"]) for e in entries.values())
    log(f"gold: {len(copied)} of {len(marts)} analyst tables copied to {tables_location(cfg)} "
        f"({masked} personal columns as keyed pseudonyms) in {time.monotonic() - started:.1f}s")
    return copied
