"""Shared fixtures: one Delta-enabled SparkSession per test run, in a throwaway lakehouse; the shared gold
lake; the generator's clean Activity Log, read back. The tiers and how they run: tests/README.md."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest

from auditlake_devtools.pg_server import free_port
from auditlake_devtools.sample.activity_log import generate_activity_log
from pipelines.config.load import load_config
from pipelines.config.project import DBT_DIR
from pipelines.lake.table_names import tables
from pipelines.refresh import run_refresh
from tests.generated_log import EVENTS, SEED, START, Run
from tests.keys import signing_key_pem
from tests.lake import BUNDLED_EXPORT, move_day, variant_environ

REFERENCE_DIR = Path(__file__).resolve().parents[2] / "shared" / "reference"
# The analysts' pseudonym key (analyst.pseudonym_key_env): one per test run, as an operator's would be
os.environ.setdefault("AUDITLAKE_PSEUDONYM_KEY", secrets.token_hex(32))
# The digests' signing key (integrity.signing_key_env): one per test run too
os.environ.setdefault("AUDITLAKE_SIGNING_KEY", signing_key_pem())


# The resources a test needs, told by the fixtures it uses (directly or through others), so that a
# developer can run a slice: `PYTEST_ARGS='-m "not dbt and not postgres"' make test`.
RESOURCE_FIXTURES = {"spark": "spark", "gold_lake": "dbt", "pg": "postgres"}


# `make test` runs the suite on two pytest-xdist workers, each with its own Spark session, lakes and
# metastore. A group runs whole on one worker: a module's tests (its module-scoped lake is built once),
# and every module using the shared gold lake (built once for them all). xdist's own `--dist loadgroup`
# does not group under pytest 9 (the node id suffix it relies on is not applied), so the scheduler is ours.
GOLD_GROUP = "gold_lake"
# the modules that rewrite the shared gold lake (the erasure pseudonymises it): after every other one
GOLD_LAKE_LAST = ("test_erase.py",)
TESTS_DIR = Path(__file__).resolve().parent


def _gold_modules() -> set[str]:
    """The test modules that use the shared gold lake (they name its fixture)."""
    return {p.name for p in TESTS_DIR.glob("test_*.py") if "gold_lake" in p.read_text(encoding="utf-8")}


def _group_of(nodeid: str, gold: set[str]) -> str:
    module = nodeid.split("::", 1)[0]
    return GOLD_GROUP if Path(module).name in gold else module


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    gold = _gold_modules()
    # the groups in our order (below), not xdist's (most tests first: the one-test S3 group came last)
    config.option.loadscopereorder = False

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group_of(nodeid, gold)

        def _reschedule(self, node) -> None:
            # the next group only once the worker has started its last test (a worker holds one test back
            # until it knows the next), not two tests ahead: a worker still busy with a long test
            # would otherwise take a group the other, idle, worker could run
            if not node.shutting_down and self.workqueue and self._pending_of(self.assigned_work[node]) > 1:
                return
            super()._reschedule(node)

    return GroupScheduling(config, log)


# A line per long test phase as it ends, with the time since the run began: CI stops a run that
# overruns, and then its log still says where the time went (and, the stop turned into an interrupt,
# pytest prints its summary and the slowest durations so far).
LONG_PHASE_SECONDS = 60
_STARTED = time.monotonic()


def _interrupt(_signum, _frame):
    raise KeyboardInterrupt("stopped (SIGTERM)")


def pytest_configure(config):
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # the controller (or a run without workers)
        signal.signal(signal.SIGTERM, _interrupt)


def pytest_runtest_logreport(report):
    if report.duration < LONG_PHASE_SECONDS or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    minutes, seconds = divmod(int(time.monotonic() - _STARTED), 60)
    worker = getattr(getattr(report, "node", None), "gateway", None)
    where = f"{worker.id} " if worker else ""
    print(
        f"\n[{minutes:02d}:{seconds:02d}] {where}{report.nodeid} ({report.when}): {report.outcome} in "
        f"{report.duration:.0f} s",
        flush=True,
    )


def _minutes(item) -> float:
    marker = item.get_closest_marker("slow")
    return float(marker.kwargs.get("minutes", 1)) if marker else 0.0


def pytest_collection_modifyitems(items):
    for item in items:
        for fixture, marker in RESOURCE_FIXTURES.items():
            if fixture in item.fixturenames:
                item.add_marker(marker)
    # the longest groups first (a module counts once, with its `slow(minutes=...)` estimate), so that they
    # start at once on the two workers and the short ones fill in at the end; stable otherwise
    gold = _gold_modules()
    module_minutes: dict[str, float] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        module_minutes[module] = max(module_minutes.get(module, 0.0), _minutes(item))
    group_minutes: dict[str, float] = {}
    for module, minutes in module_minutes.items():
        group = _group_of(module, gold)
        group_minutes[group] = group_minutes.get(group, 0.0) + minutes
    # within the shared gold lake's group, the modules that rewrite it come last
    items.sort(
        key=lambda item: (
            -group_minutes[_group_of(item.nodeid, gold)],
            Path(item.nodeid.split("::", 1)[0]).name in GOLD_LAKE_LAST,
        )
    )


@pytest.fixture(scope="session", autouse=True)
def _dbt_target_per_worker():
    """dbt's compiled files, manifest and logs in a folder of this worker's (two workers running dbt at
    once would overwrite each other's target/); child processes inherit it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        os.environ.setdefault("DBT_TARGET_PATH", str(DBT_DIR / "target" / worker))
        os.environ.setdefault("DBT_LOG_PATH", str(DBT_DIR / "target" / worker / "logs"))
    yield


@pytest.fixture(scope="session")
def lake_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("lake")


@pytest.fixture(scope="session")
def cfg(lake_dir):
    environ = dict(os.environ)
    environ["AUDITLAKE__PATHS__DATA_DIR"] = str(lake_dir)
    environ["AUDITLAKE__PATHS__LANDING_DIR"] = str(lake_dir / "landing")
    # the Thrift server's port is part of the session's configuration: a free one per test run
    environ["AUDITLAKE__SERVE__PORT"] = str(free_port())
    environ["AUDITLAKE__SERVE__AUDITOR_PORT"] = str(free_port())
    return load_config("test", environ=environ)


@pytest.fixture(scope="session")
def spark(cfg):
    from pipelines.runtime.spark_session import build_spark

    session = build_spark(cfg)
    yield session
    session.stop()


class GoldLake(tuple):
    """(config, first refresh report, second refresh report), and ``person``: the user (``email``,
    ``user_luid``) in site events, tenant events, the users snapshots and the Write-Back export."""

    person: dict


def _person_in_every_source(spark, cfg) -> dict:
    """The first user (by e-mail) of the site events who also acted in the tenant's events."""
    t = tables(cfg)
    tenant = {
        r[0].lower()
        for r in spark.table(t.silver_events("tenant")).select("initiating_user_email").distinct().collect()
        if r[0]
    }
    site = (
        spark.table(t.silver_events("site"))
        .where("email IS NOT NULL AND user_luid IS NOT NULL")
        .select("email", "user_luid")
        .distinct()
        .orderBy("email")
        .collect()
    )
    return next(r.asDict() for r in site if r["email"].lower() in tenant)


@pytest.fixture(scope="session")
def gold_lake(spark, lake_dir, tmp_path_factory, request):
    """Two days of events with hourly entity snapshots, in two deliveries. The first, all but the tenant's
    second day, refreshed: silver, then a Write-Back export naming a person of it, then gold built from
    nothing, with dbt's data tests. Then the second, the tenant's second day: gold incremental, marts only,
    and only what the tenant's events feed (the tests scoped to new rows run in
    test_staging_and_mart_tests_check_the_rows_promoted_since_the_last_gold_build). One family's day is
    what an hourly delivery looks like, and it builds fewer than half the models a whole day builds (CI time,
    issue 30). Shared by the gold, analyst, export and cluster tests, and last by the erasure's (which
    rewrites it: GOLD_LAKE_LAST)."""
    environ = variant_environ(lake_dir, "gold")
    # the analysts' tables where the analysts' server (another OS user) can reach them: pytest's
    # own temporary folders are root's alone
    analyst_dir = Path(tempfile.mkdtemp(prefix="auditlake-test-analyst-"))
    analyst_dir.chmod(0o755)
    request.addfinalizer(lambda: shutil.rmtree(analyst_dir, ignore_errors=True))
    environ["AUDITLAKE__ANALYST__DIR"] = str(analyst_dir)
    environ["AUDITLAKE__GOLD__DATA_TESTS"] = "true"  # the gold tests check dbt's data tests (first build)
    environ["AUDITLAKE__ANALYST__APPEND_FROM_MB"] = "0"  # its marts are small: the copies' appends are tested
    export = tmp_path_factory.mktemp("gold_writeback") / "historical_audit.ndjson"  # written after silver
    environ["AUDITLAKE__WRITEBACK__SOURCE"] = "file"
    environ["AUDITLAKE__WRITEBACK__FILE__PATH"] = str(export)
    cfg = load_config("test", environ=environ)
    generated = tmp_path_factory.mktemp("gold_generated")
    generate_activity_log(generated, 2500, seed=11, days=2, snapshots=True, snapshot_every=12)
    days = sorted({p.name.split("=")[1] for p in generated.rglob("d=*") if p.is_dir()})
    assert len(days) == 3, days  # two of events, and the snapshot at the end of the second
    landing = cfg.path("paths.landing_dir")
    later = ("tenant", days[1])  # the second delivery; the first, every other family's day
    first_delivery = [(family, day) for family in ("site", "tenant") for day in days if (family, day) != later]
    assert sum(move_day(generated, landing, day, family) for family, day in first_delivery) > 0
    # silver first, to find the person the export then names (gold reads write-back: not without it)
    run_refresh(spark, cfg, ["bronze", "silver"], log=lambda _m: None)
    person = _person_in_every_source(spark, cfg)
    lines = BUNDLED_EXPORT.read_text(encoding="utf-8").splitlines()
    export.write_text(
        "\n".join(ln.replace('"maria.costa"', json.dumps(person["email"])) for ln in lines) + "\n", encoding="utf-8"
    )
    first = run_refresh(spark, cfg, ["bronze", "silver", "gold"], log=lambda _m: None)
    assert move_day(generated, landing, later[1], later[0]) > 0, later
    # gold.data_tests is not one of a build's inputs (pipelines/gold/inputs.py): the lake is the same
    marts_only = load_config("test", environ={**environ, "AUDITLAKE__GOLD__DATA_TESTS": "false"})
    second = run_refresh(spark, marts_only, ["bronze", "silver", "gold"], log=lambda _m: None)
    lake = GoldLake((cfg, first, second))
    lake.person = person
    return lake


@pytest.fixture(scope="session")
def clean_log(tmp_path_factory) -> Run:
    """A week of clean Activity Log from the generator, read back (tests/generated_log.py): written once
    for the generator's test modules that read it (test_generate_*.py)."""
    root = tmp_path_factory.mktemp("clean")
    return Run(root, generate_activity_log(root, EVENTS, seed=SEED, start=START, days=7))
