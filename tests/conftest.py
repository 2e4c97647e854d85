"""Shared fixtures: one Delta-enabled SparkSession per test run, in a throwaway lakehouse."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipelines.config import load_config
from pipelines.writeback.pg_server import free_port

REFERENCE_DIR = Path(__file__).resolve().parents[2] / "shared" / "reference"


@pytest.fixture(scope="session")
def lake_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("lake")


@pytest.fixture(scope="session")
def cfg(lake_dir):
    environ = dict(os.environ)
    environ["AUDITLAKE__PATHS__DATA_DIR"] = str(lake_dir)
    environ["AUDITLAKE__PATHS__LANDING_DIR"] = str(lake_dir / "landing")
    # the Thrift server's port is part of the session's configuration: a free one per test run
    environ["AUDITLAKE__SERVE__PORT"] = str(free_port())
    return load_config("test", environ=environ)


@pytest.fixture(scope="session")
def spark(cfg):
    from pipelines.spark_session import build_spark

    session = build_spark(cfg)
    yield session
    session.stop()
