"""What keeps one analyst from harming the others on the analysts' server: its read-only check and
its resource bounds, as the settings its Spark session starts with.

* **Read-only**: a check rule inside the server (``jvm/ReadOnlyExtension.java``, loaded through
  ``spark.sql.extensions`` as Kyuubi's authorization plugin is) sees the analyzed plan of every
  statement, however it is spelled, and refuses any that would create, replace, alter, drop,
  insert, cache, write files, add a JAR or function, change a setting, call a Java method or run a
  script. Only the server's own session, which makes the views, is trusted. The class is compiled
  once from its source against the JARs PySpark ships (``javac``) into ``paths.jars_dir``.
* **Bounds**: a per-statement time limit whose cancellation stops the tasks; results fetched a
  partition at a time under a size cap; a bounded pool of statement threads; more task slots than
  cores with scans split few ways, so that a long statement leaves slots free; a FAIR scheduler pool
  per session; a task that exhausts the heap fails its statement instead of ending the JVM.
  Settings a client could change for its session are held to these values by the check rule.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pyspark

from pipelines.config.load import Config
from pipelines.errors import ExternalError

SOURCE = Path(__file__).resolve().parent / "jvm" / "ReadOnlyExtension.java"
EXTENSION_CLASS = "auditlake.serve.ReadOnlyExtension"
# the session settings a client could change when it opens a session (without a statement): the check
# rule puts each back to the server's value, and refuses the statement that found it changed
HELD_KEYS = (
    "spark.sql.thriftServer.queryTimeout",
    "spark.sql.thriftServer.interruptOnCancel",
    "spark.sql.thriftServer.incrementalCollect",
    "spark.sql.variable.substitute",
    "spark.sql.leafNodeDefaultParallelism",
    "spark.sql.files.maxPartitionBytes",
)


class GuardBuildError(ExternalError):
    """The read-only check could not be compiled: the message says why and what to install."""

    logged = False


def guard_jar(cfg: Config, log=print) -> Path:
    """The compiled check rule, ``<jars_dir>/auditlake-serve-guard-<source hash>.jar``: built when
    missing (a few seconds), so that a changed source is never served stale."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    jar = cfg.path("paths.jars_dir") / f"auditlake-serve-guard-{digest}.jar"
    if jar.is_file():
        return jar
    javac = shutil.which("javac")
    if javac is None:
        raise GuardBuildError(
            "javac not found: the analysts' server's read-only check is compiled once with a JDK "
            "(Debian: apt-get install openjdk-17-jdk-headless; `make setup` does it)"
        )
    log("serve: compiling the analysts' server's read-only check (once)")
    spark_jars = Path(pyspark.__file__).resolve().parent / "jars"
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="auditlake-guard-") as tmp:
        classes = Path(tmp) / "classes"
        proc = subprocess.run(
            [javac, "-nowarn", "--release", "17", "-cp", f"{spark_jars}/*", "-d", str(classes), str(SOURCE)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise GuardBuildError(f"javac failed on {SOURCE.name}: {(proc.stderr or proc.stdout).strip()[-500:]}")
        partial = Path(tmp) / jar.name
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        partial.chmod(0o644)
        shutil.move(str(partial), jar)  # whole or not at all: a second `serve` may compile at once
    return jar


def bounds_conf(cfg: Config) -> dict[str, str]:
    """The analysts' server's session settings that bound what one statement may cost."""
    serve = cfg.settings.serve
    return {
        "spark.sql.thriftServer.queryTimeout": str(serve.query_timeout_seconds),
        "spark.sql.thriftServer.interruptOnCancel": "true",
        "spark.sql.thriftServer.incrementalCollect": "true",
        "spark.driver.maxResultSize": f"{serve.max_result_mb}m",
        "spark.hadoop.hive.server2.async.exec.threads": str(serve.max_concurrent_statements),
        "spark.hadoop.hive.server2.async.exec.wait.queue.size": str(serve.max_concurrent_statements * 16),
        "spark.scheduler.mode": "FAIR",
        # a statement's scans split two ways (the server's cores), so a long one holds two task slots
        "spark.sql.leafNodeDefaultParallelism": "2",
        "spark.sql.files.maxPartitionBytes": "32m",
        # the analyst tables are small: their Delta logs replay in one task, not fifty per statement
        "spark.databricks.delta.snapshotPartitions": "1",
        # a task out of heap fails its statement (the task's memory is freed with it) instead of exiting
        # the JVM, which Spark does by default even in local mode
        "spark.executor.killOnFatalError.depth": "0",
        "spark.auditlake.serve.fixed": ",".join(HELD_KEYS),
    }
