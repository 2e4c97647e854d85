"""Tableau Cloud Manager's Platform Data API as ``auditlake pull`` calls it: sign-in with a personal
access token, the file listings (Activity Log and entity snapshots, site or tenant), the signed
download addresses, the downloads.

The calls are those of Tableau's own extractor (``tableau/tabcloud_platform_data_loader``,
``src/extractor/retriever.py`` and ``http_retry.py``) and the Cloud Manager REST reference:

- ``POST /api/v1/pat/login`` with ``{"token": <secret>}`` -> ``{"sessionToken", "tenantId"}``; later
  calls carry ``x-tableau-session-token``;
- ``GET /api/v1/tenants/<tenant>[/sites/<site>]/activitylog`` (or ``/snapshots``) with
  ``startTime``, ``endTime``, ``pageSize``, ``pageToken`` and one ``eventType`` (``entityType``)
  -> ``{"files": [{"path"}], "pageToken"}``, followed until no ``pageToken`` comes back;
- ``POST`` on the same address with ``{"files": [paths]}`` -> ``{"files": [{"path", "url"}]}``;
- ``GET <url>``: the file's bytes (a signed address: no session header).

A 429 or 5xx answer is retried after ``Retry-After`` when the server gives one (a longer wait than
``pull.max_retry_after_seconds`` fails instead: a pull holds its lock while it sleeps), else after a
wait doubled each time with a little jitter; a 401 after sign-in signs in again once (a session can
expire mid-pull). Any other refusal is a ``PullRefused`` whose one line says what to do. A 200 whose
body is not what the call returns (a truncated body, a proxy's page) is an error too, never read as
an empty answer: an empty listing would move the watermark past files never seen.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.message import Message
from http.client import HTTPException
from urllib.error import HTTPError
from urllib.parse import quote, urlencode
from urllib.request import Request, urlopen

from pipelines.errors import ExternalError

NO_ANSWER = 0  # the status of a call that got none (refused, timed out, cut off)
RETRIED = frozenset((NO_ANSWER, 429, 500, 502, 503, 504))
SESSION_HEADER = "x-tableau-session-token"
ACTIVITY_LOG, SNAPSHOTS = "activitylog", "snapshots"
# the query parameter that filters each resource by type, as its paths name the type's folder
TYPE_PARAMETER = {ACTIVITY_LOG: "eventType", SNAPSHOTS: "entityType"}
# signed addresses asked for at once (the extractor's batch)
PRESIGN_BATCH = 100
# the back-off's random share, so that pulls failed together do not retry together
JITTER = 0.1
# how much of an unexpected body an error line quotes
QUOTED = 100


class PullRefused(ExternalError):
    """Tableau Cloud Manager said no; the line says why and what to do (no traceback helps)."""

    logged = False


@dataclass
class Answer:
    status: int
    body: bytes
    headers: Message | dict = field(default_factory=dict)

    def json(self) -> dict:
        try:
            value = json.loads(self.body or b"{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


def _quoted(body: bytes) -> str:
    text = body.decode("utf-8", errors="replace")
    return repr(text[:QUOTED]) + (" ..." if len(text) > QUOTED else "")


def _files_of(answer: Answer, what: str, url: str) -> list[dict]:
    """The ``files`` list of a 200 answer, each entry an object; anything else is a one-line error."""
    try:
        body = json.loads(answer.body)
    except ValueError:
        body = None
    files = body.get("files") if isinstance(body, dict) else None
    if not isinstance(files, list) or not all(isinstance(f, dict) for f in files):
        raise ExternalError(
            f"pull: Tableau Cloud Manager's {what} {url} answered HTTP 200 without a JSON object holding a "
            f"files list: {_quoted(answer.body)}"
        )
    return files


def _tableau_says(answer: Answer) -> str:
    """The error body's message (TCM answers ``{"errorCode", "message"}``), for the end of a line."""
    body = answer.json()
    said = " ".join(str(body[k]) for k in ("errorCode", "message") if body.get(k))
    return f" (Tableau: {said})" if said else ""


