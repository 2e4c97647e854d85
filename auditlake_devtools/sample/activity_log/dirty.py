"""What real feeds contain besides clean records (``--dirty``).

Record-level dirt (:class:`RecordDirt`) adds records: exact duplicates in
another file, the same event in the other shape, late deliveries, unknown event
types, numbers sent as strings, records without an event type, unparseable
event times, records of a known type carrying attributes the registry does not
document, and documented int/bigint/boolean attributes with values that cannot be
cast to their type. It never alters the clean records, so the registry coverage
of the clean stream survives.

File-level dirt (:class:`FileDirt`) changes how files are written: a UTF-8 BOM,
CRLF line ends, blank lines, malformed lines, and plain-text files whose last
line is cut off without a newline (a partial copy of a record of that file, so
no clean record is lost).

Both draw from their own random stream, so the clean records of a dirty run
are the clean records of the same run without ``dirty``.
"""

from __future__ import annotations

import random

from .records import attribute_list, render, resolve, shape_record, subject_kind
from .values import HOUR_US, Ctx, time_variant

RECORD_KINDS = (
    "duplicate_record",
    "duplicate_other_shape",
    "late_record",
    "unknown_event_type",
    "number_as_string",
    "missing_event_type",
    "bad_event_time",
    "unknown_attribute",
    "bad_value",
)
FILE_KINDS = ("malformed_line", "truncated_file", "blank_line", "bom", "crlf")
DIRTY_KINDS = (
    "malformed_line",
    "truncated_file",
    "duplicate_record",
    "duplicate_other_shape",
    "late_record",
    "unknown_event_type",
    "number_as_string",
    "blank_line",
    "bom",
    "crlf",
    "missing_event_type",
    "bad_event_time",
    "unknown_attribute",
    "bad_value",
)
MIN_EACH = 2

UNKNOWN_TYPES = ("hist_quantum_teleport", "hist_access_hologram", "hist_summon_dragon")
BAD_TIMES = ("not-a-time", "2024-13-45T99:00:00Z", "", "06/16/2024 18:03:47")
# Attributes no event type of the registry documents (one a nested JSON object).
EXTRA_ATTRIBUTES = (
    ("quantumFlux", 3),
    ("newFieldFrom2027", "x"),
    ("vendorExtension", {"a": 1}),
)
# Values that cannot be cast to the documented type (not digit strings: that is number_as_string).
BAD_INT_VALUES = ("twelve", 1.5, "n/a")
BAD_BOOLEAN_VALUES = ("maybe", "n/a")
_MALFORMED = (
    '{"eventType": "hist_login", "eventTime": ',
    "upstream connect error or disconnect/reset before headers. reset reason: connection termination",
    '{"eventType":"hist_access_view","actorUserId":12,"siteLuid":"',
    "<html><body><h1>503 Service Unavailable</h1></body></html>",
    "null,",
)
_FRESH_TYPES = (
    ("site", "hist_access_view"),
    ("site", "background_job"),
    ("site", "hist_login"),
    ("site", "hist_access_datasource"),
    ("tenant", "user_login_create_session"),
)


