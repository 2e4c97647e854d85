"""No import circle among the modules of ``pipelines`` and ``auditlake_devtools``.

The graph is read from the source with ``ast``, nothing is imported, so a circle that only closes
inside a function (an import moved into a function body to break it at run time) is still an edge:
every ``import`` statement counts, wherever it stands. A node is a module (a package is its
``__init__``); an edge goes from the importing module to:

- ``import a.b.c``: ``a.b.c``;
- ``from a.b import c``: the submodule ``a.b.c`` when there is one, else the package ``a.b``;
- relative imports are resolved against the importing module's package first;
- and, as Python runs them first, every package above the module imported (``a``, ``a.b``), but
  for the packages above the importing module itself, which have run (or are running) already.
  A package whose ``__init__`` imports one of its modules thus closes a circle with any module
  outside it that imports one of its modules and is imported, however indirectly, by that one.

Imports of modules outside the two packages are ignored. Imports under ``if TYPE_CHECKING:`` are
not edges: they never run, so they cannot close a circle at run time, and annotations are the one
place two modules may legitimately name each other's types.
"""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipelines", "auditlake_devtools")


def _module_names(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Every module's dotted name -> its file; a package is named by its folder (its ``__init__.py``)."""
    modules: dict[str, Path] = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.Module):
    """Every import statement at any depth, except the bodies of ``if TYPE_CHECKING:``. Imports are
    statements, so only statements' blocks are searched, not expressions."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        for block in ("body", "orelse", "finalbody", "handlers", "cases"):
            stack.extend(getattr(node, block, ()))


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: set[str]) -> set[str]:
    """The modules ``node`` names, as written (``a.b.c``; for ``from a.b import c``, ``a.b.c`` when it
    is a module, else ``a.b``)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in known}
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = package[: len(package) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    targets = set()
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        if submodule in known:
            targets.add(submodule)
        elif source in known:
            targets.add(source)
    return targets


def _packages_run(module: str, is_package: bool, target: str, known: set[str]) -> set[str]:
    """What importing ``target`` from ``module`` runs: ``target`` and every package above it, but for
    the packages above ``module`` itself (they are imported, or being imported, before it runs)."""
    parts = module.split(".")
    own = {".".join(parts[:i]) for i in range(1, len(parts) + (1 if is_package else 0))}
    names = target.split(".")
    return {p for i in range(1, len(names) + 1) if (p := ".".join(names[:i])) in known and p not in own}


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` it imports (module-level and function-level alike)."""
    modules = _module_names(root, packages)
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in _import_nodes(tree):
            for target in _targets(module, is_package, node, known):
                edges |= _packages_run(module, is_package, target, known)
        edges.discard(module)
        graph[module] = edges
    return graph


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's components, iteratively (the graph is deep enough for recursion to be a risk)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    components.append(component)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return components


def _shortest_circle(graph: dict[str, set[str]], component: set[str], start: str) -> list[str]:
    """A shortest circle from ``start`` back to it inside the component, as ``[start, ..., start]``."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph[node] & component):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    raise AssertionError(f"no circle through {start}")


def import_circles(graph: dict[str, set[str]]) -> list[str]:
    """A shortest circle through each module that is on one, each circle once, written ``a -> b -> a``
    from its first module by name."""
    circles: set[str] = set()
    for component in _strongly_connected(graph):
        if len(component) == 1:
            continue
        for start in component:
            circle = _shortest_circle(graph, component, start)[:-1]
            first = circle.index(min(circle))
            circle = circle[first:] + circle[:first]
            circles.add(" -> ".join([*circle, circle[0]]))
    return sorted(circles)


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_no_import_circle():
    graph = import_graph()
    # the graph was read: a known edge of each package is in it
    assert "pipelines.errors" in graph["pipelines.cli"]
    assert "auditlake_devtools.bench" in graph["auditlake_devtools.commands"]
    circles = import_circles(graph)
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_a_circle_closed_inside_a_function_is_named(tmp_path):
    _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "",
            "pkg/a.py": "from pkg.sub import b\n",
            "pkg/sub/b.py": "def later():\n    from .. import a\n",
            "pkg/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\nimport pkg.sub\n",
        },
    )
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg.c"] == {"pkg.sub"}  # not pkg.a: under TYPE_CHECKING
    assert import_circles(graph) == ["pkg.a -> pkg.sub.b -> pkg.a"]


def test_a_package_that_imports_its_modules_closes_a_circle_through_it(tmp_path):
    _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/bronze/__init__.py": "from pkg.bronze.land import land\n",
            "pkg/bronze/ledger.py": "",
            # a sibling reached through its own, running, package: no circle
            "pkg/bronze/land.py": "from pkg.bronze import ledger\nfrom pkg.snapshots import land_snapshots\n",
            # importing a module of pkg.bronze runs pkg.bronze's __init__ first
            "pkg/snapshots.py": "from pkg.bronze.ledger import record\n",
        },
    )
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg.bronze.land"] == {"pkg.bronze.ledger", "pkg.snapshots"}
    assert import_circles(graph) == ["pkg.bronze -> pkg.bronze.land -> pkg.snapshots -> pkg.bronze"]
