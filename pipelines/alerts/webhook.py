"""Alerts: each new detection of ``gold.rpt_detections`` posted once to a webhook (``auditlake alerts``,
and after a refresh's gold layer with ``alerts.on_refresh``).

The state is ``ops.alert_deliveries``, one row per detection ever queued. A run:

1. **Queue**: the detections at or above ``alerts.min_severity`` whose ``detection_id`` the table does
   not hold are MERGEd in as ``pending``, insert-only, each with the JSON body it will be sent with. A
   detection known once is never queued again, whatever later rebuilds of the report hold.
2. **Send**: the pending rows, oldest detection first, at most ``alerts.max_per_run``, each POSTed
   with header ``Idempotency-Key: <detection_id>``. Only a 2xx answer counts as delivered; a receiver
   that is down (connection refused, timeout, 5xx, 429) ends the run's sending, so the rest wait for
   the next run rather than for a timeout each; another 4xx is recorded and the next row is tried.
3. **Record**: one MERGE for the run: ``sent`` (with ``sent_at``) or still ``pending`` with
   ``last_error``, ``attempts`` + 1, ``last_attempt_at``. Rows already ``sent`` are never touched.

Across receiver outages and re-runs nothing repeats or is lost: a row is ``sent`` only after a 2xx
and is never sent again once it is. Across a crash (or a kill) between a POST and the run's MERGE,
the posts of that run are made again by the next: delivery is at least once, and a receiver that
must not show an alert twice dedupes on ``Idempotency-Key`` (= the body's ``detection_id``). The
same holds when a receiver accepted a POST but answered after the timeout. The caller holds the
refresh lock, so two runs never send the same rows at once.

The body is one JSON object a Slack incoming webhook takes (its ``text``: one line with severity,
detection, who, summary and when) and a SIEM HTTP collector can index (the detection's fields).
Lines printed name the detection, never the person: logs outlive an erasure (the payloads in the
table are pseudonymised by ``auditlake erase`` like any other ops table).
"""

from __future__ import annotations

import base64
import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.config.checks import WEBHOOK_URL
from pipelines.config.load import Config, secret
from pipelines.config.settings import ALERT_SEVERITIES
from pipelines.errors import ConfigError, InputError, one_line
from pipelines.lake.delta_tables import create_table_if_missing
from pipelines.lake.table_names import tables
from pipelines.runtime.spark_session import small_tables

