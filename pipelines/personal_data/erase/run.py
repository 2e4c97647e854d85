"""The erasure from start to end (``auditlake erase``): resolve, write down, rewrite layer by layer,
vacuum, catch up the readers, record; and the finish of one a crash left pending."""

from __future__ import annotations

import getpass
import threading
import uuid
from datetime import UTC, datetime
from itertools import groupby

from pyspark.sql import SparkSession

from pipelines.config.load import Config
from pipelines.gold import inputs as gold_inputs
from pipelines.integrity.capture import write_digest
from pipelines.lake.delta_tables import (
    COMMIT_NOTE,
    for_each_table,
    table_version,
)
from pipelines.lake.table_names import tables
from pipelines.lifecycle.holds import refuse_erasure_under_hold
from pipelines.personal_data.erase.landing import deliveries_note, rewrite_server_pieces
from pipelines.personal_data.erase.pending import PendingErasure, clear_pending, load_pending, save_pending
from pipelines.personal_data.erase.person import Person, identifier_kind, resolve_person, token_for
from pipelines.personal_data.erase.readers import move_silver_past, require_promoted
from pipelines.personal_data.erase.record import ErasureReport, record_done, record_pending
from pipelines.personal_data.erase.rewrite import erasable_tables, pseudonymise_table, rows_rewritten_by
from pipelines.personal_data.erase.side_outputs import ocsf_exports_note, refresh_analyst_copies, scrub_quality_reports
from pipelines.personal_data.erase.vacuum import vacuum
from pipelines.runtime.spark_session import session_conf, small_and_large, small_tables


def erase_person(
    spark: SparkSession, cfg: Config, user: str, salt: str, requested_by: str | None = None, log=print
) -> ErasureReport:
    """Pseudonymise the person with LUID or e-mail ``user`` in every table, vacuum, record it.
    An erasure left pending by a crash is finished first; when it was this very person's, that is
    the erasure (a re-run of the same command). The caller holds the refresh lock."""
    finished = finish_pending_erasure(spark, cfg, log=log)
    if finished is not None and user.strip().lower() in finished[1].keys:
        return finished[0]
    return finish_erasure(spark, cfg, begin_erasure(spark, cfg, user, salt, requested_by, log=log), log=log)


def begin_erasure(
    spark: SparkSession, cfg: Config, user: str, salt: str, requested_by: str | None = None, log=print
) -> PendingErasure:
    """Resolve the person and record the erasure as pending (state file, then ``ops.erasures``)
    before any table is rewritten. Nothing changes when it raises."""
    identifier_kind(user)  # a value that is no identifier: say so before reading anything
    erasure_id = f"erase-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
    require_promoted(spark, cfg)
    person = resolve_person(spark, cfg, user)
    refuse_erasure_under_hold(spark, cfg, sorted(person.keys))  # LUIDs and e-mails: a name may be a word
    tokens = {value: token_for(value, salt) for value in person.identifiers()}
    lake_tables = erasable_tables(spark, cfg)
    pending = PendingErasure(
        erasure_id,
        datetime.now(UTC).isoformat(),
        requested_by or getpass.getuser(),
        person.kind,
        sorted(person.keys),
        sorted(person.names),
        tokens,
        lake_tables,
        {},
        gold_inputs.last_built(spark, cfg) == gold_inputs.current_inputs(spark, cfg),
        int(cfg.settings.erase.vacuum_retain_hours),
        versions_before={name: table_version(spark, name) for name in lake_tables},
    )
    save_pending(spark, cfg, pending)
    record_pending(spark, cfg, pending)
    log(
        f"erase {erasure_id}: {len(tokens)} identifiers of the {person.kind} given, "
        f"in {len(person.keys)} keys and {len(person.names)} names; pending in {tables(cfg).erasures}"
    )
    return pending


def finish_pending_erasure(spark: SparkSession, cfg: Config, log=print) -> tuple[ErasureReport, Person] | None:
    """Finish the erasure a crash left pending, if any (``auditlake erase`` and a refresh call this
    first). -> its report and the person, or None when none was pending."""
    pending = load_pending(spark, cfg, log=log)
    if pending is None:
        return None
    # a hold placed since it began wins: the rewrite waits (HoldRefused says which hold, and how to go on)
    refuse_erasure_under_hold(spark, cfg, pending.keys)
    log(
        f"erase: finishing the pending erasure {pending.erasure_id} (begun {pending.started_at[:19]}Z, "
        f"{len(pending.rows_by_table)} of {len(pending.tables)} tables done)"
    )
    return finish_erasure(spark, cfg, pending, log=log), pending.person()


