"""What the live feed carries beyond the bundled references (issue 16): quarantined rows of event types
the registry learns replayed once, and the registry's second source typed through silver into gold.
One lake for both, in that order: a first delivery promoted while the registry does not know the live
feed's types (then replayed), a second one for the next day promoted by the registry that does."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest
from pyspark.sql import functions as F

import pipelines.activity_log.registry as registry
from auditlake_devtools.sample.activity_log import generate_activity_log
from pipelines.activity_log.silver import replay
from pipelines.activity_log.silver.plan import family_plan
from pipelines.activity_log.silver.transform import UNKNOWN_EVENT_TYPE
from pipelines.config.load import load_config
from pipelines.gold.run import run_dbt
from pipelines.integrity.reconcile import reconcile_family
from pipelines.lake.table_names import tables
from pipelines.refresh import run_refresh
from tests.lake import variant_environ

# the extractor's types, then those of Tableau's current help pages
LIVE_TYPES = ("vizql_http_request", "bridge_job", "add_delete_group_to_group_set", "login_authentication")
pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def live_environ(lake_dir) -> dict[str, str]:
    return variant_environ(lake_dir, "live")


def _registry_without(types: tuple[str, ...]) -> dict:
    old = copy.deepcopy(registry.load_registry())
    for name in types:
        del old["families"]["site"]["events"][name]
    return old


def _site_counts(spark, t) -> dict[str, int]:
    silver = spark.table(t.silver_events("site")).where(F.col("event_type").isin(*LIVE_TYPES)).count()
    quarantined = (
        spark.table(t.quarantine)
        .where((F.col("reason") == UNKNOWN_EVENT_TYPE) & F.col("event_type").isin(*LIVE_TYPES))
        .count()
    )
    return {"silver": silver, "quarantined": quarantined}


class _Killed(RuntimeError):
    pass


def test_rows_quarantined_as_unknown_reach_silver_once_the_registry_learns_their_type(spark, live_environ, monkeypatch):
    cfg = load_config("test", environ=live_environ)
    t = tables(cfg)
    generate_activity_log(cfg.path("paths.landing_dir"), 200, seed=8, days=1, live_feed=True)

    # landed and promoted by a registry that does not know the live feed's event types yet
    old = _registry_without(LIVE_TYPES)
    monkeypatch.setattr(registry, "load_registry", lambda *_a, **_k: old)
    family_plan.cache_clear()
    try:
        run_refresh(spark, cfg, ["bronze", "silver"], log=lambda _m: None)
        assert replay.replay_quarantine(spark, cfg, "nothing-known")[0].replayed == 0
    finally:
        monkeypatch.undo()
        family_plan.cache_clear()
    before = _site_counts(spark, t)
    assert before["silver"] == 0 and before["quarantined"] > 0

    # the registry learnt them: a replay killed after its appends, before the rows left quarantine ...
    class KilledDeltaTable:
        @staticmethod
        def forName(*_a, **_k):
            raise _Killed("killed before the quarantine rows were removed")

    monkeypatch.setattr(replay, "DeltaTable", KilledDeltaTable)
    with pytest.raises(_Killed):
        replay.replay_quarantine(spark, cfg, "replay-killed")
    monkeypatch.undo()
    assert reconcile_family(spark, cfg, "site").accounted_twice == before["quarantined"]

    # ... is redone: every row once in silver (or the duplicates), none left in quarantine
    results = {r.family: r for r in replay.replay_quarantine(spark, cfg, "replay-redone")}
    site = results["site"]
    assert site.replayed == before["quarantined"] == site.inserted + site.duplicates
    assert site.requarantined == 0 and set(site.event_types) == set(LIVE_TYPES)
    after = _site_counts(spark, t)
    assert after == {"silver": site.inserted, "quarantined": 0}
    silver = spark.table(t.silver_events("site")).where(F.col("event_type").isin(*LIVE_TYPES))
    assert silver.select("bronze_id").distinct().count() == silver.count()
    assert silver.where("event_type = 'vizql_http_request' AND ip_address IS NOT NULL").count() > 0
    # typed by the registry that learnt them: the group set's LUID lower-cased like every LUID, its id a number
    group_sets = silver.where("event_type = 'add_delete_group_to_group_set'")
    assert group_sets.count() > 0 and dict(group_sets.dtypes)["group_set_id"] == "bigint"
    assert group_sets.where("group_set_luid = lower(group_set_luid) AND group_set_id > 0").count() == group_sets.count()
    assert group_sets.where("group_set_operation IN ('add', 'delete') AND group_luid IS NOT NULL").count() > 0
    sign_ins = silver.where("event_type = 'login_authentication'")
    outcomes = {r[0] for r in sign_ins.select("event_outcome").distinct().collect()}
    assert "success" in outcomes and outcomes <= {"success", "unauthorized", "client_error", "internal_error"}
    assert sign_ins.where("_rescued_data IS NOT NULL").count() == 0
    reconciled = reconcile_family(spark, cfg, "site")
    assert reconciled.balanced and reconciled.pending == 0, reconciled

    # a second replay has nothing to do; a refresh neither
    assert [r.replayed for r in replay.replay_quarantine(spark, cfg, "replay-again")] == [0, 0]
    report = run_refresh(spark, cfg, ["silver"], log=lambda _m: None)
    assert sum(r.replayed for r in report.replays) == 0
    assert _site_counts(spark, t) == after
    logged = spark.table(t.quarantine_replays).where("family = 'site'").collect()
    assert [(r["batch_id"], r["replayed"]) for r in logged] == [(1, before["quarantined"])]


def test_a_live_feed_delivery_lands_typed_in_silver_and_reaches_gold(spark, live_environ):
    # the event views are made by this refresh (the replay's registry would have made them stale)
    cfg = load_config("test", environ={**live_environ, "AUDITLAKE__SILVER__EVENT_VIEWS": "true"})
    summary = generate_activity_log(
        cfg.path("paths.landing_dir"), 1000, seed=5, days=1, live_feed=True, start=datetime(2026, 6, 2, tzinfo=UTC)
    )  # the day after the replay's
    assert set(LIVE_TYPES) <= set(summary["event_types"])
    run_refresh(spark, cfg, ["bronze", "silver"], log=lambda _m: None)
    # the marts the live-feed types reach, and the models they read (a whole gold build is the gold tests')
    run_dbt(
        spark,
        cfg,
        [
            "run",
            "--quiet",
            "--select",
            "+fct_content_access +fct_background_jobs +rpt_failed_login_bursts +fct_group_membership_changes",
        ],
    )
    t = tables(cfg)

    site = spark.table(t.silver_events("site"))
    types = dict(site.dtypes)
    current = site.where("edition = 'current'")  # a legacy-edition record carries no live-feed attribute
    assert types["event_outcome"] == "string" and types["event_processed_time"] == "timestamp"
    assert types["site_id"] == "bigint" and types["site_id_string"] == "string"  # one name, two types
    assert types["job_id"] == "bigint" and "job_id_bigint" not in types  # integer and long: one column
    row = current.agg(
        F.count_if(F.col("event_processed_time") > F.col("event_time")).alias("processed_later"),
        F.count_if(F.col("event_outcome").isNotNull()).alias("outcomes"),
        F.count_if(F.col("_rescued_data").isNotNull()).alias("rescued"),
        F.count("*").alias("rows"),
    ).first()
    assert row["processed_later"] == row["outcomes"] == row["rows"] > 0
    assert row["rescued"] == 0 and site.where("_rescued_data IS NOT NULL").count() == 0
    assert spark.table(t.quarantine).where(F.col("reason") == UNKNOWN_EVENT_TYPE).count() == 0

    requests = spark.table(t.event_view("vizql_http_request"))
    assert requests.where("ip_address IS NOT NULL AND user_agent IS NOT NULL AND duration > 0").count() > 0
    bridge = spark.table(t.event_view("bridge_job"))
    assert dict(bridge.dtypes)["site_id_string"] == "string" and bridge.where("site_id_string IS NULL").count() == 0

    access = spark.table(t.gold("fct_content_access")).where("access_kind = 'view_request'")
    hits = access.where(
        "ip_address IS NOT NULL AND user_agent IS NOT NULL AND session_id IS NOT NULL "
        "AND content_type = 'view' AND content_luid IS NOT NULL"
    )
    assert hits.count() == access.count() == requests.count() > 0
    assert spark.table(t.gold("fct_background_jobs")).where("runner = 'bridge' AND bridge_job_id IS NOT NULL").count()
    logins = spark.table(t.gold("fct_logins")).where("family = 'site'")
    recorded = logins.where("event_type <> 'login_authentication'")  # the references' sign-ins: successes only
    assert recorded.where("outcome = 'success'").count() == recorded.count() > 0
    assert logins.where("outcome_reason IS NOT NULL").count() > 0  # eventOutcomeReason, where the record has it
    # login_authentication: every sign-in attempt, a failure where its eventOutcome is not success
    attempts = logins.where("event_type = 'login_authentication'").join(
        spark.table(t.silver_events("site")).select("event_id", "event_outcome"), "event_id"
    )
    assert attempts.where("outcome = 'failure'").count() > 0
    assert attempts.where("(event_outcome = 'success') <> (outcome = 'success')").count() == 0
    # the site's failed sign-ins make a burst for their user, as Cloud Manager's do
    bursts = spark.table(t.gold("rpt_failed_login_bursts")).where("key_type = 'user'")
    site_users = {r[0] for r in attempts.where("outcome = 'failure'").select("user_luid").distinct().collect()}
    assert {r[0] for r in bursts.select("key_value").collect()} & site_users
    memberships = spark.table(t.gold("fct_group_membership_changes"))
    group_sets = memberships.where("membership_of = 'group_set'")
    assert group_sets.count() == spark.table(t.event_view("add_delete_group_to_group_set")).count() > 0
    assert group_sets.where("group_set_luid IS NULL OR user_luid IS NOT NULL OR change = 'other'").count() == 0
    assert memberships.where("membership_of = 'group' AND user_luid IS NOT NULL").count() > 0
    assert all(r.balanced for r in (reconcile_family(spark, cfg, f) for f in ("site", "tenant")) if r)
