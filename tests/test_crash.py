"""Crash safety: real `auditlake` processes killed with SIGKILL mid-run, then simply run again, end
with exactly the tables an uninterrupted run gives.

One delivery (with what real feeds hold besides clean records, and a Write-Back export naming one
person) makes two lakes: a reference in this session, refreshed and then erased without a break,
and the lake the killed processes work on (a metastore of its own). To keep CI time down, each
kill starts from the state the kill before left, so one chain of seven processes covers both:
- the refresh: killed after bronze's commits, its re-run while silver writes, that one's re-run
  with some marts written and others not, then a re-run that finishes (compared: every table);
- the erasure of that person: killed while it rewrites gold, its re-run during the vacuum, then
  a refresh that finishes it (compared: the tables it rewrote; no clear value anywhere: tables,
  the versions before, change data, GX results and Data Docs; reconciliation balanced).
"""

from __future__ import annotations

import collections
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from py4j.protocol import Py4JJavaError

from auditlake_devtools.sample.activity_log import generate_activity_log
from pipelines.config.load import load_config
from pipelines.gold.compact import mart_tables
from pipelines.lake.delta_tables import table_version
from pipelines.personal_data.erase.pending import PENDING_DIR
from pipelines.personal_data.erase.person import TOKEN_PREFIX, resolve_person
from pipelines.personal_data.erase.run import erase_person
from pipelines.refresh import run_refresh
from tests.lake import (
    BUNDLED_EXPORT,
    RUN_COLUMNS,
    WRITE_COLUMNS,
    file_gone,
    fingerprints,
    holding_by_table,
    row_differences,
    variant_environ,
)

pytestmark = [pytest.mark.slow(minutes=22), pytest.mark.subprocess, pytest.mark.dbt, pytest.mark.e2e]
LAYERS = "bronze,silver,gold"
REFERENCE = "crash_ref"  # the uninterrupted runs' schemas: <layer>_crash_ref, in this session
SALT = "test-salt"
EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]+")
REFRESH = f"refresh --layers {LAYERS} --source {{source}}"
# the analysts' masked copies are the gold and erasure tests' (test_analyst_tables, test_erase): both lakes
# here go without them (45 s a gold build)
NO_ANALYST_COPIES = {"AUDITLAKE__ANALYST__ENABLED": "false"}
# the killed processes run as cron starts a refresh, with the JIT's C1 alone (spark.jit): fewer CPU-seconds
# for a short-lived process, on cores the suite's workers share
CRON_JIT = {"AUDITLAKE__SPARK__JIT": "c1"}


def _line(prefix: str, delay: float = 0.0):
    """A kill point: the first stdout line starting with ``prefix``, then ``delay`` seconds."""
    return (lambda line: line.startswith(prefix)), delay


def _first_gold_rewrite(line: str) -> bool:
    return line.startswith("erase: gold.") and " 0 rows pseudonymised" not in line


# The refresh's kill points (a stdout line and the seconds to wait after it; gold's is polled, below)
BRONZE_KILL = _line("bronze: tenant: committed")  # after bronze's commits, before the ledger's
SILVER_KILL = _line("silver: site: writing", 0.3)  # while silver writes its four tables
# The erasure's: a run killed while it rewrites gold, its re-run during the vacuum
ERASE_KILLS = [
    ("erase --user {user} --requested-by ref", (_first_gold_rewrite, 0.0), "during gold"),
    ("erase --user {user}", ((lambda line: line.endswith(": vacuumed")), 0.3), "during the vacuum"),
]


def _environ(data_dir: Path, export: Path) -> dict[str, str]:
    environ = dict(os.environ)
    environ["AUDITLAKE__PATHS__DATA_DIR"] = str(data_dir)
    environ["AUDITLAKE__PATHS__LANDING_DIR"] = str(data_dir / "landing")
    environ["AUDITLAKE__QUALITY__CONTEXT_DIR"] = str(data_dir / "gx_context")
    environ["AUDITLAKE__WRITEBACK__SOURCE"] = "file"
    environ["AUDITLAKE__WRITEBACK__FILE__PATH"] = str(export)
    environ["AUDITLAKE_ERASE_SALT"] = SALT
    environ.update(NO_ANALYST_COPIES)
    environ.update(CRON_JIT)
    return environ


