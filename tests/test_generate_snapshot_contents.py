"""What the Activity Log generator's entity snapshots hold: the contract's columns and the world
before any story, each change the log states and no other, offboarded users gone; a dirty run adds
one poison file and one change the log does not state."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from auditlake_devtools.sample.activity_log import ENTITY_TYPES, build_world, generate_activity_log
from auditlake_devtools.sample.activity_log.values import SITE_ROLE_NAMES
from tests.generated_log import (
    NEAR,
    SEED,
    SNAP_EVENTS,
    SNAPSHOT_COLUMNS,
    START,
    Run,
    Snapshots,
    attributes,
    deleted_users,
    lower_luids,
    parse_time,
    site_records,
    unlogged_changes,
)

ADMIN_ROLES = {"SiteAdministratorExplorer", "SiteAdministratorCreator"}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _snapshot_run(root: Path, **kw) -> tuple[Run, Snapshots]:
    s = generate_activity_log(
        root, SNAP_EVENTS, seed=SEED, start=START, days=1, snapshots=True, security_stories=True, **kw
    )  # the security stories: a logged role change
    return Run(root, s), Snapshots(root)


@pytest.fixture(scope="module")
def snap(tmp_path_factory) -> tuple[Run, Snapshots]:
    return _snapshot_run(tmp_path_factory.mktemp("snap"))


@pytest.fixture(scope="module")
def snap_dirty(tmp_path_factory) -> tuple[Run, Snapshots]:
    return _snapshot_run(tmp_path_factory.mktemp("snap_dirty"), dirty=True)


def test_snapshots_hold_the_contract_columns_and_the_world(snap):
    run, snaps = snap
    half = START + timedelta(hours=12)
    assert snaps.hours == [START + timedelta(hours=h) for h in range(25)] and not snaps.others
    for (site, hour, entity), table in snaps.tables.items():
        locale = [("locale", "string")] if entity == "users" and hour >= half else []  # a schema change
        assert [(f.name, str(f.type)) for f in table.schema] == SNAPSHOT_COLUMNS[entity] + locale, (entity, hour)
        rows = snaps.rows(site, hour, entity)
        keys = [(r["group_luid"], r["user_luid"]) if entity == "group_members" else r["luid"] for r in rows]
        assert keys == sorted(set(keys)) and keys, (entity, hour)  # a stable order, one row per entity
    s = run.summary["snapshots"]
    assert (s["files"], s["hours"]) == (len(snaps.tables), 25) == (3 * 5 * 25, 25)
    assert s["by_entity"] == {e: sum(t.num_rows for k, t in snaps.tables.items() if k[2] == e) for e in ENTITY_TYPES}
    assert s["rows"] == sum(s["by_entity"].values())
    assert run.summary["silent_changes"] == [] and run.summary["dirty"]["poison_snapshot"] == 0
    # the first snapshot is the world before any story
    at = lambda us: _EPOCH + timedelta(microseconds=us)  # noqa: E731
    for site in build_world(SEED, START).sites:
        users = snaps.by_luid(site.luid, START, "users")
        assert len(users) == len(site.users)
        for u in site.users:
            row = users[u.luid]
            assert row == {
                "luid": u.luid,
                "id": u.id,
                "name": u.name,
                "display_name": u.display,
                "email": u.email,
                "site_role": SITE_ROLE_NAMES[u.site_role_id],
                "is_system_admin": u.system_admin_level > 0,
                "created_at": at(u.created_us),
            }
        locales = {r["luid"]: r["locale"] for r in snaps.rows(site.luid, half, "users")}
        assert locales == {u.luid: u.locale for u in site.users if u.luid in locales}
        groups = snaps.by_luid(site.luid, START, "groups")
        assert {(g.luid, g.id, g.name, g.domain) for g in site.groups} == {
            (r["luid"], r["id"], r["name"], r["domain_name"]) for r in groups.values()
        }
        assert snaps.members(site.luid, START) == {(g.luid, u.luid) for g in site.groups for u in g.members}
        for entity, kind in (("workbooks", "workbook"), ("datasources", "datasource")):
            rows = snaps.by_luid(site.luid, START, entity)
            assert rows == {
                c.luid: {
                    "luid": c.luid,
                    "id": c.id,
                    "name": c.name,
                    "project_luid": c.project.luid,
                    "owner_luid": c.owner.luid,
                    "size": c.size,
                    "created_at": at(c.created_us),
                    "updated_at": at(c.updated_us),
                }
                for c in site.content[kind]
            }


def test_snapshots_show_what_the_log_says_changed(snap):
    """Each role change, group membership and owner change in the log is in the first snapshot
    strictly after its event time (not the one at or after: a story starting on the hour changes
    the world after that hour's snapshot). Records about the same user, pair or item within NEAR
    of another are left out (the stories of an hour run in plan order, not time order)."""
    run, snaps = snap
    leavers = deleted_users(run)

    def crowded(times: list, t: datetime) -> bool:
        return sum(abs(u - t) <= NEAR for u in times) > 1

    def leaves(site: str, user: str, by: datetime) -> bool:
        return (site, user) in leavers and leavers[(site, user)] <= by + NEAR

    checked = Counter()
    roles = list(site_records(run, "hist_update_user_site_role"))
    times = defaultdict(list)
    for s, a, t in roles:
        times[(s, a["userLuid"])].append(t)
    for s, a, t in roles:
        at = snaps.after(t)
        if at is None or crowded(times[(s, a["userLuid"])], t) or leaves(s, a["userLuid"], at):
            continue
        row = snaps.by_luid(s, at, "users")[a["userLuid"]]
        assert (row["site_role"] in ADMIN_ROLES) == (a["siteAdminLevel"] == 1), (a, row)  # what the record states
        checked["role"] += 1
    members = list(site_records(run, "add_delete_user_to_group"))
    times = defaultdict(list)
    for s, a, t in members:
        times[(s, a["groupLuid"], a["userLuid"])].append(t)
    for s, a, t in members:
        at = snaps.after(t)
        if at is None or crowded(times[(s, a["groupLuid"], a["userLuid"])], t) or leaves(s, a["userLuid"], at):
            continue
        assert ((a["groupLuid"], a["userLuid"]) in snaps.members(s, at)) == (a["groupOperation"] == "add"), a
        checked[a["groupOperation"]] += 1
    owners = [
        x for x in site_records(run, "content_owner_change") if x[1]["contentType"] in ("workbook", "datasource")
    ]  # the kinds with a snapshot
    times = defaultdict(list)
    for s, a, t in owners:
        times[(s, a["contentLuid"])].append(t)
    for s, a, t in owners:
        at = snaps.after(t)
        if at is None or crowded(times[(s, a["contentLuid"])], t):
            continue
        row = snaps.by_luid(s, at, a["contentType"] + "s")[a["contentLuid"]]
        assert row["owner_luid"] == a["newOwnerLuid"], a
        checked["owner"] += 1
    assert checked["role"] >= 2 and checked["add"] + checked["delete"] >= 3 and checked["owner"] >= 3, checked
    # a logged change of role really happened (the privilege escalation): a role that differs between snapshots
    assert any(
        snaps.by_luid(s, h0, "users")[u]["site_role"] != snaps.by_luid(s, h1, "users")[u]["site_role"]
        for s in snaps.sites
        for h0, h1 in pairwise(snaps.hours)
        for u in snaps.by_luid(s, h0, "users").keys() & snaps.by_luid(s, h1, "users").keys()
    )


def test_every_change_between_snapshots_is_in_the_log(snap):
    """The other way round: a clean run's snapshots change only where a record says so."""
    assert unlogged_changes(*snap) == []


def test_offboarded_users_vanish_from_later_snapshots(snap):
    run, snaps = snap
    leavers = deleted_users(run)
    assert len(leavers) >= 2  # the offboarding story, and the leaver whose token lives on (security stories)
    for (site, user), t in leavers.items():
        # the story started at most 100 minutes before the record: two hours back, the user was there
        before = t.replace(minute=0, second=0, microsecond=0) - timedelta(hours=2)
        if before >= START:
            assert user in snaps.by_luid(site, before, "users")
        later = [h for h in snaps.hours if h > t]
        assert later
        for h in later:
            assert user not in snaps.by_luid(site, h, "users")
            assert all(u != user for _, u in snaps.members(site, h))


def test_dirty_snapshots_add_one_poison_file_and_one_silent_change(snap, snap_dirty):
    (run, clean), (drun, dirty) = snap, snap_dirty
    # the poison: a part-00001.parquet cut short beside a good part-00000
    assert drun.summary["dirty"]["poison_snapshot"] == 1
    [poison] = dirty.others
    path = drun.root / poison
    assert path.name == "part-00001.parquet"
    with pytest.raises(pa.ArrowInvalid):
        pq.read_table(path)
    assert path.with_name("part-00000.parquet").read_bytes().startswith(path.read_bytes())
    assert drun.summary["snapshots"] == run.summary["snapshots"]
    # the silent change: what the snapshots show and the log does not
    [change] = drun.summary["silent_changes"]
    site, user, hour = change["site_luid"], change["user_luid"], parse_time(change["hour"])
    assert hour >= START + timedelta(hours=12) and hour in dirty.hours and change["old_role"] != change["new_role"]
    assert unlogged_changes(drun, dirty) == [
        (site, hour, "users", user, "site_role", change["old_role"], change["new_role"])
    ]
    assert dirty.by_luid(site, hour, "users")[user]["site_role"] == change["new_role"]
    # the same run without dirt has the same snapshots but for that user's role, from that hour on
    assert clean.tables.keys() == dirty.tables.keys()
    for key, table in clean.tables.items():
        if not table.equals(dirty.tables[key]):
            assert key[0] == site and key[2] == "users" and key[1] >= hour, key
            diff = [(x, y) for x, y in zip(clean.rows(*key), dirty.rows(*key), strict=True) if x != y]
            assert [(x["luid"], x["site_role"], y["site_role"]) for x, y in diff] == [
                (user, change["old_role"], change["new_role"])
            ]
    # and the log goes on stating the old role for the user's own actions (the same log: see above)
    code = {name: c for c, name in SITE_ROLE_NAMES.items()}[change["old_role"]]
    stated = [
        a["siteRoleId"]
        for rel, r, _ in run.records
        for a in [lower_luids(attributes(r))]
        if rel.startswith("site/") and a.get("actorUserLuid") == user and parse_time(a["eventTime"]) >= hour
    ]
    assert all(c == code for c in stated)
