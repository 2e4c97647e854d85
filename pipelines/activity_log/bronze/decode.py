"""Files judged one by one (gzip, Parquet): the part of bronze that must not let one bad file stop the others.

Spark's text source decompresses by file name and fails the whole job on a file that is not the
gzip its name says, or on a gzip stream cut short (``ignoreCorruptFiles`` would keep half a file,
silently). So before the lines are read, bronze reads the raw bytes of the new ``.gz`` files
(``binaryFile``) and decompresses each in Spark's Python workers (``mapInArrow``), keeping only a
verdict per file; the files that pass are then read with the rest by Spark's own text source.
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Iterator

import pyarrow as pa

# file verdicts
LANDED, QUARANTINED = "landed", "quarantined"
# why a file is quarantined
NOT_GZIP = "not_gzip"
TRUNCATED_GZIP = "truncated_gzip"
CORRUPT_GZIP = "corrupt_gzip"
UNREADABLE = "unreadable"
EMPTY_FILE = "empty_file"  # landed, with no line: recorded so it is not read again

CHECK_SCHEMA = "path string, file_status string, file_reason string, file_detail string"
_ARROW_SCHEMA = pa.schema([(n, pa.string()) for n in ("path", "file_status", "file_reason", "file_detail")])
_GZIP_MAGIC = b"\x1f\x8b"


def check_gzip(data: bytes) -> tuple[str, str | None, str | None]:
    """-> (verdict, reason, detail) for the bytes of a file named ``.gz``."""
    if data[:2] != _GZIP_MAGIC:
        return QUARANTINED, NOT_GZIP, f"named .gz but not gzip (starts with {data[:8]!r})"
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:  # every member, CRC and length checked
            while stream.read(1 << 20):
                pass
    except EOFError as exc:
        return QUARANTINED, TRUNCATED_GZIP, f"gzip stream cut short (an interrupted copy?): {exc}"
    except (gzip.BadGzipFile, zlib.error, OSError) as exc:
        return QUARANTINED, CORRUPT_GZIP, f"gzip stream is corrupt: {exc}"
    return LANDED, None, None


NOT_PARQUET = "not_parquet"


def check_parquet(data: bytes) -> tuple[str, str | None, str | None]:
    """-> (verdict, reason, detail) for the bytes of an entity snapshot: every row group readable."""
    import pyarrow.parquet as pq

    try:
        pq.read_table(pa.BufferReader(data))
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several kinds for a damaged file
        return QUARANTINED, NOT_PARQUET, f"not a readable Parquet file ({len(data)} bytes): {str(exc)[:200]}"
    return LANDED, None, None


def check_batches(batches: Iterator[pa.RecordBatch], check=check_gzip) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: binaryFile rows (path, content, ...) -> CHECK_SCHEMA, one row per file."""
    for batch in batches:
        d = batch.select(["path", "content"]).to_pydict()
        verdicts = [check(content) for content in d["content"]]
        yield pa.RecordBatch.from_arrays(
            [pa.array(d["path"], pa.string())] + [pa.array([v[i] for v in verdicts], pa.string()) for i in range(3)],
            schema=_ARROW_SCHEMA,
        )
