"""Configuration: ``conf/base.yaml`` merged with ``conf/<env>.yaml`` and environment overrides.

The environment is chosen by ``--env`` or ``AUDITLAKE_ENV`` (default ``local``).
Every key an environment file (or an ``AUDITLAKE__SECTION__KEY`` variable) sets must be declared
in ``pipelines/config/settings.py``, and every value is checked against its declaration when the
configuration loads: its type, and its enumeration, range or shape; then what several keys decide
together. A mode that needs a secret (``metastore.kind:
postgresql``, ``writeback.source: jdbc``, ``alerts.on_refresh: true``) needs the environment
variable its ``*_env`` key names to be set; the analysts' pseudonym key and the digests' signing key only
for a command that writes the lake (``writes_lake``). Any problem is a ``ConfigError`` whose one line names the key
and the file or environment variable the value came from (``auditlake`` exits 2, before Spark starts).

Secrets are never in conf/: a key ending in ``_env`` holds the NAME of the environment variable
holding the secret, read with ``secret()`` where it is used. Code receives the resulting
``Config`` as an argument; nothing else reads configuration files.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from copy import deepcopy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipelines.config.checks import locations_in_s3, validate
from pipelines.config.project import CONF_DIR, resolve
from pipelines.config.settings import Settings
from pipelines.errors import ConfigError, one_line

ENV_VAR = "AUDITLAKE_ENV"
OVERRIDE_PREFIX = "AUDITLAKE__"


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
    def digest_dir(self) -> str:
        return self.location("integrity.digest_dir", "digests")

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


def load_config(
    env: str | None = None,
    conf_dir: Path = CONF_DIR,
    environ: Mapping[str, str] | None = None,
    writes_lake: bool = True,
) -> Config:
    """Load and validate the configuration for ``env`` (default: $AUDITLAKE_ENV or 'local'): a name
    (``conf/<env>.yaml``, shipped with the product) or the path of a YAML file of one's own (``*.yaml``).
    ``writes_lake``: the caller writes the lake (a refresh, an erasure): it makes the analysts' pseudonyms and
    signs digests, so the keys they need must be set while their features are on; a command that
    writes nothing starts without them."""
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
    settings = validate(values, origins, base_path, environ, writes_lake)
    return Config(env, values, (str(base_path), str(env_path)), settings)
