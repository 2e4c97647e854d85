"""Entity snapshots: hourly Parquet files landed once, kept as a type-2 history that answers "as of"
exactly; on small hand-made snapshots (the generator's are checked in test_generate_snapshot_*.py
and the gold tests)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from pipelines.activity_log.bronze.land import land_bronze
from pipelines.config.load import load_config
from pipelines.entity_snapshots.silver import APPLIED, COMMIT_MARK, LATE, PENDING, promote_snapshots
from pipelines.integrity.reconcile import reconcile_files, reconcile_snapshots
from pipelines.lake.table_names import tables
from pipelines.refresh import new_run_id
from tests.lake import variant_environ

SITE = "5a5a5a5a-0000-4000-8000-000000000001"
H0 = datetime(2026, 6, 1, 0)
U1, U2, U3 = ("0000000a-0000-4000-8000-00000000000" + str(i) for i in (1, 2, 3))


def _hour(i: int) -> datetime:
    return H0 + timedelta(hours=i)


def write_snapshot(
    landing, hour: datetime, entity: str, rows: list[dict], name: str = "part-00000.parquet", site: str = SITE
):
    folder = (
        landing
        / "pod=p1"
        / f"siteLuid={site}"
        / f"y={hour:%Y}"
        / f"m={hour:%m}"
        / f"d={hour:%d}"
        / f"h={hour:%H}"
        / f"entityType={entity}"
    )
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / name)
    return folder / name


def user(luid: str, role: str, **extra) -> dict:
    return {"luid": luid, "name": luid[-1], "site_role": role, **extra}


# What the site looked like, hour by hour: u1 Viewer then Creator; u2 leaves at 2 and comes back at 3;
# u3 joins at 1; at 3 the files gain a column (locale), which is a change only where it has a value.
USERS = {
    0: [user(U1, "Viewer"), user(U2, "Explorer")],
    1: [user(U1, "Viewer"), user(U2, "Explorer"), user(U3, "Viewer")],
    2: [user(U1, "Creator"), user(U3, "Viewer")],
    3: [
        user(U1, "Creator", locale=None),
        user(U2.upper(), "Explorer", locale="fr-FR"),
        user(U3, "Viewer", locale=None),
    ],
}


@pytest.fixture(scope="module")
def snapshot_lake(spark, lake_dir):
    cfg = load_config("test", environ=variant_environ(lake_dir, "snapshots"))
    landing = cfg.path("paths.landing_dir")
    for i in (0, 1):
        write_snapshot(landing, _hour(i), "users", USERS[i])
    write_snapshot(landing, _hour(0), "group_members", [{"group_luid": "g1", "user_luid": U1}])
    (
        landing
        / "pod=p1"
        / f"siteLuid={SITE}"
        / "y=2026"
        / "m=06"
        / "d=01"
        / "h=01"
        / "entityType=users"
        / "part-00001.parquet"
    ).write_bytes(b"PAR1 cut short")
    first = _run(spark, cfg)
    for i in (2, 3):
        write_snapshot(landing, _hour(i), "users", USERS[i])
    second = _run(spark, cfg)
    return cfg, landing, first, second


def _run(spark, cfg):
    run_id = new_run_id()
    land_bronze(spark, cfg, run_id, log=lambda _m: None)
    return promote_snapshots(spark, cfg, run_id, log=lambda _m: None)


def _history(spark, cfg, entity="users"):
    return spark.table(tables(cfg).entity_history(entity))


def test_every_file_lands_once_and_a_damaged_one_is_quarantined(spark, snapshot_lake):
    cfg, _, first, second = snapshot_lake
    t = tables(cfg)
    ledger = {
        "/".join(r["path"].rsplit("/", 3)[-3:]): (r["status"], r["reason"], r["rows"])
        for r in spark.table(t.file_ledger).where(F.col("entity_type").isNotNull()).collect()
    }
    assert ledger["h=01/entityType=users/part-00001.parquet"][:2] == ("quarantined", "not_parquet")
    assert ledger["h=00/entityType=users/part-00000.parquet"] == ("landed", None, 2)
    assert ledger["h=00/entityType=group_members/part-00000.parquet"] == ("landed", None, 1)
    landed = spark.table(t.bronze_entity("users"))
    assert landed.count() == sum(len(rows) for rows in USERS.values())  # each file once, over two runs
    assert {"locale", "snapshot_site_luid", "snapshot_hour", "source_file"} <= set(landed.columns)
    assert landed.where(F.col("snapshot_site_luid") != SITE).count() == 0
    assert [p.hours_applied for p in first if p.entity_type == "users"] == [2]
    assert [p.hours_applied for p in second if p.entity_type == "users"] == [2]


def test_a_run_records_every_types_hours_in_one_commit_and_a_history_merges_only_to_close(spark, snapshot_lake):
    """The fixture's two runs: each records the hours of all its types in one commit and marks them
    applied in one more; a history takes its first versions by an append and a MERGE only once a
    version closes, each commit naming its run."""
    cfg, _, first, second = snapshot_lake
    t = tables(cfg)

    def history(table):
        rows = spark.sql(f"DESCRIBE HISTORY {table}").orderBy("version").collect()
        return [(r["operation"], r["operationMetrics"], r["userMetadata"]) for r in rows]

    hours = history(t.snapshot_hours)[1:5]  # the fixture's runs (later tests add to it)
    assert [op for op, _, _ in hours] == ["WRITE", "UPDATE", "WRITE", "UPDATE"], hours
    # the first run: two hours of users and one of group_members, in one append and one update
    assert sorted(p.hours_applied for p in first) == [1, 2]
    assert hours[0][1]["numOutputRows"] == hours[1][1]["numUpdatedRows"] == "3"
    users = history(t.entity_history("users"))
    assert [op for op, _, _ in users][1:3] == ["WRITE", "MERGE"], users
    marks = [mark for _, _, mark in users[1:3]]
    assert all(mark and mark.startswith(COMMIT_MARK) for mark in marks) and marks[0] != marks[1]
    assert [p.versions_closed for p in second if p.entity_type == "users"] == [2]


def test_one_version_per_change(spark, snapshot_lake):
    cfg = snapshot_lake[0]
    versions = {
        (
            r["entity_key"],
            r["valid_from"].hour,
            r["valid_to"].hour if r["valid_to"] else None,
            r["site_role"],
            r["locale"],
        )
        for r in _history(spark, cfg).collect()
    }
    assert versions == {
        (U1, 0, 2, "Viewer", None),
        (U1, 2, None, "Creator", None),  # a new column still empty: no version
        (U2, 0, 2, "Explorer", None),
        (U2, 3, None, "Explorer", "fr-FR"),  # gone at 2, back (upper case) at 3
        (U3, 1, None, "Viewer", None),
    }
    assert _history(spark, cfg).where("is_current <> (valid_to IS NULL)").count() == 0


def test_the_history_answers_as_of_every_hour_exactly(spark, snapshot_lake):
    cfg = snapshot_lake[0]
    history = _history(spark, cfg)
    for i, rows in USERS.items():
        at = F.lit(_hour(i)).cast("timestamp")
        got = {
            (r["entity_key"], r["site_role"])
            for r in history.where(
                (F.col("valid_from") <= at) & (F.col("valid_to").isNull() | (F.col("valid_to") > at))
            ).collect()
        }
        assert got == {(u["luid"].lower(), u["site_role"]) for u in rows}, i


def test_a_late_snapshot_is_kept_in_bronze_and_not_applied(spark, snapshot_lake):
    cfg, landing, _, _ = snapshot_lake
    before = _history(spark, cfg).count()
    write_snapshot(landing, _hour(-1), "users", [user(U1, "Guest")])
    (promotion,) = [p for p in _run(spark, cfg) if p.entity_type == "users"]
    assert (promotion.hours_applied, promotion.hours_late) == (0, 1) and promotion.problems
    hours = spark.table(tables(cfg).snapshot_hours).where("entity_type = 'users'")
    assert hours.where(F.col("status") == LATE).count() == 1
    assert hours.where(F.col("status") == APPLIED).count() == 4
    assert _history(spark, cfg).count() == before


def test_an_interrupted_apply_is_finished_once(spark, snapshot_lake):
    """A run killed after its MERGE but before marking its hours: the next run marks them, adds nothing;
    killed before its MERGE: the next run applies them."""
    cfg, landing, _, _ = snapshot_lake
    t = tables(cfg)
    before = _history(spark, cfg).count()
    spark.sql(
        f"UPDATE {t.snapshot_hours} SET status = '{PENDING}' WHERE entity_type = 'users' "
        f"AND snapshot_hour = '{_hour(3):%Y-%m-%d %H}:00:00'"
    )
    Path(cfg.checkpoint_dir, "snapshots_users.bronze_version").unlink()  # a killed run never wrote it
    _run(spark, cfg)
    assert _history(spark, cfg).count() == before
    assert spark.table(t.snapshot_hours).where(F.col("status") == PENDING).count() == 0
    write_snapshot(landing, _hour(4), "users", [user(U1, "Creator")])
    run_id = new_run_id()
    land_bronze(spark, cfg, run_id, log=lambda _m: None)
    spark.createDataFrame(
        [("users", SITE, _hour(4), 1, PENDING, "killed-run", datetime.now(), datetime.now())],
        spark.table(t.snapshot_hours).schema,
    ).write.format("delta").mode("append").saveAsTable(t.snapshot_hours)
    promote_snapshots(spark, cfg, new_run_id(), log=lambda _m: None)
    current = {r["entity_key"] for r in _history(spark, cfg).where("is_current").collect()}
    assert current == {U1}  # u2 and u3 are gone from the snapshot at 4


def test_a_snapshot_that_changes_nothing_is_applied_without_a_commit(spark, snapshot_lake):
    """The hour is recorded applied; the history keeps its versions and gets no commit."""
    cfg, landing, _, _ = snapshot_lake
    t = tables(cfg)
    versions = spark.sql(f"DESCRIBE HISTORY {t.entity_history('users')}").count()
    rows = _history(spark, cfg).count()
    write_snapshot(landing, _hour(5), "users", [user(U1, "Creator")])  # as at 4
    (promotion,) = [p for p in _run(spark, cfg) if p.entity_type == "users"]
    assert (promotion.hours_applied, promotion.versions_added, promotion.versions_closed) == (1, 0, 0)
    assert spark.sql(f"DESCRIBE HISTORY {t.entity_history('users')}").count() == versions
    assert _history(spark, cfg).count() == rows
    applied = spark.table(t.snapshot_hours).where(F.col("snapshot_hour") == F.lit(_hour(5)))
    assert [r["status"] for r in applied.collect()] == [APPLIED]


def test_reconcile_covers_the_snapshot_files_and_rows(spark, snapshot_lake):
    cfg = snapshot_lake[0]
    files = reconcile_files(spark, cfg)
    assert files.balanced and any(
        status == "quarantined" and reason == "not_parquet" for status, reason, _, _ in files.verdicts
    )
    by_type = {r.entity_type: r for r in reconcile_snapshots(spark, cfg)}
    assert set(by_type) == {"users", "group_members"} and all(r.balanced for r in by_type.values())
    users = by_type["users"]
    assert (users.bronze_rows, users.late_rows, users.pending_rows) == (users.applied_rows + 1, 1, 0)


# ---------------------------------------------------------------- the generator's hourly snapshots


def _content(row: dict, columns: list[str]) -> str:
    """A row's delivered values (times as naive UTC: Parquet gives them with a zone, Spark without)."""
    value = lambda v: v.replace(tzinfo=None).isoformat() if isinstance(v, datetime) else v  # noqa: E731
    return json.dumps({c: value(row.get(c)) for c in columns if row.get(c) is not None}, sort_keys=True)


