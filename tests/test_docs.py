"""The docs name the tree and the commands as they are.

- ``docs/architecture.md``'s code map (the tables of its ``## Code map`` section) has one row per
  package and per file under ``pipelines/`` and ``auditlake_devtools/``, and no other: a row's first cell is
  exactly one path relative to the repository root in backticks, a package written as its folder
  with a trailing ``/`` (``pipelines/activity_log/bronze/``; its ``__init__.py`` is that row), any
  other file by its own path (``pipelines/activity_log/bronze/land.py``, data files included).
- ``README.md``'s command table (the table of its ``## The command`` section) has a row for every
  sub-command ``pipelines.cli.build_parser()`` knows, nested ones (``gold staging``) included,
  with the choices of a positional argument (``cluster start|stop|status``), and each row is a
  complete command that exists, with options that command takes.
- ``docs/analyst-guide.md`` shows each SQL block's output as a table with a blank line after it
  (a Markdown table runs on into the next line that is not blank), and ``auditlake docs
  analyst-guide`` writes them so.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

from pipelines.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
CODE_ROOTS = ("pipelines", "auditlake_devtools")
ARCHITECTURE = ROOT / "docs" / "architecture.md"
README = ROOT / "README.md"


# --- the tree and docs/architecture.md's code map ---------------------------------------------


def _ignored(rel: Path) -> bool:
    return any(part == "__pycache__" or part.startswith(".") or part.endswith(".egg-info") for part in rel.parts)


def tree_entries() -> set[str]:
    """Every package (``dir/``) and every other file (``dir/file``) under the code roots."""
    entries: set[str] = set()
    for top in CODE_ROOTS:
        for path in [ROOT / top, *(ROOT / top).rglob("*")]:
            rel = path.relative_to(ROOT)
            if _ignored(rel):
                continue
            if path.is_dir():
                if (path / "__init__.py").is_file():
                    entries.add(f"{rel.as_posix()}/")
            elif path.name != "__init__.py" and path.suffix != ".pyc":
                entries.add(rel.as_posix())
    return entries


def section(text: str, heading: str) -> str:
    """The lines under ``## heading`` up to the next ``## `` heading."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == f"## {heading}"]
    assert len(starts) == 1, f"expected one '## {heading}' heading, found {len(starts)}"
    body = []
    for line in lines[starts[0] + 1 :]:
        if line.startswith("## "):
            break
        body.append(line)
    return "\n".join(body)


