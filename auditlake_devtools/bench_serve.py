"""``auditlake bench --layer serve``: the analysts' server under load. A real ``auditlake serve``
over this lake's analyst tables; ``--sessions`` analysts (impyla, as BI tools connect) run the
analyst guide's queries for ``--seconds``, first alone, then beside one abusive session (an endless
statement, a result larger than the server's cap, a heap-exhausting aggregate, over and over). They
do so as each kind of client does (``MODES``), in turn on the same server: one long-lived session
each; a session per statement, closed; the same after listing the tables and a table's columns
(GetTables, GetColumns), as an ODBC driver does; a session per statement never closed (dropped).
Figures: answers per second, p50 / p95 / max seconds, errors by kind, whether the server stayed up.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from auditlake_devtools import machine_speed
from auditlake_devtools.pg_server import free_port
from pipelines.analyst.publish import CATALOG_FILE
from pipelines.config.load import Config
from pipelines.config.project import IMPORT_ROOT
from pipelines.errors import InputError

CLIENT_PYTHON = IMPORT_ROOT / ".cache" / "clients" / "bin" / "python"  # `make clients`
LOAD = Path(__file__).resolve().parent / "serve_load.py"
GUIDE = IMPORT_ROOT / "docs" / "analyst-guide.md"
ABUSIVE = [
    "SELECT count(*) FROM range(0, 200000000000)",
    "SELECT randstr(10000) FROM range(0, 100000)",  # incompressible: over the result cap
    "SELECT collect_list(repeat('x', 200000)) FROM range(0, 60000)",
]
TARGET_P95_RATIO = 2.0  # the ordinary sessions' p95 beside the abuser, at most this many times alone
# how the clients use sessions (serve_load.py); dropped last: its sessions stay open on the server
# until its idle timeout, and would weigh on the ways measured after it
MODES = {
    "session": "one long-lived session each",
    "per_query": "a session per statement, closed",
    "metadata": "a session per statement, closed, after GetTables and GetColumns",
    "dropped": "a session per statement, never closed",
}


def guide_queries(guide: Path = GUIDE) -> list[str]:
    """The analyst guide's SQL blocks, over the analysts' views (``analyst.`` for ``gold.``)."""
    blocks = re.findall(r"```sql\n(.*?)```", guide.read_text(encoding="utf-8"), flags=re.S)
    return [re.sub(r"\bgold\.", "analyst.", b).strip().rstrip(";") for b in blocks if "gold." in b]


def _load(
    port: int, sessions: int, seconds: int, queries: list[str], abusive: list[str], mode: str = "session"
) -> dict:
    job = {"host": "127.0.0.1", "port": port, "sessions": sessions, "seconds": seconds, "queries": queries}
    job.update(abusive=abusive, mode=mode, schema="analyst")
    proc = subprocess.run(
        [str(CLIENT_PYTHON), str(LOAD)], input=json.dumps(job), capture_output=True, text=True, timeout=seconds + 1200
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the load's clients failed: {proc.stderr.strip()[-1000:]}")
    return json.loads(proc.stdout)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _figures(run: dict) -> dict:
    ordinary = run["ordinary"]
    answered = [r["seconds"] for r in ordinary if r["ok"]]
    return {
        "answers": len(answered),
        "per_second": len(answered) / run["wall"],  # the ordinary sessions' wall: the phase and their last
        "p50": _quantile(answered, 0.5),
        "p95": _quantile(answered, 0.95),
        "max": max((r["seconds"] for r in ordinary), default=float("nan")),
        "errors": len(ordinary) - len(answered),
        "first_error": next((r["error"] for r in ordinary if not r["ok"]), ""),
        "error_kinds": error_kinds([r["error"] for r in ordinary if not r["ok"]]),
        "abusive": len(run["abusive"]),
        "abusive_refused": sum(not r["ok"] for r in run["abusive"]),
    }


def error_kinds(errors: list[str]) -> dict[str, int]:
    """Errors counted by kind: the exception and its message's start, numbers and handles made alike."""
    kinds: dict[str, int] = {}
    for error in errors:
        kind = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<id>", error.splitlines()[0] if error else "")
        kind = re.sub(r"\d+", "N", kind)[:80]
        kinds[kind] = kinds.get(kind, 0) + 1
    return dict(sorted(kinds.items(), key=lambda kv: -kv[1]))


