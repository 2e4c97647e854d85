"""Bronze landing on generated Activity Logs, through real Spark streaming and Delta tables."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from pipelines import bronze
from pipelines.config import load_config
from pipelines.generate import generate_activity_log
from pipelines.refresh import new_run_id

pytestmark = pytest.mark.integration

_LINE_BREAK = re.compile(rb"\r\n|\r|\n")


def is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def content(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def physical_lines(path: Path) -> int:
    """Lines as Hadoop's LineReader (Spark's text source) splits them: \\n, \\r\\n or \\r."""
    data = content(path)
    if not data:
        return 0
    parts = _LINE_BREAK.split(data)
    return len(parts) - (1 if parts[-1] == b"" else 0)


def lines_under(root: Path) -> int:
    return sum(physical_lines(p) for p in root.rglob("*") if p.is_file())


def variant(lake_dir: Path, name: str):
    """A config with its own checkpoints and bronze schema, so tests do not see each other."""
    environ = dict(os.environ)
    environ["AUDITLAKE__PATHS__DATA_DIR"] = str(lake_dir / name)
    environ["AUDITLAKE__PATHS__LANDING_DIR"] = str(lake_dir / name / "landing")
    environ["AUDITLAKE__BRONZE__SCHEMA"] = f"bronze_{name}"
    return load_config("test", environ=environ)


def landed(spark, cfg, family: str):
    return spark.table(bronze.bronze_table(cfg, family))


@pytest.fixture(scope="module")
def clean(spark, lake_dir):
    cfg = variant(lake_dir, "clean")
    landing = cfg.path("paths.landing_dir")
    summary = generate_activity_log(landing, 1500, seed=7, days=2)
    results = bronze.land_bronze(spark, cfg, new_run_id(), log=lambda _m: None)
    return cfg, landing, summary, results


@pytest.fixture(scope="module")
def dirty(spark, lake_dir):
    cfg = variant(lake_dir, "dirty")
    landing = cfg.path("paths.landing_dir")
    summary = generate_activity_log(landing, 1500, seed=11, days=2, dirty=True)
    bronze.land_bronze(spark, cfg, new_run_id(), log=lambda _m: None)
    return cfg, landing, summary


def test_every_line_lands_once(spark, clean):
    cfg, landing, summary, results = clean
    for family in bronze.FAMILIES:
        expected = lines_under(landing / family)
        assert expected > 0
        assert landed(spark, cfg, family).count() == expected
    assert sum(r.rows_landed for r in results) == summary["lines"]
    files = {str(p) for p in landing.rglob("*") if p.is_file()}
    got = {
        r["source_file"]
        for fam in bronze.FAMILIES
        for r in landed(spark, cfg, fam).select("source_file").distinct().collect()
    }
    assert got == files


def test_rerun_with_nothing_new_adds_nothing(spark, clean):
    cfg, _, _, _ = clean
    before = {f: landed(spark, cfg, f).count() for f in bronze.FAMILIES}
    results = bronze.land_bronze(spark, cfg, new_run_id(), log=lambda _m: None)
    assert [r.rows_landed for r in results] == [0, 0]
    assert {f: landed(spark, cfg, f).count() for f in bronze.FAMILIES} == before


def test_a_new_file_adds_exactly_its_lines(spark, clean):
    cfg, landing, _, _ = clean
    source = next(p for p in sorted((landing / "site").rglob("*.json")))
    new_file = source.parent / "part-new-99999.json"
    shutil.copyfile(source, new_file)
    before = landed(spark, cfg, "site").count()
    run_id = new_run_id()
    results = bronze.land_bronze(spark, cfg, run_id, log=lambda _m: None)
    site = next(r for r in results if r.family == "site")
    assert site.files_landed == 1 and site.rows_landed == physical_lines(new_file)
    assert landed(spark, cfg, "site").count() == before + physical_lines(new_file)
    rows = landed(spark, cfg, "site").where(F.col("run_id") == run_id).collect()
    assert {r["source_file"] for r in rows} == {str(new_file)}
    assert sorted(r["raw_line"] for r in rows) == sorted(new_file.read_text(encoding="utf-8").splitlines())


def test_gzip_files_land_decompressed(spark, clean):
    cfg, landing, summary, _ = clean
    assert summary["gzip_files"] > 0
    gz = landed(spark, cfg, "site").where(F.col("source_file").endswith(".gz"))
    assert gz.count() == sum(physical_lines(p) for p in (landing / "site").rglob("*.gz"))
    assert gz.where("parse_status = 'ok'").count() == gz.count()


def test_routing_fields_from_both_shapes(spark, clean):
    cfg, _, _, _ = clean
    site = landed(spark, cfg, "site")
    shapes = {r["record_shape"] for r in site.select("record_shape").distinct().collect()}
    assert shapes == {"flat", "envelope"}
    # event_type always matches the eventType= folder for clean data, in either shape
    folder = F.regexp_extract("source_file", r"/eventType=([^/]+)/", 1)
    assert site.where(F.col("event_type") != folder).count() == 0
    assert site.where(F.col("event_time").isNull()).count() == 0
    assert site.where(F.length("content_hash") != 64).count() == 0
    meta = site.where(
        F.col("source_file_size").isNull()
        | F.col("source_file_mtime").isNull()
        | F.col("ingest_ts").isNull()
        | F.col("run_id").isNull()
    )
    assert meta.count() == 0


def test_dirty_feed_lands_everything_and_flags_malformed(spark, dirty):
    cfg, landing, summary = dirty
    total = sum(landed(spark, cfg, f).count() for f in bronze.FAMILIES)
    assert total == lines_under(landing) == summary["lines"]
    both = landed(spark, cfg, "site").unionByName(landed(spark, cfg, "tenant"))
    status = {r["parse_status"]: r["n"] for r in both.groupBy("parse_status").agg(F.count("*").alias("n")).collect()}
    assert status.get("blank", 0) >= summary["dirty"]["blank_line"]
    assert status.get("malformed", 0) >= summary["dirty"]["malformed_line"]
    # malformed rows keep their raw text and have no lifted fields
    bad = both.where("parse_status = 'malformed'")
    assert bad.where(F.col("raw_line").isNull() | F.col("event_type").isNotNull()).count() == 0


def test_dirty_bom_and_missing_type(spark, dirty):
    cfg, landing, summary = dirty
    both = landed(spark, cfg, "site").unionByName(landed(spark, cfg, "tenant"))
    # Spark's text source (Hadoop's line reader) drops a UTF-8 byte-order mark at the start of a
    # file: it is the file's encoding marker, not part of the line, and the line still parses.
    bom_files = [p for p in landing.rglob("*.json*") if content(p).startswith(b"\xef\xbb\xbf")]
    assert len(bom_files) == summary["dirty"]["bom"] >= 2
    for path in bom_files:
        first = content(path)[3:].splitlines()[0].decode("utf-8")
        rows = both.where((F.col("source_file") == str(path)) & (F.col("raw_line") == first)).collect()
        assert len(rows) >= 1
        assert {r["parse_status"] for r in rows} == {"ok" if is_json_object(first) else "malformed"}
    assert both.where(F.col("raw_line").startswith("\ufeff")).count() == 0
    from_folder = both.where("event_type_from_folder")
    assert from_folder.count() == summary["dirty"]["missing_event_type"]
    assert from_folder.where(F.col("event_type").isNull()).count() == 0


def test_transform_flags_each_kind_of_line(spark):
    rows = [
        ('{"eventType":"hist_login","eventTime":"2024-06-16T18:03:47Z"}', "/l/site/eventType=hist_login/p.json"),
        (
            '{"traceUuid":"t","event":{"eventTime":"2024-06-16T18:03:47Z"},"metadata":{"eventType":"hist_logout"}}',
            "/l/site/eventType=hist_logout/p.json",
        ),
        ('{"eventTime":"2024-06-16T18:03:47Z"}', "/l/site/eventType=hist_access_view/p.json"),
        ('{"eventType": "hist_login", "eventTime": ', "/l/site/eventType=hist_login/p.json"),
        ("", "/l/site/eventType=hist_login/p.json"),
        ("[1, 2]", "/l/site/eventType=hist_login/p.json"),
    ]
    raw = spark.createDataFrame(
        [(v, f, 10, None) for v, f in rows],
        "value string, source_file string, source_file_size long, source_file_mtime timestamp",
    )
    out = [r.asDict() for r in bronze.to_bronze_rows(raw, "site", "run-1").collect()]
    got = [(r["parse_status"], r["record_shape"], r["event_type"], r["event_type_from_folder"]) for r in out]
    assert got == [
        ("ok", "flat", "hist_login", False),
        ("ok", "envelope", "hist_logout", False),
        ("ok", "flat", "hist_access_view", True),
        ("malformed", None, None, False),
        ("blank", None, None, False),
        ("malformed", None, None, False),
    ]
    assert out[1]["event_time"] == "2024-06-16T18:03:47Z"
    assert {r["run_id"] for r in out} == {"run-1"}
