"""The product installed from its wheel, away from the checkout (issue 31), and CI's data-quality report.

The wheel is built from the files git would ship (a copy of them, so no stale build/ folder of the
checkout can hide a missing file), installed into a fresh venv, and run from another folder:
``auditlake registry``, then a refresh of every layer with an environment file of one's own on a
clean and a dirty generated delivery, and the next one, which finds nothing new before Spark starts.
That refresh is also the data-quality report `.ci/run` shows (one end-to-end run, not two): its
folder, ``data/ci-dq``, is kept after the test with the refresh's summary and the GX Data Docs site.
The fresh venv takes the pinned stack (Spark, dbt, GX) from this venv through a .pth line, not a
second download; ``pipelines`` and ``auditlake_devtools`` come from the wheel only.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from pipelines.config.load import load_config
from pipelines.config.project import BUNDLED

pytestmark = [pytest.mark.slow(minutes=3), pytest.mark.subprocess]

CHECKOUT = Path(__file__).resolve().parents[1]
# the installed product's folder, kept for `.ci/run` to show: the refresh's summary and its Data Docs
REPORT_DIR = CHECKOUT / "data" / "ci-dq"
SUMMARY = "refresh-summary.txt"
# a PyPI project whose import name our tooling package once had: the wheel must install beside it
PYTHON_DEVTOOLS = "devtools==0.12.2"
EVENTS = 250  # per delivery, a clean one and a dirty one: the dirty one has every kind of damage the generator makes
# (at least two of each whatever its size); the refresh's time is mostly per file and per model, not per row


def _shipped_files() -> list[str]:
    """What a clean clone holds: tracked files and new ones not ignored (git's own list)."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=CHECKOUT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [f for f in out.split("\0") if f and (CHECKOUT / f).is_file()]


def _run(args: list, cwd: Path, env: dict, timeout: int = 600) -> str:
    proc = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"{' '.join(map(str, args))} exited {proc.returncode}:\n{proc.stdout[-4000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the fresh venv, its site-packages, the wheel) with the product installed from the wheel."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    for name in _shipped_files():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(CHECKOUT / name, src / name)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    _run([sys.executable, "-m", "pip", "wheel", src, "--no-deps", "-q", "-w", root / "dist"], root, env)
    wheel = next((root / "dist").glob("tableau_auditlake-*.whl"))
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], root, env)
    python = venv / "bin" / "python"
    # python-devtools (import name `devtools`, widely installed) first: the wheel installs beside it
    _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", PYTHON_DEVTOOLS], root, env)
    _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel], root, env)
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root, env).strip())
    (site / "pinned_stack.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv, site, wheel


def test_the_wheel_ships_every_data_file_and_the_project_folders(installed):
    _venv, _site, wheel = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = _shipped_files()
    # every file beside the modules (the registry, the catalogue, the glossary, the sample export)
    beside_code = [f for f in shipped if f.startswith(("pipelines/", "auditlake_devtools/")) and not f.endswith(".py")]
    # its top-level import names are its own (none an existing PyPI project's but `pipelines`: docs/architecture.md)
    assert {n.split("/")[0] for n in names if "/" in n and not n.split("/")[0].endswith((".dist-info", ".data"))} == {
        "pipelines",
        "auditlake_devtools",
    }
    assert beside_code and [f for f in beside_code if f not in names] == []
    # conf/, dbt_project/, expectations/gx/ as pipelines/_project/, without a run's output
    for folder in BUNDLED:
        files = [f for f in shipped if f.startswith(folder + "/")]
        assert files and [f for f in files if f"pipelines/_project/{f}" not in names] == [], folder
    assert not [n for n in names if "/target/" in n or "/logs/" in n or n.endswith(".user.yml")]


def test_the_installed_product_runs_from_another_folder(installed):
    """...and its refresh of a clean and a dirty delivery, through every gate, balances: CI's data-quality
    report (`.ci/run` prints the summary and the Data Docs site this leaves in data/ci-dq)."""
    venv, site, _wheel = installed
    shutil.rmtree(REPORT_DIR, ignore_errors=True)
    work = REPORT_DIR
    work.mkdir(parents=True)
    jars = load_config("test").path("paths.jars_dir")  # fetched once by `make setup`: not fetched again
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "PYTHONPATH" and not k.startswith(("AUDITLAKE__", "DBT_")) and k != "AUDITLAKE_ENV"
    }
    env["AUDITLAKE__PATHS__JARS_DIR"] = str(jars)
    auditlake = venv / "bin" / "auditlake"
    where = _run(
        [
            venv / "bin" / "python",
            "-c",
            "import pipelines.config.project as p, auditlake_devtools as t, devtools; "
            "print(p.INSTALLED, p.__file__, t.__file__, devtools.debug.__module__, devtools.__file__)",
        ],
        work,
        env,
    ).split()
    assert where[0] == "True" and all(Path(f).is_relative_to(site) for f in where[1:3]), where
    # python-devtools is intact beside the product: its own `devtools` package, not ours
    assert where[3] == "devtools.debug" and Path(where[4]).parent.name == "devtools", where

    registry = _run([auditlake, "registry"], work, env)
    assert "site:" in registry and "tenant:" in registry
    # the package's dbt project is read-only: regenerating its staging models is refused, in one line
    refused = subprocess.run([auditlake, "gold", "staging"], cwd=work, env=env, capture_output=True, text=True)
    assert refused.returncode == 2 and "read-only" in refused.stderr, refused.stderr

    # an environment file of one's own, beside the lake: relative paths are relative to this folder;
    # dbt's data tests on (the report's gold checks), the analysts' copies off (not a quality check);
    # the JIT's C1 alone, as for a refresh cron starts in a process of its own (spark.jit): less CPU
    # than the tiered compilers on a first load, and this one shares the two cores with the suite
    mine = (
        (CHECKOUT / "conf" / "test.yaml")
        .read_text()
        .replace("data/test", "lake")
        .replace("data_tests: false", "data_tests: true")
        .replace("\nspark:\n", "\nspark:\n  jit: c1\n")
    )
    assert "jit: c1" in mine
    (work / "mine.yaml").write_text(mine + "analyst:\n  enabled: false\n")
    generate = [auditlake, "generate", "activity-log", "--events", EVENTS, "--days", 2]
    _run([*generate, "--out", "lake/landing", "--seed", 101], work, env)
    # a second delivery, dirty, beside the first: one refresh reads both
    _run([*generate, "--out", "dirty", "--seed", 202, "--dirty"], work, env)
    for family in ("site", "tenant"):
        (work / "lake" / "landing" / family / "delivery-2").mkdir(parents=True)
        for path in (work / "dirty" / family).iterdir():
            path.rename(work / "lake" / "landing" / family / "delivery-2" / path.name)
    package = {p: p.stat().st_mtime_ns for p in (site / "pipelines").rglob("*") if p.is_file()}
    # a stop for a hung refresh, not a speed check: well above what the refresh takes on a slow day's
    # machine (CI's own limit stops a slow run anyway)
    out = _run([auditlake, "--env", "mine.yaml", "refresh", "--summary"], work, env, timeout=1800)
    (work / SUMMARY).write_text(out, encoding="utf-8")

    assert "layers bronze, silver, gold" in out and "gold: " in out, out[-3000:]
    # no Write-Back source here (the shipped default): its tables are made empty, without a stream, so gold builds
    assert "writeback bronze: skipped (writeback.source is none)" in out
    assert re.search(r"^writeback silver: no rows in \S+ -> \S+ \(empty\)$", out, re.M), out[-3000:]
    assert (work / "lake" / "warehouse").is_dir() and (work / "lake" / "dbt" / "target" / "manifest.json").is_file()
    # the report: the dirty delivery's damage quarantined by reason, every layer balanced, gates recorded
    quarantined = set(re.findall(r"^silver\.quarantine \[(\w+)\]\s+\d+", out, re.M))
    assert {"bad_event_time", "malformed_json", "blank_line"} <= quarantined, quarantined
    assert re.search(r"rows of landed files (\d+), rows in bronze \1: ok", out), out[-3000:]
    assert re.search(r"^site\s+\d+\s+\d+\s+\d+\s+\d+\s+0\s+ok$", out, re.M), out[-3000:]
    assert "latest quality run" in out and "bronze_to_silver.silver_events_site" in out
    assert re.search(r"^gold: \d+ pass", out, re.M), out[-3000:]  # dbt's data tests ran
    docs = work / "lake" / "quality"
    assert any(docs.rglob("data_docs/local_site/index.html")), "the Data Docs site CI points to"
    # the next hourly run, nothing new: told from the file system, in a process that starts no JVM
    again = _run([auditlake, "--env", "mine.yaml", "refresh"], work, env)
    assert "refresh: nothing new since refresh" in again and "Spark not started" in again, again
    jvm_starts = "WARNING: Using incubator modules"  # what the JVM says first as it starts
    assert jvm_starts in out and jvm_starts not in again
    # the installed package is read, never written (dbt's output went beside the lake)
    assert {
        p: p.stat().st_mtime_ns for p in (site / "pipelines").rglob("*") if p.is_file() and "__pycache__" not in p.parts
    } == {p: t for p, t in package.items() if "__pycache__" not in p.parts}
