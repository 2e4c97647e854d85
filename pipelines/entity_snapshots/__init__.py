"""Entity snapshots: Tableau Cloud Manager's hourly Parquet dumps of a site's users, groups, group
members, content ... (``…/siteLuid=<luid>/y=/m=/d=/h=/entityType=<type>/….parquet``, Enterprise
and Tableau+ only).

- ``bronze``: every file landed once by the file ledger (a damaged one quarantined), into
  ``bronze.entity_<type>`` as delivered: no column list is published, so the schema is the
  files' own (new columns merge), with the site and the snapshot hour taken from the path.
- ``history``: the type-2 logic (DataFrames in, DataFrames out).
- ``silver``: ``silver.entity_<type>_history``, a version per change of a row's content, and
  ``ops.snapshot_hours``, what was applied.
"""

# Columns bronze adds to what a file delivers (a delivered column of the same name is kept as
# ``delivered_<name>``).
LINEAGE = (
    "snapshot_site_luid",
    "snapshot_hour",
    "source_file",
    "source_file_size",
    "source_file_mtime",
    "run_id",
    "ingest_ts",
)

# The name every file `auditlake inventory` writes starts with: for a site, type and hour that both
# Tableau and the inventory delivered, silver takes Tableau's rows (pipelines/inventory).
INVENTORY_PREFIX = "inventory-"
