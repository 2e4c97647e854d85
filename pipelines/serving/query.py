"""`auditlake sql`: one query on the lakehouse, printed as a table, CSV or JSON lines."""

from __future__ import annotations

import csv
import io
import json
from datetime import date, datetime
from decimal import Decimal

from pyspark.sql import SparkSession

FORMATS = ("table", "csv", "json")


def _plain(value):
    if isinstance(value, datetime | date):
        return value.isoformat(sep=" ") if isinstance(value, datetime) else value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def format_rows(columns: list[str], rows: list[tuple], fmt: str) -> str:
    """Render ``rows`` (tuples in ``columns`` order) as ``table``, ``csv`` or ``json`` (one object per line)."""
    if fmt == "json":
        return "".join(json.dumps(dict(zip(columns, map(_plain, r), strict=True)), default=str) + "\n" for r in rows)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([["" if v is None else _plain(v) for v in r] for r in rows])
        return out.getvalue()
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    cells = [["NULL" if v is None else str(_plain(v)) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    body = [line, "| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)) + " |", line]
    body += ["| " + " | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) + " |" for r in cells]
    body.append(line)
    return "\n".join(body) + f"\n({len(rows)} row{'s' if len(rows) != 1 else ''})\n"


def run_query(spark: SparkSession, sql: str, limit: int) -> tuple[list[str], list[tuple], bool]:
    """(columns, rows, truncated): at most ``limit`` rows of ``sql``."""
    frame = spark.sql(sql)
    rows = frame.limit(limit + 1).collect()
    return frame.columns, [tuple(r) for r in rows[:limit]], len(rows) > limit
