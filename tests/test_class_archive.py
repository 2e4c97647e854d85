"""The Spark driver's class archive (pipelines/runtime/class_archive.py): recorded by `auditlake setup` (which
`make test` runs first), named for its JVM and JARs, and mapped by the sessions that match it."""

from __future__ import annotations

import os
import subprocess

from pipelines.config.load import load_config
from pipelines.runtime.class_archive import _java, archive_path, java_options


def test_the_archive_is_named_for_the_jvm_and_the_jars(cfg, tmp_path):
    path = archive_path(cfg)
    assert path.parent == cfg.path("paths.jars_dir") and path.suffix == ".jsa"
    assert archive_path(cfg) == path  # stable: the same JVM and JARs find it again
    elsewhere = load_config("test", environ={**os.environ, "AUDITLAKE__PATHS__JARS_DIR": str(tmp_path)})
    assert archive_path(elsewhere).name != path.name  # other JARs (here: other paths) need another archive
    assert java_options(elsewhere) == ""  # none recorded there: sessions start without one


def test_the_session_maps_the_archive_setup_recorded(spark, cfg):
    path = archive_path(cfg)
    assert path.is_file(), f"{path} missing: `auditlake setup` records it (it printed why not)"
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert f"-XX:SharedArchiveFile={path}" in arguments
    # a JVM on the driver's own classpath maps it (a mismatch is a warning, and the JVM loads every class)
    classpath = jvm.java.lang.System.getProperty("java.class.path")
    probe = subprocess.run(
        [str(_java()), f"-XX:SharedArchiveFile={path}", "-Xshare:auto", "-cp", classpath, "-version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.returncode == 0 and "Unable to use shared archive" not in probe.stderr + probe.stdout, probe.stderr
