"""Hourly partitioned NDJSON output, in one of the layouts bronze reads.

``auditlake`` (the project's own):
``site/siteLuid=<luid>/y=YYYY/m=MM/d=DD/h=HH/eventType=<type>/part-NNNNN.json[.gz]``
``tenant/tenantId=<id>/y=YYYY/m=MM/d=DD/h=HH/eventType=<type>/part-NNNNN.json[.gz]``
``date_first`` (Tableau Cloud Manager, the S3 replica): ``pod=<pod>/siteLuid=<luid>/y=…/h=HH/eventType=<type>/…``,
tenant files without ``siteLuid=``; ``schema_first`` (Tableau's extractor): the event type before the hour.
Which files are gzip and which carry dirt is decided on the ``auditlake`` path, so every layout
holds the same bytes.

Lines are buffered per hour folder and written when the generator has moved
far enough past that hour; every (partition, hour, event type, part) group
becomes exactly one file. About one file in five is gzip-compressed, chosen
from a CRC of its relative path, so the choice does not depend on write order.
Gzip output is deterministic (``mtime=0``, empty file name).
"""

from __future__ import annotations

import gzip
import io
import zlib
from datetime import UTC, datetime
from pathlib import Path

from pipelines.activity_log.bronze.rows import BOM
from pipelines.config.settings import GENERATE_LAYOUTS

PARTITION_KEY = {"site": "siteLuid", "tenant": "tenantId"}
LAYOUTS = GENERATE_LAYOUTS  # the layouts bronze reads (conf generate.layout)
POD = "prod-useast-a"


def layout_dir(
    layout: str, family: str, partition: str, folder: str, event_type: str, type_key: str = "eventType"
) -> str:
    """The folder of one (family, partition, hour, event type) file in ``layout``; ``type_key``
    ``entityType`` for an entity snapshot, which Tableau puts where the event type would be."""
    if layout == "auditlake":
        return f"{family}/{PARTITION_KEY[family]}={partition}/{folder}/{type_key}={event_type}"
    site = f"/siteLuid={partition}" if family == "site" else ""  # Cloud Manager files: no tenant segment
    if layout == "date_first":
        return f"pod={POD}{site}/{folder}/{type_key}={event_type}"
    if layout == "schema_first":
        return f"pod={POD}{site}/{type_key}={event_type}/{folder}"
    raise ValueError(f"unknown layout {layout!r}; one of {', '.join(LAYOUTS)}")


def hour_folder(abs_hour: int) -> str:
    d = datetime.fromtimestamp(abs_hour * 3600, tz=UTC)
    return f"y={d.year:04d}/m={d.month:02d}/d={d.day:02d}/h={d.hour:02d}"


def entity_dir(layout: str, site_luid: str, abs_hour: int, entity: str) -> str:
    """The folder of one site's snapshot of ``entity`` at ``abs_hour`` (snapshots are per site only)."""
    return layout_dir(layout, "site", site_luid, hour_folder(abs_hour), entity, type_key="entityType")


def is_gzip_path(rel: str) -> bool:
    return zlib.crc32(rel.encode("utf-8")) % 5 == 0


class PartitionWriter:
    """Buffers ``(time, line)`` per hour and group; writes whole files on flush."""

    def __init__(self, out_dir: Path, stats, file_dirt=None, layout: str = "auditlake"):
        layout_dir(layout, "site", "x", "y=2026", "e")  # an unknown layout fails here, before any file
        self.layout = layout
        self.out = Path(out_dir)
        self.stats = stats
        self.file_dirt = file_dirt
        self.buckets: dict[int, dict[tuple, list]] = {}
        self._dirs: set[str] = set()

    def add(
        self, abs_hour: int, family: str, partition: str, event_type: str, us: int, line: str, part: int = 0
    ) -> None:
        b = self.buckets.get(abs_hour)
        if b is None:
            b = self.buckets[abs_hour] = {}
        key = (family, partition, event_type, part)
        lst = b.get(key)
        if lst is None:
            b[key] = [(us, line)]
        else:
            lst.append((us, line))

    def flush_before(self, abs_hour: int) -> None:
        for h in sorted(h for h in self.buckets if h < abs_hour):
            self._write_hour(h, self.buckets.pop(h), remaining=None)

    def close(self) -> None:
        remaining = sum(len(g) for g in self.buckets.values())
        for h in sorted(self.buckets):
            groups = self.buckets.pop(h)
            self._write_hour(h, groups, remaining=remaining)
            remaining -= len(groups)
        if self.file_dirt is not None:
            self.file_dirt.finish()

    def _write_hour(self, abs_hour: int, groups: dict, remaining: int | None) -> None:
        """Write one hour folder. ``remaining`` (files still to come, only known on the
        final flush) lets the file-level dirt make sure each kind appears often enough."""
        folder = hour_folder(abs_hour)
        keys = sorted(groups)
        for i, key in enumerate(keys):
            family, partition, event_type, part = key
            rows = groups[key]
            rows.sort(key=lambda r: r[0])
            lines = [r[1] for r in rows]
            rel_dir = f"{family}/{PARTITION_KEY[family]}={partition}/{folder}/eventType={event_type}"
            rel = f"{rel_dir}/part-{part:05d}.json"
            gz = is_gzip_path(rel)
            newline, bom, tail = "\n", False, None
            if self.file_dirt is not None:
                lines, newline, bom, tail, gz = self.file_dirt.apply(
                    lines, gz, None if remaining is None else remaining - i
                )
            text = newline.join(lines) + newline if lines else ""
            n_lines = len(lines)
            if tail is not None:
                text += tail
                n_lines += 1
            if bom:
                text = BOM + text
            data = text.encode("utf-8")
            if gz:
                rel += ".gz"
                buf = io.BytesIO()
                with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="", compresslevel=6) as fh:
                    fh.write(data)
                data = buf.getvalue()
            out_dir = layout_dir(self.layout, family, partition, folder, event_type)
            if out_dir not in self._dirs:
                (self.out / out_dir).mkdir(parents=True, exist_ok=True)
                self._dirs.add(out_dir)
            with open(self.out / out_dir / rel.rsplit("/", 1)[1], "wb") as fh:
                fh.write(data)
            self.stats.files += 1
            self.stats.gzip_files += int(gz)
            self.stats.lines += n_lines
            self.stats.bytes += len(data)
