"""Feed completeness: ops.feed_completeness counts every silver row and file by site and
delivery hour, and a site that stops delivering is flagged (gold.rpt_feed_gaps, the refresh line)."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import datetime

import pytest
from pyspark.sql import functions as F

from auditlake_devtools.sample.activity_log import generate_activity_log
from pipelines.activity_log import FAMILIES
from pipelines.activity_log.feed import log_quiet_sites, quiet_sites, update_feed_completeness
from pipelines.config.load import load_config
from pipelines.gold.run import run_dbt
from pipelines.lake.delta_tables import table_version
from pipelines.lake.table_names import tables
from pipelines.refresh import run_refresh
from tests.lake import variant_environ

_HOUR = re.compile(r"siteLuid=([^/]+)/y=(\d+)/m=(\d+)/d=(\d+)/h=(\d+)/")
SILENT_FROM_HOUR = 12  # the silenced site delivers nothing on the last day from this hour on


def _site_hours(landing) -> dict[str, set[datetime]]:
    hours: dict[str, set[datetime]] = defaultdict(set)
    for path in landing.rglob("*.json*"):
        m = _HOUR.search(path.as_posix())
        if m:
            hours[m.group(1)].add(datetime(*map(int, m.groups()[1:])))
    return hours


@pytest.fixture(scope="module")
def feed_lake(spark, lake_dir):
    """Three days of three sites and the tenant; the most regular site goes silent at noon on the
    last day. Bronze and silver, then the gap report alone."""
    cfg = load_config("test", environ=variant_environ(lake_dir, "feed"))
    landing = cfg.path("paths.landing_dir")
    generate_activity_log(landing, 1500, seed=7, days=3)
    hours = _site_hours(landing)
    silent = max(sorted(hours), key=lambda site: len(hours[site]))
    last_day = max(h.date() for h in hours[silent])
    for path in sorted(landing.rglob(f"siteLuid={silent}/**/*.json*")):
        m = _HOUR.search(path.as_posix())
        when = datetime(*map(int, m.groups()[1:]))
        if when.date() == last_day and when.hour >= SILENT_FROM_HOUR:
            path.unlink()
    run_refresh(spark, cfg, ["bronze", "silver"], log=lambda _m: None)
    run_dbt(spark, cfg, ["build", "--quiet", "--select", "+rpt_feed_gaps"])  # with its staging view
    return cfg, silent, _site_hours(landing)


def test_every_silver_row_and_file_is_counted_by_site_and_delivery_hour(spark, feed_lake):
    cfg, _silent, delivered = feed_lake
    t = tables(cfg)
    feed = spark.table(t.feed_completeness)
    for family in FAMILIES:
        silver = spark.table(t.silver_events(family))
        figures = (
            feed.where(F.col("family") == family)
            .agg(
                F.sum("records").alias("records"),
                F.sum("files").alias("files"),
                F.sum("lag_records").alias("lag_records"),
                F.min("lag_seconds_max").alias("min_lag"),
            )
            .first()
        )
        assert figures["records"] == silver.count() > 0, family
        assert figures["files"] == silver.select("source_file").distinct().count(), family
        # no eventProcessedTime in these records: the lag is the landing time minus eventTime
        assert figures["lag_records"] == figures["records"] and figures["min_lag"] > 0, family
    rows = feed.where(F.col("family") == "site").select("site_luid", "delivery_hour").collect()
    counted: dict[str, set[datetime]] = defaultdict(set)
    for r in rows:
        counted[r["site_luid"]].add(r["delivery_hour"])
    assert counted == delivered  # the hour folders of the paths, site by site


def test_an_update_with_nothing_new_commits_nothing(spark, feed_lake):
    cfg = feed_lake[0]
    table = tables(cfg).feed_completeness
    before = table_version(spark, table)
    assert update_feed_completeness(spark, cfg, log=lambda _m: None) == 0
    assert table_version(spark, table) == before


def test_a_site_that_stopped_delivering_is_flagged(spark, feed_lake):
    cfg, silent, delivered = feed_lake
    gaps = spark.table(tables(cfg).gold("rpt_feed_gaps"))
    after = gaps.where("after_last_delivery").groupBy("site_luid").count().collect()
    assert {r["site_luid"] for r in after if r["count"] >= cfg.get("feed.quiet_after_hours")} == {silent}
    assert [(s["family"], s["site_luid"]) for s in quiet_sites(spark, cfg)] == [("site", silent)]
    assert quiet_sites(spark, cfg)[0]["last_delivery_hour"] == max(delivered[silent])
    lines: list[str] = []
    log_quiet_sites(spark, cfg, log=lines.append)
    assert len(lines) == 1 and silent in lines[0] and "gone quiet" in lines[0]
