"""Test helper: later deliveries to the shared gold lake (tests/conftest.py's ``gold_lake``): late and
new rows appended to silver for the models kept incrementally, and what each delivery checks once
they are built (``deliveries`` in tests/test_gold_incremental.py runs them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from pyspark.sql import functions as F

from pipelines.gold.run import dbt_target_dir
from pipelines.lake.table_names import tables

NAME_COLUMNS = {"content_name": ("content_name", "name"), "group_name": ("group_name", "name")}


def model_table(cfg, model: str) -> str:
    """A dbt model's table: the intermediate models' in gold's staging schema, the marts' in gold's."""
    return f"{tables(cfg).gold_staging_schema if model.startswith('int_') else cfg.get('gold.schema')}.{model}"


@dataclass
class Delivery:
    """One test's late and new rows for the models kept incrementally, and what it checks. The three
    deliveries below go through the same dbt runs (the ``deliveries`` fixture of
    tests/test_gold_incremental.py): each run of these models costs the shared lake's worker its fixed
    price (CI time, issue 30), so they share two incremental runs and one full refresh, and each
    follows users the others leave alone."""

    runs: list[list[tuple[str, object]]]  # the (table, frame) rows appended before each incremental run
    models: list[list[str]]  # the models each of those runs builds
    # its incremental models -> the columns a full refresh may leave different (a table model is built
    # whole by every run: it equals a full refresh's once the incremental models it reads do)
    compared: dict[str, tuple[str, ...]]
    check: Callable[[], None]  # its assertions once the incremental runs are done
    users: set[str]  # the user LUIDs its rows are about
    failure: AssertionError | None = None
    differs: list[str] = field(default_factory=list)  # its compared models a full refresh changed

    def passed(self) -> None:
        if self.failure is not None:
            raise self.failure
        assert not self.differs, f"{self.differs} differ from a full refresh"


def _late_copy(spark, table: str, event_id: str, tag: str, **values):
    """A copy of silver's event ``event_id`` with a new id (``tag``) and ``values`` (Columns) set, as a
    later delivery would bring it."""
    frame = spark.table(table).where(f"event_id = '{event_id}'")
    for column, value in values.items():
        frame = frame.withColumn(column, value)
    frame = frame.withColumn("event_id", F.sha2(F.concat(F.col("event_id"), F.lit(f":{tag}")), 256))
    return frame.withColumn("event_date", F.to_date("event_time")).withColumn("silver_ingest_ts", F.current_timestamp())


def _not_about(users: set[str], *columns: str) -> str:
    """A condition: none of ``columns`` names one of ``users``."""
    listed = ", ".join(f"'{u}'" for u in sorted(users)) or "''"
    return " and ".join(f"coalesce({c}, '') not in ({listed})" for c in columns)