def bench_timeout(seconds: int) -> int:
    """The bench server's statement time limit: short enough that the abusive session runs each of
    its statements within a phase."""
    return max(30, seconds // 3)


def bench_serve(cfg: Config, sessions: int, seconds: int, log) -> dict:
    analyst = Path(cfg.analyst_dir)
    if not (analyst / CATALOG_FILE).is_file():
        raise InputError(f"no analyst tables in {analyst}: run `auditlake demo` (or a refresh) first")
    if not CLIENT_PYTHON.exists():
        raise InputError(f"{CLIENT_PYTHON} missing: `make clients` installs the load's clients")
    port = free_port()
    env = {
        **os.environ,
        "AUDITLAKE__SERVE__PORT": str(port),
        "AUDITLAKE__SERVE__AUDITOR_PORT": str(free_port()),
        "AUDITLAKE__SERVE__QUERY_TIMEOUT_SECONDS": str(bench_timeout(seconds)),
    }
    log_path = cfg.data_dir / "logs" / "bench-serve.log"
    log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with log_path.open("w") as out:
        server = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "serve"], env=env, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 300
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"auditlake serve exited {server.returncode}: {log_path.read_text()[-1000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"auditlake serve did not listen: {log_path.read_text()[-1000:]}") from None
                time.sleep(0.5)
        queries = guide_queries()
        warm = _load(port, 1, 1, queries, [])  # every query once: compiled, and those failing here dropped
        failing = {r.get("error", "")[:80] for r in warm["ordinary"] if not r["ok"]}
        log(f"bench: serve: {len(queries)} analyst guide queries ({len(failing)} failing alone)")
        modes = {}
        for mode in MODES:
            phases = {}
            for phase, abusive in (("alone", []), ("beside", ABUSIVE)):
                log(f"bench: serve: {sessions} clients, {MODES[mode]}, {phase} for {seconds} s")
                phases[phase] = fig = _figures(_load(port, sessions, seconds, queries, abusive, mode))
                log(
                    f"bench: serve: {mode} {phase}: p50 {fig['p50']:.2f} s, p95 {fig['p95']:.2f} s, "
                    f"max {fig['max']:.2f} s, {fig['errors']} errors"
                )
            modes[mode] = phases
        up = server.poll() is None and "restarting in" not in log_path.read_text()
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
    return {
        "sessions": sessions,
        "seconds": seconds,
        "queries": len(queries),
        "timeout": bench_timeout(seconds),
        "modes": modes,
        "up": up,
        "machine": machine_speed.describe(),
    }


def render_serve(fig: dict) -> str:
    rows = [
        "| clients | phase | answers/s | p50 s | p95 s | max s | errors |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    verdicts, kinds, abuse = [], [], []
    for mode, phases in fig["modes"].items():
        alone, beside = phases["alone"], phases["beside"]
        name = MODES.get(mode, mode)
        for phase, f in phases.items():
            rows.append(
                f"| {name} | {phase} | {f['per_second']:.2f} | {f['p50']:.2f} | {f['p95']:.2f} | {f['max']:.2f} "
                f"| {f['errors']} |"
            )
            kinds += [f"{name}, {phase}: {n} x `{k}`" for k, n in f.get("error_kinds", {}).items()]
        ratio = beside["p95"] / alone["p95"] if alone["p95"] else float("nan")
        errors = alone["errors"] + beside["errors"]
        slowest = max(alone["max"], beside["max"])
        met = ratio <= TARGET_P95_RATIO and not errors and slowest <= fig["timeout"] and fig["up"]
        verdict = "met" if met else "not met"
        verdicts.append(f"{name}: p95 beside {ratio:.2f}x alone, {errors} errors, max {slowest:.2f} s: {verdict}")
        abuse.append(f"{beside['abusive_refused']} of {beside['abusive']}")
    return "\n".join(
        [
            f"`auditlake bench --layer serve --sessions {fig['sessions']} --seconds {fig['seconds']}` on "
            f"{fig['machine']}: {fig['sessions']} analysts' clients (impyla) running the analyst guide's "
            f"{fig['queries']} queries round and round, alone, then beside one session running an endless "
            f"statement, a result over the cap and a heap-exhausting aggregate over and over (the bench's "
            f"server stops a statement after {fig['timeout']} s, so the abusive session runs each in a phase). "
            f"The clients use sessions each way in turn, on the same server; where each statement has a "
            f"connection of its own, its time counts from the connection's opening.",
            "",
            *rows,
            "",
            f"The abusive session's statements stopped or failed alone, phase by phase: {', '.join(abuse)}. "
            f"The server stayed up: {'yes' if fig['up'] else 'no'}. Target for each way (the p95 beside the "
            f"abuser at most {TARGET_P95_RATIO:.0f}x alone, no error, no statement past the time limit, the "
            "server up): " + "; ".join(verdicts) + ".",
            *(["", "Errors by kind:", "", *[f"- {k}" for k in kinds]] if kinds else []),
        ]
    )
