"""``auditlake export ocsf``: gold's security facts as OCSF events in Security Lake's layout.

Every exported row is validated against OCSF 1.3.0 as the ``ocsf-json-schema`` wheel ships it
(the official schema export of schema.ocsf.io for each version, turned into JSON Schema draft
2020-12 offline): required attributes present and not null, recursively through the objects,
at-least-one constraints, enumerated ids, no attribute the class does not have. The export runs
on a copy of ``gold_lake``'s marts in a gold schema of its own, so the test can add rows to it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from jsonschema import Draft202012Validator
from ocsf_json_schema import OcsfJsonSchemaEmbedded, get_ocsf_schema
from pyspark.sql import functions as F

from pipelines.config.load import ConfigError, load_config
from pipelines.ocsf.export import export_ocsf
from pipelines.ocsf.mapping import CLASSES
from tests.lake import KEYED, variant_environ

MARTS = sorted({src.mart for cls in CLASSES for src in cls.sources})
LAYOUT = re.compile(
    r"ext/tableau-(\d{4})/region=us-east-1/accountId=external/eventDay=(\d{8})/"
    r"part-[^/]+\.zstd\.parquet"
)
# The rows of each mart that no class exports, and why (docs/ocsf.md): no grantee, no user identified
# (legacy-edition sign-ins carry only an integer user id; a group joining a group set adds no user), or
# exported from fct_user_lifecycle already.
UNMAPPED = {
    "fct_logins": "coalesce(user_luid, tenant_user_id) IS NULL",
    "fct_user_lifecycle": "coalesce(user_luid, tenant_user_id) IS NULL",
    "fct_permission_changes": "grantee_type IS NULL",
    "fct_tenant_security_changes": "false",  # its role changes: the same events as fct_user_lifecycle's
    "fct_group_membership_changes": "membership_of = 'group_set'",
    "fct_content_access": "false",
}


@pytest.fixture(scope="module")
def ocsf_lake(spark, gold_lake, lake_dir):
    """gold_lake's marts copied into schema gold_ocsf (ops_ocsf for the export's state); -> config."""
    cfg = load_config("test", environ=variant_environ(lake_dir, "ocsf"))
    source, target = gold_lake[0].get("gold.schema"), cfg.get("gold.schema")
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {target}")
    for mart in MARTS:
        spark.sql(f"CREATE OR REPLACE TABLE {target}.{mart} USING delta AS SELECT * FROM {source}.{mart}")
    return cfg


@pytest.fixture(scope="module")
def first_export(spark, ocsf_lake):
    lines: list[str] = []
    results = export_ocsf(spark, ocsf_lake, log=lines.append)
    return results, lines, _out(ocsf_lake)


def _out(cfg) -> Path:
    return cfg.data_dir / "ocsf"


def _files(out: Path) -> set[str]:
    return {p.relative_to(out).as_posix() for p in out.rglob("*.parquet")}


def _rows(out: Path, files) -> list[dict]:
    return [row for f in sorted(files) for row in pq.ParquetFile(out / f).read().to_pylist(maps_as_pydicts="strict")]


def _present(value):
    """The event as OCSF JSON has it: a NULL in the Parquet is an attribute left out."""
    if isinstance(value, dict):
        return {k: _present(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_present(v) for v in value]
    return value


def test_the_export_writes_each_class_in_security_lakes_layout(spark, ocsf_lake, first_export):
    results, lines, out = first_export
    gold = ocsf_lake.get("gold.schema")
    for cls, result in zip(CLASSES, results, strict=True):
        expected = sum(spark.table(f"{gold}.{src.mart}").where(src.rows or "true").count() for src in cls.sources)
        assert expected > 0, f"the sample holds no row for {cls.uid}: the test would prove nothing"
        assert result.events == expected, (cls.uid, result.events, expected)
        assert any(
            line.startswith(
                f"ocsf: {cls.uid} {cls.name}: {expected:,} events -> ext/tableau-{cls.uid}/"
                "region=us-east-1/accountId=external/eventDay="
            )
            for line in lines
        ), lines
    files = _files(out)
    assert files and all(LAYOUT.fullmatch(f) for f in files), sorted(files)
    assert {LAYOUT.fullmatch(f).group(1) for f in files} == {str(cls.uid) for cls in CLASSES}
    assert not list(out.rglob("_SUCCESS"))
    for f in files:
        uid, day = LAYOUT.fullmatch(f).groups()
        rows = _rows(out, [f])
        times = [r["time"] for r in rows]
        assert times == sorted(times), f"{f}: not sorted by time"
        assert {r["class_uid"] for r in rows} == {int(uid)}  # one class per object
        assert {datetime.fromtimestamp(t / 1000, UTC).strftime("%Y%m%d") for t in times} == {day}


def test_every_event_validates_against_the_ocsf_schema(first_export):
    _, _, out = first_export
    schema = get_ocsf_schema(version="1.3.0")
    ocsf = OcsfJsonSchemaEmbedded(schema)
    validators: dict[tuple, Draft202012Validator] = {}
    problems, checked = [], 0
    for raw in _rows(out, _files(out)):
        event = _present(raw)
        profiles = tuple(event["metadata"].get("profiles", []))
        key = (event["class_uid"], profiles)
        if key not in validators:
            name = ocsf.lookup_class_name_from_uid(class_uid=event["class_uid"])
            validators[key] = Draft202012Validator(ocsf.get_class_schema(class_name=name, profiles=list(profiles)))
        problems += [
            f"{event['class_uid']} {event['metadata']['uid']}: {e.message[:200]}"
            for e in validators[key].iter_errors(event)
        ]
        definition = next(c for c in schema["classes"].values() if c["uid"] == event["class_uid"])
        activity = definition["attributes"]["activity_id"]["enum"][str(event["activity_id"])]["caption"]
        assert (event["class_name"], event["category_uid"], event["activity_name"]) == (
            definition["caption"],
            definition["category_uid"],
            activity,
        )
        assert event["type_uid"] == event["class_uid"] * 100 + event["activity_id"]
        assert event["metadata"]["version"] == "1.3.0"
        assert event["metadata"]["product"] == {"name": "Tableau", "vendor_name": "Salesforce"}
        checked += 1
    assert checked > 100 and problems == [], problems[:10]
    assert {k[0] for k in validators} == {cls.uid for cls in CLASSES}


def test_every_mart_row_is_exported_once_or_left_out_for_a_documented_reason(spark, ocsf_lake, first_export):
    _, _, out = first_export
    rows = _rows(out, _files(out))
    exported = [(r["class_uid"], r["metadata"]["uid"]) for r in rows]
    assert len(exported) == len(set(exported))
    ids = {uid for _, uid in exported}
    gold = ocsf_lake.get("gold.schema")
    for mart in MARTS:
        table = spark.table(f"{gold}.{mart}")
        all_ids = {r[0] for r in table.select("event_id").collect()}
        left_out = {r[0] for r in table.where(UNMAPPED[mart]).select("event_id").collect()}
        assert all_ids - ids == left_out, (mart, sorted(all_ids - ids - left_out)[:5])


def test_a_second_export_adds_nothing(spark, ocsf_lake, first_export):
    _, _, out = first_export
    before = _files(out)
    lines: list[str] = []
    results = export_ocsf(spark, ocsf_lake, log=lines.append)
    assert [r.events for r in results] == [0] * len(CLASSES)
    assert _files(out) == before
    assert lines[-1].startswith("ocsf: nothing new to export")


def test_only_rows_added_to_gold_since_are_exported(spark, ocsf_lake, first_export):
    _, _, out = first_export
    gold = ocsf_lake.get("gold.schema")
    before = _files(out)
    # two sign-ins and a view reach gold in a later refresh: newer silver_ingest_ts, new event ids
    for mart, n in (("fct_logins", 2), ("fct_content_access", 1)):
        table = spark.table(f"{gold}.{mart}")
        newest = table.agg(F.max("silver_ingest_ts")).first()[0]
        (
            table.where("actor_user_luid IS NOT NULL" if mart == "fct_content_access" else "user_luid IS NOT NULL")
            .orderBy("event_id")
            .limit(n)
            .withColumn("event_id", F.concat(F.lit("new-"), "event_id"))
            .withColumn("silver_ingest_ts", F.lit(newest + timedelta(hours=1)))
            .write.format("delta")
            .mode("append")
            .saveAsTable(f"{gold}.{mart}")
        )
    results = export_ocsf(spark, ocsf_lake, log=lambda _m: None)
    assert {r.uid: r.events for r in results if r.events} == {3002: 2, 6001: 1}
    new = _files(out) - before
    assert {f.split("/")[1] for f in new} == {"tableau-3002", "tableau-6001"}
    assert all(r["metadata"]["uid"].startswith("new-") for r in _rows(out, new))
    assert [r.events for r in export_ocsf(spark, ocsf_lake, log=lambda _m: None)] == [0] * len(CLASSES)
    state = spark.table(f"{ocsf_lake.get('ops.schema')}.ocsf_exports")
    assert state.where("mart = 'fct_logins'").count() == 2  # the first export's mark, then this one's


def test_export_settings_are_checked_when_the_configuration_loads():
    with pytest.raises(ConfigError, match=r"AUDITLAKE__OCSF__SOURCE_NAME: config key 'ocsf.source_name' must be"):
        load_config("test", environ={**KEYED, "AUDITLAKE__OCSF__SOURCE_NAME": "tableau-activity-log"})  # 20 + -3002
    with pytest.raises(ConfigError, match=r"'ocsf.account_id' must be str"):
        load_config("test", environ={**KEYED, "AUDITLAKE__OCSF__ACCOUNT_ID": "123456789012"})  # YAML reads a number
    with pytest.raises(ConfigError, match=r"'ocsf.version' must be one of 1.3.0"):
        load_config("test", environ={**KEYED, "AUDITLAKE__OCSF__VERSION": "1.1.0"})
    quoted = load_config("test", environ={**KEYED, "AUDITLAKE__OCSF__ACCOUNT_ID": "'123456789012'"})
    assert quoted.get("ocsf.account_id")


def test_the_command_refuses_an_s3_uri_hadoop_cannot_write(monkeypatch, capsys, tmp_path):
    from pipelines import cli

    monkeypatch.setenv("AUDITLAKE__PATHS__DATA_DIR", str(tmp_path / "lake"))
    assert cli.main(["--env", "test", "export", "ocsf", "--out", "s3://bucket"]) == 2
    assert "Hadoop reaches S3 as s3a://" in capsys.readouterr().err
    assert cli.main(["--env", "test", "export", "ocsf", "--out", "s3a://bucket"]) == 2
    assert "set ocsf.out_dir" in capsys.readouterr().err
    assert not (tmp_path / "lake").exists()  # refused before the lock and Spark
