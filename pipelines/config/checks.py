"""What several keys, or a key and the environment, decide together: the secrets the chosen modes need,
sign-in, S3, the servers' ports and bind addresses; and each value against its declaration, its first
problem named by its key."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from pipelines.config.project import resolve
from pipelines.config.settings import Settings
from pipelines.errors import ConfigError
from pipelines.integrity.signing import KeyProblem, private_key

# `auditlake serve --role`: the analysts' server (masked tables only; the default) or the auditors' (clear)
SERVE_ROLES = ("analyst", "auditor")

# the keys only a command that writes the lake needs: the pseudonyms' and the digests' signing key
KEYS_FOR_WRITING = ("analyst.pseudonym_key_env", "integrity.signing_key_env")
# what the variable alerts.webhook_url_env names must hold
WEBHOOK_URL = re.compile(r"https?://\S+")


# Location settings that may be s3a:// URIs (then the S3A client and its settings are used).
S3_LOCATION_KEYS = (
    "paths.landing_dir",
    "paths.warehouse_dir",
    "paths.checkpoint_dir",
    "ocsf.out_dir",
    "analyst.dir",
    "integrity.digest_dir",
)


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
    ("integrity.enabled", True, "integrity.signing_key_env", "the digests' signing key"),
    ("tableau.publish_on_refresh", True, "tableau.token_name_env", "the personal access token's name"),
    ("tableau.publish_on_refresh", True, "tableau.token_secret_env", "the personal access token's secret"),
    ("pull.on_refresh", True, "pull.token_secret_env", "the Cloud Manager personal access token's secret"),
    ("inventory.on_refresh", True, "tableau.token_name_env", "the personal access token's name"),
    ("inventory.on_refresh", True, "tableau.token_secret_env", "the personal access token's secret"),
)

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


def validate(
    values: dict, origins: dict[str, str], base_path: Path, environ: Mapping[str, str], writes_lake: bool
) -> Settings:
    """Every value against its declaration (pipelines/config/settings.py), then what several keys or the
    environment decide together: the secrets the chosen modes need (the pseudonym key only with
    ``writes_lake``), sign-in, S3."""

    def origin(key: str) -> str:
        while key:
            if key in origins:
                return origins[key]
            key = key.rpartition(".")[0]
        return str(base_path)

    def fail(key: str, problem: str) -> NoReturn:
        raise ConfigError(f"{origin(key)}: config key '{key}' {problem}")

    for path, value in leaves(values):
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
        if env_key in KEYS_FOR_WRITING and not writes_lake:
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
    if lookup("inventory.on_refresh") and not lookup("tableau.server_url"):
        fail("tableau.server_url", f"is empty: inventory.on_refresh is true ({origin('inventory.on_refresh')})")
    _check_pull(lookup, fail, origin)
    if lookup("sources.server_logs.roots") and not lookup("sources.server_logs.timezone"):
        fail(
            "sources.server_logs.timezone",
            f"is empty: sources.server_logs.roots names log roots ({origin('sources.server_logs.roots')}), whose "
            "native lines carry the servers' local time (set their IANA zone, e.g. Europe/Berlin)",
        )
    key_name = lookup("analyst.pseudonym_key_env")
    if writes_lake and lookup("analyst.enabled") and len(environ.get(key_name, "")) < MIN_PSEUDONYM_KEY_LENGTH:
        fail(
            "analyst.pseudonym_key_env",
            f"names environment variable {key_name}, which holds fewer than "
            f"{MIN_PSEUDONYM_KEY_LENGTH} characters: make one with "
            "`openssl rand -hex 32`",
        )
    signing_name = lookup("integrity.signing_key_env")
    if writes_lake and lookup("integrity.enabled"):
        try:
            private_key(environ[signing_name])
        except KeyProblem as exc:
            fail(
                "integrity.signing_key_env",
                f"names environment variable {signing_name}, which does not hold an Ed25519 private key: {exc} "
                "(make one with `auditlake integrity keygen DIR`)",
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


def _check_pull(lookup: Callable[[str], Any], fail: Callable[[str, str], NoReturn], origin) -> None:
    """``auditlake pull`` on refresh needs somewhere to pull from and something to pull."""
    if not lookup("pull.on_refresh"):
        return
    if not lookup("pull.cloud_manager_url"):
        fail("pull.cloud_manager_url", f"is empty: pull.on_refresh is true ({origin('pull.on_refresh')})")
    if not lookup("pull.site_luids") and not lookup("pull.tenant_events"):
        fail(
            "pull.site_luids",
            f"is empty and pull.tenant_events is false: pull.on_refresh is true ({origin('pull.on_refresh')}) "
            "but there is nothing to pull",
        )


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


def leaves(node: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """(key path, value) of every value that is not a non-empty mapping."""
    if isinstance(node, dict) and node:
        return [leaf for key, value in node.items() for leaf in leaves(value, (*path, key))]
    return [(path, node)]
