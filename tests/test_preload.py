"""A refresh imports Great Expectations and dbt in a background thread while Spark's JVM starts
(pipelines/refresh/preload.py): the modules each layer needs, and whole modules for the main thread."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pipelines.config.load import load_config
from pipelines.refresh.preload import GATES, GOLD, modules_for


def test_a_refresh_preloads_what_its_layers_import(cfg):
    assert modules_for(cfg, ["bronze", "silver", "gold"]) == GATES + GOLD
    assert modules_for(cfg, ["bronze", "silver"]) == GATES
    assert modules_for(cfg, ["gold"]) == GATES + GOLD  # the silver -> gold gate
    assert modules_for(cfg, ["bronze"]) == ()  # bronze alone runs no gate and no dbt
    no_gates = load_config("test", environ={**os.environ, "AUDITLAKE__QUALITY__ENABLED": "false"})
    assert modules_for(no_gates, ["bronze", "silver", "gold"]) == GOLD


@pytest.mark.subprocess
def test_the_main_thread_gets_whole_modules_while_the_thread_still_imports_them():
    """In a new process (nothing imported yet), the main thread uses GX and dbt right after the
    thread started importing them: it waits for each module, never sees one half-loaded."""
    script = (
        "import sys, time\n"
        "from pipelines.refresh.preload import GATES, GOLD, preload\n"
        "assert 'great_expectations' not in sys.modules\n"
        "thread = preload(GATES + GOLD)\n"
        "time.sleep(0.5)\n"  # the thread is inside GX's import now (it takes seconds)
        "from great_expectations import expectations as gxe\n"
        "from pipelines.quality.suites import SuiteSpec, silver_batch_suite\n"
        "from dbt.cli.main import dbtRunner\n"
        "check = gxe.ExpectColumnValuesToNotBeNull(column='c')\n"
        "thread.join(60)\n"
        "print(check.column, callable(silver_batch_suite), thread.is_alive(), callable(dbtRunner))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["c", "True", "False", "True"], out.stdout
