"""A lakehouse of its own beside the main one in the same metastore, for tests and benchmarks: its data
folder, landing, GX context and analysts' tables, and schemas ``<layer>_<name>``, as AUDITLAKE__* overrides."""

from __future__ import annotations

import os
from pathlib import Path

# the sections whose schema a variant renames
LAYER_SCHEMAS = ("bronze", "silver", "ops", "gold")


def variant_environ(data_dir: Path, name: str, environ: dict[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default ``os.environ``) with the overrides of the variant ``name`` under ``data_dir``."""
    out = dict(os.environ if environ is None else environ)
    out["AUDITLAKE__PATHS__DATA_DIR"] = str(data_dir)
    out["AUDITLAKE__PATHS__LANDING_DIR"] = str(data_dir / "landing")
    out["AUDITLAKE__QUALITY__CONTEXT_DIR"] = str(data_dir / "gx_context")
    out["AUDITLAKE__ANALYST__DIR"] = str(data_dir / "analyst")
    for layer in LAYER_SCHEMAS:
        out[f"AUDITLAKE__{layer.upper()}__SCHEMA"] = f"{layer}_{name}"
    return out
