"""The landing folder: Tableau Server's log pieces rewritten, and the deliveries that still hold the person counted.

The pieces under ``<landing>/server/`` (pipelines/server_logs/) are the lake's own archive of Server's
log files, which Server deletes: raw lines in clear that only the lake keeps. An erasure rewrites
each piece that holds the person, line by line with the very rewrite it gives bronze's raw lines,
so a piece's lines stay valid JSON and equal to bronze's. Each rewrite is written down in
``ops.erased_files`` (path, new size and time, SHA-256 before and after): the file ledger takes that
version for the landed one (not a new file), and the erasure's signed record lists it, so
``auditlake verify`` accepts exactly that hash.

Deliveries (Tableau Cloud's, ``auditlake pull``'s, an S3 replica's) are Tableau's files, not the
lake's: a sync would bring the original back, and they are erased at the source. They are counted,
not rewritten.
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.activity_log import FAMILIES, SERVER_LOG
from pipelines.config.load import Config
from pipelines.lake import storage
from pipelines.lake.delta_tables import create_table_if_missing
from pipelines.lake.table_names import tables
from pipelines.personal_data.erase.pending import PendingErasure, save_pending
from pipelines.personal_data.erase.person import Person
from pipelines.personal_data.erase.rewrite import java_regex, pseudonymise
from pipelines.runtime.spark_session import append_rows

BATCH_BYTES = 256 << 20  # pieces read and rewritten together at most (a piece is at most 64 MiB)
ERASED_FILES_SCHEMA = (
    "erasure_id string, path string, size long, mtime timestamp, sha256_before string, sha256_after string, "
    "rewritten_at timestamp"
)


def landed_files_holding(spark: SparkSession, cfg: Config, tokens: list[str]) -> tuple[list[str], list[str]]:
    """(Server log pieces, other landed files) whose lines bronze holds with one of ``tokens``, after
    bronze was rewritten.

    Found from bronze, not by reading the landing tree: every line of a landed file is a bronze row
    naming its file, so the rows the erasure rewrote name exactly the files that held the person, in
    one columnar scan of two columns, where reading the tree would read every piece the archive has
    kept for years. A piece copied by a refresh killed before bronze landed it is not named: it lands
    in clear, as new events of the person would, and needs another erasure."""
    t = tables(cfg)
    if not tokens:
        return [], []
    pattern = "|".join(java_regex(token) for token in tokens)
    files: set[str] = set()
    for family in FAMILIES:
        table = t.bronze_raw(family)
        if spark.catalog.tableExists(table):
            rows = spark.table(table).where(F.col("raw_line").rlike(pattern)).select("source_file").distinct()
            files |= {r["source_file"] for r in rows.collect()}
    if not files or not spark.catalog.tableExists(t.file_ledger):
        return [], sorted(files)
    # the ledger says which files are pieces (their layout), whatever root they were landed from
    pieces = {
        r["path"]
        for r in spark.table(t.file_ledger)
        .where((F.col("layout") == SERVER_LOG) & F.col("path").isin(*files))
        .select("path")
        .distinct()
        .collect()
    }
    return sorted(pieces), sorted(files - pieces)


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _text(line: bytes) -> str:
    """A line as bronze's text reader gives it: without the carriage return of a CRLF end."""
    return line.removesuffix(b"\r").decode("utf-8", errors="replace")


def rewritten_pieces(
    spark: SparkSession, contents: dict[str, bytes], person: Person, tokens: dict[str, str]
) -> dict[str, bytes]:
    """-> {path: new bytes} for the pieces of ``contents`` that hold an identifier. The lines that may
    hold one go through Spark together, with ``pseudonymise`` (the rewrite of bronze's raw lines: a
    Java regular expression is not Python's), and the others keep their bytes."""
    needles = [value.casefold() for value in person.identifiers()]
    paths = sorted(contents)
    wanted = []
    for f, path in enumerate(paths):
        for i, line in enumerate(_lines(contents[path])):
            text = _text(line)
            if any(n in text.casefold() for n in needles):
                wanted.append((f, i, text))
    if not wanted:
        return {}
    frame = spark.createDataFrame(wanted, "f int, i int, line string")
    new_lines = {
        (r["f"], r["i"]): r["new"]
        for r in frame.select("f", "i", "line", pseudonymise(F.col("line"), person, tokens).alias("new"))
        .where(F.col("new") != F.col("line"))
        .collect()
    }
    out = {}
    for f, path in enumerate(paths):
        lines = _lines(contents[path])
        changed = False
        for i, line in enumerate(lines):
            new = new_lines.get((f, i))
            if new is not None:
                lines[i] = new.encode("utf-8") + (b"\r" if line.endswith(b"\r") else b"")
                changed = True
        if changed:
            out[path] = b"\n".join(lines)
    return out