def role_history_delivery(spark, cfg, _users: set[str]) -> Delivery:
    """int_site_user_role_versions and int_site_actors are tables kept incrementally: a delivery reads
    silver from the start of the version its observations fall in. Two deliveries: a late observation
    of another role in the middle of a user's history (it splits their one version in three), then one
    of a third role 1 ms after it (inside the second version: the first is its seed), one before all
    of another user's, a new actor, and a user's rename followed by an event of theirs with no name (the
    name stays: int_user_identities)."""
    site, staging, gold = tables(cfg).silver_events("site"), tables(cfg).gold_staging_schema, cfg.get("gold.schema")
    user = (
        spark.table(site)
        .where("actor_user_luid is not null and site_role_id is not null")
        .groupBy("site_luid", "actor_user_luid")
        .agg(
            F.min("event_time").alias("first_at"),
            F.max("event_time").alias("last_at"),
            F.min_by("event_id", "event_time").alias("event_id"),
            F.count(F.lit(1)).alias("n"),
            F.max("site_role_id").alias("role"),
            F.countDistinct("site_role_id", "system_admin_level").alias("roles"),
        )
        .where("n >= 3 and first_at < last_at and roles = 1")
        .orderBy(F.desc("n"), "actor_user_luid")
        .first()
    )
    split_role, seeded_role = [r for r in (10, 9, 3) if r != user.role][:2]  # Creator, Viewer, Explorer
    other = (
        spark.table(f"{staging}.int_site_user_role_versions")
        .where(f"user_luid <> '{user.actor_user_luid}'")
        .orderBy("version_key")
        .first()
    )
    middle = F.lit(user.first_at + (user.last_at - user.first_at) / 2).cast("timestamp")
    named = (
        spark.table(f"{gold}.fct_user_lifecycle")
        .where("family = 'site' and user_luid is not null and user_name is not null")
        .orderBy("event_id")
        .first()
    )
    newest = spark.table(site).agg(F.max("event_time")).first()[0]
    new_actor = "00000000-0000-4000-8000-00000000a11c"

    def copy(event_id: str, tag: str, **values):
        return site, _late_copy(spark, site, event_id, tag, **values)

    runs = [
        [copy(user.event_id, "split", event_time=middle, site_role_id=F.lit(split_role).cast("bigint"))],
        [
            copy(
                user.event_id,
                "seeded",
                event_time=middle + F.expr("interval 1 millisecond"),
                site_role_id=F.lit(seeded_role).cast("bigint"),
            ),
            copy(other.first_event_id, "before", event_time=F.col("event_time") - F.expr("interval 400 days")),
            copy(
                other.first_event_id,
                "actor",
                actor_user_luid=F.lit(new_actor),
                site_role_id=F.lit(None).cast("bigint"),
            ),
            # the user renamed, then an event of theirs that names nobody (dim_users keeps the new name)
            copy(
                named.event_id,
                "renamed",
                event_time=F.lit(newest + timedelta(hours=1)),
                name=F.lit("Renamed User"),
                for_user_name=F.lit(None).cast("string"),
            ),
            copy(
                named.event_id,
                "nameless",
                event_time=F.lit(newest + timedelta(hours=2)),
                name=F.lit(None).cast("string"),
                for_user_name=F.lit(None).cast("string"),
            ),
        ],
    ]

    def roles() -> list[int]:
        return [
            r.site_role_id
            for r in spark.table(f"{staging}.int_site_user_role_versions")
            .where(f"user_luid = '{user.actor_user_luid}' and site_luid <=> '{user.site_luid}'")
            .orderBy("version_number")
            .collect()
        ]

    before = roles()
    assert len(before) == 1, before

    def check() -> None:
        compiled = next((dbt_target_dir() / "compiled").rglob("int_site_user_role_versions.sql")).read_text()
        assert "event_date >= date '" in compiled and "9999-12-31" not in compiled  # a bounded read
        assert roles() == [user.role, split_role, seeded_role, user.role]
        assert spark.table(f"{gold}.dim_users").where(f"user_luid = '{new_actor}'").count() == 1
        assert {
            r.user_name for r in spark.table(f"{gold}.dim_users").where(f"user_luid = '{named.user_luid}'").collect()
        } == {"Renamed User"}

    incremental = ["int_site_user_role_versions", "int_site_actors", "fct_user_lifecycle", "int_user_identities"]
    # the first run builds the version the second one's observation falls in (its seed)
    models = [incremental[:1], [*incremental, "dim_users"]]
    # the role history's silver_ingest_ts is its watermark: a version recomputed from its seed keeps the
    # seed's (which may count observations a split moved to a later version), so it is not compared
    compared = {m: ("silver_ingest_ts",) if m == "int_site_user_role_versions" else () for m in incremental}
    users = {user.actor_user_luid, other.user_luid, named.user_luid, new_actor}
    return Delivery(runs, models, compared, check, users)


