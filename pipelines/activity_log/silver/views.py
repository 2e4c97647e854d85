"""One view per event type, ``silver.<event_type>``, over its family's wide table.

A view selects the event's own documented columns (cast to the event's documented
type where the wide column is wider) and decodes the codes the reference explains.
Views are (re)created when missing or when the registry changed since they were
made (a hash kept as a table property of the wide table).
"""

from __future__ import annotations

import hashlib

from pyspark.sql import SparkSession

from pipelines.activity_log.registry import REGISTRY_PATH
from pipelines.activity_log.silver.plan import DECODED_NAMES, VIEW_HEAD, VIEW_TAIL, ColumnPlan, family_plan
from pipelines.config.load import Config
from pipelines.lake.sql_text import sql_string
from pipelines.lake.table_names import Tables, tables

_HASH_PROPERTY = "auditlake.views_registry_sha256"


def decoded_column(col: ColumnPlan, taken: set[str]) -> tuple[str, str, str] | None:
    """(SQL, name, type) of the decoded meaning of a coded attribute, or None. ``taken``: the view's
    other columns (an event may document its own ``siteRole``; then the decoded one is ``site_role_name``)."""
    if not col.codes:
        return None
    if col.attribute == "systemAdminLevel":
        return f"`{col.column}` = 10", "is_system_admin", "boolean"
    name = DECODED_NAMES.get(col.attribute, f"{col.column}_name")
    if name in taken:
        name = f"{name}_name"
    if not col.legacy_codes:
        whens = " ".join(f"WHEN {code} THEN {sql_string(meaning)}" for code, meaning in col.codes)
        return f"CASE `{col.column}` {whens} END", name, "string"
    # a record of the legacy edition decodes with that edition's own list (one level: staging's layout)
    whens = " ".join(
        [
            f"WHEN `edition` = 'legacy' AND `{col.column}` = {code} THEN {sql_string(meaning)}"
            for code, meaning in col.legacy_codes
        ]
        + [
            f"WHEN `edition` <> 'legacy' AND `{col.column}` = {code} THEN {sql_string(meaning)}"
            for code, meaning in col.codes
        ]
    )
    return f"CASE {whens} END", name, "string"


def event_attribute_columns(family: str, event_type: str) -> list[tuple[str, str, str]]:
    """The view's attribute columns in order, as (SQL, name, spark type): each documented
    attribute cast to the event's documented type, each coded one followed by its meaning."""
    plan = family_plan(family)
    taken = {c.column for c in plan.event_columns(event_type)}
    out = []
    for col in plan.event_columns(event_type):
        if col.attribute == "eventTime":
            continue
        documented = col.documented_type(event_type)
        ref = f"`{col.column}`"
        sql = ref if documented == col.physical_type else f"try_cast({ref} AS {documented})"
        out.append((sql, col.column, documented))
        decoded = decoded_column(col, taken)
        if decoded:
            out.append(decoded)
    return out


def view_sql(t: Tables, family: str, event_type: str) -> str:
    items = [f"`{c}`" for c in VIEW_HEAD]
    for sql, name, _ in event_attribute_columns(family, event_type):
        items.append(sql if sql == f"`{name}`" else f"{sql} AS `{name}`")
    items += [f"`{c}`" for c in VIEW_TAIL]
    return (
        f"CREATE OR REPLACE VIEW {t.event_view(event_type)} AS SELECT {', '.join(items)} "
        f"FROM {t.silver_events(family)} WHERE event_type = {sql_string(event_type)}"
    )


def _registry_hash() -> str:
    return hashlib.sha256(REGISTRY_PATH.read_bytes()).hexdigest()


def ensure_event_views(spark: SparkSession, cfg: Config, family: str, log=print) -> int:
    """Create the family's event views if missing or stale (while ``silver.event_views``); returns how
    many were (re)created."""
    if not cfg.settings.silver.event_views:
        return 0
    t = tables(cfg)
    plan = family_plan(family)
    table = t.silver_events(family)
    wanted = _registry_hash()
    props = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}
    existing = {r["viewName"] for r in spark.sql(f"SHOW VIEWS IN {t.silver_schema}").collect()}
    todo = [e for e in plan.event_types if props.get(_HASH_PROPERTY) != wanted or e not in existing]
    if not todo:
        return 0
    log(f"silver: creating {len(todo)} {family} event views (silver.<event_type>)")
    for event_type in todo:
        spark.sql(view_sql(t, family, event_type))
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('{_HASH_PROPERTY}' = '{wanted}')")
    return len(todo)
