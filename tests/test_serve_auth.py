"""`auditlake serve --role auditor` with sign-in (LDAP) and TLS: the real server in a child process, a
real OpenLDAP (auditlake_devtools/ldap_server.py, `make ldap-deps`), a keystore made by keytool, and two real
clients: beeline (JDBC, shipped with PySpark) and impyla (the Thrift calls an ODBC driver makes).
The analysts' server, with the same sign-in and TLS, is tests/test_analyst_server.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from auditlake_devtools.ldap_server import PEOPLE, SUFFIX, LdapServer
from auditlake_devtools.pg_server import free_port
from pipelines.config.load import ConfigError, load_config
from pipelines.serving.thrift import beeline_rows
from tests.serving import serving

CHECKOUT = Path(__file__).resolve().parents[1]

CLIENT_PYTHON = CHECKOUT / ".cache" / "clients" / "bin" / "python"  # made by `make clients`
SIGN_IN = CHECKOUT / "tests" / "clients" / "sign_in.py"
AUDITLAKE = CHECKOUT / ".venv" / "bin" / "auditlake"
KEYTOOL = "/usr/bin/keytool" if Path("/usr/bin/keytool").exists() else "keytool"
HOST = "127.0.0.1"
USER, PASSWORD = "ana", "correct-horse-battery"
KEYSTORE_PASSWORD, TRUSTSTORE_PASSWORD = "keystore-secret", "truststore-secret"
AUDITORS = f"ou=auditors,{SUFFIX}"


def test_with_ldap_the_auditors_need_dns_of_their_own():
    ldap = {
        **os.environ,
        "AUDITLAKE__SERVE__AUTH": "ldap",
        "AUDITLAKE__SERVE__LDAP__URL": "ldap://127.0.0.1:389",
        "AUDITLAKE__SERVE__LDAP__BASE_DN": PEOPLE,
    }
    with pytest.raises(ConfigError, match="serve.ldap.auditor_base_dn.*auditors sign in under DNs of their own"):
        load_config("test", environ=ldap)
    with pytest.raises(ConfigError, match="serve.ldap.auditor_base_dn.*must differ from serve.ldap.base_dn"):
        load_config("test", environ={**ldap, "AUDITLAKE__SERVE__LDAP__AUDITOR_BASE_DN": PEOPLE})
    with pytest.raises(ConfigError, match="serve.ldap.ca_cert' is '/nowhere/ca.pem': no such file"):
        load_config(
            "test",
            environ={
                **ldap,
                "AUDITLAKE__SERVE__LDAP__AUDITOR_BASE_DN": AUDITORS,
                "AUDITLAKE__SERVE__LDAP__CA_CERT": "/nowhere/ca.pem",
            },
        )


def test_a_server_beyond_loopback_without_sign_in_is_refused_when_the_config_loads():
    environ = {**os.environ, "AUDITLAKE__SERVE__HOST": "0.0.0.0"}
    with pytest.raises(ConfigError, match=r"serve.host.*not a loopback address.*serve.auth is none"):
        load_config("test", environ=environ)
    # with LDAP it may listen on every interface; on loopback it may go without
    ldap = {
        "AUDITLAKE__SERVE__AUTH": "ldap",
        "AUDITLAKE__SERVE__LDAP__URL": "ldaps://ldap.example.com",
        "AUDITLAKE__SERVE__LDAP__BASE_DN": PEOPLE,
        "AUDITLAKE__SERVE__LDAP__AUDITOR_BASE_DN": AUDITORS,
    }
    assert load_config("test", environ={**environ, **ldap}).get("serve.host") == "0.0.0.0"
    loopback = load_config("test", environ={**os.environ, "AUDITLAKE__SERVE__HOST": "localhost"})
    assert loopback.get("serve.auth") == "none"


def test_tls_without_its_keystore_password_is_refused_when_the_config_loads():
    environ = {k: v for k, v in os.environ.items() if k != "AUDITLAKE_SERVE_KEYSTORE_PASSWORD"}
    environ.update(AUDITLAKE__SERVE__TLS__ENABLED="true", AUDITLAKE__SERVE__TLS__KEYSTORE_PATH="/srv/ks.p12")
    with pytest.raises(ConfigError, match="AUDITLAKE_SERVE_KEYSTORE_PASSWORD, which is not set"):
        load_config("test", environ=environ)


def make_tls_material(directory: Path) -> dict[str, Path]:
    """A self-signed key pair for 127.0.0.1 in a PKCS12 keystore (the server's), its certificate as
    PEM (impyla, Tableau) and a truststore holding it (beeline, JDBC)."""
    keystore, pem, truststore = directory / "server.p12", directory / "server.pem", directory / "truststore.p12"
    for args in (
        [
            "-genkeypair",
            "-alias",
            "auditlake",
            "-keyalg",
            "RSA",
            "-keysize",
            "2048",
            "-validity",
            "2",
            "-dname",
            "CN=localhost",
            "-ext",
            "SAN=dns:localhost,ip:127.0.0.1",
            "-storetype",
            "PKCS12",
            "-keystore",
            keystore,
            "-storepass",
            KEYSTORE_PASSWORD,
        ],
        [
            "-exportcert",
            "-rfc",
            "-alias",
            "auditlake",
            "-keystore",
            keystore,
            "-storepass",
            KEYSTORE_PASSWORD,
            "-file",
            pem,
        ],
        [
            "-importcert",
            "-noprompt",
            "-alias",
            "auditlake",
            "-file",
            pem,
            "-storetype",
            "PKCS12",
            "-keystore",
            truststore,
            "-storepass",
            TRUSTSTORE_PASSWORD,
        ],
    ):
        subprocess.run([KEYTOOL, *map(str, args)], check=True, capture_output=True)
    return {"keystore": keystore, "pem": pem, "truststore": truststore}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One `auditlake serve --role auditor` for the module (its own empty lake: the embedded Derby
    metastore admits one process), signing auditors in against a throwaway slapd (their DNs under
    ou=people here), over TLS. -> (port, TLS files)."""
    tmp = tmp_path_factory.mktemp("serve_auth")
    tls = make_tls_material(tmp)
    # ldaps://, its certificate signed by a CA made for the test (as a company directory's is)
    ldap = LdapServer.start({USER: PASSWORD, "other": "other-password"}, tls=True)
    port = free_port()
    env = {
        **os.environ,
        "AUDITLAKE_ENV": "test",
        "AUDITLAKE__PATHS__DATA_DIR": str(tmp / "lake"),
        "AUDITLAKE__PATHS__LANDING_DIR": str(tmp / "lake" / "landing"),
        "AUDITLAKE__SERVE__AUDITOR_PORT": str(port),
        "AUDITLAKE__SERVE__PORT": str(free_port()),
        "AUDITLAKE__SERVE__AUTH": "ldap",
        "AUDITLAKE__SERVE__LDAP__URL": ldap.url,
        "AUDITLAKE__SERVE__LDAP__BASE_DN": f"ou=analysts,{SUFFIX}",
        "AUDITLAKE__SERVE__LDAP__AUDITOR_BASE_DN": PEOPLE,
        "AUDITLAKE__SERVE__LDAP__CA_CERT": str(ldap.ca_cert),
        "AUDITLAKE__SERVE__TLS__ENABLED": "true",
        "AUDITLAKE__SERVE__TLS__KEYSTORE_PATH": str(tls["keystore"]),
        "AUDITLAKE_SERVE_KEYSTORE_PASSWORD": KEYSTORE_PASSWORD,
    }
    try:
        with serving([str(AUDITLAKE), "serve", "--role", "auditor"], env, port, tmp / "serve.log", timeout=240):
            yield port, tls, env, ldap
    finally:
        ldap.stop()


def tls_url(port: int, tls: dict[str, Path]) -> str:
    return (
        f"jdbc:hive2://{HOST}:{port}/default;ssl=true;sslTrustStore={tls['truststore']};"
        f"trustStorePassword={TRUSTSTORE_PASSWORD}"
    )


def impyla(port: int, user: str, password: str, ca_cert: Path | str, query: str) -> subprocess.CompletedProcess:
    assert CLIENT_PYTHON.exists(), f"{CLIENT_PYTHON} missing: `make clients` installs the test clients"
    return subprocess.run(
        [str(CLIENT_PYTHON), str(SIGN_IN), HOST, str(port), user, password, str(ca_cert), query],
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.mark.subprocess
def test_beeline_signs_in_over_tls_with_the_ldap_password(server):
    port, tls, *_ = server
    assert beeline_rows(tls_url(port, tls), "SELECT 1 AS one", user=USER, password=PASSWORD) == [["one"], ["1"]]
    schemas = beeline_rows(tls_url(port, tls), "SHOW SCHEMAS", user=USER, password=PASSWORD)
    assert ["default"] in schemas
    # the keystore password reached the server but not what a signed-in client can read
    shown = beeline_rows(tls_url(port, tls), "SET hive.server2.keystore.password", user=USER, password=PASSWORD)
    assert KEYSTORE_PASSWORD not in json.dumps(shown)


@pytest.mark.subprocess
def test_beeline_with_a_wrong_password_or_an_unknown_user_is_refused(server):
    port, tls, *_ = server
    for user, password in ((USER, "wrong-password"), ("nobody", PASSWORD), ("other", PASSWORD)):
        with pytest.raises(RuntimeError, match="Error validating the login"):
            beeline_rows(tls_url(port, tls), "SELECT 1", user=user, password=password)


@pytest.mark.subprocess
def test_a_plain_connection_to_the_tls_port_fails(server):
    port, tls, *_ = server
    with pytest.raises(RuntimeError, match="Could not open client transport"):
        beeline_rows(f"jdbc:hive2://{HOST}:{port}/default", "SELECT 1", user=USER, password=PASSWORD, timeout=120)
    proc = impyla(port, USER, PASSWORD, "-", "SELECT 1")
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout


@pytest.mark.subprocess
def test_impyla_signs_in_over_tls_and_a_wrong_password_is_refused(server):
    port, tls, *_ = server
    ok = impyla(port, USER, PASSWORD, tls["pem"], "SELECT 1")
    assert ok.returncode == 0, ok.stderr[-3000:]
    assert json.loads(ok.stdout) == [[1]]
    refused = impyla(port, USER, "wrong-password", tls["pem"], "SELECT 1")
    assert refused.returncode == 1 and refused.stdout == ""
    assert "Error validating the login" in refused.stderr, refused.stderr[-3000:]


@pytest.mark.subprocess
def test_without_the_directorys_ca_an_ldaps_sign_in_is_refused(server, tmp_path):
    """The private CA is what lets the server trust the directory: without serve.ldap.ca_cert the
    same password is refused (the JVM's own CAs do not know the test's CA)."""
    port, tls, env, _ldap = server
    other = free_port()
    env = {
        **env,
        "AUDITLAKE__SERVE__LDAP__CA_CERT": "",
        "AUDITLAKE__SERVE__AUDITOR_PORT": str(other),
        "AUDITLAKE__PATHS__DATA_DIR": str(tmp_path / "lake"),
        "AUDITLAKE__PATHS__LANDING_DIR": str(tmp_path),
    }
    with serving([str(AUDITLAKE), "serve", "--role", "auditor"], env, other, tmp_path / "serve.log", timeout=240):
        with pytest.raises(RuntimeError, match="Error validating the login"):
            beeline_rows(tls_url(other, tls), "SELECT 1", user=USER, password=PASSWORD)
