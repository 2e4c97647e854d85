"""What a delivery's bronze and silver cost whatever its rows (issue 30, target 1's silver parts).

The ingest bench notes, around its +1% delivery, the session's finished Spark jobs (Spark's REST
API) and every lake table's Delta version: the delivery's profile is how many jobs it ran, how long
the driver waited on them, and how many commits it made to which tables. On the same session it
then times one Delta commit of one row and one Spark job of one row (``unit_costs``). The floor is the
delivery's commits and its other jobs at those costs: what the delivery would take if no step cost
more than its own overhead, whatever its rows.
"""

from __future__ import annotations

import json
import statistics
import time
import urllib.request
from datetime import datetime

from pipelines.config.load import Config
from pipelines.lake.delta_tables import table_version
from pipelines.lake.table_names import tables

FLOOR_SCHEMA = "bench_floor"  # a scratch schema of the floor's one table, dropped after


def spark_jobs(spark) -> list[dict]:
    """Every finished job of this session (id, start and end, seconds, tasks, the step that ran it),
    from Spark's REST API; [] when the UI is off."""
    url = spark.sparkContext.uiWebUrl
    if not url:
        return []
    app = spark.sparkContext.applicationId
    with urllib.request.urlopen(f"{url}/api/v1/applications/{app}/jobs", timeout=10) as response:
        jobs = json.load(response)

    def ts(text: str) -> float:
        return datetime.strptime(text[:23], "%Y-%m-%dT%H:%M:%S.%f").timestamp()

    # a job's description is the step that ran it (pipelines.runtime.spark_session.describe_jobs)
    return [
        {
            "id": j["jobId"],
            "start": ts(j["submissionTime"]),
            "end": ts(j["completionTime"]),
            "seconds": ts(j["completionTime"]) - ts(j["submissionTime"]),
            "tasks": j["numTasks"],
            "name": j.get("description") or j["name"],
        }
        for j in jobs
        if j.get("completionTime")
    ]


def jobs_between(before: list[dict], after: list[dict]) -> list[dict]:
    seen = {j["id"] for j in before}
    return [j for j in after if j["id"] not in seen]


def busy_seconds(jobs: list[dict]) -> float:
    """How long at least one of ``jobs`` was running (jobs that overlap count once)."""
    total, reach = 0.0, float("-inf")
    for j in sorted(jobs, key=lambda j: j["start"]):
        start = max(j["start"], reach)
        if j["end"] > start:
            total += j["end"] - start
        reach = max(reach, j["end"])
    return total


def lake_versions(spark, cfg: Config) -> dict[str, int]:
    """The current Delta version of every table of the lake's schemas (views left out)."""
    versions = {}
    for schema in tables(cfg).table_schemas:
        if not spark.catalog.databaseExists(schema):
            continue
        views = {r["viewName"] for r in spark.sql(f"SHOW VIEWS IN {schema}").collect()}
        for row in spark.sql(f"SHOW TABLES IN {schema}").collect():
            if not row["isTemporary"] and row["tableName"] not in views:
                versions[f"{schema}.{row['tableName']}"] = table_version(spark, f"{schema}.{row['tableName']}")
    return versions


def commits_between(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Commits per table between two ``lake_versions`` (a table created since: its versions from 0)."""
    moved = {name: version - before.get(name, -1) for name, version in after.items()}
    return {name: n for name, n in sorted(moved.items()) if n > 0}


def unit_costs(spark, repeats: int = 7) -> dict:
    """On this session: the median seconds of a one-row append to a Delta table in the catalog (its
    Spark jobs and its commit) and of a one-row Spark job, with how many jobs the append runs."""

    def median_of(action) -> float:
        seconds = []
        for _ in range(repeats):
            started = time.monotonic()
            action()
            seconds.append(time.monotonic() - started)
        return statistics.median(seconds)

    table = f"{FLOOR_SCHEMA}.one_row"
    spark.sql(f"DROP SCHEMA IF EXISTS {FLOOR_SCHEMA} CASCADE")
    spark.sql(f"CREATE SCHEMA {FLOOR_SCHEMA}")
    try:
        row = spark.createDataFrame([(1, "x")], "id long, text string")
        row.write.format("delta").saveAsTable(table)
        job = spark.range(1)
        job.collect()  # the first of each is not measured: planning caches warm up
        row.write.format("delta").mode("append").saveAsTable(table)
        jobs_before = spark_jobs(spark)
        append_s = median_of(lambda: row.write.format("delta").mode("append").saveAsTable(table))
        appended = len(jobs_between(jobs_before, spark_jobs(spark)))
        job_s = median_of(job.collect)
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS {FLOOR_SCHEMA} CASCADE")
    return {"append_s": append_s, "jobs_per_append": appended / repeats, "job_s": job_s}


class StepClock:
    """A refresh's ``log``: each line with the seconds since the line before (the step it ends)."""

    def __init__(self) -> None:
        self.lines: list[tuple[float, str]] = []
        self._last = time.monotonic()

    def __call__(self, message: str) -> None:
        now = time.monotonic()
        self.lines.append((now - self._last, message.splitlines()[0][:110]))
        self._last = now

    def longest(self, top: int = 8) -> list[tuple[float, str]]:
        """The ``top`` longest steps, in the order they ran."""
        kept = sorted(sorted(range(len(self.lines)), key=lambda i: -self.lines[i][0])[:top])
        return [self.lines[i] for i in kept]


def delivery_floor(jobs: int, commits: int, unit: dict) -> float:
    """The seconds of ``commits`` one-row appends and the delivery's other jobs as one-row jobs."""
    other_jobs = max(0.0, jobs - commits * unit["jobs_per_append"])
    return commits * unit["append_s"] + other_jobs * unit["job_s"]


def profile(seconds: float, jobs: list[dict], commits: dict[str, int], unit: dict) -> dict:
    """A delivery's profile: ``seconds`` of wall time, the jobs it ran, the commits it made, its floor."""
    count = sum(commits.values())
    return {
        "seconds": seconds,
        "jobs": len(jobs),
        "job_seconds": busy_seconds(jobs),
        "commits": commits,
        "floor_s": delivery_floor(len(jobs), count, unit),
        "unit": unit,
    }
