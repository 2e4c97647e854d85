"""A throwaway PostgreSQL server on loopback, for tests and local trials (ops tooling, not the pipeline).

``PgServer.start()`` runs Debian's ``initdb`` + ``pg_ctl`` in a fresh temp directory: TCP on
127.0.0.1 at a free port (password login, SCRAM), a unix socket in the temp directory
(trusted, for loading data with ``psql``). ``stop()`` stops it and removes the directory.
``initdb`` refuses to run as root, so as root the server runs as the ``postgres`` user.

    python -m auditlake_devtools.pg_server start --dir /tmp/wbpg [--load-sample]
    python -m auditlake_devtools.pg_server stop --dir /tmp/wbpg
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

SUPERUSER = "postgres"


def find_bin_dir() -> Path:
    """The newest installed server's binaries (Debian: /usr/lib/postgresql/<major>/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    raise RuntimeError("PostgreSQL server binaries not found: apt-get install postgresql (or make pg-deps)")


def ensure_server_binaries() -> Path:
    """``find_bin_dir()``, installing Debian's ``postgresql`` first when it is missing and we may (root)."""
    try:
        return find_bin_dir()
    except RuntimeError:
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            raise
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "postgresql"]):
        subprocess.run(cmd, check=True, env=env, capture_output=True)
    return find_bin_dir()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class PgServer:
    base_dir: Path  # holds data/, the socket, the log
    port: int
    password: str
    bin_dir: Path
    host: str = "127.0.0.1"
    user: str = SUPERUSER

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    def _run(self, tool: str, *args: str, input: str | None = None) -> str:
        cmd = [str(self.bin_dir / tool), *args]
        if os.geteuid() == 0 and tool in ("initdb", "pg_ctl"):
            cmd = ["runuser", "-u", SUPERUSER, "--", *cmd]
        proc = subprocess.run(cmd, input=input, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{tool} failed ({proc.returncode}): {(proc.stderr or proc.stdout).strip()}")
        return proc.stdout

    @classmethod
    def start(cls, base_dir: Path | None = None, password: str | None = None) -> PgServer:
        base = Path(base_dir) if base_dir else Path(tempfile.mkdtemp(prefix="auditlake-pg-"))
        if base_dir and base.exists() and any(base.iterdir()):
            raise RuntimeError(f"{base} is not empty: the server gets a directory of its own (stop() removes it)")
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        server = cls(base, free_port(), password or os.urandom(12).hex(), ensure_server_binaries())
        pwfile = base / "pwfile"
        pwfile.write_text(server.password + "\n")
        if os.geteuid() == 0:
            pg = pwd.getpwnam(SUPERUSER)
            for p in (base, pwfile):
                os.chown(p, pg.pw_uid, pg.pw_gid)
        options = f"-c listen_addresses={server.host} -p {server.port} -k {base} -c fsync=off -c full_page_writes=off"
        try:
            server._run(
                "initdb",
                "-D",
                str(server.data_dir),
                "-U",
                SUPERUSER,
                f"--pwfile={pwfile}",
                "-E",
                "UTF8",
                "--locale=C",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
            )
            pwfile.unlink()
            server._run(
                "pg_ctl",
                "-D",
                str(server.data_dir),
                "-l",
                str(base / "server.log"),
                "-w",
                "-t",
                "60",
                "-o",
                options,
                "start",
            )
        except RuntimeError:
            server.stop()  # nothing left behind: no server, no directory
            raise
        return server

    def stop(self) -> None:
        if (self.data_dir / "postmaster.pid").is_file():
            self._run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.base_dir, ignore_errors=True)

    def psql(self, database: str, sql: str) -> str:
        """Run SQL with ``psql`` over the unix socket (trusted) as the superuser; stops at the first error."""
        args = [
            "-X",
            "-q",
            "-At",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            str(self.base_dir),
            "-p",
            str(self.port),
            "-U",
            self.user,
            "-d",
            database,
        ]
        return self._run("psql", *args, input=sql)

    def create_database(self, name: str) -> None:
        self.psql("postgres", f'CREATE DATABASE "{name}";')

    def create_reader(self, user: str, password: str, databases: list[str], table: str) -> None:
        """A login role that may only read ``table`` in each database (what the pipeline should use)."""
        self.psql("postgres", f"CREATE ROLE \"{user}\" LOGIN PASSWORD '{password}';")
        for db in databases:
            self.psql(db, f'GRANT SELECT ON {table} TO "{user}";')

    def describe(self) -> dict:
        return {k: str(v) for k, v in asdict(self).items()}


def _main() -> int:
    parser = argparse.ArgumentParser(prog="python -m auditlake_devtools.pg_server")
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("--dir", required=True, help="the server's directory (data, socket, log)")
    parser.add_argument("--load-sample", action="store_true", help="create both databases, load the bundled sample")
    args = parser.parse_args()
    state = Path(args.dir) / "server.json"
    if args.action == "stop":
        info = json.loads(state.read_text())
        PgServer(Path(info["base_dir"]), int(info["port"]), info["password"], Path(info["bin_dir"])).stop()
        return 0
    server = PgServer.start(Path(args.dir))
    state.touch(mode=0o600)  # it holds the password
    state.write_text(json.dumps(server.describe()))
    if args.load_sample:
        from auditlake_devtools.sample import BUNDLED_EXPORT
        from auditlake_devtools.sample.writeback import load_export_into_postgres
        from pipelines.config.load import load_config

        databases = load_config(writes_lake=False).settings.writeback.databases
        load_export_into_postgres(server, BUNDLED_EXPORT, databases)
    print(
        f"export AUDITLAKE__WRITEBACK__SOURCE=jdbc AUDITLAKE__WRITEBACK__JDBC__PORT={server.port} "
        f"AUDITLAKE__WRITEBACK__JDBC__USER={server.user} AUDITLAKE_WRITEBACK_PASSWORD={server.password}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
