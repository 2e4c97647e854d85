"""Configuration: merge, environment overrides, and errors that name the key and file."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from pipelines.config.load import ConfigError, load_config, secret
from pipelines.config.project import CONF_DIR, home
from tests.lake import KEYED


def test_env_file_overrides_base():
    cfg = load_config("test", environ=dict(KEYED))
    assert cfg.get("spark.shuffle_partitions") == 2
    assert cfg.get("spark.app_name") == "auditlake"  # from base
    assert load_config(environ=dict(KEYED)).env == "local"
    assert load_config(environ={**KEYED, "AUDITLAKE_ENV": "test"}).env == "test"


def test_an_environment_file_of_ones_own_is_read_over_the_shipped_base(tmp_path, monkeypatch):
    (tmp_path / "prod.yaml").write_text("paths:\n  data_dir: lake\n")
    monkeypatch.setenv("AUDITLAKE_HOME", str(tmp_path))  # what relative paths are relative to
    cfg = load_config(str(tmp_path / "prod.yaml"), environ=dict(KEYED))
    assert cfg.env == str(tmp_path / "prod.yaml") and cfg.files == (str(CONF_DIR / "base.yaml"), cfg.env)
    assert cfg.data_dir == tmp_path / "lake"
    (tmp_path / "PROD.YAML").write_text("paths:\n  data_dir: upper\n")  # any case of the suffix
    assert load_config(str(tmp_path / "PROD.YAML"), environ=dict(KEYED)).data_dir == tmp_path / "upper"
    with pytest.raises(ConfigError, match=r"nosuch\.yaml: no such configuration file$"):
        load_config(str(tmp_path / "nosuch.yaml"), environ=dict(KEYED))


def test_environment_variable_overrides_a_key():
    cfg = load_config(
        "test",
        environ={**KEYED, "AUDITLAKE__PATHS__DATA_DIR": "/srv/lake", "AUDITLAKE__SPARK__SHUFFLE_PARTITIONS": "8"},
    )
    assert str(cfg.data_dir) == "/srv/lake"
    assert cfg.get("spark.shuffle_partitions") == 8


@pytest.fixture()
def conf_copy(tmp_path):
    target = tmp_path / "conf"
    shutil.copytree(CONF_DIR, target)
    return target


def test_unknown_key_names_key_and_file(conf_copy):
    (conf_copy / "test.yaml").write_text("spark:\n  mastr: local[1]\n")
    with pytest.raises(ConfigError, match=r"test\.yaml: unknown config key 'spark\.mastr'"):
        load_config("test", conf_dir=conf_copy, environ=dict(KEYED))


def test_a_key_base_yaml_leaves_out_has_its_declared_default(conf_copy):
    text = (conf_copy / "base.yaml").read_text().replace("  app_name: auditlake\n", "")
    (conf_copy / "base.yaml").write_text(text)
    cfg = load_config("local", conf_dir=conf_copy, environ=dict(KEYED))
    assert cfg.get("spark.app_name") == cfg.settings.spark.app_name == "auditlake"
    with pytest.raises(ConfigError, match=r"missing config key 'spark\.app_nam' \(files: "):
        cfg.get("spark.app_nam")


def test_unknown_key_from_environment_names_the_variable():
    with pytest.raises(
        ConfigError,
        match=r"^environment variable AUDITLAKE__SPARK__MASTR: unknown config key "
        r"'spark\.mastr'",
    ):
        load_config("test", environ={**KEYED, "AUDITLAKE__SPARK__MASTR": "local[1]"})


def test_wrong_kind_names_key_and_file(conf_copy):
    (conf_copy / "test.yaml").write_text("spark:\n  shuffle_partitions: many\n")
    with pytest.raises(ConfigError) as caught:
        load_config("test", conf_dir=conf_copy, environ=dict(KEYED))
    assert str(caught.value) == (
        f"{conf_copy / 'test.yaml'}: config key 'spark.shuffle_partitions' must be int, got 'many'"
    )
    # a boolean is not a number, a number not a boolean; a mapping replaced by a value is named
    for name, raw, message in [
        ("AUDITLAKE__CLUSTER__WORKERS", "true", "'cluster.workers' must be int, got True"),
        ("AUDITLAKE__QUALITY__ENABLED", "1", "'quality.enabled' must be bool, got 1"),
        ("AUDITLAKE__QUALITY__THRESHOLDS", "0.9", "'quality.thresholds' must be a mapping"),
    ]:
        with pytest.raises(ConfigError, match=rf"^environment variable {name}: config key {message}"):
            load_config("test", environ={**KEYED, name: raw})


def test_unknown_enumeration_value_names_key_and_file(conf_copy):
    (conf_copy / "test.yaml").write_text("metastore:\n  kind: mysql\n")
    with pytest.raises(
        ConfigError,
        match=rf"^{re.escape(str(conf_copy / 'test.yaml'))}: config key 'metastore\.kind' "
        r"must be one of derby, postgresql, got 'mysql'$",
    ):
        load_config("test", conf_dir=conf_copy, environ=dict(KEYED))
    for name, raw, key in [
        ("AUDITLAKE__WRITEBACK__SOURCE", "odbc", "writeback.source"),
        ("AUDITLAKE__WRITEBACK__FILE__DEFAULT_DATABASE", "audit", "writeback.file.default_database"),
        ("AUDITLAKE__GENERATE__LAYOUT", "flat", "generate.layout"),
        ("AUDITLAKE__SPARK__MASTER", "localhost", "spark.master"),
        ("AUDITLAKE__SPARK__DRIVER_MEMORY", "4 GB", "spark.driver_memory"),
        ("AUDITLAKE__GENERATE__START", "yesterday", "generate.start"),
        ("AUDITLAKE__SILVER__SCHEMA", "silver-x", "silver.schema"),
    ]:
        with pytest.raises(ConfigError, match=rf"^environment variable {name}: config key '{re.escape(key)}' must be"):
            load_config("test", environ={**KEYED, name: raw})


def test_bad_severity_fails_at_load_naming_key_and_file(conf_copy):
    (conf_copy / "test.yaml").write_text("quality:\n  severity:\n    luid_shape: fatal\n")
    with pytest.raises(
        ConfigError,
        match=rf"^{re.escape(str(conf_copy / 'test.yaml'))}: config key "
        r"'quality\.severity\.luid_shape' must be one of critical, warning, "
        r"got 'fatal'$",
    ):
        load_config("test", conf_dir=conf_copy, environ=dict(KEYED))
    with pytest.raises(
        ConfigError,
        match=r"^environment variable AUDITLAKE__QUALITY__DEFAULT_SEVERITY: config key "
        r"'quality\.default_severity' must be one of critical, warning",
    ):
        load_config("test", environ={**KEYED, "AUDITLAKE__QUALITY__DEFAULT_SEVERITY": "Critical"})
    # an expectation key base.yaml does not list is an unknown key
    with pytest.raises(ConfigError, match=r"unknown config key 'quality\.severity\.luid_shap'"):
        load_config("test", environ={**KEYED, "AUDITLAKE__QUALITY__SEVERITY__LUID_SHAP": "warning"})


def test_out_of_range_number_names_key_and_file(conf_copy):
    (conf_copy / "test.yaml").write_text("serve:\n  port: 70000\n")
    with pytest.raises(
        ConfigError,
        match=rf"^{re.escape(str(conf_copy / 'test.yaml'))}: config key 'serve\.port' "
        r"must be between 1 and 65535, got 70000$",
    ):
        load_config("test", conf_dir=conf_copy, environ=dict(KEYED))
    for name, raw, message in [
        ("AUDITLAKE__QUALITY__THRESHOLDS__MIN_PARSE_RATE", "1.5", "must be between 0 and 1, got 1.5"),
        ("AUDITLAKE__QUALITY__THRESHOLDS__MAX_QUARANTINE_RATIO", "-0.1", "must be between 0 and 1, got -0.1"),
        ("AUDITLAKE__SPARK__SHUFFLE_PARTITIONS", "0", "must be at least 1, got 0"),
        ("AUDITLAKE__BRONZE__LISTING__LOOKBACK_DAYS", "-1", "must be at least 0, got -1"),
        ("AUDITLAKE__WRITEBACK__JDBC__PORT", "0", "must be between 1 and 65535, got 0"),
    ]:
        key = name[len("AUDITLAKE__") :].lower().replace("__", ".")
        with pytest.raises(
            ConfigError,
            match=rf"^environment variable {name}: config key '{re.escape(key)}' "
            rf"{re.escape(message)}$",
        ):
            load_config("test", environ={**KEYED, name: raw})


def test_missing_secret_variable_names_key_and_files():
    with pytest.raises(ConfigError) as caught:
        load_config("pgmeta", environ=dict(KEYED))
    message = str(caught.value)
    assert message.startswith(
        f"{CONF_DIR / 'base.yaml'}: config key 'metastore.postgresql.password_env' names "
        "environment variable AUDITLAKE_METASTORE_PASSWORD, which is not set"
    )
    assert f"metastore.kind postgresql ({CONF_DIR / 'pgmeta.yaml'})" in message and "\n" not in message
    pgmeta = load_config("pgmeta", environ={**KEYED, "AUDITLAKE_METASTORE_PASSWORD": ""})
    assert pgmeta.get("metastore.kind") == "postgresql"
    # the write-back jdbc source, chosen and pointed at another variable from the environment
    environ = {**KEYED, "AUDITLAKE__WRITEBACK__SOURCE": "jdbc", "AUDITLAKE__WRITEBACK__JDBC__PASSWORD_ENV": "WB_SECRET"}
    with pytest.raises(
        ConfigError,
        match=r"^environment variable AUDITLAKE__WRITEBACK__JDBC__PASSWORD_ENV: config key "
        r"'writeback\.jdbc\.password_env' names environment variable WB_SECRET, "
        r"which is not set: writeback\.source jdbc \(environment variable "
        r"AUDITLAKE__WRITEBACK__SOURCE\)",
    ):
        load_config("test", environ=environ)
    cfg = load_config("test", environ={**environ, "WB_SECRET": "s3cret"})
    assert secret(cfg, "writeback.jdbc.password_env", {"WB_SECRET": "s3cret"}) == "s3cret"
    assert "s3cret" not in repr(cfg)  # the configuration holds the variable's name, never the secret
    # a secret a mode that is not chosen would need is not asked for
    assert load_config("local", environ=dict(KEYED)).get("writeback.source") == "none"


def test_only_the_demo_names_the_bundled_write_back_sample_and_a_file_source_needs_a_path():
    """A real lake lands only real data: the shipped defaults read no Write-Back source (bronze is
    append-only: a sample's rows, once landed, would stay in the audit trail)."""
    from auditlake_devtools.sample import BUNDLED_EXPORT

    for env in ("local", "test", "cluster", "pgmeta", "s3"):
        cfg = load_config(
            env,
            environ={
                **KEYED,
                "AUDITLAKE_METASTORE_PASSWORD": "x",
                "AWS_ACCESS_KEY_ID": "x",
                "AWS_SECRET_ACCESS_KEY": "x",
            },
        )
        assert (cfg.settings.writeback.source, cfg.settings.writeback.file.path) == ("none", ""), env
    demo = load_config("demo", environ=dict(KEYED))
    assert demo.settings.writeback.source == "file" and demo.path("writeback.file.path") == BUNDLED_EXPORT
    base = CONF_DIR / "base.yaml"
    with pytest.raises(ConfigError) as caught:
        load_config("local", environ={**KEYED, "AUDITLAKE__WRITEBACK__SOURCE": "file"})
    assert str(caught.value) == (
        f"{base}: config key 'writeback.file.path' is empty: writeback.source is file (environment variable "
        "AUDITLAKE__WRITEBACK__SOURCE): give the export's path (.ndjson, .json or .csv)"
    )


def test_alerts_on_refresh_needs_a_webhook_url_in_the_variable_at_load():
    on = {**KEYED, "AUDITLAKE__ALERTS__ON_REFRESH": "true"}
    with pytest.raises(
        ConfigError,
        match=r"^[^\n]*base\.yaml: config key 'alerts\.webhook_url_env' names "
        r"environment variable AUDITLAKE_ALERTS_WEBHOOK_URL, which is not set: "
        r"alerts\.on_refresh true \(environment variable "
        r"AUDITLAKE__ALERTS__ON_REFRESH\) needs the webhook URL there$",
    ):
        load_config("test", environ=on)
    with pytest.raises(ConfigError, match=r"which does not hold an http:// or https:// URL") as caught:
        load_config("test", environ={**on, "AUDITLAKE_ALERTS_WEBHOOK_URL": "hooks.slack.com/services/T0/B0/s3cr3t"})
    assert "s3cr3t" not in str(caught.value)  # the URL is a secret: never in a message
    url = "https://hooks.slack.com/services/T0/B0/s3cr3t"
    cfg = load_config("test", environ={**on, "AUDITLAKE_ALERTS_WEBHOOK_URL": url})
    assert secret(cfg, "alerts.webhook_url_env", {"AUDITLAKE_ALERTS_WEBHOOK_URL": url}) == url
    assert "s3cr3t" not in repr(cfg)
    # off: the variable is not asked for
    assert load_config("test", environ=dict(KEYED)).get("alerts.on_refresh") is False
    with pytest.raises(
        ConfigError,
        match=r"config key 'alerts\.min_severity' must be one of low, medium, high, "
        r"critical, got 'urgent'",
    ):
        load_config("test", environ={**KEYED, "AUDITLAKE__ALERTS__MIN_SEVERITY": "urgent"})


def test_env_interpolation_is_not_a_secrets_mechanism(conf_copy):
    (conf_copy / "test.yaml").write_text("spark:\n  app_name: ${env:AUDITLAKE_TEST_NAME}\n")
    with pytest.raises(
        ConfigError,
        match=r"test\.yaml: config key 'spark\.app_name' uses \$\{env:\.\.\.\}, which "
        r"is not supported: .* a key ending in _env",
    ):
        load_config("test", conf_dir=conf_copy, environ={**KEYED, "AUDITLAKE_TEST_NAME": "x"})


def test_environment_value_that_is_not_yaml_names_the_variable():
    with pytest.raises(
        ConfigError,
        match=r"^environment variable AUDITLAKE__SPARK__MASTER: config key "
        r"'spark\.master': not a valid YAML value: [^\n]*$",
    ):
        load_config("test", environ={**KEYED, "AUDITLAKE__SPARK__MASTER": "[local"})


def test_extra_conf_takes_spark_settings_only():
    cfg = load_config("cluster", environ={**KEYED, "AUDITLAKE__SPARK__EXTRA_CONF__SPARK.EXECUTOR.MEMORY": "2g"})
    assert cfg.get("spark.extra_conf") == {
        "spark.executor.memory": "2g",
        "spark.executor.cores": "1",
        "spark.cores.max": "2",
    }
    with pytest.raises(
        ConfigError,
        match=r"^environment variable AUDITLAKE__SPARK__EXTRA_CONF__EXECUTOR\.MEMORY: "
        r"config key 'spark\.extra_conf\.executor\.memory' is not a Spark setting",
    ):
        load_config("test", environ={**KEYED, "AUDITLAKE__SPARK__EXTRA_CONF__EXECUTOR.MEMORY": "2g"})


def test_base_yaml_is_the_declarations_defaults_key_for_key():
    """conf/base.yaml (the file an operator reads, with its comments) holds exactly the keys
    pipelines/config/settings.py declares, each with the declared default and a description."""
    import yaml

    from pipelines.config.settings import Settings

    base = yaml.safe_load((CONF_DIR / "base.yaml").read_text(encoding="utf-8"))
    assert Settings().model_dump() == base

    def undescribed(model, prefix=""):
        for name, info in model.model_fields.items():
            dotted = f"{prefix}{name}"
            if not info.description:
                yield dotted
            sub = info.annotation
            if isinstance(sub, type) and hasattr(sub, "model_fields"):
                yield from undescribed(sub, dotted + ".")

    assert list(undescribed(Settings)) == []
    for env in ("local", "test", "cluster", "demo", "pgmeta", "s3"):
        assert load_config(
            env,
            environ={
                **KEYED,
                "AUDITLAKE_METASTORE_PASSWORD": "x",
                "AWS_ACCESS_KEY_ID": "x",
                "AWS_SECRET_ACCESS_KEY": "x",
            },
        ).settings  # the committed files pass


def test_every_layout_the_config_accepts_is_written_and_read_back_as_that_layout():
    """generate.layout's choices: the writer makes each one's folders and bronze's classify reads them back."""
    from auditlake_devtools.sample.activity_log.writer import hour_folder, layout_dir
    from pipelines.activity_log.bronze.layout import classify
    from pipelines.config.settings import GENERATE_LAYOUTS

    luid = "0b5d3e4a-1c2f-4a6b-9d8e-7f6a5b4c3d2e"
    for layout in GENERATE_LAYOUTS:
        for family, event_type in (("site", "login"), ("tenant", "tenant_settings_changed")):
            info = classify(f"{layout_dir(layout, family, luid, hour_folder(490_000), event_type)}/part-0.json")
            assert (info.layout, info.event_type, info.skip) == (layout, event_type, None), (layout, family, info)
            assert info.family in (family, None) and info.path_date is not None


def _refresh_with(environ_name: str, raw: str, tmp_path, monkeypatch, capsys):
    from pipelines import cli
    from pipelines.runtime import spark_session

    def no_spark(_cfg):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(spark_session, "build_spark", no_spark)
    monkeypatch.setenv("AUDITLAKE__PATHS__DATA_DIR", str(tmp_path / "lake"))
    monkeypatch.setenv(environ_name, raw)
    started = time.monotonic()
    code = cli.main(["--env", "test", "refresh"])
    return code, time.monotonic() - started, capsys.readouterr()


def test_cli_exits_2_on_a_bad_value_before_spark_starts(tmp_path, monkeypatch, capsys):
    code, seconds, out = _refresh_with("AUDITLAKE__METASTORE__KIND", "mysql", tmp_path, monkeypatch, capsys)
    assert code == 2 and seconds < 5
    assert out.err == (
        "auditlake: configuration error: environment variable AUDITLAKE__METASTORE__KIND: config key "
        "'metastore.kind' must be one of derby, postgresql, got 'mysql'\n"
    )
    assert not (tmp_path / "lake").exists()  # no lock, no metastore, no log: nothing ran
    monkeypatch.delenv("AUDITLAKE__METASTORE__KIND")
    code, _, out = _refresh_with("AUDITLAKE__QUALITY__SEVERITY__LUID_SHAPE", "fatal", tmp_path, monkeypatch, capsys)
    assert code == 2 and len(out.err.splitlines()) == 1 and "'quality.severity.luid_shape'" in out.err


@pytest.mark.subprocess
def test_cli_process_exits_2_on_a_bad_value_in_seconds(tmp_path):
    environ = {
        **os.environ,
        "AUDITLAKE__PATHS__DATA_DIR": str(tmp_path / "lake"),
        "AUDITLAKE__METASTORE__KIND": "mysql",
    }
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "--env", "test", "refresh"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=home(),
    )
    assert proc.returncode == 2 and time.monotonic() - started < 10
    assert proc.stderr.splitlines() == [
        "auditlake: configuration error: environment variable AUDITLAKE__METASTORE__KIND: config key "
        "'metastore.kind' must be one of derby, postgresql, got 'mysql'"
    ]
    assert not (tmp_path / "lake").exists()


