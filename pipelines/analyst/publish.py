"""The analysts' copy of gold, written by the refresh after each gold build.

Every mart becomes a Delta table at ``<analyst.dir>/tables/<mart>``: the mart's rows with each
column that dbt's docs give a masked role (``meta: {personal: <role>}``, the roles of
pipelines/personal_data) replaced by its keyed pseudonym. The values are masked in the files
themselves, so what reads them (the analysts' Thrift server, pipelines/analyst/server.py) cannot
see a clear value by any SQL. ``<analyst.dir>/catalog.json`` lists the tables with dbt's
descriptions (the analysts' server makes its views from it), and for each copy the mart (its Delta
table id) and version it was made from and the copy's own version. A mart whose version did not
move, with the same tags and descriptions, is left as it is; one that only gained rows gets them
appended (read from its change data feed); any other is copied whole.

The pseudonym key is the refresh's secret (``analyst.pseudonym_key_env``); it never leaves this process.
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import NamedTuple

import yaml
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from pipelines.config.load import Config, secret
from pipelines.config.project import DBT_DIR
from pipelines.gold.compact import Compaction, compact, log_compaction, mart_tables
from pipelines.lake import storage
from pipelines.lake.delta_tables import for_each_table, table_version
from pipelines.lake.table_names import tables
from pipelines.personal_data import MASKED_ROLES, META_KEY, PERSON_KEY, ROLES
from pipelines.personal_data.pseudonym import pseudonym, pseudonym_sql

MARTS_DIR = DBT_DIR / "models" / "marts"
CATALOG_FILE = "catalog.json"
TABLES_DIR = "tables"
KEY_ID_TEXT = "auditlake pseudonym key"

# A copy follows its mart's commits that only added rows (an incremental mart's merge of new events,
# an append), or changed none (compaction, vacuum, the feed turned on): it appends the rows the mart's
# change data feed says were inserted (dbt_project.yml turns the feed on for the marts). A commit that
# changed or removed rows (a merge that updated, an erasure, dbt's CREATE OR REPLACE of a table model
# or a full refresh) makes the copy whole again: merging changed rows into a large copy costs about what
# copying it costs (docs/performance.md, "The analysts' copies"), an append a fraction of it.
NO_ROW_CHANGED = frozenset({"OPTIMIZE", "VACUUM START", "VACUUM END", "SET TBLPROPERTIES"})
# a copy is normally one build behind its mart; past this many commits (a judgement, not measured) it is
# made whole rather than the mart's history and each commit's files read
MAX_FEED_COMMITS = 48
FEED_PROPERTY = "delta.enableChangeDataFeed"
FEED_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")


class Published(NamedTuple):
    """How one copy was brought up to date."""

    how: str  # appended | copied
    source_version: int  # the mart's version it now holds
    copy_version: int  # the copy's own Delta version after it
    mart_id: str  # the mart's Delta table id (a mart dropped and made again has a new one)
    feed_turned_on: bool  # the mart's change data feed was off (a mart made before) and is now on
    compaction: Compaction | None


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
                raise ValueError(
                    f"{path}: {model['name']}: meta {META_KEY} must be one of {', '.join(ROLES)}: {unknown}"
                )
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


def masked_sql(column: str, role: str, key: bytes) -> str:
    """Spark SQL for the pseudonym of ``column`` under its role: a person's key (a LUID or user id) from
    its lower-case text, so that a LUID delivered in upper case somewhere reads as the same pseudonym in
    every table (its joins and distinct counts hold), and an integer id as the pseudonym of its digits."""
    quoted = f"`{column}`"
    return pseudonym_sql(f"lower(CAST({quoted} AS STRING))" if role == PERSON_KEY else quoted, key)


def _masked(frame: DataFrame, doc: MartDoc, key: bytes) -> DataFrame:
    """``frame`` with the mart's masked columns as their keyed pseudonyms (text, whatever the mart's type)."""
    masked = masked_columns(doc)
    return frame.selectExpr(
        *[
            f"{masked_sql(name, doc.personal[name], key)} AS `{name}`" if name in masked else f"`{name}`"
            for name in frame.columns
        ]
    )


def _copy_whole(spark: SparkSession, source: str, version: int, target: str, doc: MartDoc, key: bytes) -> None:
    copy = _masked(spark.read.format("delta").option("versionAsOf", version).table(source), doc, key)
    # dbt's descriptions as the columns' comments (DESCRIBE shows them; the server's views repeat them)
    copy = copy.select(
        *[
            copy[name].alias(name, metadata={"comment": doc.columns[name]}) if doc.columns.get(name) else copy[name]
            for name in copy.columns
        ]
    )
    copy.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(target)


def _only_inserts(commit: Row) -> bool:
    """Whether this commit of a mart added rows (or none) and changed or removed none."""
    operation, metrics = commit["operation"], commit["operationMetrics"] or {}
    if operation == "WRITE":  # an append adds rows; an overwrite replaces the mart
        return (commit["operationParameters"] or {}).get("mode") == "Append"
    if operation == "MERGE":  # a metric missing counts as a change
        return all(int(metrics.get(m, 1)) == 0 for m in ("numTargetRowsUpdated", "numTargetRowsDeleted"))
    return operation in NO_ROW_CHANGED


def _follow_feed(
    spark: SparkSession, source: str, since: int, version: int, target: str, doc: MartDoc, key: bytes
) -> bool:
    """Append to the copy, masked, the rows the mart's commits after version ``since`` up to ``version``
    inserted; -> False (nothing done) where the copy must be made whole instead: a commit that changed or
    removed rows, more commits than ``MAX_FEED_COMMITS``, no change data feed on them, or columns that
    differ from the copy's."""
    if not 0 < version - since <= MAX_FEED_COMMITS:
        return False
    commits = spark.sql(f"DESCRIBE HISTORY {source} LIMIT {version - since}").collect()
    if sorted(c["version"] for c in commits) != list(range(since + 1, version + 1)) or not all(
        map(_only_inserts, commits)
    ):
        return False
    try:
        changes = (
            spark.read.format("delta")
            .option("readChangeFeed", "true")
            .option("startingVersion", since + 1)
            .option("endingVersion", version)
            .table(source)
        )
        columns = [f.name for f in changes.schema.fields if f.name not in FEED_COLUMNS]
        inserted = _masked(changes.where(F.col("_change_type") == "insert").select(*columns), doc, key)
        # compared masked: a masked id column is text in the copy whatever its type in the mart
        fields = [(f.name, f.dataType) for f in inserted.schema.fields]
        if fields != [(f.name, f.dataType) for f in spark.read.format("delta").load(target).schema.fields]:
            return False
        inserted.write.format("delta").mode("append").save(target)
    except Exception:  # no feed over these versions (turned off, or its files vacuumed): the append is one
        return False  # commit, so nothing was written, and a whole copy is always right
    return True


