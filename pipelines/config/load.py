"""Configuration: ``conf/base.yaml`` merged with ``conf/<env>.yaml`` and environment overrides.

The environment is chosen by ``--env`` or ``AUDITLAKE_ENV`` (default ``local``).
Every key an environment file (or an ``AUDITLAKE__SECTION__KEY`` variable) sets must be declared
in ``pipelines/config/settings.py``, and every value is checked against its declaration when the
configuration loads: its type, and its enumeration, range or shape; then what several keys decide
together. A mode that needs a secret (``metastore.kind:
postgresql``, ``writeback.source: jdbc``, ``alerts.on_refresh: true``) needs the environment
variable its ``*_env`` key names to be set; the analysts' pseudonym key only for a command that makes
pseudonyms (``needs_pseudonym_key``). Any problem is a ``ConfigError`` whose one line names the key
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml
from pydantic import ValidationError

from pipelines.config.project import CONF_DIR, resolve
from pipelines.config.settings import Settings
from pipelines.errors import ConfigError, one_line

ENV_VAR = "AUDITLAKE_ENV"
OVERRIDE_PREFIX = "AUDITLAKE__"

# `auditlake serve --role`: the analysts' server (masked tables only; the default) or the auditors' (clear)
SERVE_ROLES = ("analyst", "auditor")
# what the variable alerts.webhook_url_env names must hold
WEBHOOK_URL = re.compile(r"https?://\S+")
# Location settings that may be s3a:// URIs (then the S3A client and its settings are used).
S3_LOCATION_KEYS = ("paths.landing_dir", "paths.warehouse_dir", "paths.checkpoint_dir", "ocsf.out_dir", "analyst.dir")
NO_S3_CLIENT = "Hadoop reaches S3 as s3a:// (s3:// and s3n:// have no client here)"


def has_no_s3_client(location: str) -> bool:
    """``s3://`` or ``s3n://``: S3 schemes Hadoop has no client for here (NO_S3_CLIENT says so)."""
    return re.match(r"(?i)s3n?://", location.strip()) is not None


def locations_in_s3(get: Callable[[str], Any]) -> bool:
    """Whether a location setting is in S3 (``s3a://``): then the S3A client and its settings are used."""
    return any(str(get(k)).strip().startswith("s3a://") for k in S3_LOCATION_KEYS)


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
class Config:
    """The loaded configuration: ``settings`` typed (``cfg.settings.gold.threads``), ``get("gold.threads")``
    by dotted key, both validated."""

    env: str
    values: dict
    files: tuple[str, ...]
    settings: Settings = field(repr=False, compare=False)

    def get(self, dotted: str) -> Any:
        node: Any = self.values
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                raise ConfigError(f"missing config key '{dotted}' (files: {', '.join(self.files)})")
            node = node[part]
        return node

    def path(self, dotted: str) -> Path:
        """A path setting, made absolute against the project's home (pipelines/config/project.py)."""
        return resolve(str(self.get(dotted)))

    @property
    def data_dir(self) -> Path:
        return self.path("paths.data_dir")

    def location(self, dotted: str, default_under_data_dir: str) -> str:
        """A storage location: a URI (``s3a://...``, ``file:/...``) as written, a path made
        absolute, or ``<data_dir>/<default>`` when the setting is empty."""
        from pipelines.lake.storage import is_uri

        value = str(self.get(dotted)).strip()
        if not value:
            return str(self.data_dir / default_under_data_dir)
        return value if is_uri(value) else str(self.path(dotted))

    @property
    def uses_s3(self) -> bool:
        """Whether a location (landing, warehouse, checkpoints) is in S3 (``s3a://``)."""
        return locations_in_s3(self.get)

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
            raise ConfigError(
                f"{source(dotted)}: unknown config key '{dotted}' (not in conf/base.yaml, pipelines/config/settings.py)"
            )
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


# pydantic's error types for a value of the wrong kind -> the kind wanted, as the message says it
_KINDS = {
    "int_type": "int",
    "float_type": "int or float",
    "bool_type": "bool",
    "string_type": "str",
    "list_type": "list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
}


def _settings(values: dict, fail: Callable[[str, str], NoReturn], base_path: Path) -> Settings:
    """``values`` validated by the key declarations (pipelines/config/settings.py); the first problem fails,
    named by its key."""
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        loc = [str(p) for p in error["loc"] if p != "[key]"]
        dotted, kind, value = ".".join(loc), error["type"], error.get("input")
        if kind == "missing":
            raise ConfigError(f"missing config key '{dotted}' (every key must be set in {base_path})") from None
        if kind in _KINDS:
            fail(dotted, f"must be {_KINDS[kind]}, got {value!r}")
        fail(dotted, f"{error['ctx']['error'] if kind == 'value_error' else error['msg']}, got {value!r}")


