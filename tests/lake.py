"""Test helper: the environment of a lakehouse variant (own data dir, GX context and schemas)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

# the bundled Write-Back export (its changes made by "maria.costa"; tests substitute the person they follow)
from auditlake_devtools.sample import BUNDLED_EXPORT  # noqa: F401  (tests import it from here)
from auditlake_devtools.variant import variant_environ as _variant
from tests.keys import signing_key_pem

# An environment holding only the keys a command that writes the lake needs (the analysts' pseudonym key,
# the digests' signing key):
# for tests that load the configuration from nothing but the variables they name.
KEYED = {"AUDITLAKE_PSEUDONYM_KEY": "test-pseudonym-key-" + "0" * 24, "AUDITLAKE_SIGNING_KEY": signing_key_pem()}


def variant_environ(lake_dir: Path, name: str) -> dict[str, str]:
    """A test's own lakehouse, ``<lake_dir>/<name>``, inside the session's metastore."""
    return _variant(lake_dir / name, name)


def use_variant(monkeypatch, lake_dir: Path, name: str) -> None:
    """Point the commands a test runs in-process (``pipelines.cli.main``, which reads the environment)
    at the test's own lakehouse ``<lake_dir>/<name>``."""
    for key, value in variant_environ(lake_dir, name).items():
        if key.startswith("AUDITLAKE__"):
            monkeypatch.setenv(key, value)


def move_day(generated: Path, landing: Path, day: str, family: str | None = None) -> int:
    """Deliver one day's files (``.../d=<day>/...``: events and entity snapshots) of a generated log
    into the landing folder: every family's, or ``family``'s (``site`` or ``tenant``) only."""
    moved = 0
    for path in sorted((generated / family if family else generated).rglob("*")):
        if path.is_file() and f"/d={day}/" in path.as_posix():
            target = landing / path.relative_to(generated)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(path, target)
            moved += 1
    return moved


def delta_versions(spark, names: list[str]) -> dict[str, int]:
    """The version of each Delta table of ``names`` (views skipped), for ``restore_versions``."""
    from pipelines.lake.delta_tables import table_version

    return {n: table_version(spark, n) for n in names if spark.catalog.getTable(n).tableType != "VIEW"}


def restore_versions(spark, cfg, versions: dict[str, int]) -> None:
    """Each table changed since ``delta_versions`` gave ``versions`` restored to that version, in one commit:
    a test's rows added to a shared lake, and the models built over them, undone without building those
    models again. A few at once, each planned as the small table it is: restoring is mostly the
    driver's planning, which one by one with the session's settings leaves the cores idle."""
    from pipelines.lake.delta_tables import for_each_table, table_version
    from pipelines.runtime.spark_session import small_tables

    changed = [name for name, version in versions.items() if table_version(spark, name) != version]
    with small_tables(spark, cfg, changed):
        for_each_table(lambda name: spark.sql(f"RESTORE TABLE {name} TO VERSION AS OF {versions[name]}"), changed)


# differs by run, not by data: when the row reached silver (the marts)
RUN_COLUMNS = ("silver_ingest_ts",)
# differ by run in any layer's tables: when and by which run a row was written
WRITE_COLUMNS = (
    "bronze_id",
    "ingest_ts",
    "run_id",
    "recorded_at",
    "bronze_run_id",
    "bronze_ingest_ts",
    "silver_run_id",
    "silver_ingest_ts",
    "processed_at",
    "validated_at",
)


