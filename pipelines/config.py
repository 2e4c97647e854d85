"""Configuration: ``conf/base.yaml`` merged with ``conf/<env>.yaml`` and environment overrides.

The environment is chosen by ``--env`` or ``AUDITLAKE_ENV`` (default ``local``).
Every key an environment file sets must exist in ``base.yaml`` (a typo fails at
start, naming the key and the file), and every key in ``REQUIRED_KEYS`` must end up
set with a value of the documented kind. Code receives the resulting ``Config``
as an argument; nothing else reads configuration files.
"""

from __future__ import annotations

import os
import re
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = PROJECT_ROOT / "conf"
ENV_VAR = "AUDITLAKE_ENV"
OVERRIDE_PREFIX = "AUDITLAKE__"
_ENV_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")

# key -> accepted Python types of its value once merged
REQUIRED_KEYS: dict[str, tuple[type, ...]] = {
    "paths.data_dir": (str,),
    "paths.landing_dir": (str,),
    "paths.jars_dir": (str,),
    "paths.warehouse_dir": (str,),
    "paths.checkpoint_dir": (str,),
    "spark.app_name": (str,),
    "spark.master": (str,),
    "spark.driver_memory": (str,),
    "spark.shuffle_partitions": (int,),
    "spark.file_open_cost_bytes": (int,),
    "spark.extra_conf": (dict,),
    "jars": (list,),
    "bronze.schema": (str,),
    "bronze.listing.lookback_days": (int,),
    "bronze.listing.full_every_runs": (int,),
    "silver.schema": (str,),
    "silver.stats_columns": (list,),
    "ops.schema": (str,),
    "cluster.host": (str,),
    "cluster.port": (int,),
    "cluster.webui_port": (int,),
    "cluster.workers": (int,),
    "cluster.worker_cores": (int,),
    "cluster.worker_memory": (str,),
    "metastore.kind": (str,),
    "serve.host": (str,),
    "serve.port": (int,),
    "gold.schema": (str,),
    "gold.failed_login_burst.failures": (int,),
    "gold.failed_login_burst.window_minutes": (int,),
    "gold.inactive_user_days": (int,),
    "gold.compact_files_over": (int,),
    "quality.enabled": (bool,),
    "quality.context_dir": (str,),
    "quality.default_severity": (str,),
    "quality.thresholds": (dict,),
    "quality.severity": (dict,),
    "quality.pandas_max_rows": (int,),
    "generate.events": (int,),
    "generate.seed": (int,),
    "generate.start": (str,),
    "generate.days": (int,),
    "generate.layout": (str,),
    "writeback.source": (str,),
    "writeback.file.path": (str,),
    "writeback.file.default_database": (str,),
    "writeback.jdbc.host": (str,),
    "writeback.jdbc.port": (int,),
    "writeback.jdbc.user": (str,),
    "writeback.jdbc.password_env": (str,),
    "writeback.jdbc.table": (str,),
    "writeback.jdbc.connect_timeout_seconds": (int,),
    "writeback.databases": (dict,),
    "writeback.overlap_minutes": (int,),
}


class ConfigError(ValueError):
    """A configuration problem; the message names the key and the file."""


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
    def warehouse_dir(self) -> str:
        """Delta tables (Spark's warehouse): may be object storage."""
        return self.location("paths.warehouse_dir", "warehouse")

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


LAYER_SCHEMAS = ("bronze", "silver", "ops", "gold")


def variant_environ(data_dir: Path, name: str, environ: dict[str, str] | None = None) -> dict[str, str]:
    """AUDITLAKE__* overrides giving a lakehouse of its own (data dir, landing, GX context and
    schemas ``<layer>_<name>``) beside the main one in the same metastore: tests, benchmarks."""
    out = dict(os.environ if environ is None else environ)
    out["AUDITLAKE__PATHS__DATA_DIR"] = str(data_dir)
    out["AUDITLAKE__PATHS__LANDING_DIR"] = str(data_dir / "landing")
    out["AUDITLAKE__QUALITY__CONTEXT_DIR"] = str(data_dir / "gx_context")
    for layer in LAYER_SCHEMAS:
        out[f"AUDITLAKE__{layer.upper()}__SCHEMA"] = f"{layer}_{name}"
    return out


def _read_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    return data


def _merge(base: dict, over: dict, source: str, prefix: str = "") -> dict:
    out = deepcopy(base)
    for key, value in over.items():
        dotted = f"{prefix}{key}"
        if key not in base:
            raise ConfigError(f"{source}: unknown config key '{dotted}' (not in conf/base.yaml)")
        # free-form maps (extra_conf) take any keys
        if isinstance(base[key], dict) and isinstance(value, dict) and base[key]:
            out[key] = _merge(base[key], value, source, dotted + ".")
        else:
            out[key] = value
    return out


def _env_overrides(base: dict, environ: dict[str, str]) -> dict:
    """AUDITLAKE__PATHS__DATA_DIR=/x -> {"paths": {"data_dir": "/x"}} (YAML-typed value)."""
    over: dict = {}
    for name, raw in sorted(environ.items()):
        if not name.startswith(OVERRIDE_PREFIX):
            continue
        parts = [p.lower() for p in name[len(OVERRIDE_PREFIX) :].split("__")]
        node = over
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = yaml.safe_load(raw) if raw != "" else ""
    return over


def _resolve_env_refs(value: Any, where: str, environ: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _resolve_env_refs(v, f"{where}.{k}" if where else k, environ) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_env_refs(v, where, environ) for v in value]
    if isinstance(value, str):

        def sub(m: re.Match) -> str:
            if m.group(1) not in environ:
                raise ConfigError(f"config key '{where}' needs environment variable {m.group(1)}, which is not set")
            return environ[m.group(1)]

        return _ENV_REF.sub(sub, value)
    return value


def _validate(values: dict, files: tuple[str, ...]) -> None:
    cfg = Config("?", values, files)
    for key, kinds in REQUIRED_KEYS.items():
        value = cfg.get(key)
        # bool is an int in Python: only accept it where bool is what the key wants
        if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
            expected = " or ".join(k.__name__ for k in kinds)
            raise ConfigError(f"config key '{key}' must be {expected}, got {value!r} (files: {', '.join(files)})")


def load_config(env: str | None = None, conf_dir: Path = CONF_DIR, environ: dict[str, str] | None = None) -> Config:
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
    values = _merge(base, _read_yaml(env_path), str(env_path))
    values = _merge(values, _env_overrides(base, environ), "environment (AUDITLAKE__* variables)")
    values = _resolve_env_refs(values, "", environ)
    files = (str(base_path), str(env_path))
    _validate(values, files)
    return Config(env, values, files)
