"""Small inputs run interpreted, planned once, on one shuffle partition (spark.codegen_min_rows): the
switch, its undoing, the row count a silver batch is judged by, and gold judged by silver's rows."""

from __future__ import annotations

import json
import os

from pipelines.activity_log.silver.promote import appended_versions, bronze_row_count
from pipelines.config.load import load_config
from pipelines.gold.run import over_silver
from pipelines.runtime.spark_session import SMALL_INPUT, small_input_below


def _cfg(cfg, **overrides):
    environ = {
        **os.environ,
        "AUDITLAKE__PATHS__DATA_DIR": str(cfg.data_dir),
        **{f"AUDITLAKE__SPARK__{k.upper()}": v for k, v in overrides.items()},
    }
    return load_config("test", environ=environ)


def _settings(spark) -> dict:
    return {key: spark.conf.get(key, None) for key in SMALL_INPUT}


def test_a_small_input_runs_with_its_settings_and_they_come_back_after(spark, cfg):
    small = _cfg(cfg, codegen_min_rows="1000")
    before = _settings(spark)
    with small_input_below(spark, small, 999) as applied:
        assert applied and _settings(spark) == SMALL_INPUT
        assert spark.sql("select sum(id) from range(100)").first()[0] == 4950  # and queries still answer
    assert _settings(spark) == before
    with small_input_below(spark, small, 1000) as applied:
        assert not applied and _settings(spark) == before
    with small_input_below(spark, _cfg(cfg, codegen_min_rows="0"), 0) as applied:
        assert not applied  # 0: never the small-input settings


def test_an_operators_own_settings_win(spark, cfg):
    given = {"spark.sql.codegen.wholeStage": "true", "spark.sql.adaptive.enabled": "true"}
    before = _settings(spark)
    with small_input_below(spark, _cfg(cfg, codegen_min_rows="1000", extra_conf=json.dumps(given)), 10) as applied:
        now = _settings(spark)
        assert applied and {k: now[k] for k in given} == {k: before[k] for k in given}  # the operator's stay
        ours = {k: v for k, v in SMALL_INPUT.items() if k not in given}
        assert {k: now[k] for k in ours} == ours
    assert _settings(spark) == before
    every = _cfg(cfg, codegen_min_rows="1000", extra_conf=json.dumps(SMALL_INPUT))
    with small_input_below(spark, every, 10) as applied:
        assert not applied  # all of them given: nothing of ours to set


def test_a_batch_is_judged_by_the_rows_its_bronze_commits_appended(spark, cfg, tmp_path):
    table = "default.codegen_rows_probe"
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    try:
        spark.range(7).write.format("delta").saveAsTable(table)  # version 0
        spark.range(5).write.format("delta").mode("append").saveAsTable(table)  # 1
        spark.sql(f"DELETE FROM {table} WHERE id = 0")  # 2: rewrites, appends no row
        spark.range(3).write.format("delta").mode("append").saveAsTable(table)  # 3

        def count(after: int, upto: int) -> int:
            return bronze_row_count(spark, table, after, upto, appended_versions(spark, table, after, upto))

        assert count(-1, 1) == 12
        assert count(0, 3) == 8
        assert count(1, 2) == 0
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {table}")


def test_gold_over_a_small_silver_runs_with_its_settings_and_a_block_inside_keeps_the_outer_decision(spark, cfg):
    """over_silver: a refresh's gold layer, and each dbt run inside it, judged once by silver's rows."""
    before, never, always = _settings(spark), _cfg(cfg, codegen_min_rows="0"), _cfg(cfg, codegen_min_rows=str(10**12))
    with over_silver(spark, never):
        assert _settings(spark) == before
        with over_silver(spark, always):  # a dbt run inside a refresh's gold: the outer decision stands
            assert _settings(spark) == before
    with over_silver(spark, always):
        assert _settings(spark) == SMALL_INPUT
        with over_silver(spark, never):
            assert _settings(spark) == SMALL_INPUT
        assert _settings(spark) == SMALL_INPUT  # the block inside put back nothing of the outer one's
    assert _settings(spark) == before
