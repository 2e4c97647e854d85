"""``auditlake bench --layer serve``: the analysts' server under load. A real ``auditlake serve``
over this lake's analyst tables; ``--sessions`` analysts (impyla, as BI tools connect) run the
analyst guide's queries for ``--seconds``, first alone, then beside one abusive session (an endless
statement, a result larger than the server's cap, a heap-exhausting aggregate, over and over).
Figures: answers per second, p50 / p95 seconds, errors, whether the server stayed up.
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


def guide_queries(guide: Path = GUIDE) -> list[str]:
    """The analyst guide's SQL blocks, over the analysts' views (``analyst.`` for ``gold.``)."""
    blocks = re.findall(r"```sql\n(.*?)```", guide.read_text(encoding="utf-8"), flags=re.S)
    return [re.sub(r"\bgold\.", "analyst.", b).strip().rstrip(";") for b in blocks if "gold." in b]


def _load(port: int, sessions: int, seconds: int, queries: list[str], abusive: list[str]) -> dict:
    job = {"host": "127.0.0.1", "port": port, "sessions": sessions, "seconds": seconds, "queries": queries}
    job["abusive"] = abusive
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
        "errors": len(ordinary) - len(answered),
        "first_error": next((r["error"] for r in ordinary if not r["ok"]), ""),
        "abusive": len(run["abusive"]),
        "abusive_refused": sum(not r["ok"] for r in run["abusive"]),
    }


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
        log(f"bench: serve: {sessions} sessions alone for {seconds} s")
        alone = _figures(_load(port, sessions, seconds, queries, []))
        log(f"bench: serve: alone p50 {alone['p50']:.2f} s, p95 {alone['p95']:.2f} s, {alone['errors']} errors")
        log(f"bench: serve: {sessions} sessions beside one abusive session for {seconds} s")
        beside = _figures(_load(port, sessions, seconds, queries, ABUSIVE))
        log(f"bench: serve: beside p50 {beside['p50']:.2f} s, p95 {beside['p95']:.2f} s, {beside['errors']} errors")
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
        "alone": alone,
        "beside": beside,
        "up": up,
        "machine": machine_speed.describe(),
    }


def render_serve(fig: dict) -> str:
    alone, beside = fig["alone"], fig["beside"]
    ratio = beside["p95"] / alone["p95"] if alone["p95"] else float("nan")
    rows = [
        "| | answers/s | p50 s | p95 s | errors |",
        "|---|---:|---:|---:|---:|",
        f"| {fig['sessions']} sessions alone | {alone['per_second']:.2f} | {alone['p50']:.2f} | {alone['p95']:.2f} "
        f"| {alone['errors']} |",
        f"| beside one abusive session | {beside['per_second']:.2f} | {beside['p50']:.2f} | {beside['p95']:.2f} "
        f"| {beside['errors']} |",
    ]
    verdict = "met" if ratio <= TARGET_P95_RATIO and not beside["errors"] and fig["up"] else "not met"
    return "\n".join(
        [
            f"`auditlake bench --layer serve --sessions {fig['sessions']} --seconds {fig['seconds']}` on "
            f"{fig['machine']}: {fig['sessions']} analysts' sessions (impyla) running the analyst guide's "
            f"{fig['queries']} queries round and round, alone, then beside one session running an endless "
            f"statement, a result over the cap and a heap-exhausting aggregate over and over (the bench's "
            f"server stops a statement after {fig['timeout']} s, so the abusive session runs each in a phase).",
            "",
            *rows,
            "",
            f"The abusive session's {beside['abusive']} statements: {beside['abusive_refused']} stopped or "
            f"failed alone. The server stayed up: {'yes' if fig['up'] else 'no'}. The ordinary sessions' p95 "
            f"beside it is {ratio:.2f}x their p95 alone (target: at most {TARGET_P95_RATIO:.0f}x, no error, "
            f"the server up): {verdict}."
            + (f" First ordinary error: `{beside['first_error']}`." if beside["errors"] else ""),
        ]
    )
