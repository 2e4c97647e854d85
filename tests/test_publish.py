"""``auditlake publish`` against a Tableau REST API on loopback (auditlake_devtools/tableau_server.py), with
``tableauserverclient`` itself on the client side: what reaches the server on a first publish, on a
publish with nothing new, on an update of what changed, and when Tableau refuses or a job fails.

The Hyper file is built here the way ``auditlake export hyper`` leaves one (tables in schema
``Extract``, the marks table through export's own ``_write_marks``): no Spark."""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from datetime import datetime
from pathlib import Path

import pytest
from tableauhyperapi import Connection, CreateMode, HyperProcess, Telemetry

from auditlake_devtools.tableau_server import NO_API_ACCESS, TableauServer
from pipelines.config.load import load_config
from pipelines.hyper.export import META, SCHEMA, _q, _sql_text, _write_marks, hyper_path, incremental_keys
from pipelines.hyper.publish import PAYLOAD_FILE, STATE_FILE, PublishError, publish
from pipelines.hyper.tdsx import EXTRACTS_DIR, TDS_FILE, TDSX_FILE
from tests.lake import variant_environ

SECURITY = "6b1a0a5e-0000-4000-8000-5ec0000000a1"
DATASOURCE_ID = "d5000000-0000-4000-8000-00000000da7a"
TOKEN_NAME, TOKEN = "auditlake-publisher", "pat-secret-for-tests"

COLUMNS = {
    "fct_logins": "event_id text, outcome text, silver_ingest_ts timestamp, site_luid text, user_luid text, "
    "login_method text",
    "dim_users": "site_luid text, user_luid text, user_name text, site_role text",
    "dim_sites": "site_luid text, tenant_name text, silver_ingest_ts timestamp",
}
SIGNATURES = {
    name: ",".join(f"{c.split()[0]}:{'string' if c.split()[1] == 'text' else c.split()[1]}" for c in cols.split(", "))
    for name, cols in COLUMNS.items()
}
T0 = datetime(2024, 5, 1, 10, 0)
LOGINS = [
    ("e1", "success", datetime(2024, 5, 1, 9, 0), "s1", "u1", "password"),
    ("e2", "failure", datetime(2024, 5, 1, 9, 30), "s1", "u2", "password"),
    ("e3", "success", T0, "s1", "u1", "pat"),
]
USERS = [("s1", "u1", "alice", "SiteAdministratorCreator"), ("s1", "u2", "bob", "Viewer")]
SITES = [("s1", "Acme", datetime(2024, 4, 30, 8, 0))]
MARKS = {
    "fct_logins": {"mode": "upsert", "signature": SIGNATURES["fct_logins"], "source_version": 3, "watermark": T0},
    "dim_users": {"mode": "replace", "signature": SIGNATURES["dim_users"], "source_version": 2},
    "dim_sites": {
        "mode": "upsert",
        "signature": SIGNATURES["dim_sites"],
        "source_version": 1,
        "watermark": datetime(2024, 4, 30, 8, 0),
    },
    META: {"key_id": "key-1", "erasures": 0},
}
# what the next export brings: two new sign-ins, e2 rewritten by gold under its key (newer timestamp), a
# user added and one's role changed
T1 = datetime(2024, 5, 2, 11, 0)
NEW_LOGINS = [
    ("e2", "success", datetime(2024, 5, 2, 8, 0), "s1", "u2", "password"),
    ("e4", "failure", datetime(2024, 5, 2, 10, 0), "s1", "u3", "password"),
    ("e5", "success", T1, "s1", "u1", "saml"),
]
NEW_USERS = [
    ("s1", "u1", "alice", "SiteAdministratorExplorer"),
    ("s1", "u2", "bob", "Viewer"),
    ("s1", "u3", "carol", "Creator"),
]
UPSERT_LOGINS = {
    "action": "upsert",
    "source-schema": SCHEMA,
    "source-table": "fct_logins",
    "target-schema": SCHEMA,
    "target-table": "fct_logins",
    "condition": {"op": "eq", "target-col": "event_id", "source-col": "event_id"},
}
REPLACE_USERS = {
    "action": "replace",
    "source-schema": SCHEMA,
    "source-table": "dim_users",
    "target-schema": SCHEMA,
    "target-table": "dim_users",
}
SIGNED_IN = ["signin", "server_info"]


