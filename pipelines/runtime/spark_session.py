"""The one place Spark and Delta are configured.

Delta needs its SQL extension and catalog; the JARs come from the project-local
cache filled by ``auditlake setup`` (so a run never needs the network). The
embedded Derby metastore and the warehouse live under ``paths.data_dir``.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.config.load import Config, ConfigError, secret
from pipelines.config.project import CONF_DIR
from pipelines.lake.delta_tables import table_bytes
from pipelines.lake.storage import is_uri
from pipelines.runtime import class_archive
from pipelines.runtime.jars import jar_paths, missing_jars

# The driver JVM's garbage collector (spark.gc). A refresh is batch work: the parallel collector pauses the
# threads to collect, with no concurrent marking beside them, and costs the fewest CPU-seconds; G1 (Java's
# default) keeps pauses short on large heaps at the price of that marking (docs/performance.md, "The JVM").
GC_OPTIONS = {"parallel": "-XX:+UseParallelGC", "g1": "-XX:+UseG1GC"}
# The JIT's optimising compiler (C2) takes a method after three times Java's default calls and loop
# turns. A refresh's JVM lives minutes; compiling Spark's, Delta's and Hive's code is a large share of
# its CPU, and much of what reached C2 at the defaults ran too little afterwards to repay it. Later
# still saves more CPU but leaves hot code in C1's slower build: the refresh takes longer
# (docs/performance.md, "The JVM").
C2_LATER = " ".join(
    f"-XX:{flag}={3 * default}"
    for flag, default in {
        "Tier4InvocationThreshold": 5000,
        "Tier4MinInvocationThreshold": 600,
        "Tier4CompileThreshold": 15000,
        "Tier4BackEdgeThreshold": 40000,
    }.items()
)
# The client compiler (C1) only, with one code cache large enough that the sweeper does not evict and
# recompile (in the default's smaller C1 segment it kept doing so). For a small lake's refresh in a
# process of its own: fewer CPU-seconds, about the same wall time. A JVM that lives long repays C2:
# the test suite's workers ran their dbt-heavy tests slower on C1 (docs/performance.md, "The JVM").
C1_ONLY = "-XX:TieredStopAtLevel=1 -XX:-SegmentedCodeCache -XX:ReservedCodeCacheSize=512m"
JIT_OPTIONS = {"tiered": C2_LATER, "c1": C1_ONLY}


def describe_jobs(spark: SparkSession, text: str | None) -> None:
    """Name the Spark jobs that follow (UI, REST API: the benchmark's list of the longest jobs says
    which step each was, instead of a py4j call site); None stops naming them."""
    spark.sparkContext.setJobDescription(text)


# Spark's settings for a small input, whose queries cost what planning them costs, not their rows:
# interpreted (no whole-stage code, no generated expressions: compiling a query's Java costs about as
# much on 400 rows as on a million); planned once, not re-planned after each stage (adaptive execution
# re-plans to size shuffles and joins from what a stage produced, nothing to gain on a few thousand
# rows); one shuffle partition (without adaptive execution nothing would merge the configured ones
# into the one a small result needs: one task, one file per written partition). docs/performance.md,
# "Small inputs".
SMALL_INPUT = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
}


def not_given(cfg: Config, settings: dict[str, str]) -> dict[str, str]:
    """``settings`` without those an operator gave in ``spark.extra_conf``: theirs win over a block's own."""
    return {k: v for k, v in settings.items() if k not in cfg.settings.spark.extra_conf}


@contextmanager
def small_input_below(spark: SparkSession, cfg: Config, rows: int) -> Iterator[bool]:
    """Run the block's queries with the small-input settings (``SMALL_INPUT``) when they read fewer
    than ``spark.codegen_min_rows`` rows (yields whether they do). Settings an operator gave in
    ``spark.extra_conf`` win."""
    mine = not_given(cfg, SMALL_INPUT)
    if rows >= cfg.settings.spark.codegen_min_rows or not mine:
        yield False
        return
    with session_conf(spark, mine):
        yield True


