"""``auditlake verify``: whether the lake is what its signed digests say was landed, in CloudTrail's
manner (``aws cloudtrail validate-logs``): every digest's signature and its link to the one before,
every landed file against its SHA-256, every trail row against its run's Merkle root and its landing
hash, each rewrite covered by a signed erasure record, the Delta commits the digests saw, and the
layers reconciled. Read-only: it needs the public key and read access, nothing else.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.config.load import Config
from pipelines.integrity import merkle
from pipelines.integrity.capture import file_sha256
from pipelines.integrity.digest_log import DigestLog, StoredDigest, unsigned
from pipelines.integrity.erasures import accepted_files, accepted_rewrites
from pipelines.integrity.reconcile import reconcile, reconcile_files
from pipelines.integrity.signing import Ed25519PublicKey, fingerprint, signature_holds
from pipelines.integrity.trail import leaf, trail_tables
from pipelines.lake.delta_tables import commit_file_sha256s, table_version
from pipelines.lake.table_names import tables
from pipelines.lifecycle.holds import utc
from pipelines.personal_data.erase.record import DONE

# rows named one by one in a finding at most; the rest are counted
NAMED_ROWS = 5


@dataclass
class Verification:
    digests_valid: int = 0
    digests: int = 0
    files_valid: int = 0
    files: int = 0
    rows_valid: int = 0
    rows: int = 0
    rows_pseudonymised: int = 0
    erasures: int = 0
    rows_retired: int = 0
    reconciled: bool | None = None
    findings: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.findings

    def summary(self) -> str:
        return (
            f"{self.digests_valid:,}/{self.digests:,} digests valid, {self.files_valid:,}/{self.files:,} files, "
            f"{self.rows_valid:,}/{self.rows:,} rows; {self.rows_pseudonymised:,} rows pseudonymised by "
            f"{self.erasures:,} erasure{'s' if self.erasures != 1 else ''}; {self.rows_retired:,} retired"
        )


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def _well_formed(digest: dict) -> bool:
    """The fields the checks read, of their types: a digest edited into another shape is a finding, not
    a crash."""
    period = digest.get("period")
    return (
        isinstance(period, dict)
        and all(isinstance(period.get(k), (str, type(None))) for k in ("from", "to"))
        and isinstance(digest.get("tables"), dict)
        and all(isinstance(part, dict) and isinstance(part.get("runs", {}), dict) for part in digest["tables"].values())
        and all(isinstance(digest.get(k, []), list) for k in ("files", "erasures", "holds", "retention"))
        and isinstance(digest.get("previous"), (dict, type(None)))
        and all(isinstance(digest.get(k), (str, type(None))) for k in ("public_key", "signature"))
    )


def _signature_holds(key: Ed25519PublicKey, parsed: dict) -> bool:
    """The digest's signature under ``key``; False too when its content cannot be put in canonical form
    (a lone surrogate, say): the signer never writes such a digest."""
    try:
        return signature_holds(key, unsigned(parsed), str(parsed.get("signature") or ""))
    except (UnicodeError, TypeError, ValueError):
        return False


def check_chain(stored: list[StoredDigest], keys: list[Ed25519PublicKey], v: Verification) -> list[dict]:
    """Every digest's number, signature (with the key of those given its fingerprint names: one per
    period after a rotation) and link; the digests of the expected shape, parsed."""
    by_fingerprint = {fingerprint(key): key for key in keys}
    expected_key = ", ".join(by_fingerprint)
    valid = []
    last_seq = 0
    for i, digest in enumerate(stored):
        v.digests += 1
        problems = []
        if digest.seq == last_seq:
            problems.append(f"{digest.name}: a second digest numbered {digest.seq}")
        elif digest.seq > last_seq + 1:
            gone = f"{last_seq + 1}" if digest.seq == last_seq + 2 else f"{last_seq + 1} to {digest.seq - 1}"
            problems.append(f"digest {gone} missing (before {digest.name})")
        last_seq = digest.seq
        parsed = digest.parsed()
        if parsed is None or not _well_formed(parsed):
            what = "its bytes are not JSON" if parsed is None else "not of the digest's shape"
            v.findings.append(f"{digest.name}: not a digest ({what})")
            continue
        if (parsed.get("seq"), parsed.get("kind")) != (digest.seq, digest.kind):
            problems.append(f"{digest.name}: its content says digest {parsed.get('seq')} ({parsed.get('kind')})")
        key = by_fingerprint.get(parsed.get("public_key"))
        if key is None:
            problems.append(f"{digest.name}: signed with another key ({parsed.get('public_key')}, not {expected_key})")
        elif not _signature_holds(key, parsed):
            problems.append(f"{digest.name}: its signature does not hold: the digest was edited after signing")
        link = parsed.get("previous")
        if valid and parsed["period"].get("from") != valid[-1]["period"].get("to"):
            problems.append(
                f"{digest.name}: its period starts at {parsed['period'].get('from')}, not where the one before "
                f"ends ({valid[-1]['period'].get('to')}): a gap no digest covers"
            )
        if i == 0:
            if link is not None:
                problems.append(f"{digest.name}: it follows {link.get('name')}, so it cannot be the first")
        elif link is None or link.get("name") != stored[i - 1].name or link.get("sha256") != stored[i - 1].sha256:
            same = link is not None and link.get("name") == stored[i - 1].name
            why = "that digest was changed or replaced" if same else "reordered, or one removed"
            problems.append(f"{digest.name}: its link to {stored[i - 1].name} does not hold ({why})")
        if problems:
            v.findings.extend(problems)
        else:
            v.digests_valid += 1
        valid.append(parsed)
    return valid


def check_anchor(stored: list[StoredDigest], lines: list[str], v: Verification) -> None:
    """The witness's copy of digests' hashes (``name sha256`` per line) against the log."""
    by_name = {d.name: d for d in stored}
    for number, line in enumerate(lines, 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2:
            v.findings.append(f"anchor: line {number} is not `<digest name> <sha256>`: {line[:80]!r}")
            continue
        name, sha = parts
        if name not in by_name:
            v.findings.append(f"anchor: {name} is no longer in the digest log")
        elif by_name[name].sha256 != sha:
            v.findings.append(f"anchor: {name} differs from the witness's copy (re-signed or replaced)")


def check_files(spark: SparkSession, digests: list[dict], records: list[dict], v: Verification) -> None:
    """Every landed file with the SHA-256 it landed with, or the one the latest signed erasure record
    gave it (a Server log piece rewritten); one that holds its landed bytes again had the erasure undone."""
    entries = [f for d in digests for f in d.get("files") or []]
    sums = file_sha256(spark, sorted({f["path"] for f in entries}))
    erased = accepted_files(records)
    for f in entries:
        v.files += 1
        now, after = sums.get(f["path"]), erased.get(f["path"])
        if now is None:
            v.findings.append(f"file {f['path']}: removed after landing (run {f['run_id']})")
        elif after is not None and now == f["sha256"]:
            v.findings.append(f"file {f['path']}: holds its landed content again, which an erasure rewrote")
        elif now != f["sha256"] and now != after:
            v.findings.append(f"file {f['path']}: replaced or changed after landing (its SHA-256 differs)")
        else:
            v.files_valid += 1


def retired_leaves(digests: list[dict]) -> dict[str, dict[str, list[str]]]:
    """{table: {run: [leaf]}} of the rows signed retention records retired."""
    retired: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for d in digests:
        for record in d.get("retention") or []:
            for table, runs in record["rows"].items():
                for run, rows in runs.items():
                    retired[table][run] += [leaf(row_id, content_hash) for row_id, content_hash in rows]
    return retired


def check_rows(spark: SparkSession, cfg: Config, digests: list[dict], records: list[dict], v: Verification) -> None:
    """Every trail row against its run's count and Merkle root (with the rows signed retention records
    retired), and its content against its landing hash (or the hash a signed erasure record gave it)."""
    expected: dict[str, dict[str, dict]] = defaultdict(dict)
    versions: dict[str, int] = {}
    commits: dict[str, dict[str, str | None]] = defaultdict(dict)
    for d in digests:
        for name, part in (d.get("tables") or {}).items():
            expected[name].update(part.get("runs") or {})
            versions[name] = max(versions.get(name, -1), int(part.get("version", -1)))
            commits[name].update(part.get("commits") or {})
    accepted = accepted_rewrites(records)
    retired = retired_leaves(digests)
    for table in trail_tables(tables(cfg)):
        if not spark.catalog.tableExists(table.name):
            for run, part in expected.get(table.name, {}).items():
                v.rows += part["rows"]
                v.findings.append(f"{table.name}: the table is gone (run {run}'s {part['rows']} rows)")
            continue
        found = {
            r["run_id"]: r["leaves"]
            for r in spark.table(table.name)
            .select("run_id", table.leaf.alias("leaf"))
            .groupBy("run_id")
            .agg(F.collect_list("leaf").alias("leaves"))
            .collect()
        }
        want = expected.get(table.name, {})
        for run in sorted(set(found) | set(want)):
            present, part = found.get(run, []), want.get(run)
            gone = set(retired.get(table.name, {}).get(run, [])) - set(present)
            v.rows_retired += len(gone)
            leaves = present + sorted(gone)
            v.rows += max(len(present), part["rows"] - len(gone) if part else 0)
            if part is None:
                v.findings.append(f"{table.name}: {len(leaves)} rows of run {run}, which no digest covers (added)")
            elif len(leaves) != part["rows"]:
                how = "deleted" if len(leaves) < part["rows"] else "added"
                v.findings.append(
                    f"{table.name}: run {run} has {len(leaves)} rows, its digest says {part['rows']} "
                    f"({abs(len(leaves) - part['rows'])} {how})"
                )
            elif merkle.root(leaves) != part["root"]:
                v.findings.append(f"{table.name}: run {run}'s rows differ from its digest (a row id or hash changed)")
            else:
                v.rows_valid += len(present)
        if table.content is not None:
            changed = (
                spark.table(table.name)
                .select(table.row_id.alias("row_id"), "content_hash", table.content_sha256.alias("now"))
                # NULL-safe: a content set to NULL hashes to nothing, and is a change like any other
                .where(~F.col("now").eqNullSafe(F.col("content_hash")))
                .collect()
            )
            unexplained = [
                r
                for r in changed
                if (table.name, r["row_id"]) not in accepted or accepted[(table.name, r["row_id"])] != r["now"]
            ]
            _check_not_undone(spark, table, accepted, v)
            v.rows_pseudonymised += len(changed) - len(unexplained)
            if unexplained:
                named = ", ".join(r["row_id"] for r in unexplained[:NAMED_ROWS])
                more = f" and {len(unexplained) - NAMED_ROWS} more" if len(unexplained) > NAMED_ROWS else ""
                v.findings.append(
                    f"{table.name}: {len(unexplained)} rows no longer hash to their landing hash and no erasure "
                    f"record covers them: {named}{more}"
                )
                v.rows_valid -= len(unexplained)
        _check_history(spark, table.name, versions.get(table.name), commits.get(table.name, {}), v)


def _check_not_undone(spark: SparkSession, table, accepted: dict[tuple[str, str], str], v: Verification) -> None:
    """A row an erasure rewrote must still hold what the record says it became: one that holds its
    landed content again had the erasure undone (the landing files still hold the clear line)."""
    ids = [row_id for name, row_id in accepted if name == table.name]
    if not ids:
        return
    rows = (
        spark.table(table.name)
        .where(table.row_id.isin(ids))
        .select(table.row_id.alias("row_id"), "content_hash", table.content_sha256.alias("now"))
        .where(F.col("now") == F.col("content_hash"))
        .collect()
    )
    if rows:
        named = ", ".join(r["row_id"] for r in rows[:NAMED_ROWS])
        v.findings.append(f"{table.name}: {len(rows)} rows an erasure rewrote hold their landed content again: {named}")
        v.rows_valid -= len(rows)


def _check_history(spark: SparkSession, name: str, seen: int | None, commits: dict, v: Verification) -> None:
    """The table's Delta log against what the digests saw: no restore, no rewritten commit, no table
    older than the digests' last look at it."""
    restores = spark.sql(f"DESCRIBE HISTORY {name}").where(F.col("operation") == "RESTORE").collect()
    for r in restores:
        v.findings.append(f"{name}: restored at version {r['version']} ({r['timestamp']}): {r['operationParameters']}")
    if seen is None or not commits:
        return
    now = table_version(spark, name)
    if now < seen:
        v.findings.append(f"{name}: at version {now}, the digests saw version {seen} (the table was replaced)")
    versions = sorted(int(k) for k in commits)
    current = commit_file_sha256s(spark, name, versions[0], versions[-1])
    for version in versions:
        then, later = commits[str(version)], current.get(str(version))
        if then is not None and later is not None and then != later:
            v.findings.append(f"{name}: the commit file of version {version} was rewritten")


