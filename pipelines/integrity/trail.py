"""What the trail covers, table by table: how a row becomes a Merkle leaf, and how a row shows it is
still what was landed (its content hashes to the ``content_hash`` stored beside it at landing).

Bronze's raw tables hold every record as it came; the file ledger holds every file's verdict. Each of
their rows carries the run that appended it (``run_id``), and a digest holds, per table and run, the
rows' count and Merkle root. The leaf is built from what no lawful change rewrites: the row's id and its
content hash (an erasure rewrites the content, never these), or for the ledger the file's identity and
verdict (no personal value in it).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F

from pipelines.lake.table_names import Tables
from pipelines.writeback import COLUMNS as WRITEBACK_COLUMNS


@dataclass(frozen=True)
class TrailTable:
    name: str
    leaf: Column  # hex SHA-256 of what identifies the row and its content as landed
    row_id: Column  # how a report names one row
    # the content ``content_hash`` was taken of at landing, as it is now (None: the table has no such hash)
    content: Column | None

    @property
    def content_sha256(self) -> Column:
        return F.sha2(self.content, 256)


def leaf(row_id: str, content_hash: str) -> str:
    """A raw row's leaf in Python, as ``trail_tables`` computes it in Spark."""
    return hashlib.sha256(f"{row_id}\n{content_hash}".encode()).hexdigest()


def _sha(*columns: Column) -> Column:
    return F.sha2(F.concat_ws("\n", *[F.coalesce(c.cast("string"), F.lit("")) for c in columns]), 256)


def trail_tables(t: Tables) -> list[TrailTable]:
    raw_leaf = _sha(F.col("bronze_id"), F.col("content_hash"))
    return [
        *[
            TrailTable(t.bronze_raw(family), raw_leaf, F.col("bronze_id"), F.col("raw_line"))
            for family in ("site", "tenant")
        ],
        TrailTable(
            t.writeback_raw,
            raw_leaf,
            F.col("bronze_id"),
            F.to_json(F.struct(*[F.col(c) for c in WRITEBACK_COLUMNS])),
        ),
        TrailTable(
            t.file_ledger,
            _sha(
                F.col("path"),
                F.col("size"),
                F.unix_micros(F.col("mtime")),
                F.col("status"),
                F.col("rows"),
                F.col("run_id"),
            ),
            F.col("path"),
            None,
        ),
    ]
