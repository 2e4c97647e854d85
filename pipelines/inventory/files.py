"""An inventory's rows as entity snapshot files in the landing tree: one Parquet file per site, hour and
entity type, at the date-first path bronze reads Tableau's own snapshots from, each written whole
through a hidden temporary file renamed over it (``pipelines/pull/landing.py``): bronze skips hidden
files, so it lands a file entire or not yet."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.entity_snapshots import INVENTORY_PREFIX
from pipelines.inventory import SCHEMAS
from pipelines.pull.landing import write_whole


def snapshot_path(root: Path, site_luid: str, hour: datetime, entity_type: str) -> Path:
    """One file per site, hour and type."""
    return (
        root
        / f"siteLuid={site_luid.lower()}"
        / f"y={hour:%Y}"
        / f"m={hour:%m}"
        / f"d={hour:%d}"
        / f"h={hour:%H}"
        / f"entityType={entity_type}"
        / f"{INVENTORY_PREFIX}{hour:%Y%m%dT%H}.parquet"
    )


def parquet_bytes(entity_type: str, rows: list[dict]) -> bytes:
    """The same rows give the same bytes (no write time is recorded): a rerun writes nothing new."""
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMAS[entity_type]), sink, compression="snappy")
    return sink.getvalue().to_pybytes()


def write_snapshot(root: Path, site_luid: str, hour: datetime, entity_type: str, rows: list[dict]) -> bool:
    """False, writing nothing, when the hour's file is there already: bronze may have landed it, and a
    file changed under a landed name would give the hour two states; the hour keeps its first."""
    path = snapshot_path(root, site_luid, hour, entity_type)
    if path.exists():
        return False
    return write_whole(path, parquet_bytes(entity_type, rows))