def _literal(value) -> str:
    return f"TIMESTAMP {_sql_text(value.isoformat(sep=' '))}" if isinstance(value, datetime) else _sql_text(value)


def _insert(name: str, rows) -> list[str]:
    return [f"INSERT INTO {_q(SCHEMA)}.{_q(name)} VALUES ({', '.join(_literal(v) for v in row)})" for row in rows]


def _hyper(path: Path, statements: list[str], marks: dict | None = None, create: bool = False) -> None:
    with HyperProcess(Telemetry.DO_NOT_SEND_USAGE_DATA_TO_TABLEAU, parameters={"log_config": ""}) as hyper:
        mode = CreateMode.CREATE_AND_REPLACE if create else CreateMode.NONE
        with Connection(hyper.endpoint, str(path), mode) as conn:
            for statement in statements:
                conn.execute_command(statement)
            if marks is not None:
                _write_marks(conn, marks)


def _rows(path: Path) -> dict[str, list[tuple]]:
    """Table of schema Extract -> its rows (timestamps as datetimes), sorted; and '<schemas>' -> the schemas."""
    with HyperProcess(Telemetry.DO_NOT_SEND_USAGE_DATA_TO_TABLEAU, parameters={"log_config": ""}) as hyper:
        with Connection(hyper.endpoint, str(path)) as conn:
            out = {"<schemas>": sorted(str(s.name.unescaped) for s in conn.catalog.get_schema_names())}
            for table in conn.catalog.get_table_names(SCHEMA):
                rows = conn.execute_list_query(f"SELECT * FROM {table}")
                out[str(table.name.unescaped)] = sorted(
                    tuple(v.to_datetime() if hasattr(v, "to_datetime") else v for v in row) for row in rows
                )
    return out


def _export_changes(path: Path) -> dict:
    """What ``auditlake export hyper`` does to the file when the fact and dim_users moved: the fact's new
    rows upserted on event_id, dim_users replaced, their marks bumped; -> the new marks."""
    marks = {name: dict(m) for name, m in MARKS.items()}
    marks["fct_logins"] |= {"source_version": 4, "watermark": T1}
    marks["dim_users"]["source_version"] = 3
    logins, users = f"{_q(SCHEMA)}.{_q('fct_logins')}", f"{_q(SCHEMA)}.{_q('dim_users')}"
    keys = ", ".join(_sql_text(row[0]) for row in NEW_LOGINS)
    _hyper(
        path,
        [
            f"DELETE FROM {logins} WHERE event_id IN ({keys})",
            *_insert("fct_logins", NEW_LOGINS),
            f"DELETE FROM {users}",
            *_insert("dim_users", NEW_USERS),
        ],
        marks,
    )
    return marks


def _state(path: Path) -> dict:
    return json.loads(path.with_name(STATE_FILE).read_text(encoding="utf-8"))


def _json_marks(marks: dict) -> dict:
    """Marks as the state file holds them: watermarks in ISO text, null where there is none (the META
    row included: publish reads every row of the marks table alike)."""
    return {
        name: {**m, "watermark": m["watermark"].isoformat() if m.get("watermark") else None}
        for name, m in marks.items()
    }


@pytest.fixture
def tableau():
    server = TableauServer.start(
        token_name=TOKEN_NAME,
        token_secret=TOKEN,
        datasource_id=DATASOURCE_ID,
        projects={"Default": "p-default", "Finance": "p-finance", "Security": SECURITY},
    )
    yield server
    server.stop()


