"""An erasure on the record: which trail rows it rewrote, each one's content hash from landing and the
hash of its content after, the tokens, when and on whose request; never a clear value.

An erasure rewrites bronze's raw content (tokens where identifiers were), so those rows no longer hash
to the ``content_hash`` stored at landing. ``verify`` accepts exactly the rewrites a signed record lists.
The record is taken after the erasure is done, from the rows themselves: every row whose content no
longer matches its landing hash and that no earlier record accounts for, holding one of the erasure's
tokens. It goes into the erasure's own digest, written by the run that finished it (a run killed before
that digest finishes the erasure again, from its sealed state, and writes it). So do the
landed files it rewrote (Tableau Server's log pieces, ``ops.erased_files``), each with its SHA-256
before and after: ``verify`` accepts a landed file whose hash is the one a record gave it.
"""

from __future__ import annotations

import re
from datetime import UTC

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.config.load import Config
from pipelines.integrity.digest_log import DigestLog
from pipelines.integrity.trail import trail_tables
from pipelines.lake.table_names import tables
from pipelines.personal_data.erase.person import TOKEN_PREFIX
from pipelines.personal_data.erase.record import DONE

TOKEN = re.compile(re.escape(TOKEN_PREFIX) + "[0-9a-f]{12}")


def accepted_rewrites(records: list[dict]) -> dict[tuple[str, str], str]:
    """(table, row id) -> the content hash the row must have now: the latest record's."""
    accepted: dict[tuple[str, str], str] = {}
    for record in records:
        for table, rows in record.get("rewrites", {}).items():
            for row_id, _landed, after in rows:
                accepted[(table, row_id)] = after
    return accepted


def accepted_files(records: list[dict]) -> dict[str, str]:
    """Landed file path -> the SHA-256 an erasure gave it (the latest record's)."""
    return {path: after for record in records for path, _before, after in record.get("files") or []}


def _rewritten_files(spark: SparkSession, cfg: Config) -> dict[str, list[list[str]]]:
    """Per erasure, the landed files it rewrote: [path, SHA-256 before, after] (``ops.erased_files``)."""
    table = tables(cfg).erased_files
    if not spark.catalog.tableExists(table):
        return {}
    out: dict[str, list[list[str]]] = {}
    for r in spark.table(table).orderBy("erasure_id", "path").collect():
        out.setdefault(r["erasure_id"], []).append([r["path"], r["sha256_before"], r["sha256_after"]])
    return out


def recorded_erasures(digest_log: DigestLog) -> list[dict]:
    """Every erasure record in the log, oldest first."""
    records = []
    for stored in digest_log.digests()[0]:
        parsed = stored.parsed() or {}
        records.extend(parsed.get("erasures") or [])
    return records


def changed_rows(spark: SparkSession, cfg: Config) -> dict[str, list]:
    """Per raw trail table, the rows whose content no longer hashes to their landing hash: (row id,
    landing hash, hash now, content now)."""
    changed = {}
    for table in trail_tables(tables(cfg)):
        if table.content is None or not spark.catalog.tableExists(table.name):
            continue
        changed[table.name] = (
            spark.table(table.name)
            .select(
                table.row_id.alias("row_id"),
                "content_hash",
                table.content_sha256.alias("now"),
                table.content.alias("content"),
            )
            .where(F.col("now") != F.col("content_hash"))
            .collect()
        )
    return changed


def is_token(value: object) -> bool:
    """An erasure's token as ``token_for`` makes it: ``erased:`` and twelve hex digits. Anything else (an
    empty string is in every text) claims no row."""
    return isinstance(value, str) and TOKEN.fullmatch(value) is not None


def erasure_records(
    spark: SparkSession, cfg: Config, recorded: set[str], digest_log: DigestLog, erasure_id: str
) -> list[dict]:
    """The record of erasure ``erasure_id``, which the running process has just finished, when it is done
    and not recorded yet ([] otherwise). Only the erasure's own run signs it: ``ops.erasures`` lies in the
    lake, and a row someone added there must never become a lawful rewrite in a routine run's digest."""
    table = tables(cfg).erasures
    if not spark.catalog.tableExists(table) or erasure_id in recorded:
        return []
    done = [
        r for r in spark.table(table).where((F.col("status") == DONE) & (F.col("erasure_id") == erasure_id)).collect()
    ]
    if not done:
        return []
    accepted = accepted_rewrites(recorded_erasures(digest_log))
    # each changed row no record accounts for goes to the newest of these erasures whose token it holds
    owner: dict[tuple[str, str], tuple[int, str, str]] = {}
    for name, rows in changed_rows(spark, cfg).items():
        for row in rows:
            if accepted.get((name, row["row_id"])) == row["now"]:
                continue
            holders = [
                i
                for i, e in enumerate(done)
                if any(is_token(tok) and tok in (row["content"] or "") for tok in e["tokens"] or [])
            ]
            if holders:
                owner[(name, row["row_id"])] = (holders[-1], row["content_hash"], row["now"])
    files = _rewritten_files(spark, cfg)
    records = []
    for i, erasure in enumerate(done):
        rewrites: dict[str, list] = {}
        for (name, row_id), (who, landed, now) in sorted(owner.items()):
            if who == i:
                rewrites.setdefault(name, []).append([row_id, landed, now])
        records.append(
            {
                "erasure_id": erasure["erasure_id"],
                "requested_by": erasure["requested_by"],
                "erased_at": erasure["erased_at"].astimezone(UTC).isoformat() if erasure["erased_at"] else None,
                "identifier_kind": erasure["identifier_kind"],
                "tokens": sorted(erasure["tokens"] or []),
                "rows_total": erasure["rows_total"],
                "rewrites": rewrites,
                "files": files.get(erasure["erasure_id"], []),
            }
        )
    return records
