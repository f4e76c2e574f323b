"""The layers of DESIGN.md §5, checked on the source: rag/ knows nothing of the agent or the service,
and no plain-Python package reaches into the Ray layer (deployments/) or Ray itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

FORBIDDEN = {
    "rag": ("harness", "deployments", "ray"),
    "harness": ("deployments", "ray"),
    "audit": ("harness", "deployments", "ray"),
    "telemetry": ("deployments", "ray"),
    "cluster": ("harness", "deployments", "ray", "rag", "audit"),
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
