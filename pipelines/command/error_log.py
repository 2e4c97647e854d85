"""The error log: a failed command's whole traceback (Spark's Java stack trace and plan included)
appended to ``<data_dir>/logs/auditlake-errors.log``, whose path the one-line message names."""

from __future__ import annotations

import sys
import traceback
from datetime import UTC, datetime
from pathlib import Path

from pipelines.config.load import Config
from pipelines.runtime.spark_session import log_dir


def write_traceback(cfg: Config | None) -> Path | None:
    """The exception being handled, appended to the error log -> its path; None when there is no
    configuration to find it by or the file cannot be written."""
    if cfg is None:
        return None
    try:
        path = log_dir(cfg) / "auditlake-errors.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"\n==== {datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} auditlake {' '.join(sys.argv[1:])}\n")
            fh.write(traceback.format_exc())
        return path
    except OSError:
        return None