def test_storage_locations_take_uris_paths_or_default_under_data_dir():
    cfg = load_config(
        "cluster",
        environ={
            **KEYED,
            "AUDITLAKE__PATHS__DATA_DIR": "/srv/lake",
            "AUDITLAKE__PATHS__WAREHOUSE_DIR": "s3a://audit-lake/warehouse",
            "AUDITLAKE__PATHS__CHECKPOINT_DIR": "relative/checkpoints",
            "AUDITLAKE__S3__CREDENTIALS": "provider_chain",  # keys would need AWS_ACCESS_KEY_ID etc. set
        },
    )
    assert cfg.warehouse_dir == "s3a://audit-lake/warehouse"  # a URI is used as written
    assert cfg.checkpoint_dir == str(home() / "relative" / "checkpoints")  # a path is made absolute
    assert cfg.get("spark.master").startswith("spark://")
    local = load_config("local", environ={**KEYED, "AUDITLAKE__PATHS__DATA_DIR": "/srv/lake"})
    assert (local.warehouse_dir, local.checkpoint_dir) == ("/srv/lake/warehouse", "/srv/lake/checkpoints")


def test_storage_uri_recognition():
    from pipelines.lake.storage import is_uri, join, local_path

    assert is_uri("s3a://b/x") and is_uri("file:/tmp/x") and is_uri("abfss://c@a.dfs.core.windows.net/x")
    assert not is_uri("/tmp/x") and not is_uri("data/landing") and not is_uri("C:\\lake")
    assert join("s3a://b/lake/", "site") == "s3a://b/lake/site"
    assert local_path("file:///tmp/x") == local_path("file:/tmp/x") == "/tmp/x" and local_path("data/x") == "data/x"
    assert local_path("s3a://b/x") is None


