"""The tree's rules: the product (``pipelines``) never imports the tooling (``auditlake_devtools``), the
tooling never imports the command line (``pipelines.cli``: it uses the product's packages, as the
command line does), and the tooling's commands reach ``auditlake`` through the entry point group."""

from __future__ import annotations

import ast
from pathlib import Path

from pipelines.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)  # `from pipelines import cli`
    return names


def test_pipelines_never_import_devtools():
    offenders = {
        str(p.relative_to(ROOT)): sorted(n for n in _imports(p) if n.split(".")[0] == "auditlake_devtools")
        for p in (ROOT / "pipelines").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_devtools_never_import_the_command_line():
    offenders = {
        str(p.relative_to(ROOT)): sorted(n for n in _imports(p) if n == "pipelines.cli")
        for p in (ROOT / "auditlake_devtools").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_tooling_commands_reach_the_cli_through_the_entry_point():
    commands = build_parser()._subparsers._group_actions[0].choices
    assert {"demo", "generate", "bench"} <= set(commands)
    assert {"refresh", "gold", "dq", "serve"} <= set(commands)