def _run(environ: dict, *commands: str, kill_at=None, kill_when=None) -> tuple[int, str]:
    """The `auditlake` commands, one after the other in one process (one Spark start); SIGKILL it
    ``kill_at`` (a test on a stdout line, then a delay) or as soon as ``kill_when()`` turns true (polled)."""
    argv = [["--env", "test", *c.split()] for c in commands]
    code = f"import sys; from pipelines.cli import main; sys.exit(next((rc for a in {argv!r} if (rc := main(a))), 0))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    killed = threading.Event()

    def kill() -> None:
        if not killed.is_set():
            os.kill(proc.pid, signal.SIGKILL)
            killed.set()

    def watch() -> None:
        while proc.poll() is None and not killed.is_set():
            if kill_when():
                kill()
            time.sleep(0.2)

    if kill_when is not None:
        threading.Thread(target=watch, daemon=True).start()
    for line in proc.stdout:
        lines.append(line)
        if kill_at and not killed.is_set() and kill_at[0](line.rstrip("\n")):
            time.sleep(kill_at[1])
            kill()
    proc.wait(timeout=1800)
    if kill_at or kill_when:
        assert killed.is_set(), f"never reached the kill point:\n{''.join(lines)[-3000:]}"
    return proc.returncode, "".join(lines)


def _people(delivery: Path, wanted: int) -> list[str]:
    """E-mail addresses found in both families' files, most frequent first."""
    seen: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for path in sorted(delivery.rglob("*.json*")):
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        for email in EMAIL.findall(data.decode("utf-8", "replace")):
            seen[path.relative_to(delivery).parts[0]][email.lower()] += 1
    both = sorted((-(seen["site"][e] + seen["tenant"][e]), e) for e in seen["site"] if e in seen["tenant"])
    assert len(both) >= wanted, both
    return [e for _n, e in both[:wanted]]


def _delta_tables(folder: Path) -> list[str]:
    return sorted(p.parent.name for p in folder.glob("*/_delta_log")) if folder.is_dir() else []


def _warehouse_tables(warehouse: Path) -> dict[str, Path]:
    """'<schema>.<table>' -> its folder, for every Delta table of a warehouse."""
    return {
        f"{p.parent.parent.name.removesuffix('.db')}.{p.parent.name}": p.parent
        for p in sorted(warehouse.glob("*.db/*/_delta_log"))
    }


@pytest.fixture(scope="module")
def lakes(spark, lake_dir, tmp_path_factory):
    """The delivery, the person to erase, the reference lake (refreshed in this session, not yet
    erased) and the crashed lake's environment (built by the first killed process)."""
    root = tmp_path_factory.mktemp("crash")
    source = root / "delivery"
    generate_activity_log(source, 600, seed=23, days=1, dirty=True)
    person = _people(source, 1)[0]
    # Write-Back knows users by name: the person made the bundled sample's changes
    export = root / "historical_audit.ndjson"
    lines = BUNDLED_EXPORT.read_text(encoding="utf-8").splitlines()
    export.write_text(
        "\n".join(ln.replace('"maria.costa"', json.dumps(person)) for ln in lines) + "\n", encoding="utf-8"
    )
    environ = variant_environ(lake_dir, REFERENCE)
    environ["AUDITLAKE__WRITEBACK__SOURCE"] = "file"
    environ["AUDITLAKE__WRITEBACK__FILE__PATH"] = str(export)
    environ.update(NO_ANALYST_COPIES)
    reference = load_config("test", environ=environ)
    run_refresh(spark, reference, LAYERS.split(","), source, log=lambda _m: None)
    crashed = root / "crashed"
    return {
        "source": source,
        "person": person,
        "reference": reference,
        "dir": crashed,
        "environ": _environ(crashed, export),
    }


