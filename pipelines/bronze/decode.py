"""Files -> lines, one verdict per file: the part of bronze that must not let one bad file stop
the others.

Spark's text source decompresses by file name and fails the whole job on a file that is not the
gzip its name says, or a gzip stream cut short (and ``ignoreCorruptFiles`` would keep half a
file, silently). So bronze reads the raw bytes (``binaryFile``) and splits them here, in Spark's
Python workers (``mapInArrow``): each file yields its lines and one summary row, ``landed`` or
``quarantined`` with a reason. Lines are split as Hadoop's line reader splits them (``\\n``,
``\\r\\n`` or ``\\r``; no empty last line after a final break) and a UTF-8 byte-order mark at the
start of a file is dropped, so the text is what ``spark.read.text`` would give.
"""

from __future__ import annotations

import gzip
import re
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

DECODED_SCHEMA = (
    "source_file string, source_file_size long, source_file_mtime timestamp, line_no long, value string, "
    "file_status string, file_reason string, file_detail string, file_lines long"
)
_ARROW_SCHEMA = pa.schema(
    [
        ("source_file", pa.string()),
        ("source_file_size", pa.int64()),
        ("source_file_mtime", pa.timestamp("us", tz="UTC")),
        ("line_no", pa.int64()),
        ("value", pa.string()),
        ("file_status", pa.string()),
        ("file_reason", pa.string()),
        ("file_detail", pa.string()),
        ("file_lines", pa.int64()),
    ]
)
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = "\ufeff"
_BREAK = re.compile(r"\r\n|\r|\n")
_ROWS_PER_BATCH = 65_536


def lineage_path(path: str) -> str:
    """Spark names a local file ``file:/x/y``; lineage keeps the plain ``/x/y`` (URIs stay as they are)."""
    if path.startswith("file://"):
        path = path[len("file://"):]
    elif path.startswith("file:"):
        path = path[len("file:"):]
    return path


def split_lines(data: bytes) -> list[str]:
    text = data.decode("utf-8", errors="replace")
    if text.startswith(_BOM):
        text = text[1:]
    if not text:
        return []
    lines = _BREAK.split(text) if "\r" in text else text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def decode_file(path: str, data: bytes) -> tuple[list[str], str, str | None, str | None]:
    """-> (lines, verdict, reason, detail) for one file's bytes."""
    gzipped = data[:2] == _GZIP_MAGIC
    if path.lower().endswith(".gz") and not gzipped:
        return [], QUARANTINED, NOT_GZIP, f"named .gz but not gzip (starts with {data[:8]!r})"
    if gzipped:
        try:
            data = gzip.decompress(data)
        except EOFError as exc:
            return [], QUARANTINED, TRUNCATED_GZIP, f"gzip stream cut short (an interrupted copy?): {exc}"
        except (gzip.BadGzipFile, zlib.error, OSError) as exc:
            return [], QUARANTINED, CORRUPT_GZIP, f"gzip stream is corrupt: {exc}"
    lines = split_lines(data)
    return lines, LANDED, None if lines else EMPTY_FILE, None


def decode_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: binaryFile rows (path, modificationTime, length, content) -> DECODED_SCHEMA."""
    cols: dict[str, list] = {name: [] for name in _ARROW_SCHEMA.names}

    def emit(path, size, mtime, line_no, value, status, reason, detail, n):
        for name, v in zip(_ARROW_SCHEMA.names, (path, size, mtime, line_no, value, status, reason, detail, n),
                           strict=True):
            cols[name].append(v)

    def flush() -> pa.RecordBatch:
        batch = pa.RecordBatch.from_arrays([pa.array(cols[n], type=_ARROW_SCHEMA.field(n).type)
                                            for n in _ARROW_SCHEMA.names], schema=_ARROW_SCHEMA)
        for values in cols.values():
            values.clear()
        return batch

    for batch in batches:
        d = batch.to_pydict()
        for raw_path, mtime, size, content in zip(d["path"], d["modificationTime"], d["length"], d["content"],
                                                  strict=True):
            path = lineage_path(raw_path)
            lines, status, reason, detail = decode_file(path, content)
            n = len(lines)
            cols["source_file"].extend([path] * n)
            cols["source_file_size"].extend([size] * n)
            cols["source_file_mtime"].extend([mtime] * n)
            cols["line_no"].extend(range(n))
            cols["value"].extend(lines)
            for name in ("file_status", "file_reason", "file_detail", "file_lines"):
                cols[name].extend([None] * n)
            emit(path, size, mtime, None, None, status, reason, detail, n)  # the file's summary row
            if len(cols["value"]) >= _ROWS_PER_BATCH:
                yield flush()
    if cols["value"]:
        yield flush()