def _turn_feed_on(spark: SparkSession, source: str, properties: dict[str, str]) -> bool:
    """Turn on the change data feed of a mart made before dbt_project.yml asked for it (dbt sets a
    table's properties only when it creates the table); ``properties``: the mart's, as its detail
    gives them. -> whether it was off."""
    if (properties or {}).get(FEED_PROPERTY) == "true":
        return False
    spark.sql(f"ALTER TABLE {source} SET TBLPROPERTIES ('{FEED_PROPERTY}' = 'true')")
    return True


def publish_mart(
    spark: SparkSession,
    source: str,
    target: str,
    doc: MartDoc,
    key: bytes,
    before: dict,
    version: int,
    files_over: int,
    append_from_bytes: int = 0,
) -> Published:
    """Bring one copy up to ``version`` of its mart: the mart's inserted rows appended where its copy is
    the one the catalog names (``before``: made from mart ``mart_id`` at ``source_version``, left at
    ``copy_version``), the mart only gained rows since and holds ``append_from_bytes`` or more (a small
    mart's whole copy costs less than the queries an append makes), else the mart copied whole. A mart whose
    change data feed is off (made before dbt_project.yml asked for it) gets it turned on: said in the
    result, which the refresh logs."""
    detail = spark.sql(f"DESCRIBE DETAIL {source}").first()
    mart_id = detail["id"]
    since, copy_version = before.get("source_version"), before.get("copy_version")
    current = (
        since is not None
        and copy_version is not None
        and before.get("mart_id") == mart_id
        and detail["sizeInBytes"] >= append_from_bytes
        and storage.is_dir(spark, target)
        and table_version(spark, f"delta.`{target}`") == copy_version
    )  # a kill after a copy's commit: made whole
    if current and _follow_feed(spark, source, since, version, target, doc, key):
        # each append adds files to the copy, as dbt's merges do to the mart: compacted by the marts' rule
        compaction = compact(spark, f"delta.`{target}`", files_over)
        return Published("appended", version, table_version(spark, f"delta.`{target}`"), mart_id, False, compaction)
    turned_on = _turn_feed_on(spark, source, detail["properties"])
    if turned_on:
        version = table_version(spark, source)
    _copy_whole(spark, source, version, target, doc, key)
    return Published("copied", version, table_version(spark, f"delta.`{target}`"), mart_id, turned_on, None)


