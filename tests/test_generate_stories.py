"""The Activity Log generator's world and stories: entities coherent across records, sign-in
sessions, background jobs through their states, the administrators' and the tenant's stories, the
deprecated permission events before their cutover."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import UTC, datetime

from auditlake_devtools.sample.activity_log import build_world, generate_activity_log
from tests.generated_log import SEED, START, Run, attributes, lower_luids, parse_time


def test_entities_are_coherent(clean_log):
    world = build_world(SEED, START)
    users = {s.luid: {u.luid: u for u in s.users} for s in world.sites}
    views = {s.luid: {v.luid: v for v in s.content["view"]} for s in world.sites}
    n = 0
    for _, r in clean_log.of_type("hist_access_view"):
        a = lower_luids(attributes(r))
        site = a["siteLuid"]
        v = views[site][a["viewLuid"]]
        assert v.parent.luid == a["workbookLuid"] and v.parent.name == a["workbookName"]
        if "actorUserLuid" in a:
            u = users[site][a["actorUserLuid"]]
            assert (u.id, u.site_role_id, u.licensing) == (
                a["actorUserId"],
                a["siteRoleId"],
                a["licensingRoleName"],
            )
            assert a["systemAdminLevel"] in (0, 10) and a["actorExternalId"] == u.email
            n += 1
    assert n > 100
    roles = {attributes(r)["siteRoleId"] for _, r, _ in clean_log.records if "siteRoleId" in attributes(r)}
    assert roles <= {0, 1, 2, 3, 7, 8, 9, 10, 11} and len(roles) >= 6
    assert 10 in {
        attributes(r)["systemAdminLevel"] for _, r, _ in clean_log.records if "systemAdminLevel" in attributes(r)
    }


def test_sign_in_sessions(clean_log):
    """A user's hist_login is followed by their view accesses, then their hist_logout."""
    events = defaultdict(list)  # (site, user) -> [(time, type)]
    for et in ("hist_login", "hist_access_view", "hist_logout"):
        for _, r in clean_log.of_type(et):
            a = attributes(r)
            events[(a["siteLuid"], a["actorUserId"])].append((parse_time(a["eventTime"]), et))
    logins = complete = 0
    for seq in events.values():
        types = [et for _, et in sorted(seq)]
        for i, et in enumerate(types):
            if et != "hist_login":
                continue
            logins += 1
            j = i + 1
            while j < len(types) and types[j] == "hist_access_view":
                j += 1
            if j > i + 1 and j < len(types) and types[j] == "hist_logout":
                complete += 1
    # a sparse run: sessions of one user rarely overlap, so nearly every sign-in is a clean session
    assert logins >= 50 and complete / logins > 0.8


def test_background_jobs_move_through_states(clean_log):
    jobs = defaultdict(list)
    for _, r in clean_log.of_type("background_job"):
        a = attributes(r)
        jobs[a["jobLuid"]].append((parse_time(a["eventTime"]), a["eventState"], a["duration"], a["jobId"]))
    full = 0
    final_states = Counter()
    for seq in jobs.values():
        seq.sort()
        states = [s for _, s, _, _ in seq]
        if states[:2] == ["Pending", "InProgress"] and len(states) == 3:
            full += 1
            final_states[states[2]] += 1
            durations = [d for _, _, d, _ in seq]
            assert durations == sorted(durations) and durations[0] == 0 and durations[2] > 0
            assert len({j for *_, j in seq}) == 1
    assert full >= 20 and final_states["Success"] > 0 and final_states["Failed"] > 0
    failures = [
        a
        for _, r in clean_log.of_type("hist_refresh_datasource_extract")
        + clean_log.of_type("hist_refresh_workbook_extracts")
        for a in [attributes(r)]
        if a.get("isFailure") is True
    ]
    assert failures and all(a["details"] for a in failures)


def test_admin_stories(clean_log):
    assert len(clean_log.of_type("set_permissions")) >= 2
    assert clean_log.of_type("create_permissions") and clean_log.of_type("update_permissions")
    # ownership: content_owner_change and the hist_ event agree on the new owner
    changes = {
        (attributes(r)["contentLuid"], attributes(r)["newOwnerLuid"])
        for _, r in clean_log.of_type("content_owner_change")
    }
    hist = set()
    for kind in ("workbook", "datasource", "flow", "project"):
        for _, r in clean_log.of_type(f"hist_change_{kind}_ownership"):
            a = attributes(r)
            hist.add((a.get(f"{kind}Luid") or a.get("projectLuid"), a["newOwnerLuid"]))
    assert changes & hist
    groups = {
        (attributes(r)["groupLuid"], attributes(r)["userLuid"])
        for _, r in clean_log.of_type("add_delete_user_to_group")
    }
    member = {
        (attributes(r)["groupLuid"], attributes(r)["userLuid"])
        for et in ("hist_add_user_to_group", "hist_delete_user_from_group")
        for _, r in clean_log.of_type(et)
    }
    assert groups & member


def test_tenant_stories(clean_log):
    failures = Counter()
    for _, r in clean_log.of_type("user_login_create_session"):
        a = attributes(r)
        if a["eventOutcome"] == "Failure":
            failures[(a["initiatingUserIpAddress"], a["initiatingUserEmail"])] += 1
    assert failures and max(failures.values()) >= 8
    created = {
        attributes(r)["tokenId"]: parse_time(attributes(r)["eventTime"])
        for _, r in clean_log.of_type("create_personal_access_token")
    }
    revoked = {
        attributes(r)["tokenId"]: parse_time(attributes(r)["eventTime"])
        for _, r in clean_log.of_type("revoke_personal_access_token")
    }
    used = defaultdict(list)
    for _, r in clean_log.of_type("personal_access_token_login"):
        used[attributes(r)["tokenId"]].append(parse_time(attributes(r)["eventTime"]))
    lifecycle = [
        t for t in created if t in revoked and used.get(t) and created[t] < min(used[t]) and max(used[t]) < revoked[t]
    ]
    assert lifecycle
    assert clean_log.of_type("create_or_update_saml_config")


def test_deprecated_permission_events_precede_the_cutover_when_the_window_allows(tmp_path):
    start = datetime(2024, 9, 27, tzinfo=UTC)
    generate_activity_log(tmp_path, 2000, seed=5, start=start, days=7)
    run = Run(tmp_path, {})
    cutover = datetime(2024, 10, 1, tzinfo=UTC)
    old = run.of_type("create_permissions") + run.of_type("update_permissions")
    assert len(old) >= 3
    assert all(parse_time(attributes(r)["eventTime"]) < cutover for _, r in old)
    assert any(parse_time(attributes(r)["eventTime"]) >= cutover for _, r in run.of_type("set_permissions"))
