"""``ops.erasures``: a row per erasure, pending then done, with tokens and counts and never a clear value."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.config.load import Config
from pipelines.lake.delta_tables import create_table_if_missing
from pipelines.lake.table_names import tables
from pipelines.runtime.spark_session import append_rows

if TYPE_CHECKING:
    from pipelines.personal_data.erase.pending import PendingErasure

ERASURES_SCHEMA = (
    "erasure_id string, erased_at timestamp, requested_by string, identifier_kind string, "
    "tokens array<string>, identifiers int, rows_by_table map<string,bigint>, rows_total bigint, "
    "vacuum_retain_hours int, tables_vacuumed int, status string, started_at timestamp"
)

# an erasure's row in ops.erasures: pending from before its first rewrite until it is done
PENDING = "pending"
DONE = "done"


@dataclass
class ErasureReport:
    erasure_id: str
    identifier_kind: str
    tokens: list[str]
    rows_by_table: dict[str, int]
    vacuum_retain_hours: int
    tables_vacuumed: list[str]

    @property
    def rows_total(self) -> int:
        return sum(self.rows_by_table.values())


def _ensure_erasures_table(spark: SparkSession, cfg: Config) -> str:
    """``ops.erasures``, with ``status`` and ``started_at`` (added to a table made before them; its
    rows, all finished erasures, are marked done)."""
    table = tables(cfg).erasures
    create_table_if_missing(spark, table, ERASURES_SCHEMA)
    present = {f.name for f in spark.table(table).schema.fields}
    if "status" not in present:
        spark.sql(f"ALTER TABLE {table} ADD COLUMNS (status string, started_at timestamp)")
        spark.sql(f"UPDATE {table} SET status = '{DONE}' WHERE status IS NULL")
    return table


def record_pending(spark: SparkSession, cfg: Config, pending: PendingErasure) -> None:
    """The erasure's row in ``ops.erasures``, status pending: tokens, never a value (once)."""
    table = _ensure_erasures_table(spark, cfg)
    if spark.table(table).where(F.col("erasure_id") == pending.erasure_id).limit(1).count():
        return
    started = datetime.fromisoformat(pending.started_at)
    row = (
        pending.erasure_id,
        None,
        pending.requested_by,
        pending.identifier_kind,
        sorted(set(pending.tokens.values())),
        len(pending.tokens),
        None,
        None,
        pending.vacuum_retain_hours,
        None,
        PENDING,
        started,
    )
    append_rows(spark, cfg, [row], ERASURES_SCHEMA, table)


def record_done(spark: SparkSession, cfg: Config, report: ErasureReport) -> None:
    """The erasure's row: done, with when, the rows per table and the tables vacuumed."""
    table = _ensure_erasures_table(spark, cfg)
    counts = F.create_map(*[F.lit(x) for name, rows in sorted(report.rows_by_table.items()) for x in (name, rows)])
    DeltaTable.forName(spark, table).update(
        condition=(F.col("erasure_id") == report.erasure_id) & (F.col("status") == PENDING),
        set={
            "status": F.lit(DONE),
            "erased_at": F.current_timestamp(),
            "rows_by_table": counts.cast("map<string,bigint>"),
            "rows_total": F.lit(report.rows_total).cast("bigint"),
            "tables_vacuumed": F.lit(len(report.tables_vacuumed)),
        },
    )