def test_the_pseudonym_key_is_needed_while_analyst_tables_are_made_and_must_be_long():
    with pytest.raises(
        ConfigError,
        match=r"^[^\n]*base\.yaml: config key 'analyst\.pseudonym_key_env' names "
        r"environment variable AUDITLAKE_PSEUDONYM_KEY, which is not set: "
        r"analyst\.enabled true \([^)]*base\.yaml\) needs the pseudonym key there$",
    ):
        load_config("test", environ={})
    signed = {"AUDITLAKE_SIGNING_KEY": KEYED["AUDITLAKE_SIGNING_KEY"]}
    with pytest.raises(ConfigError, match="fewer than 32 characters: make one with `openssl rand -hex 32`") as caught:
        load_config("test", environ={**signed, "AUDITLAKE_PSEUDONYM_KEY": "short-key"})
    assert "short-key" not in str(caught.value)  # a secret: never in a message
    assert (
        load_config("test", environ={**signed, "AUDITLAKE__ANALYST__ENABLED": "false"}).get("analyst.enabled") is False
    )
    assert load_config("test", environ=dict(KEYED)).analyst_dir.endswith("/analyst")
    # a command that makes no pseudonym loads the same configuration without the key, short or unset
    for environ in ({}, {"AUDITLAKE_PSEUDONYM_KEY": "short-key"}):
        assert load_config("test", environ=environ, writes_lake=False).settings.analyst.enabled is True


