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
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path

from pipelines.analyst.guard import bounds_conf, guard_jar
from pipelines.analyst.publish import CATALOG_FILE, tables_location
from pipelines.analyst.server import CANNOT_START, JVM_ENDED, JVM_ENDED_LINE, REFUSED
from pipelines.config.load import Config, secret
from pipelines.config.project import CONF_DIR, IMPORT_ROOT
from pipelines.errors import ConfigError, ExternalError, InputError
from pipelines.lake import storage
from pipelines.runtime.jars import jar_paths
from pipelines.runtime.spark_session import log_dir, serve_conf
from pipelines.serving.thrift import TRUSTSTORE, ldap_properties, ldap_truststore, port_taken

SERVER_LOG = "analysts-server.log"


class LaunchError(ExternalError):
    """The analysts' server cannot start, or died and was not restarted: the message says why and
    what to do (and names the server's own log); a traceback of the launcher would add nothing."""

    logged = False


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


def _may(account: pwd.struct_passwd, path: Path, bits: int) -> bool:
    """Whether ``account`` has the permission ``bits`` (``stat.S_IXOTH``-style, other's) on ``path``."""
    if account.pw_uid == 0:
        return True
    info = path.stat()
    if info.st_uid == account.pw_uid:
        return bool(info.st_mode & (bits << 6))
    if info.st_gid in os.getgrouplist(account.pw_name, account.pw_gid):
        return bool(info.st_mode & (bits << 3))
    return bool(info.st_mode & bits)


def unreachable(account: pwd.struct_passwd, analyst: Path) -> str | None:
    """Why ``account`` cannot open the analyst tables (the first folder it cannot cross, or the
    catalogue it cannot read), or None."""
    real = analyst.resolve()
    for folder in [*reversed(real.parents), real]:
        if folder.is_dir() and not _may(account, folder, stat.S_IXOTH):
            mode = stat.S_IMODE(folder.stat().st_mode)
            return (
                f"the analysts' server runs as {account.pw_name}, who cannot cross {folder} (mode {mode:04o}): "
                f"let other users cross it (chmod o+x {folder}) or keep the lake (analyst.dir) outside it"
            )
    catalog = real / CATALOG_FILE
    if not _may(account, catalog, stat.S_IROTH):
        return f"the analysts' server runs as {account.pw_name}, who cannot read {catalog}: run `auditlake refresh`"
    return None


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
        "jars": [str(p) for p in [*jar_paths(cfg), guard_jar(cfg)]],
        "log4j": str(CONF_DIR / "log4j2.properties"),
        "driver_memory": cfg.settings.serve.memory,
        "task_slots": cfg.settings.serve.task_slots,
        "bounds_conf": bounds_conf(cfg),
        "private": [str(p) for p in private_locations(cfg)],
    }


def serve_analysts(cfg: Config, log=print) -> int:
    """Launch the analysts' server and keep it up until SIGINT / SIGTERM (passed on to it): a server
    whose JVM died is started again after a growing wait (``serve.restart``); -> exit code."""
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
    why = unreachable(account, analyst) or port_taken(cfg.settings.serve.host, cfg.settings.serve.port)
    if why:
        raise LaunchError(why)
    guard_jar(cfg, log=log)  # compiled once, before the first start, not inside the restart loop
    restart = cfg.settings.serve.restart
    server_log = log_dir(cfg) / SERVER_LOG
    server_log.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # the lake's, shut to the server
    stop = threading.Event()
    child: list[subprocess.Popen] = []

    def on_signal(sig, _frame):
        stop.set()
        if child and child[-1].poll() is None:
            child[-1].send_signal(sig)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    attempts = 0
    try:
        while True:
            started = time.monotonic()
            code, last = _run_server(cfg, account, server_log, child, log)
            if stop.is_set() or code == 0:
                return 0
            if code == REFUSED:
                raise LaunchError(last.removeprefix(CANNOT_START) or "the analysts' server refused to start")
            if time.monotonic() - started >= restart.healthy_after_seconds:
                attempts = 0
            how = _how_it_ended(code, last)
            if attempts >= restart.attempts:
                raise LaunchError(
                    f"the analysts' server stopped ({how}) and {attempts} restarts did not hold it up; "
                    f"its log: {server_log}"
                )
            wait = min(restart.backoff_seconds * 2**attempts, restart.backoff_max_seconds)
            attempts += 1
            log(
                f"serve: the analysts' server stopped ({how}); its log: {server_log}; restarting in {wait} s "
                f"({attempts} of {restart.attempts})"
            )
            if stop.wait(wait):
                return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _how_it_ended(code: int, last: str) -> str:
    """``its JVM was killed by SIGKILL``, ``exit 1``: from the server's exit code and last line."""
    if code == JVM_ENDED and last.startswith(JVM_ENDED_LINE):
        jvm = last.removeprefix(JVM_ENDED_LINE)
        if not jvm.lstrip("-").isdigit():
            return "its Spark context stopped on an error"
        return f"its JVM was killed by {signal.Signals(-int(jvm)).name}" if int(jvm) < 0 else f"its JVM exited {jvm}"
    return f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit {code}"


def _run_server(
    cfg: Config, account: pwd.struct_passwd, server_log: Path, child: list[subprocess.Popen], log
) -> tuple[int, str]:
    """One run of the server as ``account``, from a throwaway state folder; its output goes to ``log``
    and to ``server_log`` (with the JVM's own log after it ends). -> (exit code, its last line)."""
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
    last = ""
    with server_log.open("a", encoding="utf-8") as out:
        out.write(f"== {time.strftime('%Y-%m-%d %H:%M:%S')} starting the analysts' server\n")
        out.flush()
        proc = subprocess.Popen(
            [python, "-m", "pipelines.analyst.server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=environ,
            cwd=state,
            text=True,
            **switch,
        )
        child.append(proc)
        try:
            proc.stdin.write(json.dumps(server_spec(cfg, state)))
            proc.stdin.close()
            for line in proc.stdout:
                out.write(line)
                out.flush()
                if line.startswith("serve: ") and not line.startswith((CANNOT_START, JVM_ENDED_LINE)):
                    log(line.rstrip())
                if line.strip():
                    last = line.strip()
            code = proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            jvm_log = state / "logs" / "spark.log"
            if jvm_log.is_file():  # the JVM's own log: the why of a crash, kept past the state folder
                out.write(jvm_log.read_text(encoding="utf-8", errors="replace")[-200_000:])
            shutil.rmtree(state, ignore_errors=True)
    return code, last