def per_kind_target(events: int) -> int:
    """How many of each dirty kind a run of ``events`` records gets."""
    return max(MIN_EACH + 1, events // 25_000)


class FileDirt:
    def __init__(self, seed: int, stats, target: int, est_files: int):
        self.rng = random.Random(f"file-dirt-{seed}")
        self.stats = stats
        self.p = min(0.3, target / max(1, est_files))
        self.hits = {k: 0 for k in FILE_KINDS}  # files touched per kind

    def apply(self, lines: list[str], gz: bool, remaining: int | None):
        """-> (lines, newline, bom, tail, gz). ``remaining``: files left, known at the end only."""
        rng, hits, counts = self.rng, self.hits, self.stats.dirty
        chosen = []
        for k in FILE_KINDS:
            need = MIN_EACH - hits[k]
            forced = remaining is not None and need > 0 and need >= remaining
            if forced or rng.random() < self.p:
                if k == "truncated_file" and gz and not forced:
                    continue
                chosen.append(k)
        if not chosen:
            return lines, "\n", False, None, gz
        lines = list(lines)
        newline, bom, tail = "\n", False, None
        for k in chosen:
            hits[k] += 1
            if k == "malformed_line":
                m = rng.choice(_MALFORMED) if rng.random() < 0.7 else lines[0][: max(5, len(lines[0]) // 3)]
                lines.insert(rng.randrange(len(lines) + 1), m)
                counts[k] += 1
            elif k == "blank_line":
                for _ in range(rng.randint(1, 2)):
                    lines.insert(rng.randrange(len(lines) + 1), "")
                    counts[k] += 1
            elif k == "truncated_file":
                src = lines[-1] or lines[0]
                tail = src[: rng.randint(8, max(9, len(src) - 3))]
                gz = False
                counts[k] += 1
            elif k == "bom":
                bom = True
                counts[k] += 1
            elif k == "crlf":
                newline = "\r\n"
                counts[k] += 1
        return lines, newline, bom, tail, gz

    def finish(self) -> None:
        pass


class RecordDirt:
    """Plans ``target`` records of each record-level kind over the hours of the run."""

    def __init__(self, gen, seed: int, target: int, hours: int):
        self.g = gen
        self.rng = random.Random(f"record-dirt-{seed}")
        self.plan: dict[int, list[str]] = {}
        for kind in RECORD_KINDS:
            for _ in range(target):
                self.plan.setdefault(self.rng.randrange(hours), []).append(kind)
        # two unknown types in the last hour, on different sites: the final flush always has files
        self.plan.setdefault(hours - 1, []).extend(["unknown_event_type", "unknown_event_type"])
        self._unknown_site = 0
        self._extra = 0

    def on_hour(self, hi: int, hour_us: int) -> None:
        for kind in self.plan.get(hi, ()):
            getattr(self, kind)(hour_us)

    # -------------------------------------------------------------- helpers
    def _fresh(self, hour_us: int, site_only: bool = False):
        """A clean-looking record from the dirt stream.

        -> (rec, family, et, us, shape, edition, partition)
        """
        g, rng = self.g, self.rng
        family, et = rng.choice(_FRESH_TYPES[:4] if site_only else _FRESH_TYPES)
        spec = g.specs[(family, et)]
        site = rng.choice(g.world.sites)
        us = min(hour_us + rng.randrange(HOUR_US), g.end_us - 1)
        c = Ctx(g.world, site, None, rng, us, family, et)
        c.variant = time_variant(rng)
        resolve(c, subject_kind(family, et))
        if et == "background_job":
            c.job = {
                "id": 90_000_000 + rng.randrange(9_000_000),
                "state": "Success",
                "duration": rng.randint(1000, 900_000),
                "initiated_us": us - rng.randint(1, 900) * 1_000_000,
            }
        edition = "legacy" if family == "site" and "legacy" in spec.editions and rng.random() < 0.2 else "current"
        shape = "envelope" if rng.random() < 0.3 else "flat"
        rec = render(spec, c, edition, shape)
        partition = site.luid if family == "site" else g.world.tenant.id
        return rec, family, et, us, shape, edition, partition

    def _count(self, kind: str) -> None:
        self.g.stats.dirty[kind] += 1

    def _later_hour(self, abs_hour: int) -> int:
        return max(abs_hour + self.rng.randint(1, 6), self.g.open_hour)

    # -------------------------------------------------------------- kinds
    def duplicate_record(self, hour_us: int) -> None:
        g, rng = self.g, self.rng
        if not g.ring:
            return self._late_fallback("duplicate_record", hour_us)
        item = rng.choice(g.ring)
        rec, family, et, us, shape, edition, partition, abs_hour = item
        target = abs_hour if rng.random() < 0.5 and abs_hour >= g.open_hour else self._later_hour(abs_hour)
        g.put(rec, family, partition, et, us, shape, edition, abs_hour=target, part=1, ring=False)
        self._count("duplicate_record")

    def duplicate_other_shape(self, hour_us: int) -> None:
        g, rng = self.g, self.rng
        if not g.ring:
            return self._late_fallback("duplicate_other_shape", hour_us)
        rec, family, et, us, shape, edition, partition, abs_hour = rng.choice(g.ring)
        if shape == "flat":
            attrs = {k: v for k, v in rec.items() if k != "eventType"}
            new = shape_record(et, attrs, "envelope", us, rng)
        else:
            new = shape_record(et, rec["event"], "flat", us, rng)
        other = "envelope" if shape == "flat" else "flat"
        target = abs_hour if rng.random() < 0.5 and abs_hour >= g.open_hour else self._later_hour(abs_hour)
        g.put(new, family, partition, et, us, other, edition, abs_hour=target, part=1, ring=False)
        self._count("duplicate_other_shape")

    def _late_fallback(self, kind: str, hour_us: int) -> None:
        # nothing written yet to copy: write a fresh record twice (the copy is the dirt)
        rec, family, et, us, shape, edition, partition = self._fresh(hour_us)
        g = self.g
        g.put(rec, family, partition, et, us, shape, edition, ring=False)
        if kind == "duplicate_other_shape":
            attrs = rec["event"] if shape == "envelope" else {k: v for k, v in rec.items() if k != "eventType"}
            other = "flat" if shape == "envelope" else "envelope"
            rec, shape = shape_record(et, attrs, other, us, self.rng), other
        g.put(
            rec,
            family,
            partition,
            et,
            us,
            shape,
            edition,
            abs_hour=self._later_hour(us // HOUR_US),
            part=1,
            ring=False,
        )
        self._count(kind)

    def late_record(self, hour_us: int) -> None:
        rec, family, et, us, shape, edition, partition = self._fresh(hour_us)
        folder = us // HOUR_US + self.rng.randint(1, 48)
        self.g.put(rec, family, partition, et, us, shape, edition, abs_hour=folder, part=1, ring=False)
        self._count("late_record")

    def unknown_event_type(self, hour_us: int) -> None:
        g, rng = self.g, self.rng
        site = g.world.sites[self._unknown_site % len(g.world.sites)]
        self._unknown_site += 1
        et = rng.choice(UNKNOWN_TYPES)
        us = min(hour_us + rng.randrange(HOUR_US), g.end_us - 1)
        actor = rng.choices(site.active_users, cum_weights=site.active_weights)[0]
        attrs = {
            "actorUserId": actor.id,
            "actorUserLuid": actor.luid,
            "eventTime": g.iso(us, 0),
            "initiatingUserId": actor.id,
            "initiatingUserLuid": actor.luid,
            "licensingRoleName": actor.licensing,
            "siteLuid": site.luid,
            "siteRoleId": actor.site_role_id,
            "systemAdminLevel": actor.system_admin_level,
            "siteName": site.name,
            "teleportDistanceKm": rng.randint(1, 40_000),
            "isError": False,
        }
        shape = "envelope" if rng.random() < 0.3 else "flat"
        rec = shape_record(et, attrs, shape, us, rng)
        g.put(rec, "site", site.luid, et, us, shape, "current", ring=False)
        self._count("unknown_event_type")

    def number_as_string(self, hour_us: int) -> None:
        rec, family, et, us, shape, edition, partition = self._fresh(hour_us, site_only=True)
        attrs = rec["event"] if shape == "envelope" else rec
        ints = [
            n
            for n, t in attribute_list(self.g.specs[(family, et)], edition)
            if t in ("int", "bigint") and isinstance(attrs.get(n), int)
        ]
        for n in self.rng.sample(ints, min(len(ints), self.rng.randint(1, 2))):
            attrs[n] = str(attrs[n])
        self.g.put(rec, family, partition, et, us, shape, edition, ring=False)
        self._count("number_as_string")

    def missing_event_type(self, hour_us: int) -> None:
        rec, family, et, us, shape, edition, partition = self._fresh(hour_us)
        if shape == "envelope":  # an envelope without a type is how Tableau's emitter writes: the dirt is flat
            rec, shape = dict(rec["event"]), "flat"
        rec.pop("eventType", None)
        self.g.put(rec, family, partition, et, us, shape, edition, ring=False)
        self._count("missing_event_type")

    def bad_event_time(self, hour_us: int) -> None:
        rec, family, et, us, shape, edition, partition = self._fresh(hour_us)
        attrs = rec["event"] if shape == "envelope" else rec
        attrs["eventTime"] = self.rng.choice(BAD_TIMES[:2]) if self.rng.random() < 0.8 else self.rng.choice(BAD_TIMES)
        self.g.put(rec, family, partition, et, us, shape, edition, ring=False)
        self._count("bad_event_time")

    def unknown_attribute(self, hour_us: int) -> None:
        rec, family, et, us, shape, edition, partition = self._fresh(hour_us)
        attrs = rec["event"] if shape == "envelope" else rec
        # the n-th such record always carries the (n mod 3)-th extra attribute: all three appear
        first = EXTRA_ATTRIBUTES[self._extra % len(EXTRA_ATTRIBUTES)]
        self._extra += 1
        extra = [first]
        if self.rng.random() < 0.5:
            extra.append(self.rng.choice([x for x in EXTRA_ATTRIBUTES if x is not first]))
        for name, value in extra:
            attrs[name] = value if not isinstance(value, dict) else dict(value)
        self.g.put(rec, family, partition, et, us, shape, edition, ring=False)
        self._count("unknown_attribute")

    def bad_value(self, hour_us: int) -> None:
        rec, family, et, us, shape, edition, partition = self._fresh(hour_us, site_only=True)
        attrs = rec["event"] if shape == "envelope" else rec
        typed = [
            (n, t)
            for n, t in attribute_list(self.g.specs[(family, et)], edition)
            if t in ("int", "bigint", "boolean") and attrs.get(n) is not None
        ]
        name, t = self.rng.choice(typed)
        attrs[name] = self.rng.choice(BAD_BOOLEAN_VALUES if t == "boolean" else BAD_INT_VALUES)
        self.g.put(rec, family, partition, et, us, shape, edition, ring=False)
        self._count("bad_value")