def test_the_signing_key_is_needed_while_digests_are_written_and_must_be_ed25519():
    unkeyed = {k: v for k, v in KEYED.items() if k != "AUDITLAKE_SIGNING_KEY"}
    with pytest.raises(
        ConfigError,
        match=r"^[^\n]*base\.yaml: config key 'integrity\.signing_key_env' names environment variable "
        r"AUDITLAKE_SIGNING_KEY, which is not set: integrity\.enabled true \([^)]*base\.yaml\) needs the "
        r"digests' signing key there$",
    ):
        load_config("test", environ=unkeyed)
    with pytest.raises(
        ConfigError,
        match=r"names environment variable AUDITLAKE_SIGNING_KEY, which does not hold an Ed25519 private key: "
        r"not a PEM key \(no -----BEGIN \.\.\.----- line\) \(make one with `auditlake integrity keygen DIR`\)$",
    ):
        load_config("test", environ={**unkeyed, "AUDITLAKE_SIGNING_KEY": "not-a-key"})
    # its newlines turned to spaces, as a Makefile passes it: still the key
    flat = KEYED["AUDITLAKE_SIGNING_KEY"].replace("\n", " ")
    assert load_config("test", environ={**unkeyed, "AUDITLAKE_SIGNING_KEY": flat}).settings.integrity.enabled
    # off, or a command that writes nothing: no key needed
    assert load_config("test", environ={**unkeyed, "AUDITLAKE__INTEGRITY__ENABLED": "false"})
    assert load_config("test", environ=unkeyed, writes_lake=False).digest_dir.endswith("/digests")


