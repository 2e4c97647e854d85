"""Tableau Server's Activity Log files (pipelines/server_logs): copied into the landing tree exactly
once while they grow, rotate, vanish and come back in archives; then landed and typed.

The copy is plain Python on real files (fast); one chain of real `auditlake refresh` processes,
one of them killed mid-copy, checks that every line written lands exactly once and is typed."""

from __future__ import annotations

import json
import os
import time
import zipfile
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from auditlake_devtools.sample.server_logs import ServerLogTree, generated_site_events
from pipelines.activity_log.bronze import ledger
from pipelines.server_logs import offsets, pieces
from pipelines.server_logs.discover import LogRoot, ServerLog
from pipelines.server_logs.pieces import REPLACED, UNREADABLE, VANISHED, copy_new_lines, pending_notes

pytestmark = [pytest.mark.slow(minutes=3)]  # the chain of refresh processes at its end
ZONE = "Europe/Berlin"


def _event(i: int) -> str:
    return json.dumps({"eventType": "login", "eventTime": f"2026-06-08T10:{i // 60:02d}:{i % 60:02d}Z", "n": i})


def _copy(tmp: Path, roots: list[LogRoot] | None = None) -> pieces.CopyResult:
    return copy_new_lines(
        None, roots or [LogRoot(str(tmp / "logs"), "n1")], ZONE, str(tmp / "land"), str(tmp / "ck"), log=lambda _m: None
    )


def _copied_lines(tmp: Path) -> list[str]:
    """Every line of every piece under the landing tree."""
    out = []
    for piece in sorted((tmp / "land").rglob("*.log")):
        out += piece.read_text().splitlines()
    return out