def _validate(
    values: dict, origins: dict[str, str], base_path: Path, environ: Mapping[str, str], needs_pseudonym_key: bool
) -> Settings:
    """Every value against its declaration (pipelines/config/settings.py), then what several keys or the
    environment decide together: the secrets the chosen modes need (the pseudonym key only with
    ``needs_pseudonym_key``), sign-in, S3."""

    def origin(key: str) -> str:
        while key:
            if key in origins:
                return origins[key]
            key = key.rpartition(".")[0]
        return str(base_path)

    def fail(key: str, problem: str) -> NoReturn:
        raise ConfigError(f"{origin(key)}: config key '{key}' {problem}")

    for path, value in _leaves(values):
        strings = value if isinstance(value, list) else [value]
        if any(isinstance(s, str) and "${env:" in s for s in strings):
            fail(
                ".".join(map(str, path)),
                "uses ${env:...}, which is not supported: a secret comes from the "
                "environment variable named by a key ending in _env (e.g. metastore.postgresql.password_env)",
            )
    settings = _settings(values, fail, base_path)

    def lookup(key: str) -> Any:
        node: Any = values
        for part in key.split("."):
            node = node[part]
        return node

    for mode_key, mode, env_key, what in SECRETS:
        if env_key == "analyst.pseudonym_key_env" and not needs_pseudonym_key:
            continue
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
    if lookup("writeback.source") == "file" and not lookup("writeback.file.path").strip():
        fail(
            "writeback.file.path",
            f"is empty: writeback.source is file ({origin('writeback.source')}): give the export's path "
            "(.ndjson, .json or .csv)",
        )
    if lookup("tableau.publish_on_refresh") and not lookup("tableau.server_url"):
        fail(
            "tableau.server_url",
            f"is empty: tableau.publish_on_refresh is true ({origin('tableau.publish_on_refresh')})",
        )
    key_name = lookup("analyst.pseudonym_key_env")
    if needs_pseudonym_key and lookup("analyst.enabled") and len(environ.get(key_name, "")) < MIN_PSEUDONYM_KEY_LENGTH:
        fail(
            "analyst.pseudonym_key_env",
            f"names environment variable {key_name}, which holds fewer than "
            f"{MIN_PSEUDONYM_KEY_LENGTH} characters: make one with "
            "`openssl rand -hex 32`",
        )
    for key in S3_LOCATION_KEYS:
        if has_no_s3_client(str(lookup(key))):
            fail(key, f"is {lookup(key)!r}: {NO_S3_CLIENT}")
    if locations_in_s3(lookup) and lookup("s3.credentials") == "keys":
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
    return settings


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
    if ca_cert and not resolve(ca_cert).is_file():
        fail(
            "serve.ldap.ca_cert",
            f"is {ca_cert!r}: no such file (the PEM certificate of the CA that signed the directory's certificate)",
        )
    if lookup("serve.port") == lookup("serve.auditor_port"):
        fail("serve.auditor_port", f"must differ from serve.port ({lookup('serve.port')})")
    if lookup("serve.tls.enabled") and not lookup("serve.tls.keystore_path"):
        fail("serve.tls.keystore_path", f"must be set: serve.tls.enabled is true ({origin('serve.tls.enabled')})")


def load_config(
    env: str | None = None,
    conf_dir: Path = CONF_DIR,
    environ: Mapping[str, str] | None = None,
    needs_pseudonym_key: bool = True,
) -> Config:
    """Load and validate the configuration for ``env`` (default: $AUDITLAKE_ENV or 'local'): a name
    (``conf/<env>.yaml``, shipped with the product) or the path of a YAML file of one's own (``*.yaml``).
    ``needs_pseudonym_key``: the caller makes the analysts' pseudonyms (a refresh, an erasure), so the
    key must be set while ``analyst.enabled``; a command that makes none starts without it."""
    environ = dict(os.environ if environ is None else environ)
    env = env or environ.get(ENV_VAR) or "local"
    base_path = conf_dir / "base.yaml"
    if env.lower().endswith((".yaml", ".yml")):  # a file of one's own, over the shipped base.yaml
        env_path = Path(os.path.expanduser(env)).resolve()
        env = str(env_path)  # so child processes given cfg.env load the same file
        if not env_path.is_file():
            raise ConfigError(f"{env_path}: no such configuration file")
    else:
        env_path = conf_dir / f"{env}.yaml"
    if not base_path.is_file():
        raise ConfigError(f"{base_path}: base configuration file not found")
    if not env_path.is_file():
        known = sorted(p.stem for p in conf_dir.glob("*.yaml") if p.stem != "base")
        raise ConfigError(f"{env_path}: no configuration for environment '{env}' (known: {', '.join(known)})")
    # the declared defaults (pipelines/config/settings.py), then base.yaml (the same values, commented:
    # a test keeps them equal), the environment's file and the AUDITLAKE__* variables
    shape = Settings().model_dump()
    origins: dict[str, str] = {}
    values = _merge(shape, _read_yaml(base_path), shape, lambda _key: str(base_path), origins)
    values = _merge(values, _read_yaml(env_path), shape, lambda _key: str(env_path), origins)
    overrides, names = _env_overrides(environ)
    values = _merge(values, overrides, shape, _env_source(names), origins)
    settings = _validate(values, origins, base_path, environ, needs_pseudonym_key)
    return Config(env, values, (str(base_path), str(env_path)), settings)
