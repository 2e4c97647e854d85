"""The marts' contract: every gold mart's columns and their Spark types, committed in
``dbt_project/contract/marts.yml``, and what a change to it must come with.

Published data sources and saved workbooks read the marts' columns by name and type, so a column
removed, renamed or retyped breaks them. The list is written from a built lake's gold tables
(``auditlake docs mart-contract``); the gold tests compare it with the marts they built (a column the
list names that a mart lacks or types otherwise fails; a new column passes), and a fast test checks
that every column an earlier committed version of the list named, and the current one lacks or
types otherwise, is named in ``docs/mart-changes.md``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml
from pyspark.sql import SparkSession

from pipelines.config.project import DBT_DIR, IMPORT_ROOT
from pipelines.gold.compact import mart_tables

CONTRACT = DBT_DIR / "contract" / "marts.yml"
CHANGES = IMPORT_ROOT / "docs" / "mart-changes.md"
HEADER = """\
# Every gold mart's columns and their Spark types: what published data sources and saved workbooks
# rely on. Written by `auditlake docs mart-contract` from a built lake's gold tables; a column removed,
# renamed or retyped needs this file written again and a line in docs/mart-changes.md in the same
# commit (tests/test_gold_marts.py, tests/test_mart_contract.py).
"""
# a column as docs/mart-changes.md names it: `mart.column`
_NAMED = re.compile(r"`(\w+)\.(\w+)`")

Columns = dict[str, dict[str, str]]  # mart -> column -> Spark type (simpleString)


def mart_columns(spark: SparkSession, schema: str) -> Columns:
    """Each table of ``schema`` (gold's marts) with its columns, in their order, and their types."""
    return {
        name: {f.name: f.dataType.simpleString() for f in spark.table(f"{schema}.{name}").schema.fields}
        for name in mart_tables(spark, schema)
    }


def render(columns: Columns) -> str:
    body = yaml.safe_dump({"marts": columns}, sort_keys=False, default_flow_style=False, width=1000)
    return HEADER + body


def parse(text: str) -> Columns:
    return (yaml.safe_load(text) or {}).get("marts") or {}


def read_contract(path: Path = CONTRACT) -> Columns:
    return parse(path.read_text(encoding="utf-8")) if path.exists() else {}


def write_contract(columns: Columns, path: Path = CONTRACT) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(columns), encoding="utf-8")


def broken(promised: Columns, built: Columns) -> dict[str, str]:
    """``mart.column`` -> how the built marts break what ``promised`` lists: gone (the mart or the
    column) or typed otherwise. A column or mart ``promised`` does not list is an addition: none."""
    found = {}
    for mart, columns in promised.items():
        for column, kind in columns.items():
            now = built.get(mart, {}).get(column)
            if mart not in built:
                found[f"{mart}.{column}"] = "the mart is gone"
            elif now is None:
                found[f"{mart}.{column}"] = "removed or renamed"
            elif now != kind:
                found[f"{mart}.{column}"] = f"{kind}, now {now}"
    return found


def committed_versions(path: Path = CONTRACT) -> list[str]:
    """The text of every committed version of the list, newest first; none outside a git checkout
    (an installed package, a copy) or where git is missing."""
    where = ["-C", str(IMPORT_ROOT)]
    relative = str(path.relative_to(IMPORT_ROOT))
    try:
        commits = subprocess.run(
            ["git", *where, "log", "--format=%H", "--", relative], capture_output=True, text=True, check=True
        ).stdout.split()
        return [
            subprocess.run(
                ["git", *where, "show", f"{commit}:{relative}"], capture_output=True, text=True, check=True
            ).stdout
            for commit in commits
        ]
    except (OSError, subprocess.CalledProcessError):
        return []


def noted(text: str) -> set[str]:
    """The columns a changelog names (`` `mart.column` ``)."""
    return {f"{mart}.{column}" for mart, column in _NAMED.findall(text)}


def unnoted_changes(versions: list[str], current: Columns, changes: str) -> dict[str, str]:
    """``mart.column`` -> how ``current`` breaks an earlier version of the list (``versions``' texts),
    for each such column the changelog ``changes`` does not name."""
    named = noted(changes)
    found = {}
    for text in versions:
        for column, how in broken(parse(text), current).items():
            if column not in named:
                found.setdefault(column, how)
    return found
