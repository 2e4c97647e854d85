"""Configuration: merge, environment overrides, and errors that name the key and file."""

from __future__ import annotations

import shutil

import pytest

from pipelines.config import CONF_DIR, ConfigError, load_config


def test_env_file_overrides_base():
    cfg = load_config("test", environ={})
    assert cfg.get("spark.shuffle_partitions") == 2
    assert cfg.get("spark.app_name") == "auditlake"  # from base
    assert load_config(environ={}).env == "local"
    assert load_config(environ={"AUDITLAKE_ENV": "test"}).env == "test"


def test_environment_variable_overrides_a_key():
    cfg = load_config(
        "test", environ={"AUDITLAKE__PATHS__DATA_DIR": "/srv/lake", "AUDITLAKE__SPARK__SHUFFLE_PARTITIONS": "8"}
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
        load_config("test", conf_dir=conf_copy, environ={})


def test_missing_key_names_key(conf_copy):
    text = (conf_copy / "base.yaml").read_text().replace("  app_name: auditlake\n", "")
    (conf_copy / "base.yaml").write_text(text)
    with pytest.raises(ConfigError, match=r"missing config key 'spark\.app_name'.*base\.yaml"):
        load_config("local", conf_dir=conf_copy, environ={})


def test_wrong_kind_names_key(conf_copy):
    (conf_copy / "test.yaml").write_text("spark:\n  shuffle_partitions: many\n")
    with pytest.raises(ConfigError, match=r"'spark\.shuffle_partitions' must be int"):
        load_config("test", conf_dir=conf_copy, environ={})


def test_unknown_environment_lists_known_ones():
    with pytest.raises(ConfigError, match=r"no configuration for environment 'prod'.*local.*test"):
        load_config("prod", environ={})


def test_secret_from_environment_reference(conf_copy):
    (conf_copy / "test.yaml").write_text("spark:\n  app_name: ${env:AUDITLAKE_TEST_NAME}\n")
    assert load_config("test", conf_dir=conf_copy, environ={"AUDITLAKE_TEST_NAME": "x"}).get("spark.app_name") == "x"
    with pytest.raises(ConfigError, match="AUDITLAKE_TEST_NAME, which is not set"):
        load_config("test", conf_dir=conf_copy, environ={})


def test_storage_locations_take_uris_paths_or_default_under_data_dir():
    from pipelines.config import PROJECT_ROOT

    cfg = load_config("cluster", environ={
        "AUDITLAKE__PATHS__DATA_DIR": "/srv/lake",
        "AUDITLAKE__PATHS__WAREHOUSE_DIR": "s3a://audit-lake/warehouse",
        "AUDITLAKE__PATHS__CHECKPOINT_DIR": "relative/checkpoints",
    })
    assert cfg.warehouse_dir == "s3a://audit-lake/warehouse"  # a URI is used as written
    assert cfg.checkpoint_dir == str(PROJECT_ROOT / "relative" / "checkpoints")  # a path is made absolute
    assert cfg.get("spark.master").startswith("spark://")
    local = load_config("local", environ={"AUDITLAKE__PATHS__DATA_DIR": "/srv/lake"})
    assert (local.warehouse_dir, local.checkpoint_dir) == ("/srv/lake/warehouse", "/srv/lake/checkpoints")


def test_storage_uri_recognition():
    from pipelines.storage import is_uri, join

    assert is_uri("s3a://b/x") and is_uri("file:/tmp/x") and is_uri("abfss://c@a.dfs.core.windows.net/x")
    assert not is_uri("/tmp/x") and not is_uri("data/landing") and not is_uri("C:\\lake")
    assert join("s3a://b/lake/", "site") == "s3a://b/lake/site"
