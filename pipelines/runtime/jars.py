"""Fetch the JVM libraries the lakehouse needs (Delta Lake) once, into a project-local cache.

The delta-spark wheel carries no JARs. ``auditlake setup`` asks Maven (its default
remote, Maven Central) for each coordinate in ``conf`` ``jars:`` (and ``s3.jars:`` when a
location is ``s3a://``) and copies the JAR
into ``paths.jars_dir``. Later runs find them there and start offline.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from pipelines.config.load import Config


def jar_file_name(coordinate: str) -> str:
    group, artifact, version = coordinate.split(":")
    return f"{artifact}-{version}.jar"


def coordinates(cfg: Config) -> list[str]:
    """The JARs this configuration needs: ``jars``, and ``s3.jars`` when a location is s3a:// (the
    AWS SDK bundle is ~640 MB: fetched, and put on the classpath, only where S3 is used)."""
    return [*cfg.settings.jars, *(cfg.get("s3.jars") if cfg.uses_s3 else [])]


def jar_paths(cfg: Config) -> list[Path]:
    """Where each needed JAR lives in the cache (whether fetched or not)."""
    jars_dir = cfg.path("paths.jars_dir")
    return [jars_dir / jar_file_name(c) for c in coordinates(cfg)]


def missing_jars(cfg: Config) -> list[str]:
    return [c for c, p in zip(coordinates(cfg), jar_paths(cfg), strict=True) if not p.is_file()]


def fetch_jars(cfg: Config, log=print) -> list[Path]:
    """Copy every missing configured JAR into the cache; a no-op when all are there."""
    missing = missing_jars(cfg)
    if not missing:
        return jar_paths(cfg)
    if shutil.which("mvn") is None:
        raise RuntimeError("Maven (mvn) is needed once to fetch Delta's JARs; install it (apt-get install maven)")
    jars_dir = cfg.path("paths.jars_dir")
    jars_dir.mkdir(parents=True, exist_ok=True)
    local_repo = jars_dir.parent / "m2"
    for coordinate in missing:
        log(f"fetching {coordinate} from Maven Central ...")
        cmd = [
            "mvn",
            "-q",
            "-B",
            "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy",
            f"-Dartifact={coordinate}:jar",
            f"-DoutputDirectory={jars_dir}",
            f"-Dmaven.repo.local={local_repo}",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
            raise RuntimeError(f"could not fetch {coordinate} from Maven Central (is it reachable?):\n{tail}")
    still = missing_jars(cfg)
    if still:
        raise RuntimeError(f"JARs still missing after fetch: {', '.join(still)}")
    return jar_paths(cfg)
