"""The signed trail's price: ``auditlake bench --layer trail --events 1000000``.

What the issue asks of it: the digest a refresh signs costs at most 5% of that refresh, and
``auditlake verify`` on the 1M-event lake is read beside Spark's bare scan of the same files. The
bench makes a lake of its own from the generated data set, refreshed through bronze and silver as the
ingest bench does (gates included, no write-back source, the trail on), then the ingest bench's +1%
delivery (the next day's events) refreshed the same way. In each refresh it times the refresh's own
``write_digest`` call (wrapped where the refresh calls it) and the whole refresh around it. Then, in
the same session and on the same files, the delivery's included: Spark's bare
``spark.read.text(...).count()`` after a warm-up scan (the OS file cache filled for both), and
``verify`` of the whole lake (every digest, file and row, the layers reconciled).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from auditlake_devtools import machine_speed
from auditlake_devtools.bench_datasets import drop_increments, generated_dataset, increment_days
from auditlake_devtools.bench_delivery_floor import StepClock
from auditlake_devtools.bench_harness import fresh_lake, ingest_cfg, timed
from pipelines.config.load import Config, secret

TARGET_SHARE = 0.05  # a delivery's digest, at most this share of its refresh


def _trail_cfg(cfg: Config, root: Path) -> Config:
    """The bench's own lakehouse, as the ingest bench's (no write-back source), with the trail on."""
    return ingest_cfg(cfg, root, {"AUDITLAKE__INTEGRITY__ENABLED": "true"})


@contextmanager
def digest_clock() -> Iterator[list[float]]:
    """The seconds of each digest the refresh writes meanwhile: its own ``write_digest``, wrapped."""
    from pipelines.refresh import layers

    seconds: list[float] = []
    write_digest = layers.write_digest

    def timed_digest(*args, **kwargs):
        written, took = timed(lambda: write_digest(*args, **kwargs))
        seconds.append(took)
        return written

    layers.write_digest = timed_digest
    try:
        yield seconds
    finally:
        layers.write_digest = write_digest


def _refresh(spark, bcfg: Config, landing: Path, label: str, log) -> dict:
    """One refresh through bronze and silver: its wall seconds and its digest's."""
    from pipelines.refresh import run_refresh

    with digest_clock() as digests:
        report, refresh_s = timed(
            lambda: run_refresh(spark, bcfg, ["bronze", "silver"], source_dir=landing, log=lambda _m: None)
        )
    if len(digests) != 1:
        raise RuntimeError(f"bench: {label}: the refresh wrote {len(digests)} digests, not one")
    runs = {r.layer: r for r in report.runs}
    figures = {"refresh_s": refresh_s, "digest_s": digests[0], "lines": runs["bronze"].rows_in}
    log(
        f"bench [trail]: {label}: {figures['lines']:,} lines in {refresh_s:.1f}s, its digest "
        f"{digests[0]:.2f}s ({digests[0] / refresh_s:.1%})"
    )
    return figures


def bench_trail(cfg: Config, events: int, log) -> dict:
    from pipelines.integrity.signing import public_key
    from pipelines.integrity.verify import verify
    from pipelines.runtime.spark_session import build_spark

    spark = build_spark(cfg)
    landing, _data = generated_dataset(cfg, events, log)
    bcfg = _trail_cfg(cfg, cfg.data_dir / "bench" / f"trail-{events}")
    fresh_lake(spark, bcfg)
    try:
        full = _refresh(spark, bcfg, landing, "full load", log)
        added = sum(increment_days(landing, max(1, events // 100)))
        delivery = _refresh(spark, bcfg, landing, f"+1% delivery ({added} files)", log)
        if not delivery["lines"]:
            raise RuntimeError(f"bench: the +1% delivery ({added} files) landed nothing")
        sizes = [p.stat().st_size for p in landing.rglob("*") if p.is_file()]

        def bare_scan() -> int:
            return spark.read.option("recursiveFileLookup", "true").text(str(landing)).count()

        log("bench [trail]: warm-up scan (fills the OS file cache; not measured)")
        bare_scan()
        lines, bare_s = timed(bare_scan)
        landed = full["lines"] + delivery["lines"]
        if lines != landed:
            raise RuntimeError(f"bench: the files hold {lines} lines, bronze landed {landed}")
        log(f"bench [trail]: bare text scan: {lines:,} lines in {bare_s:.1f}s")
        key = public_key(secret(bcfg, "integrity.signing_key_env"))
        clock = StepClock()
        result, verify_s = timed(lambda: verify(spark, bcfg, key, log=clock))
        if not result.valid:
            raise RuntimeError(f"bench: verify found the bench's own lake broken: {result.findings[0]}")
        log(f"bench [trail]: verify: {result.summary()} in {verify_s:.1f}s")
    finally:
        drop_increments(landing)
    return {
        "events": events,
        "files": len(sizes),
        "megabytes": sum(sizes) / 1e6,
        "lines": lines,
        "full": full,
        "delivery": delivery,
        "bare_s": bare_s,
        "verify_s": verify_s,
        "verified": {"digests": result.digests, "files": result.files, "rows": result.rows},
        "verify_steps": clock.lines,
    }


def render_trail(fig: dict, cfg: Config) -> str:
    full, delivery = fig["full"], fig["delivery"]
    share = delivery["digest_s"] / delivery["refresh_s"]
    checked = fig["verified"]
    out = [
        f"`auditlake bench --layer trail --events {fig['events']}`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on "
        f"{machine_speed.describe()}, Spark master `{cfg.get('spark.master')}`, driver memory "
        f"{cfg.get('spark.driver_memory')}: a lake of its own from {fig['events']:,} generated events, refreshed "
        "through bronze and silver (gates included, no write-back source), then a +1% delivery refreshed the same "
        "way; one process, one Spark session, the same files for the scan and `verify`.",
        "",
        "| | seconds | |",
        "|---|---:|---|",
        f"| the full load's refresh ({full['lines']:,} lines), its digest included | {full['refresh_s']:.1f} | |",
        f"| its digest (every file's SHA-256, the rows' Merkle roots, signed) | {full['digest_s']:.2f} "
        f"| {full['digest_s'] / full['refresh_s']:.1%} of the refresh |",
        f"| **the +1% delivery's refresh** ({delivery['lines']:,} lines), its digest included "
        f"| {delivery['refresh_s']:.1f} | |",
        f"| **its digest** | {delivery['digest_s']:.2f} | **{share:.1%} of the refresh** |",
        f"| Spark's bare `spark.read.text(...).count()` of the landing files ({fig['lines']:,} lines, "
        f"{fig['files']:,} files, {fig['megabytes']:.0f} MB) | {fig['bare_s']:.1f} | |",
        f"| **`verify`** of the whole lake ({checked['digests']} digests, {checked['files']:,} files, "
        f"{checked['rows']:,} rows) | {fig['verify_s']:.1f} "
        f"| **{fig['verify_s'] / fig['bare_s']:.1f}x the bare scan** |",
        "",
        f"Target: a delivery's digest at most {TARGET_SHARE:.0%} of its refresh: **{share:.1%}**, "
        f"{'met' if share <= TARGET_SHARE else 'missed'}.",
        "",
        "Where `verify`'s time went (the seconds before each of its lines):",
        "",
    ]
    out += [f"- {seconds:.1f} s: `{line}`" for seconds, line in fig["verify_steps"]]
    rest = fig["verify_s"] - sum(seconds for seconds, _line in fig["verify_steps"])
    out.append(f"- {rest:.1f} s: after its last line (the layers reconciled)")
    return "\n".join(out)
