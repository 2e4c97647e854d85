"""Every configuration key, declared once: its type, constraint, default and description.

``conf/base.yaml`` holds the same defaults with longer comments (a test keeps the two equal), the
environment files and ``AUDITLAKE__SECTION__KEY`` variables override them, and ``load_config``
validates the merged values with ``Settings`` (pydantic, strict: a boolean is not a number, a
number not a text). A failed check's message is one of the ``must be ...`` phrases below;
``pipelines.config.load`` adds the key and the file or variable the value came from. What depends on
several keys or on the environment (a secret a mode needs, sign-in before listening beyond this
machine) is checked by ``pipelines.config.load`` after this.
"""

from __future__ import annotations

import re
import warnings
import zoneinfo
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from pipelines.activity_log import AUDITLAKE, DATE_FIRST, SCHEMA_FIRST
from pipelines.ocsf import OCSF_VERSIONS, SOURCE_NAME_PATTERN
from pipelines.writeback import ROLES as WRITEBACK_ROLES

# A section's schema name is its key `schema`; pydantic warns that it shadows BaseModel.schema(), a
# deprecated class method nothing here calls.
warnings.filterwarnings("ignore", message='Field name "schema" in ', category=UserWarning)

# The enumerations of conf/ (the code relies on the values being one of these)
METASTORE_KINDS = ("derby", "postgresql")
SEVERITIES = ("critical", "warning")  # critical stops promotion, warning is reported
WRITEBACK_SOURCES = ("file", "jdbc", "none")
# none: any user name, no password (loopback only) | ldap: a bind to serve.ldap.url checks it
SERVE_AUTH_MODES = ("none", "ldap")
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")  # as Spark's date_format(t, 'E') writes them
# the layouts bronze reads that the sample generator can write
GENERATE_LAYOUTS = (AUDITLAKE, DATE_FIRST, SCHEMA_FIRST)
S3_CREDENTIALS = ("keys", "provider_chain")
# the driver JVM's garbage collector (pipelines/runtime/spark_session.py GC_OPTIONS)
GARBAGE_COLLECTORS = ("parallel", "g1")
# the driver JVM's just-in-time compilers (pipelines/runtime/spark_session.py JIT_OPTIONS)
JIT_COMPILERS = ("tiered", "c1")
# a detection's severity (gold.rpt_detections), in rising order: alerts.min_severity is one of them
ALERT_SEVERITIES = ("low", "medium", "high", "critical")


def _check(problem: Callable[[Any], str | None]) -> AfterValidator:
    """A pydantic validator from ``problem(value)`` -> what is wrong (``must be ...``), or None."""

    def run(value: Any) -> Any:
        wrong = problem(value)
        if wrong:
            raise ValueError(wrong)
        return value

    return AfterValidator(run)


def _between(low: float | None, high: float | None) -> Callable[[Any], str | None]:
    def problem(v: Any) -> str | None:
        if low is not None and high is not None and not low <= v <= high:
            return f"must be between {low} and {high}"
        if low is not None and v < low:
            return f"must be at least {low}"
        return None

    return problem


def Text(pattern: str | None = None, what: str = "") -> Any:  # noqa: N802 (a type)
    """A string; with ``pattern``, one matching it whole (``what`` says what that is)."""
    regex = re.compile(pattern) if pattern else None
    return Annotated[str, _check(lambda v: None if regex is None or regex.fullmatch(v) else f"must be {what}")]


def Whole(low: int | None = None, high: int | None = None) -> Any:  # noqa: N802
    return Annotated[int, _check(_between(low, high))]


def Number(low: float, high: float) -> Any:  # noqa: N802
    return Annotated[float, _check(_between(low, high))]


def OneOf(*choices: str) -> Any:  # noqa: N802
    return Annotated[str, _check(lambda v: None if v in choices else f"must be one of {', '.join(choices)}")]


