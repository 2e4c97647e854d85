"""The analysts' endpoint cannot leak: a real `auditlake serve` (role analyst: its own process, as
another OS user, over the masked analyst tables) with LDAP sign-in (a throwaway slapd) and TLS,
attacked over the Thrift protocol by a signed-in analyst (impyla, the calls an ODBC driver makes).
Every attempt to read a clear e-mail address or a secret of the server is refused or answers
masked; the auditors' server (the lakehouse's own session) answers the same questions in clear."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from auditlake_devtools.ldap_server import PEOPLE, SUFFIX, LdapServer
from auditlake_devtools.pg_server import free_port
from pipelines.gold.compact import mart_tables
from pipelines.lake.table_names import tables
from pipelines.serving.thrift import start_auditor_server
from tests.lake import variant_environ
from tests.serving import HOST, serving
from tests.test_serve_auth import KEYSTORE_PASSWORD, make_tls_material

CHECKOUT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.subprocess]
CLIENT_PYTHON = CHECKOUT / ".cache" / "clients" / "bin" / "python"  # made by `make clients`
SESSION = CHECKOUT / "tests" / "clients" / "session.py"
PER_QUERY = CHECKOUT / "tests" / "clients" / "per_query.py"
ANALYST, PASSWORD = "ana", "analyst-password-1"
QUERY_TIMEOUT = 30  # serve.query_timeout_seconds of the module's server
# serve.idle_session_timeout_seconds and idle_operation_timeout_seconds of the module's server (checked every 3 s):
# every client of the module's other tests uses its session without pause
IDLE_TIMEOUT = 15
READ_ONLY = "Error running query: refused: the analysts' server is read-only: "
# impyla names no error for the operation state TIMEDOUT (8): a statement the server's time limit stopped
TIMED_OUT = "KeyError: 8"


def run_session(
    port: int,
    user: str,
    password: str | None,
    ca_cert: Path | None,
    statements: list[str],
    columns_of: str | None = None,
    configuration: dict[str, str] | None = None,
) -> dict:
    assert CLIENT_PYTHON.exists(), f"{CLIENT_PYTHON} missing: `make clients` installs the test clients"
    job = {
        "host": HOST,
        "port": port,
        "user": user,
        "password": password,
        "ca_cert": str(ca_cert) if ca_cert else None,
        "statements": statements,
        "columns_of": columns_of,
        "configuration": configuration,
    }
    proc = subprocess.run(
        [str(CLIENT_PYTHON), str(SESSION)], input=json.dumps(job), capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def analysts(gold_lake, lake_dir):
    """`auditlake serve` (role analyst) over the gold lake's analyst tables, LDAP and TLS. -> (port,
    CA certificate, the launcher process)."""
    cfg = gold_lake[0]
    # the server reads its keystore as the analysts' OS user: not under pytest's root-only folders
    tls_dir = Path(tempfile.mkdtemp(prefix="auditlake-test-tls-"))
    tls_dir.chmod(0o755)
    tls = make_tls_material(tls_dir)
    tls["keystore"].chmod(0o644)
    ldap = LdapServer.start({ANALYST: PASSWORD}, tls=True)  # ldaps://, a CA made for the test
    port = free_port()
    env = {
        **variant_environ(lake_dir, "gold"),
        "AUDITLAKE_ENV": "test",
        "AUDITLAKE__ANALYST__DIR": cfg.analyst_dir,
        "AUDITLAKE__SERVE__PORT": str(port),
        "AUDITLAKE__SERVE__AUDITOR_PORT": str(free_port()),
        "AUDITLAKE__SERVE__AUTH": "ldap",
        "AUDITLAKE__SERVE__LDAP__URL": ldap.url,
        "AUDITLAKE__SERVE__LDAP__BASE_DN": PEOPLE,
        "AUDITLAKE__SERVE__LDAP__AUDITOR_BASE_DN": f"ou=auditors,{SUFFIX}",
        "AUDITLAKE__SERVE__LDAP__CA_CERT": str(ldap.ca_cert),
        "AUDITLAKE__SERVE__TLS__ENABLED": "true",
        "AUDITLAKE__SERVE__TLS__KEYSTORE_PATH": str(tls["keystore"]),
        "AUDITLAKE_SERVE_KEYSTORE_PASSWORD": KEYSTORE_PASSWORD,
        "AUDITLAKE__SERVE__QUERY_TIMEOUT_SECONDS": str(QUERY_TIMEOUT),
        "AUDITLAKE__SERVE__IDLE_SESSION_TIMEOUT_SECONDS": str(IDLE_TIMEOUT),
        "AUDITLAKE__SERVE__IDLE_OPERATION_TIMEOUT_SECONDS": str(IDLE_TIMEOUT),
        "AUDITLAKE__SERVE__SESSION_CHECK_INTERVAL_SECONDS": "3",
        "AUDITLAKE__SERVE__RESTART__BACKOFF_SECONDS": "1",
    }
    try:
        with serving([sys.executable, "-m", "pipelines.cli", "serve"], env, port, tls_dir / "serve.log") as launcher:
            yield port, tls["pem"], launcher
    finally:
        ldap.stop()
        shutil.rmtree(tls_dir, ignore_errors=True)


def _clear_emails(spark, cfg) -> set[str]:
    t = tables(cfg)
    rows = spark.table(t.gold("fct_logins")).where("user_email IS NOT NULL").select(F.lower("user_email")).distinct()
    return {r[0] for r in rows.collect()}


def _location(spark, table: str) -> str:
    return spark.sql(f"DESCRIBE DETAIL {table}").first()["location"]


def test_an_analyst_reads_pseudonyms_and_no_sql_reaches_a_clear_value_or_a_secret(spark, gold_lake, analysts):
    cfg = gold_lake[0]
    t = tables(cfg)
    port, ca_cert, launcher = analysts
    emails = _clear_emails(spark, cfg)
    assert len(emails) > 3
    gold_path = _location(spark, t.gold("fct_logins"))
    silver_path = _location(spark, t.silver_events("site"))
    secrets = [os.environ["AUDITLAKE_PSEUDONYM_KEY"], KEYSTORE_PASSWORD]
    attempts = [
        f"SELECT user_email FROM {t.gold('fct_logins')} LIMIT 5",
        f"SELECT raw_line FROM {t.bronze_raw('site')} LIMIT 5",
        f"SELECT email FROM {t.silver_events('site')} WHERE email IS NOT NULL LIMIT 5",
        f"SELECT * FROM {t.refresh_runs} LIMIT 5",
        f"SELECT user_email FROM delta.`{gold_path}` LIMIT 5",
        f"SELECT * FROM parquet.`{gold_path}` LIMIT 5",
        f"SELECT * FROM text.`{silver_path}` LIMIT 5",
        "SET spark.sql.runSQLOnFiles=true",
        f"SELECT user_email FROM delta.`{gold_path}` LIMIT 5",
        f"CREATE TABLE stolen USING delta LOCATION '{gold_path}'",
        "SELECT user_email FROM stolen LIMIT 5",
        f"CREATE TABLE stolen_files USING parquet LOCATION '{silver_path}'",
        f"ADD JAR {gold_path}/_delta_log/00000000000000000000.json",
        f"ADD FILE {silver_path}",
        "SHOW CREATE TABLE analyst.fct_logins",
        "CREATE FUNCTION peek AS 'org.apache.hadoop.hive.ql.udf.generic.GenericUDFReflect'",
        "SELECT peek('java.lang.System', 'getenv', 'AUDITLAKE_PSEUDONYM_KEY')",
        "SELECT reflect('java.lang.System', 'getenv', 'AUDITLAKE_PSEUDONYM_KEY')",
        "SELECT reflect('java.lang.System', 'getenv', 'AUDITLAKE_SERVE_KEYSTORE_PASSWORD')",
        "SELECT java_method('java.lang.System', 'getenv')",
        "SELECT java_method('java.lang.System', 'getProperties')",
        "SELECT java_method('java.lang.System', 'getProperty', 'hive.server2.keystore.password')",
        "SELECT reflect('java.lang.System', 'getProperty', 'sun.java.command')",
        "SET -v",
        "SET",
        "SET hive.server2.keystore.password",
        "SET spark.hadoop.hive.server2.keystore.password",
        "SELECT '${env:AUDITLAKE_PSEUDONYM_KEY}', '${hiveconf:hive.server2.keystore.password}'",
        "SET spark.sql.variable.substitute=true",
        "SELECT '${env:AUDITLAKE_PSEUDONYM_KEY}', '${hiveconf:hive.server2.keystore.password}', "
        "'${spark:spark.hadoop.hive.server2.keystore.password}', '${system:sun.java.command}'",
        "SELECT value FROM text.`/proc/self/environ`",
        "SELECT value FROM text.`/proc/self/cmdline`",
        f"SELECT value FROM text.`/proc/{launcher.pid}/environ`",
        f"SELECT value FROM text.`/proc/{launcher.pid}/cmdline`",
    ]
    session = run_session(
        port,
        ANALYST,
        PASSWORD,
        ca_cert,
        ["SELECT user_email FROM analyst.fct_logins WHERE user_email IS NOT NULL LIMIT 50", *attempts],
    )
    results = session["results"]
    masked = results[0]
    assert masked["ok"] and masked["rows"] and all(r[0].startswith("pii:") for r in masked["rows"]), masked
    for result in results:
        text = json.dumps(result).lower()
        assert not [e for e in emails if e in text], f"a clear e-mail address: {result['statement']}"
        assert not [s for s in secrets if s.lower() in text], f"a secret: {result['statement']}"
    answered = {r["statement"]: r for r in results}
    for statement in attempts[:7] + attempts[8:11]:  # the lake is out of reach
        assert not answered[statement]["ok"], f"answered: {statement}"


def test_an_odbc_client_lists_every_analyst_tables_columns_with_their_docs(spark, gold_lake, analysts):
    cfg = gold_lake[0]
    port, ca_cert, _launcher = analysts
    listed = run_session(port, ANALYST, PASSWORD, ca_cert, [], columns_of="analyst")["columns"]
    marts = mart_tables(spark, tables(cfg).gold_schema)
    assert sorted(listed) == marts
    for name in marts:
        fields = spark.table(tables(cfg).gold(name)).schema.fields
        assert [c[0] for c in listed[name]] == [f.name for f in fields], name
        assert all(c[1] for c in listed[name]), f"{name}: a column without a type"
    remarks = {c[0]: c[2] for c in listed["fct_logins"]}
    assert remarks["event_id"] == "The silver event this row came from."


def test_an_analyst_can_change_nothing_every_other_analyst_reads(spark, gold_lake, analysts):
    """Writes in any spelling are refused with one line each, reads answer, and every analyst still
    reads the catalogue's views."""
    port, ca_cert, _launcher = analysts
    refused = {
        "CREATE OR REPLACE VIEW analyst.fct_ownership_transfers AS SELECT 1 AS forged": "CreateView",
        "create /* a comment */ OR replace VIEW analyst.fct_logins as select 1 as forged": "CreateView",
        "DROP VIEW analyst.fct_sessions": "DropTable",
        "CREATE TABLE analyst.x AS SELECT 1": "CreateDataSourceTableAsSelect",
        "INSERT OVERWRITE DIRECTORY '/tmp/auditlake-forged' USING parquet SELECT 1": "InsertIntoDataSourceDir",
        "WITH t AS (SELECT 1 AS a) INSERT OVERWRITE DIRECTORY '/tmp/auditlake-forged' USING csv SELECT a FROM t": (
            "InsertIntoDataSourceDir"
        ),
        "EXECUTE IMMEDIATE 'DROP VIEW analyst.fct_logins'": "DropTable",
        "BEGIN SELECT 1; DROP VIEW analyst.fct_logins; END": "DropTable",
        "ALTER VIEW analyst.fct_logins AS SELECT 1 AS forged": "AlterViewAs",
        "CACHE TABLE analyst.fct_logins": "CacheTable",
        "CREATE TEMPORARY VIEW mine AS SELECT 1": "CreateView",
        "SET spark.sql.thriftServer.queryTimeout=0": "Set",
        "RESET": "Reset",
        "CREATE DATABASE forged": "CreateNamespace",
        "SELECT reflect('java.lang.Thread', 'sleep', 1000L)": None,
        "SELECT TRANSFORM(1) USING 'id' AS (a)": None,
    }
    reads = [
        "SHOW TABLES IN analyst",
        "DESCRIBE analyst.fct_logins",
        "EXPLAIN DROP VIEW analyst.fct_logins",
        "WITH t AS (SELECT count(*) AS n FROM analyst.fct_logins) SELECT n FROM t",
        "SET spark.sql.thriftServer.queryTimeout",
        "USE analyst",
    ]
    results = run_session(port, ANALYST, PASSWORD, ca_cert, [*refused, *reads])["results"]
    answered = {r["statement"]: r for r in results}
    for statement, command in refused.items():
        error = answered[statement].get("error", "")
        assert not answered[statement]["ok"] and READ_ONLY in error, (statement, error)
        why = error.split(READ_ONLY, 1)[1].splitlines()[0]
        expected = {
            "SELECT reflect('java.lang.Thread', 'sleep', 1000L)": "reflect/java_method call Java methods",
            "SELECT TRANSFORM(1) USING 'id' AS (a)": "ScriptTransformation acts outside the data",
        }.get(statement, f"{command} changes the server's state")
        assert why == expected, statement
    for statement in reads:
        assert answered[statement]["ok"], answered[statement]
    assert answered[reads[-2]]["rows"] == [["spark.sql.thriftServer.queryTimeout", str(QUERY_TIMEOUT)]]
    # another analyst reads every view as the catalogue made it
    cfg = gold_lake[0]
    marts = mart_tables(spark, tables(cfg).gold_schema)
    other = run_session(
        port, ANALYST, PASSWORD, ca_cert, ["SHOW TABLES IN analyst", "SELECT count(*) FROM analyst.fct_logins"]
    )["results"]
    assert sorted(r[1] for r in other[0]["rows"]) == marts
    assert other[1]["rows"] == [[spark.table(tables(cfg).gold("fct_logins")).count()]]
    assert not Path("/tmp/auditlake-forged").exists()
    # a limit set when the session opens (no statement) is put back, and the first statement refused
    loosened = run_session(
        port,
        ANALYST,
        PASSWORD,
        ca_cert,
        ["SELECT 1", "SET spark.sql.thriftServer.queryTimeout"],
        configuration={"set:hiveconf:spark.sql.thriftServer.queryTimeout": "0"},
    )["results"]
    assert loosened[0]["error"].split("Error running query: ", 1)[1].splitlines()[0] == (
        "refused: the analysts' server is read-only: the setting spark.sql.thriftServer.queryTimeout is the "
        f"server's ({QUERY_TIMEOUT}); it is back: run the statement again"
    )
    assert loosened[1]["rows"] == [["spark.sql.thriftServer.queryTimeout", str(QUERY_TIMEOUT)]]


