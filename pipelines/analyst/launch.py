"""Starting the analysts' server (pipelines/analyst/server.py) behind its boundary, and keeping the
lake's folders shut to it.

The boundary is the operating system's: the refresh keeps the lake's local folders owner-only
(``secure_lake``: the data folder can be crossed, not listed; everything in it but the analysts'
tables is the owner's alone), and the analysts' server runs as another user
(``serve.analyst_os_user``, created when missing), from an environment holding no secret, with a
throwaway state folder. Its settings reach it on standard input, the keystore's password among
them (never an argument or an environment variable, which ``ps`` and ``reflect`` would show).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from pipelines import storage
from pipelines.analyst.publish import CATALOG_FILE, tables_location
from pipelines.config import Config, secret
from pipelines.errors import ConfigError, ExternalError, InputError
from pipelines.jars import jar_paths
from pipelines.project import CONF_DIR, IMPORT_ROOT
from pipelines.serve import TRUSTSTORE, ldap_properties, ldap_truststore
from pipelines.spark_session import log_dir, serve_conf

ANALYST_DRIVER_MEMORY = "2g"  # it reads masked copies; the lake's own session keeps spark.driver_memory


class LaunchError(ExternalError):
    """The analysts' server cannot start: the message says why and what to do."""


def _local(location: str) -> Path | None:
    return None if storage.is_uri(location) else Path(location)


def private_locations(cfg: Config) -> list[Path]:
    """The lake's local folders that hold clear values (the analysts' server must open none)."""
    found = [
        cfg.warehouse_dir,
        cfg.checkpoint_dir,
        cfg.landing_dir,
        str(cfg.metastore_dir),
        str(cfg.quality_dir),
        str(log_dir(cfg)),
        cfg.location("ocsf.out_dir", "ocsf"),
        str(cfg.data_dir / "spark-local"),
    ]
    return [p for p in map(_local, found) if p is not None]


def secure_lake(cfg: Config) -> None:
    """The data folder can be crossed but not listed (the analysts' tables may be inside it), and
    each of its entries but the analysts' folder, like every private location, is the owner's alone."""
    analyst = _local(cfg.analyst_dir)
    data = cfg.data_dir
    if data.is_dir():
        os.chmod(data, 0o711)
        for entry in data.iterdir():
            if analyst is None or entry.resolve() != analyst.resolve():
                os.chmod(entry, entry.stat().st_mode & 0o700)
    for path in private_locations(cfg):
        if path.exists():
            os.chmod(path, path.stat().st_mode & 0o700)
    if analyst is not None and analyst.is_dir():
        os.chmod(analyst, 0o755)


def analyst_account(cfg: Config) -> pwd.struct_passwd:
    """Who the server runs as: ``serve.analyst_os_user`` (created when missing) when started by root,
    else the user starting it (the server refuses to start if that user can read the lake)."""
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid())
    name = cfg.settings.serve.analyst_os_user
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(name)


def _reachable_by_all(path: Path) -> bool:
    """Every folder above ``path`` can be crossed by any user, and the file read and run."""
    real = path.resolve()
    if not real.stat().st_mode & 0o005 == 0o005:
        return False
    return all(parent.stat().st_mode & 0o001 for parent in real.parents)


def interpreter() -> tuple[str, list[str]]:
    """A Python 3.11 the analysts' user can run, and the folders it imports from (this venv's
    packages and the project): the venv's own interpreter may sit in root's home."""
    paths = [str(IMPORT_ROOT), sysconfig.get_paths()["purelib"]]
    candidates = [Path(sys.executable), Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")]
    for candidate in candidates:
        if candidate.exists() and _reachable_by_all(candidate):
            return str(candidate), paths
    raise LaunchError(
        f"no Python {sys.version_info.major}.{sys.version_info.minor} that another user can run "
        f"({', '.join(map(str, candidates))}): install Debian's python3, or the venv outside a "
        "private home"
    )


def server_spec(cfg: Config, state_dir: Path) -> dict:
    conf = serve_conf(cfg)
    ldap = ldap_properties(cfg, "analyst")
    store = ldap_truststore(cfg, state_dir)  # the directory's CA: the server user reads it there
    if store is not None:
        ldap[TRUSTSTORE] = str(store)
    return {
        "host": cfg.settings.serve.host,
        "port": cfg.settings.serve.port,
        "ldap": ldap,
        "server_conf": conf,
        "keystore_password": secret(cfg, "serve.tls.keystore_password_env") if cfg.settings.serve.tls.enabled else None,
        "analyst_dir": cfg.analyst_dir,
        "tables_dir": tables_location(cfg),
        "state_dir": str(state_dir),
        "jars": [str(p) for p in jar_paths(cfg)],
        "log4j": str(CONF_DIR / "log4j2.properties"),
        "driver_memory": ANALYST_DRIVER_MEMORY,
        "private": [str(p) for p in private_locations(cfg)],
    }


def serve_analysts(cfg: Config, log=print) -> int:
    """Launch the analysts' server and wait for it (SIGINT / SIGTERM are passed on); -> its exit code."""
    analyst = _local(cfg.analyst_dir)
    if analyst is None:
        raise ConfigError(
            f"analyst.dir is {cfg.analyst_dir}: the analysts' server reads a local folder only, and "
            'gets no storage credentials (docs/operations.md "Personal data", On S3)'
        )
    if not (analyst / CATALOG_FILE).is_file():
        raise InputError(f"no analyst tables in {analyst}: run `auditlake refresh` first (with analyst.enabled)")
    secure_lake(cfg)
    account = analyst_account(cfg)
    python, paths = interpreter()
    state = Path(tempfile.mkdtemp(prefix="auditlake-analysts-"))
    os.chown(state, account.pw_uid, account.pw_gid)
    environ = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(state),
        "PYTHONPATH": os.pathsep.join(paths),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    if os.environ.get("JAVA_HOME"):
        environ["JAVA_HOME"] = os.environ["JAVA_HOME"]
    log(
        f"serve: starting the analysts' server as {account.pw_name} on {cfg.get('serve.host')}:{cfg.get('serve.port')} "
        f"over {cfg.analyst_dir} (masked tables only)"
    )
    switch = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []} if os.geteuid() == 0 else {}
    proc = subprocess.Popen(
        [python, "-m", "pipelines.analyst.server"], stdin=subprocess.PIPE, env=environ, cwd=state, text=True, **switch
    )
    previous = {sig: signal.signal(sig, lambda s, _f: proc.send_signal(s)) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        proc.stdin.write(json.dumps(server_spec(cfg, state)))
        proc.stdin.close()
        return proc.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(state, ignore_errors=True)
