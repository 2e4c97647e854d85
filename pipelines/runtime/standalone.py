"""A Spark standalone cluster on this machine: one master and N workers, for `conf/cluster.yaml`.

``auditlake cluster start`` launches them with the ``spark-class`` launcher that ships with
PySpark (the pip package has no ``start-master.sh``), each in its own process group, writes their
pids and logs under ``<data_dir>/cluster/``, and returns once the master counts every worker
alive. ``stop`` ends them. On a real cluster the master and workers run on their own machines
(docs/operations.md); the lakehouse only needs ``spark.master`` to point at the master.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pyspark

from pipelines.config.load import Config
from pipelines.errors import ExternalError

SPARK_HOME = Path(pyspark.__file__).resolve().parent
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


class ClusterError(ExternalError):
    """The cluster did not come up (the message carries the end of the daemon's log)."""


@dataclass(frozen=True)
class Standalone:
    root: Path  # pids, logs and the workers' work dirs
    host: str
    port: int
    webui_port: int
    workers: int
    worker_cores: int
    worker_memory: str

    @classmethod
    def from_config(cls, cfg: Config) -> Standalone:
        c = cfg.get("cluster")
        return cls(
            cfg.data_dir / "cluster",
            c["host"],
            int(c["port"]),
            int(c["webui_port"]),
            int(c["workers"]),
            int(c["worker_cores"]),
            str(c["worker_memory"]),
        )

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.port}"

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP=self.host, SPARK_NO_DAEMONIZE="1")
        return env

    def _launch(self, name: str, args: list[str]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._env(),
                start_new_session=True,  # its own group: stop() ends the JVM and its children
            )
        (self.root / f"{name}.pid").write_text(f"{proc.pid}\n")

    def state(self) -> dict | None:
        """The master's own summary (its web UI's JSON), or None when it does not answer."""
        try:
            with urllib.request.urlopen(f"http://{self.host}:{self.webui_port}/json/", timeout=2) as reply:
                return json.load(reply)
        except OSError:
            return None

    def running(self) -> list[str]:
        return [p.stem for p in sorted(self.root.glob("*.pid")) if _alive(_pid(p))]

    def start(self, timeout: float = 120, log=print) -> None:
        if self.running():
            raise ClusterError(
                f"already running: {', '.join(self.running())} (pids in {self.root}); `auditlake cluster stop` first"
            )
        log(f"cluster: starting master {self.master_url} (web UI http://{self.host}:{self.webui_port})")
        self._launch(
            "master",
            [MASTER_CLASS, "--host", self.host, "--port", str(self.port), "--webui-port", str(self.webui_port)],
        )
        for n in range(1, self.workers + 1):
            work = self.root / f"worker-{n}"
            work.mkdir(parents=True, exist_ok=True)
            self._launch(
                f"worker-{n}",
                [
                    WORKER_CLASS,
                    "--host",
                    self.host,
                    "--cores",
                    str(self.worker_cores),
                    "--memory",
                    self.worker_memory,
                    "--webui-port",
                    "0",
                    "--work-dir",
                    str(work),
                    self.master_url,
                ],
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.state()
            alive = (state or {}).get("aliveworkers", 0)
            if alive >= self.workers:
                log(
                    f"cluster: {alive} workers alive, {state.get('cores')} cores, "
                    f"{state.get('memory')} MB for executors"
                )
                return
            dead = [
                name
                for name in ("master", *(f"worker-{n}" for n in range(1, self.workers + 1)))
                if not _alive(_pid(self.root / f"{name}.pid"))
            ]
            if dead:
                self.stop(log=lambda _m: None)
                raise ClusterError(f"{dead[0]} exited at start:\n{self._tail(dead[0])}")
            time.sleep(1)
        self.stop(log=lambda _m: None)
        raise ClusterError(
            f"the master did not see {self.workers} workers within {timeout:.0f}s:\n{self._tail('master')}"
        )

    def stop(self, log=print) -> None:
        for pid_file in sorted(self.root.glob("*.pid"), reverse=True):  # workers before the master
            pid = _pid(pid_file)
            if _alive(pid):
                _end_group(pid)
                log(f"cluster: stopped {pid_file.stem} (pid {pid})")
            pid_file.unlink()

    def _tail(self, name: str, lines: int = 25) -> str:
        log = self.root / f"{name}.log"
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.is_file() else "(no log)"


def _pid(pid_file: Path) -> int:
    try:
        return int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return 0


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (exited, not yet reaped by its parent) is not running
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True


def _end_group(pid: int, grace: float = 15) -> None:
    """SIGTERM the process group (the JVM and the executors it launched), SIGKILL what is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.2)
        if not _alive(pid):
            return