def _without_the_key(tmp_path) -> dict[str, str]:
    """This process's environment less the pseudonym key and every AUDITLAKE__ override (the default
    environment, local), its data folder under ``tmp_path``, the JARs where they are."""
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ("AUDITLAKE_PSEUDONYM_KEY", "AUDITLAKE_ENV") and not k.startswith("AUDITLAKE__")
    }
    environ["AUDITLAKE__PATHS__DATA_DIR"] = str(tmp_path / "lake")
    environ["AUDITLAKE__PATHS__JARS_DIR"] = str(load_config("test").path("paths.jars_dir"))  # fetched by `make setup`
    return environ


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "command",
    [["registry"], ["setup", "--jars-only"], ["gold", "staging"], ["--help"], ["refresh", "--help"]],
    ids=["registry", "setup", "gold-staging", "help", "refresh-help"],
)
def test_commands_that_read_no_personal_data_start_without_the_pseudonym_key(command, tmp_path):
    """`setup --jars-only`: the class archive's recording, when missing, starts Spark for a minute; the
    configuration a setup loads is the same."""
    run = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", *command],
        env=_without_the_key(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=home(),
    )
    assert run.returncode == 0, run.stderr
    assert "AUDITLAKE_PSEUDONYM_KEY" not in run.stderr


@pytest.mark.subprocess
def test_a_command_that_makes_pseudonyms_still_refuses_to_start_without_the_key(tmp_path):
    base = CONF_DIR / "base.yaml"
    run = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "refresh"],
        env=_without_the_key(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=home(),
    )
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        f"auditlake: configuration error: {base}: config key 'analyst.pseudonym_key_env' names environment "
        f"variable AUDITLAKE_PSEUDONYM_KEY, which is not set: analyst.enabled true ({base}) needs the "
        "pseudonym key there"
    ]
    assert not (tmp_path / "lake").exists()  # nothing ran