@pytest.fixture
def setup(tableau, tmp_path, monkeypatch):
    """(config, the Hyper file as the first export left it) on a throwaway data dir; the token in the
    environment, where publish reads it."""
    monkeypatch.setenv("AUDITLAKE_TABLEAU_TOKEN_NAME", TOKEN_NAME)
    monkeypatch.setenv("AUDITLAKE_TABLEAU_TOKEN", TOKEN)
    for name in ("TSC_PAGE_SIZE", "TSC_FILESIZE_LIMIT_MB", "TSC_CHUNK_SIZE_MB"):
        monkeypatch.delenv(name, raising=False)
    environ = variant_environ(tmp_path, "publish")
    environ.setdefault("AUDITLAKE_PSEUDONYM_KEY", "p" * 64)
    environ |= {
        "AUDITLAKE__TABLEAU__SERVER_URL": tableau.url,
        "AUDITLAKE__TABLEAU__SITE": "audit",
        "AUDITLAKE__TABLEAU__PROJECT": "Security",
        "AUDITLAKE__TABLEAU__JOB_TIMEOUT_SECONDS": "30",
        "AUDITLAKE_TABLEAU_TOKEN_NAME": TOKEN_NAME,
        "AUDITLAKE_TABLEAU_TOKEN": TOKEN,
    }
    cfg = load_config("test", environ=environ)
    path = hyper_path(cfg)
    path.parent.mkdir(parents=True)
    assert incremental_keys()["fct_logins"] == "event_id"  # the upsert key publish sends comes from the dbt model
    _hyper(
        path,
        [
            f"CREATE SCHEMA {_q(SCHEMA)}",
            *(f"CREATE TABLE {_q(SCHEMA)}.{_q(name)} ({cols})" for name, cols in COLUMNS.items()),
            *_insert("fct_logins", LOGINS),
            *_insert("dim_users", USERS),
            *_insert("dim_sites", SITES),
        ],
        MARKS,
        create=True,
    )
    return cfg, path


@pytest.fixture
def published(setup, tableau):
    """``setup`` after a first publish; the server's record emptied."""
    cfg, path = setup
    publish(cfg, path, log=lambda _line: None)
    tableau.received.clear()
    return cfg, path


def test_first_publish_sends_the_package_whole_in_overwrite_mode(setup, tableau, monkeypatch):
    cfg, path = setup
    monkeypatch.setenv("TSC_PAGE_SIZE", "2")  # "Security" is on the projects' second page
    lines = []
    report = publish(cfg, path, log=lines.append)
    assert tableau.ops() == SIGNED_IN + ["projects", "projects", "publish", "signout"]
    assert all(r.status < 300 for r in tableau.received), [(r.op, r.status) for r in tableau.received]
    assert tableau.of("signin")[0].details == {"token_name": TOKEN_NAME, "site": "audit"}
    assert [r.query["pageNumber"] for r in tableau.of("projects")] == ["1", "2"]
    sent = tableau.of("publish")[0]
    assert sent.query == {"datasourceType": "tdsx", "overwrite": "true"}
    assert sent.details["mode"] == "overwrite" and sent.details["file_name"] == TDSX_FILE
    assert sent.details["project_id"] == SECURITY and sent.details["name"] == cfg.get("tableau.datasource_name")
    with zipfile.ZipFile(io.BytesIO(sent.details["file"])) as package:
        assert sorted(package.namelist()) == sorted([TDS_FILE, f"{EXTRACTS_DIR}/{path.name}"])
        assert package.read(f"{EXTRACTS_DIR}/{path.name}") == path.read_bytes()
        tds = package.read(TDS_FILE).decode("utf-8")
    assert all(f"[{SCHEMA}].[{name}]" in tds for name in COLUMNS)
    assert report.mode == "overwrite" and report.datasource_id == DATASOURCE_ID
    assert lines == [report.summary] and "published whole (Overwrite)" in report.summary
    state = _state(path)
    assert state["datasource_id"] == DATASOURCE_ID and state["marks"] == _json_marks(MARKS)
    assert state["target"] == {
        "server_url": tableau.url,
        "site": "audit",
        "project": "Security",
        "datasource_name": cfg.get("tableau.datasource_name"),
    }


def test_a_package_of_64_mb_or_more_goes_through_file_uploads(setup, tableau, monkeypatch):
    """TSC's chunked publish (the limit lowered to 0 MB so that this small file takes that path)."""
    cfg, path = setup
    monkeypatch.setenv("TSC_FILESIZE_LIMIT_MB", "0")
    publish(cfg, path, log=lambda _line: None)
    assert tableau.ops() == SIGNED_IN + ["projects", "upload_initiate", "upload_append", "publish", "signout"]
    sent = tableau.of("publish")[0]
    assert sent.query["uploadSessionId"] == tableau.of("upload_initiate")[0].details["upload_session_id"]
    assert sent.details["mode"] == "overwrite" and sent.details["project_id"] == SECURITY
    assert sent.details["file"] == path.with_name(TDSX_FILE).read_bytes()
    assert _state(path)["datasource_id"] == DATASOURCE_ID