def content_delivery(spark, cfg, users: set[str]) -> Delivery:
    """int_content_mentions, int_group_mentions, int_admin_security_changes and int_user_activity merge each
    delivery's new rows into what they hold. One delivery: a late rename of a piece of content and of a group
    (older than the name they have: neither is renamed), a newer rename of another piece of content, a new
    group, a view opened (its workbook's last access), an administrator's change on a Sunday night, a
    sign-in after every other event (its user's last, and the reports' "now") and a sign-in older than
    another user's last. The tables, the dimensions and the reports over them are compared."""
    t = tables(cfg)
    site, tenant, staging, gold = (
        t.silver_events("site"),
        t.silver_events("tenant"),
        t.gold_staging_schema,
        cfg.get("gold.schema"),
    )
    named = (
        spark.table(f"{gold}.fct_content_lifecycle")
        .where(f"content_name is not null and {_not_about(users, 'actor_user_luid')}")
        .groupBy("content_luid")
        .agg(F.max_by("event_id", "event_time").alias("event_id"))
        .orderBy("content_luid")
        .limit(2)
        .collect()
    )
    assert len(named) == 2
    late, newer = [
        spark.table(f"{staging}.int_content_mentions").where(f"content_luid = '{r.content_luid}'").first()
        for r in named
    ]
    group = spark.table(f"{staging}.int_group_mentions").where("group_name is not null").orderBy("group_luid").first()
    group_event = (
        spark.table(f"{staging}.stg_site__events")
        .where(
            f"group_luid = '{group.group_luid}' and event_type in ('hist_create_group', "
            f"'hist_rename_group', 'create_delete_group') and {_not_about(users, 'actor_user_luid', 'user_luid')}"
        )
        .orderBy("event_id")
        .first()
    )
    access = (
        spark.table(f"{gold}.fct_content_access")
        .where(
            "workbook_luid is not null and event_type = 'hist_access_view' and " + _not_about(users, "actor_user_luid")
        )
        .orderBy("event_id")
        .first()
    )
    admin = spark.table(f"{staging}.int_admin_security_changes").where("family = 'tenant'").orderBy("event_id").first()
    signed_in = (
        spark.table(f"{staging}.int_user_activity")
        .where(f"last_sign_in_at is not null and {_not_about(users, 'user_luid')}")
        .orderBy("activity_key")
        .limit(2)
    ).collect()
    assert group_event and access and admin and len(signed_in) == 2, "the shared lake lacks an event this test copies"
    newest = spark.table(site).agg(F.max("event_time")).first()[0]

    def copy(table: str, event_id: str, tag: str, **values):
        columns = spark.table(table).schema
        # a name is `name` in hist_* events and content_name / group_name in the others: set each present
        lits = {
            name: F.lit(value).cast(columns[name].dataType)
            for column, value in values.items()
            for name in NAME_COLUMNS.get(column, (column,))
            if name in columns.names
        }
        return table, _late_copy(spark, table, event_id, tag, **lits)

    new_group = "00000000-0000-4000-8000-0000000009a1"
    sunday_night = datetime(2031, 1, 5, 3, 0)  # a Sunday, outside every window
    rows = [
        copy(
            site,
            named[0].event_id,
            "late",
            content_name="Late name",
            event_time=late.content_name_at - timedelta(days=1),
        ),
        copy(site, named[1].event_id, "newer", content_name="Newest name", event_time=newest + timedelta(hours=1)),
        copy(
            site,
            group_event.event_id,
            "late",
            group_name="Late group",
            event_time=group.group_name_at - timedelta(days=1),
        ),
        copy(site, group_event.event_id, "new", group_luid=new_group, group_name="New group"),
        copy(site, access.event_id, "opened", event_time=newest + timedelta(hours=2)),
        # a sign-in after every other event (the user's last, and "now"), one before the other user's last
        copy(site, signed_in[0].last_sign_in_event_id, "signin", event_time=newest + timedelta(hours=3)),
        copy(
            site,
            signed_in[1].last_sign_in_event_id,
            "late",
            event_time=signed_in[1].last_sign_in_at - timedelta(days=1),
        ),
        copy(tenant, admin.event_id, "night", event_time=sunday_night),
    ]
    site_ids = "', '".join(frame.first().event_id for table, frame in rows if table == site)

    def content(luid: str):
        return spark.table(f"{gold}.dim_content").where(f"content_luid = '{luid}'").first()

    def check() -> None:
        names = {
            r.content_name
            for r in spark.table(f"{gold}.fct_content_lifecycle").where(f"event_id in ('{site_ids}')").collect()
        }
        assert names == {"Late name", "Newest name"}  # the delivery reached the fact
        assert (
            spark.table(f"{staging}.stg_site__events")
            .where(f"group_luid = '{group.group_luid}' and coalesce(group_name, name) = 'Late group'")
            .count()
            == 1
        )
        assert content(late.content_luid).content_name == late.content_name  # a late rename renames nothing
        assert content(newer.content_luid).content_name == "Newest name"
        groups = {r.group_luid: r.group_name for r in spark.table(f"{gold}.dim_groups").collect()}
        assert groups[group.group_luid] == group.group_name and groups[new_group] == "New group"
        opened = spark.table(f"{staging}.int_content_mentions").where(f"content_luid = '{access.workbook_luid}'")
        assert opened.first().last_accessed_at == newest + timedelta(hours=2)
        activity = {
            r.activity_key: r
            for r in spark.table(f"{staging}.int_user_activity")
            .where(f"activity_key in ('{signed_in[0].activity_key}', '{signed_in[1].activity_key}')")
            .collect()
        }
        assert activity[signed_in[0].activity_key].last_sign_in_at == newest + timedelta(hours=3)
        assert activity[signed_in[1].activity_key].last_sign_in_at == signed_in[1].last_sign_in_at  # late: kept
        # "now" is the new sign-in's time (lake_now(): the newest partition's newest event)
        assert {r.as_of_time for r in spark.table(f"{gold}.rpt_inactive_licensed_users").collect()} == {
            newest + timedelta(hours=3)
        }
        assert (
            spark.table(f"{gold}.rpt_security_changes_outside_window")
            .where(f"event_time = timestamp '{sunday_night}'")
            .count()
            == 1
        )

    kept = ["int_content_mentions", "int_group_mentions", "int_admin_security_changes", "int_user_activity"]
    over_them = [
        "dim_content",
        "dim_groups",
        "rpt_stale_content",
        "rpt_security_changes_outside_window",
        "rpt_inactive_licensed_users",
        "rpt_licence_right_sizing",
    ]
    facts = ["fct_content_lifecycle", "fct_content_access", "fct_group_membership_changes", "fct_logins"]
    about = {signed_in[0].user_luid, signed_in[1].user_luid, access.actor_user_luid}
    return Delivery([rows], [[*facts, *kept, *over_them]], {m: () for m in kept}, check, about)


