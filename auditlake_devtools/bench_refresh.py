"""The hourly refresh's price: whole ``auditlake refresh`` commands on a lake the size of the demo.

``auditlake bench --layer refresh`` generates the demo's sample Activity Log into a lake of its own
(``<data_dir>/bench/refresh``), then runs ``auditlake refresh`` as a scheduler does: one process
per run, timed from its start to its exit (Python, the JVM, every layer, the gates, the analysts'
copies). Runs: the first load, a refresh with nothing new (which stops before Spark starts), the same
with ``--force`` (every layer), a delivery of ``--delivery`` new events for the next day, and nothing
new again; then the same kinds of run in one ``refresh --every``
process (its JVM warm between runs). For the delivery's run it keeps where the time went: the
gaps between the command's own progress lines, dbt's thread-seconds by kind and slowest node, and
dbt's floor for the same mix of nodes (auditlake_devtools/bench_dbt_floor.py).
Targets (issue 30): the delivery's refresh at most 2x a refresh with nothing new; the first load
at most 60 s and nothing new at most 10 s on a quiet machine (docs/performance.md, "Targets, and
where they stand").
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

from auditlake_devtools import machine_speed
from auditlake_devtools.bench_datasets import newest_day
from auditlake_devtools.bench_dbt_floor import node_mix
from auditlake_devtools.bench_harness import dbt_node_seconds
from auditlake_devtools.demo_sample import generate_demo_sample
from auditlake_devtools.sample import BUNDLED_EXPORT
from pipelines.config.load import Config
from pipelines.config.project import home

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
    nodes = dbt_node_seconds(results)
    kinds = {kind: [secs for _n, k, secs in nodes if k == kind] for kind in sorted({k for _n, k, _s in nodes})}
    return {
        "elapsed_s": float(results.get("elapsed_time") or 0),
        "kinds": {k: (len(v), sum(v)) for k, v in kinds.items()},
        "slowest": [(secs, kind, name) for name, kind, secs in nodes[:8]],
        "mix": node_mix(json.loads((target_dir / "manifest.json").read_text()), results),
    }


def _dbt_floor(env: dict[str, str], mix: dict[str, int], log) -> dict:
    """dbt's floor for the delivery's mix of nodes, in a process of its own on the bench's lake
    (auditlake_devtools/bench_dbt_floor.py)."""
    log(f"bench [refresh]: dbt's floor for the delivery's nodes ({mix})")
    command = [sys.executable, "-m", "auditlake_devtools.bench_dbt_floor", json.dumps(mix)]
    out = subprocess.run(command, cwd=home(), env=env, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"bench: dbt's floor exited {out.returncode}:\n{out.stderr[-2000:]}")
    floor = json.loads(out.stdout.strip().splitlines()[-1])
    log(f"bench [refresh]: dbt's floor: {floor['build']['elapsed_s']:.1f}s")
    return floor


def _deliver_next_day(cfg: Config, landing: Path, events: int) -> None:
    """``events`` clean events for the day after the lake's newest, in the demo's layout."""
    from auditlake_devtools.sample.activity_log import generate_activity_log

    generate_activity_log(
        landing,
        events,
        seed=cfg.settings.generate.seed + 1,
        days=1,
        start=newest_day(landing) + timedelta(days=1),
        layout=cfg.settings.generate.layout,
    )


def bench_refresh(cfg: Config, delivery: int, log) -> dict:
    root = cfg.data_dir / "bench" / "refresh"
    shutil.rmtree(root, ignore_errors=True)
    lake = root / "lake"
    landing = lake / "landing"
    target = root / "dbt-target"  # dbt's run results of these processes, not the project's
    env = {
        **os.environ,
        "AUDITLAKE__PATHS__DATA_DIR": str(lake),
        "AUDITLAKE__PATHS__LANDING_DIR": str(landing),
        # the demo's sample whole: its Activity Log and the bundled Write-Back export
        "AUDITLAKE__WRITEBACK__SOURCE": "file",
        "AUDITLAKE__WRITEBACK__FILE__PATH": str(BUNDLED_EXPORT),
        "DBT_TARGET_PATH": str(target),
    }
    summary = generate_demo_sample(cfg, landing)
    runs = [
        _refresh_process(env, cfg, f"first load ({summary['records']:,} events)", log),
        _refresh_process(env, cfg, "nothing new (stops before Spark: pipelines/refresh/nothing_new.py)", log),
        _refresh_process(env, cfg, "nothing new, `--force` (every layer)", log, "--force"),
    ]
    _deliver_next_day(cfg, landing, delivery)
    delivered = _refresh_process(env, cfg, f"+{delivery} events (the next day)", log)
    delivered["dbt"] = _dbt_figures(target)
    runs += [delivered, _refresh_process(env, cfg, "nothing new, again", log)]
    warm = _warm_runs(env, cfg, landing, delivery, log)
    floor = _dbt_floor(env, delivered["dbt"]["mix"], log) if delivered["dbt"] else None
    shutil.rmtree(root, ignore_errors=True)
    return {"events": summary["records"], "delivery": delivery, "runs": runs, "warm": warm, "floor": floor}


# what ``refresh --every`` says (pipelines/refresh/every.py): a run's end and that it waits for the next one
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
        f"{machine_speed.describe()}, Spark master `{cfg.get('spark.master')}`: "
        f"the demo's sample ({fig['events']:,} events, "
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
    if dbt and fig.get("floor"):
        out += ["", *_render_floor(fig["floor"], dbt, delivered, forced)]
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


_KIND_NAMES = {"view": "views", "table": "tables", "merge": "incremental merges", "append": "incremental appends"}


def _render_floor(floor: dict, dbt: dict, delivered: dict, forced: dict) -> list[str]:
    """dbt's floor for the delivery's nodes beside the delivery's build, and the delivery's refresh
    with its gold at that floor over the `--force` run (target 1's ratio if the marts' SQL cost nothing)."""
    mix, build = floor["mix"], floor["build"]
    kinds = ", ".join(f"{mix[k]} {name}" for k, name in _KIND_NAMES.items() if mix.get(k))
    per_node = ", ".join(
        f"{k} {build['thread_s'].get(k, 0) / mix[k]:.1f} / {floor['plain_s'].get(k, 0) / mix[k]:.1f}"
        for k in (*_KIND_NAMES, "test")
        if mix.get(k)
    )
    at_floor = delivered["wall_s"] - dbt["elapsed_s"] + build["elapsed_s"]
    return [
        f"dbt's floor for that build's nodes (`auditlake_devtools/bench_dbt_floor.py`: the same mix, {kinds} and "
        f"{mix.get('test', 0)} data tests, each over a one-row Delta table, built by dbt in a process of its own "
        f"on {floor['threads']} threads): **{build['elapsed_s']:.0f} s** elapsed; the delivery's build took "
        f"{dbt['elapsed_s']:.0f} s, **{dbt['elapsed_s'] / build['elapsed_s']:.2f}x its floor**. Seconds per node, "
        f"dbt's thread-seconds / the same statement without dbt: {per_node}; all the statements without dbt, "
        f"one after another: {sum(floor['plain_s'].values()):.0f} s.",
        f"- The delivery's refresh with its dbt build at that floor: {at_floor:.0f} s = "
        f"**{at_floor / forced['wall_s']:.1f}x** the `--force` run (target 1: at most 2x).",
    ]