def test_a_second_publish_with_nothing_new_sends_nothing(published, tableau):
    cfg, path = published
    before = path.with_name(STATE_FILE).read_bytes()
    report = publish(cfg, path, log=lambda _line: None)
    assert tableau.received == []  # not even a sign-in
    assert report.mode == "nothing" and "nothing new" in report.summary
    assert path.with_name(STATE_FILE).read_bytes() == before


def _assert_the_update(tableau, polls: int = 1) -> dict:
    """One update of the new and rewritten sign-ins (upsert) and the users (replace), its job queried
    ``polls`` times; -> what it carried."""
    assert tableau.ops() == SIGNED_IN + ["upload_initiate", "upload_append", "update"] + ["job"] * polls + ["signout"]
    assert all(r.status < 300 for r in tableau.received), [(r.op, r.status) for r in tableau.received]
    update = tableau.of("update")[0]
    assert update.path.endswith(f"/datasources/{DATASOURCE_ID}/data")
    assert update.query == {"uploadSessionId": tableau.of("upload_initiate")[0].details["upload_session_id"]}
    assert sorted(update.details["actions"], key=lambda a: a["target-table"]) == [REPLACE_USERS, UPSERT_LOGINS]
    assert re.fullmatch(r"[0-9a-f]{32}", update.details["request_id"])
    assert update.headers["requestid"] == update.details["request_id"]
    assert update.headers["content-type"] == "application/json"
    return update.details


def _payload(tmp_path: Path, payload: bytes) -> dict[str, list[tuple]]:
    received = tmp_path / f"received-{len(list(tmp_path.glob('received-*')))}.hyper"
    received.write_bytes(payload)
    return _rows(received)


def test_what_changed_goes_as_one_update_and_moves_the_marks(published, tableau, tmp_path):
    cfg, path = published
    marks = _export_changes(path)
    report = publish(cfg, path, log=lambda _line: None)
    details = _assert_the_update(tableau)
    rows = _payload(tmp_path, details["payload"])
    # the new sign-ins and e2 as gold rewrote it; the users whole; dim_sites (unchanged) not sent
    assert set(rows) == {"<schemas>", "fct_logins", "dim_users"}
    assert "auditlake" not in rows["<schemas>"]  # the marks stay in the file
    assert rows["fct_logins"] == sorted(NEW_LOGINS)
    assert rows["dim_users"] == sorted(NEW_USERS)
    assert report.mode == "update" and report.rows == len(NEW_LOGINS) + len(NEW_USERS)
    assert "6 rows into data source" in report.summary
    state = _state(path)
    assert state["datasource_id"] == DATASOURCE_ID and state["marks"] == _json_marks(marks)
    assert not path.with_name(PAYLOAD_FILE).exists()
    tableau.received.clear()
    assert publish(cfg, path, log=lambda _line: None).mode == "nothing" and tableau.received == []


def test_a_failed_job_leaves_the_marks_and_the_next_run_sends_the_same_rows(published, tableau, tmp_path):
    cfg, path = published
    before = path.with_name(STATE_FILE).read_bytes()
    marks = _export_changes(path)
    tableau.job_finish_code = 1
    with pytest.raises(PublishError, match="failed.*the next run sends the same rows again"):
        publish(cfg, path, log=lambda _line: None)
    failed = _assert_the_update(tableau)
    assert path.with_name(STATE_FILE).read_bytes() == before
    assert not path.with_name(PAYLOAD_FILE).exists()
    tableau.received.clear()
    tableau.job_finish_code, tableau.job_polls = 0, 1  # succeeds now, after one "in progress"
    report = publish(cfg, path, log=lambda _line: None)
    again = _assert_the_update(tableau, polls=2)
    assert again["actions"] == failed["actions"] and again["request_id"] != failed["request_id"]
    assert _payload(tmp_path, again["payload"]) == _payload(tmp_path, failed["payload"])
    assert report.mode == "update" and _state(path)["marks"] == _json_marks(marks)


