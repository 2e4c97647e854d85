"""S3 for real: the s3 profile (conf/s3.yaml) against a real S3 API server on loopback (moto's
server mode). The Activity Log lands from a bucket in Tableau's tree, bronze and silver are
refreshed with the Delta warehouse and checkpoints in another bucket, and a re-run adds nothing.
(Gold's marts are dbt's SQL over the same catalog and Delta writer: not built again here, for CI
time, issue 30.) The S3A
client's JARs (hadoop-aws, the AWS SDK bundle) are fetched by `auditlake --env s3 setup --jars-only`
(`make test` fetches them beside its set-up): with no way to fetch them this test fails, it does not
skip."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditlake_devtools.s3_server import S3Server
from auditlake_devtools.sample.activity_log import generate_activity_log
from auditlake_devtools.variant import variant_environ
from pipelines.config.load import ConfigError, load_config
from pipelines.runtime.jars import coordinates
from pipelines.runtime.spark_session import s3_conf
from tests.lake import KEYED

MARK = "-- end of command --"  # between the outputs of commands run in one process
PROJECT = Path(__file__).resolve().parents[1]
LANDING_BUCKET, LAKE_BUCKET = "tableau-activity-log", "auditlake"
S3_JARS = ["org.apache.hadoop:hadoop-aws:3.4.2", "software.amazon.awssdk:bundle:2.29.52"]
KEYS = {**KEYED, "AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret"}


def test_s3_jars_are_needed_only_where_a_location_is_s3a():
    s3 = load_config("s3", environ=KEYS)
    assert s3.warehouse_dir.startswith("s3a://") and s3.landing_dir.startswith("s3a://")
    assert coordinates(s3)[-2:] == S3_JARS
    for env in ("local", "test", "cluster", "pgmeta"):
        cfg = load_config(env, environ={**KEYED, "AUDITLAKE_METASTORE_PASSWORD": "x"})
        assert not set(S3_JARS) & set(coordinates(cfg)), env
        assert s3_conf(cfg) == {}


def test_s3_profile_needs_the_key_variables_unless_the_provider_chain_is_used():
    with pytest.raises(ConfigError, match="s3.access_key_env.*AWS_ACCESS_KEY_ID, which is not set"):
        load_config("s3", environ=dict(KEYED))
    load_config("s3", environ={**KEYED, "AUDITLAKE__S3__CREDENTIALS": "provider_chain"})
    with pytest.raises(ConfigError, match="paths.landing_dir.*s3a://"):
        load_config("local", environ={**KEYED, "AUDITLAKE__PATHS__LANDING_DIR": "s3://tableau/activity-log"})


def test_s3_settings_reach_hadoop(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    cfg = load_config(
        "s3",
        environ=dict(
            os.environ, AUDITLAKE__S3__ENDPOINT="http://127.0.0.1:9000", AUDITLAKE__S3__PATH_STYLE_ACCESS="true"
        ),
    )
    conf = s3_conf(cfg)
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert (conf["spark.hadoop.fs.s3a.access.key"], conf["spark.hadoop.fs.s3a.secret.key"]) == ("id", "secret")
    chain = load_config("s3", environ={**KEYED, "AUDITLAKE__S3__CREDENTIALS": "provider_chain"})
    assert not any("key" in k or "provider" in k for k in s3_conf(chain))  # AWS's chain finds them
    assert "spark.hadoop.fs.s3a.endpoint" not in s3_conf(chain)  # "" = AWS itself


def _records(root: Path) -> int:
    """NDJSON records under ``root`` (some files gzip-compressed)."""
    total = 0
    for path in (p for p in root.rglob("*") if p.is_file()):
        data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        total += sum(1 for line in data.splitlines() if line.strip())
    return total


def _table_logs(client, prefix: str) -> dict[str, list[str]]:
    """Delta table under ``prefix`` -> its commit files (_delta_log/*.json)."""
    logs: dict[str, list[str]] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=LAKE_BUCKET, Prefix=prefix):
        for obj in page.get("Contents", []):
            table, sep, rest = obj["Key"].partition("/_delta_log/")
            if sep and rest.endswith(".json") and "/" not in rest:
                logs.setdefault(table, []).append(rest)
    return {table: sorted(commits) for table, commits in logs.items()}


@pytest.mark.slow(minutes=6)
@pytest.mark.subprocess
@pytest.mark.e2e
def test_refresh_with_landing_and_warehouse_in_s3(tmp_path):
    generated = tmp_path / "generated"
    generate_activity_log(generated, 400, seed=11, days=1, layout="date_first")
    files, records = sum(1 for p in generated.rglob("*") if p.is_file()), _records(generated)
    server = S3Server.start()
    try:
        client = server.client()
        client.create_bucket(Bucket=LANDING_BUCKET)
        client.create_bucket(Bucket=LAKE_BUCKET)
        assert server.upload_tree(generated, LANDING_BUCKET, "activity-log") == files

        environ = variant_environ(tmp_path / "data", "s3")
        environ.update(server.environ())
        environ.update(
            AUDITLAKE__PATHS__LANDING_DIR=f"s3a://{LANDING_BUCKET}/activity-log",
            AUDITLAKE__PATHS__WAREHOUSE_DIR=f"s3a://{LAKE_BUCKET}/warehouse",
            AUDITLAKE__PATHS__CHECKPOINT_DIR=f"s3a://{LAKE_BUCKET}/checkpoints",
            AUDITLAKE__SPARK__SHUFFLE_PARTITIONS="2",
            AUDITLAKE__SPARK__EXTRA_CONF='{"spark.ui.enabled": "false"}',
            # as cron starts a refresh: the JIT's C1 alone, fewer CPU-seconds for a short-lived process
            AUDITLAKE__SPARK__JIT="c1",
            # the trail's digests in the bucket too: written once through Hadoop, read back by verify
            AUDITLAKE__INTEGRITY__DIGEST_DIR=f"s3a://{LAKE_BUCKET}/digests",
        )
        environ.pop("AUDITLAKE_ENV", None)

        def auditlake(*commands: tuple[str, ...]) -> list[str]:
            """The `auditlake` commands one after the other in one process (one Spark start) -> each
            one's output."""
            argv = [["--env", "s3", *c] for c in commands]
            code = (
                "import sys; from pipelines.cli import main\n"
                f"for a in {argv!r}:\n    rc = main(a); print({MARK!r}, flush=True)\n    if rc: sys.exit(rc)"
            )
            run = subprocess.run(
                [sys.executable, "-c", code], cwd=PROJECT, env=environ, capture_output=True, text=True, timeout=1800
            )
            assert run.returncode == 0, f"auditlake {commands}:\n{run.stdout[-3000:]}{run.stderr[-3000:]}"
            return run.stdout.split(MARK + "\n")[: len(commands)]

        # hadoop-aws and the SDK bundle, from Maven Central unless cached (the JARs only: two processes
        # would not repay recording a class archive for this classpath); then the first refresh
        _setup, first = auditlake(("setup", "--jars-only"), ("refresh", "--layers", "bronze,silver"))
        assert f"{files} files under s3a://{LANDING_BUCKET}/activity-log" in first
        assert f"{files} files landed" in first
        assert "silver: site:" in first

        cfg = load_config("s3", environ=environ)
        logs = _table_logs(client, "warehouse/")
        for schema, table in [
            ("bronze", "site_events_raw"),
            ("bronze", "tenant_events_raw"),
            ("silver", "site_events"),
            ("silver", "tenant_events"),
            ("silver", "quarantine"),
            ("ops", "refresh_runs"),
        ]:
            assert f"warehouse/{cfg.get(f'{schema}.schema')}.db/{table}" in logs, (schema, table, sorted(logs))
        assert not (tmp_path / "data" / "warehouse").exists(), "no table was written locally"
        assert client.list_objects_v2(Bucket=LAKE_BUCKET, Prefix="checkpoints/")["KeyCount"] > 0

        # a second refresh, then the tables read back by a fresh process
        layers = ("--layers", "bronze,silver")
        second, counts, verified = auditlake(
            ("refresh", *layers),
            (
                "sql",
                "--format",
                "csv",
                " UNION ALL ".join(
                    f"SELECT '{name}', count(*) FROM {cfg.get(schema + '.schema')}.{name}"
                    for schema, name in [
                        ("bronze", "site_events_raw"),
                        ("bronze", "tenant_events_raw"),
                        ("silver", "site_events"),
                        ("silver", "tenant_events"),
                    ]
                ),
            ),
            ("verify",),
        )
        assert "0 new to read" in second and "0 files landed" in second
        digests = client.list_objects_v2(Bucket=LAKE_BUCKET, Prefix="digests/")["Contents"]
        assert [o["Key"] for o in digests] == ["digests/00000001-refresh.json", "digests/00000002-refresh.json"]
        assert f"verify: 2/2 digests valid, {files:,}/{files:,} files, " in verified
        assert verified.rstrip().endswith("verify: the trail holds")
        after = _table_logs(client, "warehouse/")
        ops = f"warehouse/{cfg.get('ops.schema')}.db/"
        changed = [t for t in after if not t.startswith(ops) and after[t] != logs.get(t)]
        assert changed == [], "a re-run committed to these tables"

        # every generated record is in bronze and in silver
        by_table = dict(line.split(",") for line in counts.strip().splitlines()[1:])
        assert int(by_table["site_events_raw"]) + int(by_table["tenant_events_raw"]) == records
        assert int(by_table["site_events"]) + int(by_table["tenant_events"]) == records
    finally:
        server.stop()
