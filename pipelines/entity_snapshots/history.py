"""Type-2 history from complete snapshots (DataFrames in, DataFrames out; no I/O).

A snapshot is a site's whole state of one entity type at an hour. Per row key (the entity's LUID
by default) the history keeps a version per distinct content: a version starts at the first
snapshot hour that shows that content and ends (``valid_to``) at the first later hour that shows
other content or no row at all; a version still shown by the newest snapshot is current
(``valid_to`` NULL). Storage grows with changes, not with hours.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pipelines.entity_snapshots import INVENTORY_PREFIX, LINEAGE

# silver's own columns besides what the snapshots deliver
HISTORY_COLUMNS = ("site_luid", "entity_key", "valid_from", "valid_to", "is_current", "row_hash", "source_file")


def payload_columns(snapshots: DataFrame) -> list[str]:
    """The delivered columns of a bronze entity frame."""
    return [c for c in snapshots.columns if c not in LINEAGE]


def prefer_tableau(snapshots: DataFrame) -> DataFrame:
    """Bronze rows of one type -> the same, less the inventory's rows of every (site, hour) that Tableau's
    own snapshot files also delivered: one state per hour, and Tableau's is the one it keeps itself."""
    name = F.regexp_extract(F.col("source_file"), r"([^/]*)$", 1)
    from_inventory = name.startswith(INVENTORY_PREFIX)
    tableau_too = F.max((~from_inventory).cast("int")).over(Window.partitionBy("snapshot_site_luid", "snapshot_hour"))
    return (
        snapshots.withColumn("_inventory", from_inventory)
        .withColumn("_tableau_too", tableau_too)
        .where(~F.col("_inventory") | (F.col("_tableau_too") == 0))
        .drop("_inventory", "_tableau_too")
    )


def keyed(snapshots: DataFrame, key_columns: list[str]) -> DataFrame:
    """Bronze rows -> (payload, site_luid, snapshot_hour, source_file, entity_key, row_hash), one row
    per key and hour (a key twice in one snapshot: the row of the later file wins, counted by the caller).
    The key is lower-cased: a LUID may arrive in either case. The hash is over the delivered
    content, sorted by name, without NULLs: a new column that is still empty changes no version."""
    payload = sorted(payload_columns(snapshots))
    key = F.lower(F.concat_ws("|", *[F.coalesce(F.col(f"`{k}`").cast("string"), F.lit("")) for k in key_columns]))
    content = F.to_json(F.struct(*[F.col(f"`{c}`") for c in payload]))
    rows = snapshots.select(
        *[F.col(f"`{c}`") for c in payload_columns(snapshots)],
        F.col("snapshot_site_luid").alias("site_luid"),
        "snapshot_hour",
        "source_file",
        key.alias("entity_key"),
        F.sha2(content, 256).alias("row_hash"),
    )
    latest = Window.partitionBy("site_luid", "entity_key", "snapshot_hour").orderBy(F.col("source_file").desc())
    return rows.withColumn("_n", F.row_number().over(latest)).where("_n = 1").drop("_n")


# a row key's sequence of contents: one per entity type, site and key
SEQUENCE = ("entity_type", "site_luid", "entity_key")


def transitions(keys: DataFrame, hours: DataFrame, open_versions: DataFrame) -> DataFrame:
    """-> one row per change of a key's content at the hours applied, every entity type at once:
    (entity_type, site_luid, entity_key, snapshot_hour, row_hash, valid_to, closes).

    ``keys``: (entity_type, site_luid, entity_key, snapshot_hour, row_hash) of the ``keyed`` rows to
    apply; ``hours``: (entity_type, site_luid, snapshot_hour) of those snapshots, each later than every
    hour applied before for its type and site; ``open_versions``: the histories' current versions
    (entity_type, site_luid, entity_key, row_hash, valid_from).
    A change with a ``row_hash`` starts a version (``valid_to``: the key's next change, NULL while
    current); one without is the key's absence. ``closes``: on a key's first change, the ``valid_from``
    of the open version it ends (NULL when none was open)."""
    prior = open_versions.select(
        *SEQUENCE, "row_hash", F.col("valid_from").alias("snapshot_hour"), F.lit(True).alias("_prior")
    )
    every_key = keys.select(*SEQUENCE).union(prior.select(*SEQUENCE)).distinct()
    # every key of a site at every new hour of that site: a key missing from a snapshot is absent
    grid = (
        every_key.join(hours, ["entity_type", "site_luid"])
        .join(keys, [*SEQUENCE, "snapshot_hour"], "left")
        .withColumn("_prior", F.lit(False))
    )
    by_key = Window.partitionBy(*SEQUENCE).orderBy("snapshot_hour")
    moved = (
        grid.unionByName(prior)
        .withColumn("_before", F.lag("row_hash").over(by_key))
        .withColumn(
            "_open_from", F.max(F.when(F.col("_prior"), F.col("snapshot_hour"))).over(Window.partitionBy(*SEQUENCE))
        )
        .where(~F.col("_prior") & ~F.col("row_hash").eqNullSafe(F.col("_before")))
    )
    return moved.select(
        *SEQUENCE,
        "snapshot_hour",
        "row_hash",
        F.lead("snapshot_hour").over(by_key).alias("valid_to"),
        F.when(F.lag("snapshot_hour").over(by_key).isNull(), F.col("_open_from")).alias("closes"),
    )


def new_versions(moved: DataFrame, rows: DataFrame) -> DataFrame:
    """One type's ``transitions`` that start a version, with the delivered columns of its ``keyed`` rows."""
    return (
        moved.where(F.col("row_hash").isNotNull())
        .select("site_luid", "entity_key", "snapshot_hour", "valid_to")
        .join(rows, ["site_luid", "entity_key", "snapshot_hour"])
        .withColumnRenamed("snapshot_hour", "valid_from")
        .withColumn("is_current", F.col("valid_to").isNull())
    )


def closings(moved: DataFrame) -> DataFrame:
    """One type's open versions that its ``transitions`` end: (site_luid, entity_key, valid_from, valid_to)."""
    return moved.where(F.col("closes").isNotNull()).select(
        "site_luid", "entity_key", F.col("closes").alias("valid_from"), F.col("snapshot_hour").alias("valid_to")
    )
