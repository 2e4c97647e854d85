"""A throwaway Tableau Cloud Manager Platform Data API on loopback, for the ``auditlake pull`` tests (ops
tooling, not the pipeline): an HTTP server in a thread that implements only the calls ``auditlake
pull`` (pipelines/pull/api.py) makes, answered in JSON as Tableau's own extractor reads them. Built
from the Cloud Manager REST reference ("Platform Data") and the extractor's client code
(``tableau/tabcloud_platform_data_loader``: ``src/extractor/retriever.py``, ``http_retry.py``,
``src/common/dataset_profile.py``); nothing here is Tableau's code.

- ``POST /api/v1/pat/login`` ``{"token": <secret>}`` -> ``{"sessionToken", "tenantId"}``
- ``GET /api/v1/tenants/<tenant>[/sites/<site>]/activitylog`` (and ``/snapshots``, sites only) with
  ``startTime``, ``endTime`` (no range: the last 24 hours; more than 168 hours: 400), ``pageSize``,
  ``pageToken`` and one ``eventType`` (``entityType``) -> ``{"files": [{"path"}], "pageToken"}``
- ``POST`` on the same address ``{"files": [paths]}`` -> ``{"files": [{"path", "url"}]}``: signed
  download addresses on this server
- ``GET /download/<id>?X-Amz-Signature=…``: the file's bytes (no session header, as a presigned URL)

It serves the files of ``root``, a date-first tree as ``auditlake generate activity-log --layout
date_first`` writes one (``pod=…/siteLuid=…/y=…/m=…/d=…/h=…/eventType=…/part-….json``, tenant files
without ``siteLuid=``, snapshots under ``entityType=``): a file is listed in the time ranges that hold
its path's hour, the hour the API says its records were made available in. Files added to ``root``
later are listed by later calls, as a later delivery.

Every request is recorded in ``received`` (a ``Received``: its operation, method, path, query,
whether it carried a session, its status and what it carried). Error paths: a token other than
``token_secret`` (401), ``refuse[op] = (status, errorCode, message)`` on every call of ``op``
(``FEATURE_DISABLED``: 403 for the Activity Log), ``snapshots_enabled=False`` (403, an edition without
them), a site not in ``sites`` (404), and ``fail_next``: ``(op, status, retry_after)`` answered once
each, in order, to the next calls of ``op`` before they succeed (429 with ``Retry-After``, a 500).
What a broken server or a proxy in the way answers: ``answer_instead[op] = body``, a 200 with these
bytes in place of every answer of ``op`` (a truncated body, an HTML page, a sign-in without its
tenant, a page token that comes back again), and ``unsigned``: paths the signed-address call leaves
out of its answer.

    server = CloudManagerServer.start(root=tree, token_secret="s3cret", sites={luid})
    server.url                                # http://127.0.0.1:<free port>
    [r.op for r in server.received]           # ['signin', 'list', 'presign', 'download', ...]
    server.stop()
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from auditlake_devtools.loopback import LoopbackServer

FEATURE_DISABLED = (403, "FEATURE_DISABLED", "Platform Data API access is not enabled for this tenant")
SESSION_HEADER = "x-tableau-session-token"
MAX_WINDOW = timedelta(hours=168)  # the API refuses a longer range (the extractor's MAX_CHUNK_HOURS)
_SCOPE = re.compile(
    r"^/api/v1/tenants/(?P<tenant>[^/]+)(?:/sites/(?P<site>[^/]+))?/(?P<resource>activitylog|snapshots)$"
)
_HOUR = re.compile(r"(?:^|/)y=(\d{4})/m=(\d{1,2})/d=(\d{1,2})/h=(\d{1,2})/")
TYPE_KEY = {"activitylog": "eventType", "snapshots": "entityType"}


@dataclass
class Received:
    op: str  # signin | list | presign | download | unknown
    method: str
    path: str
    query: dict[str, str]
    with_session: bool
    status: int = 0
    # signin: token; list: tenant, site, resource; presign: files; download: path
    details: dict = field(default_factory=dict)


class _Refused(Exception):
    def __init__(self, status: int, code: str, message: str, retry_after: float | None = None):
        super().__init__(f"{status} {code}")
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


def _time(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise _Refused(400, "INVALID_PARAMETER", f"not an ISO 8601 time: {text!r}") from None


def file_hour(path: str) -> datetime | None:
    m = _HOUR.search(path)
    return datetime(*(int(g) for g in m.groups()), tzinfo=UTC) if m else None


@dataclass
class CloudManagerServer(LoopbackServer[Received]):
    thread_name = "cloud-manager"

    root: Path
    token_secret: str = "tcm-secret"
    tenant_id: str = "7e6a0000-0000-4000-8000-00000000c10d"
    sites: set[str] | None = None  # the tenant's site LUIDs (None: every siteLuid= folder of root)
    snapshots_enabled: bool = True
    refuse: dict[str, tuple[int, str, str]] = field(default_factory=dict)
    fail_next: list[tuple[str, int, float | None]] = field(default_factory=list)
    answer_instead: dict[str, bytes] = field(default_factory=dict)
    unsigned: set[str] = field(default_factory=set)
    now: datetime | None = None  # a listing without a range covers the 24 hours before this
    _sessions: set[str] = field(default_factory=set)
    _downloads: dict[str, str] = field(default_factory=dict)

    def expire_sessions(self) -> None:
        """Every session ends (as one that timed out): the next call answers 401."""
        self._sessions.clear()

    @classmethod
    def start(cls, root: Path, port: int = 0, **settings) -> CloudManagerServer:
        return cls._serve(port, Path(root), **settings)

    # --- dispatch ---------------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        parts = urlsplit(handler.path)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        session = handler.headers.get(SESSION_HEADER)
        record = Received("unknown", method, parts.path, query, bool(session))
        headers: dict[str, str] = {}
        with self._lock:
            self.received.append(record)
            try:
                status, answer = self._route(record, session, body)
            except _Refused as refused:
                status = refused.status
                answer = json.dumps({"errorCode": refused.code, "message": refused.message}).encode()
                if refused.retry_after is not None:
                    headers["Retry-After"] = f"{refused.retry_after:g}"
            except Exception as exc:  # a bug here, or a request it cannot read: say so rather than hang up
                status, answer = 500, json.dumps({"errorCode": "INTERNAL", "message": repr(exc)}).encode()
        if status == 200 and record.op in self.answer_instead:
            answer = self.answer_instead[record.op]
        record.status = status
        handler.send_response(status)
        kind = "application/octet-stream" if record.op == "download" and status == 200 else "application/json"
        handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(answer)))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(answer)

    def _route(self, r: Received, session: str | None, body: bytes) -> tuple[int, bytes]:
        if r.method == "POST" and r.path == "/api/v1/pat/login":
            return self._sign_in(r, body)
        if r.method == "GET" and r.path.startswith("/download/"):
            return self._download(r, r.path.removeprefix("/download/"))
        scope = _SCOPE.match(r.path)
        if scope:
            r.op = "list" if r.method == "GET" else "presign"
            r.details = {"tenant": scope["tenant"], "site": scope["site"], "resource": scope["resource"]}
            if session not in self._sessions:
                raise _Refused(401, "UNAUTHORIZED", "the session token is missing, invalid or expired")
            self._check(r)
            self._check_scope(scope["tenant"], scope["site"], scope["resource"])
            if r.method == "GET":
                return self._list(r, scope["site"], scope["resource"])
            if r.method == "POST":
                return self._presign(r, scope["site"], scope["resource"], body)
        raise _Refused(404, "NOT_FOUND", f"{r.method} {r.path}: not implemented by the stand-in")

    def _check(self, r: Received) -> None:
        if r.op in self.refuse:
            raise _Refused(*self.refuse[r.op])
        for i, (op, status, retry_after) in enumerate(self.fail_next):
            if op == r.op:
                del self.fail_next[i]
                raise _Refused(status, "TRANSIENT", f"answered {status} once, as asked", retry_after)

    def _check_scope(self, tenant: str, site: str | None, resource: str) -> None:
        if tenant != self.tenant_id:
            raise _Refused(404, "TENANT_NOT_FOUND", f"tenant {tenant} not found")
        if site is not None and site.lower() not in self._sites():
            raise _Refused(404, "SITE_NOT_FOUND", f"site {site} not found in tenant {tenant}")
        if resource == "snapshots" and not self.snapshots_enabled:
            raise _Refused(403, "FEATURE_NOT_LICENSED", "entity snapshots require Enterprise or Tableau+")
        if resource == "snapshots" and site is None:
            raise _Refused(400, "INVALID_PARAMETER", "entity snapshots are per site")

    def _sites(self) -> set[str]:
        if self.sites is not None:
            return {s.lower() for s in self.sites}
        return {p.name.split("=", 1)[1].lower() for p in self.root.glob("*/siteLuid=*")}

    # --- endpoints --------------------------------------------------------------------------------

    def _sign_in(self, r: Received, body: bytes) -> tuple[int, bytes]:
        r.op = "signin"
        token = json.loads(body or b"{}").get("token")
        r.details = {"token": token}
        self._check(r)
        if token != self.token_secret:
            raise _Refused(401, "INVALID_CREDENTIALS", "the personal access token is invalid or expired")
        session = uuid.uuid4().hex
        self._sessions.add(session)
        return 200, json.dumps({"sessionToken": session, "tenantId": self.tenant_id}).encode()

    def _files(self, site: str | None, resource: str) -> list[str]:
        """The scope's files of ``resource`` under root: relative paths, sorted."""
        key = TYPE_KEY[resource]
        out = []
        for path in self.root.rglob("*"):
            rel = path.relative_to(self.root).as_posix()
            if not path.is_file() or any(p.startswith((".", "_")) for p in rel.split("/")):
                continue
            segments = rel.split("/")
            in_site = [s.split("=", 1)[1].lower() for s in segments if s.startswith("siteLuid=")]
            if (in_site != [site.lower()]) if site else in_site:
                continue
            if any(s.startswith(f"{key}=") for s in segments):
                out.append(rel)
        return sorted(out)

    def _list(self, r: Received, site: str | None, resource: str) -> tuple[int, bytes]:
        q = r.query
        if "startTime" in q or "endTime" in q:
            start, end = (
                _time(q.get("startTime", "1970-01-01T00:00:00Z")),
                _time(q.get("endTime", "9999-01-01T00:00:00Z")),
            )
        else:
            end = self.now or datetime.now(UTC)
            start = end - timedelta(hours=24)
        if end - start > MAX_WINDOW:
            raise _Refused(400, "INVALID_PARAMETER", "startTime and endTime may be 168 hours apart at most")
        kind = q.get(TYPE_KEY[resource])
        matching = [
            rel
            for rel in self._files(site, resource)
            if (hour := file_hour(rel)) is not None
            and start <= hour < end
            and (kind is None or f"/{TYPE_KEY[resource]}={kind}/" in f"/{rel}")
        ]
        size = max(1, int(q.get("pageSize", 100)))
        offset = int(q.get("pageToken", "p0").removeprefix("p") or 0)
        page = matching[offset : offset + size]
        answer: dict = {"files": [{"path": rel} for rel in page]}
        if offset + size < len(matching):
            answer["pageToken"] = f"p{offset + size}"
        r.details |= {"files": page}
        return 200, json.dumps(answer).encode()

    def _presign(self, r: Received, site: str | None, resource: str, body: bytes) -> tuple[int, bytes]:
        asked = json.loads(body or b"{}").get("files") or []
        r.details |= {"files": asked}
        known = set(self._files(site, resource))
        signed = []
        for rel in asked:
            if rel not in known:
                raise _Refused(404, "FILE_NOT_FOUND", f"{rel} is not a file of this scope")
            if rel in self.unsigned:
                continue
            token = uuid.uuid4().hex
            self._downloads[token] = rel
            signed.append({"path": rel, "url": f"{self.url}/download/{token}?X-Amz-Signature={uuid.uuid4().hex}"})
        return 200, json.dumps({"files": signed}).encode()

    def _download(self, r: Received, token: str) -> tuple[int, bytes]:
        r.op = "download"
        rel = self._downloads.get(token)
        r.details = {"path": rel}
        self._check(r)
        if rel is None:
            raise _Refused(403, "SIGNATURE_INVALID", "the signed address is not known or has expired")
        return 200, (self.root / rel).read_bytes()
