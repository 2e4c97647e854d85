"""A throwaway OpenLDAP server (slapd) on loopback, for tests and local trials (ops tooling, not the
pipeline): what `auditlake serve` checks sign-ins against with ``serve.auth: ldap``.

``LdapServer.start(users)`` writes a ``slapd.conf`` (one MDB database, suffix ``dc=auditlake,
dc=test``) in a fresh temp directory, loads ``ou=people`` with one ``inetOrgPerson`` per user
(``uid=<name>,ou=people,...``, passwords stored as salted SHA-1, ``{SSHA}``) with ``slapadd``
before the server starts, then runs ``slapd`` on 127.0.0.1 at a free port. ``stop()`` stops it
and removes the directory. Debian's ``slapd`` and ``ldap-utils`` (``make ldap-deps``).
``start(users, tls=True)`` serves ldaps:// instead, with a certificate for 127.0.0.1 signed by a
private CA made for it (``ca_cert``: the PEM a client must trust), as a company directory is.

    python -m auditlake_devtools.ldap_server start --dir /tmp/ldap --user alice:secret
    python -m auditlake_devtools.ldap_server stop --dir /tmp/ldap
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from auditlake_devtools.pg_server import free_port

SUFFIX = "dc=auditlake,dc=test"
PEOPLE = f"ou=people,{SUFFIX}"
ROOT_DN = f"cn=admin,{SUFFIX}"
SCHEMA_DIR = Path("/etc/ldap/schema")
MODULE_DIR = Path("/usr/lib/ldap")


def find_slapd() -> Path:
    """Debian puts slapd (and slapadd) in /usr/sbin, which is not on every user's PATH."""
    for candidate in (shutil.which("slapd"), "/usr/sbin/slapd"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    raise RuntimeError("OpenLDAP's slapd not found: apt-get install slapd ldap-utils (or make ldap-deps)")


def ssha(password: str, salt: bytes | None = None) -> str:
    """The ``{SSHA}`` userPassword value slapd checks a simple bind against: SHA-1 of password + salt."""
    salt = os.urandom(8) if salt is None else salt
    digest = hashlib.sha1(password.encode() + salt).digest()
    return "{SSHA}" + base64.b64encode(digest + salt).decode()


def user_dn(name: str) -> str:
    return f"uid={name},{PEOPLE}"


def users_ldif(users: dict[str, str]) -> str:
    """The directory: the suffix, ``ou=people`` and one person per ``name -> password``."""
    entries = [
        f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: auditlake\no: auditlake test\n",
        f"dn: {PEOPLE}\nobjectClass: organizationalUnit\nou: people\n",
    ]
    for name, password in users.items():
        entries.append(
            f"dn: {user_dn(name)}\nobjectClass: inetOrgPerson\nuid: {name}\ncn: {name}\nsn: {name}\n"
            f"userPassword: {ssha(password)}\n"
        )
    return "\n".join(entries)


def make_private_ca(base: Path) -> tuple[Path, Path, Path]:
    """A private CA and a server certificate for 127.0.0.1 / localhost it signed (openssl);
    -> (CA certificate, server certificate, server key), PEM."""
    ca_key, ca_cert = base / "ca.key", base / "ca.pem"
    key, csr, cert = base / "server.key", base / "server.csr", base / "server.pem"
    ext = base / "server.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    for cmd in (
        [
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            ca_key,
            "-out",
            ca_cert,
            "-days",
            "2",
            "-subj",
            "/CN=auditlake test CA",
        ],
        ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=localhost"],
        [
            "x509",
            "-req",
            "-in",
            csr,
            "-CA",
            ca_cert,
            "-CAkey",
            ca_key,
            "-CAcreateserial",
            "-out",
            cert,
            "-days",
            "2",
            "-extfile",
            ext,
        ],
    ):
        _run(["openssl", *map(str, cmd)])
    return ca_cert, cert, key


def slapd_conf(base: Path, root_password: str, tls: tuple[Path, Path] | None = None) -> str:
    schemas = "".join(f"include {SCHEMA_DIR / name}.schema\n" for name in ("core", "cosine", "inetorgperson"))
    certificate = f"TLSCertificateFile {tls[0]}\nTLSCertificateKeyFile {tls[1]}\n" if tls else ""
    return (
        f"{schemas}{certificate}"
        f"pidfile {base / 'slapd.pid'}\n"
        f"modulepath {MODULE_DIR}\nmoduleload back_mdb\n"
        # a bind checks the password; nobody reads it back. Everything else: read after binding.
        "access to attrs=userPassword by self write by anonymous auth by * none\n"
        "access to * by users read by * none\n"
        f'database mdb\nsuffix "{SUFFIX}"\nrootdn "{ROOT_DN}"\nrootpw {ssha(root_password)}\n'
        f"directory {base / 'db'}\nmaxsize 10485760\n"
    )


