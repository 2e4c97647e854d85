"""One ``auditlake pull``: sign in, then for each site (and the tenant) and resource, each window from
the earliest watermark less the overlap to now, every type asked for in turn: list the files page by
page, fetch those the landing tree does not hold (signed addresses asked for a batch at a time, just
before its downloads: they expire), write each whole; then, in one write of the state file, move the
watermarks to the window's end and record the delivery gaps its listings show for the feed's report
(``pipelines/pull/gaps.py``). A line per type and window says what it found."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pipelines.activity_log.registry import load_registry
from pipelines.command.console import log as console_log
from pipelines.config.load import Config, secret
from pipelines.errors import AuditlakeError, ConfigError, ExternalError, one_line
from pipelines.lake.storage import local_path
from pipelines.pull import gaps, landing
from pipelines.pull.api import ACTIVITY_LOG, PRESIGN_BATCH, SNAPSHOTS, CloudManager, PullRefused
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
    unsigned_paths: list[str] = field(default_factory=list)
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
        max_retry_after=s.max_retry_after_seconds,
        sleep=sleep,
    )
    now = now or datetime.now(UTC)
    report = PullReport()
    # the disk and the state file fail as the network does, in one line: `pull.on_refresh` promises
    # that a failed pull leaves the refresh going
    try:
        with pull_lock(folder):
            state = read_state(folder)
            stale = landing.remove_partials(root)
            if stale:
                log(f"pull: removed {len(stale)} partial file{'s' * (len(stale) != 1)} a stopped pull left in {root}")
            tenant = client.sign_in()
            if s.tenant_id and s.tenant_id != tenant:
                raise PullRefused(
                    f"pull: the personal access token '{client.token_name}' belongs to tenant {tenant}, "
                    f"not to pull.tenant_id {s.tenant_id}: use a token of that tenant, or set pull.tenant_id to ''"
                )
            for group in _groups(planned):
                _pull_group(client, tenant, group, root, state, folder, now, report, log, cfg)
            report.gaps = state["open_gaps"] + state["gaps"]
    except AuditlakeError:
        raise
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise ExternalError(
            f"pull: {where}{exc.strerror or one_line(exc)} (the watermarks keep what was written)"
        ) from exc
    except ValueError as exc:
        raise ExternalError(f"pull: {one_line(exc)}") from exc
    log(
        f"pull: {report.listed} files listed, {report.written} written ({report.bytes} bytes), "
        f"{report.present} already in {root}"
        + (f", {len(report.refused_paths)} outside the date-first layout skipped" if report.refused_paths else "")
        + (
            f", {len(report.unsigned_paths)} given no download address (asked for again by the next pull)"
            if report.unsigned_paths
            else ""
        )
        + (
            f"; open delivery gaps: {len(state['open_gaps'])} (`auditlake refresh` prints each)"
            if state["open_gaps"]
            else ""
        )
    )
    return report


def _groups(planned: list[Job]) -> list[list[Job]]:
    """The jobs of one scope and resource together: their files feed the same delivery-gap keys."""
    out: dict[tuple[str, str], list[Job]] = {}
    for job in planned:
        out.setdefault((job.scope, job.resource), []).append(job)
    return list(out.values())


@dataclass
class Window:
    """What one job's listing of one window found and wrote."""

    listed: int = 0
    pages: int = 0
    present: int = 0
    written: int = 0
    size: int = 0
    hours: dict[str, set[datetime]] = field(default_factory=dict)
    unsigned: list[str] = field(default_factory=list)


