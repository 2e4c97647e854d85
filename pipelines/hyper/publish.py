"""``auditlake publish``: the packaged data source (the Hyper file of ``auditlake export hyper`` and its
``.tds``) on Tableau Cloud or Server, kept current by appending only what changed.

With ``tableauserverclient`` (Tableau's REST API client), signed in with a personal access token whose
name and secret come from the environment (``tableau.token_name_env``, ``tableau.token_secret_env``):

- The first time, or when the file was rewritten whole (a new pseudonym key, an erasure, a mart's
  columns changed, a mart added or dropped) or the target changed: the ``.tdsx`` is published in
  ``Overwrite`` mode.
- Later: the REST API's "update data in Hyper data source" with a payload Hyper file of what changed
  since the last publish: a fact's rows newer than its published mark (``upsert`` on its key: a row
  gold rewrote replaces the one published), a dimension or report whole (``replace``). Nothing
  changed: nothing is sent.
- The published marks (``auditlake.publish.json`` beside the file) move only after Tableau reports the
  job done: a failed publish is retried whole by the next run.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pipelines.config.load import Config, secret
from pipelines.errors import ConfigError, ExternalError, InputError, one_line
from pipelines.hyper.export import (
    META,
    SCHEMA,
    WATERMARK,
    _q,
    _read_marks,
    _sql_text,
    export_hyper,
    incremental_keys,
)
from pipelines.hyper.tdsx import write_tdsx
from pipelines.lake.state_files import write_json_whole

STATE_FILE = "auditlake.publish.json"
PAYLOAD_FILE = "auditlake.publish-payload.hyper"


class PublishError(ExternalError):
    """Publishing cannot go on (one line for the operator; the marks are left as they were)."""


@dataclass
class PublishReport:
    mode: str  # overwrite | update | nothing
    datasource_id: str | None = None
    actions: list[dict] = field(default_factory=list)
    rows: int = 0
    seconds: float = 0.0

    @property
    def summary(self) -> str:
        if self.mode == "nothing":
            return "publish: nothing new since the last publish"
        if self.mode == "overwrite":
            return f"publish: data source {self.datasource_id} published whole (Overwrite) in {self.seconds:.1f}s"
        tables = ", ".join(f"{a['target-table']} ({a['action']})" for a in self.actions)
        return f"publish: {self.rows} rows into data source {self.datasource_id}: {tables} in {self.seconds:.1f}s"


def target(cfg: Config) -> dict[str, str]:
    """Where the data source goes: server, site, project and name (conf ``tableau.*``)."""
    values = {k: str(cfg.get(f"tableau.{k}") or "") for k in ("server_url", "site", "project", "datasource_name")}
    if not values["server_url"]:
        raise ConfigError(
            "tableau.server_url is empty: set it (AUDITLAKE__TABLEAU__SERVER_URL) to your "
            "Tableau Cloud pod or Server address"
        )
    return values


def _read_file_marks(hyper_file: Path) -> dict[str, dict]:
    from tableauhyperapi import Connection, HyperProcess, Telemetry

    with HyperProcess(Telemetry.DO_NOT_SEND_USAGE_DATA_TO_TABLEAU, parameters={"log_config": ""}) as hyper:
        with Connection(hyper.endpoint, str(hyper_file)) as conn:
            marks = _read_marks(conn)
    return {
        name: {
            **m,
            "watermark": m["watermark"].isoformat() if isinstance(m.get("watermark"), datetime) else m.get("watermark"),
        }
        for name, m in marks.items()
    }


def plan(published: dict | None, marks: dict[str, dict], where: dict[str, str]) -> tuple[str, list[str]]:
    """-> ("overwrite" | "update" | "nothing", the marts to send in an update)."""
    if (
        published is None
        or published.get("target") != where
        or published.get("datasource_id") is None
        or published["marks"].get(META) != marks.get(META)
        or set(published["marks"]) != set(marks)
    ):
        return "overwrite", []
    changed = []
    for name, mark in sorted(marks.items()):
        if name == META:
            continue
        before = published["marks"][name]
        if (before["mode"], before["signature"]) != (mark["mode"], mark["signature"]):
            return "overwrite", []
        if before["source_version"] != mark["source_version"] or before.get("watermark") != mark.get("watermark"):
            changed.append(name)
    return ("update" if changed else "nothing"), changed


def build_payload(
    hyper_file: Path, payload: Path, marts: list[str], published: dict[str, dict]
) -> tuple[list[dict], int]:
    """The payload Hyper file of an update: per mart, the rows to send; -> (the actions, rows in all)."""
    from tableauhyperapi import Connection, HyperProcess, Telemetry

    keys = incremental_keys()
    actions, rows = [], 0
    payload.unlink(missing_ok=True)
    with HyperProcess(Telemetry.DO_NOT_SEND_USAGE_DATA_TO_TABLEAU, parameters={"log_config": ""}) as hyper:
        # both files attached under an alias: with two databases a session has no default one, and an
        # unqualified name ("Extract"."x") cannot be resolved
        with Connection(hyper.endpoint) as conn:
            conn.catalog.create_database(str(payload))
            conn.catalog.attach_database(str(payload), alias="payload")
            conn.catalog.attach_database(str(hyper_file), alias="source")
            conn.execute_command(f"CREATE SCHEMA {_q('payload')}.{_q(SCHEMA)}")
            if not set(marts) <= _source_tables(conn):
                raise InputError(f"{hyper_file} lacks a mart the marks name: run `auditlake export hyper` again")
            for name in marts:
                source = f"{_q('source')}.{_q(SCHEMA)}.{_q(name)}"
                action = {"source-schema": SCHEMA, "source-table": name, "target-schema": SCHEMA, "target-table": name}
                since = published[name].get("watermark")
                if published[name]["mode"] == "upsert" and name in keys:
                    where = f" WHERE {_q(WATERMARK)} > TIMESTAMP {_sql_text(since.replace('T', ' '))}" if since else ""
                    action |= {
                        "action": "upsert",
                        "condition": {"op": "eq", "target-col": keys[name], "source-col": keys[name]},
                    }
                else:
                    where = ""
                    action["action"] = "replace"
                target = f"{_q('payload')}.{_q(SCHEMA)}.{_q(name)}"
                conn.execute_command(f"CREATE TABLE {target} AS SELECT * FROM {source}{where}")
                rows += conn.execute_scalar_query(f"SELECT count(*) FROM {target}")
                actions.append(action)
            conn.catalog.detach_database("source")
            conn.catalog.detach_database("payload")
    return actions, rows


def _source_tables(conn) -> set[str]:
    """The tables of schema Extract in the attached source file (Hyper has no information_schema)."""
    from tableauhyperapi import SchemaName

    if SCHEMA not in {str(s.name.unescaped) for s in conn.catalog.get_schema_names("source")}:
        return set()
    return {str(t.name.unescaped) for t in conn.catalog.get_table_names(SchemaName("source", SCHEMA))}


def _sign_in(cfg: Config, where: dict[str, str]):
    import tableauserverclient as TSC

    auth = TSC.PersonalAccessTokenAuth(
        secret(cfg, "tableau.token_name_env"), secret(cfg, "tableau.token_secret_env"), site_id=where["site"]
    )
    server = TSC.Server(where["server_url"], use_server_version=True, http_options={"timeout": 120})
    try:
        server.auth.sign_in(auth)
    except TSC.FailedSignInError as exc:
        raise PublishError(
            f"Tableau refused the personal access token for site '{where['site'] or 'Default'}' "
            f"at {where['server_url']} ({exc.code}: {exc.summary}): check tableau.token_name_env "
            "and tableau.token_secret_env"
        ) from exc
    except TSC.ServerResponseError as exc:
        raise PublishError(_refusal("sign-in", where, exc)) from exc
    return server


def _refusal(step: str, where: dict[str, str], exc) -> str:
    code = str(getattr(exc, "code", ""))
    if code.startswith("403"):
        return (
            f"Tableau refused the {step} on site '{where['site'] or 'Default'}' ({code}: {exc.summary}): "
            "the site or the token's user has no REST API access to it"
        )
    return f"Tableau answered the {step} with {code}: {exc.summary} ({exc.detail})"


def _project_id(server, where: dict[str, str]) -> str:
    import tableauserverclient as TSC

    for project in TSC.Pager(server.projects):
        if project.name == where["project"]:
            return project.id
    raise PublishError(
        f"no project '{where['project']}' on site '{where['site'] or 'Default'}': create it in "
        "Tableau or set tableau.project"
    )


def publish(cfg: Config, hyper_file: Path, log=print) -> PublishReport:
    """Bring the published data source up to date with ``hyper_file`` (see the module's doc)."""
    import requests
    import tableauserverclient as TSC
    from tableauserverclient.server.endpoint.exceptions import InternalServerError, NonXMLResponseError

    started = time.monotonic()
    where = target(cfg)
    if not hyper_file.is_file():
        raise InputError(f"no Hyper file at {hyper_file}: run `auditlake export hyper` first")
    state_file = hyper_file.with_name(STATE_FILE)
    published = json.loads(state_file.read_text(encoding="utf-8")) if state_file.is_file() else None
    marks = _read_file_marks(hyper_file)
    mode, changed = plan(published, marks, where)
    report = PublishReport(mode, (published or {}).get("datasource_id"))
    if mode == "nothing":
        report.seconds = time.monotonic() - started
        log(report.summary)
        return report
    try:
        server = _sign_in(cfg, where)
        try:
            if mode == "update" and not _update(cfg, server, hyper_file, changed, published["marks"], where, report):
                log(f"publish: data source {report.datasource_id} is gone from Tableau: publishing it whole")
                report.mode = "overwrite"
            if report.mode == "overwrite":
                _overwrite(server, hyper_file, where, report)
        except TSC.ServerResponseError as exc:
            raise PublishError(_refusal("request", where, exc)) from exc
        finally:
            server.auth.sign_out()
    except (requests.exceptions.RequestException, NonXMLResponseError, InternalServerError) as exc:
        raise PublishError(
            f"Tableau at {where['server_url']} did not answer as expected ({type(exc).__name__}: "
            f"{one_line(exc)[:200]}); the next run tries again"
        ) from exc
    state = {"target": where, "datasource_id": report.datasource_id, "marks": marks}
    write_json_whole(state_file, state)
    report.seconds = time.monotonic() - started
    log(report.summary)
    return report


def export_and_publish(spark, cfg: Config, out: str | None = None, log=print) -> PublishReport:
    """``auditlake publish``: the Hyper export brought up to date, then published. The caller holds the
    refresh lock (the export reads the analysts' tables a refresh rewrites)."""
    return publish(cfg, export_hyper(spark, cfg, out=out, log=log).path, log=log)


def _overwrite(server, hyper_file: Path, where: dict[str, str], report: PublishReport) -> None:
    import tableauserverclient as TSC

    package = write_tdsx(hyper_file)
    item = TSC.DatasourceItem(_project_id(server, where), name=where["datasource_name"])
    try:
        done = server.datasources.publish(item, str(package), TSC.Server.PublishMode.Overwrite)
    except TSC.ServerResponseError as exc:
        raise PublishError(_refusal("publish", where, exc)) from exc
    report.datasource_id = done.id


def _update(
    cfg: Config,
    server,
    hyper_file: Path,
    changed: list[str],
    published_marks: dict,
    where: dict[str, str],
    report: PublishReport,
) -> bool:
    """The changed marts sent with "update data in Hyper data source"; False: the data source is gone."""
    import tableauserverclient as TSC

    payload = hyper_file.with_name(PAYLOAD_FILE)
    report.actions, report.rows = build_payload(hyper_file, payload, changed, published_marks)
    timeout = cfg.settings.tableau.job_timeout_seconds
    try:
        job = server.datasources.update_hyper_data(
            report.datasource_id, request_id=uuid.uuid4().hex, actions=report.actions, payload=str(payload)
        )
        server.jobs.wait_for_job(job, timeout=float(timeout))
    except TSC.ServerResponseError as exc:
        if str(exc.code).startswith("404"):  # deleted in Tableau since the last publish
            return False
        raise PublishError(_refusal("update of the data source's data", where, exc)) from exc
    except TSC.JobFailedException as exc:
        raise PublishError(
            f"Tableau's job updating data source {report.datasource_id} failed: {exc}; "
            "the next run sends the same rows again"
        ) from exc
    except TimeoutError as exc:
        raise PublishError(
            f"Tableau's job updating data source {report.datasource_id} did not end in {timeout}s; "
            "the next run sends the same rows again"
        ) from exc
    finally:
        payload.unlink(missing_ok=True)
    return True