@dataclass
class CloudManager:
    """One signed-in conversation with Tableau Cloud Manager."""

    url: str
    token_name: str
    token_secret: str
    token_secret_env: str
    timeout: float = 60.0
    max_retries: int = 5
    backoff_seconds: float = 1.0
    max_retry_after: float = 300.0
    sleep: Callable[[float], None] = time.sleep
    jitter: Callable[[], float] = random.random
    session: str = ""
    tenant_id: str = ""

    # --- the calls ----------------------------------------------------------------------------------

    def sign_in(self) -> str:
        """-> the token's tenant id."""
        answer = self._request(
            "POST", f"{self.url.rstrip('/')}/api/v1/pat/login", {"token": self.token_secret}, signed_in=False
        )
        if answer.status == 401:
            raise PullRefused(
                f"pull: Tableau Cloud Manager refused the personal access token '{self.token_name}' (HTTP 401): "
                f"the secret in {self.token_secret_env} is wrong, expired or revoked, or the token is not a "
                f"Cloud Manager one{_tableau_says(answer)}"
            )
        self._refuse_unless_ok(answer, "sign-in")
        body = answer.json()
        missing = [k for k in ("sessionToken", "tenantId") if not body.get(k)]
        if missing:
            raise ExternalError(
                f"pull: Tableau Cloud Manager's sign-in answered no {' and no '.join(missing)}: {_quoted(answer.body)}"
            )
        self.session, self.tenant_id = body["sessionToken"], str(body["tenantId"])
        return self.tenant_id

    def list_files(
        self, resource: str, tenant_id: str, site: str | None, start: str, end: str, kind: str | None, page_size: int
    ) -> Iterator[list[str]]:
        """Each page's file paths of one (scope, type, window) listing, pages followed to the end."""
        address = self._address(resource, tenant_id, site)
        page_token, tokens_seen = None, set()
        while True:
            query = {"startTime": start, "endTime": end, "pageSize": page_size}
            if kind is not None:
                query[TYPE_PARAMETER[resource]] = kind
            if page_token:
                query["pageToken"] = page_token
            url = f"{address}?{urlencode(query)}"
            answer = self._request("GET", url)
            self._refuse_unless_ok(answer, resource, site)
            files = _files_of(answer, f"{resource} listing", url)
            yield [f["path"] for f in files if f.get("path")]
            page_token = answer.json().get("pageToken")
            page_token = str(page_token) if page_token else None
            if not page_token:
                return
            if page_token in tokens_seen:
                # the same page again: following it would never end
                raise ExternalError(
                    f"pull: Tableau Cloud Manager's {resource} listing {url} answered pageToken "
                    f"{page_token!r} a second time: paging stopped; run the pull again later"
                )
            tokens_seen.add(page_token)

    def signed_urls(self, resource: str, tenant_id: str, site: str | None, paths: list[str]) -> dict[str, str]:
        """path -> its signed download address, asked for in batches."""
        address, urls = self._address(resource, tenant_id, site), {}
        for i in range(0, len(paths), PRESIGN_BATCH):
            answer = self._request("POST", address, {"files": paths[i : i + PRESIGN_BATCH]})
            self._refuse_unless_ok(answer, resource, site)
            files = _files_of(answer, "signed addresses", address)
            urls |= {f["path"]: f["url"] for f in files if f.get("path") and f.get("url")}
        return urls

    def download(self, url: str) -> bytes:
        answer = self._request("GET", url, session=False)
        if answer.status != 200:
            raise self._failed(answer, "a file's download")
        return answer.body

    # --- the plumbing -------------------------------------------------------------------------------

    def _address(self, resource: str, tenant_id: str, site: str | None) -> str:
        scope = f"/sites/{quote(site)}" if site else ""
        return f"{self.url.rstrip('/')}/api/v1/tenants/{quote(tenant_id)}{scope}/{resource}"

    def _refuse_unless_ok(self, answer: Answer, what: str, site: str | None = None) -> None:
        if answer.status == 200:
            return
        said = _tableau_says(answer)
        if answer.status == 403 and what == SNAPSHOTS:
            raise PullRefused(
                f"pull: Tableau Cloud Manager refused the entity snapshots (HTTP 403): they come with the Enterprise "
                f"and Tableau+ editions only; set pull.entity_snapshots to false{said}"
            )
        if answer.status == 403:
            raise PullRefused(
                f"pull: Tableau Cloud Manager refused the Activity Log (HTTP 403): the Platform Data API is not "
                f"enabled for this tenant or the token's user is not a Cloud Manager administrator{said}"
            )
        if answer.status == 404 and site:
            raise PullRefused(
                f"pull: site {site} is not a site of tenant {self.tenant_id} (HTTP 404): check pull.site_luids{said}"
            )
        if answer.status == 404:
            raise PullRefused(
                f"pull: tenant {self.tenant_id} is not known to {self.url} (HTTP 404): check pull.tenant_id{said}"
            )
        raise self._failed(answer, f"Tableau Cloud Manager's {what}")

    def _failed(self, answer: Answer, what: str) -> ExternalError:
        if answer.status == NO_ANSWER:
            return ExternalError(
                f"pull: {what} got no answer after {self.max_retries} retries: {answer.json()['message']}"
            )
        return ExternalError(f"pull: {what} answered HTTP {answer.status}{_tableau_says(answer)}")

    def _request(
        self, method: str, url: str, payload: dict | None = None, signed_in: bool = True, session: bool = True
    ) -> Answer:
        """One call, retried on 429/5xx and network failures, signed in again once on a 401."""
        signed_in_again = False
        for attempt in range(self.max_retries + 1):
            answer = self._once(method, url, payload, session and signed_in)
            if answer.status == 401 and signed_in and session and not signed_in_again:
                signed_in_again = True  # the session ran out: a new one, and the same call again
                self.sign_in()
                answer = self._once(method, url, payload, True)
            if answer.status not in RETRIED or attempt == self.max_retries:
                return answer
            self.sleep(self._wait(answer, attempt, url))
        return answer

    def _wait(self, answer: Answer, attempt: int, url: str) -> float:
        given = answer.headers.get("Retry-After") if answer.headers else None
        try:
            wait = max(0.0, float(given))
        except (TypeError, ValueError):
            return self.backoff_seconds * 2**attempt * (1 + JITTER * self.jitter())
        if wait > self.max_retry_after:
            raise ExternalError(
                f"pull: {url.split('?')[0]} answered HTTP {answer.status} with Retry-After {wait:g} seconds, "
                f"more than pull.max_retry_after_seconds ({self.max_retry_after:g}): run the pull again later"
            )
        return wait

    def _once(self, method: str, url: str, payload: dict | None, with_session: bool) -> Answer:
        headers = {"Accept": "application/json"}
        data = None
        if payload is not None:
            data = json.dumps(payload).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if with_session:
            headers[SESSION_HEADER] = self.session
        try:
            request = Request(url, data=data, headers=headers, method=method)
        except ValueError:
            raise ExternalError(f"pull: Tableau Cloud Manager gave {url[:QUOTED]!r}, which is not an address") from None
        try:
            with urlopen(request, timeout=self.timeout) as response:
                return Answer(response.status, response.read(), response.headers)
        except HTTPError as exc:
            return Answer(exc.code, exc.read() or b"", exc.headers)
        except (OSError, HTTPException) as exc:
            # a network failure (no answer, a connection cut mid-body) is retried as a 503 would be
            reason = getattr(exc, "reason", exc)
            return Answer(NO_ANSWER, json.dumps({"message": f"{url.split('?')[0]}: {reason}"}).encode(), {})
