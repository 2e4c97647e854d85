"""What ``auditlake verify`` prints and files: the CloudTrail-style line, each finding, and a markdown
report an auditor can keep with the evidence."""

from __future__ import annotations

from datetime import UTC, datetime

from pipelines.integrity.verify import Verification

# findings printed without --verbose; the report holds them all
SHOWN = 20


def lines(v: Verification, verbose: bool) -> list[str]:
    out = [f"verify: {v.summary()}"]
    shown = v.findings if verbose else v.findings[:SHOWN]
    out += [f"verify: INVALID: {finding}" for finding in shown]
    if len(v.findings) > len(shown):
        out.append(f"verify: … and {len(v.findings) - len(shown)} more findings (--verbose, or --report FILE)")
    out.append("verify: the trail holds" if v.valid else f"verify: the trail is broken: {v.findings[0]}")
    return out


def markdown(v: Verification, digest_dir: str, key_fingerprint: str, window: str) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    verdict = "**The trail holds.**" if v.valid else f"**The trail is broken.** First broken link: {v.findings[0]}"
    rows = [
        "# Audit trail verification",
        "",
        f"- Verified: {when}",
        f"- Digest log: `{digest_dir}`",
        f"- Public key: `{key_fingerprint}`",
        f"- Window: {window}",
        "",
        verdict,
        "",
        "| check | valid | of |",
        "|---|---:|---:|",
        f"| digests (signature, number, link to the one before) | {v.digests_valid:,} | {v.digests:,} |",
        f"| files landed or quarantined (SHA-256 as at landing) | {v.files_valid:,} | {v.files:,} |",
        f"| trail rows (Merkle root of their run, landing hash) | {v.rows_valid:,} | {v.rows:,} |",
        "",
        f"- Rows pseudonymised, each covered by a signed erasure record: {v.rows_pseudonymised:,} "
        f"({v.erasures:,} erasure records)",
        f"- Rows retired by retention: {v.rows_retired:,}",
        f"- Layers reconciled (files = landed + quarantined + skipped; bronze = silver + duplicates + "
        f"quarantine): {'yes' if v.reconciled else 'no' if v.reconciled is False else 'not checked'}",
        "",
        "## Findings",
        "",
        *([f"1. {f}" for f in v.findings] or ["None."]),
        "",
        "## What this does not prove",
        "",
        "- Whoever holds the signing key can write a new history and sign it; only a witness outside the "
        "operator's control (`verify --anchor`) rules that out.",
        "- Events Tableau never delivered are not in any digest: `gold.rpt_feed_gaps` reports the gaps.",
        "- The newest digests removed together with what they covered leave an older, consistent trail: "
        "a witness's copy shows it.",
        "- Silver and gold are checked by reconciliation to bronze, not row by row; entity snapshots and "
        "the ops tables other than the ledger, erasures and holds are not in the trail.",
        "",
    ]
    return "\n".join(rows)
