"""Re-run the SQL of docs/analyst-guide.md on a lake and write each query's output below it.

Each ```sql block followed by a Markdown table is run as it stands; the table is replaced by
what the query gives now (at most ``max_rows`` rows). `auditlake docs analyst-guide` after
`make demo` keeps the guide's outputs what the demo data gives.
"""

from __future__ import annotations

import re
from pathlib import Path

from pyspark.sql import SparkSession

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "analyst-guide.md"
# a sql block, then (after blank lines) the Markdown table that shows its output, if any, and the blank
# lines after it: a table runs on into the next line that is not blank, so one always follows it
_BLOCK = re.compile(r"```sql\n(?P<sql>.*?)```\n(?P<gap>\n*)(?P<table>(?:\|[^\n]*\|\n)*)\n*", re.S)


def _cell(value) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(columns: list[str], rows: list[tuple]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def refresh_guide(spark: SparkSession, text: str, max_rows: int = 20, log=print) -> str:
    """``text`` with every SQL block's output table rewritten from ``spark``."""

    def rewrite(match: re.Match) -> str:
        sql = match["sql"]
        frame = spark.sql(sql)
        rows = [tuple(r) for r in frame.limit(max_rows).collect()]
        first_line = sql.strip().splitlines()[0]
        log(f"analyst guide: {len(rows)} row(s) <- {first_line[:90]}")
        after = "" if match.end() == len(match.string) else "\n"
        return f"```sql\n{sql}```\n\n{markdown_table(frame.columns, rows)}{after}"

    return _BLOCK.sub(rewrite, text)


def write_guide(spark: SparkSession, path: Path = GUIDE, log=print) -> None:
    path.write_text(refresh_guide(spark, path.read_text(encoding="utf-8"), log=log), encoding="utf-8")