def check_erasures(spark: SparkSession, cfg: Config, records: list[dict], v: Verification) -> None:
    """``ops.erasures`` against the signed records: the same erasures, the same counts and tokens."""
    v.erasures = len(records)
    table = tables(cfg).erasures
    rows = (
        {r["erasure_id"]: r for r in spark.table(table).where(F.col("status") == DONE).collect()}
        if spark.catalog.tableExists(table)
        else {}
    )
    signed = {r["erasure_id"]: r for r in records}
    for erasure_id in sorted(set(rows) - set(signed)):
        v.findings.append(f"{table}: erasure {erasure_id} has no signed record (added, or not yet digested)")
    for erasure_id, record in sorted(signed.items()):
        row = rows.get(erasure_id)
        if row is None:
            v.findings.append(f"{table}: erasure {erasure_id}'s row is gone (its signed record remains)")
        elif row["rows_total"] != record["rows_total"] or sorted(row["tokens"] or []) != record["tokens"]:
            v.findings.append(f"{table}: erasure {erasure_id}'s row differs from its signed record")


def check_holds(spark: SparkSession, cfg: Config, digests: list[dict], v: Verification) -> None:
    """``ops.legal_holds`` against the signed records: each hold placed, and each release, on the record."""
    signed: dict[tuple[str, str], dict] = {}
    for d in digests:
        for record in d.get("holds") or []:
            signed[(record["hold_id"], record["action"])] = record
    table = tables(cfg).legal_holds
    rows = spark.table(table).collect() if spark.catalog.tableExists(table) else []
    tokens = {token for d in digests for r in d.get("erasures") or [] for token in r.get("tokens") or []}
    for row in rows:
        placed = signed.pop((row["hold_id"], "add"), None)
        person = hashlib.sha256(row["person"].encode()).hexdigest() if row["person"] else None
        # an erasure after the hold's release pseudonymised its person: a token on the record stands for it
        same_person = placed is not None and (person == placed["person_sha256"] or row["person"] in tokens)
        if placed is None:
            v.findings.append(f"{table}: hold {row['hold_id']} has no signed record (added outside the product)")
        elif not same_person or [placed["site_luid"], placed["reason"], placed["from"], placed["to"]] != [
            row["site_luid"],
            row["reason"],
            utc(row["held_from"]),
            utc(row["held_to"]),
        ]:
            v.findings.append(f"{table}: hold {row['hold_id']} differs from its signed record")
        released = signed.pop((row["hold_id"], "release"), None)
        if row["released_at"] is not None and released is None:
            v.findings.append(f"{table}: hold {row['hold_id']} was released without a signed record")
        if row["released_at"] is None and released is not None:
            v.findings.append(f"{table}: hold {row['hold_id']} is active again after its signed release")
    for hold_id, _action in sorted(k for k in signed if k[1] == "add"):
        v.findings.append(f"{table}: hold {hold_id}'s row is gone (its signed record remains)")