def test_a_refused_update_leaves_the_marks(published, tableau):
    cfg, path = published
    before = path.with_name(STATE_FILE).read_bytes()
    _export_changes(path)
    tableau.refuse["update"] = NO_API_ACCESS
    with pytest.raises(PublishError, match="no REST API access"):
        publish(cfg, path, log=lambda _line: None)
    assert tableau.ops() == SIGNED_IN + ["upload_initiate", "upload_append", "update", "signout"]
    assert path.with_name(STATE_FILE).read_bytes() == before


def test_a_wrong_token_is_named(setup, tableau):
    cfg, path = setup
    tableau.token_secret = "another-secret"
    with pytest.raises(PublishError, match="refused the personal access token for site 'audit'.*401001"):
        publish(cfg, path, log=lambda _line: None)
    assert tableau.ops() == ["signin"] and tableau.received[0].status == 401
    assert not path.with_name(STATE_FILE).exists()


def test_a_missing_project_is_named(setup, tableau):
    cfg, path = setup
    del tableau.projects["Security"]
    with pytest.raises(PublishError, match="no project 'Security' on site 'audit'"):
        publish(cfg, path, log=lambda _line: None)
    assert tableau.ops() == SIGNED_IN + ["projects", "signout"]
    assert not path.with_name(STATE_FILE).exists()


def test_a_site_without_api_access_is_named(setup, tableau):
    cfg, path = setup
    tableau.refuse["signin"] = NO_API_ACCESS
    with pytest.raises(PublishError, match="403157.*no REST API access"):
        publish(cfg, path, log=lambda _line: None)
    assert tableau.ops() == ["signin"] and tableau.received[0].status == 403
    assert not path.with_name(STATE_FILE).exists()


def test_a_new_pseudonym_key_publishes_whole_again(published, tableau):
    """A new key rewrote every pseudonym (export rewrote the file whole): an update cannot say that."""
    cfg, path = published
    marks = _export_changes(path) | {META: {"key_id": "key-2", "erasures": 0}}
    _hyper(path, [], marks)
    report = publish(cfg, path, log=lambda _line: None)
    assert tableau.ops() == SIGNED_IN + ["projects", "publish", "signout"]
    sent = tableau.of("publish")[0]
    assert sent.details["mode"] == "overwrite" and sent.details["project_id"] == SECURITY
    with zipfile.ZipFile(io.BytesIO(sent.details["file"])) as package:
        assert package.read(f"{EXTRACTS_DIR}/{path.name}") == path.read_bytes()
    assert report.mode == "overwrite" and report.datasource_id == DATASOURCE_ID  # Overwrite keeps the id
    assert _state(path)["marks"] == _json_marks(marks)


def test_the_token_comes_from_the_environment(setup, tableau, monkeypatch):
    """publish reads the secret where tableau.token_secret_env points, at run time (pipelines.config.load.secret)."""
    cfg, path = setup
    monkeypatch.setitem(os.environ, "AUDITLAKE_TABLEAU_TOKEN", "changed-since")
    with pytest.raises(PublishError, match="personal access token"):
        publish(cfg, path, log=lambda _line: None)


def test_a_data_source_deleted_in_tableau_is_published_whole_again(published, tableau):
    cfg, path = published
    marks = _export_changes(path)
    tableau.datasources.clear()  # someone deleted it in Tableau since the last publish
    lines = []
    report = publish(cfg, path, log=lines.append)
    assert report.mode == "overwrite" and any("is gone from Tableau" in line for line in lines)
    ops = tableau.ops()
    assert "update" in ops and ops.index("publish") > ops.index("update")
    assert _state(path)["marks"] == _json_marks(marks) and _state(path)["datasource_id"] == report.datasource_id


def test_a_server_out_of_reach_is_one_line_and_moves_nothing(published, tableau):
    cfg, path = published
    before = path.with_name(STATE_FILE).read_bytes()
    _export_changes(path)
    tableau.stop()
    with pytest.raises(PublishError, match=r"did not answer as expected \(ConnectionError.*the next run tries again"):
        publish(cfg, path, log=lambda _line: None)
    assert path.with_name(STATE_FILE).read_bytes() == before