def _replace_whole(spark: SparkSession, location: str, data: bytes) -> None:
    """``data`` in place of the file: locally a hidden temporary file, synced, renamed over it (a kill
    leaves the old file or the new one, never a part); in object storage one upload, which is whole."""
    local = storage.local_path(location)
    if local is None:
        storage.write_bytes(spark, location, data)
        return
    folder, name = os.path.split(local)
    partial = os.path.join(folder, f".{name}.erasing")  # hidden: no listing takes it
    with open(partial, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(partial, local)
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read(spark: SparkSession, location: str) -> bytes | None:
    local = storage.local_path(location)
    if local is None:
        return storage.read_bytes(spark, location) if storage.exists(spark, location) else None
    try:
        with open(local, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def rewrite_server_pieces(spark: SparkSession, cfg: Config, pending: PendingErasure, log=print) -> int:
    """Rewrite the Server log pieces holding the person (after bronze was rewritten) and write each one
    down in ``ops.erased_files``; -> landed delivery files that still hold the person (not rewritten).

    Safe to repeat: a batch's new contents are kept in the state file before its pieces are replaced,
    a piece rewritten already holds no identifier, so a re-run rewrites only what a kill left (to the
    same bytes), and records every piece the state names (once). Batches bound the bytes in memory."""
    pieces, deliveries = landed_files_holding(spark, cfg, sorted(set(pending.tokens.values())))
    batch: dict[str, bytes] = {}
    for i, path in enumerate(pieces):
        data = _read(spark, path)
        if data is not None:
            batch[path] = data
        if batch and (i == len(pieces) - 1 or sum(map(len, batch.values())) >= BATCH_BYTES):
            _rewrite_batch(spark, cfg, pending, batch)
            batch = {}
    _record_files(spark, cfg, pending)
    if pending.files:
        log(f"erase: {len(pending.files)} Tableau Server log pieces under the landing folder rewritten")
    return len(deliveries)


def _rewrite_batch(spark: SparkSession, cfg: Config, pending: PendingErasure, contents: dict[str, bytes]) -> None:
    rewritten = rewritten_pieces(spark, contents, pending.person(), pending.tokens)
    if not rewritten:
        return
    for path, data in rewritten.items():
        pending.files[path] = [hashlib.sha256(contents[path]).hexdigest(), hashlib.sha256(data).hexdigest()]
    save_pending(spark, cfg, pending)
    for path, data in sorted(rewritten.items()):
        _replace_whole(spark, path, data)


def _size_and_mtime(spark: SparkSession, location: str) -> tuple[int, datetime]:
    """As bronze's listing reads them (a local file's time from its nanoseconds, as the listing does)."""
    local = storage.local_path(location)
    if local is not None:
        st = os.stat(local)
        return st.st_size, datetime.fromtimestamp(st.st_mtime_ns // 1_000_000 / 1000, tz=UTC)
    fs, where = storage.filesystem(spark, location)
    status = fs.getFileStatus(where)
    return int(status.getLen()), datetime.fromtimestamp(status.getModificationTime() / 1000, tz=UTC)


def _record_files(spark: SparkSession, cfg: Config, pending: PendingErasure) -> None:
    """The pieces the erasure rewrote, in ``ops.erased_files`` (those not there yet): the version the
    file ledger takes for the landed one, and what the erasure's signed record lists."""
    if not pending.files:
        return
    table = tables(cfg).erased_files
    create_table_if_missing(spark, table, ERASED_FILES_SCHEMA)
    done = {
        r["path"] for r in spark.table(table).where(F.col("erasure_id") == pending.erasure_id).select("path").collect()
    }
    now = datetime.now(UTC)
    rows = []
    for path, (before, after) in sorted(pending.files.items()):
        if path in done:
            continue
        size, mtime = _size_and_mtime(spark, path)
        rows.append((pending.erasure_id, path, size, mtime, before, after, now))
    if rows:
        append_rows(spark, cfg, rows, ERASED_FILES_SCHEMA, table)


def deliveries_note(count: int) -> str | None:
    """Tableau's deliveries are not the lake's to rewrite: say how many still hold the person."""
    if not count:
        return None
    return (
        f"erase: not erased: {count} landed delivery files still hold the person in clear (Tableau's deliveries "
        "under the landing folder, not the lake's archive); delete or replace them at the source too "
        "(docs/operations.md#erasure-gdpr-article-17)"
    )