def ListOf(pattern: str, what: str) -> Any:  # noqa: N802
    regex = re.compile(pattern)
    return Annotated[
        list,
        _check(
            lambda v: next(
                (
                    f"must be a list of {what} (item {i}: {item!r})"
                    for i, item in enumerate(v)
                    if not isinstance(item, str) or not regex.fullmatch(item)
                ),
                None,
            )
        ),
    ]


def _iso_time(v: str) -> str | None:
    try:
        datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return "must be an ISO-8601 time (e.g. 2026-06-01T00:00:00Z)"
    return None


def _zone(v: str) -> str | None:
    if v == "":
        return None
    try:
        zoneinfo.ZoneInfo(v)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return "must be an IANA time zone name such as Europe/Berlin or UTC, or empty"
    return None


NONEMPTY = r"\S.*"
Host = Text(r"\S+", "a host name or address")
Port = Whole(1, 65535)
IDENTIFIER = (r"[A-Za-z_][A-Za-z0-9_]*", "an identifier (letters, digits, _)")
Schema = Text(*IDENTIFIER)
EnvName = Text(r"[A-Za-z_][A-Za-z0-9_]*", "the name of an environment variable")
Memory = Text(r"(?i)\d+(b|[kmgtp]b?)?", "an amount of memory such as 512m or 4g")
SparkMaster = Text(
    r"local(\[(\d+|\*)(,\s*\d+)?\])?|local-cluster\[.+\]|(spark|k8s|mesos)://\S+|yarn",
    "a Spark master URL (local[N], local[*], spark://host:port, yarn, k8s://...)",
)
DnPatterns = Text(r"([^%]*%s[^%]*)(:[^%]*%s[^%]*)*|", "DN patterns with %s, colon-separated")
Share = Number(0, 1)
Maven = ListOf(r"[^:\s]+:[^:\s]+:[^:\s]+", "Maven coordinates group:artifact:version")
Zone = Annotated[str, _check(_zone)]
SparkKey = Annotated[str, _check(lambda k: None if k.startswith("spark.") else "is not a Spark setting (spark.*)")]
SparkValue = Annotated[str | int | float | bool, Field(union_mode="left_to_right")]


def key(default: Any, description: str) -> Any:
    """A key's default and what it is for (``Field``): a section's default is its own defaults (pass
    its class); a list or mapping is copied per instance."""
    if isinstance(default, type):
        return Field(default_factory=default, description=description)
    if isinstance(default, list | dict):
        return Field(default_factory=lambda: type(default)(default), description=description)
    return Field(default, description=description)


