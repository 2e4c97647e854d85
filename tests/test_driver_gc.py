"""The driver JVM's garbage collector (spark.gc: the parallel collector by default, G1 one setting away)
and its JIT compilers (spark.jit: tiered by default, C1 only one setting away)."""

from __future__ import annotations

import os

import pytest

from pipelines.config.load import ConfigError, load_config
from pipelines.config.settings import GARBAGE_COLLECTORS, JIT_COMPILERS
from pipelines.runtime.spark_session import GC_OPTIONS, JIT_OPTIONS, spark_conf


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


def _vm_option(spark, name: str) -> str:
    jvm = spark.sparkContext._jvm
    bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
    )
    return bean.getVMOption(name).getValue()


def test_the_session_compiles_with_the_tiered_compilers_and_c1_only_is_one_setting_away(spark, cfg):
    assert set(JIT_COMPILERS) == set(JIT_OPTIONS)  # every choice the config accepts has its JVM options
    assert cfg.settings.spark.jit == "tiered"
    assert _vm_option(spark, "TieredStopAtLevel") == "4"  # C2 too
    assert _vm_option(spark, "Tier4InvocationThreshold") == "15000"  # taken later than Java's 5,000
    c1 = load_config("test", environ={**os.environ, "AUDITLAKE__SPARK__JIT": "c1"})
    options = spark_conf(c1)["spark.driver.extraJavaOptions"]
    assert JIT_OPTIONS["c1"] in options and "Tier4InvocationThreshold" not in options
    with pytest.raises(ConfigError, match=r"spark\.jit.*must be one of tiered, c1"):
        load_config("test", environ={**os.environ, "AUDITLAKE__SPARK__JIT": "c2"})