def publish_analyst_tables(spark: SparkSession, cfg: Config, log=print, force: bool = False) -> list[str]:
    """Bring every copy whose mart's version moved since (all with ``force``) up to date, masked: the
    rows the mart's change data feed says it gained where it only gained rows, else the mart copied
    whole; remove the copies of marts that are gone; rewrite the catalog. -> the marts brought up to date."""
    t = tables(cfg)
    docs = mart_docs()
    marts = mart_tables(spark, t.gold_schema)
    catalog_before = read_catalog(spark, cfg)
    before = catalog_before["marts"]
    key = pseudonym_key(cfg)
    # a new key (rotation) changes every pseudonym: every table is copied again
    force = force or catalog_before.get("key_id") != key_id(key)
    todo, entries = {}, {}  # todo: mart -> (its copy's location, its docs, its last entry, the version to copy)
    for name in marts:
        version = table_version(spark, t.gold(name))
        doc = docs.get(name, MartDoc("", {}, {}))
        target = storage.join(tables_location(cfg), name)
        last = before.get(name) or {}
        entries[name] = {
            "source_version": version,
            "copy_version": last.get("copy_version"),
            "mart_id": last.get("mart_id"),
            "description": doc.description,
            "columns": {c: d for c, d in doc.columns.items() if d},
            "masked": sorted(masked_columns(doc)),
        }
        # a column masked now, or described anew, is in every row of the copy: made whole
        same_docs = all(last.get(k) == entries[name][k] for k in ("columns", "masked"))
        if force or not same_docs or last.get("source_version") != version or not storage.is_dir(spark, target):
            todo[name] = (target, doc, last if same_docs and not force else {}, version)
    started = time.monotonic()
    done: dict[str, Published] = {}
    files_over, append_from_bytes = cfg.settings.gold.compact_files_over, cfg.settings.analyst.append_from_mb * 2**20

    def publish(name: str) -> None:
        target, doc, last, version = todo[name]
        done[name] = published = publish_mart(
            spark, t.gold(name), target, doc, key, last, version, files_over, append_from_bytes
        )
        entries[name].update(
            source_version=published.source_version, copy_version=published.copy_version, mart_id=published.mart_id
        )

    for_each_table(publish, todo)
    turned_on = sorted(name for name, p in done.items() if p.feed_turned_on)
    if turned_on:
        log(
            f"gold: turned on the change data feed of {len(turned_on)} marts made before dbt_project.yml asked "
            f"for it (their copies follow their new rows from now on): {', '.join(turned_on)}"
        )
    for c in (p.compaction for p in done.values() if p.compaction):
        log_compaction(c, files_over, log)
    for gone in sorted(set(before) - set(marts)):
        storage.delete(spark, storage.join(tables_location(cfg), gone))
    catalog = {"schema": cfg.settings.analyst.schema, "key_id": key_id(key), "marts": entries}
    storage.write_text(
        spark, storage.join(cfg.analyst_dir, CATALOG_FILE), json.dumps(catalog, indent=1, sort_keys=True)
    )
    masked = sum(len(e["masked"]) for e in entries.values())
    appended = sum(p.how == "appended" for p in done.values())
    log(
        f"gold: {len(done)} of {len(marts)} analyst tables brought up to date in {tables_location(cfg)} "
        f"({appended} by their mart's new rows, {len(done) - appended} copied whole; {masked} personal columns "
        f"as keyed pseudonyms) in {time.monotonic() - started:.1f}s"
    )
    return list(done)
