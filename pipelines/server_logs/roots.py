"""The log roots a refresh copies from (``sources.server_logs.roots``, and one given on the command
line), and the copy as a refresh runs it."""

from __future__ import annotations

import copy
import dataclasses
import os

from pipelines.config.load import Config
from pipelines.config.project import resolve
from pipelines.config.settings import ServerLogRoot
from pipelines.errors import UsageError
from pipelines.lake import storage
from pipelines.server_logs.discover import ARCHIVE_SUFFIX, LogRoot
from pipelines.server_logs.pieces import CopyResult, copy_new_lines


def configured_roots(cfg: Config) -> list[LogRoot]:
    return [LogRoot(str(resolve(r.path)), r.node) for r in cfg.settings.sources.server_logs.roots]


def with_root(cfg: Config, path: str, node: str = "") -> Config:
    """``cfg`` with one more log root (``refresh --server-logs DIR``), checked as the config's are."""
    if not (os.path.isdir(path) or (os.path.isfile(path) and path.lower().endswith(ARCHIVE_SUFFIX))):
        raise UsageError(f"--server-logs {path}: no such folder or .zip archive")
    if not cfg.settings.sources.server_logs.timezone:
        raise UsageError(
            "--server-logs needs the servers' time zone (their native log lines carry local time): set "
            "sources.server_logs.timezone, e.g. AUDITLAKE__SOURCES__SERVER_LOGS__TIMEZONE=Europe/Berlin"
        )
    root = ServerLogRoot(path=os.path.abspath(path), node=node)
    logs = cfg.settings.sources.server_logs
    settings = cfg.settings.model_copy(
        update={
            "sources": cfg.settings.sources.model_copy(
                update={"server_logs": logs.model_copy(update={"roots": [*logs.roots, root]})}
            )
        }
    )
    values = copy.deepcopy(cfg.values)
    values["sources"]["server_logs"]["roots"].append(root.model_dump())
    return dataclasses.replace(cfg, values=values, settings=settings)


def copies_before_spark(cfg: Config) -> bool:
    """Whether the copy can run before Spark starts (a local landing tree and checkpoints), so that
    the check for a refresh with nothing new sees what it copied."""
    return bool(configured_roots(cfg)) and all(
        storage.local_path(x) is not None for x in (cfg.landing_dir, cfg.checkpoint_dir)
    )


def copy_server_logs(cfg: Config, spark, log) -> CopyResult:
    """The copy into ``paths.landing_dir`` (also under ``refresh --source``: the copies are the lake's
    archive of the logs, landed by the next refresh that reads the landing folder)."""
    result = copy_new_lines(
        spark,
        configured_roots(cfg),
        cfg.settings.sources.server_logs.timezone,
        cfg.landing_dir,
        cfg.checkpoint_dir,
        log=log,
    )
    for problem in result.problems:
        log(problem)
    return result