def _pull_group(
    client: CloudManager,
    tenant: str,
    group: list[Job],
    root: Path,
    state: dict,
    folder: Path,
    now: datetime,
    report: PullReport,
    log: Callable[[str], None],
    cfg: Config,
) -> None:
    """Every window of one scope and resource, each listed for every type before the state file moves
    on: a gap key's hours must come whole and in time order, and its record must be written with the
    watermarks past them, or a pull stopped half-way records gaps the next one cannot correct."""
    s = cfg.settings.pull
    resource, scope = group[0].resource, group[0].scope
    lookback = (
        timedelta(days=s.lookback_days) if resource == ACTIVITY_LOG else timedelta(hours=s.snapshot_lookback_hours)
    )
    overlap = timedelta(minutes=s.overlap_minutes)
    starts = {job: first_start(state["watermarks"].get(job.key), now, lookback, overlap) for job in group}
    since = min(starts.values())
    if resource == ACTIVITY_LOG:
        keys = {f"{scope}|{ACTIVITY_LOG}"}
    else:
        keys = {f"{scope}|{SNAPSHOTS}|{job.kind}" for job in group if job.kind}
        if any(job.kind is None for job in group):
            keys |= {k for k in state["last_file_hour"] if k.startswith(f"{scope}|{SNAPSHOTS}|")}
    held: set[Job] = set()  # a file of theirs got no download address: their watermark stays before it
    for start, end in windows(since, now, s.max_window_hours):
        done: list[tuple[Job, datetime, Window]] = []
        for job in group:
            if starts[job] >= end:  # this job's listings of the range were recorded by an earlier pull
                continue
            begin = max(start, starts[job])
            found = _pull_window(client, tenant, job, begin, end, s.page_size, root, report, log)
            done.append((job, begin, found))
            if found.unsigned:
                held.add(job)
        hours: dict[str, set[datetime]] = {}
        for _job, _begin, found in done:
            for key, seen in found.hours.items():
                hours.setdefault(key, set()).update(seen)
        keys |= hours.keys()
        for job, _begin, _found in done:
            if job not in held:  # every file of the window is in the tree: the next pull may start after it
                state["watermarks"][job.key] = iso(end)
        for key in sorted(keys):
            gaps.record_gaps(state, key, hours.get(key, set()), since, end, s.gap_hours)
        write_state(folder, state)
        for job, begin, found in done:
            log(
                f"pull: {job.label()} {iso(begin)} to {iso(end)}: {found.listed} files listed in {found.pages} "
                f"page{'s' * (found.pages != 1)}, "
                f"{found.written} written ({found.size} bytes), {found.present} already here"
            )
            if found.unsigned:
                kept = state["watermarks"].get(job.key, "none yet")
                log(
                    f"pull: {job.label()} {iso(begin)} to {iso(end)}: Tableau Cloud Manager gave no download "
                    f"address for {len(found.unsigned)} file{'s' * (len(found.unsigned) != 1)}, not fetched: "
                    f"{', '.join(found.unsigned)}; the watermark stays at {kept}, so the next pull asks again"
                )


def _pull_window(
    client: CloudManager,
    tenant: str,
    job: Job,
    start: datetime,
    end: datetime,
    page_size: int,
    root: Path,
    report: PullReport,
    log: Callable[[str], None],
) -> Window:
    """One job's listing of one window, and the downloads of the files the tree does not hold."""
    found, fetch = Window(), {}
    for page in client.list_files(job.resource, tenant, job.site, iso(start), iso(end), job.kind, page_size):
        found.pages += 1
        for path in page:
            found.listed += 1
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
                found.hours.setdefault(key, set()).add(hour)
            # the API's files are taken not to change (docs/pull.md, Limits): one here is not fetched again
            if target.exists():
                found.present += 1
            else:
                fetch[path] = target
    paths = list(fetch)
    for i in range(0, len(paths), PRESIGN_BATCH):
        batch = paths[i : i + PRESIGN_BATCH]
        urls = client.signed_urls(job.resource, tenant, job.site, batch)
        for path in batch:
            if path not in urls:
                found.unsigned.append(path)
                continue
            data = client.download(urls[path])
            if landing.write_whole(fetch[path], data):
                found.written, found.size = found.written + 1, found.size + len(data)
    report.listed += found.listed
    report.written += found.written
    report.present += found.present
    report.bytes += found.size
    report.unsigned_paths += found.unsigned
    return found


def pull_before_refresh(cfg: Config, log: Callable[[str], None] = console_log) -> PullReport | None:
    """``pull.on_refresh``: a pull before the layers; one that fails is said in one line and the refresh
    lands what the tree already holds (the next pull starts from the watermarks it kept)."""
    try:
        return pull(cfg, log=log)
    except AuditlakeError as exc:
        log(f"refresh: the pull failed, the refresh goes on without it: {one_line(exc)}")
        return None