def _pseudonymise_layer(spark: SparkSession, cfg: Config, pending: PendingErasure, names: list[str], log) -> None:
    """Rewrite one layer's tables, the small ones a few at once (each one's UPDATE is mostly the
    driver's planning, the cores idle meanwhile), the large ones one by one. The state is saved after
    each table's commit, one save at a time; a run killed with commits not yet saved finds each in its
    table's history (rows_rewritten_by)."""
    person, tokens = pending.person(), pending.tokens
    saving = threading.Lock()

    def one(table: str) -> None:
        if not spark.catalog.tableExists(table) or pending.rows_by_table.get(table) == 0:
            return
        rows = pending.rows_by_table.get(table)
        if rows is None:
            before = pending.versions_before.get(table)
            rows = None if before is None else rows_rewritten_by(spark, table, pending.erasure_id, before)
            if rows is None:
                rows = pseudonymise_table(spark, table, person, tokens)
            with saving:
                pending.rows_by_table[table] = rows
                save_pending(spark, cfg, pending)
        elif rows and table not in pending.versions_before:
            # a state file of a release that counted before each rewrite: the count kept, maybe not
            # the rewrite (rows already rewritten match no more, and Delta makes no commit)
            pseudonymise_table(spark, table, person, tokens)
        log(f"erase: {table}: {rows} rows pseudonymised")

    small, large = small_and_large(spark, cfg, names)
    with small_tables(spark, cfg, small):
        for_each_table(one, small)
    for table in large:
        with small_tables(spark, cfg, [table]):
            one(table)


def finish_erasure(spark: SparkSession, cfg: Config, pending: PendingErasure, log=print) -> ErasureReport:
    """Every step after the resolution, each one safe to repeat: a table rewritten already matches
    no row (no commit), a vacuum again deletes nothing more, silver moves only where behind."""
    person, tokens = pending.person(), pending.tokens
    record_pending(spark, cfg, pending)  # a kill between the state file and the record: record it now
    with session_conf(spark, {COMMIT_NOTE: pending.erasure_id}):  # every rewrite's commit carries it
        for layer, names in groupby(pending.tables, key=lambda name: name.split(".")[0]):
            log(f"erase: pseudonymising {layer}")
            _pseudonymise_layer(spark, cfg, pending, list(names), log)
    deliveries = rewrite_server_pieces(spark, cfg, pending, log)  # bronze rewritten: its rows name the pieces
    report = pending.report()
    copies = refresh_analyst_copies(spark, cfg, report, log)
    log(
        f"erase: vacuuming {len(report.tables_vacuumed)} tables and {len(copies)} analyst copies "
        f"(retain {report.vacuum_retain_hours} h)"
    )
    vacuumed = [t for t in report.tables_vacuumed if spark.catalog.tableExists(t)] + copies
    with small_tables(spark, cfg, vacuumed):  # a vacuum's jobs read the file listings: one setting for all
        vacuum(spark, vacuumed, report.vacuum_retain_hours, log)
    move_silver_past(spark, cfg, pending.erasure_id)
    if pending.gold_was_current:  # gold got the same rewrite as silver: it still matches what it is built from
        gold_inputs.record_built(spark, cfg, gold_inputs.current_inputs(spark, cfg))
    files = scrub_quality_reports(cfg.quality_dir, person, tokens)
    if files:
        log(f"erase: {files} validation result / Data Docs files under {cfg.quality_dir} rewritten")
    record_done(spark, cfg, report)
    log(
        f"erase {pending.erasure_id}: {report.rows_total} rows in {len(report.rows_by_table)} tables pseudonymised; "
        f"recorded in {tables(cfg).erasures}"
    )
    # which rows it rewrote, signed by this run alone (`auditlake verify` accepts exactly those rewrites),
    # before the sealed state goes: a run killed in between finishes the erasure again and signs it then
    write_digest(cfg, "erasure", pending.erasure_id, spark, log=log)
    clear_pending(spark, cfg)  # the identifiers in clear go with it
    for note in (deliveries_note(deliveries), ocsf_exports_note(spark, cfg)):
        if note:
            log(note)
    return report
