"""Import the libraries a refresh needs later while Spark's JVM starts.

A new refresh process imports Great Expectations at its first quality gate and dbt at gold, each
taking seconds with the main thread waiting, while the JVM's start before them left a core idle. A
background thread imports them during that start instead (docs/performance.md, "The JVM"). The
main thread's own import of a module the thread is still importing waits for it (Python's
per-module import lock), so nothing is used half-loaded; a module that fails to import here is
imported again, and fails with its own error, where the refresh needs it.
"""

from __future__ import annotations

import importlib
import threading

from pipelines.config.load import Config

GATES = ("great_expectations", "pipelines.quality.suites")  # the gates' library and suites
GOLD = ("dbt.cli.main",)  # dbt's runner (pipelines/gold/run.py imports it when gold runs)


def modules_for(cfg: Config, layers: list[str]) -> tuple[str, ...]:
    """What a refresh of ``layers`` will import: the gates' modules where silver or gold runs with
    ``quality.enabled``, dbt's where gold runs."""
    gates = cfg.settings.quality.enabled and ("silver" in layers or "gold" in layers)
    return (GATES if gates else ()) + (GOLD if "gold" in layers else ())


def _import_all(names: tuple[str, ...]) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 (said where it is needed: the refresh imports it again)
            return


def preload(names: tuple[str, ...]) -> threading.Thread | None:
    """Start importing ``names`` in a daemon thread (None when there is nothing to import)."""
    if not names:
        return None
    thread = threading.Thread(target=_import_all, args=(names,), name="auditlake-preload", daemon=True)
    thread.start()
    return thread