PENDING, SENT, SKIPPED = "pending", "sent", "skipped"  # skipped: recorded by --skip-backlog, never posted
DELIVERIES_SCHEMA = (
    "detection_id string, detection string, severity string, detected_at timestamp, status string, "
    "attempts int, last_error string, first_queued_at timestamp, last_attempt_at timestamp, "
    "sent_at timestamp, payload string"
)
# the columns of gold.rpt_detections a payload carries (the contract with the dbt models)
DETECTION_FIELDS = (
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
# HTTP answers that say the receiver cannot take anything now: stop sending, retry next run
_UNAVAILABLE = {408, 429}


class AlertsError(InputError):
    """Alerts cannot run (nothing sent): the message says why and what to do."""


@dataclass(frozen=True)
class Reply:
    """What a POST came to: delivered (a 2xx), or the error, and whether the receiver looks down."""

    delivered: bool
    error: str | None = None
    receiver_down: bool = False


@dataclass
class AlertsReport:
    new: int = 0  # detections queued by this run
    sent: int = 0  # delivered by this run
    failed: int = 0  # tried by this run and not delivered
    pending: int = 0  # still pending after this run
    last_error: str | None = None  # this run's last failure
    dry_run: bool = False
    would_send: list[str] = field(default_factory=list)  # dry run: the detection ids a run would post now

    @property
    def summary(self) -> str:
        text = f"alerts{' (dry run)' if self.dry_run else ''}: {self.new} new, {self.sent} sent, {self.pending} pending"
        if self.dry_run:
            return f"{text}; {len(self.would_send)} would be sent now"
        return text + (f" (last error: {self.last_error})" if self.last_error else "")


def webhook_url(cfg: Config, environ: Mapping[str, str] | None = None) -> str:
    """The webhook URL from the variable ``alerts.webhook_url_env`` names (a ``ConfigError`` naming the
    variable, never its value, when it is unset or not an http(s) URL)."""
    url = secret(cfg, "alerts.webhook_url_env", environ).strip()
    if not WEBHOOK_URL.fullmatch(url):
        raise ConfigError(
            f"config key 'alerts.webhook_url_env' names environment variable "
            f"{cfg.get('alerts.webhook_url_env')}, which does not hold an http:// or https:// URL"
        )
    return url


def severities_from(min_severity: str) -> list[str]:
    """The severities at or above ``min_severity``."""
    return list(ALERT_SEVERITIES[ALERT_SEVERITIES.index(min_severity) :])


# ---- the body ---------------------------------------------------------------------------------


def iso_utc(moment: datetime) -> str:
    """``2026-06-01T10:00:00Z`` (milliseconds when the moment has a fraction of a second)."""
    moment = moment.astimezone(UTC)
    return moment.isoformat(timespec="milliseconds" if moment.microsecond else "seconds").replace("+00:00", "Z")


def _slack_escape(text: str) -> str:
    """Slack reads ``&``, ``<`` and ``>`` as markup (``<!channel>`` would notify everyone)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def headline(detection: Mapping[str, object]) -> str:
    """One line: severity, detection, who, summary, when."""
    who = detection.get("user_key") or (f"site {detection['site_luid']}" if detection.get("site_luid") else "tenant")
    when = detection.get("detected_at")
    return " | ".join(
        [
            f"[{str(detection['severity']).upper()}] {detection['detection']}",
            one_line(who),
            one_line(detection.get("summary") or ""),
            iso_utc(when) if when else "time unknown",
        ]
    )


def payload(detection: Mapping[str, object]) -> str:
    """The JSON body for one detection (``detected_at`` an aware datetime): Slack's ``text`` first, then
    the detection's fields for a SIEM (``detected_at`` as ISO-8601 UTC)."""
    body = {"text": _slack_escape(headline(detection))}
    for name in DETECTION_FIELDS:
        value = detection.get(name)
        body[name] = (
            iso_utc(value)
            if name == "detected_at" and value
            else list(value or [])
            if name == "evidence_event_ids"
            else value
        )
    return json.dumps(body, ensure_ascii=False)


# ---- queue ------------------------------------------------------------------------------------


def detections_to_queue(detections: DataFrame, known: DataFrame, min_severity: str) -> DataFrame:
    """The detections at or above ``min_severity`` whose id ``known`` (a ``detection_id`` column) lacks,
    one row per id, ``detected_at`` also as epoch microseconds (``detected_us``: no time zone involved)."""
    wanted = F.lower(F.col("severity")).isin(*severities_from(min_severity))
    return (
        detections.where(F.col("detection_id").isNotNull() & wanted)
        .dropDuplicates(["detection_id"])
        .join(known.select("detection_id"), "detection_id", "left_anti")
        .select(*DETECTION_FIELDS, F.unix_micros("detected_at").alias("detected_us"))
    )


@contextmanager
def _alert_tables(spark: SparkSession, cfg: Config) -> Iterator[None]:
    """A run over the detections report and ``ops.alert_deliveries`` (made if missing), with the
    small-input settings while they are small: a run's few queries and MERGEs over tens of rows
    otherwise cost what compiling and re-planning them costs."""
    t = tables(cfg)
    if not spark.catalog.tableExists(t.detections):
        raise AlertsError(f"{t.detections} does not exist: build gold first (auditlake refresh)")
    create_table_if_missing(spark, t.alert_deliveries, DELIVERIES_SCHEMA)
    with small_tables(spark, cfg, [t.detections, t.alert_deliveries]):
        yield


def queue_new_detections(spark: SparkSession, cfg: Config, now: datetime, status: str = PENDING) -> int:
    """MERGE the detections not seen before into ``ops.alert_deliveries`` as ``status`` (pending, or
    skipped for a backlog), insert-only (keyed on ``detection_id``); -> how many. No commit when
    there are none. Inside ``_alert_tables``."""
    t = tables(cfg)
    rows = []
    for r in detections_to_queue(
        spark.table(t.detections), spark.table(t.alert_deliveries), cfg.settings.alerts.min_severity
    ).collect():
        detection = r.asDict()
        when = detection["detected_at"] = _from_micros(r["detected_us"])
        rows.append(
            (
                r["detection_id"],
                r["detection"],
                r["severity"],
                when,
                status,
                0,
                None,
                now,
                None,
                None,
                payload(detection),
            )
        )
    if rows:
        new = spark.createDataFrame(rows, DELIVERIES_SCHEMA)
        (
            DeltaTable.forName(spark, t.alert_deliveries)
            .alias("d")
            .merge(new.alias("n"), "d.detection_id = n.detection_id")
            .whenNotMatchedInsertAll()
            .execute()
        )
    return len(rows)


def _from_micros(micros: int | None) -> datetime | None:
    if micros is None:
        return None
    return datetime.fromtimestamp(micros // 1_000_000, UTC).replace(microsecond=micros % 1_000_000)


# ---- send -------------------------------------------------------------------------------------


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer that is not 2xx: urllib would repeat a POST as a GET, whose 200 would
    read as delivered."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def split_credentials(url: str) -> tuple[str, dict[str, str]]:
    """``https://user:password@host/path`` -> the URL without them and an ``Authorization: Basic``
    header (urllib sends no credentials from a URL itself): how a collector that wants a token in
    Basic auth (Splunk HEC, Logstash, Vector) gets it from the one secret."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, {}
    user, password = urllib.parse.unquote(parts.username or ""), urllib.parse.unquote(parts.password or "")
    netloc = parts.netloc.rpartition("@")[2]
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc)), {"Authorization": f"Basic {token}"}


def post_json(url: str, body: str, idempotency_key: str, timeout: float) -> Reply:
    """POST ``body`` to ``url``; never raises for what the network or the receiver does. Errors name
    neither the URL (a secret) nor the body."""
    url, auth = split_credentials(url)
    request = urllib.request.Request(
        url,
        data=body.encode("utf-8"),
        method="POST",
        headers={
            "Content-Type": "application/json; charset=utf-8",
            "Idempotency-Key": idempotency_key,
            "User-Agent": "auditlake-alerts",
            **auth,
        },
    )
    try:
        with _OPENER.open(request, timeout=timeout) as answer:
            answer.read()
            return Reply(True)  # the opener raises HTTPError for anything but 2xx
    except urllib.error.HTTPError as exc:
        try:
            said = one_line(exc.read(300).decode("utf-8", "replace"))
        except (OSError, http.client.HTTPException):
            said = ""
        error = f"HTTP {exc.code} {exc.reason}" + (f": {said}" if said else "")
        if 300 <= exc.code < 400:
            error += " (redirects are not followed: set the final URL)"
        return Reply(False, error[:500], receiver_down=exc.code >= 500 or exc.code in _UNAVAILABLE)
    except urllib.error.URLError as exc:
        return Reply(False, f"cannot reach the receiver: {one_line(exc.reason)}"[:500], receiver_down=True)
    except TimeoutError:
        return Reply(False, f"no answer within {timeout:g}s", receiver_down=True)
    except (OSError, http.client.HTTPException) as exc:
        return Reply(False, f"connection failed: {type(exc).__name__}: {one_line(exc)}"[:500], receiver_down=True)


def record_outcomes(spark: SparkSession, cfg: Config, outcomes: list[tuple[str, bool, str | None, datetime]]) -> None:
    """One MERGE for the run: (detection_id, delivered, error, attempted_at) onto the pending rows."""
    if not outcomes:
        return
    frame = spark.createDataFrame(
        outcomes, "detection_id string, delivered boolean, error string, attempted_at timestamp"
    )
    (
        DeltaTable.forName(spark, tables(cfg).alert_deliveries)
        .alias("d")
        .merge(frame.alias("o"), f"d.detection_id = o.detection_id AND d.status = '{PENDING}'")
        .whenMatchedUpdate(
            set={
                "status": F.expr(f"CASE WHEN o.delivered THEN '{SENT}' ELSE '{PENDING}' END"),
                "attempts": F.expr("d.attempts + 1"),
                "last_error": F.expr("CASE WHEN o.delivered THEN d.last_error ELSE o.error END"),
                "last_attempt_at": F.col("o.attempted_at"),
                "sent_at": F.expr("CASE WHEN o.delivered THEN o.attempted_at END"),
            }
        )
        .execute()
    )


def skip_backlog(spark: SparkSession, cfg: Config, log=print) -> int:
    """Start alerting from now: every detection the report holds that was never queued, and every
    pending one, is recorded as skipped (never posted); later detections are sent as usual. -> how many."""
    t = tables(cfg)
    with _alert_tables(spark, cfg):
        queued = queue_new_detections(spark, cfg, datetime.now(UTC), status=SKIPPED)
        pending = spark.table(t.alert_deliveries).where(F.col("status") == PENDING).count()
        if pending:
            DeltaTable.forName(spark, t.alert_deliveries).update(
                F.col("status") == PENDING, {"status": F.lit(SKIPPED), "last_error": F.lit("backlog: not posted")}
            )
    log(
        f"alerts: {queued + pending} detection(s) recorded as skipped, never to be posted "
        f"({queued} not queued before, {pending} pending); later detections are sent"
    )
    return queued + pending


def send_alerts(spark: SparkSession, cfg: Config, url: str | None, dry_run: bool = False, log=print) -> AlertsReport:
    """Queue the new detections, post the pending ones (none with ``dry_run``: print them), record
    the outcomes. ``url`` may be None only for a dry run. The caller holds the refresh lock."""
    if url is None and not dry_run:
        raise ValueError("send_alerts: a webhook URL is needed unless dry_run")
    with _alert_tables(spark, cfg):
        return _send_alerts(spark, cfg, url, dry_run, log)


def _send_alerts(spark: SparkSession, cfg: Config, url: str | None, dry_run: bool, log) -> AlertsReport:
    t = tables(cfg)
    report = AlertsReport(dry_run=dry_run)
    report.new = queue_new_detections(spark, cfg, datetime.now(UTC))
    deliveries = spark.table(t.alert_deliveries).where(F.col("status") == PENDING)
    pending_before = deliveries.count()
    batch = (
        deliveries.orderBy("detected_at", "detection_id")
        .limit(cfg.settings.alerts.max_per_run)
        .select("detection_id", "detection", "severity", "attempts", "payload")
        .collect()
    )
    if dry_run:  # the whole text, person included: an operator trying it out, not a scheduled log
        for row in batch:
            report.would_send.append(row["detection_id"])
            log(f"alerts: would send {row['detection_id']}: {json.loads(row['payload'])['text']}")
        report.pending = pending_before
        return report
    outcomes: list[tuple[str, bool, str | None, datetime]] = []
    timeout = cfg.settings.alerts.timeout_seconds
    stopped = False
    try:
        for i, row in enumerate(batch):
            attempted_at = datetime.now(UTC)
            reply = post_json(url, row["payload"], row["detection_id"], timeout)
            outcomes.append((row["detection_id"], reply.delivered, reply.error, attempted_at))
            what = f"{row['severity']} {row['detection']} {row['detection_id']} (attempt {row['attempts'] + 1})"
            if reply.delivered:
                report.sent += 1
                log(f"alerts: sent {what}")
                continue
            report.failed += 1
            report.last_error = reply.error
            log(f"alerts: not sent {what}: {reply.error}")
            if reply.receiver_down and i + 1 < len(batch):
                log(f"alerts: the receiver is unavailable: {len(batch) - i - 1} more left pending for the next run")
                stopped = True
                break
    finally:  # what was posted is recorded also when the run is interrupted
        record_outcomes(spark, cfg, outcomes)
    report.pending = pending_before - report.sent
    if pending_before > len(batch) and not stopped:
        log(f"alerts: alerts.max_per_run ({len(batch)}) reached: {pending_before - len(batch)} more go in the next run")
    return report
