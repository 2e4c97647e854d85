"""Writing a digest: what was landed since the last one, signed and chained to it.

A digest covers, per trail table (``trail``), the rows of every run after the last run the previous
digest covered (run ids begin with their UTC start, so they sort in time): a refresh killed after its
commits and before its digest is covered by the next digest, once. With the rows go the files those
runs landed or quarantined (each one's SHA-256, read now), the Delta commits made since (each commit
file's SHA-256), and the record of any erasure no digest holds yet. A refresh with nothing new writes a
digest too, with nothing in it but the period, so a missing period shows.
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.activity_log.bronze.ledger import LANDED, QUARANTINED
from pipelines.activity_log.bronze.rows import lineage_path
from pipelines.config.load import Config, secret
from pipelines.errors import CheckFailed
from pipelines.integrity import merkle
from pipelines.integrity.digest_log import FORMAT, DigestLog, StoredDigest, file_bytes, file_name, unsigned
from pipelines.integrity.erasures import erasure_records
from pipelines.integrity.signing import fingerprint, private_key, sign
from pipelines.integrity.trail import trail_tables
from pipelines.lake import storage
from pipelines.lake.delta_tables import commit_file_sha256s, table_version
from pipelines.lake.table_names import tables


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def file_sha256(spark: SparkSession | None, paths: list[str]) -> dict[str, str | None]:
    """Each file's SHA-256 (None: the file is gone). Local files are read by this process; others in
    one Spark job."""
    found: dict[str, str | None] = {}
    remote = []
    for path in paths:
        local = storage.local_path(path)
        if local is None:
            remote.append(path)
            continue
        try:
            digest = hashlib.sha256()
            with open(local, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            found[path] = digest.hexdigest()
        except FileNotFoundError:
            found[path] = None
    if remote:
        found.update(dict.fromkeys(remote))
        existing = [p for p in remote if storage.exists(spark, p)]
        if existing:
            frame = storage.load_files(spark, spark.read.format("binaryFile"), existing)
            path = lineage_path(F.col("path")).alias("path")
            for row in frame.select(path, F.sha2("content", 256).alias("sha")).collect():
                found[row["path"]] = row["sha"]
    return found


def _new_rows(spark: SparkSession, present: list, upto: dict[str, str]) -> dict[str, dict[str, dict]]:
    """{table: {run: {rows, root}}} for every run after the last one covered and not after now, all tables
    in one job. A run id is its start time first (``YYYYMMDDTHHMMSSZ-…``): a row claiming a run later than
    the clock was not written by a run yet, and signing it would set the coverage mark past every real
    run to come; it stays out of every digest, where `verify` names it (rows no digest covers)."""
    now = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}~"  # '~' sorts after any run's suffix
    parts = [
        spark.table(table.name)
        .where((F.col("run_id") > F.lit(upto[table.name])) & (F.col("run_id") <= F.lit(now)))
        .select(F.lit(table.name).alias("table"), "run_id", table.leaf.alias("leaf"))
        for table in present
    ]
    found: dict[str, dict[str, dict]] = {table.name: {} for table in present}
    if not parts:
        return found
    grouped = (
        reduce(DataFrame.unionByName, parts).groupBy("table", "run_id").agg(F.collect_list("leaf").alias("leaves"))
    )
    for r in grouped.collect():
        found[r["table"]][r["run_id"]] = {"rows": len(r["leaves"]), "root": merkle.root(r["leaves"])}
    return found


def _landed_files(spark: SparkSession, cfg: Config, runs: list[str]) -> list[dict]:
    ledger = tables(cfg).file_ledger
    if not runs or not spark.catalog.tableExists(ledger):
        return []
    rows = (
        spark.table(ledger)
        .where(F.col("run_id").isin(runs) & F.col("status").isin(LANDED, QUARANTINED))
        .select("path", "size", "status", "run_id")
        .collect()
    )
    sums = file_sha256(spark, sorted({r["path"] for r in rows}))
    return sorted(
        (
            {
                "path": r["path"],
                "size": r["size"],
                "status": r["status"],
                "run_id": r["run_id"],
                "sha256": sums[r["path"]],
            }
            for r in rows
        ),
        key=lambda f: (f["run_id"], f["path"]),
    )


def _state(last: dict | None) -> dict:
    """What the digests so far cover: per table, the last run and version; the erasures recorded."""
    return (last or {}).get("state") or {"tables": {}, "erasures": []}


def write_digest(
    cfg: Config,
    kind: str,
    run_id: str,
    spark: SparkSession | None = None,
    log=print,
    environ=None,
    extra: dict | None = None,
) -> StoredDigest | None:
    """Append one digest to the log (None when ``integrity.enabled`` is off). Without a session, only a
    digest with nothing new in it is written (a refresh that stopped before Spark). ``extra``: the
    records of the change that writes it (a hold's, a retention run's)."""
    if not cfg.settings.integrity.enabled:
        return None
    key = private_key(secret(cfg, "integrity.signing_key_env", environ))
    digest_log = DigestLog(cfg.digest_dir, spark)
    stored, _strays = digest_log.digests()
    previous = stored[-1] if stored else None
    last = previous.parsed() if previous else None
    if previous is not None and last is None:
        raise CheckFailed(f"{previous.name}: the last digest is not JSON: run `auditlake verify`")
    _refuse_cut_chain(cfg, stored)
    state = _state(last)
    digest = {
        "format": FORMAT,
        "seq": (previous.seq if previous else 0) + 1,
        "kind": kind,
        "run_id": run_id,
        "period": {"from": (last or {}).get("period", {}).get("to"), "to": _now()},
        "previous": {"name": previous.name, "sha256": previous.sha256} if previous else None,
        "public_key": fingerprint(key.public_key()),
        "tables": {},
        "files": [],
        "erasures": [],
    }
    new_state = {"tables": dict(state["tables"]), "erasures": list(state["erasures"])}
    if spark is not None:
        present = [table for table in trail_tables(tables(cfg)) if spark.catalog.tableExists(table.name)]
        before = {table.name: state["tables"].get(table.name, {"upto": "", "version": -1}) for table in present}
        new_rows = _new_rows(spark, present, {name: b["upto"] for name, b in before.items()})
        runs: set[str] = set()
        for table in present:
            version = table_version(spark, table.name)
            commits = commit_file_sha256s(spark, table.name, before[table.name]["version"] + 1, version)
            digest["tables"][table.name] = {"version": version, "runs": new_rows[table.name], "commits": commits}
            runs |= set(new_rows[table.name])
            new_state["tables"][table.name] = {
                "upto": max([before[table.name]["upto"], *new_rows[table.name]]),
                "version": version,
            }
        digest["files"] = _landed_files(spark, cfg, sorted(runs))
        records = erasure_records(spark, cfg, set(state["erasures"]), digest_log, run_id) if kind == "erasure" else []
        digest["erasures"] = records
        new_state["erasures"] += [r["erasure_id"] for r in records]
    digest.update(extra or {})
    digest["state"] = new_state
    digest["signature"] = sign(key, unsigned(digest))
    data = file_bytes(digest)
    name = file_name(digest["seq"], kind)
    where = digest_log.write_new(name, data)
    written = StoredDigest(name, digest["seq"], kind, lambda: data)
    _anchor(cfg, written)
    rows = sum(r["rows"] for part in digest["tables"].values() for r in part["runs"].values())
    log(
        f"integrity: digest {name}: {len(digest['files'])} files, {rows} rows, "
        f"{len(digest['erasures'])} erasure records, signed ({where})"
    )
    return written


def witness_lines(cfg: Config) -> list[str] | None:
    """The witness's lines (``integrity.anchor_file``), or None when none is configured or it is not
    there yet."""
    if not cfg.settings.integrity.anchor_file.strip():
        return None
    path = cfg.path("integrity.anchor_file")
    return path.read_text(encoding="utf-8").splitlines() if path.is_file() else None


def _refuse_cut_chain(cfg: Config, stored: list[StoredDigest]) -> None:
    """The chain is extended only past the digest the witness saw last: the digest log lies in the folder
    whoever can write the lake controls, and a log whose newest digests were removed (with what they
    covered) would otherwise be continued as if they had never been. Digests written after the witness's
    last entry (a run killed between its digest and the witness) are given to the witness first: only the
    key holder can have signed them."""
    lines = [line for line in witness_lines(cfg) or [] if line.strip()]
    if not lines:
        return
    parts = lines[-1].split()
    names = [d.name for d in stored]
    at = names.index(parts[0]) if len(parts) == 2 and parts[0] in names else None
    if at is None or stored[at].sha256 != parts[1]:
        ends = stored[-1].name if stored else "no digest"
        raise CheckFailed(
            f"integrity: the witness's last entry {lines[-1].strip()!r} ({cfg.settings.integrity.anchor_file}) is "
            f"not in the digest log, which ends at {ends}: the log was cut or replaced, so no digest is written; "
            "run `auditlake verify`"
        )
    for digest in stored[at + 1 :]:
        _anchor(cfg, digest)


def _anchor(cfg: Config, digest: StoredDigest) -> None:
    """The newest digest's name and hash, appended where a witness keeps them (``integrity.anchor_file``)."""
    anchor = cfg.settings.integrity.anchor_file.strip()
    if not anchor:
        return
    path = cfg.path("integrity.anchor_file")
    os.makedirs(path.parent, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{digest.name} {digest.sha256}\n")
        f.flush()
        os.fsync(f.fileno())
