"""A throwaway webhook receiver on loopback, for the alert tests and local trials (ops tooling, not the
pipeline): an HTTP server in a thread that records every POST it accepts, and can be switched to
answer 503 (``down``), to answer only after a delay (``slow``: it records the POST, then answers
late, as a receiver that took an alert but whose answer the sender gave up on), or to redirect
(``redirect``: 302 to a page that answers a GET with 200, as a moved endpoint).

    receiver = WebhookReceiver.start()        # http://127.0.0.1:<free port>/hook
    receiver.mode = "down"
    receiver.received                         # [(headers, body bytes), ...] of the POSTs taken
    receiver.stop()

    python -m auditlake_devtools.webhook_receiver --port 8099    # prints each body until Ctrl-C
"""

from __future__ import annotations

import argparse
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODES = ("up", "down", "slow", "redirect")


@dataclass
class WebhookReceiver:
    server: ThreadingHTTPServer
    mode: str = "up"
    slow_seconds: float = 2.0
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    echo: bool = False  # print each body taken (the command line)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    @classmethod
    def start(cls, port: int = 0, echo: bool = False) -> WebhookReceiver:
        receiver: WebhookReceiver

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if receiver.mode == "down":
                    self._answer(503, b"down for maintenance")
                    return
                if receiver.mode == "redirect":
                    self._answer(302, b"moved", location="/moved")
                    return
                with receiver._lock:
                    receiver.received.append((dict(self.headers.items()), body))
                if receiver.echo:
                    print(body.decode("utf-8", "replace"), flush=True)
                if receiver.mode == "slow":
                    time.sleep(receiver.slow_seconds)
                self._answer(200, b"ok")

            def do_GET(self) -> None:
                self._answer(200, b"a page")

            def _answer(self, code: int, text: bytes, location: str | None = None) -> None:
                try:
                    self.send_response(code)
                    if location:
                        self.send_header("Location", location)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(text)))
                    self.end_headers()
                    self.wfile.write(text)
                except OSError:  # the sender gave up waiting (slow mode)
                    pass

            def log_message(self, format, *args) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        server.daemon_threads = True
        receiver = cls(server, echo=echo)
        threading.Thread(target=server.serve_forever, name="webhook-receiver", daemon=True).start()
        return receiver

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="a webhook receiver on loopback that prints each POST body")
    parser.add_argument("--port", type=int, default=8099)
    args = parser.parse_args(argv)
    receiver = WebhookReceiver.start(args.port, echo=True)
    print(f"listening: AUDITLAKE_ALERTS_WEBHOOK_URL={receiver.url} (Ctrl-C stops)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        receiver.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
