"""The marts' contract (auditlake_devtools/mart_contract.py) without a lake: every column an earlier
committed version of dbt_project/contract/marts.yml lists, and the current one lacks or types
otherwise, is named in docs/mart-changes.md; the list names the marts the project builds. The
comparison with built marts is tests/test_gold_marts.py's."""

from __future__ import annotations

from auditlake_devtools.mart_contract import (
    CHANGES,
    CONTRACT,
    broken,
    committed_versions,
    noted,
    parse,
    read_contract,
    render,
    unnoted_changes,
)
from pipelines.analyst.publish import MARTS_DIR

BEFORE = {
    "fct_logins": {"event_id": "string", "user_luid": "string", "attempts": "int"},
    "rpt_gone": {"finding": "string"},
}


def test_removed_renamed_and_retyped_columns_break_the_contract_and_additions_do_not():
    after = {"fct_logins": {"event_id": "string", "user_key": "string", "attempts": "bigint", "new": "date"}}
    assert broken(BEFORE, after) == {
        "fct_logins.user_luid": "removed or renamed",
        "fct_logins.attempts": "int, now bigint",
        "rpt_gone.finding": "the mart is gone",
    }
    assert broken(BEFORE, {**BEFORE, "fct_logins": {**BEFORE["fct_logins"], "added": "string"}}) == {}
    assert parse(render(after)) == after  # written and read back, columns in their order
    assert list(parse(render(after))["fct_logins"]) == list(after["fct_logins"])


def test_a_break_needs_its_line_in_the_changelog():
    after = {"fct_logins": {"event_id": "string", "attempts": "bigint"}}
    changes = "| `fct_logins.user_luid` | renamed user_key | ... |\n"
    assert noted(changes) == {"fct_logins.user_luid"}
    assert unnoted_changes([render(BEFORE)], after, changes) == {
        "fct_logins.attempts": "int, now bigint",
        "rpt_gone.finding": "the mart is gone",
    }
    assert (
        unnoted_changes([render(BEFORE), render(after)], after, changes + "`fct_logins.attempts` `rpt_gone.finding`")
        == {}
    )


def test_every_committed_contract_breaks_nothing_the_changelog_does_not_name():
    current = read_contract()
    assert current, f"{CONTRACT} is missing: `auditlake docs mart-contract` writes it"
    unnoted = unnoted_changes(committed_versions(), current, CHANGES.read_text(encoding="utf-8"))
    assert unnoted == {}, (
        f"columns an earlier {CONTRACT.name} lists, removed, renamed or retyped since: name each in "
        f"{CHANGES.name} (`mart.column`, the change, what a reader does instead): {unnoted}"
    )


def test_the_contract_lists_the_marts_the_project_builds():
    """A mart whose model is gone leaves the list (written again, the change noted), as the gold test
    requires too; a new mart's model is an addition."""
    models = {p.stem for p in MARTS_DIR.rglob("*.sql")}
    gone = sorted(set(read_contract()) - models)
    assert gone == [], f"{CONTRACT.name} lists marts with no model under {MARTS_DIR}: {gone}"
