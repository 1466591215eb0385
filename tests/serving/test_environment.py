"""The environment is declared once (config/environment.py), parsed once, documented in full,
and reading the settings has no side effects."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.environment import CATALOGUE, VARIABLES, Environment, InvalidEnvironment

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("config", "kb", "graph", "workflows", "mcpserver", "explorer")


def test_blank_or_unset_means_the_default_and_values_are_typed():
    env = Environment({"KB_DB_POOL_MAX": "12", "KB_DB_POOL": "", "KB_SIMILAR_MIN": "0.5"})
    assert env["KB_DB_POOL_MAX"] == 12
    assert env["KB_DB_POOL"] is False  # blank: the default, not "off because not truthy"
    assert env["KB_SIMILAR_MIN"] == 0.5
    assert env["KB_PREPARED_STATEMENTS"] is True  # unset: the default
    assert env["DJANGO_ALLOWED_HOSTS"] == ["127.0.0.1", "localhost", "testserver"]
    assert Environment({"DJANGO_ALLOWED_HOSTS": "a.example, b.example"})[
        "DJANGO_ALLOWED_HOSTS"
    ] == ["a.example", "b.example"]


@pytest.mark.parametrize(
    ("raw", "expected"), [("1", True), ("On", True), ("yes", True), ("0", False), ("FALSE", False)]
)
def test_one_bool_rule(raw, expected):
    assert Environment({"KB_HTTPS": raw})["KB_HTTPS"] is expected


@pytest.mark.parametrize(
    ("name", "raw"),
    [("KB_DB_POOL_MAX", "eight"), ("KB_DB_POOL_TIMEOUT", "soon"), ("KB_HTTPS", "maybe")],
)
def test_a_value_that_does_not_parse_is_refused_by_name(name, raw):
    with pytest.raises(InvalidEnvironment, match=name):
        Environment({name: raw})


def test_an_undeclared_name_is_an_error_not_a_default():
    with pytest.raises(KeyError):
        Environment({})["KB_DB_POOL_MAXIMUM"]


def test_the_readme_lists_every_variable_with_its_default():
    readme = (ROOT / "README.md").read_text()
    missing = [v.name for v in VARIABLES if f"| `{v.name}` |" not in readme]
    assert missing == []


def _environment_reads(path: Path) -> list[str]:
    """Declared variables this file reads from os.environ / os.getenv (setdefault is a write)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        name = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = ast.unparse(node.func.value)
            if (owner, node.func.attr) in {("os.environ", "get"), ("os", "getenv")} and node.args:
                name = node.args[0]
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
            if isinstance(node.ctx, ast.Load):
                name = node.slice
        if isinstance(name, ast.Constant) and name.value in CATALOGUE:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} reads {name.value}")
    return found


def test_only_the_catalogue_reads_declared_variables():
    reads = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name != "environment.py" and "migrations" not in path.parts:
                reads += _environment_reads(path)
    assert reads == []


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("KB_", "DJANGO_"))}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_importing_the_settings_creates_nothing(tmp_path):
    static, run = tmp_path / "static", tmp_path / "run"
    result = _python(
        "import config.settings as s; print(s.DEBUG, s.STATIC_ROOT)",
        KB_STATIC_ROOT=str(static),
        KB_RUNDIR=str(run),
        DJANGO_SECRET_KEY="configured",
        DJANGO_DEBUG="",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", str(static)]
    assert not static.exists() and not run.exists()


def test_a_bad_value_stops_the_settings_with_its_name(tmp_path):
    result = _python(
        "import config.settings",
        KB_DB_POOL_MAX="eight",
        DJANGO_SECRET_KEY="configured",
        KB_RUNDIR=str(tmp_path),
    )
    assert result.returncode != 0
    assert "KB_DB_POOL_MAX must be an integer; got 'eight'." in result.stderr
