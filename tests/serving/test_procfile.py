"""The Procfile as scripts/procrun.py reads it (no process started here: test_make_run.py
runs them)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from .procs import ROOT


def procrun():
    spec = importlib.util.spec_from_file_location("procrun", ROOT / "scripts" / "procrun.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_procfile_declares_the_four_processes_and_a_warm_worker():
    entries = dict(procrun().parse_procfile((ROOT / "Procfile").read_text()))
    assert list(entries) == ["web", "worker", "beat", "broker"]
    # SIGTERM must mean a warm shutdown (finish the tasks in flight): not remapped to SIGQUIT.
    assert "REMAP_SIGTERM" not in entries["worker"]
    assert "celery -A config worker" in entries["worker"]


def test_the_stop_timeout_comes_from_the_environment_catalogue(monkeypatch):
    monkeypatch.setenv("KB_STOP_TIMEOUT", "7")
    assert procrun().default_stop_timeout() == 7.0
    monkeypatch.delenv("KB_STOP_TIMEOUT")
    assert procrun().default_stop_timeout() == 60.0


@pytest.mark.parametrize("text", ["web gunicorn", "web:", ": cmd", "web: a\nweb: b", "we b: cmd"])
def test_a_line_that_is_not_name_colon_command_is_refused(text):
    with pytest.raises(ValueError, match="Procfile line"):
        procrun().parse_procfile(text)


def test_comments_and_blank_lines_are_skipped():
    text = "# a comment\n\nweb: exec run web\n  # indented comment\nworker: run: with colon\n"
    assert procrun().parse_procfile(text) == [
        ("web", "exec run web"),
        ("worker", "run: with colon"),
    ]
