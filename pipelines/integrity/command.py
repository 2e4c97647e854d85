"""``auditlake verify`` and ``auditlake integrity keygen``: their arguments, and each run as the command
line runs it (which public key, the session, the printout, the report file, the exit code). Loaded by
the command line at start: Spark and the verification load only when ``verify`` runs."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pipelines.command.arguments import iso_time
from pipelines.command.console import log
from pipelines.config.load import Config
from pipelines.errors import CheckFailed, InputError, UsageError
from pipelines.integrity.signing import KeyProblem, fingerprint, keygen, public_key
from pipelines.runtime import spark_session


class TrailBroken(CheckFailed):
    """``verify`` found a break: the line names the first; the printout lists them all."""

    logged = False


def _public_key(cfg: Config, given: Path | None):
    settings = cfg.settings.integrity
    if given is not None:
        where = str(given)
    elif settings.public_key_file.strip():
        given, where = cfg.path("integrity.public_key_file"), "integrity.public_key_file"
    elif os.environ.get(settings.signing_key_env):
        try:
            return public_key(os.environ[settings.signing_key_env])
        except KeyProblem as exc:
            raise UsageError(f"{settings.signing_key_env}: {exc}") from None
    else:
        raise UsageError(
            "no public key to verify with: give --public-key FILE (or set integrity.public_key_file, "
            f"or {settings.signing_key_env})"
        )
    try:
        return public_key(Path(given).read_text())
    except FileNotFoundError:
        raise UsageError(f"{where}: no such file") from None
    except KeyProblem as exc:
        raise UsageError(f"{where}: {exc}") from None


def run_verify(cfg: Config, args: argparse.Namespace) -> int:
    from pipelines.integrity import report
    from pipelines.integrity.verify import verify

    keys = [_public_key(cfg, path) for path in args.public_key] if args.public_key else [_public_key(cfg, None)]
    from pipelines.integrity.capture import witness_lines

    anchor = witness_lines(cfg)  # the configured witness by default
    if args.anchor is not None:
        if not args.anchor.is_file():
            raise UsageError(f"--anchor {args.anchor}: no such file")
        anchor = args.anchor.read_text().splitlines()
    spark = spark_session.build_spark(cfg)
    result = verify(spark, cfg, keys, args.start, args.end, anchor, log=log)
    for line in report.lines(result, args.verbose):
        log(line)
    if args.report is not None:
        window = f"{args.start.isoformat() if args.start else 'the first digest'} to " + (
            args.end.isoformat() if args.end else "the last"
        )
        args.report.parent.mkdir(parents=True, exist_ok=True)
        fingerprints = ", ".join(fingerprint(key) for key in keys)
        args.report.write_text(report.markdown(result, cfg.digest_dir, fingerprints, window))
        log(f"verify: report in {args.report}")
    if not result.valid:
        raise TrailBroken(f"{len(result.findings)} broken: {result.findings[0]}")
    return 0


def run_keygen(folder: Path) -> int:
    try:
        private, public = keygen(folder)
    except FileExistsError as exc:
        raise InputError(str(exc)) from None
    except OSError as exc:
        raise InputError(f"integrity keygen {folder}: {exc.strerror}") from None
    log(f"integrity: private key {private} (owner-only: keep it secret; the refresh reads it from the variable")
    log('integrity:   integrity.signing_key_env names, e.g. export AUDITLAKE_SIGNING_KEY="$(cat ' + f'{private})")')
    log(f"integrity: public key {public} (give it to the auditors: auditlake verify --public-key {public})")
    return 0


def cmd_verify(cfg: Config, args: argparse.Namespace) -> int:
    """Read-only: no lock (an auditor may hold read access alone); a refresh running meanwhile shows as
    rows no digest covers yet."""
    return run_verify(cfg, args)


def cmd_integrity_keygen(cfg: Config, args: argparse.Namespace) -> int:
    return run_keygen(args.dir)


def add_verify(sub) -> None:
    p = sub.add_parser(
        "verify",
        help="check the signed trail: every digest's signature and link, every landed file, every bronze row "
        "against its digest, every rewrite against its erasure record (exit 1 naming the first break)",
    )
    p.add_argument("--from", dest="start", type=iso_time, help="check the files of digests from this time (ISO 8601)")
    p.add_argument("--to", dest="end", type=iso_time, help="... up to this time")
    p.add_argument(
        "--public-key",
        type=Path,
        action="append",
        help="the public key (PEM) the digests must be signed with; again for each key of a rotation "
        "(default: integrity.public_key_file, else the signing key's public half)",
    )
    p.add_argument(
        "--anchor", type=Path, help="a witness's copy of the digests' hashes (default: integrity.anchor_file when set)"
    )
    p.add_argument("--report", type=Path, help="also write the result as a markdown report to this file")
    p.add_argument("--verbose", action="store_true", help="every finding, not the first ones only")
    p.set_defaults(func=cmd_verify)


def add_integrity(sub) -> None:
    p = sub.add_parser("integrity", help="the trail's signing key")
    actions = p.add_subparsers(dest="action", required=True)
    keygen = actions.add_parser(
        "keygen", help="write a new Ed25519 key pair (auditlake-signing.pem, owner-only, and .pub.pem) into DIR"
    )
    keygen.add_argument("dir", type=Path, metavar="DIR")
    keygen.set_defaults(func=cmd_integrity_keygen)