@pytest.mark.e2e
def test_clients_opening_a_session_per_query_and_never_closing_most_get_every_answer(analysts):
    """Several processes, each a new connection and session per statement, two in three of them never
    closed, as BI tools and scripts behave: every statement answers within the time limit; a session
    left idle is closed by the server."""
    port, ca_cert, launcher = analysts
    assert CLIENT_PYTHON.exists(), f"{CLIENT_PYTHON} missing: `make clients` installs the test clients"
    job = {
        "host": HOST,
        "port": port,
        "user": ANALYST,
        "password": PASSWORD,
        "ca_cert": str(ca_cert),
        "statements": [
            "SELECT count(*) FROM analyst.fct_logins",
            "SELECT outcome, count(*) FROM analyst.fct_logins GROUP BY outcome",
            "SELECT count(*) FROM analyst.fct_sessions",
        ],
        "processes": 4,
        "per_process": 50,
        "close_every": 3,
        # a statement the server answers past its limit still shows, as the client's read timeout
        "timeout": QUERY_TIMEOUT + 30,
        # its last statement left open (impyla closes it with the next), then the session: both timeouts
        "idle_after": 2 * IDLE_TIMEOUT + 2 * 3 + 3,
    }
    proc = subprocess.run(
        [str(CLIENT_PYTHON), str(PER_QUERY)], input=json.dumps(job), capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    results = report["results"]
    assert len(results) == 200
    failed = [r for r in results if not r["ok"]]
    assert not failed, f"{len(failed)} failed: {failed[:3]}"
    assert max(r["seconds"] for r in results) < QUERY_TIMEOUT, max(r["seconds"] for r in results)
    assert all("Invalid SessionHandle" in idle for idle in report["idle"]), report["idle"]
    assert launcher.poll() is None
    # each session ran its jobs in a scheduler pool of its own: the closed ones' are gone
    sweeps = [ln for ln in _server_jvm_log(launcher).splitlines() if "session pools left" in ln]
    assert sweeps, "no scheduler pool removed"
    removed = sum(int(ln.split("removed ")[1].split()[0]) for ln in sweeps)
    left = int(sweeps[-1].split("; ")[-1].split()[0])
    assert removed >= 100 and left <= job["processes"], sweeps[-3:]


def test_one_analysts_abusive_statements_cost_only_their_session(spark, gold_lake, analysts):
    """An endless statement is stopped at the time limit, one that exhausts the heap fails alone, and
    meanwhile another analyst's statements all answer; the server stays up."""
    port, ca_cert, launcher = analysts
    abusive = [
        "SELECT count(*) FROM range(0, 200000000000)",
        # large values: the heap fills in few allocations, so the one that fails is the task's own (a heap
        # filled by many small ones can fail any thread's next allocation, and its collections stall them all)
        "SELECT collect_list(repeat('x', 400000000)) FROM range(0, 20)",
    ]
    outcome = {}
    abuser = threading.Thread(
        target=lambda: outcome.update(run_session(port, ANALYST, PASSWORD, ca_cert, abusive)), daemon=True
    )
    abuser.start()
    ordinary = ["SELECT count(*) FROM analyst.fct_logins", "SELECT count(*) FROM analyst.fct_sessions"]
    answers = []
    while abuser.is_alive():
        answers += run_session(port, ANALYST, PASSWORD, ca_cert, ordinary)["results"]
    abuser.join()
    endless, heap = outcome["results"]
    assert endless["error"] == TIMED_OUT and QUERY_TIMEOUT <= endless["seconds"] < QUERY_TIMEOUT + 15, endless
    assert not heap["ok"] and "java.lang.OutOfMemoryError: Java heap space" in heap["error"], heap["error"][:500]
    assert answers and all(a["ok"] for a in answers), [a for a in answers if not a["ok"]][:1]
    assert launcher.poll() is None
    after = run_session(port, ANALYST, PASSWORD, ca_cert, ordinary[:1])["results"][0]
    assert after["ok"], after


def test_a_dead_server_is_restarted_and_said_so_in_one_line(analysts):
    """Its JVM killed, the server is started again after the back-off and answers again."""
    port, ca_cert, launcher = analysts
    log = launcher.args_log  # the launcher's output (tests/serving.py)
    jvms = _descendants(launcher.pid, "java")
    assert len(jvms) == 1, jvms
    os.kill(jvms[0], signal.SIGKILL)
    deadline = time.monotonic() + 240
    restarted = "serve: the analysts' server stopped (its JVM was killed by SIGKILL); its log: "
    while restarted not in log.read_text() or log.read_text().count("analysts' server listening") < 2:
        assert time.monotonic() < deadline and launcher.poll() is None, log.read_text()[-2000:]
        time.sleep(1)
    line = next(ln for ln in log.read_text().splitlines() if ln.startswith(restarted))
    assert line.endswith("analysts-server.log; restarting in 1 s (1 of 5)"), line
    after = run_session(port, ANALYST, PASSWORD, ca_cert, ["SELECT count(*) FROM analyst.fct_logins"])["results"][0]
    assert after["ok"], after


class _NotYetReaped:
    """A JVM's process as the watch may find it just after a SIGKILL: its socket already closed, its
    exit code not yet readable by ``poll`` (the kernel is still tearing it down)."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc

    def poll(self):
        return None

    def wait(self, timeout=None):
        return self.proc.wait(timeout)


def test_a_jvm_killed_under_the_watch_is_told_by_its_signal_whatever_its_gateway_raises():
    """The first call after the kill fails in py4j's error, every later one in the socket's own
    (``ConnectionRefusedError``): each is told as the JVM's SIGKILL, never as the watch's own crash."""
    from pyspark.java_gateway import launch_gateway

    from pipelines.analyst.server import jvm_ended

    gateway = launch_gateway()
    try:

        def asked() -> bool:
            return gateway.jvm.java.lang.Boolean.parseBoolean("false")

        jvm = _NotYetReaped(gateway.proc)
        assert jvm_ended(asked, jvm) is None
        os.kill(gateway.proc.pid, signal.SIGKILL)
        assert [jvm_ended(asked, jvm) for _ in range(3)] == [str(-signal.SIGKILL)] * 3
    finally:
        if gateway.proc.poll() is None:
            gateway.proc.kill()
        gateway.proc.wait()


def _server_jvm_log(launcher) -> str:
    """The running analysts' server's own Spark log (``logs/spark.log`` in its state folder, its JVM's
    working directory)."""
    jvms = _descendants(launcher.pid, "java")
    assert len(jvms) == 1, jvms
    return (Path(f"/proc/{jvms[0]}/cwd").resolve() / "logs" / "spark.log").read_text(errors="replace")


def _descendants(pid: int, name: str) -> list[int]:
    """The processes called ``name`` under ``pid``, at any depth."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        children = Path(f"/proc/{parent}/task/{parent}/children")
        for child in map(int, children.read_text().split()) if children.exists() else []:
            todo.append(child)
            if Path(f"/proc/{child}/comm").read_text().strip() == name:
                found.append(child)
    return found


def test_serve_fails_in_one_line_on_a_lake_its_user_cannot_reach(tmp_path):
    """A lake under a folder the analysts' user cannot cross: one line naming it and the fix."""
    shut = Path(tempfile.mkdtemp(prefix="auditlake-shut-"))  # mode 0700, as mktemp -d makes it
    try:
        (shut / "data" / "analyst").mkdir(parents=True)
        (shut / "data" / "analyst" / "catalog.json").write_text('{"schema": "analyst", "marts": {}}')
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("AUDITLAKE__")},
            "AUDITLAKE_ENV": "test",
            "AUDITLAKE__PATHS__DATA_DIR": str(shut / "data"),
        }
        proc = subprocess.run(
            [sys.executable, "-m", "pipelines.cli", "serve"], env=env, capture_output=True, text=True, timeout=120
        )
    finally:
        shutil.rmtree(shut, ignore_errors=True)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 4, proc.stderr
    assert lines == [
        f"auditlake: environment error: the analysts' server runs as auditlake-analyst, who cannot cross {shut} "
        f"(mode 0700): let other users cross it (chmod o+x {shut}) or keep the lake (analyst.dir) outside it"
    ], proc.stderr