class Section(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class Paths(Section):
    data_dir: Text(NONEMPTY, "a path") = key("data", "local state: run lock, Derby metastore, quality reports")
    landing_dir: Text() = key("data/landing", "Activity Log drops (a path or URI; '' = <data_dir>/landing)")
    warehouse_dir: Text() = key("", "the Delta tables (a path or URI; '' = <data_dir>/warehouse)")
    checkpoint_dir: Text() = key("", "stream checkpoints (a path or URI; '' = <data_dir>/checkpoints)")
    jars_dir: Text(NONEMPTY, "a path") = key(".cache/jars", "JARs fetched once from Maven Central")


class Spark(Section):
    app_name: Text(NONEMPTY, "a name") = key("auditlake", "Spark's application name")
    master: SparkMaster = key("local[2]", "Spark's master URL")
    driver_memory: Memory = key("4g", "the driver's memory")
    shuffle_partitions: Whole(1) = key(4, "spark.sql.shuffle.partitions")
    file_open_cost_bytes: Whole(0) = key(65536, "what Spark assumes opening a file costs, in bytes read")
    codegen_min_rows: Whole(0) = key(200000, "below this many input rows, queries run interpreted; 0 = never")
    gc: OneOf(*GARBAGE_COLLECTORS) = key("parallel", "the driver's collector: parallel (fewest CPU-seconds) | g1")
    jit: OneOf(*JIT_COMPILERS) = key("tiered", "the driver's JIT: tiered (C1, then C2 for hot code) | c1 (C1 only)")
    extra_conf: dict[SparkKey, SparkValue] = key({}, "any further spark.* settings, passed through as they are")


class S3(Section):
    jars: Maven = key(
        ["org.apache.hadoop:hadoop-aws:3.4.2", "software.amazon.awssdk:bundle:2.29.52"],
        "Hadoop's S3A client, fetched and used only when a location is s3a://",
    )
    endpoint: Text(r"(https?://\S+)?", "an http:// or https:// URL") = key("", "'' = AWS; an S3-compatible server")
    region: Text(r"[a-z0-9-]+", "an AWS region name (e.g. us-east-1)") = key("us-east-1", "the bucket's region")
    path_style_access: bool = key(False, "true for most S3-compatible servers (bucket in the path)")
    credentials: OneOf(*S3_CREDENTIALS) = key("keys", "keys: the two variables below | provider_chain: AWS's")
    access_key_env: EnvName = key("AWS_ACCESS_KEY_ID", "NAME of the variable holding the access key id")
    secret_key_env: EnvName = key("AWS_SECRET_ACCESS_KEY", "NAME of the variable holding the secret key")


class Listing(Section):
    lookback_days: Whole(0) = key(3, "date folders older than the newest landed day minus this are not walked")
    full_every_runs: Whole(1) = key(24, "every this many runs, every folder is walked")


class Bronze(Section):
    schema: Schema = Field("bronze", description="bronze's schema")
    listing: Listing = key(Listing, "which folders of the landing root a refresh walks")


class Silver(Section):
    schema: Schema = Field("silver", description="silver's schema")
    event_views: bool = key(True, "one view per documented event type, silver.<event_type>")
    stats_columns: ListOf(*IDENTIFIER) = key(
        [
            "event_id",
            "event_type",
            "event_time",
            "site_luid",
            "actor_user_luid",
            "initiating_user_id",
            "silver_ingest_ts",
        ],
        "columns Delta keeps min/max statistics for in the wide event tables",
    )


class ServerLogRoot(Section):
    path: Text(NONEMPTY, "a folder or a .zip archive") = Field(
        description="a node's logs folder or a `tsm maintenance ziplogs` archive"
    )
    node: Text(r"[A-Za-z0-9_.-]*", "a node name (letters, digits, . _ -)") = key(
        "", "the node's name ('' = this machine's name for a folder, each member's top folder for an archive)"
    )


class ServerLogs(Section):
    roots: list[ServerLogRoot] = key([], "Tableau Server's log roots to copy Activity Log files from ([] = none)")
    timezone: Zone = key("", "the servers' zone (IANA name): native log lines carry local time; needed with roots")


class Sources(Section):
    server_logs: ServerLogs = key(ServerLogs, "Tableau Server's Activity Log files")


class Snapshots(Section):
    keys: dict[str, ListOf(*IDENTIFIER)] = key({}, "the columns that identify a row, per entity type")


class FailedLoginBurst(Section):
    failures: Whole(1) = key(5, "rpt_failed_login_bursts: this many failures ...")
    window_minutes: Whole(1) = key(10, "... within this many minutes, per user or per IP address")


class MassDownload(Section):
    window_minutes: Whole(1, 1440) = key(60, "rpt_mass_downloads: one user's downloads in a window this long ...")
    min_events: Whole(1) = key(20, "... at least this many, and ...")
    baseline_multiplier: Number(1, 1000) = key(3, "... this many times their mean per active window ...")
    baseline_days: Whole(1, 366) = key(30, "... over this many days before")


class NewSignInSource(Section):
    learning_days: Whole(0, 366) = key(7, "an address or browser counts as new once the user is this old")


class ChangeWindow(Section):
    weekdays: ListOf("|".join(WEEKDAYS), "weekday names " + ", ".join(WEEKDAYS)) = key(
        ["Mon", "Tue", "Wed", "Thu", "Fri"], "admin security changes are expected on these days (UTC) ..."
    )
    start_hour: Whole(0, 23) = key(8, "... from this hour (UTC) ...")
    end_hour: Whole(1, 24) = key(18, "... until this hour (exclusive)")


class Detections(Section):
    mass_download: MassDownload = key(MassDownload, "rpt_mass_downloads")
    new_sign_in_source: NewSignInSource = key(NewSignInSource, "rpt_new_sign_in_sources")
    change_window: ChangeWindow = key(ChangeWindow, "rpt_security_changes_outside_window")
    licence_idle_days: Whole(1) = key(30, "rpt_licence_right_sizing: no authoring or publishing this long")
    stale_content_days: Whole(1) = key(90, "rpt_stale_content: nobody opened it this long")


class Gold(Section):
    schema: Schema = Field("gold", description="the marts' schema (<schema>_staging: the views)")
    failed_login_burst: FailedLoginBurst = key(FailedLoginBurst, "rpt_failed_login_bursts")
    inactive_user_days: Whole(1) = key(90, "rpt_inactive_licensed_users: no sign-in for this long")
    detections: Detections = key(Detections, "the detection reports' thresholds")
    compact_files_over: Whole(0) = key(32, "a mart with more data files than this is compacted after a build")
    data_tests: bool = key(True, "dbt's data tests with every build")
    threads: Whole(1, 64) = key(2, "how many models and tests dbt runs at once")


class Feed(Section):
    baseline_days: Whole(1, 366) = key(7, "a site's usual delivery hours are judged over this many days ...")
    usual_share: Share = key(0.5, "... in which it delivered at least this share of them")
    report_days: Whole(1, 3660) = key(30, "rpt_feed_gaps covers this many days back")
    quiet_after_hours: Whole(1) = key(6, "a line for a site with this many gap hours since its last delivery")


class PostgresqlMetastore(Section):
    host: Host = key("127.0.0.1", "the metastore's PostgreSQL server")
    port: Port = key(5432, "its port")
    database: Text(NONEMPTY, "a database name") = key("auditlake_metastore", "its database")
    user: Text(NONEMPTY, "a user name") = key("auditlake", "its user")
    password_env: EnvName = key("AUDITLAKE_METASTORE_PASSWORD", "NAME of the variable holding the password")


class Metastore(Section):
    kind: OneOf(*METASTORE_KINDS) = key("derby", "derby: embedded, one process at a time | postgresql: shared")
    postgresql: PostgresqlMetastore = key(PostgresqlMetastore, "the PostgreSQL metastore")


class Analyst(Section):
    enabled: bool = key(True, "copy every mart, personal columns as keyed pseudonyms, for the analysts")
    schema: Schema = Field("analyst", description="the analysts' server lists a view per mart here")
    dir: Text() = key("", "the copies (a path or URI; '' = <data_dir>/analyst)")
    pseudonym_key_env: EnvName = key("AUDITLAKE_PSEUDONYM_KEY", "NAME of the variable holding the pseudonym key")
    append_from_mb: Whole(0) = key(32, "a mart this large (MB) that only gained rows gets them appended")


class Ldap(Section):
    url: Text(r"(ldaps?://\S+)?", "an ldap:// or ldaps:// URL") = key("", "ldap://host:389 or ldaps://host:636")
    base_dn: Text() = key("", "users bind as uid=<name>,<base_dn>")
    user_dn_pattern: DnPatterns = key("", "or DNs with %s for the name, colon-separated")
    auditor_base_dn: Text() = key("", "auditors bind under DNs of their own")
    auditor_user_dn_pattern: DnPatterns = key("", "or DN patterns of their own")
    ca_cert: Text() = key("", "a private CA's certificate (PEM); '' = the JVM's CAs only")


class Tls(Section):
    enabled: bool = key(False, "clients must speak TLS")
    keystore_path: Text() = key("", "a PKCS12 (or JKS) keystore holding the key and certificate")
    keystore_password_env: EnvName = key(
        "AUDITLAKE_SERVE_KEYSTORE_PASSWORD", "NAME of the variable holding the keystore's password"
    )


class Restart(Section):
    attempts: Whole(0) = key(5, "restarts of a dead analysts' server in a row before serve gives up; 0 = none")
    backoff_seconds: Whole(1, 3600) = key(2, "the wait before the first restart, doubled for each next one")
    backoff_max_seconds: Whole(1, 3600) = key(60, "the longest wait between restarts")
    healthy_after_seconds: Whole(1) = key(600, "a server up this long counts as healthy: the count starts again")


class Serve(Section):
    host: Host = key("127.0.0.1", "loopback by default; any other address needs auth: ldap")
    port: Port = key(10000, "the analysts' server: the masked analyst tables only")
    auditor_port: Port = key(10001, "the auditors' server: every schema in clear")
    analyst_os_user: Text(r"[a-z_][a-z0-9_-]*", "an OS user name") = key(
        "auditlake-analyst", "the OS user a local analysts' server started as root runs as"
    )
    auth: OneOf(*SERVE_AUTH_MODES) = key("none", "none: any user name | ldap: a bind to ldap.url checks it")
    ldap: Ldap = key(Ldap, "sign-in by LDAP bind")
    tls: Tls = key(Tls, "TLS on the servers' ports")
    query_timeout_seconds: Whole(1) = key(300, "an analyst's statement running longer is cancelled, its tasks stopped")
    max_result_mb: Whole(1) = key(256, "the most one statement's result may hold in the analysts' server")
    max_concurrent_statements: Whole(1) = key(8, "statements the analysts' server runs at once; more wait")
    task_slots: Whole(2) = key(16, "the analysts' server's concurrent tasks (more than cores: no statement holds all)")
    memory: Memory = key("2g", "the analysts' server's JVM heap")
    idle_session_timeout_seconds: Whole(0) = key(
        1800, "a session without a statement, unused this long, is closed (0 = never)"
    )
    idle_operation_timeout_seconds: Whole(0) = key(
        600, "a finished statement whose result nobody fetched or closed this long is closed (0 = never)"
    )
    # HiveServer2 checks no more often than every 3 s
    session_check_interval_seconds: Whole(3) = key(60, "how often idle sessions and statements are looked for")
    restart: Restart = key(Restart, "supervision of the analysts' server: restarts after its JVM died")


class Cluster(Section):
    host: Host = key("127.0.0.1", "the standalone master's address")
    port: Port = key(7077, "its port")
    webui_port: Port = key(8080, "its web UI's port")
    workers: Whole(1) = key(2, "workers started on this machine")
    worker_cores: Whole(1) = key(1, "cores per worker")
    worker_memory: Memory = key("2g", "memory for executors, per worker")


class Ops(Section):
    schema: Schema = Field("ops", description="run logs and batch figures")


class Thresholds(Section):
    min_parse_rate: Share = key(0.95, "share of bronze lines that are JSON objects")
    min_event_type_rate: Share = key(0.99, "share of parsed lines with an event type")
    max_quarantine_ratio: Share = key(0.05, "quarantined / bronze rows in a batch")
    min_event_year: Whole(1000, 9999) = key(2013, "the Activity Log did not exist before")
    future_tolerance_hours: Whole(0) = key(24, "clock skew allowed for event_time")
    min_rows_for_shares: Whole(1) = key(100, "a share threshold stops a batch of at least this many rows only")


QUALITY_SEVERITY = {
    "json_parse_rate": "critical",
    "event_type_present": "critical",
    "ingest_metadata_not_null": "critical",
    "source_file_landed_once": "critical",
    "event_id_unique": "critical",
    "event_id_not_null": "critical",
    "event_time_not_null": "critical",
    "event_time_in_window": "critical",
    "event_type_known": "critical",
    "luid_shape": "critical",
    "documented_codes": "critical",
    "documented_values": "warning",
    "quarantine_ratio": "critical",
    "reconciliation_exact": "critical",
    "gold_reconciliation_exact": "critical",
    "mart_key_unique": "critical",
    "login_outcome_known": "critical",
    "owner_changed": "warning",
    "writeback_action_known": "critical",
}


class Quality(Section):
    enabled: bool = key(True, "Great Expectations gates between layers")
    context_dir: Text() = key("", "the GX file context; '' = <data_dir>/quality")
    pandas_max_rows: Whole(0) = key(500000, "a frame up to this many rows is checked on GX's pandas engine")
    data_docs_runs: Whole(1) = key(24, "validation results kept per suite for the Data Docs (all: ops.dq_results)")
    default_severity: OneOf(*SEVERITIES) = key("critical", "an expectation's severity when severity does not say")
    thresholds: Thresholds = key(Thresholds, "the gates' thresholds")
    hold_stopped_hours: Whole(0) = key(
        24, "a batch a gate stopped is held this long, then a refresh sets its rows aside to quarantine"
    )
    severity: dict[str, OneOf(*SEVERITIES)] = key(QUALITY_SEVERITY, "expectation key -> critical | warning")


class Generate(Section):
    events: Whole(1) = key(20000, "events `auditlake generate` / `demo` writes")
    seed: Whole() = key(42, "the generator's seed")
    start: Annotated[str, _check(_iso_time)] = key("2026-06-01T00:00:00Z", "the first generated day")
    days: Whole(1) = key(7, "days generated")
    layout: OneOf(*GENERATE_LAYOUTS) = key("date_first", "the tree `auditlake demo` writes")
    snapshots: bool = key(True, "`auditlake demo` also writes the entity snapshots")
    snapshot_every_hours: Whole(1) = key(6, "the demo's snapshot interval")


class WritebackFile(Section):
    path: Text() = key("", "a CSV or NDJSON export (needed with source file)")
    default_database: OneOf(*WRITEBACK_ROLES) = key("metadata", "role of lines that carry no DATABASE_ROLE field")


class WritebackJdbc(Section):
    host: Host = key("127.0.0.1", "the Write-Back PostgreSQL server")
    port: Port = key(5432, "its port")
    user: Text(NONEMPTY, "a user name") = key("writeback_reader", "its user")
    password_env: EnvName = key("AUDITLAKE_WRITEBACK_PASSWORD", "NAME of the variable holding the password")
    table: Text(NONEMPTY, "a table name") = key("historical_audit", "used as written")
    connect_timeout_seconds: Whole(1) = key(10, "connection timeout")


class Writeback(Section):
    source: OneOf(*WRITEBACK_SOURCES) = key("none", "none: no Write-Back | file: an export | jdbc: the databases")
    file: WritebackFile = key(WritebackFile, "the export file")
    jdbc: WritebackJdbc = key(WritebackJdbc, "the databases, over JDBC")
    databases: dict[str, Text()] = key(
        {"metadata": "writeback_metadata", "persistence": "writeback_persistence"},
        "role -> database name on the server; an empty name skips that role",
    )
    overlap_minutes: Whole(0) = key(60, "re-read this far behind the watermark")


class Erase(Section):
    vacuum_retain_hours: Whole(0) = key(0, "old file versions kept after an erasure's vacuum")
    salt_env: EnvName = key("AUDITLAKE_ERASE_SALT", "NAME of the variable holding the tokens' salt")


class RetentionRule(Section):
    keep: Text(r"[1-9]\d*d", "a number of days such as 90d") = key("3650d", "how long rows it matches are kept")
    family: OneOf("", "site", "tenant") = key("", "site | tenant ('' = both)")
    event_type: Text() = key("", "an event type ('' = any)")
    site: Text() = key("", "a site's LUID ('' = any)")


class Retention(Section):
    rules: list[RetentionRule] = key([], "which Activity Log rows are retired after how long ([] = keep everything)")
    vacuum_retain_hours: Whole(0) = key(0, "old file versions kept after a retention run's vacuum")
    on_refresh: bool = key(False, "a refresh with gold retires expired rows too, at most once a day")


class Integrity(Section):
    enabled: bool = key(True, "a signed digest after every refresh and erasure (`auditlake verify` checks them)")
    digest_dir: Text() = key("", "the digest log, written once per digest (a path or URI; '' = <data_dir>/digests)")
    signing_key_env: EnvName = key(
        "AUDITLAKE_SIGNING_KEY", "NAME of the variable holding the Ed25519 private key (PEM)"
    )
    public_key_file: Text() = key("", "the public key `verify` checks against ('' = the signing key's public half)")
    anchor_file: Text() = key("", "each digest's name and SHA-256 appended here, for a witness ('' = none)")


class Alerts(Section):
    webhook_url_env: EnvName = key("AUDITLAKE_ALERTS_WEBHOOK_URL", "NAME of the variable holding the webhook URL")
    min_severity: OneOf(*ALERT_SEVERITIES) = key("medium", "detections below this are never queued")
    timeout_seconds: Whole(1, 300) = key(10, "per POST")
    max_per_run: Whole(1) = key(100, "POSTs per run at most")
    on_refresh: bool = key(False, "send after every refresh whose gold layer ran")


class Hyper(Section):
    out_dir: Text() = key("", "a folder on this machine; '' = <data_dir>/hyper")


class Tableau(Section):
    server_url: Text(r"(https?://\S+)?", "an http:// or https:// address, or empty") = key("", "Cloud or Server")
    site: Text(r"[A-Za-z0-9_-]*", "a site's content URL (letters, digits, - and _), or empty for Default") = key(
        "", "the site's content URL; '' = Server's Default site"
    )
    project: Text(NONEMPTY, "a project name") = key("Default", "the project the data source goes in")
    datasource_name: Text(NONEMPTY, "a data source name") = key("Tableau audit lakehouse", "its name")
    token_name_env: EnvName = key("AUDITLAKE_TABLEAU_TOKEN_NAME", "NAME of the variable holding the token's name")
    token_secret_env: EnvName = key("AUDITLAKE_TABLEAU_TOKEN", "NAME of the variable holding the token's secret")
    job_timeout_seconds: Whole(1) = key(1800, "how long to wait for Tableau's update job")
    publish_on_refresh: bool = key(False, "export and publish after every refresh whose gold layer ran")


class Pull(Section):
    cloud_manager_url: Text(r"(https?://\S+)?", "an http:// or https:// address, or empty") = key(
        "", "Tableau Cloud Manager's address (https://<tenant>.cloudmanager.tableau.com)"
    )
    tenant_id: Text(r"[A-Za-z0-9-]*", "a tenant id (letters, digits and -), or empty") = key(
        "", "the tenant; '' = the token's own"
    )
    site_luids: ListOf(r"[0-9A-Fa-f]{8}(-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}", "site LUIDs (UUIDs)") = key(
        [], "the sites whose Activity Log is pulled"
    )
    tenant_events: bool = key(True, "also the tenant's (Cloud Manager) events")
    event_types: ListOf(r"[a-z][a-z0-9_]*", "event type names") = key(
        [], "[] = every type, one listing per window; else one listing per type"
    )
    entity_snapshots: bool = key(False, "also the sites' entity snapshots (Enterprise and Tableau+ only)")
    entity_types: ListOf(r"[a-z][a-z0-9_]*", "entity type names") = key([], "[] = every entity type")
    token_name_env: EnvName = key("AUDITLAKE_TCM_TOKEN_NAME", "NAME of the variable holding the token's name")
    token_secret_env: EnvName = key("AUDITLAKE_TCM_TOKEN", "NAME of the variable holding the token's secret")
    lookback_days: Whole(1, 365) = key(14, "a first pull of the Activity Log reaches this far back")
    snapshot_lookback_hours: Whole(1, 168) = key(4, "a first pull of the snapshots reaches this far back")
    overlap_minutes: Whole(60) = key(
        60, "each pull asks again for this much before its watermark (an hour at least: the API's hour folders)"
    )
    max_window_hours: Whole(1, 168) = key(168, "one request's time range at most (the API's limit)")
    page_size: Whole(1, 1000) = key(100, "files per listing page")
    max_retries: Whole(0, 20) = key(5, "retries of a request answered 429 or 5xx")
    backoff_seconds: Number(0, 600) = key(1.0, "the wait before a first retry without Retry-After, doubled each time")
    max_retry_after_seconds: Whole(1, 3600) = key(300, "a longer Retry-After fails the pull instead of waiting")
    timeout_seconds: Whole(1, 600) = key(60, "per request")
    gap_hours: Whole(1) = key(24, "this many hours in a row with no file from a site: a delivery gap")
    on_refresh: bool = key(False, "`auditlake refresh` pulls first (a failed pull does not stop it)")


class Inventory(Section):
    sites: ListOf(r"[A-Za-z0-9_-]*", "site content URLs (letters, digits, - and _; '' = Default)") = key(
        [], "the sites read, by content URL ([] = tableau.site alone)"
    )
    page_size: Whole(1, 1000) = key(100, "items per listing page")
    timeout_seconds: Whole(1, 600) = key(60, "per request")
    on_refresh: bool = key(False, "`auditlake refresh` takes an inventory first (a failed one does not stop it)")


class Ocsf(Section):
    out_dir: Text() = key("", "Security Lake's bucket (s3a://...) or a folder; '' = <data_dir>/ocsf")
    source_name: Text(
        SOURCE_NAME_PATTERN,
        "at most 15 letters, digits, - or _ (Security Lake's source names have 20 characters at most, "
        "and -<class_uid> is added)",
    ) = key("tableau", "custom sources <source_name>-<class_uid>")
    region: Text(r"[a-z]{2}(-[a-z]+)+-\d", "an AWS region name (e.g. us-east-1)") = key("us-east-1", "region=")
    account_id: Text(r"\d{12}|external(_[A-Za-z0-9-]+)?", "a 12-digit AWS account id or external[_<id>]") = key(
        "external", "accountId="
    )
    version: OneOf(*OCSF_VERSIONS) = key("1.3.0", "the events' OCSF version")


class Settings(Section):
    """The whole configuration (``conf/base.yaml``'s sections)."""

    paths: Paths = key(Paths, "where the lake's files are")
    spark: Spark = key(Spark, "the Spark session")
    jars: Maven = key(
        ["io.delta:delta-spark_4.1_2.13:4.4.0", "io.delta:delta-storage:4.4.0", "org.postgresql:postgresql:42.7.14"],
        "Maven coordinates fetched by `auditlake setup`",
    )
    s3: S3 = key(S3, "s3a:// locations")
    sources: Sources = key(Sources, "Activity Log sources beside the landing folder")
    bronze: Bronze = key(Bronze, "the bronze layer")
    silver: Silver = key(Silver, "the silver layer")
    snapshots: Snapshots = key(Snapshots, "entity snapshots")
    gold: Gold = key(Gold, "the dbt marts")
    feed: Feed = key(Feed, "feed completeness")
    metastore: Metastore = key(Metastore, "where Spark keeps table definitions")
    analyst: Analyst = key(Analyst, "the analysts' copy of gold")
    serve: Serve = key(Serve, "the Thrift servers")
    cluster: Cluster = key(Cluster, "a standalone cluster on this machine")
    ops: Ops = key(Ops, "operational tables")
    quality: Quality = key(Quality, "Great Expectations gates")
    generate: Generate = key(Generate, "the sample generator")
    writeback: Writeback = key(Writeback, "the Write-Back extension's historical_audit table")
    erase: Erase = key(Erase, "`auditlake erase`")
    integrity: Integrity = key(Integrity, "the signed trail (`auditlake verify`)")
    retention: Retention = key(Retention, "`auditlake retention apply`")
    alerts: Alerts = key(Alerts, "`auditlake alerts`")
    hyper: Hyper = key(Hyper, "`auditlake export hyper`")
    tableau: Tableau = key(Tableau, "`auditlake publish`")
    ocsf: Ocsf = key(Ocsf, "`auditlake export ocsf`")
    pull: Pull = key(Pull, "`auditlake pull`: the Activity Log from Tableau Cloud Manager's Platform Data API")
    inventory: Inventory = key(Inventory, "`auditlake inventory`: each site's state from Tableau's REST API")
