"""Each delivered file's verdict from one of ``decode``'s checks (gzip, Parquet), before bronze
reads it: shared by the Activity Log's landing and the entity snapshots'. Local files are judged on
the driver; files behind a URI in one Spark job that reads their bytes (``binaryFile``) and checks
them in the Python workers (``mapInArrow``)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.activity_log.bronze.decode import CHECK_SCHEMA, check_batches
from pipelines.activity_log.bronze.listing import ListedFile
from pipelines.lake import storage


def file_verdicts(
    spark: SparkSession, files: list[ListedFile], check, on_driver: bool | None = None
) -> dict[str, tuple[str, str | None, str | None]]:
    """path -> ``check(bytes)`` of every one of ``files`` that could be opened: local files on the
    driver (``on_driver`` None: when no path is a URI), else in a Spark job."""
    if not files:
        return {}
    if on_driver if on_driver is not None else not any(storage.is_uri(f.path) for f in files):
        # Local files: read and check them here, two at a time (zlib releases the GIL); no job.
        def judge(f: ListedFile) -> tuple[str, tuple]:
            try:
                with open(f.path, "rb") as fh:
                    return f.path, check(fh.read())
            except FileNotFoundError:
                return f.path, ("missing", None, None)

        with ThreadPoolExecutor(max_workers=2) as pool:
            return {path: v for path, v in pool.map(judge, files) if v[0] != "missing"}
    checked = (
        storage.load_files(
            spark, spark.read.format("binaryFile").option("ignoreMissingFiles", "true"), [f.path for f in files]
        )
        .mapInArrow(lambda batches: check_batches(batches, check), CHECK_SCHEMA)
        # binaryFile names a file as Hadoop prints its path (not URL-encoded): only the scheme goes
        .select(F.regexp_replace("path", r"^file:(//)?", "").alias("path"), "file_status", "file_reason", "file_detail")
    )
    return {r["path"]: (r["file_status"], r["file_reason"], r["file_detail"]) for r in checked.collect()}
