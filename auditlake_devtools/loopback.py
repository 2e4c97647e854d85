"""The plumbing the throwaway HTTP servers of the tests share (``tableau_server``,
``cloud_manager_server``): a ``ThreadingHTTPServer`` on loopback in a daemon thread, on a free port
unless one is given; each request of the methods a server answers handed to its ``_handle``, which
records it in ``received``; and stopped.

    class MyServer(LoopbackServer[Received]):
        methods = ("GET",)
        def _handle(self, handler, method): ...   # appends a Received under self._lock, answers

    server = MyServer.start()   # server.url: http://127.0.0.1:<free port>
    server.stop()
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar, Generic, Self, TypeVar

R = TypeVar("R")


@dataclass
class LoopbackServer(Generic[R]):
    server: ThreadingHTTPServer
    # keyword-only: they come after a subclass's own fields, some of which have no default
    received: list[R] = field(default_factory=list, kw_only=True)
    _lock: threading.Lock = field(default_factory=threading.Lock, kw_only=True)

    methods: ClassVar[tuple[str, ...]] = ("GET", "POST")  # the HTTP methods handed to _handle
    thread_name: ClassVar[str] = "loopback-server"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def of(self, op: str) -> list[R]:
        return [r for r in self.received if r.op == op]

    @classmethod
    def start(cls, port: int = 0, **settings) -> Self:
        return cls._serve(port, **settings)

    @classmethod
    def _serve(cls, port: int, *args, **settings) -> Self:
        """An instance of ``cls`` made of the HTTP server, ``args`` and ``settings``, serving on ``port``
        (0: a free one)."""
        fake: Self

        def answer(method: str):
            def do(handler: BaseHTTPRequestHandler) -> None:
                fake._handle(handler, method)

            return do

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body go out as two writes: without this, Nagle's algorithm holds the body back
            # until the client acknowledges the headers, a delayed ACK on every keep-alive request
            disable_nagle_algorithm = True

            def log_message(self, format, *args) -> None:
                pass

        for method in cls.methods:
            setattr(Handler, f"do_{method}", answer(method))
        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        server.daemon_threads = True
        fake = cls(server, *args, **settings)
        threading.Thread(target=server.serve_forever, args=(0.05,), name=cls.thread_name, daemon=True).start()
        return fake

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        raise NotImplementedError
