"""The log roots a refresh copies from: ``sources.server_logs.roots``, and one given on the command line."""

from __future__ import annotations

import copy
import dataclasses
import os

from pipelines.config.load import Config
from pipelines.config.settings import ServerLogRoot
from pipelines.errors import UsageError
from pipelines.server_logs.discover import ARCHIVE_SUFFIX, LogRoot


def configured_roots(cfg: Config) -> list[LogRoot]:
    return [LogRoot(str(cfg_path(r.path)), r.node) for r in cfg.settings.sources.server_logs.roots]


def cfg_path(path: str) -> str:
    from pipelines.config.project import resolve

    return str(resolve(path))


def with_root(cfg: Config, path: str, node: str = "") -> Config:
    """``cfg`` with one more log root (``refresh --server-logs DIR``), checked as the config's are."""
    if not (os.path.isdir(path) or (os.path.isfile(path) and path.lower().endswith(ARCHIVE_SUFFIX))):
        raise UsageError(f"--server-logs {path}: no such folder or .zip archive")
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