def jobs_and_sessions_delivery(spark, cfg, users: set[str]) -> Delivery:
    """fct_background_jobs and fct_sessions read silver only from the earliest time a row with new
    events can start (macros/history_window.sql). A new state of the oldest job (its other events
    are older than the new one) and a late sign-in inside a session (splitting it)."""
    site, gold = tables(cfg).silver_events("site"), cfg.get("gold.schema")
    job = spark.table(f"{gold}.fct_background_jobs").orderBy("first_event_at", "job_luid").first()
    session = (
        spark.table(f"{gold}.fct_sessions")
        .where(f"(views_accessed > 0 or signed_out_at is not null) and {_not_about(users, 'user_luid')}")
        .orderBy("signed_in_at", "session_id")
        .first()
    )
    first_state = spark.table(site).where(f"job_luid = '{job.job_luid}'").orderBy("event_time").first()
    rows = [
        (
            site,
            _late_copy(
                spark,
                site,
                first_state.event_id,
                "late",
                event_state=F.lit("Cancelled"),
                event_time=F.col("event_time") + F.expr("interval 1 day"),
            ),
        ),
        (
            site,
            _late_copy(
                spark,
                site,
                session.session_id,
                "late",
                event_time=F.col("event_time") + F.expr("interval 1 millisecond"),
            ),
        ),
    ]
    late_sign_in = rows[1][1].first().event_id
    marts = ["fct_background_jobs", "fct_sessions"]

    def check() -> None:
        for name, column in zip(marts, ("first_event_at", "signed_in_at"), strict=True):
            # a bounded read: the window starts at the job's first event / the split session
            compiled = next((dbt_target_dir() / "compiled").rglob(f"{name}.sql")).read_text()
            assert "event_date >= date '" in compiled and "9999-12-31" not in compiled, name
            # and a bounded merge: the mart's files before the recomputed rows' start are not read
            merged = next((dbt_target_dir() / "run").rglob(f"{name}.sql")).read_text()
            assert f"(DBT_INTERNAL_DEST.{column} >= timestamp '" in merged, name
            assert not spark.catalog.isCached(f"{name}__dbt_tmp"), name  # the merge's cached source dropped
        split = spark.table(f"{gold}.fct_sessions").where(f"session_id = '{late_sign_in}'").count()
        assert split == 1  # the late sign-in opened a session of its own
        assert (
            spark.table(f"{gold}.fct_background_jobs").where(f"job_luid = '{job.job_luid}'").first().state_events
            == job.state_events + 1
        )

    return Delivery([rows], [marts], {m: () for m in marts}, check, {session.user_luid})
