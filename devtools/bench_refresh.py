"""The hourly refresh's price: whole ``auditlake refresh`` commands on a lake the size of the demo.

``auditlake bench --layer refresh`` generates the demo's sample Activity Log into a lake of its own
(``<data_dir>/bench/refresh``), then runs ``auditlake refresh`` as a scheduler does: one process
per run, timed from its start to its exit (Python, the JVM, every layer, the gates, the analysts'
copies). Runs: the first load, a refresh with nothing new (which stops before Spark starts), the same
with ``--force`` (every layer), a delivery of ``--delivery`` new events for the next day, and nothing
new again; then the same kinds of run in one ``refresh --every``
process (its JVM warm between runs). For the delivery's run it keeps where the time went: the
gaps between the command's own progress lines, and dbt's thread-seconds by kind and slowest node.
Targets (issue 30): the delivery's refresh at most 2x a refresh with nothing new; the first load
at most 60 s and nothing new at most 10 s on a quiet machine like the one docs/performance.md names.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from devtools.bench import _dbt_node_seconds, _machine, _newest_day
from pipelines.config import Config
from pipelines.project import home

_DONE = re.compile(r"refresh \S+ done: (.*)$")
_LAYER = re.compile(r"(\w+) ([\d.]+)s")


def _refresh_process(env: dict[str, str], cfg: Config, label: str, log, *options: str) -> dict:
    """One ``auditlake refresh`` process: its wall seconds, layer seconds and timed output lines."""
    command = [sys.executable, "-m", "pipelines.cli", "--env", cfg.env, "refresh", *options]
    started = time.monotonic()
    lines: list[tuple[float, str]] = []
    with subprocess.Popen(
        command, cwd=home(), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        for line in proc.stdout:
            lines.append((time.monotonic() - started, line.rstrip()))
    wall = time.monotonic() - started
    if proc.returncode:
        tail = "\n".join(text for _t, text in lines[-15:])
        raise RuntimeError(f"bench: `auditlake refresh` ({label}) exited {proc.returncode}:\n{tail}")
    done = next((m.group(1) for _t, text in lines if (m := _DONE.search(text))), "")
    layers = {name: float(secs) for name, secs in _LAYER.findall(done)}
    log(f"bench [refresh]: {label}: {wall:.1f}s (" + ", ".join(f"{k} {v:.1f}s" for k, v in layers.items()) + ")")
    return {"label": label, "wall_s": wall, "layers": layers, "lines": lines}


def _gaps(lines: list[tuple[float, str]], top: int = 10) -> list[tuple[float, str]]:
    """The longest stretches between two progress lines: (seconds, the line that ended it)."""
    out, before = [], 0.0
    for at, text in lines:
        if text.startswith("WARNING") or not text.strip():
            continue
        out.append((at - before, text.strip()[:110]))
        before = at
    return sorted(out, key=lambda g: -g[0])[:top]


def _dbt_figures(target_dir: Path) -> dict:
    """dbt's last build: elapsed, thread-seconds per kind, the slowest nodes (run_results.json)."""
    path = target_dir / "run_results.json"
    if not path.is_file():
        return {}
    results = json.loads(path.read_text())
    nodes = _dbt_node_seconds(results)
    kinds = {kind: [secs for _n, k, secs in nodes if k == kind] for kind in sorted({k for _n, k, _s in nodes})}
    return {
        "elapsed_s": float(results.get("elapsed_time") or 0),
        "kinds": {k: (len(v), sum(v)) for k, v in kinds.items()},
        "slowest": [(secs, kind, name) for name, kind, secs in nodes[:8]],
    }


def _deliver_next_day(cfg: Config, landing: Path, events: int) -> None:
    """``events`` clean events for the day after the lake's newest, in the demo's layout."""
    from devtools.sample.activity_log import generate_activity_log

    generate_activity_log(
        landing,
        events,
        seed=cfg.settings.generate.seed + 1,
        days=1,
        start=_newest_day(landing) + timedelta(days=1),
        layout=cfg.settings.generate.layout,
    )


def bench_refresh(cfg: Config, delivery: int, log) -> dict:
    from devtools.commands import generate_demo_sample

    root = cfg.data_dir / "bench" / "refresh"
    shutil.rmtree(root, ignore_errors=True)
    lake = root / "lake"
    landing = lake / "landing"
    target = root / "dbt-target"  # dbt's run results of these processes, not the project's
    env = {
        **os.environ,
        "AUDITLAKE__PATHS__DATA_DIR": str(lake),
        "AUDITLAKE__PATHS__LANDING_DIR": str(landing),
        "DBT_TARGET_PATH": str(target),
    }
    summary = generate_demo_sample(cfg, landing)
    runs = [
        _refresh_process(env, cfg, f"first load ({summary['records']:,} events)", log),
        _refresh_process(env, cfg, "nothing new (stops before Spark: pipelines/unchanged.py)", log),
        _refresh_process(env, cfg, "nothing new, `--force` (every layer)", log, "--force"),
    ]
    _deliver_next_day(cfg, landing, delivery)
    delivered = _refresh_process(env, cfg, f"+{delivery} events (the next day)", log)
    delivered["dbt"] = _dbt_figures(target)
    runs += [delivered, _refresh_process(env, cfg, "nothing new, again", log)]
    warm = _warm_runs(env, cfg, landing, delivery, log)
    shutil.rmtree(root, ignore_errors=True)
    return {"events": summary["records"], "delivery": delivery, "runs": runs, "warm": warm}