def append_rows(spark: SparkSession, cfg: Config, rows: list, schema: str, table: str) -> None:
    """Append ``rows`` made on the driver (a run's bookkeeping: a few rows) to the Delta table ``table``,
    with the small-input settings: compiled, such a write and the checkpoint of the table's log at every
    tenth commit cost more than they do interpreted, most of all in a new process, as each cron run is
    (docs/performance.md, "The Delta log")."""
    frame = spark.createDataFrame(rows, schema)
    with small_input_below(spark, cfg, len(rows)):
        frame.write.format("delta").mode("append").saveAsTable(table)


# The fewest bytes one row takes in a table of this lake's (compressed Parquet of a narrow table):
# a table's size over this bounds its rows (small_tables), from Delta's log, without a count's
# job. A table that packs rows tighter is taken for a small one and runs interpreted: slower, not wrong.
ROW_BYTES_AT_LEAST = 10


@contextmanager
def small_tables(spark: SparkSession, cfg: Config, names: list[str]) -> Iterator[bool]:
    """small_input_below for queries each over the whole of one of the tables ``names`` names (a
    rewrite, vacuums), their rows bounded by the largest one's size on disk (ROW_BYTES_AT_LEAST). A
    table whose size Delta's log does not give counts as large."""
    with small_input_below(spark, cfg, _rows_at_most(spark, cfg, names)) as small:
        yield small


def _rows_at_most(spark: SparkSession, cfg: Config, names: list[str]) -> int:
    """The most rows the largest of ``names`` can hold, from its size (codegen_min_rows: a size unknown)."""
    sizes = [table_bytes(spark, name) for name in names]
    return cfg.settings.spark.codegen_min_rows if None in sizes else max(sizes, default=0) // ROW_BYTES_AT_LEAST


def small_and_large(spark: SparkSession, cfg: Config, names: list[str]) -> tuple[list[str], list[str]]:
    """``names`` split by size into the tables small_tables takes for small ones and the others, each
    in its order (whether the small ones then run interpreted is small_input_below's to say)."""
    small = [n for n in names if _rows_at_most(spark, cfg, [n]) < cfg.settings.spark.codegen_min_rows]
    return small, [n for n in names if n not in small]


@contextmanager
def session_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Run the block with ``settings`` on the session; its own values (or none) are put back after."""
    saved = {k: spark.conf.get(k, None) for k in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def log_dir(cfg: Config) -> Path:
    """Where Spark's log and the tracebacks of failed commands go (conf/log4j2.properties)."""
    return cfg.data_dir / "logs"