def check_reconciled(spark: SparkSession, cfg: Config, v: Verification) -> None:
    families = reconcile(spark, cfg)
    files = reconcile_files(spark, cfg)
    v.reconciled = all(r.balanced for r in families) and (files is None or files.balanced)
    if not v.reconciled:
        v.findings.append("the layers do not reconcile: run `auditlake reconcile` for the counts")


def verify(
    spark: SparkSession,
    cfg: Config,
    keys: Ed25519PublicKey | list[Ed25519PublicKey],
    start: datetime | None = None,
    end: datetime | None = None,
    anchor_lines: list[str] | None = None,
    log=print,
) -> Verification:
    v = Verification()
    digest_log = DigestLog(cfg.digest_dir, spark)
    stored, strays = digest_log.digests()
    for name in strays:
        v.findings.append(f"{name}: a file in the digest log that is not a digest")
    if not stored:
        v.findings.append(f"{cfg.digest_dir}: no digest (the trail starts with a lake's first refresh)")
        return v
    digests = check_chain(stored, keys if isinstance(keys, list) else [keys], v)
    newest = digests[-1]["period"]["to"] if digests else None
    log(f"verify: the newest digest, {stored[-1].name}, covers up to {newest} (a period after it has none yet)")
    log(f"verify: {v.digests_valid}/{v.digests} digests valid")
    if anchor_lines is not None:
        check_anchor(stored, anchor_lines, v)
    else:
        log(
            "verify: no witness (integrity.anchor_file, or --anchor): the newest digests could be removed, "
            "with the rows and files they covered, without a trace"
        )
    records = [r for d in digests for r in d.get("erasures") or []]
    window = [
        d
        for d in digests
        if (start is None or (_time(d["period"]["to"]) or start) >= start)
        and (end is None or (_time(d["period"]["from"]) or end) <= end)
    ]
    check_files(spark, window, records, v)
    log(f"verify: {v.files_valid:,}/{v.files:,} files as landed")
    check_rows(spark, cfg, digests, records, v)
    check_erasures(spark, cfg, records, v)
    check_holds(spark, cfg, digests, v)
    log(f"verify: {v.rows_valid:,}/{v.rows:,} rows as landed or lawfully rewritten")
    check_reconciled(spark, cfg, v)
    return v
