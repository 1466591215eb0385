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