# what ``refresh --every`` says (pipelines/cli.py): a run's end and that it waits for the next one
_TAKEN = re.compile(r"time taken: ([\d.]+)s")
_NEXT = "refresh every "


def _warm_runs(env: dict[str, str], cfg: Config, landing: Path, delivery: int, log) -> list[tuple[str, float]]:
    """The same kind of runs in one ``auditlake refresh --every`` process (its JVM warm after the
    first): nothing new, a delivery, nothing new, a delivery, nothing new. Each delivery is written
    while the process waits for its next run (the runs before them have nothing new: well under the
    90 s period, so the wait leaves time to write it). -> (label, seconds) per run, as the process timed them."""
    labels = [
        "nothing new (the process's first run)",
        f"+{delivery} events",
        "nothing new",
        f"+{delivery} events, again",
        "nothing new, again",
    ]
    command = [
        sys.executable,
        "-m",
        "pipelines.cli",
        "--env",
        cfg.env,
        "refresh",
        "--every",
        "90s",
        "--runs",
        str(len(labels)),
    ]
    taken: list[float] = []
    with subprocess.Popen(
        command, cwd=home(), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        for line in proc.stdout:
            if m := _TAKEN.search(line):
                taken.append(float(m.group(1)))
                log(f"bench [refresh --every]: {labels[len(taken) - 1]}: {taken[-1]:.1f}s")
            elif line.startswith(_NEXT) and "next run at" in line and labels[len(taken)].startswith("+"):
                _deliver_next_day(cfg, landing, delivery)
    if proc.returncode or len(taken) != len(labels):
        raise RuntimeError(f"bench: `auditlake refresh --every` exited {proc.returncode} after {len(taken)} runs")
    return list(zip(labels, taken, strict=True))


def render_refresh(fig: dict, cfg: Config) -> str:
    first, idle, forced, delivered, idle_again = fig["runs"]
    idle_s = min(idle["wall_s"], idle_again["wall_s"])
    out = [
        f"`auditlake bench --layer refresh --delivery {fig['delivery']}`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on "
        f"{_machine()}, Spark master `{cfg.get('spark.master')}`: the demo's sample ({fig['events']:,} events, "
        "with the Write-Back export and the entity snapshots), each run one `auditlake refresh` process, timed from "
        "its start to its exit (the JVM, every layer, the gates, the analysts' copies).",
        "",
        "| run | whole command s | bronze s | silver s | gold s |",
        "|---|---:|---:|---:|---:|",
    ]
    for run in fig["runs"]:
        lay = run["layers"]
        out.append(
            f"| {run['label']} | **{run['wall_s']:.1f}** | {lay.get('bronze', 0):.1f} | "
            f"{lay.get('silver', 0):.1f} | {lay.get('gold', 0):.1f} |"
        )
    out += [
        "",
        f"- The delivery's refresh / a refresh with nothing new that runs every layer (`--force`): "
        f"**{delivered['wall_s'] / forced['wall_s']:.1f}x** (target: at most 2x); / one that stops before "
        f"Spark (the faster of the two): {delivered['wall_s'] / idle_s:.0f}x.",
        f"- The first load: {first['wall_s']:.0f} s (target: at most 60 s); nothing new: **{idle_s:.1f} s** "
        f"(target: at most 10 s; {forced['wall_s']:.1f} s with `--force`).",
        "",
        f"Where the +{fig['delivery']} refresh's time went: the longest stretches between its progress lines "
        "(seconds, then the line that ended the stretch):",
        "",
    ]
    out += [f"- {secs:.1f} s: `{text.replace('`', '')}`" for secs, text in _gaps(delivered["lines"])]
    dbt = delivered.get("dbt") or {}
    if dbt:
        kinds = ", ".join(f"{n} {k}s {s:.0f} thread-s" for k, (n, s) in dbt["kinds"].items())
        out += [
            "",
            f"dbt's build of that run: {dbt['elapsed_s']:.0f} s elapsed on {cfg.settings.gold.threads} threads; "
            f"{kinds}. Slowest nodes:",
            "",
        ]
        out += [f"- {secs:.1f} s {kind} `{name[:80]}`" for secs, kind, name in dbt["slowest"]]
    if fig.get("warm"):
        out += [
            "",
            "Then the same kinds of run in one `auditlake refresh --every 90s` process on that lake, its "
            "JVM warm after the first run (seconds as the process timed each run):",
            "",
            "| run in one process | s |",
            "|---|---:|",
        ]
        out += [f"| {label} | **{secs:.1f}** |" for label, secs in fig["warm"]]
    return "\n".join(out)