@pytest.fixture(scope="module")
def refreshed(spark, lakes):
    """The refresh's chain on the crashed lake: killed in bronze, in silver, in gold, then a re-run."""
    reference, crashed = lakes["reference"], lakes["dir"]
    marts = mart_tables(spark, reference.get("gold.schema"))
    gold_dir = crashed / "warehouse" / "gold.db"
    refresh = REFRESH.format(source=lakes["source"])
    for where, kill in (
        ("bronze", {"kill_at": BRONZE_KILL}),
        ("silver", {"kill_at": SILVER_KILL}),
        ("gold", {"kill_when": lambda: len(_delta_tables(gold_dir)) > 0}),  # at its first mart written
    ):
        code, out = _run(lakes["environ"], refresh, **kill)
        assert code == -signal.SIGKILL, f"killed in {where}: {out[-3000:]}"
    written = _delta_tables(gold_dir)
    assert 0 < len(written) < len(marts), f"killed mid-gold: {len(written)} of {len(marts)} marts written"
    code, out = _run(lakes["environ"], refresh)
    assert code == 0, out[-3000:]
    return marts


def test_a_refresh_killed_in_each_layer_reruns_to_the_tables_of_an_uninterrupted_one(spark, lakes, refreshed):
    """Killed after bronze's commits, its re-run while silver writes, that one's re-run with some marts
    written and others not, then a re-run: the tables of one uninterrupted refresh, row for row (but
    for when each row reached silver)."""
    reference, crashed, marts = lakes["reference"], lakes["dir"], refreshed
    schema = {layer: reference.get(f"{layer}.schema") for layer in ("bronze", "silver", "gold")}

    def ref(layer: str, name: str):
        return spark.table(f"{schema[layer]}.{name}")

    def table(layer: str, name: str):
        return spark.read.format("delta").load(str(crashed / "warehouse" / f"{layer}.db" / name))

    for family in ("site", "tenant"):
        bronze = [ref("bronze", f"{family}_events_raw"), table("bronze", f"{family}_events_raw")]
        key = ["source_file", "content_hash"]
        assert bronze[1].count() == bronze[0].count() > 0, family
        assert bronze[1].select(*key).exceptAll(bronze[0].select(*key)).count() == 0
        silver = [ref("silver", f"{family}_events"), table("silver", f"{family}_events")]
        assert silver[1].count() == silver[0].count() > 0, family
        assert silver[1].select("event_id").distinct().count() == silver[1].count(), "duplicate events"
        assert silver[1].select("event_id").exceptAll(silver[0].select("event_id")).count() == 0
    for name in ("quarantine", "duplicate_records", "writeback_audit"):
        counts = [ref("silver", name).count(), table("silver", name).count()]
        assert counts[1] == counts[0], name
    assert ref("silver", "quarantine").count() > 0, "the delivery's dirty records were quarantined"
    # the file ledger: every file once, with the same verdict and row count
    ledgers = [
        t.select("path", "status", "reason", "rows")
        for t in (ref("bronze", "file_ledger"), table("bronze", "file_ledger"))
    ]
    assert ledgers[1].count() == ledgers[0].count() > 0
    assert row_differences(ledgers[0], ledgers[1]) == 0
    # the marts, each as a multiset of its rows (one job for each lake's)
    assert _delta_tables(crashed / "warehouse" / "gold.db") == marts
    ignore = dict.fromkeys(marts, RUN_COLUMNS)
    expected = fingerprints({name: ref("gold", name) for name in marts}, ignore)
    got = fingerprints({name: table("gold", name) for name in marts}, ignore)
    assert [name for name in marts if got[name] != expected[name]] == [], "marts differing"