def _comparable(frame, ignore: tuple[str, ...] = ()):
    """``frame`` without ``ignore``, its maps as their sorted entries (set operations and hashes refuse maps)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import MapType

    frame = frame.drop(*ignore)
    return frame.withColumns(
        {
            f.name: F.array_sort(F.map_entries(f"`{f.name}`"))
            for f in frame.schema.fields
            if isinstance(f.dataType, MapType)
        }
    )


def row_differences(left, right, ignore: tuple[str, ...] = ()) -> int:
    """Rows of either frame missing from the other (a multiset difference, both ways)."""
    left, right = _comparable(left, ignore), _comparable(right, ignore)
    return left.exceptAll(right).count() + right.exceptAll(left).count()


def fingerprints(frames: dict, ignore: dict[str, tuple[str, ...]] | None = None) -> dict[str, tuple]:
    """``fingerprint`` of each named frame (``ignore``: its columns to leave out, by name), in one job
    over them all, not a job each (a check over every mart pays one job's fixed price, not thirty). A
    table's own ``count()`` is cheaper on its own: Delta answers it from the log."""
    from functools import reduce

    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    parts = []
    for name, frame in frames.items():
        frame = _comparable(frame, (ignore or {}).get(name, ()))
        cols = [F.col(f"`{c}`") for c in frame.columns]
        parts.append(frame.select(F.lit(name).alias("_name"), F.xxhash64(*cols).alias("_x"), F.hash(*cols).alias("_h")))
    sums = (
        reduce(DataFrame.unionByName, parts)
        .groupBy("_name")
        .agg(
            F.count(F.lit(1)),
            F.sum(F.col("_x").cast("decimal(38,0)")),
            F.sum(F.col("_h").cast("decimal(38,0)")),
        )
    )
    got = {r[0]: tuple(r[1:]) for r in sums.collect()}
    return {name: got.get(name, (0, None, None)) for name in frames}  # an empty frame: no group


def fingerprint(frame, ignore: tuple[str, ...] = (), also: tuple = ()) -> tuple:
    """A table's rows as a multiset, in one aggregate: their count and the sums of two hashes of each
    whole row (any order; a row changed, added or dropped changes it). For comparing a table with
    itself before and after a step without keeping a copy, or two tables in two aggregates instead of
    ``row_differences``' two set differences. ``also``: more aggregates of the same pass (over the
    columns not ignored), their values after those three."""
    from pyspark.sql import functions as F

    frame = _comparable(frame, ignore)
    cols = [F.col(f"`{c}`") for c in frame.columns]
    row = frame.agg(
        F.count(F.lit(1)),
        F.sum(F.xxhash64(*cols).cast("decimal(38,0)")),
        F.sum(F.hash(*cols).cast("decimal(38,0)")),
        *also,
    ).first()
    return tuple(row)


def holding_by_table(frames: dict, values: list[str]) -> dict[str, int]:
    """The rows of each frame holding a value (in any case, anywhere in the row read as JSON), the names
    with none left out, in one job over them all: reading the wide rows as JSON is most of the time, and
    one job over a lake's ~60 tables costs less than a job each. Not for counts: Delta answers a table's
    own count from its log."""
    from functools import reduce

    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    def text(name: str, frame: DataFrame) -> DataFrame:
        row = F.lower(F.to_json(F.struct(*[F.col(f"`{c}`") for c in frame.columns])))
        return frame.select(F.lit(name).alias("name"), row.alias("text"))

    hit = reduce(lambda a, b: a | b, [F.col("text").contains(v.lower()) for v in values])
    rows = reduce(DataFrame.unionByName, [text(name, frame) for name, frame in frames.items()])
    return {r["name"]: r["n"] for r in rows.where(hit).groupBy("name").agg(F.count("*").alias("n")).collect()}


def file_gone(folder: str | Path) -> str:
    """What a read of a Delta table's version says when a data file of that version under ``folder`` was
    vacuumed (Spark's error, raised through py4j as ``Py4JJavaError``): a pattern for ``pytest.raises``.
    ``folder`` may be the end of the path only (``silver.db/site_events``)."""
    return (
        r"\[FAILED_READ_FILE\.FILE_NOT_EXIST\] Encountered error while reading file \S*"
        + re.escape("/" + str(folder).strip("/"))
        + r"/\S+\. File does not exist\."
    )


def person_keys(spark, cfg):
    """Every LUID or user id silver holds as a person's key (lower case, as text), and every user LUID the
    users' snapshots hold, but those it also holds where nothing personal is (a group's LUID: a permission
    rule's grantee is a user or a group): what no analysts' table may hold in clear."""
    from functools import reduce

    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    from pipelines.lake.table_names import tables
    from pipelines.personal_data import NONE, PERSON_KEY, catalogue

    t = tables(cfg)
    keys, other = [], []
    for source in ("site", "tenant"):
        frame = spark.table(t.silver_events(source))
        keys.append(
            frame.select(
                F.explode(F.array(*[F.col(c).cast("string") for c in catalogue().columns(source, PERSON_KEY)]))
            )
        )
        text = [f.name for f in frame.schema.fields if isinstance(f.dataType, StringType)]
        other.append(
            frame.select(F.explode(F.array(*[F.col(c) for c in text if c in catalogue().columns(source, NONE)])))
        )
    keys.append(spark.table(f"{t.silver_schema}.entity_users_history").select(F.col("luid").cast("string")))
    other.append(spark.table(f"{t.silver_schema}.entity_groups_history").select(F.col("luid").cast("string")))
    found = reduce(DataFrame.union, keys).toDF("value").select(F.lower("value").alias("value"))
    theirs = reduce(DataFrame.union, other).toDF("value").select(F.lower("value").alias("value"))
    return found.where("value IS NOT NULL AND length(value) > 3").distinct().join(theirs, "value", "left_anti")


def cell_values(name: str, frame):
    """(mart, column, value) for every cell of ``frame`` as text: a scalar's value, each element of an
    array of scalars (a struct or map column: none of the marts has one)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType

    nested = (ArrayType, MapType, StructType)
    cells = []
    for f in frame.schema.fields:
        column = F.col(f"`{f.name}`")
        if isinstance(f.dataType, ArrayType) and not isinstance(f.dataType.elementType, nested):
            values = F.transform(column, lambda v: v.cast("string"))
        else:
            assert not isinstance(f.dataType, nested), f"{name}.{f.name}: {f.dataType.simpleString()}"
            values = F.array(column.cast("string"))
        cells.append(F.struct(F.lit(f.name).alias("column"), values.alias("values")))
    return frame.select(F.explode(F.array(*cells)).alias("cell")).select(
        F.lit(name).alias("mart"), "cell.column", F.explode("cell.values").alias("value")
    )


def clear_person_keys(spark, cfg, frames: dict) -> dict[str, str]:
    """``mart.column`` -> a person's LUID or id (``person_keys``) that a cell of ``frames`` (name -> frame)
    holds in clear, in one job over them all."""
    from functools import reduce

    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    keys = person_keys(spark, cfg).cache()
    assert keys.count() > 100
    cells = reduce(DataFrame.unionByName, [cell_values(name, frame) for name, frame in frames.items()])
    clear = cells.withColumn("value", F.lower("value")).join(keys, "value", "left_semi")
    found = {
        f"{r['mart']}.{r['column']}": r["value"]
        for r in clear.groupBy("mart", "column").agg(F.min("value").alias("value")).collect()
    }
    keys.unpersist()
    return found
