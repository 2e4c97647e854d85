"""One ``auditlake pull``: sign in, then for each site (and the tenant) and each type asked for, each
window from the watermark less the overlap to now: list the files page by page, fetch those the
landing tree does not hold, write each whole, then move that key's watermark to the window's end.
A line per window says what it found; the delivery gaps the listings show are recorded for the
feed's report (``pipelines/pull/gaps.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pipelines.activity_log.registry import load_registry
from pipelines.command.console import log as console_log
from pipelines.config.load import Config, secret
from pipelines.errors import AuditlakeError, ConfigError, one_line
from pipelines.lake.storage import local_path
from pipelines.pull import gaps, landing
from pipelines.pull.api import ACTIVITY_LOG, SNAPSHOTS, CloudManager, PullRefused
from pipelines.pull.state import pull_lock, read_state, state_dir, write_state
from pipelines.pull.windows import first_start, iso, windows


@dataclass(frozen=True)
class Job:
    """One watermark's worth of pulling: a scope, a resource, a type (None: every type at once)."""

    site: str | None
    resource: str
    kind: str | None

    @property
    def scope(self) -> str:
        return f"site={self.site}" if self.site else "tenant"

    @property
    def key(self) -> str:
        return f"{self.scope}|{self.resource}|{self.kind or '*'}"

    def label(self) -> str:
        what = "eventType" if self.resource == ACTIVITY_LOG else "entityType"
        return f"{'site ' + self.site if self.site else 'tenant'} {self.resource} {what}={self.kind or '*'}"


@dataclass
class PullReport:
    listed: int = 0
    written: int = 0
    present: int = 0
    bytes: int = 0
    refused_paths: list[str] = field(default_factory=list)
    gaps: list[dict] = field(default_factory=list)


def _kinds(event_types: list[str], family: str) -> list[str | None]:
    """The configured types ``family``'s listings ask for (None: all at once). A type the registry does
    not know is asked of both families: Tableau adds types before any reference lists them."""
    if not event_types:
        return [None]
    known = load_registry()["families"]
    everywhere = set().union(*(f["events"] for f in known.values()))
    return [t for t in event_types if t in known[family]["events"] or t not in everywhere]


def jobs(cfg: Config) -> list[Job]:
    s = cfg.settings.pull
    out = [Job(site.lower(), ACTIVITY_LOG, k) for site in s.site_luids for k in _kinds(s.event_types, "site")]
    if s.tenant_events:
        out += [Job(None, ACTIVITY_LOG, k) for k in _kinds(s.event_types, "tenant")]
    if s.entity_snapshots:
        out += [Job(site.lower(), SNAPSHOTS, k) for site in s.site_luids for k in s.entity_types or [None]]
    return out


def landing_root(cfg: Config, dest: Path | None) -> Path:
    if dest is not None:
        return dest
    where = local_path(cfg.landing_dir)
    if where is None:
        raise ConfigError(
            f"config key 'paths.landing_dir' is {cfg.landing_dir}: `auditlake pull` writes to a folder on this "
            "machine; give one with --dest DIR"
        )
    return Path(where)


def pull(
    cfg: Config,
    dest: Path | None = None,
    now: datetime | None = None,
    sleep: Callable[[float], None] = time.sleep,
    log: Callable[[str], None] = console_log,
) -> PullReport:
    s = cfg.settings.pull
    if not s.cloud_manager_url:
        raise ConfigError("config key 'pull.cloud_manager_url' is empty: give Tableau Cloud Manager's address")
    planned = jobs(cfg)
    if not planned:
        raise ConfigError("config key 'pull.site_luids' is empty and pull.tenant_events is false: nothing to pull")
    root, folder = landing_root(cfg, dest), state_dir(cfg)
    client = CloudManager(
        s.cloud_manager_url,
        secret(cfg, "pull.token_name_env"),
        secret(cfg, "pull.token_secret_env"),
        s.token_secret_env,
        timeout=s.timeout_seconds,
        max_retries=s.max_retries,
        backoff_seconds=s.backoff_seconds,
        sleep=sleep,
    )
    now = now or datetime.now(UTC)
    report = PullReport()
    with pull_lock(folder):
        state = read_state(folder)
        tenant = client.sign_in()
        if s.tenant_id and s.tenant_id != tenant:
            raise PullRefused(
                f"pull: the personal access token '{client.token_name}' belongs to tenant {tenant}, "
                f"not to pull.tenant_id {s.tenant_id}: use a token of that tenant, or set pull.tenant_id to ''"
            )
        seen: dict[str, tuple[datetime, set[datetime]]] = {}  # gap key -> (asked from, file hours)
        for job in planned:
            since, hours = _pull_job(client, tenant, job, root, state, folder, now, report, log, cfg)
            for key, found in hours.items():
                begun, known = seen.get(key, (since, set()))
                seen[key] = (min(begun, since), known | found)
        for key, (since, hours) in seen.items():
            gaps.record_gaps(state, key, hours, since, now, s.gap_hours)
        write_state(folder, state)
        report.gaps = state["open_gaps"] + state["gaps"]
    log(
        f"pull: {report.listed} files listed, {report.written} written ({report.bytes} bytes), "
        f"{report.present} already in {root}"
        + (f", {len(report.refused_paths)} outside the date-first layout skipped" if report.refused_paths else "")
        + (
            f"; open delivery gaps: {len(state['open_gaps'])} (`auditlake refresh` prints each)"
            if state["open_gaps"]
            else ""
        )
    )
    return report