def _crashed_name(reference_name: str) -> str:
    """The crashed lake's name of a reference lake's table: gold_<ref>.x -> gold.x, and gold's staging
    schema too (gold_<ref>_staging.x -> gold_staging.x, where the erasure rewrites the int_ tables)."""
    schema, table = reference_name.split(".", 1)
    return f"{schema.replace(f'_{REFERENCE}', '', 1)}.{table}"


def test_an_erasure_killed_in_gold_and_in_the_vacuum_reruns_to_the_tables_of_an_uninterrupted_one(
    spark, lakes, refreshed
):
    reference, crashed, user = lakes["reference"], lakes["dir"], lakes["person"]
    warehouse, pending = crashed / "warehouse", crashed / "checkpoints" / PENDING_DIR
    before = {
        name: table_version(spark, f"delta.`{path}`")  # the versions in clear
        for name, path in _warehouse_tables(warehouse).items()
    }
    keys = sorted(resolve_person(spark, reference, user).keys)
    expected = erase_person(spark, reference, user, SALT, requested_by="ref", log=lambda _m: None)

    for command, kill_at, where in ERASE_KILLS:
        code, out = _run(lakes["environ"], command.format(user=user), kill_at=kill_at)
        assert code == -signal.SIGKILL, f"{where}: {out[-3000:]}"
        assert pending.is_dir(), f"killed {where}: the erasure is pending"
        if command != ERASE_KILLS[0][0]:
            assert "erase: finishing the pending erasure" in out, out[-3000:]
    code, out = _run(lakes["environ"], REFRESH.format(source=lakes["source"]), "reconcile")
    assert code == 0, out[-3000:]  # reconcile's exit code too: every figure balances
    assert "erase: finishing the pending erasure" in out
    assert "gold: skipped" in out, "gold got the erasure too: nothing it reads changed"
    assert not pending.exists(), "done: the identifiers in clear are gone"

    # the same tables: the same rows rewritten, the same contents
    folders = _warehouse_tables(warehouse)
    records = spark.read.format("delta").load(str(folders["ops.erasures"])).collect()
    assert len(records) == 1
    record = records[0].asDict()
    assert record["status"] == "done" and record["requested_by"] == "ref"
    assert record["tokens"] == expected.tokens and all(t.startswith(TOKEN_PREFIX) for t in record["tokens"])
    assert record["rows_by_table"] == {_crashed_name(k): v for k, v in expected.rows_by_table.items()}
    assert record["tables_vacuumed"] == len(expected.tables_vacuumed)
    assert {"bronze.writeback_audit_raw", "silver.writeback_audit"} <= set(record["rows_by_table"])
    assert any(name.startswith("gold.") for name in record["rows_by_table"])
    rewritten = list(expected.rows_by_table)
    ignore = dict.fromkeys(rewritten, WRITE_COLUMNS)
    uninterrupted = fingerprints({name: spark.table(name) for name in rewritten}, ignore)
    rerun = fingerprints(
        {name: spark.read.format("delta").load(str(folders[_crashed_name(name)])) for name in rewritten}, ignore
    )
    assert [name for name in rewritten if rerun[name] != uninterrupted[name]] == [], "differ from the uninterrupted"

    # no clear value: in any table, in the versions before the erasure, in GX's files
    current = {name: spark.read.format("delta").load(str(path)) for name, path in folders.items()}
    assert holding_by_table(current, keys) == {}
    for name in record["rows_by_table"]:
        # rows were rewritten there: a file of the version before held them, and the vacuum deleted it
        old = spark.read.format("delta").option("versionAsOf", before[name]).load(str(folders[name]))
        with pytest.raises(Py4JJavaError, match=file_gone(folders[name])):
            holding_by_table({name: old}, keys)
        assert not list(folders[name].glob("_change_data/*")), f"{name}: change data (pre-images) left"
    reports = [p for p in (crashed / "gx_context").rglob("*") if p.suffix in (".json", ".html")]
    assert reports, "the gate wrote validation results"
    assert [p for p in reports if any(k in p.read_text(encoding="utf-8", errors="replace").lower() for k in keys)] == []