def test_serve_fails_in_one_line_when_its_port_is_taken():
    """Another program on serve.port: one line, before anything starts."""
    lake = Path(tempfile.mkdtemp(prefix="auditlake-taken-"))
    listener = socket.create_server((HOST, 0))
    port = listener.getsockname()[1]
    try:
        lake.chmod(0o755)
        (lake / "data" / "analyst").mkdir(parents=True)
        (lake / "data" / "analyst" / "catalog.json").write_text('{"schema": "analyst", "marts": {}}')
        (lake / "data" / "analyst" / "catalog.json").chmod(0o644)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("AUDITLAKE__")},
            "AUDITLAKE_ENV": "test",
            "AUDITLAKE__PATHS__DATA_DIR": str(lake / "data"),
            "AUDITLAKE__SERVE__PORT": str(port),
        }
        proc = subprocess.run(
            [sys.executable, "-m", "pipelines.cli", "serve"], env=env, capture_output=True, text=True, timeout=120
        )
    finally:
        listener.close()
        shutil.rmtree(lake, ignore_errors=True)
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"auditlake: environment error: something already listens on {HOST}:{port}: another `auditlake serve`?"
    ]


def test_the_auditors_server_answers_in_clear(spark, cfg, gold_lake):
    """The auditors' server is the lakehouse's own session: the marts in clear."""
    t = tables(gold_lake[0])
    server = start_auditor_server(spark, cfg)
    try:
        session = run_session(
            cfg.get("serve.auditor_port"),
            "auditor",
            None,
            None,
            [f"SELECT lower(user_email) FROM {t.gold('fct_logins')} WHERE user_email IS NOT NULL"],
        )
    finally:
        server.stop()
    seen = {r[0] for r in session["results"][0]["rows"]}
    assert seen == _clear_emails(spark, gold_lake[0])
