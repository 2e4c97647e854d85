"""What a gold build was made from, to skip a build that would make the same marts.

A gold build's inputs are silver's tables (at their Delta versions), the dbt project's files and
the vars the pipeline passes. After a successful build (dbt and its gate) they are written to
``<checkpoints>/gold_inputs.json``; a refresh whose inputs are the same skips gold.
"""

from __future__ import annotations

import hashlib
import json

from pyspark.sql import SparkSession

from pipelines.activity_log import FAMILIES
from pipelines.config.load import Config
from pipelines.config.project import DBT_DIR
from pipelines.gold.run import dbt_vars
from pipelines.inventory import ENTITY_TYPES as INVENTORY_TYPES
from pipelines.lake import storage
from pipelines.lake.delta_tables import table_version
from pipelines.lake.table_names import tables

_PROJECT_PARTS = ("dbt_project.yml", "models", "macros", "tests")


def _project_hash() -> str:
    digest = hashlib.sha256()
    for part in _PROJECT_PARTS:
        root = DBT_DIR / part
        for path in sorted([root] if root.is_file() else root.rglob("*")):
            if path.is_file():
                digest.update(str(path.relative_to(DBT_DIR)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


def current_inputs(spark: SparkSession, cfg: Config) -> dict:
    t = tables(cfg)
    sources = (
        [t.silver_events(f) for f in FAMILIES]
        + [t.writeback_audit, t.snapshot_hours]
        + [t.entity_history(e) for e in sorted(set(t.entity_types(spark)) | set(INVENTORY_TYPES))]
    )
    # A table the project reads that does not exist (an entity history no source delivered) counts as
    # version None: absent at the last build and now, it moved no mart; once it appears, it did.
    return {
        "silver_versions": {
            name: table_version(spark, name) if spark.catalog.tableExists(name) else None for name in sources
        },
        "project": _project_hash(),
        "vars": dbt_vars(cfg),
        "gold_schema": cfg.settings.gold.schema,
    }


def unmoved_tables(last: dict | None, now: dict) -> set[str]:
    """The silver tables at the Delta version the last build read, when nothing but silver's versions
    changed since (the same project, vars and schema): what only they feed would come out the same
    (pipelines/gold/selection.py). Empty when anything else changed, or before a first build."""
    if not last or any(last.get(key) != value for key, value in now.items() if key != "silver_versions"):
        return set()
    before = last.get("silver_versions") or {}
    return {name for name, version in now["silver_versions"].items() if before.get(name) == version}


def _path(cfg: Config) -> str:
    return storage.join(cfg.checkpoint_dir, "gold_inputs.json")


def last_built(spark: SparkSession, cfg: Config) -> dict | None:
    text = storage.read_text(spark, _path(cfg))
    try:
        return json.loads(text) if text and text.strip() else None
    except json.JSONDecodeError:  # a kill mid-write: build again
        return None


def record_built(spark: SparkSession, cfg: Config, inputs: dict) -> None:
    storage.write_text(spark, _path(cfg), json.dumps(inputs, sort_keys=True))


def forget_built(spark: SparkSession, cfg: Config) -> None:
    """Before a build starts: a build killed mid-way must not look like the last good one."""
    storage.write_text(spark, _path(cfg), "")
