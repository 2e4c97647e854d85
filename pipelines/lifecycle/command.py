"""``auditlake hold`` and ``auditlake retention``: their arguments, and each under the refresh lock (a
hold's digest is one of the chain's; retention deletes from the tables a refresh writes)."""

from __future__ import annotations

import argparse

from pipelines.command.arguments import add_wait, iso_time
from pipelines.command.console import log
from pipelines.config.load import Config
from pipelines.lake.run_log import refresh_lock
from pipelines.runtime import spark_session


def cmd_hold(cfg: Config, args: argparse.Namespace) -> int:
    """Under the refresh lock: a hold's digest is one of the chain's, as a refresh's is."""
    from pipelines.lifecycle import holds

    if args.action == "list":
        for line in holds.list_lines(holds.all_holds(spark_session.build_spark(cfg), cfg)):
            log(line)
        return 0
    with refresh_lock(cfg, wait_seconds=args.wait, log=log):
        spark = spark_session.build_spark(cfg)
        if args.action == "add":
            holds.add_hold(spark, cfg, args.reason, args.site, args.user, args.start, args.end, args.by, log=log)
        else:
            holds.release_hold(spark, cfg, args.hold_id, args.by, log=log)
    return 0


def cmd_retention(cfg: Config, args: argparse.Namespace) -> int:
    """Under the refresh lock: it deletes from the tables a refresh writes, and rebuilds gold."""
    from pipelines.lifecycle.retention import apply_retention
    from pipelines.refresh import run_refresh

    with refresh_lock(cfg, wait_seconds=args.wait, log=log):
        spark = spark_session.build_spark(cfg)
        apply_retention(
            spark,
            cfg,
            args.dry_run,
            args.requested_by,
            log=log,
            build_gold=lambda: run_refresh(spark, cfg, ["gold"], log=log),
        )
    return 0


def add_hold(sub) -> None:
    p = sub.add_parser("hold", help="legal holds: rows no retention run retires and no erasure rewrites")
    actions = p.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="place a hold on a site's rows, a person's, or a period's (or a mix)")
    add.add_argument("--site", metavar="LUID", help="the site's LUID")
    add.add_argument("--user", metavar="LUID|EMAIL", help="the person's user LUID or e-mail")
    add.add_argument("--from", dest="start", type=iso_time, help="events from this time (ISO 8601)")
    add.add_argument("--to", dest="end", type=iso_time, help="events up to this time")
    add.add_argument("--reason", required=True, help="why: the case or ticket (recorded, signed)")
    release = actions.add_parser("release", help="release a hold (the release is recorded, signed)")
    release.add_argument("hold_id", metavar="ID")
    for action in (add, release):
        action.add_argument("--by", help="who placed or released it, for the record (default: the OS user)")
        add_wait(action)
        action.set_defaults(func=cmd_hold, writes_lake=True)  # a hold's change is a signed digest
    actions.add_parser("list", help="every hold, active and released").set_defaults(func=cmd_hold)


def add_retention(sub) -> None:
    p = sub.add_parser("retention", help="retire Activity Log rows older than retention.rules keep them")
    actions = p.add_subparsers(dest="action", required=True)
    apply = actions.add_parser(
        "apply",
        help="retire expired rows (none under a legal hold) from bronze, silver, gold and the analysts' copies, "
        "vacuum, and sign the record; a run a crash left pending is finished first",
    )
    apply.add_argument("--dry-run", action="store_true", help="count what has expired, change nothing")
    apply.add_argument("--requested-by", help="who ran it, for the record (default: the OS user)")
    add_wait(apply)
    apply.set_defaults(func=cmd_retention, writes_lake=True)
