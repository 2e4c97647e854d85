"""``auditlake pull`` against a Platform Data API on loopback (auditlake_devtools/cloud_manager_server.py):
what reaches the server (sign-in with the token, one listing per type and window, pages followed, the
overlap on the next pull, waits on 429 and 5xx), what lands (the date-first paths, the bytes, whole
files only), each refusal as one line, the watermark moving only after the files are written, and
the delivery gaps the feed's report prints. Plain Python but for one test, where bronze lands what a
pull of the generator's own tree brought."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode

import pytest

from auditlake_devtools.cloud_manager_server import FEATURE_DISABLED, CloudManagerServer
from auditlake_devtools.sample.activity_log import generate_activity_log
from auditlake_devtools.sample.activity_log.writer import hour_folder, layout_dir
from pipelines import cli
from pipelines.activity_log import feed
from pipelines.config.load import load_config
from pipelines.errors import ConfigError, ExternalError, InputError
from pipelines.pull import landing
from pipelines.pull.api import Answer, CloudManager
from pipelines.pull.gaps import gap_lines
from pipelines.pull.run import jobs, pull, pull_before_refresh
from pipelines.pull.state import PULL_STATE_DIR, STATE_FILE
from pipelines.pull.windows import iso
from tests.lake import variant_environ

# the one Spark test (bronze and silver on a pulled tree) takes about a minute
pytestmark = [pytest.mark.slow(minutes=1)]

SITE = "5a1e0000-0000-4000-8000-0000000005a1"
UNKNOWN_SITE = "0dd00000-0000-4000-8000-00000000dead"
TENANT = "7e6a0000-0000-4000-8000-00000000c10d"
TOKEN_NAME, TOKEN = "auditlake-puller", "tcm-pat-secret-for-tests"
NOW = datetime(2026, 6, 2, 6, 30, tzinfo=UTC)
# the registry's: two of a site's event types, one of the tenant's
SITE_TYPES, TENANT_TYPE = ("hist_login", "hist_access_view"), "create_site"


def hour(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def api_path(family: str, at: str, event_type: str, part: int = 0) -> str:
    """A file's date-first path, as the generator's writer names it (pod=…/siteLuid=…/y=…/h=…/eventType=…)."""
    folder = hour_folder(int(hour(at).timestamp()) // 3600)
    return f"{layout_dir('date_first', family, SITE, folder, event_type)}/part-{part:05d}.json"


def put(root: Path, rel: str, lines: list[dict]) -> bytes:
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(data)
    return data


# what the API holds at NOW: the site's sign-ins at 10:00 (two parts) and 11:00 and one the next
# morning, a view at 10:00; the tenant's one file at noon
FILES = {
    api_path("site", "2026-06-01T10:00", "hist_login"): [
        {"eventType": "hist_login", "eventTime": "2026-06-01T09:58:00Z"}
    ],
    api_path("site", "2026-06-01T10:00", "hist_login", 1): [
        {"eventType": "hist_login", "eventTime": "2026-06-01T09:59:00Z"}
    ],
    api_path("site", "2026-06-01T11:00", "hist_login"): [
        {"eventType": "hist_login", "eventTime": "2026-06-01T10:40:00Z"}
    ],
    api_path("site", "2026-06-02T05:00", "hist_login"): [
        {"eventType": "hist_login", "eventTime": "2026-06-02T04:50:00Z"}
    ],
    api_path("site", "2026-06-01T10:00", "hist_access_view"): [
        {"eventType": "hist_access_view", "eventTime": "2026-06-01T09:30:00Z"}
    ],
    api_path("tenant", "2026-06-01T12:00", TENANT_TYPE): [
        {"eventType": TENANT_TYPE, "eventTime": "2026-06-01T11:11:00Z"}
    ],
}


@pytest.fixture(autouse=True)
def token(monkeypatch):
    """The token in the environment, where the pull reads it (a test with another secret sets its own)."""
    monkeypatch.setenv("AUDITLAKE_TCM_TOKEN_NAME", TOKEN_NAME)
    monkeypatch.setenv("AUDITLAKE_TCM_TOKEN", TOKEN)


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "api"
    for rel, lines in FILES.items():
        put(root, rel, lines)
    return root


@pytest.fixture
def server(tree):
    fake = CloudManagerServer.start(root=tree, token_secret=TOKEN, tenant_id=TENANT, sites={SITE})
    yield fake
    fake.stop()


def config(tmp_path: Path, server: CloudManagerServer, secret: str = TOKEN, **pull_keys):
    """The test profile on a throwaway data dir, pull.* pointed at the stand-in (``pull_keys`` over it)."""
    keys = {
        "cloud_manager_url": server.url,
        "site_luids": [SITE],
        "event_types": [*SITE_TYPES, TENANT_TYPE],
        "lookback_days": 1,
        "max_window_hours": 12,
        "overlap_minutes": 120,
        "page_size": 1,
        "backoff_seconds": 0.5,
        "gap_hours": 4,
    } | pull_keys
    environ = variant_environ(tmp_path, "pull") | {
        f"AUDITLAKE__PULL__{k.upper()}": json.dumps(v)
        if isinstance(v, list)
        else str(v).lower()
        if isinstance(v, bool)
        else str(v)
        for k, v in keys.items()
    }
    environ |= {"AUDITLAKE_TCM_TOKEN_NAME": TOKEN_NAME, "AUDITLAKE_TCM_TOKEN": secret}
    return load_config("test", environ=environ), environ


def landed(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def state(cfg) -> dict:
    return json.loads((Path(cfg.checkpoint_dir) / PULL_STATE_DIR / STATE_FILE).read_text(encoding="utf-8"))


def quiet(_line: str) -> None:
    pass


# the windows of a first pull at NOW: a day back, in ranges of 12 hours
FIRST_WINDOWS = [
    (iso(NOW - timedelta(hours=24)), iso(NOW - timedelta(hours=12))),
    (iso(NOW - timedelta(hours=12)), iso(NOW)),
]


def test_a_first_pull_signs_in_lists_each_type_and_window_follows_the_pages_and_lands_the_files(tmp_path, server):
    cfg, _ = config(tmp_path, server)
    dest = tmp_path / "landing"
    report = pull(cfg, dest=dest, now=NOW, log=quiet)

    signin = server.of("signin")
    assert [(r.method, r.path, r.details) for r in signin] == [("POST", "/api/v1/pat/login", {"token": TOKEN})]
    listings = server.of("list")
    assert all(r.with_session and r.status == 200 for r in listings)
    first_pages = [r for r in listings if "pageToken" not in r.query]
    asked = sorted(
        (r.details["site"] or "", r.query.get("eventType"), r.query["startTime"], r.query["endTime"])
        for r in first_pages
    )
    # one listing per type and window: the site's types of the site, the tenant's of the tenant
    assert asked == sorted(
        [(SITE, t, *w) for t in SITE_TYPES for w in FIRST_WINDOWS] + [("", TENANT_TYPE, *w) for w in FIRST_WINDOWS]
    )
    # a page of one file at a time: the site's sign-ins of the first window take three pages
    sign_ins = [
        r for r in listings if r.query.get("eventType") == "hist_login" and r.query["startTime"] == FIRST_WINDOWS[0][0]
    ]
    assert [r.query.get("pageToken") for r in sign_ins] == [None, "p1", "p2"]
    assert [f for r in sign_ins for f in r.details["files"]] == sorted(
        p for p in FILES if "h=1" in p and "hist_login" in p
    )

    # every file at its date-first path with the API's bytes, and nothing else (no temporary file)
    assert landed(dest) == landed(server.root)
    assert report.listed == report.written == len(FILES)
    assert sorted(r.details["path"] for r in server.of("download")) == sorted(FILES)
    assert all(not r.with_session for r in server.of("download"))  # a signed address, not the session
    assert state(cfg)["watermarks"] == {
        **{f"site={SITE}|activitylog|{t}": iso(NOW) for t in SITE_TYPES},
        f"tenant|activitylog|{TENANT_TYPE}": iso(NOW),
    }


def test_the_next_pull_asks_again_from_the_watermark_less_the_overlap_and_fetches_only_new_files(tmp_path, server):
    cfg, _ = config(tmp_path, server)
    dest = tmp_path / "landing"
    pull(cfg, dest=dest, now=NOW, log=quiet)
    kept = {rel: (dest / rel).stat().st_mtime_ns for rel in FILES}
    new = api_path("site", "2026-06-02T07:00", "hist_login")
    data = put(server.root, new, [{"eventType": "hist_login", "eventTime": "2026-06-02T06:59:00Z"}])
    server.received.clear()
    later = NOW + timedelta(hours=2)
    lines = []

    pull(cfg, dest=dest, now=later, log=lines.append)

    listings = server.of("list")
    # from the watermark (NOW) less the two hours' overlap: the morning's 05:00 file is listed again ...
    assert {(r.query["startTime"], r.query["endTime"]) for r in listings} == {
        (iso(NOW - timedelta(hours=2)), iso(later))
    }
    assert len([r for r in listings if r.details["site"] == SITE and "pageToken" not in r.query]) == len(SITE_TYPES)
    again = api_path("site", "2026-06-02T05:00", "hist_login")
    assert {f for r in listings for f in r.details["files"]} == {again, new}
    # ... but not fetched again, nor rewritten: only the new file is asked for and downloaded
    assert [r.details["files"] for r in server.of("presign")] == [[new]]
    assert [r.details["path"] for r in server.of("download")] == [new]
    assert {rel: (dest / rel).stat().st_mtime_ns for rel in FILES} == kept
    assert landed(dest) == landed(server.root)
    assert (
        f"pull: site {SITE} activitylog eventType=hist_login {iso(NOW - timedelta(hours=2))} to {iso(later)}: "
        in "\n".join(lines)
    )
    assert lines[-1] == (
        f"pull: 2 files listed, 1 written ({len(data)} bytes), 1 already in {dest}; "
        "open delivery gaps: 1 (`auditlake refresh` prints each)"  # the tenant's, since noon
    )


def test_a_429_is_retried_after_its_retry_after_and_a_5xx_after_a_growing_wait(tmp_path, server):
    cfg, _ = config(tmp_path, server, event_types=["hist_access_view"], tenant_events=False)
    server.fail_next = [("list", 429, 7), ("list", 500, None), ("download", 503, None)]
    waits = []

    pull(cfg, dest=tmp_path / "landing", now=NOW, sleep=waits.append, log=quiet)

    first = [r for r in server.of("list") if r.query["startTime"] == FIRST_WINDOWS[0][0]]
    assert [r.status for r in first] == [429, 500, 200]
    assert [r.status for r in server.of("download")] == [503, 200]
    # Retry-After's seven seconds, then backoff_seconds doubled for the second retry, then the first wait
    # again, each back-off with at most a tenth more of jitter
    assert waits[0] == 7.0 and 1.0 <= waits[1] <= 1.1 and 0.5 <= waits[2] <= 0.55
    assert landed(tmp_path / "landing") == {p: b for p, b in landed(server.root).items() if "hist_access_view" in p}


def test_an_expired_session_is_signed_in_again_once(tmp_path, server):
    cfg, _ = config(tmp_path, server, event_types=["hist_login"], tenant_events=False)
    original = server._sign_in

    def sign_in_then_expire(r, body):
        answer = original(r, body)
        if len(server.of("signin")) == 1:
            server.expire_sessions()
        return answer

    server._sign_in = sign_in_then_expire
    pull(cfg, dest=tmp_path / "landing", now=NOW, log=quiet)
    assert [r.op for r in server.received[:4]] == ["signin", "list", "signin", "list"]
    assert [r.status for r in server.received[:4]] == [200, 401, 200, 200]


REFUSALS = {
    "bad token": (
        {"secret": "not-the-token"},
        {},
        f"pull: Tableau Cloud Manager refused the personal access token '{TOKEN_NAME}' (HTTP 401): the secret in "
        "AUDITLAKE_TCM_TOKEN is wrong, expired or revoked, or the token is not a Cloud Manager one (Tableau: "
        "INVALID_CREDENTIALS the personal access token is invalid or expired)",
    ),
    "feature disabled": (
        {},
        {"refuse": {"list": FEATURE_DISABLED}},
        "pull: Tableau Cloud Manager refused the Activity Log (HTTP 403): the Platform Data API is not enabled for "
        "this tenant or the token's user is not a Cloud Manager administrator (Tableau: FEATURE_DISABLED Platform "
        "Data API access is not enabled for this tenant)",
    ),
    "unknown site": (
        {"site_luids": [UNKNOWN_SITE]},
        {},
        f"pull: site {UNKNOWN_SITE} is not a site of tenant {TENANT} (HTTP 404): check pull.site_luids (Tableau: "
        f"SITE_NOT_FOUND site {UNKNOWN_SITE} not found in tenant {TENANT})",
    ),
    "no entity snapshots in this edition": (
        {"entity_snapshots": True, "tenant_events": False, "event_types": ["hist_login"]},
        {"snapshots_enabled": False},
        "pull: Tableau Cloud Manager refused the entity snapshots (HTTP 403): they come with the Enterprise and "
        "Tableau+ editions only; set pull.entity_snapshots to false (Tableau: FEATURE_NOT_LICENSED entity "
        "snapshots require Enterprise or Tableau+)",
    ),
    "a token of another tenant": (
        {"tenant_id": "another-tenant"},
        {},
        f"pull: the personal access token '{TOKEN_NAME}' belongs to tenant {TENANT}, not to pull.tenant_id "
        "another-tenant: use a token of that tenant, or set pull.tenant_id to ''",
    ),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_each_refusal_is_one_line_and_no_traceback(case, tmp_path, server, monkeypatch, capsys):
    keys, behaviour, message = REFUSALS[case]
    secret = keys.pop("secret", TOKEN)
    for name, value in behaviour.items():
        setattr(server, name, value)
    _, environ = config(tmp_path, server, secret=secret, **keys)
    for name, value in environ.items():
        if name.startswith(("AUDITLAKE__", "AUDITLAKE_TCM")):
            monkeypatch.setenv(name, value)

    code = cli.main(["--env", "test", "pull", "--dest", str(tmp_path / "landing")])

    assert code == ExternalError.exit_code
    assert capsys.readouterr().err.splitlines() == [f"auditlake: environment error: {message}"]
    assert not (tmp_path / "landing").exists() or not landed(tmp_path / "landing")


def test_no_answer_is_retried_then_said_in_one_line(tmp_path, server):
    cfg, _ = config(tmp_path, server, cloud_manager_url="http://127.0.0.1:9", max_retries=2)  # the discard port
    waits = []
    with pytest.raises(ExternalError) as failed:
        pull(cfg, now=NOW, sleep=waits.append, log=quiet)
    assert str(failed.value).startswith(
        "pull: Tableau Cloud Manager's sign-in got no answer after 2 retries: http://127.0.0.1:9/api/v1/pat/login: "
    )
    assert 0.5 <= waits[0] <= 0.55 and 1.0 <= waits[1] <= 1.1


def test_pull_without_an_address_or_a_token_says_which_key(tmp_path, server):
    cfg, environ = config(tmp_path, server, cloud_manager_url="")
    with pytest.raises(ConfigError, match=r"^config key 'pull.cloud_manager_url' is empty"):
        pull(cfg, now=NOW, log=quiet)
    on_refresh = environ | {"AUDITLAKE__PULL__ON_REFRESH": "true"}
    with pytest.raises(ConfigError, match=r"config key 'pull.cloud_manager_url' is empty: pull.on_refresh is true"):
        load_config("test", environ=on_refresh)
    on_refresh.pop("AUDITLAKE_TCM_TOKEN")
    with pytest.raises(
        ConfigError,
        match=r"config key 'pull.token_secret_env' names environment variable AUDITLAKE_TCM_TOKEN, which is not "
        r"set: pull.on_refresh true",
    ):
        load_config("test", environ=on_refresh)


def test_the_watermark_moves_only_after_the_window_s_files_are_written(tmp_path, server):
    cfg, _ = config(tmp_path, server, event_types=["hist_login"], tenant_events=False, max_retries=1)
    dest = tmp_path / "landing"
    pull(cfg, dest=dest, now=NOW, log=quiet)
    key = f"site={SITE}|activitylog|hist_login"
    new = api_path("site", "2026-06-02T07:00", "hist_login")
    put(server.root, new, [{"eventType": "hist_login", "eventTime": "2026-06-02T06:59:00Z"}])
    server.refuse = {"download": (500, "INTERNAL", "storage unavailable")}

    with pytest.raises(ExternalError, match="download answered HTTP 500"):
        pull(cfg, dest=dest, now=NOW + timedelta(hours=2), sleep=lambda _s: None, log=quiet)
    assert state(cfg)["watermarks"][key] == iso(NOW)
    assert new not in landed(dest) and not [p for p in dest.rglob(".*")]

    server.refuse = {}
    pull(cfg, dest=dest, now=NOW + timedelta(hours=3), log=quiet)
    assert state(cfg)["watermarks"][key] == iso(NOW + timedelta(hours=3))
    assert landed(dest)[new] == (server.root / new).read_bytes()


def test_a_file_is_written_whole_or_not_at_all_and_an_identical_one_is_not_rewritten(tmp_path, monkeypatch):
    target = tmp_path / "landing" / api_path("site", "2026-06-01T10:00", "hist_login")
    assert landing.write_whole(target, b"one\n")
    before = target.stat().st_mtime_ns
    assert not landing.write_whole(target, b"one\n")
    assert target.stat().st_mtime_ns == before

    other = target.with_name("part-00009.json")

    def fail(_fd):
        raise OSError("disk full")

    monkeypatch.setattr("pipelines.pull.landing.os.fsync", fail)
    with pytest.raises(OSError, match="disk full"):
        landing.write_whole(other, b"two\n")
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]  # no half file, no temporary one


def test_a_path_outside_the_date_first_layout_or_the_tree_is_not_written(tmp_path):
    assert landing.where(tmp_path, "../escape/part-00000.json") is None
    assert landing.where(tmp_path, "/etc/part-00000.json") is None
    schema_first = f"pod=p/siteLuid={SITE}/eventType=hist_login/y=2026/m=06/d=01/h=10/part-00000.json"
    assert landing.fits(schema_first, SITE, "activitylog", "hist_login") is None
    assert (
        landing.fits(api_path("site", "2026-06-01T10:00", "hist_login"), SITE, "activitylog", "hist_access_view")
        is None
    )
    assert landing.fits(api_path("site", "2026-06-01T10:00", "hist_login"), SITE, "activitylog", "hist_login")


def test_hours_without_a_file_are_recorded_as_delivery_gaps_and_the_feed_report_prints_them(
    tmp_path, server, monkeypatch
):
    cfg, environ = config(tmp_path, server)
    pull(cfg, dest=tmp_path / "landing", now=NOW, log=quiet)
    # gap_hours 4; the site's files at 10, 11 and 05 the next day, the tenant's at 12, asked from 06:30
    assert state(cfg)["gaps"] == [
        {
            "key": f"site={SITE}|activitylog",
            "first_hour": "2026-06-01T06:00Z",
            "last_hour": "2026-06-01T09:00Z",
            "hours": 4,
        },
        {
            "key": f"site={SITE}|activitylog",
            "first_hour": "2026-06-01T12:00Z",
            "last_hour": "2026-06-02T04:00Z",
            "hours": 17,
        },
        {"key": "tenant|activitylog", "first_hour": "2026-06-01T06:00Z", "last_hour": "2026-06-01T11:00Z", "hours": 6},
    ]
    expected = [
        "pull: the tenant's Activity Log has had no file since 2026-06-01T13:00Z (17 hours; `auditlake pull` listings)",
        f"pull: site {SITE}'s Activity Log had no file from 2026-06-01T06:00Z to 2026-06-01T09:00Z (4 hours; "
        "`auditlake pull` listings)",
        f"pull: site {SITE}'s Activity Log had no file from 2026-06-01T12:00Z to 2026-06-02T04:00Z (17 hours; "
        "`auditlake pull` listings)",
        "pull: the tenant's Activity Log had no file from 2026-06-01T06:00Z to 2026-06-01T11:00Z (6 hours; "
        "`auditlake pull` listings)",
    ]
    assert gap_lines(cfg, now=NOW) == expected
    # the refresh's feed lines carry them after the quiet sites (none here: no gold report to read),
    # within feed.report_days of today
    monkeypatch.setattr(feed, "quiet_sites", lambda _spark, _cfg: [])
    reaching = load_config("test", environ=environ | {"AUDITLAKE__FEED__REPORT_DAYS": "3660"})
    assert feed.quiet_site_lines(None, reaching) == expected

    # a later file closes the tenant's open gap; it is recorded once however often it is listed again
    put(server.root, api_path("tenant", "2026-06-02T07:00", TENANT_TYPE), [{"eventType": TENANT_TYPE}])
    for later in (NOW + timedelta(hours=2), NOW + timedelta(hours=3)):
        pull(cfg, dest=tmp_path / "landing", now=later, log=quiet)
    tenant_gaps = [g for g in state(cfg)["gaps"] if g["key"] == "tenant|activitylog"]
    assert [(g["first_hour"], g["hours"]) for g in tenant_gaps] == [("2026-06-01T06:00Z", 6), ("2026-06-01T13:00Z", 18)]
    assert state(cfg)["open_gaps"] == []


def test_a_pull_that_brings_nothing_leaves_the_refresh_s_nothing_new_check_as_it_was(tmp_path, server):
    from pipelines.refresh import nothing_new

    cfg, _ = config(tmp_path, server)
    pull(cfg, now=NOW, log=quiet)
    landing_then, lake_then = nothing_new.current_inputs(cfg).landing, nothing_new.lake_state(cfg)
    before = state(cfg)["watermarks"]
    pull(cfg, now=NOW + timedelta(minutes=30), log=quiet)
    assert state(cfg)["watermarks"] != before  # the watermarks moved ...
    # ... but neither the landing tree nor the lake did: a refresh with nothing new still stops early
    assert nothing_new.current_inputs(cfg).landing == landing_then
    assert nothing_new.lake_state(cfg) == lake_then


def test_a_failed_pull_before_a_refresh_is_one_line_and_the_refresh_goes_on(tmp_path, server, monkeypatch):
    monkeypatch.setenv("AUDITLAKE_TCM_TOKEN", "wrong")
    cfg, _ = config(tmp_path, server)
    lines = []
    assert pull_before_refresh(cfg, log=lines.append) is None
    assert len(lines) == 1 and lines[0].startswith(
        "refresh: the pull failed, the refresh goes on without it: pull: Tableau Cloud Manager refused"
    )


@pytest.fixture
def generated(tmp_path) -> tuple[Path, str]:
    """A day of the generator's Activity Log in the date-first layout (the pull's source), and one of its sites."""
    root = tmp_path / "generated"
    generate_activity_log(root, 40, seed=5, start=datetime(2026, 6, 1, tzinfo=UTC), days=1, layout="date_first")
    site = sorted(p.name.split("=", 1)[1] for p in root.glob("pod=*/siteLuid=*"))[0]
    return root, site


def pulled_from_generated(tmp_path, generated):
    root, site = generated
    fake = CloudManagerServer.start(root=root, token_secret=TOKEN, tenant_id=TENANT)
    try:
        cfg, _ = config(
            tmp_path, fake, site_luids=[site], event_types=[], lookback_days=3, max_window_hours=168, page_size=100
        )
        pull(cfg, now=datetime(2026, 6, 3, 0, 0, tzinfo=UTC), log=quiet)
        return cfg, fake
    finally:
        fake.stop()


def test_the_generator_s_tree_serves_as_the_pull_s_source(tmp_path, generated):
    cfg, fake = pulled_from_generated(tmp_path, generated)
    root, site = generated
    dest = Path(cfg.landing_dir)
    wanted = {p: b for p, b in landed(root).items() if f"siteLuid={site}/" in p or "siteLuid=" not in p}
    assert landed(dest) == wanted
    # every type at once: one listing per scope and window, its pages followed
    first_pages = [r for r in fake.of("list") if "pageToken" not in r.query]
    assert sorted((r.details["site"] or "", "eventType" in r.query) for r in first_pages) == [
        ("", False),
        (site, False),
    ]
    assert len(fake.of("list")) > len(first_pages)


def test_bronze_lands_every_record_pulled_and_silver_keeps_one_of_each_re_delivered(spark, tmp_path, generated):
    from pipelines.activity_log.bronze.land import land_bronze
    from pipelines.activity_log.silver.promote import promote_family
    from pipelines.lake.table_names import tables
    from pipelines.refresh import new_run_id

    cfg, fake = pulled_from_generated(tmp_path, generated)
    dest = Path(cfg.landing_dir)
    lines = sum(len(f.splitlines()) for f in _decompressed(dest))
    land_bronze(spark, cfg, new_run_id(), log=quiet)
    t = tables(cfg)
    counts = {f: spark.table(t.bronze_raw(f)).count() for f in ("site", "tenant")}
    assert sum(counts.values()) == lines and min(counts.values()) > 0

    # the API re-delivers an earlier file's records in a later hour: the next pull writes that one file,
    # and bronze lands its lines alone (silver's event_id drops the repeats)
    root, site = generated
    earlier = next(p for p in sorted(landed(dest)) if f"siteLuid={site}/" in p and p.endswith(".json"))
    again = root / re.sub(r"y=\d+/m=\d+/d=\d+/h=\d+", "y=2026/m=06/d=03/h=03", earlier).replace("part-", "part-9")
    data = (root / earlier).read_bytes()
    again.parent.mkdir(parents=True, exist_ok=True)
    again.write_bytes(data)
    fake = CloudManagerServer.start(root=root, token_secret=TOKEN, tenant_id=TENANT)
    try:
        cfg2, _ = config(tmp_path, fake, site_luids=[site], event_types=[], lookback_days=3, page_size=100)
        report = pull(cfg2, now=datetime(2026, 6, 3, 5, 0, tzinfo=UTC), log=quiet)
    finally:
        fake.stop()
    assert report.written == 1
    land_bronze(spark, cfg, new_run_id(), log=quiet)
    assert spark.table(t.bronze_raw("site")).count() == counts["site"] + len(data.splitlines())

    # silver (the site family, without the gates: they are not what is tested here) keeps one of each
    promoted = promote_family(spark, cfg, "site", -1, new_run_id(), log=quiet)
    assert promoted.duplicates == len(data.splitlines())
    assert spark.table(t.silver_events("site")).count() == counts["site"] - promoted.quarantined


def _decompressed(root: Path) -> list[bytes]:
    import gzip

    out = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            out.append(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    return out


def test_entity_snapshots_are_pulled_per_site_as_parquet_with_their_own_gaps(tmp_path):
    root = tmp_path / "generated"
    generate_activity_log(
        root,
        40,
        seed=5,
        start=datetime(2026, 6, 1, tzinfo=UTC),
        days=1,
        layout="date_first",
        snapshots=True,
        snapshot_every=6,
    )
    site = sorted(p.name.split("=", 1)[1] for p in root.glob("pod=*/siteLuid=*"))[0]
    fake = CloudManagerServer.start(root=root, token_secret=TOKEN, tenant_id=TENANT)
    try:
        cfg, environ = config(
            tmp_path,
            fake,
            site_luids=[site],
            tenant_events=False,
            event_types=["hist_login"],
            entity_snapshots=True,
            snapshot_lookback_hours=48,
            page_size=100,
        )
        pull(cfg, now=datetime(2026, 6, 2, 1, 0, tzinfo=UTC), log=quiet)
    finally:
        fake.stop()
    snapshots = [r for r in fake.of("list") if r.details["resource"] == "snapshots"]
    assert snapshots and all(r.details["site"] == site and "entityType" not in r.query for r in snapshots)
    pulled = {p: b for p, b in landed(Path(cfg.landing_dir)).items() if "/entityType=" in p}
    assert pulled == {p: b for p, b in landed(root).items() if f"siteLuid={site}/" in p and "/entityType=" in p}
    assert all(b[:4] == b"PAR1" for b in pulled.values())
    # the generator's snapshots come every six hours: each entity type's gaps are its own
    users = [(g["first_hour"], g["hours"]) for g in state(cfg)["gaps"] if g["key"] == f"site={site}|snapshots|users"]
    assert users == [
        ("2026-05-31T01:00Z", 23),
        ("2026-06-01T01:00Z", 5),
        ("2026-06-01T07:00Z", 5),
        ("2026-06-01T13:00Z", 5),
        ("2026-06-01T19:00Z", 5),
    ]
    # a list of entity types asks for each one
    one = load_config("test", environ=environ | {"AUDITLAKE__PULL__ENTITY_TYPES": '["users"]'})
    assert [(j.resource, j.kind) for j in jobs(one)] == [("activitylog", "hist_login"), ("snapshots", "users")]


# --- what a broken answer, a stopped pull or a full disk must not do ---------------------------------


def listing_url(server, start: str, end: str, event_type: str, page_size: int = 1) -> str:
    query = {"startTime": start, "endTime": end, "pageSize": page_size, "eventType": event_type}
    return f"{server.url}/api/v1/tenants/{TENANT}/sites/{SITE}/activitylog?{urlencode(query)}"


NOT_A_LISTING = {
    "a proxy's page": b"<html><body>502 Bad Gateway</body></html>",
    "a truncated body": b'{"files": [{"path": "pod=',
    "a list": b"[]",
    "no files list": b'{"pageToken": null}',
}


@pytest.mark.parametrize("case", NOT_A_LISTING)
def test_a_listing_answered_200_without_a_files_list_fails_and_the_watermark_stays(case, tmp_path, server):
    cfg, _ = config(tmp_path, server, event_types=["hist_login"], tenant_events=False)
    dest = tmp_path / "landing"
    pull(cfg, dest=dest, now=NOW, log=quiet)
    key = f"site={SITE}|activitylog|hist_login"
    server.answer_instead = {"list": NOT_A_LISTING[case]}
    later = NOW + timedelta(hours=2)

    with pytest.raises(ExternalError) as failed:
        pull(cfg, dest=dest, now=later, log=quiet)

    url = listing_url(server, iso(NOW - timedelta(hours=2)), iso(later), "hist_login")
    assert str(failed.value) == (
        f"pull: Tableau Cloud Manager's activitylog listing {url} answered HTTP 200 without a JSON object "
        f"holding a files list: {NOT_A_LISTING[case].decode()!r}"
    )
    assert state(cfg)["watermarks"][key] == iso(NOW)


def test_an_unexpected_body_is_quoted_in_its_first_hundred_characters(tmp_path, server):
    cfg, _ = config(tmp_path, server, event_types=["hist_login"], tenant_events=False)
    server.answer_instead = {"list": b"<html>" + b"x" * 200}
    with pytest.raises(ExternalError, match=r": '<html>x{94}' \.\.\.$"):
        pull(cfg, dest=tmp_path / "landing", now=NOW, log=quiet)


def test_a_page_token_answered_again_stops_the_paging_in_one_line(tmp_path, server):
    cfg, _ = config(tmp_path, server, event_types=["hist_login"], tenant_events=False)
    server.answer_instead = {"list": b'{"files": [], "pageToken": "p0"}'}
    listed = server._list

    def list_a_few_times(r, site, resource):
        if len(server.of("list")) > 5:  # a pull that follows the token for ever fails here, not in a hang
            server.refuse = {"list": (400, "LOOP", "the same page asked for too often")}
        return listed(r, site, resource)

    server._list = list_a_few_times
    with pytest.raises(ExternalError) as failed:
        pull(cfg, dest=tmp_path / "landing", now=NOW, sleep=lambda _s: None, log=quiet)
    url = listing_url(server, *FIRST_WINDOWS[0], "hist_login") + "&pageToken=p0"
    assert str(failed.value) == (
        f"pull: Tableau Cloud Manager's activitylog listing {url} answered pageToken 'p0' a second time: "
        "paging stopped; run the pull again later"
    )
    assert len(server.of("list")) == 2


def test_a_sign_in_without_a_tenant_id_is_one_line(tmp_path, server):
    cfg, _ = config(tmp_path, server)
    server.answer_instead = {"signin": b'{"sessionToken": "s3ss10n"}'}
    with pytest.raises(ExternalError) as failed:
        pull(cfg, now=NOW, log=quiet)
    assert str(failed.value) == (
        'pull: Tableau Cloud Manager\'s sign-in answered no tenantId: \'{"sessionToken": "s3ss10n"}\''
    )
    assert server.of("list") == []


def test_a_retry_after_beyond_the_cap_fails_in_one_line_instead_of_sleeping(tmp_path, server):
    cfg, environ = config(tmp_path, server, event_types=["hist_login"], tenant_events=False)
    server.fail_next = [("list", 429, 86400)]
    waits = []
    with pytest.raises(ExternalError) as failed:
        pull(cfg, now=NOW, sleep=waits.append, log=quiet)
    assert str(failed.value) == (
        f"pull: {server.url}/api/v1/tenants/{TENANT}/sites/{SITE}/activitylog answered HTTP 429 with Retry-After "
        "86400 seconds, more than pull.max_retry_after_seconds (300): run the pull again later"
    )
    assert waits == []
    with pytest.raises(ConfigError, match=r"'pull\.max_retry_after_seconds' .*must be between 1 and 3600, got 0"):
        load_config("test", environ=environ | {"AUDITLAKE__PULL__MAX_RETRY_AFTER_SECONDS": "0"})


def test_the_back_off_doubles_with_up_to_a_tenth_of_jitter():
    client = CloudManager("http://127.0.0.1:9", "n", "s", "V", backoff_seconds=1.0, jitter=lambda: 1.0)
    assert [client._wait(Answer(503, b""), attempt, "u") for attempt in range(3)] == pytest.approx([1.1, 2.2, 4.4])
    client.jitter = lambda: 0.0
    assert [client._wait(Answer(503, b""), attempt, "u") for attempt in range(3)] == [1.0, 2.0, 4.0]


def test_an_overlap_under_an_hour_is_refused_at_config_load(tmp_path, server):
    _, environ = config(tmp_path, server)
    with pytest.raises(ConfigError, match=r"'pull\.overlap_minutes' .*must be at least 60, got 30"):
        load_config("test", environ=environ | {"AUDITLAKE__PULL__OVERLAP_MINUTES": "30"})


class Killed(BaseException):
    """A kill between two windows (nothing catches it, as nothing catches SIGKILL)."""


def test_a_pull_stopped_after_a_window_keeps_that_window_s_delivery_gaps_with_its_watermark(tmp_path, server):
    cfg, _ = config(tmp_path, server, event_types=list(SITE_TYPES), tenant_events=False)
    key = f"site={SITE}|activitylog"

    def killed_after_the_first_window(line: str) -> None:
        if f" {FIRST_WINDOWS[0][0]} to {FIRST_WINDOWS[0][1]}: " in line:
            raise Killed

    with pytest.raises(Killed):
        pull(cfg, dest=tmp_path / "landing", now=NOW, log=killed_after_the_first_window)
    # the first window's watermarks and the hours its listings showed, written together
    kept = state(cfg)
    assert kept["last_file_hour"] == {key: "2026-06-01T11:00Z"}
    first_gap = {"key": key, "first_hour": "2026-06-01T06:00Z", "last_hour": "2026-06-01T09:00Z", "hours": 4}
    assert kept["gaps"] == [first_gap]
    # both types' listings of the window were in: the key's hours came whole
    assert kept["watermarks"] == {f"site={SITE}|activitylog|{t}": FIRST_WINDOWS[0][1] for t in SITE_TYPES}

    pull(cfg, dest=tmp_path / "landing", now=NOW, log=quiet)
    # the same gaps as a pull never stopped (test_hours_without_a_file_are_recorded_as_delivery_gaps...)
    assert state(cfg)["gaps"] == [
        first_gap,
        {"key": key, "first_hour": "2026-06-01T12:00Z", "last_hour": "2026-06-02T04:00Z", "hours": 17},
    ]
    assert state(cfg)["last_file_hour"] == {key: "2026-06-02T05:00Z"}


def test_signed_addresses_are_asked_for_a_batch_at_a_time_right_before_its_downloads(tmp_path, server, monkeypatch):
    monkeypatch.setattr("pipelines.pull.run.PRESIGN_BATCH", 1, raising=False)
    cfg, _ = config(tmp_path, server, event_types=["hist_login"], tenant_events=False, page_size=100)
    pull(cfg, dest=tmp_path / "landing", now=NOW, log=quiet)
    ops = [r.op for r in server.received if r.op in ("presign", "download")]
    assert ops == ["presign", "download"] * 4  # the site's four sign-in files, none asked for long before
    assert all(len(r.details["files"]) == 1 for r in server.of("presign"))


def test_a_file_given_no_download_address_is_named_and_its_window_asked_for_again(tmp_path, server):
    cfg, _ = config(tmp_path, server, event_types=list(SITE_TYPES), tenant_events=False)
    dest = tmp_path / "landing"
    pull(cfg, dest=dest, now=NOW, log=quiet)
    new = api_path("site", "2026-06-02T07:00", "hist_login")
    put(server.root, new, [{"eventType": "hist_login", "eventTime": "2026-06-02T06:59:00Z"}])
    server.unsigned = {new}
    later, lines = NOW + timedelta(hours=2), []

    report = pull(cfg, dest=dest, now=later, log=lines.append)

    assert (
        f"pull: site {SITE} activitylog eventType=hist_login {iso(NOW - timedelta(hours=2))} to {iso(later)}: "
        f"Tableau Cloud Manager gave no download address for 1 file, not fetched: {new}; the watermark stays at "
        f"{iso(NOW)}, so the next pull asks again"
    ) in lines
    assert report.unsigned_paths == [new] and new not in landed(dest)
    assert lines[-1].startswith("pull: 2 files listed, 0 written (0 bytes), 1 already in ")
    assert ", 1 given no download address (asked for again by the next pull)" in lines[-1]
    # the other type's watermark moves; this one's stays before the file it could not fetch
    assert state(cfg)["watermarks"] == {
        f"site={SITE}|activitylog|hist_login": iso(NOW),
        f"site={SITE}|activitylog|hist_access_view": iso(later),
    }

    server.unsigned = set()
    pull(cfg, dest=dest, now=later, log=quiet)
    assert landed(dest)[new] == (server.root / new).read_bytes()
    assert state(cfg)["watermarks"][f"site={SITE}|activitylog|hist_login"] == iso(later)


def test_partial_files_a_killed_pull_left_are_removed_at_the_next_pull(tmp_path, server):
    cfg, _ = config(tmp_path, server, event_types=["hist_login"], tenant_events=False)
    dest = tmp_path / "landing"
    folder = (dest / api_path("site", "2026-06-01T10:00", "hist_login")).parent
    folder.mkdir(parents=True)
    stale = folder / ".part-00000.json.4242.partial"
    stale.write_bytes(b"half a f")
    others = [folder / ".keep", folder / "notes.partial", folder / ".part-00001.json.partial"]
    for other in others:
        other.write_bytes(b"")
    lines = []

    pull(cfg, dest=dest, now=NOW, log=lines.append)

    assert not stale.exists() and all(other.exists() for other in others)
    assert lines[0] == f"pull: removed 1 partial file a stopped pull left in {dest}"


def test_a_corrupt_state_file_is_one_line_saying_what_to_do_and_the_refresh_goes_on(tmp_path, server):
    cfg, _ = config(tmp_path, server)
    path = Path(cfg.checkpoint_dir) / PULL_STATE_DIR / STATE_FILE
    path.parent.mkdir(parents=True)
    path.write_text('{"watermarks": {', encoding="utf-8")
    message = (
        f"pull: {path} is not a pull state file (Expecting property name enclosed in double quotes: line 1 column "
        "17 (char 16)): move it aside and pull again (the watermarks start over from pull.lookback_days; files "
        "already in the landing tree are not fetched again)"
    )
    with pytest.raises(InputError) as failed:
        pull(cfg, now=NOW, log=quiet)
    assert str(failed.value) == message
    lines = []
    assert pull_before_refresh(cfg, log=lines.append) is None
    assert lines == [f"refresh: the pull failed, the refresh goes on without it: {message}"]
    assert gap_lines(cfg, now=NOW) == [message]  # the feed's report says it too, and goes on

    path.write_text('{"watermarks": {"site=x|activitylog|*": "yesterday"}}', encoding="utf-8")
    with pytest.raises(InputError, match=r"is not a pull state file \(Invalid isoformat string: 'yesterday'\)"):
        pull(cfg, now=NOW, log=quiet)


def test_a_full_disk_is_one_line_and_the_refresh_goes_on(tmp_path, server, monkeypatch):
    cfg, _ = config(tmp_path, server, event_types=["hist_login"], tenant_events=False)
    dest = Path(cfg.landing_dir)
    full = dest / api_path("site", "2026-06-01T10:00", "hist_login")

    def disk_full(path, _data):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(landing, "write_whole", disk_full)
    with pytest.raises(ExternalError) as failed:
        pull(cfg, now=NOW, log=quiet)
    assert str(failed.value) == f"pull: {full}: No space left on device (the watermarks keep what was written)"

    # a refresh's pull runs now: nothing to download, but the state file is written
    path = Path(cfg.checkpoint_dir) / PULL_STATE_DIR / STATE_FILE

    def state_disk_full(_folder, _state):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr("pipelines.pull.run.write_state", state_disk_full)
    lines = []
    assert pull_before_refresh(cfg, log=lines.append) is None
    assert lines == [
        f"refresh: the pull failed, the refresh goes on without it: pull: {path}: No space left on device (the "
        "watermarks keep what was written)"
    ]
