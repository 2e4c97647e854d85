"""Crash safety of `auditlake erase`: a real process killed with SIGKILL after bronze is rewritten,
after silver, during gold and during the vacuum, then run again, ends with the tables an
uninterrupted erasure gives, no clear value anywhere (tables, the versions before, change data, GX
results and Data Docs) and reconciliation balanced.

One small lake is built twice from one delivery: a reference in this session (erased here,
uninterrupted) and the lake the killed processes work on (a metastore of its own; the first of
them builds it, then begins the erasure). To keep CI time down, one erasure is killed at each step
in turn (every re-run but the last is killed at the next step), so four kills and five processes
make one erasure; the tables it rewrote are compared.
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
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import MapType

from devtools.sample.activity_log import generate_activity_log
from pipelines.config import load_config
from pipelines.erase import PENDING_DIR, TOKEN_PREFIX, erase_person, resolve_person
from pipelines.refresh import run_refresh
from tests.lake import variant_environ

pytestmark = [pytest.mark.slow(minutes=18), pytest.mark.subprocess, pytest.mark.dbt]
SALT = "test-salt"
BUNDLED_EXPORT = Path(__file__).resolve().parents[1] / "devtools" / "sample" / "historical_audit.ndjson"
REFERENCE = "erase_ref"  # the reference lake's schemas: <layer>_erase_ref
# differ by run, not by erasure: when and by which run a row was written
RUN_COLUMNS = ("bronze_id", "ingest_ts", "run_id", "recorded_at", "bronze_run_id", "bronze_ingest_ts",
               "silver_run_id", "silver_ingest_ts", "processed_at", "validated_at")
EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]+")


def _first_gold_rewrite(line: str) -> bool:
    return line.startswith("erase: gold.") and " 0 rows pseudonymised" not in line


# One erasure, killed at each step in turn: the run killed after bronze is run again and killed after
# silver, that one again and killed during gold, and so on; each re-run starts from the state the kill
# before left (a different command each time), the last one (a refresh) finishes.
# (what is run, kill when a stdout line matches, seconds to wait after it)
KILLS = [
    ("erase --user {user} --requested-by ref", lambda line: line.startswith("erase: pseudonymising silver"), 0.0),
    ("erase --user {user}", lambda line: line.startswith("erase: pseudonymising ops"), 0.0),
    ("erase", _first_gold_rewrite, 0.0),
    ("erase --user {user}", lambda line: line.endswith(": vacuumed"), 0.3),
]
KILL_POINTS = ["after bronze", "after silver", "during gold", "during the vacuum"]
BUILD = FINISH = "refresh --layers bronze,silver,gold --source {source}"


def _environ(data_dir: Path, export: Path) -> dict[str, str]:
    environ = dict(os.environ)
    environ["AUDITLAKE__PATHS__DATA_DIR"] = str(data_dir)
    environ["AUDITLAKE__PATHS__LANDING_DIR"] = str(data_dir / "landing")
    environ["AUDITLAKE__QUALITY__CONTEXT_DIR"] = str(data_dir / "gx_context")
    environ["AUDITLAKE__WRITEBACK__FILE__PATH"] = str(export)
    environ["AUDITLAKE_ERASE_SALT"] = SALT
    return environ


def _run(lake: dict, *commands: str, kill_when=None, delay: float = 0.0) -> tuple[int, str]:
    """The `auditlake` commands, one after the other in one process (one Spark start); SIGKILL it
    ``delay`` seconds after a stdout line for which ``kill_when`` is true."""
    argv = [["--env", "test", *c.split()] for c in commands]
    code = f"import sys; from pipelines.cli import main; sys.exit(next((rc for a in {argv!r} if (rc := main(a))), 0))"
    proc = subprocess.Popen([sys.executable, "-c", code], env=lake["environ"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines, killed = [], False
    for line in proc.stdout:
        lines.append(line)
        if kill_when is not None and not killed and kill_when(line.rstrip("\n")):
            time.sleep(delay)
            os.kill(proc.pid, signal.SIGKILL)
            killed = True
    proc.wait(timeout=1800)
    if kill_when is not None:
        assert killed, f"never reached the kill point:\n{''.join(lines)[-3000:]}"
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


@pytest.fixture(scope="module")
def lakes(spark, lake_dir, tmp_path_factory):
    """The delivery, the people to erase (one per kill point), the reference lake (this session)
    and the lake the killed processes work on, both refreshed through gold from the delivery."""
    root = tmp_path_factory.mktemp("erase_crash")
    source = root / "delivery"
    generate_activity_log(source, 300, seed=7, days=1)
    people = _people(source, 1)
    # Write-Back knows users by name: the first person (by e-mail) made the bundled sample's changes
    export = root / "historical_audit.ndjson"
    lines = BUNDLED_EXPORT.read_text(encoding="utf-8").splitlines()
    export.write_text("\n".join(ln.replace('"maria.costa"', json.dumps(people[0])) for ln in lines) + "\n",
                      encoding="utf-8")

    environ = variant_environ(lake_dir, REFERENCE)
    environ["AUDITLAKE__WRITEBACK__FILE__PATH"] = str(export)
    reference = load_config("test", environ=environ)
    run_refresh(spark, reference, ["bronze", "silver", "gold"], source, log=lambda _m: None)

    # built by the first killed process, before its erasure (one process start fewer)
    crashed = {"dir": root / "crashed", "source": source}
    crashed["environ"] = _environ(crashed["dir"], export)
    return reference, crashed, people


def _delta_tables(warehouse: Path) -> dict[str, Path]:
    """'<schema>.<table>' -> its folder, for every Delta table of a warehouse."""
    return {f"{p.parent.parent.name.removesuffix('.db')}.{p.parent.name}": p.parent
            for p in sorted(warehouse.glob("*.db/*/_delta_log"))}


def _crashed_name(reference_name: str) -> str:
    return reference_name.replace(f"_{REFERENCE}.", ".", 1)


def _holding(frame, values: list[str]):
    text = F.lower(F.to_json(F.struct(*[F.col(f"`{c}`") for c in frame.columns])))
    hit = F.lit(False)
    for v in values:
        hit = hit | text.contains(v.lower())
    return frame.where(hit)


def _versions_before_erasure(spark, folders: dict[str, Path]) -> dict[str, int]:
    """table -> its version before the erasure's first commit (an UPDATE: a refresh makes none)."""
    from delta.tables import DeltaTable

    def first_update(path: Path) -> int:
        history = DeltaTable.forPath(spark, str(path)).history()
        return history.where("operation = 'UPDATE'").agg(F.min("version")).first()[0]

    return {name: first_update(path) - 1 for name, path in folders.items()}


