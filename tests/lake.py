"""Test helper: the environment of a lakehouse variant (own data dir, GX context and schemas)."""

from __future__ import annotations

import os
from pathlib import Path


def variant_environ(lake_dir: Path, name: str) -> dict[str, str]:
    """AUDITLAKE__* overrides that give a test its own lakehouse inside the session's metastore."""
    environ = dict(os.environ)
    environ["AUDITLAKE__PATHS__DATA_DIR"] = str(lake_dir / name)
    environ["AUDITLAKE__PATHS__LANDING_DIR"] = str(lake_dir / name / "landing")
    environ["AUDITLAKE__QUALITY__CONTEXT_DIR"] = str(lake_dir / name / "gx_context")
    for layer in ("bronze", "silver", "ops", "gold"):
        environ[f"AUDITLAKE__{layer.upper()}__SCHEMA"] = f"{layer}_{name}"
    return environ