def _log(tmp: Path, name: str = "vizqlserver_0-cepp-canonical-events_0.log", process: str = "vizqlserver") -> Path:
    path = tmp / "logs" / process / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _append(path: Path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def test_growing_file_copies_complete_lines_once(tmp_path):
    log = _log(tmp_path)
    _append(log, "\n".join(_event(i) for i in range(3)) + "\n" + _event(3)[:20])
    first = _copy(tmp_path)
    assert (first.lines, first.pieces) == (3, 1)  # the partial line waits
    _append(log, _event(3)[20:] + "\n" + _event(4) + "\n")
    assert _copy(tmp_path).lines == 2
    assert _copy(tmp_path).lines == 0  # nothing new: nothing written
    assert _copied_lines(tmp_path) == [_event(i) for i in range(5)]
    piece = next((tmp_path / "land").rglob("*.log")).relative_to(tmp_path / "land").as_posix()
    assert piece.startswith("server/node=n1/tz=Europe~Berlin/y=")
    assert "/vizqlserver/vizqlserver_0-cepp-canonical-events_0.log." in piece


def test_rotation_keeps_identity_and_a_new_file_at_the_old_name_is_new(tmp_path):
    log = _log(tmp_path)
    _append(log, _event(0) + "\n" + _event(1) + "\n")
    _copy(tmp_path)
    _append(log, _event(2) + "\n")  # written just before the rotation, not yet copied
    os.replace(log, log.with_name("vizqlserver_0-cepp-canonical-events_1.log"))
    _append(log, _event(3) + "\n")
    assert _copy(tmp_path).lines == 2
    assert sorted(_copied_lines(tmp_path)) == sorted(_event(i) for i in range(4))


def test_archive_beside_the_live_folder_is_not_copied_twice(tmp_path):
    log = _log(tmp_path)
    _append(log, "\n".join(_event(i) for i in range(4)) + "\n")
    archive = tmp_path / "ziplogs.zip"
    with zipfile.ZipFile(archive, "w") as z:  # tsm maintenance ziplogs: a folder per node
        z.write(log, "node1/tabsvc/logs/vizqlserver/vizqlserver_0-cepp-canonical-events_0.log")
    _append(log, _event(4) + "\n")
    roots = [LogRoot(str(tmp_path / "logs"), "node1"), LogRoot(str(archive))]
    result = _copy(tmp_path, roots)
    assert (result.files, result.lines) == (2, 5)
    assert _copy(tmp_path, roots).lines == 0
    assert _copied_lines(tmp_path) == [_event(i) for i in range(5)]


def _notes(tmp: Path) -> list[tuple[str, str, str]]:
    """The notes waiting for bronze's ledger: (status, reason, detail)."""
    return [(e.status, e.reason, e.detail) for e in pending_notes(None, str(tmp / "ck"))]


def test_a_file_replaced_after_its_head_is_noted_once_not_copied(tmp_path):
    log = _log(tmp_path)
    _append(log, "\n".join(_event(i) for i in range(10)) + "\n")
    _copy(tmp_path)
    # rewritten after its first lines (its head: the file is known by them), then it grows
    log.write_text("\n".join(_event(i) for i in range(9)) + "\n" + _event(99) + "\n" + _event(10) + "\n")
    _copy(tmp_path)
    _append(log, _event(11) + "\n")
    _copy(tmp_path)
    [(status, reason, detail)] = _notes(tmp_path)
    assert (status, reason) == (ledger.SKIPPED, REPLACED)
    assert detail.startswith("replaced: its bytes before offset ")
    assert _copied_lines(tmp_path) == [_event(i) for i in range(10)]


def test_two_files_with_one_first_line_are_two_files(tmp_path):
    header = "# Tableau Server Activity Log\n"
    for node, first in (("n1", 0), ("n2", 10)):
        log = tmp_path / "logs" / node / "vizportal" / "vizportal_0-cepp-canonical-events_0.log"
        log.parent.mkdir(parents=True)
        log.write_text(header + "\n".join(_event(first + i) for i in range(3)) + "\n")
    roots = [LogRoot(str(tmp_path / "logs" / n), n) for n in ("n1", "n2")]
    assert _copy(tmp_path, roots).lines == 8
    assert _copy(tmp_path, roots).lines == 0
    assert Counter(_copied_lines(tmp_path)) == Counter([header[:-1]] * 2 + [_event(i) for i in (0, 1, 2, 10, 11, 12)])


def test_a_new_file_of_the_old_size_at_the_old_name_is_read(tmp_path):
    log = _log(tmp_path)
    log.write_text(_event(0) + "\n")
    _copy(tmp_path)
    os.replace(log, tmp_path / "logs" / "elsewhere.log")  # rotated to a name that is not an Activity Log file
    log.write_text(_event(1) + "\n")  # the same size
    os.utime(log, ns=(time.time_ns() + 10**9,) * 2)
    assert _copy(tmp_path).lines == 1


def test_vanished_files_are_noted(tmp_path, monkeypatch):
    log = _log(tmp_path)
    _append(log, _event(0) + "\n" + _event(1)[:10])
    _copy(tmp_path)
    log.unlink()  # tsm maintenance cleanup, before the partial line was ended
    _copy(tmp_path)
    [(status, reason, detail)] = _notes(tmp_path)
    assert (status, reason) == (ledger.SKIPPED, VANISHED)
    assert detail.startswith("gone with 10 bytes after its last complete line")

    listed = ServerLog("n1", "vizqlserver", "x.log", str(tmp_path / "nowhere.log"), 5, 0)
    monkeypatch.setattr(pieces, "find_logs", lambda roots: ([listed], []))
    _copy(tmp_path)
    assert _notes(tmp_path)[-1][2].startswith("listed, then gone before it could be read")
    pieces.notes_recorded(None, str(tmp_path / "ck"), 2)  # bronze's ledger has them
    assert _notes(tmp_path) == []


def test_a_root_that_cannot_be_read_closes_nothing(tmp_path):
    log = _log(tmp_path)
    _append(log, _event(0) + "\n" + _event(1)[:10])
    _copy(tmp_path)
    os.replace(tmp_path / "logs", tmp_path / "unmounted")  # the share is away for a run
    assert _copy(tmp_path).problems == [f"server logs: {tmp_path / 'logs'}: no such folder or .zip archive"]
    assert _notes(tmp_path) == []


def test_an_unreadable_archive_member_is_noted_and_the_rest_copied(tmp_path):
    log = _log(tmp_path)
    _append(log, _event(0) + "\n")
    archive = tmp_path / "ziplogs.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("node2/vizportal/vizportal_0-cepp-canonical-events_0.log", "\n".join(_event(i) for i in range(50)))
    data = bytearray(archive.read_bytes())
    data[60] ^= 0xFF  # a byte of the compressed member
    archive.write_bytes(bytes(data))
    result = _copy(tmp_path, [LogRoot(str(tmp_path / "logs"), "n1"), LogRoot(str(archive))])
    assert result.lines == 1
    [(status, reason, detail)] = _notes(tmp_path)
    assert (status, reason) == (ledger.SKIPPED, UNREADABLE)
    assert detail.startswith("cannot be read (")


def test_a_run_killed_after_its_pieces_before_its_offsets_copies_nothing_twice(tmp_path, monkeypatch):
    log = _log(tmp_path)
    _append(log, "\n".join(_event(i) for i in range(3)) + "\n")
    _copy(tmp_path)
    _append(log, "\n".join(_event(i) for i in range(3, 6)) + "\n")

    def killed(*_args):
        raise KeyboardInterrupt  # the kill: the pieces are written, the offsets are not

    with monkeypatch.context() as m:
        m.setattr(offsets, "save", killed)
        with pytest.raises(KeyboardInterrupt):
            _copy(tmp_path)
    _append(log, _event(6) + "\n")
    assert _copy(tmp_path).lines == 1
    assert _copied_lines(tmp_path) == [_event(i) for i in range(7)]


def test_a_piece_cut_short_is_copied_again(tmp_path, monkeypatch):
    log = _log(tmp_path)
    _append(log, "\n".join(_event(i) for i in range(3)) + "\n")
    with monkeypatch.context() as m:
        m.setattr(offsets, "save", lambda *_a: None)  # killed before its offsets
        _copy(tmp_path)
    [piece] = list((tmp_path / "land").rglob("*.log"))
    piece.write_bytes(piece.read_bytes()[:30])  # an upload that stopped short under its full name
    _copy(tmp_path)
    assert _copied_lines(tmp_path) == [_event(i) for i in range(3)]


def test_a_state_saved_on_a_later_local_day_still_finds_a_killed_runs_pieces(tmp_path, monkeypatch):
    log = _log(tmp_path)
    _append(log, _event(0) + "\n")
    _copy(tmp_path)
    state_file = tmp_path / "ck" / offsets.STATE_FILE
    saved = json.loads(state_file.read_text())
    # the state said a day later than the pieces' folders (a clock east of UTC, as the old code wrote it)
    saved["saved_day"] = "2999-01-02"
    state_file.write_text(json.dumps(saved))
    _append(log, _event(1) + "\n")
    with monkeypatch.context() as m:
        m.setattr(offsets, "save", lambda *_a: None)
        _copy(tmp_path)
    saved["saved_day"] = (datetime.now(UTC).date() + timedelta(days=1)).isoformat()
    state_file.write_text(json.dumps(saved))
    _copy(tmp_path)
    assert _copied_lines(tmp_path) == [_event(0), _event(1)]


def test_a_missing_root_is_one_line(tmp_path):
    result = _copy(tmp_path, [LogRoot(str(tmp_path / "absent"))])
    assert result.problems == [f"server logs: {tmp_path / 'absent'}: no such folder or .zip archive"]


def test_timezone_and_command_line_root_are_checked(monkeypatch, tmp_path):
    from pipelines.config.load import load_config
    from pipelines.errors import ConfigError, UsageError
    from pipelines.server_logs.roots import with_root

    monkeypatch.setenv("AUDITLAKE__SOURCES__SERVER_LOGS__TIMEZONE", "Mars/Olympus")
    with pytest.raises(ConfigError, match="config key 'sources.server_logs.timezone' must be an IANA time zone name"):
        load_config("test", writes_lake=False)
    monkeypatch.delenv("AUDITLAKE__SOURCES__SERVER_LOGS__TIMEZONE")
    monkeypatch.setenv("AUDITLAKE__SOURCES__SERVER_LOGS__ROOTS", json.dumps([{"path": str(tmp_path)}]))
    with pytest.raises(
        ConfigError, match="config key 'sources.server_logs.timezone' is empty: sources.server_logs.roots"
    ):
        load_config("test", writes_lake=False)
    monkeypatch.delenv("AUDITLAKE__SOURCES__SERVER_LOGS__ROOTS")
    cfg = load_config("test", writes_lake=False)
    with pytest.raises(UsageError, match=r"^--server-logs .*absent: no such folder or .zip archive$"):
        with_root(cfg, str(tmp_path / "absent"))
    with pytest.raises(UsageError, match=r"^--server-logs needs the servers' time zone"):
        with_root(cfg, str(tmp_path))
    monkeypatch.setenv("AUDITLAKE__SOURCES__SERVER_LOGS__TIMEZONE", ZONE)
    cfg = load_config("test", writes_lake=False)
    assert with_root(cfg, str(tmp_path), "n9").settings.sources.server_logs.roots[-1].node == "n9"


# The chain: three refreshes of bronze and silver by real processes, on a log tree of two nodes that
# grows, rotates and gets odd lines between them; the second is killed at its first copied piece.
NATIVE_WITHOUT_TIME = {
    "ts": "2026-06-08T14:03:47.924",
    "pid": 6022,
    "tid": "4a16",
    "sev": "info",
    "req": "-",
    "sess": "-",
    "site": "7C0E6B52-2D3A-4F59-9B1E-5A4D3C2B1A09",
    "user": "-",
    "k": "cepp-canonical-event",
    "v": {"eventType": "hist_login", "actorUserLuid": "0b7d5d8e-9f4e-4c1b-9a51-3f0e0f2a1c11"},
}


def _environ(data_dir: Path, tree: Path) -> dict[str, str]:
    from tests.lake import KEYED

    environ = dict(os.environ) | KEYED
    environ["AUDITLAKE__PATHS__DATA_DIR"] = str(data_dir)
    environ["AUDITLAKE__PATHS__LANDING_DIR"] = str(data_dir / "landing")
    environ["AUDITLAKE__QUALITY__CONTEXT_DIR"] = str(data_dir / "gx_context")
    environ["AUDITLAKE__ANALYST__ENABLED"] = "false"
    environ["AUDITLAKE__SPARK__JIT"] = "c1"
    environ["AUDITLAKE__SOURCES__SERVER_LOGS__TIMEZONE"] = ZONE
    environ["AUDITLAKE__SOURCES__SERVER_LOGS__ROOTS"] = json.dumps(
        [{"path": str(tree / node), "node": node} for node in ("node1", "node2")]
    )
    return environ


def _refresh(environ: dict, kill_at: str | None = None, then: tuple[str, ...] = ()) -> str:
    from tests.test_crash import _run

    rc, out = _run(
        environ,
        "refresh --layers bronze,silver",
        *then,
        kill_at=(lambda line: line.startswith(kill_at), 0.0) if kill_at else None,
    )
    if not kill_at:
        assert rc == 0, out[-3000:]
    return out


def _written_lines(tree: Path) -> Counter:
    return Counter(
        line
        for path in tree.rglob("*.log")
        for line in path.read_text().splitlines(keepends=True)
        if line.endswith("\n")
    )


@pytest.mark.subprocess
@pytest.mark.e2e
def test_a_log_tree_appended_rotated_and_killed_lands_every_line_once(spark, tmp_path):
    records = generated_site_events(900, 11, datetime(2026, 6, 1, tzinfo=UTC), 2)
    tree = ServerLogTree(tmp_path / "logs", nodes=2, zone=ZONE, rotate_lines=120)
    environ = _environ(tmp_path / "data", tree.root)
    tree.append(records[:300])
    partial = tree.current("node1", "vizportal")
    _append(partial, '{"eventType":"login","eventTime":"2026-06-08T10:00:00Z","siteLuid":"')
    _refresh(environ)

    tree.append(records[300:600])
    _append(tree.current("node2", "backgrounder"), "not a JSON line\n")
    _append(tree.current("node2", "vizportal"), json.dumps(NATIVE_WITHOUT_TIME) + "\n")
    tree.rotate("node1", "vizportal")
    _refresh(environ, kill_at="server logs: ")
    tree.append(records[600:])
    tree.rotate("node2", "dataserver")
    out = _refresh(environ, then=("verify",))
    assert "the trail holds" in out  # the copies are landed files: hashed and signed as any

    written = _written_lines(tree.root)
    warehouse = tmp_path / "data" / "warehouse"
    bronze = spark.read.format("delta").load(str(warehouse / "bronze.db" / "site_events_raw"))
    landed = Counter(r["raw_line"] + "\n" for r in bronze.select("raw_line").collect())
    assert landed == written  # every complete line, exactly once
    silver = spark.read.format("delta").load(str(warehouse / "silver.db" / "site_events"))
    quarantine = spark.read.format("delta").load(str(warehouse / "silver.db" / "quarantine"))
    reasons = Counter(r["reason"] for r in quarantine.collect())
    # the junk line, and the partial line ended by the next append's first line: one line, not JSON
    assert reasons == Counter({"malformed_json": 2})
    duplicates = spark.read.format("delta").load(str(warehouse / "silver.db" / "duplicate_records")).count()
    assert silver.count() + duplicates + sum(reasons.values()) == sum(written.values())
    shapes = Counter(r["record_shape"] for r in silver.select("record_shape").collect())
    assert set(shapes) == {"flat", "envelope", "native"}
    native = silver.where("actor_user_luid = '0b7d5d8e-9f4e-4c1b-9a51-3f0e0f2a1c11'").first()
    # the line's local time in Europe/Berlin (summer: UTC+2), its site the line's LUID in lower case
    assert (native["event_time"].isoformat(), native["site_luid"]) == (
        "2026-06-08T12:03:47.924000",
        "7c0e6b52-2d3a-4f59-9b1e-5a4d3c2b1a09",
    )
