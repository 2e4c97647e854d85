"""Configuration: ``conf/base.yaml`` merged with ``conf/<env>.yaml`` and environment overrides.

The environment is chosen by ``--env`` or ``AUDITLAKE_ENV`` (default ``local``).
Every key an environment file (or an ``AUDITLAKE__SECTION__KEY`` variable) sets must exist in
``base.yaml``, and every value is checked against ``RULES`` when the configuration loads: its
type, and its enumeration, range or shape. A mode that needs a secret (``metastore.kind:
postgresql``, ``writeback.source: jdbc``, ``alerts.on_refresh: true``) needs the environment
variable its ``*_env`` key names to be set. Any problem is a ``ConfigError`` whose one line names the key
and the file or environment variable the value came from (``auditlake`` exits 2, before Spark starts).

Secrets are never in conf/: a key ending in ``_env`` holds the NAME of the environment variable
holding the secret, read with ``secret()`` where it is used. Code receives the resulting
``Config`` as an argument; nothing else reads configuration files.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable, Mapping
from copy import deepcopy
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

import yaml

from pipelines.activity_log import AUDITLAKE, DATE_FIRST, SCHEMA_FIRST
from pipelines.errors import ConfigError, one_line
from pipelines.ocsf import OCSF_VERSIONS, SOURCE_NAME_PATTERN
from pipelines.writeback import ROLES as WRITEBACK_ROLES

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = PROJECT_ROOT / "conf"
ENV_VAR = "AUDITLAKE_ENV"
OVERRIDE_PREFIX = "AUDITLAKE__"

# The enumerations of conf/ (the code relies on the values being one of these)
METASTORE_KINDS = ("derby", "postgresql")
SEVERITIES = ("critical", "warning")  # critical stops promotion, warning is reported
WRITEBACK_SOURCES = ("file", "jdbc", "none")
# none: any user name, no password (loopback only) | ldap: a bind to serve.ldap.url checks it
SERVE_AUTH_MODES = ("none", "ldap")
# `auditlake serve --role`: the analysts' server (masked tables only; the default) or the auditors' (clear)
SERVE_ROLES = ("analyst", "auditor")
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")  # as Spark's date_format(t, 'E') writes them
# the layouts bronze reads that the sample generator can write
GENERATE_LAYOUTS = (AUDITLAKE, DATE_FIRST, SCHEMA_FIRST)
S3_CREDENTIALS = ("keys", "provider_chain")
# a detection's severity (gold.rpt_detections), in rising order: alerts.min_severity is one of them
ALERT_SEVERITIES = ("low", "medium", "high", "critical")
# what the variable alerts.webhook_url_env names must hold
WEBHOOK_URL = re.compile(r"https?://\S+")
# Location settings that may be s3a:// URIs (then the S3A client and its settings are used).
S3_LOCATION_KEYS = ("paths.landing_dir", "paths.warehouse_dir", "paths.checkpoint_dir", "ocsf.out_dir", "analyst.dir")
# characters of the pseudonym key at least (a short one could be found by trying keys)
MIN_PSEUDONYM_KEY_LENGTH = 32
# mode key, the value that needs a secret, the key naming the environment variable that holds it, what it is
SECRETS = (
    ("metastore.kind", "postgresql", "metastore.postgresql.password_env", "the password"),
    ("writeback.source", "jdbc", "writeback.jdbc.password_env", "the password"),
    ("serve.tls.enabled", True, "serve.tls.keystore_password_env", "the password"),
    ("alerts.on_refresh", True, "alerts.webhook_url_env", "the webhook URL"),
    ("analyst.enabled", True, "analyst.pseudonym_key_env", "the pseudonym key"),
    ("tableau.publish_on_refresh", True, "tableau.token_name_env", "the personal access token's name"),
    ("tableau.publish_on_refresh", True, "tableau.token_secret_env", "the personal access token's secret"),
)


@dataclass(frozen=True)
class Rule:
    """What a value must be: one of ``kinds`` (bool is never an int here), then ``check`` (-> what
    is wrong, or None)."""

    kinds: tuple[type, ...]
    check: Callable[[Any], str | None] | None = None


def _text(pattern: str | None = None, what: str = "") -> Rule:
    """A string; with ``pattern``, one matching it whole (``what`` says what that is)."""
    regex = re.compile(pattern) if pattern else None
    return Rule((str,), (lambda v: None if regex.fullmatch(v) else f"must be {what}") if regex else None)


def _whole(low: int | None = None, high: int | None = None) -> Rule:
    return Rule((int,), _between(low, high))


def _number(low: float, high: float) -> Rule:
    return Rule((int, float), _between(low, high))


def _between(low: float | None, high: float | None) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        if low is not None and high is not None and not low <= v <= high:
            return f"must be between {low} and {high}"
        if low is not None and v < low:
            return f"must be at least {low}"
        return None

    return check


def _one_of(*choices: str) -> Rule:
    return Rule((str,), lambda v: None if v in choices else f"must be one of {', '.join(choices)}")


def _list_of(pattern: str, what: str) -> Rule:
    regex = re.compile(pattern)
    return Rule(
        (list,),
        lambda v: next(
            (
                f"must be a list of {what} (item {i}: {item!r})"
                for i, item in enumerate(v)
                if not isinstance(item, str) or not regex.fullmatch(item)
            ),
            None,
        ),
    )


def _iso_time(v: str) -> str | None:
    try:
        datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return "must be an ISO-8601 time (e.g. 2026-06-01T00:00:00Z)"
    return None


_NONEMPTY = r"\S.*"
_HOST = _text(r"\S+", "a host name or address")
_PORT = _whole(1, 65535)
_IDENTIFIER = (r"[A-Za-z_][A-Za-z0-9_]*", "an identifier (letters, digits, _)")
_SCHEMA = _text(*_IDENTIFIER)
_ENV_NAME = _text(r"[A-Za-z_][A-Za-z0-9_]*", "the name of an environment variable")
_MEMORY = _text(r"(?i)\d+(b|[kmgtp]b?)?", "an amount of memory such as 512m or 4g")
_SPARK_MASTER = (
    r"local(\[(\d+|\*)(,\s*\d+)?\])?|local-cluster\[.+\]|(spark|k8s|mesos)://\S+|yarn",
    "a Spark master URL (local[N], local[*], spark://host:port, yarn, k8s://...)",
)
_MAPPING = Rule((dict,))
_DN_PATTERNS = _text(r"([^%]*%s[^%]*)(:[^%]*%s[^%]*)*|", "DN patterns with %s, colon-separated")
_SHARE = _number(0, 1)


# Every key of conf/base.yaml -> what its value must be. ``section.*``: every entry of a mapping.
RULES: dict[str, Rule] = {
    "paths.data_dir": _text(_NONEMPTY, "a path"),
    "paths.landing_dir": _text(),  # a path or URI; "" = <data_dir>/landing
    "paths.warehouse_dir": _text(),  # a path or URI; "" = <data_dir>/warehouse
    "paths.checkpoint_dir": _text(),  # a path or URI; "" = <data_dir>/checkpoints
    "paths.jars_dir": _text(_NONEMPTY, "a path"),
    "spark.app_name": _text(_NONEMPTY, "a name"),
    "spark.master": _text(*_SPARK_MASTER),
    "spark.driver_memory": _MEMORY,
    "spark.shuffle_partitions": _whole(1),
    "spark.file_open_cost_bytes": _whole(0),
    "spark.codegen_min_rows": _whole(0),
    "spark.extra_conf": _MAPPING,
    "spark.extra_conf.*": Rule((str, int, float, bool)),  # spark.* keys (checked in _validate)
    "jars": _list_of(r"[^:\s]+:[^:\s]+:[^:\s]+", "Maven coordinates group:artifact:version"),
    "s3.jars": _list_of(r"[^:\s]+:[^:\s]+:[^:\s]+", "Maven coordinates group:artifact:version"),
    "s3.endpoint": _text(r"(https?://\S+)?", "an http:// or https:// URL"),  # "" = AWS
    "s3.region": _text(r"[a-z0-9-]+", "an AWS region name (e.g. us-east-1)"),
    "s3.path_style_access": Rule((bool,)),
    "s3.credentials": _one_of(*S3_CREDENTIALS),
    "s3.access_key_env": _ENV_NAME,
    "s3.secret_key_env": _ENV_NAME,
    "bronze.schema": _SCHEMA,
    "bronze.listing.lookback_days": _whole(0),
    "bronze.listing.full_every_runs": _whole(1),
    "silver.schema": _SCHEMA,
    "silver.event_views": Rule((bool,)),
    "silver.stats_columns": _list_of(*_IDENTIFIER),
    "snapshots.keys": _MAPPING,
    "snapshots.keys.*": _list_of(*_IDENTIFIER),
    "gold.schema": _SCHEMA,
    "gold.failed_login_burst.failures": _whole(1),
    "gold.failed_login_burst.window_minutes": _whole(1),
    "gold.inactive_user_days": _whole(1),
    "gold.detections.mass_download.window_minutes": _whole(1, 1440),
    "gold.detections.mass_download.min_events": _whole(1),
    "gold.detections.mass_download.baseline_multiplier": _number(1, 1000),
    "gold.detections.mass_download.baseline_days": _whole(1, 366),
    "gold.detections.new_sign_in_source.learning_days": _whole(0, 366),
    "gold.detections.change_window.weekdays": _list_of("|".join(WEEKDAYS), "weekday names " + ", ".join(WEEKDAYS)),
    "gold.detections.change_window.start_hour": _whole(0, 23),
    "gold.detections.change_window.end_hour": _whole(1, 24),
    "gold.detections.licence_idle_days": _whole(1),
    "gold.detections.stale_content_days": _whole(1),
    "gold.compact_files_over": _whole(0),
    "gold.data_tests": Rule((bool,)),
    "gold.threads": _whole(1, 64),
    "feed.baseline_days": _whole(1, 366),
    "feed.usual_share": _SHARE,
    "feed.report_days": _whole(1, 3660),
    "feed.quiet_after_hours": _whole(1),
    "metastore.kind": _one_of(*METASTORE_KINDS),
    "metastore.postgresql.host": _HOST,
    "metastore.postgresql.port": _PORT,
    "metastore.postgresql.database": _text(_NONEMPTY, "a database name"),
    "metastore.postgresql.user": _text(_NONEMPTY, "a user name"),
    "metastore.postgresql.password_env": _ENV_NAME,
    "serve.host": _HOST,
    "serve.port": _PORT,
    "serve.auditor_port": _PORT,
    "serve.analyst_os_user": _text(r"[a-z_][a-z0-9_-]*", "an OS user name"),
    "serve.auth": _one_of(*SERVE_AUTH_MODES),
    "serve.ldap.url": _text(r"(ldaps?://\S+)?", "an ldap:// or ldaps:// URL"),  # "" unless auth is ldap
    "serve.ldap.base_dn": _text(),  # users are uid=<name>,<base_dn>
    "serve.ldap.user_dn_pattern": _DN_PATTERNS,
    "serve.ldap.auditor_base_dn": _text(),
    "serve.ldap.auditor_user_dn_pattern": _DN_PATTERNS,
    "serve.ldap.ca_cert": _text(),  # a PEM file; "" = the JVM's own CAs
    "analyst.enabled": Rule((bool,)),
    "analyst.schema": _SCHEMA,
    "analyst.dir": _text(),  # a path or URI; "" = <data_dir>/analyst
    "analyst.pseudonym_key_env": _ENV_NAME,
    "analyst.append_from_mb": _whole(0),
    "serve.tls.enabled": Rule((bool,)),
    "serve.tls.keystore_path": _text(),  # a PKCS12 or JKS keystore; "" unless tls is enabled
    "serve.tls.keystore_password_env": _ENV_NAME,
    "cluster.host": _HOST,
    "cluster.port": _PORT,
    "cluster.webui_port": _PORT,
    "cluster.workers": _whole(1),
    "cluster.worker_cores": _whole(1),
    "cluster.worker_memory": _MEMORY,
    "ops.schema": _SCHEMA,
    "quality.enabled": Rule((bool,)),
    "quality.context_dir": _text(),  # a path; "" = <data_dir>/quality
    "quality.pandas_max_rows": _whole(0),
    "quality.default_severity": _one_of(*SEVERITIES),
    "quality.thresholds.min_parse_rate": _SHARE,
    "quality.thresholds.min_event_type_rate": _SHARE,
    "quality.thresholds.min_luid_shape_rate": _SHARE,
    "quality.thresholds.max_quarantine_ratio": _SHARE,
    "quality.thresholds.min_event_year": _whole(1000, 9999),
    "quality.thresholds.future_tolerance_hours": _whole(0),
    "quality.severity": _MAPPING,
    "quality.severity.*": _one_of(*SEVERITIES),
    "generate.events": _whole(1),
    "generate.seed": _whole(),
    "generate.start": Rule((str,), _iso_time),
    "generate.days": _whole(1),
    "generate.layout": _one_of(*GENERATE_LAYOUTS),
    "generate.snapshots": Rule((bool,)),
    "generate.snapshot_every_hours": _whole(1),
    "writeback.source": _one_of(*WRITEBACK_SOURCES),
    "writeback.file.path": _text(_NONEMPTY, "a path"),
    "writeback.file.default_database": _one_of(*WRITEBACK_ROLES),
    "writeback.jdbc.host": _HOST,
    "writeback.jdbc.port": _PORT,
    "writeback.jdbc.user": _text(_NONEMPTY, "a user name"),
    "writeback.jdbc.password_env": _ENV_NAME,
    "writeback.jdbc.table": _text(_NONEMPTY, "a table name"),
    "writeback.jdbc.connect_timeout_seconds": _whole(1),
    "writeback.databases": _MAPPING,
    "writeback.databases.*": _text(),  # role -> database name; "" skips that role
    "writeback.overlap_minutes": _whole(0),
    "erase.vacuum_retain_hours": _whole(0),
    "erase.salt_env": _ENV_NAME,
    "alerts.webhook_url_env": _ENV_NAME,
    "alerts.min_severity": _one_of(*ALERT_SEVERITIES),
    "alerts.timeout_seconds": _whole(1, 300),
    "alerts.max_per_run": _whole(1),
    "alerts.on_refresh": Rule((bool,)),
    "ocsf.out_dir": _text(),  # a path or URI; "" = <data_dir>/ocsf
    "ocsf.source_name": _text(
        SOURCE_NAME_PATTERN,
        "at most 15 letters, digits, - or _ (Security Lake's source "
        "names have 20 characters at most, and -<class_uid> is added)",
    ),
    "ocsf.region": _text(r"[a-z]{2}(-[a-z]+)+-\d", "an AWS region name (e.g. us-east-1)"),
    "ocsf.account_id": _text(r"\d{12}|external(_[A-Za-z0-9-]+)?", "a 12-digit AWS account id or external[_<id>]"),
    "ocsf.version": _one_of(*OCSF_VERSIONS),
    "hyper.out_dir": _text(),  # a local folder; "" = <data_dir>/hyper
    "tableau.server_url": _text(r"(https?://\S+)?", "an http:// or https:// address, or empty"),
    "tableau.site": _text(r"[A-Za-z0-9_-]*", "a site's content URL (letters, digits, - and _), or empty for Default"),
    "tableau.project": _text(_NONEMPTY, "a project name"),
    "tableau.datasource_name": _text(_NONEMPTY, "a data source name"),
    "tableau.token_name_env": _ENV_NAME,
    "tableau.token_secret_env": _ENV_NAME,
    "tableau.job_timeout_seconds": _whole(1),
    "tableau.publish_on_refresh": Rule((bool,)),
}


@dataclass(frozen=True)
class Config:
    env: str
    values: dict
    files: tuple[str, ...]

    def get(self, dotted: str) -> Any:
        node: Any = self.values
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                raise ConfigError(f"missing config key '{dotted}' (files: {', '.join(self.files)})")
            node = node[part]
        return node

    def path(self, dotted: str) -> Path:
        """A path setting, made absolute against the project root."""
        p = Path(os.path.expanduser(str(self.get(dotted))))
        return p if p.is_absolute() else PROJECT_ROOT / p

    @property
    def data_dir(self) -> Path:
        return self.path("paths.data_dir")

    def location(self, dotted: str, default_under_data_dir: str) -> str:
        """A storage location: a URI (``s3a://...``, ``file:/...``) as written, a path made
        absolute, or ``<data_dir>/<default>`` when the setting is empty."""
        from pipelines.storage import is_uri

        value = str(self.get(dotted)).strip()
        if not value:
            return str(self.data_dir / default_under_data_dir)
        return value if is_uri(value) else str(self.path(dotted))

    @property
    def uses_s3(self) -> bool:
        """Whether a location (landing, warehouse, checkpoints) is in S3 (``s3a://``)."""
        return any(str(self.get(k)).strip().startswith("s3a://") for k in S3_LOCATION_KEYS)

    @property
    def warehouse_dir(self) -> str:
        """Delta tables (Spark's warehouse): may be object storage."""
        return self.location("paths.warehouse_dir", "warehouse")

    @property
    def analyst_dir(self) -> str:
        """The analysts' masked tables (pipelines/analyst): may be object storage."""
        return self.location("analyst.dir", "analyst")

    @property
    def quality_dir(self) -> Path:
        """The GX file context (validation results and Data Docs quote values: kept with the data)."""
        return Path(self.location("quality.context_dir", "quality"))

    @property
    def metastore_dir(self) -> Path:
        return self.data_dir / "metastore"

    @property
    def checkpoint_dir(self) -> str:
        """Stream checkpoints: may be object storage (beside the tables they belong to)."""
        return self.location("paths.checkpoint_dir", "checkpoints")

    @property
    def landing_dir(self) -> str:
        """Where Tableau's Activity Log files are dropped: may be object storage."""
        return self.location("paths.landing_dir", "landing")


def secret(cfg: Config, key: str, environ: Mapping[str, str] | None = None) -> str:
    """The secret held by the environment variable that ``key`` (a ``*_env`` key) names: the one way
    a secret reaches the code. ``load_config`` has checked that it is set when the configured mode
    needs it; this fails the same way only if the environment changed since."""
    environ = os.environ if environ is None else environ
    name = cfg.get(key)
    if name not in environ:
        raise ConfigError(f"config key '{key}' names environment variable {name}, which is not set")
    return environ[name]


LAYER_SCHEMAS = ("bronze", "silver", "ops", "gold")


def variant_environ(data_dir: Path, name: str, environ: dict[str, str] | None = None) -> dict[str, str]:
    """AUDITLAKE__* overrides giving a lakehouse of its own (data dir, landing, GX context, analyst
    tables and schemas ``<layer>_<name>``) beside the main one in the same metastore: tests, benchmarks."""
    out = dict(os.environ if environ is None else environ)
    out["AUDITLAKE__PATHS__DATA_DIR"] = str(data_dir)
    out["AUDITLAKE__PATHS__LANDING_DIR"] = str(data_dir / "landing")
    out["AUDITLAKE__QUALITY__CONTEXT_DIR"] = str(data_dir / "gx_context")
    out["AUDITLAKE__ANALYST__DIR"] = str(data_dir / "analyst")
    for layer in LAYER_SCHEMAS:
        out[f"AUDITLAKE__{layer.upper()}__SCHEMA"] = f"{layer}_{name}"
    return out


def _read_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {one_line(exc)}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    return data


def _merge(
    current: dict, over: dict, shape: dict, source: Callable[[str], str], origins: dict[str, str], prefix: str = ""
) -> dict:
    """``over`` merged onto ``current``; only the keys of ``shape`` (base.yaml) are allowed, and an
    empty mapping there is free-form (``spark.extra_conf``: entries added or replaced). ``origins``
    records where each value set came from (``source(dotted key)``: a file, an environment variable)."""
    out = deepcopy(current)
    for key, value in over.items():
        dotted = f"{prefix}{key}"
        if key not in shape:
            raise ConfigError(f"{source(dotted)}: unknown config key '{dotted}' (not in conf/base.yaml)")
        if isinstance(shape[key], dict) and isinstance(value, dict) and isinstance(out.get(key), dict):
            if shape[key]:
                out[key] = _merge(out[key], value, shape[key], source, origins, dotted + ".")
            else:
                out[key] = {**out[key], **value}
                for entry in value:
                    origins[f"{dotted}.{entry}"] = source(f"{dotted}.{entry}")
        else:
            out[key] = value
            for replaced in [k for k in origins if k.startswith(dotted + ".")]:
                del origins[replaced]
            origins[dotted] = source(dotted)
    return out


def _env_overrides(environ: Mapping[str, str]) -> tuple[dict, dict[str, str]]:
    """AUDITLAKE__PATHS__DATA_DIR=/x -> {"paths": {"data_dir": "/x"}} (YAML-typed value), and
    dotted key -> the variable that set it."""
    over: dict = {}
    names: dict[str, str] = {}
    for name, raw in sorted(environ.items()):
        if not name.startswith(OVERRIDE_PREFIX):
            continue
        parts = [p.lower() for p in name[len(OVERRIDE_PREFIX) :].split("__")]
        try:
            value = yaml.safe_load(raw) if raw != "" else ""
        except yaml.YAMLError as exc:
            raise ConfigError(
                f"environment variable {name}: config key '{'.'.join(parts)}': not a valid YAML value: {one_line(exc)}"
            ) from exc
        node = over
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(
                    f"environment variable {name}: config key '{'.'.join(parts)}' "
                    "is inside a key another variable sets to a value"
                )
        node[parts[-1]] = value
        names[".".join(parts)] = name
    return over, names


def _env_source(names: dict[str, str]) -> Callable[[str], str]:
    def source(dotted: str) -> str:
        """The variable that set ``dotted``, one below it, or one that set a mapping holding it."""
        below = [n for k, n in names.items() if k.startswith(dotted + ".")]
        above = [n for k, n in names.items() if dotted.startswith(k + ".")]
        return f"environment variable {names.get(dotted) or (below + above)[0]}"

    return source


def _leaves(node: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """(key path, value) of every value that is not a non-empty mapping."""
    if isinstance(node, dict) and node:
        return [leaf for key, value in node.items() for leaf in _leaves(value, (*path, key))]
    return [(path, node)]


def _validate(values: dict, origins: dict[str, str], base_path: Path, environ: Mapping[str, str]) -> None:
    """Every value against ``RULES``, then the secrets the chosen modes need."""

    def origin(key: str) -> str:
        while key:
            if key in origins:
                return origins[key]
            key = key.rpartition(".")[0]
        return str(base_path)

    def fail(key: str, problem: str) -> NoReturn:
        raise ConfigError(f"{origin(key)}: config key '{key}' {problem}")

    def check(key: str, value: Any, rule: Rule) -> None:
        # bool is an int in Python: only accept it where bool is what the key wants
        if (isinstance(value, bool) and bool not in rule.kinds) or not isinstance(value, rule.kinds):
            fail(key, f"must be {' or '.join(k.__name__ for k in rule.kinds)}, got {value!r}")
        problem = rule.check(value) if rule.check else None
        if problem:
            fail(key, f"{problem}, got {value!r}")

    def lookup(key: str) -> Any:
        node: Any = values
        parts = key.split(".")
        for i, part in enumerate(parts):
            if not isinstance(node, dict):
                parent = ".".join(parts[:i])
                fail(parent, f"must be a mapping (with key '{part}'), got {node!r}")
            if part not in node:
                raise ConfigError(f"missing config key '{key}' (every key must be set in {base_path})")
            node = node[part]
        return node

    for path, value in _leaves(values):
        strings = value if isinstance(value, list) else [value]
        if any(isinstance(s, str) and "${env:" in s for s in strings):
            fail(
                ".".join(map(str, path)),
                "uses ${env:...}, which is not supported: a secret comes from the "
                "environment variable named by a key ending in _env (e.g. metastore.postgresql.password_env)",
            )
    for key, rule in RULES.items():
        if key.endswith(".*"):
            parent = key[:-2]
            for child, value in lookup(parent).items():
                if parent == "spark.extra_conf" and not str(child).startswith("spark."):
                    fail(f"{parent}.{child}", "is not a Spark setting (spark.*)")
                check(f"{parent}.{child}", value, rule)
        else:
            check(key, lookup(key), rule)
    for path, _ in _leaves(values):
        dotted = ".".join(map(str, path))
        if dotted not in RULES and ".".join(map(str, (*path[:-1], "*"))) not in RULES:
            fail(dotted, "has no rule in pipelines/config.py RULES (every key of conf/base.yaml needs one)")
    for mode_key, mode, env_key, what in SECRETS:
        if lookup(mode_key) == mode and lookup(env_key) not in environ:
            shown = str(mode).lower() if isinstance(mode, bool) else mode
            fail(
                env_key,
                f"names environment variable {lookup(env_key)}, which is not set: "
                f"{mode_key} {shown} ({origin(mode_key)}) needs {what} there",
            )
    if lookup("alerts.on_refresh") and not WEBHOOK_URL.fullmatch(environ.get(lookup("alerts.webhook_url_env"), "")):
        fail(
            "alerts.webhook_url_env",
            f"names environment variable {lookup('alerts.webhook_url_env')}, which does "
            "not hold an http:// or https:// URL: alerts.on_refresh is true "
            f"({origin('alerts.on_refresh')})",
        )
    if lookup("tableau.publish_on_refresh") and not lookup("tableau.server_url"):
        fail(
            "tableau.server_url",
            f"is empty: tableau.publish_on_refresh is true ({origin('tableau.publish_on_refresh')})",
        )
    key_name = lookup("analyst.pseudonym_key_env")
    if lookup("analyst.enabled") and len(environ.get(key_name, "")) < MIN_PSEUDONYM_KEY_LENGTH:
        fail(
            "analyst.pseudonym_key_env",
            f"names environment variable {key_name}, which holds fewer than "
            f"{MIN_PSEUDONYM_KEY_LENGTH} characters: make one with "
            "`openssl rand -hex 32`",
        )
    for key in S3_LOCATION_KEYS:
        if re.match(r"(?i)s3n?://", str(lookup(key)).strip()):
            fail(key, f"is {lookup(key)!r}: Hadoop reads S3 as s3a:// (s3:// and s3n:// have no client here)")
    in_s3 = any(str(lookup(k)).strip().startswith("s3a://") for k in S3_LOCATION_KEYS)
    if in_s3 and lookup("s3.credentials") == "keys":
        for env_key in ("s3.access_key_env", "s3.secret_key_env"):
            if lookup(env_key) not in environ:
                fail(
                    env_key,
                    f"names environment variable {lookup(env_key)}, which is not set: a location is "
                    f"s3a:// and s3.credentials is keys ({origin('s3.credentials')})",
                )
    window = "gold.detections.change_window"
    if lookup(f"{window}.start_hour") >= lookup(f"{window}.end_hour"):
        fail(f"{window}.end_hour", f"must be after {window}.start_hour ({lookup(f'{window}.start_hour')})")
    _check_serve(lookup, fail, origin)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine's loopback (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_serve(
    lookup: Callable[[str], Any], fail: Callable[[str, str], NoReturn], origin: Callable[[str], str]
) -> None:
    """`auditlake serve` signs users in before it listens beyond this machine, and a mode has what it needs."""
    auth, host = lookup("serve.auth"), lookup("serve.host")
    if auth == "none" and not is_loopback(host):
        fail(
            "serve.host",
            f"is {host!r}, not a loopback address, while serve.auth is none ({origin('serve.auth')}): "
            "anyone who reaches the port could read the lakehouse; set serve.auth: ldap",
        )
    if auth == "ldap":
        if not lookup("serve.ldap.url"):
            fail(
                "serve.ldap.url",
                f"must be set (ldap://host:389 or ldaps://host:636): serve.auth is ldap ({origin('serve.auth')})",
            )
        if not lookup("serve.ldap.base_dn") and not lookup("serve.ldap.user_dn_pattern"):
            fail(
                "serve.ldap.base_dn",
                "or serve.ldap.user_dn_pattern must be set: serve.auth is ldap "
                f"({origin('serve.auth')}) and the server binds as the user's DN",
            )
        auditors = (lookup("serve.ldap.auditor_base_dn"), lookup("serve.ldap.auditor_user_dn_pattern"))
        if not any(auditors):
            fail(
                "serve.ldap.auditor_base_dn",
                "or serve.ldap.auditor_user_dn_pattern must be set: serve.auth is "
                f"ldap ({origin('serve.auth')}) and auditors sign in under DNs "
                "of their own",
            )
        if auditors == (lookup("serve.ldap.base_dn"), lookup("serve.ldap.user_dn_pattern")):
            fail(
                "serve.ldap.auditor_base_dn",
                "must differ from serve.ldap.base_dn (and the patterns likewise): "
                "every analyst could sign in to the auditors' server",
            )
    ca_cert = lookup("serve.ldap.ca_cert")
    if ca_cert and not (PROJECT_ROOT / os.path.expanduser(ca_cert)).is_file():
        fail(
            "serve.ldap.ca_cert",
            f"is {ca_cert!r}: no such file (the PEM certificate of the CA that signed the directory's certificate)",
        )
    if lookup("serve.port") == lookup("serve.auditor_port"):
        fail("serve.auditor_port", f"must differ from serve.port ({lookup('serve.port')})")
    if lookup("serve.tls.enabled") and not lookup("serve.tls.keystore_path"):
        fail("serve.tls.keystore_path", f"must be set: serve.tls.enabled is true ({origin('serve.tls.enabled')})")


def load_config(env: str | None = None, conf_dir: Path = CONF_DIR, environ: Mapping[str, str] | None = None) -> Config:
    """Load and validate the configuration for ``env`` (default: $AUDITLAKE_ENV or 'local')."""
    environ = dict(os.environ if environ is None else environ)
    env = env or environ.get(ENV_VAR) or "local"
    base_path = conf_dir / "base.yaml"
    env_path = conf_dir / f"{env}.yaml"
    if not base_path.is_file():
        raise ConfigError(f"{base_path}: base configuration file not found")
    if not env_path.is_file():
        known = sorted(p.stem for p in conf_dir.glob("*.yaml") if p.stem != "base")
        raise ConfigError(f"{env_path}: no configuration for environment '{env}' (known: {', '.join(known)})")
    base = _read_yaml(base_path)
    origins: dict[str, str] = {}
    values = _merge(base, _read_yaml(env_path), base, lambda _key: str(env_path), origins)
    overrides, names = _env_overrides(environ)
    values = _merge(values, overrides, base, _env_source(names), origins)
    _validate(values, origins, base_path, environ)
    return Config(env, values, (str(base_path), str(env_path)))
