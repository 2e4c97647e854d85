"""dbt's floor on this engine: what a build of a delivery's nodes costs when each reads one row.

The refresh bench (auditlake_devtools/bench_refresh.py) runs this after its delivery with the delivery's own
mix of nodes (views, tables, incremental merges and appends, data tests: ``node_mix``). Every model
here reads a one-row Delta table and every test counts the rows of one model, so what such a build
takes is what dbt-spark, Spark and Delta charge per node (dbt's metadata queries, a Spark job or
several, a Delta commit), whatever the rows: the part of a delivery's gold that no change to the
marts' SQL can take away. For contrast the same statements run without dbt, one after another, in
the same session: the engine's own floor.

Run in a process of its own, on the lake the environment names (the bench's, not the project's):
``python -m auditlake_devtools.bench_dbt_floor '<mix as JSON>'``; it prints one JSON line of figures.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

SCHEMA = "dbt_floor"  # the schema the floor's tables go to (dropped at the start and the end)
_KINDS = ("view", "table", "merge", "append")  # a model's kind: its materialization, or its strategy


def node_mix(manifest: dict, run_results: dict) -> dict[str, int]:
    """The kinds of node a build ran (run_results.json), by the manifest's config: the model kinds
    of ``_KINDS`` and ``test`` (data tests; unit tests are not run on a refresh)."""
    mix: Counter[str] = Counter()
    for result in run_results["results"]:
        node = manifest["nodes"].get(result["unique_id"]) or {}
        if node.get("resource_type") == "test":
            mix["test"] += 1
        elif node.get("resource_type") == "model":
            config = node["config"]
            kind = config["materialized"]
            # dbt-spark's default strategy is append
            mix[config.get("incremental_strategy") or "append" if kind == "incremental" else kind] += 1
    return {kind: mix[kind] for kind in (*_KINDS, "test")}


def _models(mix: dict[str, int]) -> list[tuple[str, str]]:
    """(model name, kind) for every model of the mix."""
    return [(f"{kind}_{i:03d}", kind) for kind in _KINDS for i in range(mix.get(kind, 0))]


def _tested(mix: dict[str, int]) -> list[str]:
    """The model each of the mix's tests counts the rows of, in turn (none without models)."""
    names = [name for name, _kind in _models(mix)]
    return [names[i % len(names)] for i in range(mix.get("test", 0))] if names else []


def write_project(folder: Path, mix: dict[str, int], threads: int) -> None:
    """A dbt project of ``mix``'s nodes over the one-row table ``SCHEMA.one_row``, on the process's
    SparkSession (dbt-spark's ``session`` method, as the pipeline's target)."""
    (folder / "models").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "dbt_project.yml").write_text(
        "name: dbt_floor\nversion: '1.0'\nprofile: dbt_floor\nflags:\n  send_anonymous_usage_stats: false\n"
        "models:\n  dbt_floor:\n    +file_format: delta\n"
    )
    (folder / "profiles.yml").write_text(
        "dbt_floor:\n  target: floor\n  outputs:\n    floor:\n      type: spark\n      method: session\n"
        f"      host: NA\n      schema: {SCHEMA}\n      threads: {threads}\n"
    )
    configs = {
        "view": "materialized='view'",
        "table": "materialized='table'",
        "merge": "materialized='incremental', incremental_strategy='merge', unique_key='id'",
        "append": "materialized='incremental', incremental_strategy='append'",
    }
    models = _models(mix)
    for name, kind in models:
        (folder / "models" / f"{name}.sql").write_text(f"{{{{ config({configs[kind]}) }}}}\n{_select(name)}\n")
    for i, name in enumerate(_tested(mix)):  # each counts one model's rows, as a not_null test does
        (folder / "tests" / f"test_{i:03d}.sql").write_text(f"select * from {{{{ ref('{name}') }}}} where id is null\n")


def _dbt_build(folder: Path) -> dict:
    from dbt.cli.main import dbtRunner

    started = time.monotonic()
    res = dbtRunner().invoke(["build", "--quiet", "--project-dir", str(folder), "--profiles-dir", str(folder)])
    seconds = time.monotonic() - started
    if not res.success:
        raise RuntimeError(f"dbt floor: build failed: {res.exception or 'a node failed'}")
    thread_s: Counter[str] = Counter()  # by kind: a model's name starts with its kind
    for node in res.result.results:
        thread_s["test" if node.node.resource_type == "test" else node.node.name.split("_")[0]] += node.execution_time
    # elapsed_s as run_results.json's elapsed_time (the nodes' execution), which the delivery's figure is;
    # wall_s with the project's parse and the adapter's start
    elapsed = float(res.result.elapsed_time)
    return {"elapsed_s": elapsed, "wall_s": seconds, "nodes": len(res.result.results), "thread_s": dict(thread_s)}


def _create_tables(spark, mix: dict[str, int]) -> None:
    """The tables and incremental marts as a delivery finds them: built before (so dbt merges and appends)."""
    for name, kind in _models(mix):
        if kind != "view":
            spark.sql(f"create table {SCHEMA}.{name} using delta as {_select(name)}")


def _select(name: str) -> str:
    return f"select id, '{name}' as model, current_timestamp() as built_at from {SCHEMA}.one_row"


def _plain_statements(spark, mix: dict[str, int]) -> dict[str, float]:
    """The same nodes as statements without dbt, one after another: seconds by kind."""
    seconds: Counter[str] = Counter()
    for name, kind in _models(mix):
        started = time.monotonic()
        select = _select(name)
        if kind == "view":
            spark.sql(f"create or replace view {SCHEMA}.{name} as {select}")
        elif kind == "table":
            spark.sql(f"create or replace table {SCHEMA}.{name} using delta as {select}")
        elif kind == "merge":
            spark.sql(
                f"merge into {SCHEMA}.{name} t using ({select}) s on t.id = s.id "
                "when matched then update set * when not matched then insert *"
            )
        else:
            spark.sql(f"insert into {SCHEMA}.{name} {select}")
        seconds[kind] += time.monotonic() - started
    started = time.monotonic()
    for name in _tested(mix):
        spark.sql(f"select count(*) from {SCHEMA}.{name} where id is null").collect()
    seconds["test"] = time.monotonic() - started
    return dict(seconds)


def measure(mix: dict[str, int]) -> dict:
    """The tables created as a delivery finds them, the floor project built by dbt (its incremental
    models merge or append one row), then the same statements without dbt."""
    from pipelines.config.load import load_config
    from pipelines.runtime.spark_session import build_spark

    cfg = load_config()
    started = time.monotonic()
    spark = build_spark(cfg)
    spark.sql("select 1").collect()
    spark_s = time.monotonic() - started
    spark.sql(f"drop schema if exists {SCHEMA} cascade")
    spark.sql(f"create schema {SCHEMA}")
    spark.sql(f"create table {SCHEMA}.one_row using delta as select cast(1 as bigint) as id")
    try:
        with tempfile.TemporaryDirectory(prefix="dbt-floor-") as tmp:
            folder = Path(tmp)
            write_project(folder, mix, cfg.settings.gold.threads)
            _create_tables(spark, mix)
            build = _dbt_build(folder)
        plain = _plain_statements(spark, mix)
    finally:
        spark.sql(f"drop schema if exists {SCHEMA} cascade")
    return {
        "mix": mix,
        "threads": cfg.settings.gold.threads,
        "spark_start_s": spark_s,
        "build": build,
        "plain_s": plain,
    }


if __name__ == "__main__":
    print(json.dumps(measure(json.loads(sys.argv[1]))))