def spark_conf(cfg: Config, extra_java_options: str = "") -> dict[str, str]:
    """Every Spark setting the lakehouse uses, as strings (also handy for spark-submit / Thrift);
    ``extra_java_options`` go to the driver's JVM after the lakehouse's own."""
    if missing_jars(cfg):
        raise RuntimeError(
            f"JARs missing from {cfg.path('paths.jars_dir')} ({', '.join(missing_jars(cfg))}): "
            "run `auditlake setup` (or `make setup`) first"
        )
    metastore = cfg.metastore_dir
    conf = {
        "spark.jars": ",".join(str(p) for p in jar_paths(cfg)),
        # also on the driver's own classpath: the Thrift server's sessions resolve the Delta
        # catalog through the system class loader, which does not see spark.jars
        "spark.driver.extraClassPath": ":".join(str(p) for p in jar_paths(cfg)),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.warehouse.dir": cfg.warehouse_dir,
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={metastore}/metastore_db;create=true",
        "spark.driver.extraJavaOptions": (
            f"-Dderby.system.home={metastore} -Dlog4j2.configurationFile={CONF_DIR / 'log4j2.properties'} "
            f"-Dauditlake.log.dir={log_dir(cfg)} "
            # Silver's typing projection compiles to methods past the JIT's 8,000-byte limit; left
            # interpreted they slow the whole silver pass (docs/performance.md, "The JVM").
            "-XX:-DontCompileHugeMethods "
            f"{GC_OPTIONS[cfg.settings.spark.gc]} {JIT_OPTIONS[cfg.settings.spark.jit]} "
            # the classes `auditlake setup` recorded, mapped instead of loaded (pipelines/runtime/class_archive.py)
            f"{extra_java_options or class_archive.java_options(cfg)}"
        ).strip(),
        "spark.driver.memory": cfg.settings.spark.driver_memory,
        "spark.sql.shuffle.partitions": str(cfg.settings.spark.shuffle_partitions),
        # Delta rebuilds table state with this many tasks (default 50): on a few cores, fewer is faster.
        "spark.databricks.delta.snapshotPartitions": str(cfg.settings.spark.shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        # The streaming file source hands each micro-batch its new files as explicit paths; with
        # thousands of small hourly files Spark would stat them in a listing job of up to 10,000
        # tasks (its default). A few tasks do the same work without the scheduling cost.
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": str(2 * cfg.settings.spark.shuffle_partitions),
        "spark.ui.showConsoleProgress": "false",
        # the quality gate fetches small checked frames into pandas (quality.pandas_max_rows)
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # Activity Log files are small (one per hour and event type, kilobytes each): packed into
        # read tasks as if each cost 4 MB to open (Spark's default), thousands of them make hundreds
        # of tasks and as many Parquet files per bronze commit; at this cost a few dozen.
        "spark.sql.files.openCostInBytes": str(cfg.settings.spark.file_open_cost_bytes),
        # Silver types ~250 attributes per family in one projection; past 100 fields (Spark's default)
        # whole-stage code generation is switched off and every projection copies the wide rows it
        # passes on, which slows the typing pass several times over (docs/performance.md, "Silver's
        # typing and gate").
        "spark.sql.codegen.maxFields": "1000",
        # When dbt replaces a Delta table, Spark first tries to store its columns Hive's way over
        # the placeholder the metastore holds; Hive's type check refuses (an ERROR in the log) and
        # Spark falls back to its own format. Delta owns the schema: skip Hive's check.
        "spark.hadoop.hive.metastore.disallow.incompatible.col.type.changes": "false",
        # where `auditlake serve` listens (read once, when the session's Hive client is made)
        "spark.hadoop.hive.server2.thrift.bind.host": cfg.settings.serve.host,
        # (the lakehouse's session serves auditors; the analysts' server is a process of its own)
        "spark.hadoop.hive.server2.thrift.port": str(cfg.settings.serve.auditor_port),
        # Spark's scratch files (shuffle blocks hold rows) under the lake's private folder, not /tmp
        "spark.local.dir": str(cfg.data_dir / "spark-local"),
    }
    conf.update(metastore_conf(cfg))
    conf.update(s3_conf(cfg))
    conf.update(serve_conf(cfg))
    conf.update({k: str(v) for k, v in cfg.settings.spark.extra_conf.items()})
    return conf


def metastore_conf(cfg: Config) -> dict[str, str]:
    """The Hive metastore's connection: embedded Derby (default) or a shared PostgreSQL database
    (``metastore.kind``, one of the two: load_config checked it, and that the password is set)."""
    if cfg.settings.metastore.kind == "derby":
        return {}
    pg = cfg.get("metastore.postgresql")
    password = secret(cfg, "metastore.postgresql.password_env")
    return {
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:postgresql://{pg['host']}:{pg['port']}/{pg['database']}",
        "spark.hadoop.javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "spark.hadoop.javax.jdo.option.ConnectionUserName": pg["user"],
        "spark.hadoop.javax.jdo.option.ConnectionPassword": password,
        # The metastore's own tables are created on first use (Hive 2.3 schema, no schematool run),
        # without foreign keys: adding one to TBLS while the same process holds a row lock on it
        # (creating a table) makes PostgreSQL wait forever.
        "spark.hadoop.datanucleus.schema.autoCreateAll": "false",
        "spark.hadoop.datanucleus.schema.autoCreateTables": "true",
        "spark.hadoop.datanucleus.schema.autoCreateColumns": "true",
        "spark.hadoop.datanucleus.schema.autoCreateConstraints": "false",
        "spark.hadoop.hive.metastore.schema.verification": "false",
    }


def s3_conf(cfg: Config) -> dict[str, str]:
    """Hadoop's S3A client, when a location is ``s3a://`` (``s3.*``; its JARs: ``s3.jars``)."""
    if not cfg.uses_s3:
        return {}
    s3 = cfg.get("s3")
    conf = {
        "spark.hadoop.fs.s3a.endpoint.region": s3["region"],
        "spark.hadoop.fs.s3a.path.style.access": str(s3["path_style_access"]).lower(),
    }
    if s3["endpoint"]:
        conf["spark.hadoop.fs.s3a.endpoint"] = s3["endpoint"]
        # an http:// endpoint (a server on a private network or loopback) speaks plain HTTP
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(s3["endpoint"].startswith("https://")).lower()
    if s3["credentials"] == "keys":
        # Spark redacts *.access.key and *secret* values in its UI and logs
        conf.update(
            {
                "spark.hadoop.fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
                "spark.hadoop.fs.s3a.access.key": secret(cfg, "s3.access_key_env"),
                "spark.hadoop.fs.s3a.secret.key": secret(cfg, "s3.secret_key_env"),
            }
        )
    return conf


def serve_conf(cfg: Config) -> dict[str, str]:
    """How `auditlake serve` signs users in and speaks TLS (``serve.auth``, ``serve.tls``), for
    both servers. The Thrift server reads these, like its host and port, from the session-start
    ``spark.hadoop.*`` settings: neither a runtime ``spark.conf.set`` nor a JVM system property set
    before it starts reaches it (checked). The LDAP provider's own settings are system properties,
    and the keystore's password a system property only while the server starts (pipelines.serving.thrift).
    With them, when the server closes what clients abandon (``serve.idle_*``): read by its session
    manager from the same settings."""
    serve = cfg.settings.serve
    conf = {
        "spark.hadoop.hive.server2.idle.session.timeout": f"{serve.idle_session_timeout_seconds}s",
        "spark.hadoop.hive.server2.idle.operation.timeout": f"{serve.idle_operation_timeout_seconds}s",
        # a session holding a statement is never idle (Hive's default, kept: a client waiting on a long
        # statement polls the statement, not the session), so one whose client left a statement open
        # is closed the session timeout after the statements' timeout closed that statement
        "spark.hadoop.hive.server2.session.check.interval": f"{serve.session_check_interval_seconds}s",
    }
    if cfg.settings.serve.auth == "ldap":
        conf["spark.hadoop.hive.server2.authentication"] = "LDAP"
    if cfg.settings.serve.tls.enabled:
        keystore = cfg.path("serve.tls.keystore_path")
        if not keystore.is_file():
            raise ConfigError(f"config key 'serve.tls.keystore_path': keystore {keystore} not found")
        conf.update(
            {
                "spark.hadoop.hive.server2.use.SSL": "true",
                "spark.hadoop.hive.server2.keystore.path": str(keystore),
            }
        )
    return conf


def build_spark(cfg: Config, extra_java_options: str = "") -> SparkSession:
    """Build (or return the running) Delta-enabled SparkSession for ``cfg``."""
    # The driver and workers must run this interpreter (the project's venv).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # A local run, or one on a cluster on this machine's loopback, binds the driver to loopback
    # only (executors must reach it there; it also skips the hostname lookup warning).
    master = cfg.settings.spark.master
    if master.startswith("local") or re.match(r"^spark://(127\.0\.0\.1|localhost)[:/]", master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    cfg.metastore_dir.mkdir(parents=True, exist_ok=True)
    log_dir(cfg).mkdir(parents=True, exist_ok=True)
    if not is_uri(cfg.warehouse_dir):
        Path(cfg.warehouse_dir).mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder.appName(cfg.settings.spark.app_name).master(cfg.settings.spark.master)
    for key, value in spark_conf(cfg, extra_java_options).items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