SEPARATOR = re.compile(r"\|[\s:|-]+\|")


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the Markdown tables in ``text`` (a table: consecutive lines starting with
    ``|``, the second its ``|---|`` separator), as cells with ``\\|`` unescaped; a table without its
    separator fails."""
    blocks: list[list[str]] = []
    previous_in_table = False
    for line in text.splitlines():
        line = line.strip()
        in_table = line.startswith("|")
        if in_table and not previous_in_table:
            blocks.append([])
        if in_table:
            blocks[-1].append(line)
        previous_in_table = in_table
    rows = []
    for block in blocks:
        assert len(block) >= 2 and SEPARATOR.fullmatch(block[1]), f"not a table (no separator): {block[0]}"
        for line in block[2:]:
            rows.append([c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip("|"))])
    return rows


CODE_CELL = re.compile(r"`([^`]+)`")


def code_map_paths(text: str) -> list[str]:
    """The path of each code-map row; a row whose first cell is not exactly one code span fails."""
    paths = []
    for cells in table_rows(section(text, "Code map")):
        match = CODE_CELL.fullmatch(cells[0])
        assert match, f"code map row {cells!r}: the first cell must be one path in backticks"
        paths.append(match.group(1))
    return paths


def test_the_code_map_names_every_package_and_file_and_nothing_else():
    documented = code_map_paths(ARCHITECTURE.read_text(encoding="utf-8"))
    doubled = sorted({p for p in documented if documented.count(p) > 1})
    assert doubled == [], f"named twice in the code map: {doubled}"
    tree = tree_entries()
    assert len(tree) > 40  # the walk found the tree
    missing = sorted(tree - set(documented))
    assert missing == [], f"docs/architecture.md's code map lacks a row for: {missing}"
    unknown = sorted(set(documented) - tree)
    assert unknown == [], (
        f"docs/architecture.md's code map names what is not in the tree (or a package without its "
        f"trailing /): {unknown}"
    )


# --- the auditlake command and README.md's command table ---------------------------------------


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def command_leaves(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    """Every complete command: words -> its parser (``("gold", "staging")``, ``("demo",)``, ...)."""
    subs = _subcommands(parser)
    if not subs:
        return {prefix: parser}
    leaves = {}
    for name, sub in subs.items():
        leaves.update(command_leaves(sub, (*prefix, name)))
    return leaves


def _positional_choices(parser: argparse.ArgumentParser) -> list[set[str]]:
    return [
        set(a.choices)
        for a in parser._actions
        if not a.option_strings and a.choices and not isinstance(a, argparse._SubParsersAction)
    ]


def readme_commands(text: str, parser: argparse.ArgumentParser) -> dict[tuple[str, ...], list[list[str]]]:
    """Each README command row resolved against the parser: command words -> the rows' words after
    them. A row that is not one code span starting ``auditlake``, that names a command that does not
    exist or stops short of a complete one, or that gives an option the command does not take,
    fails."""
    rows: dict[tuple[str, ...], list[list[str]]] = {}
    global_options = set(parser._option_string_actions)
    for cells in table_rows(section(text, "The command")):
        match = CODE_CELL.fullmatch(cells[0])
        assert match, f"README command row {cells!r}: the first cell must be one command in backticks"
        words = shlex.split(match.group(1))
        assert words[0] == "auditlake", f"README command row {cells[0]}: does not start with auditlake"
        words, path, current = words[1:], (), parser
        while subs := _subcommands(current):
            assert words and words[0] in subs, (
                f"README command row {cells[0]}: {' '.join(path) or 'auditlake'} takes one of "
                f"{sorted(subs)}, not {words[:1]}"
            )
            path, current, words = (*path, words[0]), subs[words[0]], words[1:]
        options = {w.strip("[]").split("=")[0] for w in words if w.strip("[]").startswith("-")}
        unknown = sorted(options - set(current._option_string_actions) - global_options)
        assert unknown == [], f"README command row {cells[0]}: auditlake {' '.join(path)} takes no {unknown}"
        rows.setdefault(path, []).append(words)
    return rows


def test_the_readme_command_table_lists_every_command_as_it_is():
    parser = build_parser()
    leaves = command_leaves(parser)
    assert {("demo",), ("gold", "staging"), ("generate", "writeback")} <= set(leaves)  # the walk found them
    listed = readme_commands(README.read_text(encoding="utf-8"), parser)
    missing = sorted(" ".join(words) for words in set(leaves) - set(listed))
    assert missing == [], f"README.md's command table lacks: {missing}"
    for words, leaf in leaves.items():
        for choices in _positional_choices(leaf):
            given = {c for row in listed[words] for w in row for c in w.strip("[]").split("|")}
            assert choices <= given, f"README.md: auditlake {' '.join(words)} lacks {sorted(choices - given)}"


def test_scripts_call_auditlake_in_its_grammar():
    """Every `auditlake …` line of .ci/run and the Makefile parses with the CLI's own parser (a
    renamed sub-command must not leave CI calling the old one)."""
    calls = []
    for script in (ROOT / ".ci" / "run", ROOT / "Makefile"):
        for line in script.read_text(encoding="utf-8").splitlines():
            match = re.search(r"(?:\.venv/bin/|\$\(BIN\)/)auditlake (.*)", line)
            if match:
                calls.append((script.name, match.group(1)))
    assert len(calls) >= 3  # the Makefile's (.ci/run's report comes from tests/test_wheel.py's commands)
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    for script, rest in calls:
        try:
            words = shlex.split(rest, comments=True)
        except ValueError:  # a quoted argument goes on over the next lines: the command name at least
            assert rest.split()[0] in commands, f"{script}: `auditlake {rest}`: no such command"
            continue
        if script == "Makefile":
            words = [w for w in words if not w.startswith("$")]
        try:
            parser.parse_args(words)
        except SystemExit:
            raise AssertionError(f"{script}: `auditlake {rest}` is not a valid auditlake command") from None


# --- docs/analyst-guide.md's outputs -----------------------------------------------------------


class _Frame:
    columns = ["n", "name"]

    def limit(self, _n: int) -> _Frame:
        return self

    def collect(self) -> list[tuple]:
        return [(1, None)]


class _Spark:
    def sql(self, _query: str) -> _Frame:
        return _Frame()


def test_the_analyst_guide_shows_each_output_as_a_table_ending_in_a_blank_line():
    from auditlake_devtools.analyst_guide import GUIDE, refresh_guide

    text = GUIDE.read_text(encoding="utf-8")
    blocks = re.findall(r"```sql\n.*?```\n\n((?:\|[^\n]*\|\n)+)(\n|$)", text, re.S)
    assert len(blocks) == text.count("```sql") > 10  # each block with its table, a blank line after it
    before = "```sql\nSELECT 1\n```\n\n| n |\n|---|\n| 0 |\nProse.\n\n```sql\nSELECT 2\n```\nMore.\n"
    after = refresh_guide(_Spark(), before, log=lambda _line: None)
    table = "| n | name |\n|---|---|\n| 1 |  |\n"
    assert after == f"```sql\nSELECT 1\n```\n\n{table}\nProse.\n\n```sql\nSELECT 2\n```\n\n{table}\nMore.\n"
    assert refresh_guide(_Spark(), after, log=lambda _line: None) == after
