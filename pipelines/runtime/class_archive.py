"""A class-data-sharing archive of the Spark driver's classes, so every process starts faster.

Before its first query a driver loads and verifies tens of thousands of classes (Spark, Delta,
Hive's metastore client, Parquet, Janino): on two cores that is a large part of a small refresh's
fixed cost, paid again by every process (an hourly refresh, each CLI command, each test child).
Java's AppCDS maps the classes a recording run loaded instead (docs/performance.md, "The JVM").

``auditlake setup`` records the archive once, in the JAR cache, by running a small workload on a
throwaway lake with ``-XX:ArchiveClassesAtExit``; a session uses it (``-XX:SharedArchiveFile``)
when its JVM and classpath are those it was recorded with: the file's name carries a hash of both,
so after a JDK or JAR change a session runs without one until setup records the new one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pyspark

from pipelines.config.load import Config
from pipelines.runtime.jars import jar_paths


def _java() -> Path | None:
    """The java PySpark launches: JAVA_HOME's, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else (Path(p) if (p := shutil.which("java")) else None)
    return found.resolve() if found and found.exists() else None


def archive_path(cfg: Config) -> Path | None:
    """Where this JVM's and classpath's archive lives (None: no java found)."""
    java = _java()
    if java is None:
        return None
    digest = hashlib.sha256()
    stat = java.stat()
    digest.update(f"{java}:{stat.st_size}:{int(stat.st_mtime)}:{pyspark.__version__}".encode())
    for jar in jar_paths(cfg):
        digest.update(str(jar).encode())
    return cfg.path("paths.jars_dir") / f"driver-classes-{digest.hexdigest()[:16]}.jsa"


def java_options(cfg: Config) -> str:
    """The driver's JVM option that maps the archive, when one was recorded for this JVM and classpath."""
    path = archive_path(cfg)
    return f"-XX:SharedArchiveFile={path}" if path and path.is_file() else ""


def record_archive(cfg: Config, log=print) -> Path | None:
    """Record the archive if missing (a minute or two, once); an archive that cannot be recorded is
    reported and skipped: sessions then start without one."""
    path = archive_path(cfg)
    if path is None or path.is_file():
        return path
    log("setup: recording the Spark driver's classes for faster starts (once, a minute or two)")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.stem}.{os.getpid()}.partial")
    with tempfile.TemporaryDirectory(prefix="auditlake-classes-") as lake:
        env = {
            **os.environ,
            "AUDITLAKE__PATHS__DATA_DIR": lake,
            "AUDITLAKE__PATHS__LANDING_DIR": f"{lake}/landing",
            "AUDITLAKE__PATHS__WAREHOUSE_DIR": "",
            "AUDITLAKE__PATHS__CHECKPOINT_DIR": "",
        }
        proc = subprocess.run(
            [sys.executable, "-m", "pipelines.runtime.class_archive_workload", cfg.env, str(partial)],
            env=env,
            capture_output=True,
            text=True,
        )
    if proc.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        tail = " ".join((proc.stderr or proc.stdout).strip().splitlines()[-1:])
        log(f"setup: no class archive ({tail or f'exit {proc.returncode}'}): Spark starts without one")
        return None
    partial.replace(path)  # whole or not at all: a session never maps a half-written file
    return path
