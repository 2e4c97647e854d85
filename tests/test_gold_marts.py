"""What gold's marts hold on the shared lake: each fact reconciles with the silver rows it covers,
the sample's stories are answered, one person per LUID and wide numbers intact, every finding once in
rpt_detections, compaction keeps the rows, the columns and types of the marts' contract are kept; and
the marts read through the Thrift server and `auditlake sql`."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pipelines.gold.compact import compact_marts, data_files, mart_tables
from pipelines.gold.staging import event_groups, event_marts
from pipelines.lake.table_names import tables

pytestmark = [pytest.mark.slow(minutes=2)]


def test_marts_past_the_file_count_are_compacted_and_keep_their_rows(spark, gold_lake):
    cfg, first, second = gold_lake
    gold = cfg.get("gold.schema")
    assert first.compactions == second.compactions == []  # the test data stays under the conf's count
    files = {name: data_files(spark, f"{gold}.{name}") for name in mart_tables(spark, gold)}
    most = max(files.values())
    assert most > 1, files
    fragmented = sorted(name for name, n in files.items() if n == most)
    before = {name: spark.table(f"{gold}.{name}").collect() for name in fragmented}
    done = compact_marts(spark, gold, most - 1, log=lambda _m: None)
    assert sorted(c.mart for c in done) == [f"{gold}.{name}" for name in fragmented]  # only those past the count
    for c in done:
        assert c.files_before == most and c.files_after == 1, c
    for name in fragmented:
        assert sorted(spark.table(f"{gold}.{name}").collect()) == sorted(before[name]), name


def test_each_fact_reconciles_with_the_silver_rows_it_covers(spark, gold_lake):
    cfg, _, _ = gold_lake
    t = tables(cfg)
    gold = cfg.get("gold.schema")
    groups = event_groups()

    # an event type's rows of its family's wide table: what its silver view (silver.<event_type>) selects
    def events(family: str, types: list[str]):
        return spark.table(t.silver_events(family)).where(F.col("event_type").isin(types))

    for fact, group in event_marts().items():
        silver = sum(events(family, types).count() for family, types in groups[group].items())
        assert silver > 0, f"the sample data should hold {group} events"
        assert spark.table(f"{gold}.{fact}").count() == silver, fact
    jobs = events("site", ["background_job"]).agg(F.countDistinct("job_luid")).first()[0]
    assert spark.table(f"{gold}.fct_background_jobs").count() == jobs
    assert spark.table(f"{gold}.fct_writeback_changes").count() == spark.table(t.writeback_audit).count()
    # a session needs its user: legacy-edition sign-ins name none (actorUserId only)
    logins = events("site", ["hist_login"]).where("actor_user_luid IS NOT NULL").count()
    assert spark.table(f"{gold}.fct_sessions").count() == logins


def test_marts_answer_the_stories_in_the_data(spark, gold_lake):
    cfg, _, _ = gold_lake
    gold = cfg.get("gold.schema")
    # the generator's failed sign-in burst: 8+ failures from one foreign IP within minutes
    bursts = spark.sql(f"SELECT * FROM {gold}.rpt_failed_login_bursts WHERE key_type = 'ip_address'").collect()
    assert bursts and all(b["failures"] >= cfg.get("gold.failed_login_burst.failures") for b in bursts)
    # deprecated permission events are kept and flagged
    rows = spark.sql(f"SELECT DISTINCT event_type, is_deprecated_event FROM {gold}.fct_permission_changes").collect()
    flags = {r["event_type"]: r["is_deprecated_event"] for r in rows}
    assert flags.get("set_permissions") is False and flags.get("create_permissions") is True
    # every ownership transfer names both owners
    transfers = spark.table(f"{gold}.fct_ownership_transfers")
    assert transfers.count() > 0
    assert transfers.where("old_owner_luid IS NULL OR new_owner_luid IS NULL").count() == 0
    # failing extract refreshes show up as failed jobs with their notes
    failed = spark.sql(f"SELECT * FROM {gold}.fct_background_jobs WHERE result = 'failed'").collect()
    assert failed and all(j["failure_notes"] for j in failed)
    assert all(j["state_timeline"].endswith("Failed") for j in failed)


def test_one_person_across_the_cases_a_luid_arrives_in_and_wide_numbers_intact(spark, gold_lake):
    """The sample's emitter envelopes carry LUIDs in upper case (Tableau's may): every mart sees
    one person per LUID, and no integral column narrows what Tableau sends."""
    cfg, _, _ = gold_lake
    gold = cfg.get("gold.schema")
    site_logins = spark.sql(f"SELECT * FROM {gold}.fct_logins WHERE family = 'site'")
    login_types = [r[0] for r in site_logins.select("event_type").distinct().collect()]
    logins = (
        spark.table(tables(cfg).bronze_raw("site"))
        .where(F.col("event_type").isin(login_types))
        .select(
            F.coalesce(
                F.get_json_object("raw_line", "$.actorUserLuid"), F.get_json_object("raw_line", "$.event.actorUserLuid")
            ).alias("luid")
        )
    )
    as_sent = logins.select(F.countDistinct("luid")).first()[0]
    people = logins.select(F.countDistinct(F.lower("luid"))).first()[0]
    assert as_sent > people  # some signed in with their LUID in both cases: the test can fail
    assert site_logins.select(F.countDistinct("user_luid")).first()[0] == people
    wide = []
    for name in mart_tables(spark, gold):
        table = f"{gold}.{name}"
        frame = spark.table(table)
        luids = [c for c in frame.columns if c.endswith("luid")]
        if luids:
            upper = frame.where(" OR ".join(f"`{c}` <> lower(`{c}`)" for c in luids)).count()
            assert upper == 0, table
        assert not [c for c, typ in frame.dtypes if typ == "int" and c.endswith(("_id", "size", "count"))], table
        wide += [
            c for c, typ in frame.dtypes if typ == "bigint" and frame.where(f"`{c}` > 2147483647").limit(1).count()
        ]
    assert wide  # values past 32 bits reach gold as numbers


def test_every_finding_of_every_detection_report_is_in_rpt_detections_once(spark, gold_lake):
    """rpt_detections is the union of the detection reports: each report's rows, each with a unique
    id, a severity and evidence (what `auditlake alerts` sends and a SIEM reads)."""
    cfg, _, _ = gold_lake
    t = tables(cfg)
    found = spark.table(t.detections)
    by_report = {r["report"]: r["n"] for r in found.groupBy("report").agg(F.count("*").alias("n")).collect()}
    reports = [
        r.tableName for r in spark.sql(f"SHOW TABLES IN {t.gold_schema} LIKE 'rpt_*'").collect() if not r.isTemporary
    ]  # not the temporary views an incremental report's merge leaves
    # not findings: the feed's health, the access review as of a date, the audit of the audit log and the
    # current state's reports (effective access, grants to everyone, orphaned content, embedded passwords)
    not_findings = (
        "rpt_detections",
        "rpt_feed_gaps",
        "rpt_inactive_licensed_users",
        "rpt_access_review",
        "rpt_access_log_discrepancies",
        "rpt_effective_access",
        "rpt_all_users_grants",
        "rpt_orphaned_content",
        "rpt_embedded_credentials",
    )
    reports = [r for r in reports if r not in not_findings]
    assert len(reports) == 9, reports  # inactive users reach rpt_detections through rpt_licence_right_sizing
    for report in reports:
        assert by_report.get(report, 0) == spark.table(t.gold(report)).count(), report
    assert by_report.get("rpt_failed_login_bursts", 0) > 0  # the generator's burst story
    assert found.count() == found.select("detection_id").distinct().count()
    assert found.where("severity NOT IN ('low', 'medium', 'high', 'critical') OR detected_at IS NULL").count() == 0
    assert (
        found.where(
            "report NOT IN ('rpt_licence_right_sizing', 'rpt_stale_content') AND size(evidence_event_ids) = 0"
        ).count()
        == 0
    )


@pytest.mark.subprocess
def test_gold_marts_through_the_thrift_server_with_beeline(spark, cfg, gold_lake):
    """A real JDBC client (beeline, shipped with PySpark) on the auditors' Thrift server, as a BI tool would."""
    from pipelines.serving.thrift import beeline_rows, jdbc_url, start_auditor_server

    gold = gold_lake[0].get("gold.schema")
    query = f"SELECT outcome, count(*) AS n FROM {gold}.fct_logins GROUP BY outcome ORDER BY outcome"
    server = start_auditor_server(spark, cfg)  # the session's configuration says where it listens
    try:
        rows = beeline_rows(jdbc_url(cfg, "auditor"), query)
    finally:
        server.stop()
    expected = [[r["outcome"], str(r["n"])] for r in spark.sql(query).collect()]
    assert rows == [["outcome", "n"], *expected]


def test_sql_command_query(spark, gold_lake):
    from pipelines.serving.query import format_rows, run_query

    cfg, _, _ = gold_lake
    columns, rows, truncated = run_query(spark, f"SELECT event_id FROM {cfg.get('gold.schema')}.fct_logins", 5)
    assert columns == ["event_id"] and len(rows) == 5 and truncated
    assert format_rows(columns, rows, "csv").count("\n") == 6


def test_the_marts_keep_the_columns_and_types_their_contract_lists(spark, gold_lake):
    """dbt_project/contract/marts.yml (auditlake_devtools/mart_contract.py): every column it lists is in its
    mart with its type; a column it does not list yet is an addition and passes."""
    from auditlake_devtools.mart_contract import CHANGES, CONTRACT, broken, mart_columns, read_contract

    built = mart_columns(spark, gold_lake[0].get("gold.schema"))
    assert broken(read_contract(), built) == {}, (
        f"marts that break {CONTRACT.name}: if meant, write it again (`auditlake docs mart-contract`) and name "
        f"each column in {CHANGES.name}, in the same commit"
    )
