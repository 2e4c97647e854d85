"""One error path: each kind of failure prints one line and exits with its own code (README "Exit codes")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipelines import errors
from pipelines.alerts.webhook import AlertsError
from pipelines.gold.run import GoldError
from pipelines.lake.run_log import RefreshBusyError
from pipelines.personal_data.erase.person import PersonNotFound
from pipelines.quality.gate import QualityGateError
from pipelines.writeback.source import WritebackSourceError

ROOT = Path(__file__).resolve().parent.parent
SPARK_ERROR = (
    "[TABLE_OR_VIEW_NOT_FOUND] The table or view `silver`.`x` cannot be found.\n"
    "Verify the spelling.\n'Project [*]\n+- 'UnresolvedRelation [silver, x]\n\nJVM stacktrace:\n"
    "org.apache.spark.sql.AnalysisException\n\tat org.apache.spark.sql.Dataset.ofRows"
)


def test_one_line_keeps_spark_s_message_and_drops_its_stack_trace():
    assert errors.one_line(RuntimeError(SPARK_ERROR)) == (
        "[TABLE_OR_VIEW_NOT_FOUND] The table or view `silver`.`x` cannot be found. Verify the spelling."
    )  # the plan ('Project ...) and the JVM's stack trace are left out
    assert errors.one_line(RuntimeError("short:\n   the   second  line\nthird")) == "short: the second line"
    assert errors.one_line(KeyError()) == "KeyError"
    assert errors.one_line("  a\tb  ") == "a b"


@pytest.mark.parametrize(
    ("failure", "kind", "code", "details"),
    [
        (RuntimeError(SPARK_ERROR), "internal error", 70, True),
        (WritebackSourceError("write-back source database: connection refused"), "environment error", 4, True),
        (PersonNotFound("no user with e-mail 'x@example.com' in silver: nothing changed"), "input error", 3, True),
        (AlertsError("gold.rpt_detections does not exist: build gold first"), "input error", 3, True),
        (QualityGateError("quality gate bronze_to_silver.bronze_rows stopped the promotion"), "check failed", 1, True),
        (GoldError("dbt build failed:\n  model x"), "check failed", 1, True),
        (RefreshBusyError("another refresh is running (pid 1)"), "busy", 75, False),
    ],
)
def test_a_failure_prints_its_kind_and_exits_with_its_code(failure, kind, code, details, tmp_path, monkeypatch, capsys):
    from pipelines import cli
    from pipelines.runtime import spark_session

    def fail(_cfg):
        raise failure

    monkeypatch.setattr(spark_session, "build_spark", fail)
    monkeypatch.setenv("AUDITLAKE__PATHS__DATA_DIR", str(tmp_path / "lake"))
    assert cli.main(["--env", "test", "refresh"]) == code
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == f"auditlake: {kind}: {errors.one_line(failure)}"
    assert len(lines) == (2 if details else 1), lines
    if details:
        log = Path(re.fullmatch(r"auditlake: details \(.*\) in (.+)", lines[1]).group(1))
        assert type(failure).__name__ in log.read_text(encoding="utf-8")  # the whole traceback


def test_a_usage_error_exits_2_in_one_line_before_anything_starts(tmp_path, monkeypatch, capsys):
    from pipelines import cli

    monkeypatch.setenv("AUDITLAKE__PATHS__DATA_DIR", str(tmp_path / "lake"))
    assert cli.main(["--env", "test", "refresh", "--source", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err == f"auditlake: usage error: --source {tmp_path / 'nowhere'}: no such folder\n"
    assert not (tmp_path / "lake").exists()


def test_the_readme_documents_every_kind_and_its_exit_code():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("## Exit codes") :]
    kinds = {
        c.kind: c.exit_code
        for c in vars(errors).values()
        if isinstance(c, type) and issubclass(c, errors.AuditlakeError) and c is not errors.AuditlakeError
    }
    for kind, code in {**kinds, errors.INTERNAL: errors.EXIT_INTERNAL}.items():
        assert re.search(rf"^\| {code} \|.*`{kind}`", table, re.M), f"README: exit code {code} for `{kind}`"