@dataclass
class LdapServer:
    base_dir: Path  # holds slapd.conf, db/, the pid file
    port: int
    root_password: str
    host: str = "127.0.0.1"
    ca_cert: Path | None = None  # with TLS: the private CA's certificate (PEM) clients must trust

    @property
    def url(self) -> str:
        return f"{'ldaps' if self.ca_cert else 'ldap'}://{self.host}:{self.port}"

    @classmethod
    def start(
        cls, users: dict[str, str], base_dir: Path | None = None, timeout: float = 30, tls: bool = False
    ) -> LdapServer:
        slapd = find_slapd()
        base = Path(base_dir) if base_dir else Path(tempfile.mkdtemp(prefix="auditlake-ldap-"))
        if base_dir and base.exists() and any(base.iterdir()):
            raise RuntimeError(f"{base} is not empty: the server gets a directory of its own (stop() removes it)")
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        server = cls(base, free_port(), os.urandom(12).hex())
        conf = base / "slapd.conf"
        try:
            (base / "db").mkdir()
            certificate = None
            if tls:
                server.ca_cert, cert, key = make_private_ca(base)
                certificate = (cert, key)
            conf.write_text(slapd_conf(base, server.root_password, certificate))
            (base / "users.ldif").write_text(users_ldif(users))
            _run([str(slapd.parent / "slapadd"), "-q", "-f", str(conf), "-l", str(base / "users.ldif")])
            # slapd forks into the background once it listens (no -d): the pid file says where it went
            _run([str(slapd), "-f", str(conf), "-h", f"{server.url}/"])
            server._wait_listening(timeout)
        except Exception:
            server.stop()  # nothing left behind: no server, no directory
            raise
        return server

    def _wait_listening(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection((self.host, self.port), timeout=2).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"slapd did not listen on {self.url} within {timeout:.0f}s") from None
                time.sleep(0.1)

    def pid(self) -> int | None:
        pidfile = self.base_dir / "slapd.pid"
        return int(pidfile.read_text().split()[0]) if pidfile.is_file() else None

    def stop(self, timeout: float = 10) -> None:
        pid = self.pid()
        if pid is not None:
            try:
                os.kill(pid, signal.SIGTERM)
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline:
                    os.kill(pid, 0)  # raises once it has gone
                    time.sleep(0.05)
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.base_dir, ignore_errors=True)

    def bind_ok(self, name: str, password: str) -> bool:
        """Whether ``name`` can bind with ``password`` (``ldapwhoami``, from ldap-utils)."""
        env = {**os.environ, "LDAPTLS_CACERT": str(self.ca_cert)} if self.ca_cert else None
        proc = subprocess.run(
            ["ldapwhoami", "-x", "-H", self.url, "-D", user_dn(name), "-w", password],
            capture_output=True,
            text=True,
            env=env,
        )
        return proc.returncode == 0

    def describe(self) -> dict:
        return {k: str(v) for k, v in asdict(self).items()}


def _run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{Path(cmd[0]).name} failed ({proc.returncode}): {(proc.stderr or proc.stdout).strip()}")
    return proc.stdout


def _main() -> int:
    parser = argparse.ArgumentParser(prog="python -m auditlake_devtools.ldap_server")
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("--dir", required=True, help="the server's directory (config, database, pid file)")
    parser.add_argument("--user", action="append", default=[], metavar="NAME:PASSWORD", help="a person to load")
    args = parser.parse_args()
    state = Path(args.dir) / "server.json"
    if args.action == "stop":
        info = json.loads(state.read_text())
        LdapServer(Path(info["base_dir"]), int(info["port"]), info["root_password"]).stop()
        return 0
    users = dict(u.split(":", 1) for u in args.user)
    server = LdapServer.start(users, Path(args.dir))
    state.touch(mode=0o600)  # it holds the root password
    state.write_text(json.dumps(server.describe()))
    print(
        f"export AUDITLAKE__SERVE__AUTH=ldap AUDITLAKE__SERVE__LDAP__URL={server.url} "
        f"AUDITLAKE__SERVE__LDAP__BASE_DN={PEOPLE}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
