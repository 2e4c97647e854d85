"""The run: hour by hour, stories and background volume into the partition writer."""

from __future__ import annotations

import json
import random
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from . import stories
from .dirty import DIRTY_KINDS, FileDirt, RecordDirt, per_kind_target
from .records import generated_specs, render, resolve, subject_kind
from .snapshots import SnapshotWriter, no_snapshots
from .values import DAY_US, HOUR_US, Ctx, iso, new_uuid, time_variant, to_us
from .world import World, build_world
from .writer import PartitionWriter

DEFAULT_START = datetime(2026, 6, 1, tzinfo=UTC)
ENVELOPE_SHARE = 0.10
LEGACY_SHARE = 0.10
SITE_SHARES = (0.5, 0.3, 0.2)
_HOUR_OF_DAY = (
    0.3,
    0.25,
    0.2,
    0.2,
    0.2,
    0.25,
    0.35,
    0.5,
    0.7,
    0.9,
    1.0,
    1.0,
    0.95,
    1.0,
    1.0,
    0.95,
    0.9,
    0.8,
    0.7,
    0.6,
    0.5,
    0.45,
    0.4,
    0.35,
)
# Types the background volume writes; everything else is the long tail.
VOLUME_TYPES = {
    ("site", t)
    for t in (
        "hist_login",
        "hist_logout",
        "hist_access_view",
        "hist_access_datasource",
        "background_job",
        "hist_refresh_workbook_extracts",
        "hist_refresh_datasource_extract",
        "hist_increment_workbook_extracts",
        "hist_increment_datasource_extract",
        "hist_send_subscription_email_for_view",
        "hist_run_flow_scheduled",
        "hist_issue_refresh_token",
        "hist_redeem_refresh_token",
        "hist_login_with_pat",
    )
} | {
    ("tenant", t)
    for t in (
        "user_login_create_session",
        "update_session",
        "personal_access_token_login",
        "get_users",
        "get_sites",
        "list_personal_access_tokens",
        "tcm_activity_log_access",
    )
}
# Whole-site and whole-tenant lifecycle events: written once each (registry coverage), never
# as background noise, since the sites keep working after them.
COVERAGE_ONLY = {
    ("site", t)
    for t in (
        "hist_create_site",
        "hist_delete_site",
        "hist_suspend_site",
        "hist_lock_site",
        "hist_activate_site",
    )
} | {
    ("tenant", t)
    for t in (
        "create_tenant",
        "delete_tenant",
        "merge_tenant",
        "update_tenant",
        "create_site",
        "delete_site",
        "migrate_site",
        "suspend_site",
        "reactivate_site",
    )
}
PROGRESS_EVERY = 100_000
PERMISSIONS_CUTOVER = datetime(2024, 10, 1, tzinfo=UTC)


class Stats:
    def __init__(self) -> None:
        self.files = self.gzip_files = self.lines = self.bytes = self.records = 0
        self.by_family = {"site": 0, "tenant": 0}
        self.by_shape = {"flat": 0, "envelope": 0}
        self.by_edition = {"current": 0, "legacy": 0}
        self.event_types: set[str] = set()
        self.dirty = {k: 0 for k in DIRTY_KINDS}


