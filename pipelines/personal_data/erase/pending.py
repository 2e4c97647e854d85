"""The erasure written down before anything is rewritten: a state file under the checkpoints (it holds
the clear values a re-run needs, so never a Delta table), saved after each table, deleted at the end.
Each file is sealed with the lake's signing key (pipelines/integrity/sealed.py): a state file the lake
did not write is never finished, so planting one in the folder erases nobody."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from pipelines.config.load import Config
from pipelines.integrity.sealed import NotSealed, seal, unseal
from pipelines.lake import storage
from pipelines.personal_data.erase.person import Person
from pipelines.personal_data.erase.record import ErasureReport

PENDING_DIR = "erasure_pending"  # beside the stream checkpoints: the state of an erasure not finished
REFUSED_SUFFIX = ".refused"  # a state file whose seal did not hold, kept for whoever investigates


@dataclass
class PendingErasure:
    """What an erasure needs to finish after a crash, written before anything is rewritten.

    It holds the person's identifiers in clear (a re-run cannot resolve them again once silver is
    rewritten), so it lives in a file under the checkpoint folder, not in a Delta table (whose old
    versions and log statistics would keep them), and is deleted when the erasure is done."""

    erasure_id: str
    started_at: str  # ISO 8601, UTC
    requested_by: str
    identifier_kind: str
    keys: list[str]
    names: list[str]
    tokens: dict[str, str]  # identifier -> token
    tables: list[str]  # every table to pseudonymise, in order (bronze, silver, ops, gold)
    rows_by_table: dict[str, int]  # rows rewritten (held an identifier), kept after each table's rewrite
    gold_was_current: bool
    vacuum_retain_hours: int
    seq: int = 0  # the state file's number (each save writes the next one)
    # each table's version before the erasure: where its history is searched for the erasure's commit
    # (none in a state file written before they were kept: its counts were taken before each rewrite)
    versions_before: dict[str, int] = field(default_factory=dict)
    # Server log pieces rewritten: path -> [SHA-256 before, after], kept before each piece is replaced
    files: dict[str, list[str]] = field(default_factory=dict)

    def person(self) -> Person:
        return Person(self.identifier_kind, set(self.keys), set(self.names))

    def report(self) -> ErasureReport:
        touched = {t: n for t, n in self.rows_by_table.items() if n}
        return ErasureReport(
            self.erasure_id,
            self.identifier_kind,
            sorted(set(self.tokens.values())),
            touched,
            self.vacuum_retain_hours,
            list(touched),
        )


def _pending_dir(cfg: Config) -> str:
    return storage.join(cfg.checkpoint_dir, PENDING_DIR)


def load_pending(spark: SparkSession, cfg: Config, log=print) -> PendingErasure | None:
    """The erasure begun and not finished, if any: its newest complete state file whose seal holds.
    A file whose seal does not hold is renamed ``….refused`` and named in the log: never finished."""
    folder = _pending_dir(cfg)
    names = sorted(
        (
            n
            for n, is_dir in storage.list_status(spark, folder)
            if not is_dir and n.endswith(".json") and not n.startswith(".")
        ),
        reverse=True,
    )
    for name in names:  # a kill mid-write leaves the newest file cut short: the one before is whole
        path = storage.join(folder, name)
        try:
            text = storage.read_text(spark, path) or ""
        except Py4JJavaError as exc:  # a local file edited behind Hadoop's checksum
            if "ChecksumException" not in str(exc):
                raise
            text = None
        try:
            sealed = json.loads(text) if text is not None else None
        except json.JSONDecodeError:
            continue
        try:
            if sealed is None:
                raise NotSealed("its bytes do not match the checksum written with it")
            return PendingErasure(**unseal(cfg, sealed))
        except (NotSealed, TypeError) as exc:
            kept = _set_aside(spark, path, text)
            log(
                f"erase: {path} is not an erasure this lake began ({exc}): not finished, kept as {kept} "
                "(someone who can write the lake's folders wrote it, or changed it)"
            )
    return None


def _set_aside(spark: SparkSession, path: str, text: str | None) -> str:
    """``path`` renamed ``….refused-<time>`` (never over an earlier one), its bytes as they are (a local
    file is renamed: its text may not have been readable); -> the new name."""
    target = f"{path}{REFUSED_SUFFIX}-{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}"
    local = storage.local_path(path)
    if local is None:
        storage.write_text(spark, target, text or "")
        storage.delete(spark, path)
    else:
        os.replace(local, storage.local_path(target))
        crc = os.path.join(os.path.dirname(local), f".{os.path.basename(local)}.crc")  # Hadoop's, now of nothing
        if os.path.exists(crc):
            os.remove(crc)
    return target.rsplit("/", 1)[-1]


def save_pending(spark: SparkSession, cfg: Config, pending: PendingErasure) -> None:
    """Write the state as a new file, then remove the older ones (never overwrite the last whole one)."""
    folder = _pending_dir(cfg)
    pending.seq += 1
    name = f"{pending.seq:06d}.json"
    storage.write_text(spark, storage.join(folder, name), json.dumps(seal(cfg, asdict(pending)), sort_keys=True))
    for old, is_dir in storage.list_status(spark, folder):
        if not is_dir and old.endswith(".json") and old < name:
            storage.delete(spark, storage.join(folder, old))


def clear_pending(spark: SparkSession, cfg: Config) -> None:
    if storage.exists(spark, _pending_dir(cfg)):
        storage.delete(spark, _pending_dir(cfg))
