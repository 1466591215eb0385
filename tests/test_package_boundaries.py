"""What may import what: the product never imports the benches or the test scaffolding, and
the tests never import a bench module (a bench is a script that prints numbers, not a library).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("config", "kb", "graph", "workflows", "mcpserver", "explorer")


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def offenders(packages: tuple[str, ...], forbidden: set[str]) -> list[str]:
    found = []
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            bad = imported_roots(path) & forbidden
            if bad:
                found.append(f"{path.relative_to(ROOT)} imports {', '.join(sorted(bad))}")
    return found


def test_the_product_imports_neither_benches_nor_tests():
    assert offenders(PRODUCT, {"bench", "tests"}) == []


def test_the_tests_import_no_bench_module():
    assert offenders(("tests",), {"bench"}) == []


def test_kb_imports_no_dependent_app_at_module_level():
    """graph, workflows and mcpserver build on kb; kb reaches them only lazily, inside functions."""
    found = []
    for path in sorted((ROOT / "kb").rglob("*.py")):
        for node in ast.parse(path.read_text(), filename=str(path)).body:
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            bad = {n.split(".")[0] for n in names} & {"graph", "workflows", "mcpserver"}
            if bad:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {', '.join(bad)}")
    assert found == []
