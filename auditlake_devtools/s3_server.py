"""A throwaway S3 API server on loopback (moto's server mode), for tests and local trials (ops
tooling, not the pipeline): the real S3 REST API over HTTP, kept in memory, any credentials.

    server = S3Server.start()          # http://127.0.0.1:<free port>
    server.client().create_bucket(Bucket="lake")
    server.upload_tree(Path("landing"), "tableau-activity-log", "activity-log")
    server.stop()

    python -m auditlake_devtools.s3_server --port 9000       # until Ctrl-C
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from auditlake_devtools.pg_server import free_port

# moto accepts any key; these are what the lakehouse's s3.*_env variables are set to against it
ACCESS_KEY = "testing"
SECRET_KEY = "testing"
REGION = "us-east-1"


@dataclass
class S3Server:
    port: int
    process: subprocess.Popen

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    def start(cls, port: int | None = None, timeout: float = 30.0) -> S3Server:
        port = port or free_port()
        # moto logs a line per request: to a file (a pipe nobody reads would fill and stall it)
        log = tempfile.TemporaryFile(mode="w+")
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(
                    f"moto server exited ({process.returncode}): {log.read()[-2000:]} (pip install 'moto[server]')"
                )
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return cls(port, process)
            except OSError:
                time.sleep(0.2)
        process.kill()
        raise RuntimeError(f"moto server did not listen on 127.0.0.1:{port} within {timeout:.0f}s")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
        )

    def environ(self) -> dict[str, str]:
        """AUDITLAKE__* overrides and credentials pointing the lakehouse's s3a:// locations here."""
        return {
            "AUDITLAKE__S3__ENDPOINT": self.endpoint,
            "AUDITLAKE__S3__PATH_STYLE_ACCESS": "true",
            "AUDITLAKE__S3__REGION": REGION,
            "AUDITLAKE__S3__CREDENTIALS": "keys",
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        }

    def upload_tree(self, root: Path, bucket: str, prefix: str) -> int:
        """Every file under ``root`` to ``s3://bucket/prefix/<relative path>``; the number uploaded."""
        client, count = self.client(), 0
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            client.upload_file(str(path), bucket, f"{prefix.strip('/')}/{path.relative_to(root).as_posix()}")
            count += 1
        return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9000)
    args = parser.parse_args(argv)
    server = S3Server.start(args.port)
    print(f"S3 API on {server.endpoint} (any credentials, e.g. {ACCESS_KEY}/{SECRET_KEY}); Ctrl-C stops it")
    try:
        server.process.wait()
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