def test_publish_on_refresh_needs_a_server_and_the_token_variables_at_load():
    on = {**KEYED, "AUDITLAKE__TABLEAU__PUBLISH_ON_REFRESH": "true"}
    with pytest.raises(
        ConfigError,
        match=r"config key 'tableau\.token_name_env' names environment variable "
        r"AUDITLAKE_TABLEAU_TOKEN_NAME, which is not set: "
        r"tableau\.publish_on_refresh",
    ):
        load_config("test", environ=on)
    tokens = {"AUDITLAKE_TABLEAU_TOKEN_NAME": "auditlake", "AUDITLAKE_TABLEAU_TOKEN": "s3cr3t"}
    with pytest.raises(ConfigError, match=r"config key 'tableau\.server_url' is empty: tableau\.publish_on_refresh"):
        load_config("test", environ={**on, **tokens})
    with pytest.raises(ConfigError, match=r"'tableau\.server_url' must be an http:// or https:// address"):
        load_config("test", environ={**on, **tokens, "AUDITLAKE__TABLEAU__SERVER_URL": "tableau.example.com"})
    cfg = load_config("test", environ={**on, **tokens, "AUDITLAKE__TABLEAU__SERVER_URL": "https://tableau.example.com"})
    assert cfg.get("tableau.publish_on_refresh") is True and "s3cr3t" not in repr(cfg)
    # off (the default): nothing is asked for
    assert load_config("test", environ=dict(KEYED)).get("tableau.publish_on_refresh") is False
