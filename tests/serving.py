"""Test helper: `auditlake serve` in a child process, up until the test is done."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

HOST = "127.0.0.1"


@contextmanager
def serving(args: list[str], env: dict[str, str], port: int, log_path: Path, timeout: float = 300):
    """Start ``args`` (an ``auditlake serve``), wait until ``port`` accepts connections, yield the
    process, then SIGTERM it (SIGKILL after a minute). Its output goes to ``log_path``."""
    with log_path.open("w") as log:
        proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT)
    proc.args_log = log_path  # what it printed, for a test to read
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"auditlake serve exited {proc.returncode}: {log_path.read_text()[-3000:]}")
            try:
                socket.create_connection((HOST, port), timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"auditlake serve did not listen on {port}: {log_path.read_text()[-3000:]}"
                    ) from None
                time.sleep(0.5)
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