def test_generated_hourly_snapshots_give_one_version_per_change_and_exact_as_of(spark, lake_dir):
    from auditlake_devtools.sample.activity_log import generate_activity_log
    from auditlake_devtools.sample.activity_log.snapshots import ENTITY_TYPES
    from pipelines.entity_snapshots.silver import key_columns

    cfg = load_config("test", environ=variant_environ(lake_dir, "generated_snapshots"))
    landing = cfg.path("paths.landing_dir")
    summary = generate_activity_log(
        landing, 600, seed=23, days=1, snapshots=True, snapshot_every=2, layout="date_first"
    )
    assert summary["snapshots"]["hours"] == 13
    promotions = {p.entity_type: p for p in _run(spark, cfg)}
    assert set(promotions) == set(ENTITY_TYPES)
    for entity in ENTITY_TYPES:
        keys = key_columns(cfg, entity)
        files = {}  # (site, hour) -> {key: content}
        for path in landing.rglob(f"entityType={entity}/*.parquet"):
            parts = dict(p.split("=", 1) for p in path.parts if "=" in p)
            hour = datetime(int(parts["y"]), int(parts["m"]), int(parts["d"]), int(parts["h"]))
            rows = pq.read_table(path).to_pylist()
            columns = sorted(rows[0]) if rows else []
            files[(parts["siteLuid"], hour)] = {
                "|".join(str(r[k]) for k in keys).lower(): _content(r, columns) for r in rows
            }
        history = [r.asDict() for r in _history(spark, cfg, entity).collect()]
        payload = [
            c
            for c in _history(spark, cfg, entity).columns
            if c
            not in (
                "site_luid",
                "entity_key",
                "valid_from",
                "valid_to",
                "is_current",
                "row_hash",
                "source_file",
                "silver_run_id",
                "silver_ingest_ts",
            )
        ]
        # as of every snapshot hour, the history gives that snapshot exactly
        for (site, hour), expected in files.items():
            got = {
                r["entity_key"]: _content(r, payload)
                for r in history
                if r["site_luid"] == site
                and r["valid_from"] <= hour
                and (r["valid_to"] is None or r["valid_to"] > hour)
            }
            assert got == expected, (entity, site, hour)
        # one version per change: count the changes in the files themselves
        changes = 0
        for site in {s for s, _ in files}:
            before: dict[str, str] = {}
            for hour in sorted(h for s, h in files if s == site):
                now = files[(site, hour)]
                changes += sum(1 for k, v in now.items() if before.get(k) != v)
                before = now
        assert len(history) == changes, entity
        assert promotions[entity].versions_added == changes
