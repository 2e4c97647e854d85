"""`auditlake serve [--role analyst|auditor]`: Spark Thrift Servers (HiveThriftServer2, shipped with
PySpark) for JDBC/ODBC clients: beeline, BI tools, Tableau's Spark SQL connector.

Two servers, two boundaries (docs/operations.md "Personal data"):

* **analyst** (the default, ``serve.port``): a process of its own (pipelines/analyst/server.py),
  run as an OS user who cannot read the lake's files, over the masked analyst tables only.
  ``serve_analysts`` here prepares and launches it; it needs no Spark itself.
* **auditor** (``serve.auditor_port``): inside the lakehouse's own SparkSession
  (``startWithSparkSession``), so it sees the same catalog in clear. With the embedded Derby
  metastore it holds the metastore while it runs: stop it before a refresh.

Sign-in and TLS (``serve.auth``, ``serve.tls``; docs/operations.md "Sign-in and TLS") reach the
server two ways, because its parts read two different configurations:

* the server builds its HiveConf from the session when it starts, where the session-start
  ``spark.hadoop.*`` settings win: ``hive.server2.authentication``, ``use.SSL`` and the keystore
  are set there by ``spark_session.serve_conf``, like the host and port. (Set at run time, with
  ``spark.conf.set`` or as JVM system properties, they do not reach it: checked.)
* Hive's LDAP provider makes its own ``new HiveConf()`` per sign-in, which reads only
  ``hive-site.xml`` and JVM system properties: ``hive.server2.authentication.ldap.*`` are set as
  system properties of the driver JVM. Spark's copy of the provider binds as the user's DN
  (``uid=<name>,<baseDN>`` or ``userDNPattern``); it has no group filter.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.config.load import Config, secret

LDAP_KEYS = {
    "url": "hive.server2.authentication.ldap.url",
    "base_dn": "hive.server2.authentication.ldap.baseDN",
    "user_dn_pattern": "hive.server2.authentication.ldap.userDNPattern",
}
KEYSTORE_PASSWORD = "hive.server2.keystore.password"
TRUSTSTORE = "javax.net.ssl.trustStore"  # the JVM's default truststore: JNDI's ldaps:// reads it


def port(cfg: Config, role: str) -> int:
    return cfg.settings.serve.port if role == "analyst" else cfg.settings.serve.auditor_port


def jdbc_url(cfg: Config, role: str = "analyst") -> str:
    """A server's JDBC URL; with TLS, a client adds its truststore (``;sslTrustStore=...``)."""
    tls = ";ssl=true" if cfg.settings.serve.tls.enabled else ""
    return f"jdbc:hive2://{cfg.get('serve.host')}:{port(cfg, role)}/default{tls}"


def ldap_properties(cfg: Config, role: str) -> dict[str, str | None]:
    """JVM system properties for Hive's LDAP provider (None: cleared): each role binds its users
    under DNs of its own (auditors: ``serve.ldap.auditor_*``)."""
    ldap = cfg.settings.serve.auth == "ldap"
    prefix = "" if role == "analyst" else "auditor_"
    keys = {"url": "url", "base_dn": f"{prefix}base_dn", "user_dn_pattern": f"{prefix}user_dn_pattern"}
    return {prop: (cfg.get(f"serve.ldap.{keys[key]}") or None) if ldap else None for key, prop in LDAP_KEYS.items()}


@contextmanager
def keystore_password(spark: SparkSession, password: str | None):
    """The TLS keystore's password as a JVM system property while the block runs, then gone. The
    Thrift server's HiveConf is the metastore client's, made at the session's first catalog use,
    which reads system properties then (a runtime session setting never reaches it): the block must
    hold that first use and the server's start. Never on a command line, in a Spark setting, nor
    readable by SQL afterwards."""
    system = spark._jvm.java.lang.System
    if password is not None:
        system.setProperty(KEYSTORE_PASSWORD, password)
    try:
        yield
    finally:
        system.clearProperty(KEYSTORE_PASSWORD)


def java_cacerts() -> Path:
    """The CAs the JVM on PATH trusts by default."""
    return Path(os.path.realpath(shutil.which("java") or "java")).parents[1] / "lib" / "security" / "cacerts"


def ldap_truststore(cfg: Config, folder: Path) -> Path | None:
    """With ``serve.ldap.ca_cert``: the JVM's own CAs plus that one, as a JKS truststore in ``folder``,
    to be the server JVM's default truststore (``TRUSTSTORE``): the directory's ldaps:// certificate
    verifies, and every public one still does (S3). None without it. Its password only guards its
    integrity (the JVM reads a JKS truststore without one), so it is thrown away."""
    if not cfg.settings.serve.ldap.ca_cert:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    store = folder / "ldap-truststore.jks"
    store.unlink(missing_ok=True)
    password = secrets.token_hex(12)
    keytool = shutil.which("keytool") or "keytool"
    for args in (
        [
            "-importkeystore",
            "-noprompt",
            "-srckeystore",
            str(java_cacerts()),
            "-srcstorepass",
            "changeit",
            "-destkeystore",
            str(store),
            "-deststoretype",
            "JKS",
            "-deststorepass",
            password,
        ],
        [
            "-importcert",
            "-noprompt",
            "-alias",
            "auditlake-ldap-ca",
            "-file",
            str(cfg.path("serve.ldap.ca_cert")),
            "-keystore",
            str(store),
            "-storepass",
            password,
        ],
    ):
        proc = subprocess.run([keytool, *args], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"keytool {args[0]} failed: {(proc.stderr or proc.stdout).strip()[-500:]}")
    store.chmod(0o644)
    return store