class Generator:
    def __init__(
        self,
        out_dir: Path,
        events: int,
        seed: int,
        start: datetime,
        days: int,
        dirty: bool,
        progress: Callable[[str], None] | None,
        layout: str = "auditlake",
        live_feed: bool = False,
        security_stories: bool = False,
        snapshots: bool = False,
        snapshot_every: int = 1,
        world: World | None = None,
    ) -> None:
        if events < 0 or days < 1 or snapshot_every < 1:
            raise ValueError("events must be >= 0, days >= 1 and snapshot_every >= 1")
        self.events, self.seed, self.days, self.dirty = events, seed, days, dirty
        self.progress = progress
        self.world = world if world is not None else build_world(seed, start)
        self.rng = random.Random(seed)
        self.start_us = to_us(start)
        self.end_us = self.start_us + days * DAY_US
        self.hours = days * 24
        self.live_feed = live_feed  # also what the live feed adds to the references (--live-feed)
        self.group_set_members: set = set()  # (group LUID, group set number): the live feed's group sets
        self.specs = generated_specs(live_feed)
        self.security_stories = security_stories  # a situation for each detection report (--security-stories)
        self.enc = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode
        self.iso = iso
        self.stats = Stats()
        file_dirt = None
        self.ring = None
        if dirty:
            target = per_kind_target(events)
            file_dirt = FileDirt(seed, self.stats, target, est_files=min(12_000, 600 + events // 5))
            self.ring = deque(maxlen=256)
        self.writer = PartitionWriter(Path(out_dir), self.stats, file_dirt, layout)
        self.record_dirt = RecordDirt(self, seed, per_kind_target(events), self.hours) if dirty else None
        self.snapshots = (  # the entities at the top of the hours (--snapshots)
            SnapshotWriter(Path(out_dir), layout, self.world, seed, self.start_us, self.hours, snapshot_every, dirty)
            if snapshots
            else None
        )
        self.open_hour = self.start_us // HOUR_US - 3
        self.produced = 0
        self._next_progress = PROGRESS_EVERY
        self._job_id = 40_000 + self.rng.randrange(10_000)
        self.replacements = {s.replaced_by for s in self.specs.values() if s.deprecated and s.replaced_by}
        self.tail_types = sorted(
            k
            for k, s in self.specs.items()
            if k not in VOLUME_TYPES and k not in COVERAGE_ONLY and not s.deprecated and k[1] not in self.replacements
        )
        self.legacy_capable = {k: "legacy" in s.editions for k, s in self.specs.items()}
        self.tokens = []
        for site in self.world.sites:
            owners = [u for u in site.users if u.site_role_id in (10, 11)]
            for u in self.rng.sample(owners, 2):
                self.tokens.append(
                    {
                        "id": new_uuid(self.rng),
                        "name": f"{u.name}-{site.url}-sync",
                        "user": u,
                        "site": site,
                        "created_us": self.start_us - self.rng.randint(10, 200) * DAY_US,
                        "ttl_h": 24 * 365,
                    }
                )

    # ------------------------------------------------------------ plumbing used by stories
    def next_job_id(self) -> int:
        self._job_id += self.rng.randint(1, 3)
        return self._job_id

    def ctx(self, site, actor, us: int, family: str = "site") -> Ctx:
        return Ctx(self.world, site, actor, self.rng, us, family)

    def resolve(self, c: Ctx, family: str, et: str) -> Ctx:
        return resolve(c, subject_kind(family, et))

    def emit(
        self,
        et: str,
        c: Ctx,
        family: str = "site",
        edition: str | None = None,
        shape: str | None = None,
        trace: str | None = None,
        full: bool = False,
    ) -> dict:
        """Build one record of ``et`` from ``c`` and write it (shape and edition drawn if not given)."""
        spec = self.specs[(family, et)]
        rng = self.rng
        if edition is None:
            edition = "legacy" if (self.legacy_capable[(family, et)] and rng.random() < LEGACY_SHARE) else "current"
        if shape is None:
            shape = "envelope" if rng.random() < ENVELOPE_SHARE else "flat"
        c.variant = time_variant(rng)
        c.trace = trace
        if c.actor is None:
            self.resolve(c, family, et)
        rec = render(spec, c, "full" if full else edition, shape, live_feed=self.live_feed)
        partition = c.site.luid if family == "site" else self.world.tenant.id
        self.put(rec, family, partition, et, c.us, shape, edition)
        self.produced += 1
        return rec

    def put(
        self,
        rec: dict,
        family: str,
        partition: str,
        et: str,
        us: int,
        shape: str,
        edition: str,
        abs_hour: int | None = None,
        part: int = 0,
        ring: bool = True,
    ) -> None:
        h = us // HOUR_US if abs_hour is None else abs_hour
        if h < self.open_hour:
            raise AssertionError(f"record for hour {h} after that hour was written ({et})")
        self.writer.add(h, family, partition, et, us, self.enc(rec), part)
        st = self.stats
        st.records += 1
        st.by_family[family] += 1
        st.by_shape[shape] += 1
        st.by_edition[edition] += 1
        st.event_types.add(et)
        if ring and self.ring is not None:
            self.ring.append((rec, family, et, us, shape, edition, partition, h))
        if st.records >= self._next_progress:
            self._next_progress += PROGRESS_EVERY
            if self.progress is not None:
                self.progress(f"{st.records:,} records, {st.files:,} files written, at {iso(us, 1)}")

    # ------------------------------------------------------------ the run
    def _hour_targets(self) -> list[int]:
        w = []
        for hi in range(self.hours):
            d = datetime.fromtimestamp((self.start_us + hi * HOUR_US) // 1_000_000, tz=UTC)
            w.append(_HOUR_OF_DAY[d.hour] * (0.3 if d.weekday() >= 5 else 1.0))
        total, cum, out = sum(w), 0.0, []
        for x in w:
            cum += x
            out.append(round(self.events * cum / total))
        return out

    def _schedule(self) -> tuple[dict, dict]:
        rng, hours = self.rng, self.hours
        # When the window straddles the October 2024 cut-over, deprecated events
        # (create_permissions, update_permissions) go before it and their replacement
        # (set_permissions) after it; otherwise both anywhere in the window.
        cut = (to_us(PERMISSIONS_CUTOVER) - self.start_us) // HOUR_US
        straddles = 2 <= cut <= hours - 3
        before, after = (range(0, cut - 1), range(cut + 1, hours)) if straddles else (range(hours),) * 2
        coverage: dict[int, list] = {}
        for spec in self.specs.values():
            span = before if spec.deprecated else after if spec.event_type in self.replacements else range(hours)
            coverage.setdefault(rng.choice(span), []).append((spec.family, spec.event_type, "full"))
            if "legacy" in spec.editions:
                coverage.setdefault(rng.choice(span), []).append((spec.family, spec.event_type, "legacy"))
        story_plan: dict[int, list] = {}
        for fn, count in stories.scheduled_counts(self.events):
            span = {stories.deprecated_permissions: before, stories.permission_edit: after}.get(fn, range(hours))
            for _ in range(count):
                h = rng.choice(span)
                story_plan.setdefault(h, []).append(fn)
        if self.security_stories:
            for fn, when in stories.SECURITY_STORIES:
                story_plan.setdefault(
                    rng.choice(range(hours // 2, hours) if when == "late" else range(hours)), []
                ).append(fn)
        return coverage, story_plan

    def _site(self):
        r = self.rng.random()
        acc = 0.0
        for site, share in zip(self.world.sites, SITE_SHARES, strict=True):
            acc += share
            if r < acc:
                return site
        return self.world.sites[-1]

    def _t0(self, hour_us: int) -> int:
        t0 = hour_us + self.rng.randrange(HOUR_US)
        return max(self.start_us, min(t0, self.end_us - stories.UNIT_SPAN_US))

    def run(self) -> dict:
        rng = self.rng
        targets = self._hour_targets()
        coverage, story_plan = self._schedule()
        units = [u for u, _, _ in stories.BACKGROUND]
        weights = [share / size for _, share, size in stories.BACKGROUND]
        cum, acc = [], 0.0
        for w in weights:
            acc += w
            cum.append(acc)
        for hi in range(self.hours):
            if self.snapshots is not None:
                self.snapshots.take(hi)  # before the hour's stories: the state at H:00
            hour_us = self.start_us + hi * HOUR_US
            self.open_hour = hour_us // HOUR_US - 3
            self.writer.flush_before(self.open_hour)
            for family, et, mode in coverage.get(hi, ()):
                site = self._site()
                c = self.ctx(site, None, min(hour_us + rng.randrange(HOUR_US), self.end_us - 1), family)
                self.resolve(c, family, et)
                if mode == "full":
                    self.emit(et, c, family, edition="current", shape="flat", full=True)
                else:
                    self.emit(et, c, family, edition="legacy")
            for fn in story_plan.get(hi, ()):
                fn(self, self._site(), self._t0(hour_us))
            target = targets[hi]
            while self.produced < target:
                site = self._site()
                t0 = self._t0(hour_us)
                if self.events - self.produced < 16:
                    stories.datasource_access(self, site, t0)
                    continue
                unit = rng.choices(units, cum_weights=cum)[0]
                unit(self, site, t0)
            if self.record_dirt is not None:
                self.record_dirt.on_hour(hi, hour_us)
        if self.snapshots is not None:
            self.snapshots.take(self.hours)  # the window's end
        self.writer.close()
        return self.summary()

    def summary(self) -> dict:
        st = self.stats
        dirty = dict(st.dirty) if self.dirty else {k: 0 for k in DIRTY_KINDS}
        snaps = self.snapshots
        if snaps is not None:  # snapshots.SNAPSHOT_DIRTY_KINDS
            dirty["poison_snapshot"] = snaps.poisoned
        return {
            "files": st.files,
            "gzip_files": st.gzip_files,
            "lines": st.lines,
            "records": st.records,
            "bytes": st.bytes,
            "by_family": dict(st.by_family),
            "by_shape": dict(st.by_shape),
            "by_edition": dict(st.by_edition),
            "event_types": sorted(st.event_types),
            "dirty": dirty,
            "seed": self.seed,
            "start": iso(self.start_us, 1),
            "end": iso(self.end_us, 1),
            "snapshots": snaps.summary() if snaps is not None else no_snapshots(),
            "silent_changes": list(snaps.silent_changes) if snaps is not None else [],
        }
