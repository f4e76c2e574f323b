"""The layers of DESIGN.md §5, checked on the source: rag/ knows nothing of the agent or the service,
and no plain-Python package reaches into the Ray layer (deployments/) or Ray itself; and no module
imports its way back to itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

FORBIDDEN = {
    "rag": ("harness", "deployments", "ray", "evaluation", "cli"),
    "harness": ("deployments", "ray", "evaluation", "cli"),
    "audit": ("harness", "deployments", "ray", "evaluation", "cli"),
    "telemetry": ("deployments", "ray", "evaluation", "cli"),
    "cluster": ("harness", "deployments", "ray", "rag", "audit", "evaluation", "cli"),
    # The evaluators run the harness and its tools, never the Ray layer: the CLI hands them a runner.
    "evaluation": ("deployments", "ray", "cli"),
    # The command line sits on top: nothing imports it.
    "deployments": ("cli",),
}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_above_it(package: str) -> None:
    offending = {
        str(p.relative_to(REPO)): sorted(imported_packages(p) & set(FORBIDDEN[package]))
        for p in sorted((REPO / package).rglob("*.py"))
    }
    assert {k: v for k, v in offending.items() if v} == {}


def test_the_check_sees_an_import_it_forbids(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from harness.contracts import L0Hints\nimport ray.serve\nfrom . import x\n")
    assert imported_packages(module) == {"harness", "ray"}


PACKAGES = ("deployments", "harness", "rag", "audit", "telemetry", "cluster", "evaluation", "cli")


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = REPO, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Module → the first-party modules it imports anywhere: at the top, inside a function, or under
    ``TYPE_CHECKING`` (the ways a circle is held off are still a circle for the reader)."""
    modules = {_module_name(p, root): p for pkg in packages for p in sorted((root / pkg).rglob("*.py"))}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_module_imports_its_way_back_to_itself() -> None:
    assert circles(import_graph()) == []


def test_the_circle_check_finds_a_circle_held_off_inside_a_function(tmp_path: Path) -> None:
    pkg = tmp_path / "rag"
    pkg.mkdir()
    (pkg / "a.py").write_text("from rag.b import f\n")
    (pkg / "b.py").write_text("def f():\n    from rag.c import g\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rag.a import h\n")
    (pkg / "d.py").write_text("from rag.a import f\n")
    assert circles(import_graph(tmp_path, ("rag",))) == [["rag.a", "rag.b", "rag.c"]]