def _pull_job(
    client: CloudManager,
    tenant: str,
    job: Job,
    root: Path,
    state: dict,
    folder: Path,
    now: datetime,
    report: PullReport,
    log: Callable[[str], None],
    cfg: Config,
) -> tuple[datetime, dict[str, set[datetime]]]:
    """Every window of one job; -> where it began asking and the file hours per gap key."""
    s = cfg.settings.pull
    lookback = (
        timedelta(days=s.lookback_days) if job.resource == ACTIVITY_LOG else timedelta(hours=s.snapshot_lookback_hours)
    )
    since = first_start(state["watermarks"].get(job.key), now, lookback, timedelta(minutes=s.overlap_minutes))
    hours: dict[str, set[datetime]] = {}
    if job.resource == ACTIVITY_LOG:
        hours[f"{job.scope}|{ACTIVITY_LOG}"] = set()
    elif job.kind:
        hours[f"{job.scope}|{SNAPSHOTS}|{job.kind}"] = set()
    for start, end in windows(since, now, s.max_window_hours):
        listed, pages, present, fetch = 0, 0, 0, {}
        for page in client.list_files(job.resource, tenant, job.site, iso(start), iso(end), job.kind, s.page_size):
            pages += 1
            for path in page:
                listed += 1
                info = landing.fits(path, job.site, job.resource, job.kind)
                target = landing.where(root, path)
                if info is None or target is None:
                    report.refused_paths.append(path)
                    log(f"pull: skipped {path}: not a date-first path of {job.label()}")
                    continue
                hour = gaps.path_hour(path)
                if hour is not None:
                    key = (
                        f"{job.scope}|{ACTIVITY_LOG}"
                        if job.resource == ACTIVITY_LOG
                        else f"{job.scope}|{SNAPSHOTS}|{info.entity_type}"
                    )
                    hours.setdefault(key, set()).add(hour)
                if target.exists():  # the API's files do not change: one already here is not fetched again
                    present += 1
                else:
                    fetch[path] = target
        written = size = 0
        if fetch:
            urls = client.signed_urls(job.resource, tenant, job.site, list(fetch))
            for path, target in fetch.items():
                if path not in urls:
                    raise PullRefused(f"pull: Tableau Cloud Manager gave no download address for {path}")
                data = client.download(urls[path])
                if landing.write_whole(target, data):
                    written, size = written + 1, size + len(data)
        report.listed += listed
        report.written += written
        report.present += present
        report.bytes += size
        # only now, with every file of the window in the tree, may the next pull start after it
        state["watermarks"][job.key] = iso(end)
        write_state(folder, state)
        log(
            f"pull: {job.label()} {iso(start)} to {iso(end)}: {listed} files listed in {pages} "
            f"page{'s' * (pages != 1)}, "
            f"{written} written ({size} bytes), {present} already here"
        )
    return since, hours


def pull_before_refresh(cfg: Config, log: Callable[[str], None] = console_log) -> PullReport | None:
    """``pull.on_refresh``: a pull before the layers; one that fails is said in one line and the refresh
    lands what the tree already holds (the next pull starts from the watermarks it kept)."""
    try:
        return pull(cfg, log=log)
    except AuditlakeError as exc:
        log(f"refresh: the pull failed, the refresh goes on without it: {one_line(exc)}")
        return None
