"""Locations: a local path or any Hadoop filesystem URI (``s3a://``, ``abfss://``, ``hdfs://``, ``file://``).

Tables (the warehouse), stream checkpoints and the landing folder may live in object storage
(``conf/cluster.yaml``), where executors on other machines can reach them. Spark reads and writes
those itself; the few things the driver touches directly (does the landing folder exist, the
small id file beside a checkpoint) go through Hadoop's FileSystem API here, for local paths too,
so a single code path serves both and the tests exercise it.
"""

from __future__ import annotations

import re

from pyspark.sql import DataFrame, DataFrameReader, SparkSession

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def is_uri(location: str) -> bool:
    """``s3a://b/x`` or ``file:/x`` (a scheme), as opposed to a plain local path."""
    return bool(_SCHEME.match(location)) and not re.match(r"^[A-Za-z]:[\\/]", location)


def local_path(location: str) -> str | None:
    """The local file system path of a plain path or a ``file:`` URI; None for any other scheme."""
    if location.startswith("file:"):
        return "/" + location[len("file:") :].lstrip("/")
    return None if is_uri(location) else location


def join(location: str, *parts: str) -> str:
    return "/".join([location.rstrip("/"), *(p.strip("/") for p in parts)])


def filesystem(spark: SparkSession, location: str):
    """(Hadoop FileSystem, Path) of ``location``."""
    path = spark._jvm.org.apache.hadoop.fs.Path(location)
    return path.getFileSystem(spark._jsc.hadoopConfiguration()), path


_fs = filesystem

# Spark globs a path with one of these in it; escaped, the path names just that file.
_GLOB_CHAR = re.compile(r"([\\{}\[\]*?])")


def literal_path(path: str) -> str:
    """``path`` as Spark's readers take it to mean that one file (glob characters escaped)."""
    return _GLOB_CHAR.sub(r"\\\1", path)


def load_files(spark: SparkSession, reader: DataFrameReader, paths: list[str]) -> DataFrame:
    """``reader.load(paths)`` (its format and options set), each path naming one file (``literal_path``).

    The paths cross to the JVM as one string: PySpark's own ``load(list)`` converts a list one element
    per py4j round trip, seconds for a landing of many small files, where one string is one call. NUL
    cannot occur in a path, so it separates them."""
    if not paths:
        raise ValueError("load_files: no paths")
    jvm = spark._jvm
    joined = "\u0000".join(literal_path(p) for p in paths)
    jpaths = jvm.java.util.regex.Pattern.compile("\u0000").splitAsStream(joined).toList()
    return DataFrame(reader._jreader.load(jvm.PythonUtils.toSeq(jpaths)), spark)


def is_dir(spark: SparkSession, location: str) -> bool:
    fs, path = _fs(spark, location)
    return bool(fs.exists(path) and fs.getFileStatus(path).isDirectory())


def exists(spark: SparkSession, location: str) -> bool:
    fs, path = _fs(spark, location)
    return bool(fs.exists(path))


def read_text(spark: SparkSession, location: str) -> str | None:
    """The file's text, or None when there is no such file."""
    fs, path = _fs(spark, location)
    if not fs.exists(path):
        return None
    stream = fs.open(path)
    try:
        return spark._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()


def read_bytes(spark: SparkSession, location: str) -> bytes:
    fs, path = _fs(spark, location)
    stream = fs.open(path)
    try:
        return bytes(spark._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
    finally:
        stream.close()


def create_new(spark: SparkSession, location: str, data: bytes) -> None:
    """Write a file that must not exist (``FileExistsError`` if it does): Hadoop's create without
    overwrite, which S3A checks before it uploads."""
    fs, path = _fs(spark, location)
    if fs.exists(path):
        raise FileExistsError(location)
    stream = fs.create(path, False)
    try:
        stream.write(bytearray(data))
    finally:
        stream.close()


def write_text(spark: SparkSession, location: str, text: str) -> None:
    write_bytes(spark, location, text.encode("utf-8"))


def write_bytes(spark: SparkSession, location: str, data: bytes) -> None:
    fs, path = _fs(spark, location)
    stream = fs.create(path, True)  # parents are created; an existing file is replaced
    try:
        stream.write(bytearray(data))
    finally:
        stream.close()


class Mark:
    """A small file beside the checkpoints that holds what a step last read to its end (a bronze table's
    version, a digest of what it knew): a run that finds the same value skips the step, at the cost of
    one file read instead of a scan or a stream's start. Written only after the step completed."""

    def __init__(self, checkpoint_dir: str, name: str):
        self.location = join(checkpoint_dir, name)

    def holds(self, spark: SparkSession, value: str) -> bool:
        return (read_text(spark, self.location) or "").strip() == value

    def record(self, spark: SparkSession, value: str) -> None:
        write_text(spark, self.location, value)


def list_status(spark: SparkSession, location: str) -> list[tuple[str, bool]]:
    """(name, is_directory) of each entry directly under ``location`` ([] when it is missing)."""
    fs, path = _fs(spark, location)
    if not fs.exists(path):
        return []
    return [(s.getPath().getName(), bool(s.isDirectory())) for s in fs.listStatus(path)]


def delete(spark: SparkSession, location: str) -> None:
    fs, path = _fs(spark, location)
    fs.delete(path, True)
