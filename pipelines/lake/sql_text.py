"""Pieces of Spark SQL text the pipeline builds, each written once."""

from __future__ import annotations

# A UUID (LUIDs, Write-Back IDs): 8-4-4-4-12 hex digits, either case.
UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


def sql_string(text: str) -> str:
    """A Spark SQL string literal (backslash escapes, as Spark's parser reads them)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