def _differences(left, right) -> int:
    """Rows of either frame missing from the other, but for the run columns (maps as sorted entries)."""
    def comparable(frame):
        maps = {f.name: F.array_sort(F.map_entries(f"`{f.name}`")) for f in frame.schema.fields
                if isinstance(f.dataType, MapType)}
        return frame.drop(*[c for c in frame.columns if c in RUN_COLUMNS]).withColumns(maps)

    left, right = comparable(left), comparable(right)
    return left.exceptAll(right).count() + right.exceptAll(left).count()


def test_an_erasure_killed_at_each_step_reruns_to_the_tables_of_an_uninterrupted_one(spark, lakes):
    reference, crashed, people = lakes
    user = people[0]
    keys = sorted(resolve_person(spark, reference, user).keys)
    warehouse, pending = crashed["dir"] / "warehouse", crashed["dir"] / "checkpoints" / PENDING_DIR

    expected = erase_person(spark, reference, user, SALT, requested_by="ref", log=lambda _m: None)

    for (command, kill_when, delay), where in zip(KILLS, KILL_POINTS, strict=True):
        # the first process refreshes the lake from the delivery, then begins the erasure
        first = [BUILD.format(source=crashed["source"])] if command == KILLS[0][0] else []
        code, out = _run(crashed, *first, command.format(user=user), kill_when=kill_when, delay=delay)
        assert code == -signal.SIGKILL, f"{where}: {out[-3000:]}"
        assert pending.is_dir(), f"killed {where}: the erasure is pending"
        if command != KILLS[0][0]:
            assert "erase: finishing the pending erasure" in out, out[-3000:]
    code, out = _run(crashed, FINISH.format(source=crashed["source"]), "reconcile")
    assert code == 0, out[-3000:]  # reconcile's exit code too: every figure balances
    assert "erase: finishing the pending erasure" in out
    assert "gold: skipped" in out, "gold got the erasure too: nothing it reads changed"
    assert not pending.exists(), "done: the identifiers in clear are gone"

    # the same tables: the same rows rewritten, the same contents
    folders = _delta_tables(warehouse)
    records = spark.read.format("delta").load(str(folders["ops.erasures"])).collect()
    assert len(records) == 1
    record = records[0].asDict()
    before = _versions_before_erasure(spark, {name: folders[name] for name in record["rows_by_table"]})
    assert record["status"] == "done" and record["requested_by"] == "ref"
    assert record["tokens"] == expected.tokens and all(t.startswith(TOKEN_PREFIX) for t in record["tokens"])
    assert record["rows_by_table"] == {_crashed_name(k): v for k, v in expected.rows_by_table.items()}
    assert record["tables_vacuumed"] == len(expected.tables_vacuumed)
    assert {"bronze.writeback_audit_raw", "silver.writeback_audit"} <= set(record["rows_by_table"])
    assert any(name.startswith("gold.") for name in record["rows_by_table"])
    for name in expected.rows_by_table:
        here = spark.table(name)
        there = spark.read.format("delta").load(str(folders[_crashed_name(name)]))
        assert _differences(here, there) == 0, f"{name} differs from the uninterrupted erasure's"

    # no clear value: in any table, in the versions before the erasure, in GX's files
    holding = {name: n for name, path in folders.items()
               if (n := _holding(spark.read.format("delta").load(str(path)), keys).count())}
    assert holding == {}
    for name in record["rows_by_table"]:
        try:
            old = spark.read.format("delta").option("versionAsOf", before[name]).load(str(folders[name]))
            held = _holding(old, keys).count()
        except Exception as exc:  # the files of that version are gone
            assert "not found" in str(exc).lower() or "does not exist" in str(exc).lower() or "FileNotFound" in str(
                exc), exc
        else:
            assert held == 0, f"{name} at version {before[name]} still holds the person"
        assert not list(folders[name].glob("_change_data/*")), f"{name}: change data (pre-images) left"
    reports = [p for p in (crashed["dir"] / "gx_context").rglob("*") if p.suffix in (".json", ".html")]
    assert reports, "the gate wrote validation results"
    assert [p for p in reports if any(k in p.read_text(encoding="utf-8", errors="replace").lower() for k in keys)] == []
