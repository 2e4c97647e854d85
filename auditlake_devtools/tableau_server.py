"""A throwaway Tableau REST API on loopback, for the ``auditlake publish`` and ``auditlake inventory``
tests and ``generate inventory`` (ops tooling, not the pipeline): an HTTP server in a thread that
implements only the calls ``auditlake publish`` (pipelines/hyper/publish.py) and ``auditlake
inventory`` make through ``tableauserverclient`` 0.42, answered in Tableau's XML
(namespace http://tableau.com/api) as TSC's parsers read it. Built from Tableau's REST API reference
and TSC's source (server/server.py, server/endpoint/*, models/*); nothing here is Tableau's code.

- ``GET /api/2.4/serverInfo`` (unauthenticated: TSC's ``use_server_version`` after sign-in)
- ``POST /api/<v>/auth/signin`` with a personal access token; ``POST /api/<v>/auth/signout``
- ``GET /api/<v>/sites/<site>/projects`` paginated (``pageNumber``, ``pageSize``)
- ``POST /api/<v>/sites/<site>/datasources?datasourceType=tdsx&overwrite=true`` (Publish Data Source):
  a ``multipart/mixed`` body of a ``request_payload`` XML part and a ``tableau_datasource`` file part,
  or with ``uploadSessionId=`` (TSC's path for a file of 64 MB or more) the file of that upload session
- ``POST /api/<v>/sites/<site>/fileUploads`` (Initiate File Upload) and ``PUT .../fileUploads/<id>``
  (Append to File Upload: ``request_payload`` and ``tableau_file`` parts)
- ``PATCH /api/<v>/sites/<site>/datasources/<id>/data?uploadSessionId=`` (Update Data in Hyper Data
  Source: JSON ``{"actions": [...]}``, header ``RequestID``) -> a job
- ``GET /api/<v>/sites/<site>/jobs/<id>`` (Query Job)
- for ``auditlake inventory`` (pipelines/inventory/fetch.py), over the ``SiteContent`` a site's content URL
  maps to in ``content``: Get Users on Site, Query Groups, Get Users in Group, List Group Sets
  (``resultlevel=members``), Query Projects, Query Workbooks for Site, Query Views for Site, Query Data
  Sources, Query Flows for Site (each paginated: ``pageNumber``, ``pageSize``), Query Workbook / Data
  Source / Flow Connections, Query Project / Workbook / View / Data Source / Flow Permissions and Query
  Default Permissions (``projects/<id>/default-permissions/workbooks|datasources|flows``); a connection's
  password is held but never sent, as Tableau never sends one

Every request is recorded in ``received`` (a ``Received``: its operation, method, path, query,
the headers of interest and, for a publish or an update, what it carried). Behaviours for the error
paths: a token other than ``token_name``/``token_secret`` (sign-in answers 401, code 401001),
``refuse[op] = (status, code, summary, detail)`` (``NO_API_ACCESS``: 403, code 403157 "Feature
Disabled", as Tableau's error code list names it), ``refuse_sites[content URL]`` (the sign-in to
that site refused: a site without REST API access beside others that have it), ``job_finish_code``
(1: the next jobs fail) and ``job_polls`` (how many queries answer "in progress" first), ``projects``
(name -> id), ``datasource_id`` (the id a new data source gets; None: a fresh one each).

    server = TableauServer.start(projects={"Default": "p-1", "Security": "p-2"})
    server.url                                # http://127.0.0.1:<free port>
    [r.op for r in server.received]           # ['signin', 'server_info', 'projects', 'publish', 'signout']
    server.stop()
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qsl, urlsplit
from xml.etree import ElementTree as ET

from auditlake_devtools.loopback import LoopbackServer

NAMESPACE = "http://tableau.com/api"
PRODUCT_VERSION, BUILD, REST_API_VERSION = "2024.2.0", "20242.24.0711.1636", "3.23"
# the headers a test may want to see (lower case); X-Tableau-Auth is checked, not recorded
HEADERS_OF_INTEREST = ("content-type", "requestid", "user-agent")
NO_API_ACCESS = (
    403,
    "403157",
    "Feature Disabled",
    "REST API access is disabled for this site (the site or the user has no API access)",
)
_PATH = re.compile(r"^/api/(?P<version>[\d.]+)(?P<rest>/.*)$")
_SITE_PATH = re.compile(r"^/sites/(?P<site>[^/]+)/(?P<what>.+)$")


@dataclass
class Received:
    op: str  # server_info | signin | signout | projects | publish | upload_initiate | upload_append | update | job
    method: str
    path: str  # after /api/<version>
    version: str
    query: dict[str, str]
    headers: dict[str, str]
    status: int = 0
    # publish: file_name, file (bytes), mode, name, project_id, upload_session_id (chunked), datasource_id;
    # update: datasource_id, actions, request_id, upload_session_id, payload (bytes), job_id;
    # signin: token_name, site; upload_append: bytes
    details: dict = field(default_factory=dict)


class _Refused(Exception):
    def __init__(self, status: int, code: str, summary: str, detail: str):
        super().__init__(f"{status} {code}")
        self.status, self.code, self.summary, self.detail = status, code, summary, detail


# a grantee in a permissions answer: (element name user | group | groupSet, its id, {capability: Allow | Deny})
Rule = tuple[str, str, dict[str, str]]


@dataclass
class SiteContent:
    """One site as the REST API shows it: each item a dict of the attributes Tableau's XML gives it
    (``projectId``, ``ownerId``, ``workbookId``, ``tags`` and a group's ``members`` become child elements)."""

    luid: str
    users: list[dict] = field(default_factory=list)
    groups: list[dict] = field(default_factory=list)  # ... "members": [user id, ...]
    group_sets: list[dict] = field(default_factory=list)  # ... "groups": [group id, ...]
    projects: list[dict] = field(default_factory=list)
    workbooks: list[dict] = field(default_factory=list)
    views: list[dict] = field(default_factory=list)
    datasources: list[dict] = field(default_factory=list)
    flows: list[dict] = field(default_factory=list)
    connections: dict[tuple[str, str], list[dict]] = field(default_factory=dict)  # (workbooks, id) -> connections
    permissions: dict[tuple[str, str], list[Rule]] = field(default_factory=dict)  # (projects, id) -> rules
    default_permissions: dict[tuple[str, str], list[Rule]] = field(default_factory=dict)  # (project id, workbooks)


# the listings (the path after /sites/<site>/) and their elements
_LISTINGS = {
    "users": ("users", "user"),
    "groups": ("groups", "group"),
    "groupsets": ("groupSets", "groupSet"),
    "workbooks": ("workbooks", "workbook"),
    "views": ("views", "view"),
    "datasources": ("datasources", "datasource"),
    "flows": ("flows", "flow"),
}
_SINGULAR = {
    "projects": "project",
    "workbooks": "workbook",
    "views": "view",
    "datasources": "datasource",
    "flows": "flow",
}
# attributes that are child elements in Tableau's XML (an element carrying the id): key -> element
_REFERENCES = {"projectId": "project", "ownerId": "owner", "workbookId": "workbook"}


@dataclass
class TableauServer(LoopbackServer[Received]):
    methods = ("GET", "POST", "PUT", "PATCH")
    thread_name = "tableau-server"

    token_name: str = "auditlake"
    token_secret: str = "secret"
    projects: dict[str, str] = field(default_factory=lambda: {"Default": str(uuid.uuid4())})
    datasource_id: str | None = None  # the id of a new data source (None: a fresh one each)
    job_finish_code: int = 0
    job_polls: int = 0
    refuse: dict[str, tuple[int, str, str, str]] = field(default_factory=dict)
    refuse_sites: dict[str, tuple[int, str, str, str]] = field(default_factory=dict)  # content URL -> refusal
    content: dict[str, SiteContent] = field(default_factory=dict)  # content URL -> what the site holds
    # state: data sources ((project id, name) -> id), sessions (token -> site id), uploads, jobs
    datasources: dict[tuple[str, str], str] = field(default_factory=dict)
    sites: dict[str, str] = field(default_factory=dict)  # content URL -> site id
    _sessions: dict[str, str] = field(default_factory=dict)
    _uploads: dict[str, bytearray] = field(default_factory=dict)
    _jobs: dict[str, dict] = field(default_factory=dict)

    def ops(self) -> list[str]:
        return [r.op for r in self.received]

    # --- dispatch ---------------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        parts = urlsplit(handler.path)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        found = _PATH.match(parts.path)
        headers = {k.lower(): v for k, v in handler.headers.items() if k.lower() in HEADERS_OF_INTEREST}
        record = Received(
            "unknown", method, found["rest"] if found else parts.path, found["version"] if found else "", query, headers
        )
        with self._lock:
            self.received.append(record)
            try:
                if not found:
                    raise _Refused(404, "404000", "Not Found", f"{parts.path} is not a REST API path")
                status, answer = self._route(record, handler, body)
            except _Refused as refused:
                status, answer = refused.status, _error(refused)
            except Exception as exc:  # a bug here, or a request it cannot read: say so rather than hang up
                status, answer = 500, _error(_Refused(500, "500000", "Internal Server Error", repr(exc)))
        record.status = status
        handler.send_response(status)
        if status == 204:  # No Content (sign-out): no body
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        data = b"<?xml version='1.0' encoding='UTF-8'?>" + ET.tostring(answer, encoding="utf-8", xml_declaration=False)
        handler.send_header("Content-Type", "application/xml;charset=utf-8")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _route(self, r: Received, handler: BaseHTTPRequestHandler, body: bytes) -> tuple[int, ET.Element]:
        if r.method == "GET" and r.path == "/serverInfo":
            return self._server_info(r)
        if r.method == "POST" and r.path == "/auth/signin":
            return self._sign_in(r, body)
        if r.method == "POST" and r.path == "/auth/signout":
            r.op = "signout"
            self._session(r, handler)
            self._sessions.pop(handler.headers.get("X-Tableau-Auth"), None)
            return 204, _response()
        site = _SITE_PATH.match(r.path)
        if site:
            if self._session(r, handler) != site["site"]:
                raise _Refused(403, "403000", "Forbidden", "the site in the URL is not the one signed in to")
            what, site_id = site["what"], site["site"]
            if r.method == "GET" and what == "projects":
                return self._projects(r, site_id)
            if r.method == "GET" and self._content_of(site_id) is not None:
                return self._inventory(r, what, self._content_of(site_id))
            if r.method == "POST" and what == "fileUploads":
                return self._upload_initiate(r)
            if r.method == "PUT" and what.startswith("fileUploads/"):
                return self._upload_append(r, what.split("/", 1)[1], handler, body)
            if r.method == "POST" and what == "datasources":
                return self._publish(r, handler, body, site_id)
            if r.method == "PATCH" and re.fullmatch(r"datasources/[^/]+/data", what):
                return self._update(r, what.split("/")[1], handler, body)
            if r.method == "GET" and what.startswith("jobs/"):
                return self._job(r, what.split("/", 1)[1])
        raise _Refused(
            404, "404000", "Not Found", f"{r.method} {r.path}: not implemented by auditlake_devtools.tableau_server"
        )

    def _check(self, r: Received) -> None:
        if r.op in self.refuse:
            raise _Refused(*self.refuse[r.op])

    def _session(self, r: Received, handler: BaseHTTPRequestHandler) -> str:
        """The site id of the request's X-Tableau-Auth token (401 without a valid one)."""
        site_id = self._sessions.get(handler.headers.get("X-Tableau-Auth") or "")
        if site_id is None:
            raise _Refused(401, "401002", "Unauthorized Access", "Invalid authentication credentials were provided")
        return site_id

    # --- endpoints --------------------------------------------------------------------------------

    def _server_info(self, r: Received) -> tuple[int, ET.Element]:
        r.op = "server_info"
        self._check(r)
        root = _response()
        info = ET.SubElement(root, "serverInfo")
        ET.SubElement(info, "productVersion", build=BUILD).text = PRODUCT_VERSION
        ET.SubElement(info, "restApiVersion").text = REST_API_VERSION
        return 200, root

    def _sign_in(self, r: Received, body: bytes) -> tuple[int, ET.Element]:
        r.op = "signin"
        credentials = ET.fromstring(body).find("credentials")
        if credentials is None:
            raise _Refused(400, "400000", "Bad Request", "no credentials element")
        site = credentials.find("site")
        content_url = site.get("contentUrl", "") if site is not None else ""
        name = credentials.get("personalAccessTokenName")
        r.details = {"token_name": name, "site": content_url}
        self._check(r)
        if (name, credentials.get("personalAccessTokenSecret")) != (self.token_name, self.token_secret):
            raise _Refused(401, "401001", "Signin Error", "Error signing in to Tableau Server")
        if content_url in self.refuse_sites:
            raise _Refused(*self.refuse_sites[content_url])
        known = self.content.get(content_url)
        site_id = self.sites.setdefault(content_url, known.luid if known else str(uuid.uuid4()))
        token = uuid.uuid4().hex
        self._sessions[token] = site_id
        root = _response()
        given = ET.SubElement(root, "credentials", token=token, estimatedTimeToExpiration="365:22:00")
        ET.SubElement(given, "site", id=site_id, contentUrl=content_url)
        ET.SubElement(given, "user", id=str(uuid.uuid5(uuid.NAMESPACE_URL, name or "")))
        return 200, root

    def _projects(self, r: Received, site_id: str) -> tuple[int, ET.Element]:
        r.op = "projects"
        self._check(r)
        number, size = int(r.query.get("pageNumber", 1)), int(r.query.get("pageSize", 100))
        held = self._content_of(site_id)
        if held is not None:
            return self._listed(r, "projects", ("projects", "project"), held.projects)
        every = list(self.projects.items())
        root = _response()
        ET.SubElement(root, "pagination", pageNumber=str(number), pageSize=str(size), totalAvailable=str(len(every)))
        listed = ET.SubElement(root, "projects")
        for name, project_id in every[(number - 1) * size : number * size]:
            ET.SubElement(
                listed, "project", id=project_id, name=name, description="", contentPermissions="ManagedByOwner"
            )
        return 200, root

    def _upload_initiate(self, r: Received) -> tuple[int, ET.Element]:
        r.op = "upload_initiate"
        self._check(r)
        session = f"{uuid.uuid4().int % 10**10}:{uuid.uuid4().hex.upper()}-0:0"
        self._uploads[session] = bytearray()
        r.details = {"upload_session_id": session}
        root = _response()
        ET.SubElement(root, "fileUpload", uploadSessionId=session, fileSize="0")
        return 201, root

    def _upload_append(self, r: Received, session: str, handler, body: bytes) -> tuple[int, ET.Element]:
        r.op = "upload_append"
        self._check(r)
        if session not in self._uploads:
            raise _Refused(404, "404000", "Not Found", f"no upload session {session}")
        parts = _multipart(handler.headers.get("Content-Type", ""), body)
        chunk = parts.get("tableau_file", (None, b""))[1]
        self._uploads[session] += chunk
        r.details = {"upload_session_id": session, "bytes": len(chunk)}
        root = _response()
        ET.SubElement(
            root, "fileUpload", uploadSessionId=session, fileSize=str(len(self._uploads[session]) // (1024 * 1024))
        )
        return 200, root

    def _publish(self, r: Received, handler, body: bytes, site_id: str) -> tuple[int, ET.Element]:
        r.op = "publish"
        modes = [m for m in ("overwrite", "append") if r.query.get(m) == "true"]
        parts = _multipart(handler.headers.get("Content-Type", ""), body)
        if "request_payload" not in parts:
            raise _Refused(400, "400000", "Bad Request", "no request_payload part")
        item = ET.fromstring(parts["request_payload"][1]).find("datasource")
        project = item.find("project") if item is not None else None
        if item is None or project is None:
            raise _Refused(400, "400000", "Bad Request", "the request_payload names no datasource and project")
        name, project_id = item.get("name", ""), project.get("id", "")
        session = r.query.get("uploadSessionId")
        if session is not None:
            if session not in self._uploads:
                raise _Refused(404, "404000", "Not Found", f"no upload session {session}")
            file_name, file = f"{name}.{r.query.get('datasourceType', '')}", bytes(self._uploads.pop(session))
        else:
            file_name, file = parts.get("tableau_datasource", ("", b""))
        r.details = {
            "file_name": file_name,
            "file": file,
            "mode": modes[0] if modes else "createnew",
            "name": name,
            "project_id": project_id,
            "datasource_type": r.query.get("datasourceType"),
            "upload_session_id": session,
        }
        self._check(r)
        if project_id not in self.projects.values():
            raise _Refused(404, "404005", "Project Not Found", f"project '{project_id}' could not be found")
        if r.query.get("datasourceType") not in ("tds", "tdsx", "tde", "hyper", "parquet") or not file:
            raise _Refused(400, "400011", "Bad Request", "no data source file of a known type")
        datasource_id = self.datasources.get((project_id, name))  # Overwrite keeps the data source's id
        if datasource_id and not modes:
            raise _Refused(
                409, "409004", "Resource Conflict", f"a data source named '{name}' already exists in the project"
            )
        datasource_id = datasource_id or self.datasource_id or str(uuid.uuid4())
        self.datasources[(project_id, name)] = datasource_id
        r.details["datasource_id"] = datasource_id
        now = _now()
        root = _response()
        published = ET.SubElement(
            root,
            "datasource",
            id=datasource_id,
            name=name,
            type="hyper",
            contentUrl=re.sub(r"\W+", "", name),
            createdAt=now,
            updatedAt=now,
            isCertified="false",
            encryptExtracts="false",
            hasExtracts="true",
        )
        ET.SubElement(
            published, "project", id=project_id, name=next(n for n, i in self.projects.items() if i == project_id)
        )
        ET.SubElement(published, "owner", id=str(uuid.uuid5(uuid.NAMESPACE_URL, self.token_name)))
        ET.SubElement(published, "tags")
        return 201, root

    def _update(self, r: Received, datasource_id: str, handler, body: bytes) -> tuple[int, ET.Element]:
        r.op = "update"
        session = r.query.get("uploadSessionId")
        r.details = {
            "datasource_id": datasource_id,
            "actions": json.loads(body or b"{}").get("actions"),
            "request_id": handler.headers.get("RequestID"),
            "upload_session_id": session,
            "payload": bytes(self._uploads.pop(session, b"")) if session else None,
        }
        self._check(r)
        if datasource_id not in self.datasources.values():
            raise _Refused(404, "404011", "Resource Not Found", f"datasource '{datasource_id}' could not be found")
        if session is not None and r.details["payload"] is None:
            raise _Refused(404, "404000", "Not Found", f"no upload session {session}")
        if not r.details["request_id"]:
            raise _Refused(400, "400000", "Bad Request", "the RequestID header is required")
        job_id = str(uuid.uuid4())
        self._jobs[job_id] = {
            "datasource_id": datasource_id,
            "created": _now(),
            "polls": self.job_polls,
            "finish_code": self.job_finish_code,
        }
        r.details["job_id"] = job_id
        root = _response()
        ET.SubElement(
            root,
            "job",
            id=job_id,
            mode="Asynchronous",
            type="UpdateUploadedFile",
            createdAt=self._jobs[job_id]["created"],
        )
        return 202, root

    def _job(self, r: Received, job_id: str) -> tuple[int, ET.Element]:
        r.op = "job"
        self._check(r)
        job = self._jobs.get(job_id)
        if job is None:
            raise _Refused(404, "404000", "Not Found", f"job '{job_id}' could not be found")
        r.details = {"job_id": job_id}
        root = _response()
        shown = ET.SubElement(
            root,
            "job",
            id=job_id,
            mode="Asynchronous",
            type="UpdateUploadedFile",
            createdAt=job["created"],
            startedAt=job["created"],
        )
        detail = ET.SubElement(shown, "updateUploadedFileJob")
        ET.SubElement(detail, "datasource", id=job["datasource_id"], name="")
        if job["polls"] > 0:
            job["polls"] -= 1
            shown.set("progress", "50")
            return 200, root
        shown.attrib.update(progress="100", completedAt=_now(), finishCode=str(job["finish_code"]))
        if job["finish_code"] == 1:
            ET.SubElement(detail, "notes").text = "the actions could not be applied to the data source"
        return 200, root

    # --- what auditlake inventory reads ---------------------------------------------------------------

    def _content_of(self, site_id: str | None) -> SiteContent | None:
        return next((c for c in self.content.values() if c.luid == site_id), None)

    def _inventory(self, r: Received, what: str, held: SiteContent) -> tuple[int, ET.Element]:
        parts = what.split("/")
        if len(parts) == 1 and parts[0] in _LISTINGS:
            items = {"groupsets": held.group_sets}.get(parts[0]) or getattr(held, parts[0], [])
            return self._listed(r, parts[0].replace("groupsets", "group_sets"), _LISTINGS[parts[0]], items)
        if len(parts) == 3 and parts[0] == "groups" and parts[2] == "users":
            group = next((g for g in held.groups if g["id"] == parts[1]), None)
            if group is None:
                raise _Refused(404, "404002", "Group Not Found", f"group '{parts[1]}' could not be found")
            users = [u for u in held.users if u["id"] in group["members"]]
            r.details["group_id"] = parts[1]
            return self._listed(r, "group_users", ("users", "user"), users)
        if len(parts) == 3 and parts[2] == "connections" and parts[0] in ("workbooks", "datasources", "flows"):
            r.op, r.details["item_id"] = f"{_SINGULAR[parts[0]]}_connections", parts[1]
            self._check(r)
            root = _response()
            listed = ET.SubElement(root, "connections")
            for c in held.connections.get((parts[0], parts[1]), []):
                shown = {k: v for k, v in c.items() if k not in ("password", "datasourceId")}
                element = ET.SubElement(listed, "connection", _attributes(shown))
                if c.get("datasourceId"):
                    ET.SubElement(element, "datasource", id=c["datasourceId"], name="")
            return 200, root
        if len(parts) == 3 and parts[2] == "permissions" and parts[0] in _SINGULAR:
            r.op, r.details["item_id"] = f"{_SINGULAR[parts[0]]}_permissions", parts[1]
            self._check(r)
            return 200, _permissions(_SINGULAR[parts[0]], parts[1], held.permissions.get((parts[0], parts[1]), []))
        if len(parts) == 4 and parts[0] == "projects" and parts[2] == "default-permissions":
            r.op, r.details["item_id"], r.details["content_type"] = "default_permissions", parts[1], parts[3]
            self._check(r)
            return 200, _permissions("project", parts[1], held.default_permissions.get((parts[1], parts[3]), []))
        raise _Refused(
            404, "404000", "Not Found", f"{r.method} {r.path}: not implemented by auditlake_devtools.tableau_server"
        )

    def _listed(self, r: Received, op: str, names: tuple[str, str], items: list[dict]) -> tuple[int, ET.Element]:
        """One page of a paginated listing, as Tableau pages: ``pageNumber`` from 1, ``pageSize`` items."""
        r.op = op
        self._check(r)
        number, size = int(r.query.get("pageNumber", 1)), int(r.query.get("pageSize", 100))
        root = _response()
        ET.SubElement(root, "pagination", pageNumber=str(number), pageSize=str(size), totalAvailable=str(len(items)))
        listed = ET.SubElement(root, names[0])
        for item in items[(number - 1) * size : number * size]:
            plain = {k: v for k, v in item.items() if k not in (*_REFERENCES, "tags", "members", "groups", "domain")}
            element = ET.SubElement(listed, names[1], _attributes(plain))
            for key, child in _REFERENCES.items():
                if item.get(key):
                    ET.SubElement(element, child, id=item[key])
            if "domain" in item:
                ET.SubElement(element, "domain", name=item["domain"])
            if "tags" in item:
                tags = ET.SubElement(element, "tags")
                for tag in item["tags"]:
                    ET.SubElement(tags, "tag", label=tag)
            if names[1] == "groupSet":
                element.set("groupCount", str(len(item["groups"])))
                for group_id in item["groups"]:
                    ET.SubElement(element, "group", id=group_id, name="")
        return 200, root


def _attributes(item: dict) -> dict[str, str]:
    """An item's attributes as XML text: booleans as true/false, None left out."""
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in item.items() if v is not None}


def _permissions(kind: str, item_id: str, rules: list[Rule]) -> ET.Element:
    root = _response()
    shown = ET.SubElement(root, "permissions")
    ET.SubElement(shown, kind, id=item_id)
    for grantee, grantee_id, capabilities in rules:
        rule = ET.SubElement(shown, "granteeCapabilities")
        ET.SubElement(rule, grantee, id=grantee_id)
        listed = ET.SubElement(rule, "capabilities")
        for name, mode in capabilities.items():
            ET.SubElement(listed, "capability", name=name, mode=mode)
    return root


def _response() -> ET.Element:
    return ET.Element("tsResponse", xmlns=NAMESPACE)


def _error(refused: _Refused) -> ET.Element:
    root = _response()
    error = ET.SubElement(root, "error", code=refused.code)
    ET.SubElement(error, "summary").text = refused.summary
    ET.SubElement(error, "detail").text = refused.detail
    return root


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _multipart(content_type: str, body: bytes) -> dict[str, tuple[str, bytes]]:
    """A ``multipart/mixed`` body (TSC's: urllib3's encoding) -> part name -> (file name, bytes)."""
    found = re.search(r'boundary="?([^";]+)"?', content_type)
    if not found:
        raise _Refused(406, "406000", "Bad Request", f"not a multipart body: {content_type}")
    parts = {}
    for chunk in body.split(b"--" + found[1].encode())[1:]:
        if chunk.startswith(b"--"):
            break
        head, _, data = chunk.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        disposition = re.search(rb'name="([^"]*)"(?:; filename="([^"]*)")?', head)
        if disposition:
            parts[disposition[1].decode()] = ((disposition[2] or b"").decode(), data.removesuffix(b"\r\n"))
    return parts
