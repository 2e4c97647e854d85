"""`auditlake alerts` against a real HTTP receiver on loopback: each new detection of gold.rpt_detections
is delivered once, across re-runs, rebuilds of the report and a receiver that is down; the state is
ops.alert_deliveries. Each test has a lake of its own and writes the report itself (the dbt model is
not needed)."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest

from auditlake_devtools.pg_server import free_port
from auditlake_devtools.webhook_receiver import WebhookReceiver
from pipelines.alerts.webhook import headline, payload, post_json, send_alerts, skip_backlog
from pipelines.config.load import ConfigError, load_config
from pipelines.lake.delta_tables import ensure_schema, table_version
from pipelines.lake.table_names import tables
from pipelines.personal_data.erase.person import Person, token_for
from pipelines.personal_data.erase.rewrite import erasable_tables, pseudonymise_table
from pipelines.refresh import RefreshReport, send_alerts_after_gold
from tests.lake import use_variant, variant_environ

DETECTIONS_SCHEMA = (
    "detection_id string, detection string, report string, severity string, detected_at timestamp, "
    "site_luid string, user_key string, summary string, evidence_event_ids array<string>"
)
START = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)
SITE = "5f0c7d2e-1a2b-4c3d-8e9f-0a1b2c3d4e5f"


def _quiet(_message: str) -> None:
    pass


def _detection(
    n: int,
    severity: str = "high",
    detection: str = "mass_download",
    user: str | None = None,
    summary: str | None = None,
) -> dict:
    return {
        "detection_id": f"det-{n:03d}",
        "detection": detection,
        "report": f"rpt_{detection}s",
        "severity": severity,
        "detected_at": START + timedelta(minutes=n),
        "site_luid": SITE,
        "user_key": user or f"user{n}@example.com",
        "summary": summary or f"{100 + n} views downloaded in 10 minutes",
        "evidence_event_ids": [f"evt-{n}-a", f"evt-{n}-b"],
    }


def _lake(lake_dir, name: str, **alerts) -> object:
    environ = variant_environ(lake_dir, name)
    for key, value in alerts.items():
        environ[f"AUDITLAKE__ALERTS__{key.upper()}"] = str(value)
    return load_config("test", environ=environ)


def _rebuild_detections(spark, cfg, detections: list[dict]) -> None:
    """gold.rpt_detections replaced whole, as dbt rebuilds a table model."""
    t = tables(cfg)
    ensure_schema(spark, t.gold_schema)
    rows = [
        tuple(
            d[c]
            for c in (
                "detection_id",
                "detection",
                "report",
                "severity",
                "detected_at",
                "site_luid",
                "user_key",
                "summary",
                "evidence_event_ids",
            )
        )
        for d in detections
    ]
    (
        spark.createDataFrame(rows, DETECTIONS_SCHEMA)
        .write.format("delta")
        .mode("overwrite")
        .option("overwriteSchema", "true")
        .saveAsTable(t.detections)
    )


def _received_ids(receiver: WebhookReceiver) -> list[str]:
    return [json.loads(body)["detection_id"] for _headers, body in receiver.received]


def _states(spark, cfg) -> dict[str, dict]:
    return {r["detection_id"]: r.asDict() for r in spark.table(tables(cfg).alert_deliveries).collect()}


@pytest.fixture
def receiver():
    server = WebhookReceiver.start()
    yield server
    server.stop()


def test_each_new_detection_is_delivered_once_across_two_runs(spark, lake_dir, receiver):
    cfg = _lake(lake_dir, "alerts_once")
    detections = [_detection(n) for n in range(3)]
    _rebuild_detections(spark, cfg, detections)

    first = send_alerts(spark, cfg, receiver.url, log=_quiet)
    assert (first.new, first.sent, first.pending, first.last_error) == (3, 3, 0, None)
    assert first.summary == "alerts: 3 new, 3 sent, 0 pending"
    assert _received_ids(receiver) == ["det-000", "det-001", "det-002"]  # oldest first
    assert [h["Idempotency-Key"] for h, _ in receiver.received] == _received_ids(receiver)
    assert all(h["Content-Type"].startswith("application/json") for h, _ in receiver.received)
    states = _states(spark, cfg)
    assert {s["status"] for s in states.values()} == {"sent"}
    assert all(s["attempts"] == 1 and s["sent_at"] is not None and s["last_error"] is None for s in states.values())
    for _headers, body in receiver.received:  # the table keeps the very body the receiver got
        assert states[json.loads(body)["detection_id"]]["payload"] == body.decode("utf-8")

    version = table_version(spark, tables(cfg).alert_deliveries)
    second = send_alerts(spark, cfg, receiver.url, log=_quiet)
    assert (second.new, second.sent, second.pending) == (0, 0, 0)
    assert len(receiver.received) == 3, "nothing is sent twice"
    assert table_version(spark, tables(cfg).alert_deliveries) == version, "a run with nothing to do commits nothing"


def test_a_receiver_that_is_down_leaves_alerts_pending_and_the_next_run_delivers_each_once(spark, lake_dir, receiver):
    cfg = _lake(lake_dir, "alerts_outage")
    detections = [_detection(n) for n in range(4)]
    _rebuild_detections(spark, cfg, detections)
    lines: list[str] = []

    receiver.mode = "down"  # 503
    down = send_alerts(spark, cfg, receiver.url, log=lines.append)
    assert (down.new, down.sent, down.failed, down.pending) == (4, 0, 1, 4)
    assert (
        down.summary == "alerts: 4 new, 0 sent, 4 pending (last error: HTTP 503 Service Unavailable: down for "
        "maintenance)"
    )
    assert "alerts: the receiver is unavailable: 3 more left pending for the next run" in lines
    states = _states(spark, cfg)
    assert {s["status"] for s in states.values()} == {"pending"} and receiver.received == []
    assert states["det-000"]["attempts"] == 1 and states["det-000"]["last_error"].startswith("HTTP 503")
    assert all(states[f"det-00{n}"]["attempts"] == 0 for n in (1, 2, 3)), "not tried: not counted"

    closed = f"http://127.0.0.1:{free_port()}/hook"  # nothing listens there: connection refused
    refused = send_alerts(spark, cfg, closed, log=_quiet)
    assert (refused.new, refused.sent, refused.pending) == (0, 0, 4)
    assert refused.last_error.startswith("cannot reach the receiver:") and "refused" in refused.last_error
    states = _states(spark, cfg)
    assert {s["status"] for s in states.values()} == {"pending"}
    assert states["det-000"]["attempts"] == 2 and "refused" in states["det-000"]["last_error"]

    receiver.mode = "up"
    back = send_alerts(spark, cfg, receiver.url, log=_quiet)
    assert (back.new, back.sent, back.pending, back.last_error) == (0, 4, 0, None)
    again = send_alerts(spark, cfg, receiver.url, log=_quiet)
    assert (again.new, again.sent, again.pending) == (0, 0, 0)
    received = _received_ids(receiver)
    assert len(received) == len(set(received)), f"delivered twice: {received}"
    assert set(received) == {d["detection_id"] for d in detections}
    states = _states(spark, cfg)
    assert {s["status"] for s in states.values()} == {"sent"}
    assert states["det-000"]["attempts"] == 3 and "refused" in states["det-000"]["last_error"]  # its history kept


def test_a_detection_in_a_later_rebuild_is_sent_and_the_old_ones_are_not(spark, lake_dir, receiver):
    cfg = _lake(lake_dir, "alerts_rebuild")
    _rebuild_detections(spark, cfg, [_detection(0), _detection(1)])
    assert send_alerts(spark, cfg, receiver.url, log=_quiet).sent == 2

    _rebuild_detections(spark, cfg, [_detection(0), _detection(1), _detection(2)])  # the report, rebuilt whole
    later = send_alerts(spark, cfg, receiver.url, log=_quiet)
    assert (later.new, later.sent) == (1, 1)
    # det-000 gone from the report (its window moved on), det-001 rebuilt with another summary: known ids
    _rebuild_detections(spark, cfg, [_detection(1, summary="recounted"), _detection(2), _detection(3)])
    last = send_alerts(spark, cfg, receiver.url, log=_quiet)
    assert (last.new, last.sent) == (1, 1)
    assert _received_ids(receiver) == ["det-000", "det-001", "det-002", "det-003"]
    assert set(_states(spark, cfg)) == {"det-000", "det-001", "det-002", "det-003"}


def test_min_severity_filters_and_max_per_run_caps(spark, lake_dir, receiver):
    cfg = _lake(lake_dir, "alerts_severity", min_severity="high", max_per_run=2)
    severities = ["low", "medium", "high", "critical", "high", "medium", "critical"]
    _rebuild_detections(spark, cfg, [_detection(n, severity=s) for n, s in enumerate(severities)])
    lines: list[str] = []
    first = send_alerts(spark, cfg, receiver.url, log=lines.append)
    assert (first.new, first.sent, first.pending) == (4, 2, 2)
    assert "alerts: alerts.max_per_run (2) reached: 2 more go in the next run" in lines
    second = send_alerts(spark, cfg, receiver.url, log=_quiet)
    assert (second.new, second.sent, second.pending) == (0, 2, 0)
    assert _received_ids(receiver) == ["det-002", "det-003", "det-004", "det-006"]
    assert {json.loads(b)["severity"] for _h, b in receiver.received} == {"high", "critical"}
    assert set(_states(spark, cfg)) == {"det-002", "det-003", "det-004", "det-006"}, "below it: never queued"


def test_the_payload_is_json_with_a_slack_text_line_and_the_detection_fields():
    d = _detection(
        7,
        severity="critical",
        detection="failed_login_burst",
        user="ana.silva@example.com",
        summary="12 failed sign-ins\nin 5 minutes from <!channel> & co",
    )
    d["detected_at"] = datetime(2026, 6, 1, 10, 7, 30, 250000, tzinfo=UTC)
    body = json.loads(payload(d))
    assert list(body) == [
        "text",
        "detection_id",
        "detection",
        "report",
        "severity",
        "detected_at",
        "site_luid",
        "user_key",
        "summary",
        "evidence_event_ids",
    ]
    assert body["text"] == (
        "[CRITICAL] failed_login_burst | ana.silva@example.com | 12 failed sign-ins in 5 minutes "
        "from &lt;!channel&gt; &amp; co | 2026-06-01T10:07:30.250Z"
    )
    assert "\n" not in body["text"]
    assert body["detected_at"] == "2026-06-01T10:07:30.250Z"
    assert body["summary"] == d["summary"] and body["evidence_event_ids"] == ["evt-7-a", "evt-7-b"]
    assert {k: body[k] for k in ("detection_id", "detection", "report", "severity", "site_luid", "user_key")} == {
        "detection_id": "det-007",
        "detection": "failed_login_burst",
        "report": "rpt_failed_login_bursts",
        "severity": "critical",
        "site_luid": SITE,
        "user_key": "ana.silva@example.com",
    }
    # no person: the site says where; no site either: the tenant
    assert headline({**d, "user_key": None}).split(" | ")[1] == f"site {SITE}"
    assert headline({**d, "user_key": None, "site_luid": None}).split(" | ")[1] == "tenant"
    whole = json.loads(
        payload({**d, "detected_at": datetime(2026, 6, 1, 10, 7, tzinfo=UTC), "evidence_event_ids": None})
    )
    assert whole["detected_at"] == "2026-06-01T10:07:00Z" and whole["evidence_event_ids"] == []


def test_credentials_in_the_url_go_as_basic_auth_and_never_into_an_error(receiver):
    with_token = receiver.url.replace("http://", "http://x:hec%2Ftoken@") + "?sourcetype=_json"
    assert post_json(with_token, '{"text": "hi"}', "det-1", 5).delivered
    headers, body = receiver.received[0]
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"x:hec/token").decode()
    assert body == b'{"text": "hi"}' and headers["Idempotency-Key"] == "det-1"
    receiver.mode = "down"
    reply = post_json(with_token, "{}", "det-2", 5)
    assert not reply.delivered and reply.receiver_down and "token" not in reply.error
    refused = post_json(f"http://x:hec-token@127.0.0.1:{free_port()}/hook", "{}", "det-3", 5)
    assert refused.receiver_down and "token" not in refused.error


def test_a_redirect_is_not_a_delivery(receiver):
    """urllib would follow a 302 with a GET, whose 200 would read as delivered."""
    receiver.mode = "redirect"
    reply = post_json(receiver.url, "{}", "det-1", 5)
    assert not reply.delivered and not reply.receiver_down
    assert reply.error == "HTTP 302 Found: moved (redirects are not followed: set the final URL)"


def test_an_answer_after_the_timeout_is_retried_with_the_same_idempotency_key(spark, lake_dir, receiver):
    """The limit of exactly-once: a receiver that took the POST but answered late gets it again; the
    Idempotency-Key lets it drop the copy."""
    cfg = _lake(lake_dir, "alerts_timeout", timeout_seconds=1)
    _rebuild_detections(spark, cfg, [_detection(0)])
    receiver.mode, receiver.slow_seconds = "slow", 3
    late = send_alerts(spark, cfg, receiver.url, log=_quiet)
    assert (late.sent, late.pending, late.last_error) == (0, 1, "no answer within 1s")
    receiver.mode = "up"
    assert send_alerts(spark, cfg, receiver.url, log=_quiet).sent == 1
    keys = [h["Idempotency-Key"] for h, _ in receiver.received]
    assert keys == ["det-000", "det-000"] and len(set(b for _h, b in receiver.received)) == 1


def test_erasure_pseudonymises_the_payloads(spark, lake_dir, receiver):
    cfg = _lake(lake_dir, "alerts_erase")
    _rebuild_detections(spark, cfg, [_detection(0, user="ana.silva@example.com"), _detection(1)])
    send_alerts(spark, cfg, receiver.url, log=_quiet)
    t = tables(cfg)
    assert t.alert_deliveries in erasable_tables(spark, cfg)
    person = Person("email", keys={"ana.silva@example.com"})
    tokens = {"ana.silva@example.com": token_for("ana.silva@example.com", "salt")}
    assert pseudonymise_table(spark, t.alert_deliveries, person, tokens) == 1
    payloads = [s["payload"] for s in _states(spark, cfg).values()]
    assert not any("ana.silva" in p for p in payloads)
    assert (
        json.loads(next(p for p in payloads if tokens["ana.silva@example.com"] in p))["user_key"]
        == tokens["ana.silva@example.com"]
    )


def test_the_command_exits_1_while_an_alert_is_pending_and_0_once_sent(spark, lake_dir, receiver, monkeypatch, capsys):
    from pipelines.cli import main

    environ = variant_environ(lake_dir, "alerts_cli")
    use_variant(monkeypatch, lake_dir, "alerts_cli")
    monkeypatch.delenv("AUDITLAKE_ALERTS_WEBHOOK_URL", raising=False)
    assert main(["--env", "test", "alerts"]) == 2
    assert capsys.readouterr().err == (
        "auditlake: configuration error: config key 'alerts.webhook_url_env' names environment variable "
        "AUDITLAKE_ALERTS_WEBHOOK_URL, which is not set\n"
    )
    monkeypatch.setenv("AUDITLAKE_ALERTS_WEBHOOK_URL", "hooks.example.com/secret-token")
    assert main(["--env", "test", "alerts"]) == 2
    err = capsys.readouterr().err
    assert "does not hold an http:// or https:// URL" in err and "secret-token" not in err

    cfg = load_config("test", environ=environ)
    _rebuild_detections(spark, cfg, [_detection(0), _detection(1)])
    assert main(["--env", "test", "alerts", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "alerts: would send det-000: [HIGH] mass_download | user0@example.com" in out
    assert "alerts (dry run): 2 new, 0 sent, 2 pending; 2 would be sent now" in out
    monkeypatch.setenv("AUDITLAKE_ALERTS_WEBHOOK_URL", receiver.url)
    receiver.mode = "down"
    assert main(["--env", "test", "alerts"]) == 1
    out = capsys.readouterr().out
    assert "alerts: 0 new, 0 sent, 2 pending (last error: HTTP 503" in out
    receiver.mode = "up"
    assert main(["--env", "test", "alerts"]) == 0
    out = capsys.readouterr().out
    assert "alerts: sent high mass_download det-000 (attempt 2)" in out and "example.com" not in out
    assert out.splitlines()[-1] == "alerts: 0 new, 2 sent, 0 pending"
    assert _received_ids(receiver) == ["det-000", "det-001"]


def test_refresh_prints_alerts_and_a_webhook_failure_does_not_fail_it(spark, lake_dir, receiver, monkeypatch):
    environ = variant_environ(lake_dir, "alerts_refresh")
    environ["AUDITLAKE__ALERTS__ON_REFRESH"] = "true"
    with pytest.raises(
        ConfigError,
        match=r"'alerts\.webhook_url_env' names environment variable "
        r"AUDITLAKE_ALERTS_WEBHOOK_URL, which is not set: alerts\.on_refresh true",
    ):
        load_config("test", environ={k: v for k, v in environ.items() if k != "AUDITLAKE_ALERTS_WEBHOOK_URL"})
    environ["AUDITLAKE_ALERTS_WEBHOOK_URL"] = receiver.url
    cfg = load_config("test", environ=environ)
    monkeypatch.setenv("AUDITLAKE_ALERTS_WEBHOOK_URL", receiver.url)  # where the refresh reads it
    lines: list[str] = []
    send_alerts_after_gold(spark, cfg, RefreshReport("r1", ["gold"]), lines.append)  # no report yet
    assert lines[-1].startswith(f"alerts: not sent ({tables(cfg).detections} does not exist")
    _rebuild_detections(spark, cfg, [_detection(0)])
    receiver.mode = "down"
    report = RefreshReport("r2", ["gold"])
    send_alerts_after_gold(spark, cfg, report, lines.append)
    assert lines[-1].startswith("alerts: 1 new, 0 sent, 1 pending (last error: HTTP 503")
    receiver.mode = "up"
    send_alerts_after_gold(spark, cfg, report, lines.append)
    assert lines[-1] == "alerts: 0 new, 1 sent, 0 pending" and report.alerts.sent == 1


def test_skip_backlog_records_history_as_skipped_and_later_detections_are_sent(spark, lake_dir, receiver):
    """The first run on a lake with history: --skip-backlog posts nothing and records what is there
    (never queued, or pending after an outage) as skipped; a detection that comes later is sent."""
    cfg = _lake(lake_dir, "alerts_backlog")
    _rebuild_detections(spark, cfg, [_detection(n) for n in range(3)])
    receiver.mode = "down"
    send_alerts(spark, cfg, receiver.url, log=_quiet)  # det-000..002 pending after the outage
    _rebuild_detections(spark, cfg, [_detection(n) for n in range(5)])
    lines: list[str] = []
    assert skip_backlog(spark, cfg, log=lines.append) == 5
    assert lines == [
        "alerts: 5 detection(s) recorded as skipped, never to be posted (2 not queued before, "
        "3 pending); later detections are sent"
    ]
    assert {s["status"] for s in _states(spark, cfg).values()} == {"skipped"}

    receiver.mode = "up"
    _rebuild_detections(spark, cfg, [_detection(n) for n in range(6)])
    later = send_alerts(spark, cfg, receiver.url, log=_quiet)
    assert (later.new, later.sent, later.pending) == (1, 1, 0)
    assert _received_ids(receiver) == ["det-005"]