def port_taken(host: str, port: int) -> str | None:
    """Why the server cannot listen on ``host:port`` (something already does), or None."""
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError:
        return None
    return f"something already listens on {host}:{port}: another `auditlake serve`?"


def start_thrift_server(spark: SparkSession, host: str, port: int, ldap: dict[str, str | None], timeout: float = 120):
    """Start HiveThriftServer2 in this session's JVM and wait until it accepts connections;
    returns the server (call ``.stop()``). Host, port, sign-in mode and the keystore's path are part
    of the session's configuration (session-start ``spark.hadoop.*`` settings, which win over runtime
    ones); the LDAP provider's settings ``ldap`` are set here (module docstring); the keystore's
    password comes from ``keystore_password``."""
    taken = port_taken(host, port)  # the server would otherwise fail to bind on its own thread, unseen
    if taken:
        raise RuntimeError(taken)
    system = spark._jvm.java.lang.System
    for prop, value in ldap.items():
        if value is None:
            system.clearProperty(prop)
        else:
            system.setProperty(prop, value)
    server_class = spark._jvm.org.apache.spark.sql.hive.thriftserver.HiveThriftServer2
    # exitOnError=False: a server that fails to start must not System.exit() our driver
    server = server_class.startWithSparkSession(spark._jsparkSession, False)
    # the listener starts on a thread of its own, after startWithContext returns
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, port), timeout=2).close()
            return server
        except OSError:
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"the Thrift server did not listen on {host}:{port} within {timeout:.0f}s") from None
            time.sleep(0.5)


def start_auditor_server(spark: SparkSession, cfg: Config, timeout: float = 120):
    """The auditors' server, in the lakehouse's own session: every schema, in clear."""
    password = secret(cfg, "serve.tls.keystore_password_env") if cfg.settings.serve.tls.enabled else None
    ldap = ldap_properties(cfg, "auditor")
    store = ldap_truststore(cfg, cfg.data_dir / "serve")
    if store is not None:
        ldap[TRUSTSTORE] = str(store)
    with keystore_password(spark, password):  # the session's first catalog use is the server's start
        return start_thrift_server(spark, cfg.settings.serve.host, port(cfg, "auditor"), ldap, timeout)


def _wait_for_signal() -> None:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()


def _try_line(cfg: Config, role: str, schema: str) -> str:
    auth = f" (sign-in: LDAP at {cfg.get('serve.ldap.url')})" if cfg.settings.serve.auth == "ldap" else ""
    tls = ";sslTrustStore=<truststore>;trustStorePassword=<its password>" if cfg.settings.serve.tls.enabled else ""
    user = " -n <user> -p <password>" if auth else ""
    return f"serve: try  beeline -u '{jdbc_url(cfg, role)}{tls}'{user} -e 'SHOW TABLES IN {schema}'{auth}"


def serve_auditors(spark: SparkSession, cfg: Config, log=print) -> None:
    """The auditors' server until SIGINT / SIGTERM, then stop it and the session."""
    server = start_auditor_server(spark, cfg)
    log(f"serve: auditors' server listening on {jdbc_url(cfg, 'auditor')}: every schema in clear (Ctrl-C to stop)")
    log(_try_line(cfg, "auditor", cfg.settings.gold.schema))
    _wait_for_signal()
    log("serve: stopping")
    server.stop()
    spark.stop()


def beeline_rows(
    url: str, query: str, timeout: float = 300, user: str | None = None, password: str | None = None
) -> list[list[str]]:
    """Run ``query`` with the beeline JDBC client shipped with PySpark; the CSV rows, header first.
    TLS goes in the URL (``;ssl=true;sslTrustStore=...;trustStorePassword=...``)."""
    import csv
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    import pyspark

    spark_home = Path(pyspark.__file__).parent
    with tempfile.TemporaryDirectory() as tmp:
        sign_in = ["-n", user] if user else []
        if password is not None:
            # a file, not -p: beeline's launcher splits arguments on spaces, and `ps` shows them
            password_file = Path(tmp) / "password"
            password_file.touch(mode=0o600)
            password_file.write_text(password)
            sign_in += ["-w", str(password_file)]
        proc = subprocess.run(
            [
                str(spark_home / "bin" / "beeline"),
                "-u",
                url,
                *sign_in,
                "--outputformat=csv2",
                "--silent=true",
                "-e",
                query,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "SPARK_HOME": str(spark_home)},
        )
    if proc.returncode != 0:
        raise RuntimeError(f"beeline failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    # beeline echoes its prompt before the first line: "0: jdbc:hive2://...> header"
    lines = [line.split("> ", 1)[-1] if line.startswith("0: jdbc:") else line for line in proc.stdout.splitlines()]
    return [row for row in csv.reader(line for line in lines if line.strip())]
