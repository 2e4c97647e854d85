"""The driver JVM's garbage collector (spark.gc): the parallel collector by default, G1 one setting away."""

from __future__ import annotations

import os

import pytest

from pipelines.config import ConfigError, load_config
from pipelines.settings import GARBAGE_COLLECTORS
from pipelines.spark_session import GC_OPTIONS, spark_conf


def test_the_session_collects_with_the_parallel_collector(spark, cfg):
    assert cfg.settings.spark.gc == "parallel"
    assert set(GARBAGE_COLLECTORS) == set(GC_OPTIONS)  # every collector the config accepts has its JVM option
    management = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    collectors = {bean.getName() for bean in management.getGarbageCollectorMXBeans()}
    assert collectors == {"PS Scavenge", "PS MarkSweep"}, collectors  # the parallel collector's two


def test_g1_is_one_setting_away_and_an_unknown_collector_is_refused(cfg):
    g1 = load_config("test", environ={**os.environ, "AUDITLAKE__SPARK__GC": "g1"})
    options = spark_conf(g1)["spark.driver.extraJavaOptions"].split()
    assert GC_OPTIONS["g1"] in options and GC_OPTIONS["parallel"] not in options
    with pytest.raises(ConfigError, match=r"spark\.gc.*must be one of parallel, g1"):
        load_config("test", environ={**os.environ, "AUDITLAKE__SPARK__GC": "cms"})
