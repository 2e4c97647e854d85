"""A refresh with nothing new, told before Spark starts.

Most hourly refreshes find nothing new, and starting the JVM to ask each layer costs far more than
looking at the files (docs/performance.md, "A refresh with nothing new, and a warm process"). A
refresh of every layer that succeeded and left nothing to retry records what it read in
``<data_dir>/refresh_inputs.json``:

- the landing files (path, size, modification time, readability), one digest per date folder;
- the Write-Back export file (size and time), when that is the source;
- Tableau Server's Activity Log files under ``sources.server_logs.roots`` (size and time), if any;
- the lake as the run left it: every Delta table's newest commit (warehouse and analysts' copies),
  the checkpoint files, the Derby metastore's files, and the Hyper export when a refresh publishes;
- the configuration as loaded, a digest of the pseudonym key, and the code, dbt project, expectations
  and versions of the stack the process runs.

The next ``auditlake refresh`` computes the same from the file system alone (no Spark, a fraction of
a second) and stops when nothing differs. The landing's part is taken before the run starts, so a file
that arrives during a run is new to the next one; the lake's part after the run's last write. The
record is removed as any refresh starts, so a refresh that fails or is killed leaves none behind.

When it does differ, what changed is said in one line, and bronze walks every folder when a date
folder older than the next listing's window changed (the window's first day is recorded), or when
there is no record (what earlier listings skipped is unknown): a file dropped into an old folder
lands on that run, not on the ``full_every_runs``-th.

Never told this way (every refresh starts Spark): a Write-Back source read over JDBC (only the
database knows whether it has new rows), a location that is a URI (S3), the PostgreSQL metastore
(shared with other processes), ``--source``, and after a run that left an alert pending or a publish
unsent.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from importlib import metadata
from pathlib import Path

from pipelines.activity_log.bronze.listing import list_landing
from pipelines.config.load import Config, secret
from pipelines.config.project import CONF_DIR, DBT_DIR, GX_TEMPLATE_DIR, PACKAGE_DIR
from pipelines.lake import storage
from pipelines.lake.state_files import write_json_whole
from pipelines.pull.state import PULL_STATE_DIR
from pipelines.server_logs.discover import Listing, find_logs
from pipelines.server_logs.roots import configured_roots

RECORD_FILE = "refresh_inputs.json"
RECORD_VERSION = 1
DELTA_LOG = "_delta_log"
# folders of the project's trees that hold a run's output, not its inputs
_OUTPUT_DIRS = frozenset({"__pycache__", "target", "logs", "uncommitted"})
_OUTPUT_FILES = frozenset({".user.yml"})
# the stack whose upgrade may change what a refresh makes
_STACK = ("pyspark", "delta-spark", "dbt-core", "dbt-spark", "great-expectations", "pydantic")
UNDATED = "undated"
# what the log line calls an input that changed
_NAMES = {
    "writeback": "the Write-Back export",
    "server_logs": "Tableau Server's log files",
    "config": "the configuration",
    "pseudonym_key": "the pseudonym key",
}


def _digest(parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(repr(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def landing_by_day(root: str) -> tuple[dict[str, str], int]:
    """{date folder's day (or "undated"): digest of its files} under a local landing root, and the file
    count: every file bronze's listing finds (pipelines/activity_log/bronze/listing.py), every folder."""
    files: dict[str, list] = {}
    listed = list_landing(None, root)  # a local root needs no Spark
    for f in listed:
        day = f.info.path_date.isoformat() if f.info.path_date else UNDATED
        files.setdefault(day, []).append((f.relative, f.size, f.mtime_ms, f.readable))
    return {day: _digest(entries) for day, entries in sorted(files.items())}, len(listed)


def _newest_commit(log_dir: str) -> tuple[str, int] | None:
    """The newest ``NNN.json`` commit of a Delta log, and its modification time."""
    newest = None
    with os.scandir(log_dir) as entries:
        for entry in entries:
            stem, _, suffix = entry.name.partition(".")
            if suffix == "json" and stem.isdigit() and (newest is None or stem > newest.name.partition(".")[0]):
                newest = entry
    return (newest.name, newest.stat().st_mtime_ns) if newest else None


def tree_state(root: str, skip: tuple[str, ...] = ()) -> tuple[str, int]:
    """A digest of a lake folder and the Delta tables in it: a table counts by its newest commit (its
    data files are not listed), any other file by its size and time; ``skip``: entries of the top
    folder left out. -> (digest, tables)."""
    parts, tables = [], 0
    stack = [(root, "")]
    while stack:
        folder, rel = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            parts.append((rel, "missing"))
            continue
        if any(e.name == DELTA_LOG and e.is_dir() for e in entries):
            parts.append((rel, "delta", _newest_commit(os.path.join(folder, DELTA_LOG))))
            tables += 1
            continue
        for entry in entries:
            if not rel and entry.name in skip:
                continue
            child = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_dir(follow_symlinks=True):
                stack.append((entry.path, child))
            else:
                st = entry.stat(follow_symlinks=True)
                parts.append((child, st.st_size, st.st_mtime_ns))
    return _digest(sorted(parts, key=repr)), tables


@functools.cache
def _code_digest() -> str:
    """Once per process: a ``refresh --every`` process keeps the code it started with (the registry is
    read once), so a deploy after its start must not be recorded as what it ran."""
    return _files_digest([PACKAGE_DIR, CONF_DIR, DBT_DIR, GX_TEMPLATE_DIR])


def _files_digest(roots: list[Path]) -> str:
    h = hashlib.sha256()
    for root in roots:
        paths = [root] if root.is_file() else root.rglob("*")
        for path in sorted(paths):
            relative = path.relative_to(root.parent)
            if path.is_file() and not _OUTPUT_DIRS & set(relative.parts) and path.name not in _OUTPUT_FILES:
                h.update(str(relative).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:32]


def _stack_versions() -> dict[str, str]:
    versions = {"python": sys.version.split()[0]}
    for name in _STACK:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "-"
    return versions


def not_told(cfg: Config, source: Path | None) -> str | None:
    """Why a refresh with this configuration must start Spark to know whether anything is new; None
    when the file system tells."""
    if source is not None:
        return "--source names another landing folder"
    if cfg.settings.writeback.source == "jdbc":
        return "the Write-Back source is read over JDBC"
    if cfg.settings.metastore.kind != "derby":
        return "the metastore is shared (other processes may change it while no refresh runs)"
    uris = [
        name
        for name, location in (
            ("paths.landing_dir", cfg.landing_dir),
            ("paths.warehouse_dir", cfg.warehouse_dir),
            ("paths.checkpoint_dir", cfg.checkpoint_dir),
            ("analyst.dir", cfg.analyst_dir),
            ("integrity.digest_dir", cfg.digest_dir),
        )
        if storage.local_path(location) is None
    ]
    return f"{', '.join(uris)} not local" if uris else None


def _writeback_file(cfg: Config) -> list:
    if cfg.settings.writeback.source != "file":
        return [cfg.settings.writeback.source]
    path = cfg.path("writeback.file.path")
    try:
        st = path.stat()
    except OSError:
        return [str(path), "missing"]
    return [str(path), st.st_size, st.st_mtime_ns]


def _server_logs(cfg: Config, listed: Listing | None) -> str:
    """Tableau Server's log files (each file's place, size and time): one that grew is new input.
    ``listed``: the roots as the copy before the check found them, rather than listed again; what the
    copy read is then what the record says was read."""
    roots = configured_roots(cfg)
    if not roots:
        return ""
    logs, problems = listed if listed is not None else find_logs(roots)
    return _digest(sorted((f.location, f.size, f.mtime_ms) for f in logs) + problems)


def _key_digest(cfg: Config) -> str:
    """The analysts' copies depend on the pseudonym key: its digest, never the key."""
    if not cfg.settings.analyst.enabled:
        return "-"
    try:
        return hashlib.sha256(
            b"auditlake pseudonym key\0" + secret(cfg, "analyst.pseudonym_key_env").encode()
        ).hexdigest()
    except Exception:  # noqa: BLE001 - the refresh itself says what is missing
        return "unset"


@dataclass
class Inputs:
    """What a refresh reads, taken from the file system before it starts."""

    landing: dict[str, str]  # day -> digest
    files: int
    other: dict  # the Write-Back export, the configuration, the key, the code, the stack

    def as_json(self) -> dict:
        return {"landing": self.landing, "files": self.files, "other": self.other}


def current_inputs(cfg: Config, server_logs: Listing | None = None) -> Inputs:
    """``server_logs``: Tableau Server's log roots as a copy just listed them (``CopyResult.listed``)."""
    landing, files = landing_by_day(cfg.landing_dir)
    other = {
        "writeback": _writeback_file(cfg),
        "server_logs": _server_logs(cfg, server_logs),
        "config": _digest([cfg.env, json.dumps(cfg.values, sort_keys=True, default=str)]),
        "pseudonym_key": _key_digest(cfg),
        "code": _code_digest(),
        "stack": _stack_versions(),
    }
    return Inputs(landing, files, other)


def lake_state(cfg: Config) -> dict:
    """The lake as a run left it: its tables' newest commits, the checkpoints, the analysts' copies."""
    locations = [
        ("warehouse", cfg.warehouse_dir),
        ("checkpoints", cfg.checkpoint_dir),
        ("analyst", cfg.analyst_dir),
        ("metastore", str(cfg.metastore_dir)),  # a dropped view or table the refresh would make again
    ]
    if cfg.settings.tableau.publish_on_refresh:  # the export a refresh brings up to date, and its marks
        hyper = cfg.path("hyper.out_dir") if cfg.settings.hyper.out_dir else cfg.data_dir / "hyper"
        locations.append(("hyper export", str(hyper)))
    # the pull's state moves with every pull, new files or not: what it brought shows in the landing tree
    skip = {"checkpoints": (PULL_STATE_DIR,)}
    return {name: tree_state(storage.local_path(location), skip.get(name, ()))[0] for name, location in locations}


def _record_path(cfg: Config) -> Path:
    return cfg.data_dir / RECORD_FILE


def recorded(cfg: Config) -> dict | None:
    try:
        record = json.loads(_record_path(cfg).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none, or a kill mid-write: the refresh runs
        return None
    return record if isinstance(record, dict) and record.get("version") == RECORD_VERSION else None


def forget(cfg: Config) -> None:
    """As a refresh starts: until it has finished, the lake is not what the record says."""
    _record_path(cfg).unlink(missing_ok=True)


def record(cfg: Config, inputs: Inputs, run_id: str, notes: list[str], listing_from: date | None) -> None:
    """After a refresh of every layer that left nothing to retry: what it read, and the lake as it
    left it. ``notes``: lines a refresh prints whatever it finds (the quiet sites), printed again by
    the runs the record stops. ``listing_from``: the first day an ordinary listing of the next run
    walks (bronze's cut-off, from the ledger's newest day), None for every day."""
    body = {
        "version": RECORD_VERSION,
        "run_id": run_id,
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "listing_from": listing_from.isoformat() if listing_from else None,
        "inputs": inputs.as_json(),
        "lake": lake_state(cfg),
        "notes": notes,
    }
    path = _record_path(cfg)
    write_json_whole(path, body)


@dataclass
class Verdict:
    """What the file system says before a refresh: whether anything changed since the recorded run,
    what, and whether bronze must walk every folder to find it."""

    inputs: Inputs
    record: dict | None
    changed: list[str] = field(default_factory=list)  # what differs, for the log line
    old_days: list[str] = field(default_factory=list)  # changed date folders older than the listing's window
    seconds: float = 0.0

    @property
    def nothing_new(self) -> bool:
        return self.record is not None and not self.changed


def check(cfg: Config, server_logs: Listing | None = None) -> Verdict:
    """Compare the file system with the last recorded refresh (none recorded: everything is new).
    ``server_logs``: as for :func:`current_inputs`."""
    started = time.monotonic()
    inputs = current_inputs(cfg, server_logs)
    last = recorded(cfg)
    verdict = Verdict(inputs, last)
    if last is None:
        verdict.changed = ["no complete refresh recorded"]
    else:
        before = last["inputs"]
        days = sorted(
            set(inputs.landing) ^ set(before["landing"])
            | {d for d in inputs.landing.keys() & before["landing"].keys() if inputs.landing[d] != before["landing"][d]}
        )
        if days:
            verdict.changed.append(f"the landing files ({_days_text(days)})")
            verdict.old_days = [d for d in days if d != UNDATED and d < (last.get("listing_from") or "")]
        for key, value in inputs.other.items():
            if before["other"].get(key) != value:
                verdict.changed.append(_NAMES.get(key, f"the {key}"))
        lake = lake_state(cfg)
        verdict.changed += [f"the lake's {part}" for part, digest in lake.items() if last["lake"].get(part) != digest]
    verdict.seconds = time.monotonic() - started
    return verdict


def _days_text(days: list[str]) -> str:
    shown = ", ".join(days[:3]) + (f" and {len(days) - 3} more" if len(days) > 3 else "")
    return f"date folder{'s' if len(days) > 1 else ''} {shown}"
