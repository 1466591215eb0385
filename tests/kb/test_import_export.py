"""Bulk data: whole-file validation, all-or-nothing writes, no-op re-import, round-trip."""

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from kb.models import Bank, Entry, EntryKind, Operation
from kb.services.bulk import ImportFailed, export_lines, import_bank

pytestmark = pytest.mark.django_db
DEMO = Path(__file__).resolve().parents[2] / "kb" / "demo" / "engineering.jsonl"
DEMO_EDGES = DEMO.with_name("engineering_edges.jsonl")


def jl(*objs):
    return "\n".join(json.dumps(o) for o in objs) + "\n"


GOOD = jl(
    {"type": "kind", "name": "approval_role", "weight": 1},
    {
        "type": "entry",
        "id": "0000aaaa",
        "key": "service:reports",
        "title": "Reports",
        "kind": "service",
        "content": "Builds monthly reports.",
    },
    {
        "type": "entry",
        "id": "0000bbbb",
        "title": "Approver",
        "kind": "approval_role",
        "status": "retired",
        "lifetime": {"resolved_by": "service:reports"},
    },
    {
        "type": "entry",
        "title": "No id given",
        "kind": "fact",
        "lifetime": {"expires_at": "2031-01-01"},
        "key": "fact:noid",
        "anchors": {"files": ["a.py"], "symbols": ["f"]},
        "steps": None,
    },
)


def test_import_creates_entries_kinds_and_one_operation(bank):
    result = import_bank(bank, GOOD)
    assert result["created"] == 3 and result["kinds_created"] == 1
    approver = Entry.objects.get(bank=bank, short_id="0000bbbb")
    assert approver.kind.name == "approval_role" and approver.kind.bank == bank
    assert approver.status == "retired"
    assert approver.resolved_by.key == "service:reports"
    op = Operation.objects.get(pk=result["operation"])
    assert op.kind == "import"
    assert Entry.history.filter(operation=op).count() >= 3


def test_reimport_is_a_noop(bank):
    import_bank(bank, GOOD)
    ops = Operation.objects.count()
    history = Entry.history.count()
    result = import_bank(bank, GOOD)
    assert result["created"] == 0 and result["updated"] == 0 and result["unchanged"] == 3
    assert result["operation"] is None
    assert Operation.objects.count() == ops and Entry.history.count() == history


def test_reimport_with_a_change_updates_only_that_entry(bank):
    import_bank(bank, GOOD)
    changed = GOOD.replace("Builds monthly reports.", "Builds weekly reports.")
    result = import_bank(bank, changed)
    assert result["updated"] == 1 and result["unchanged"] == 2
    assert Entry.objects.get(bank=bank, key="service:reports").content == "Builds weekly reports."


def test_every_bad_line_is_reported_and_nothing_written(bank):
    text = (
        jl(
            {"type": "entry", "title": "fine", "kind": "fact"},
            {"type": "entry", "title": "", "kind": "fact"},
            {"type": "entry", "title": "bad kind", "kind": "nope"},
            {"type": "entry", "id": "XYZ", "title": "bad id"},
            {"type": "mystery"},
            {"type": "entry", "title": "dangling", "lifetime": {"resolved_by": "ghost"}},
            {"type": "entry", "id": "0000cccc", "title": "dup 1"},
            {"type": "entry", "id": "0000cccc", "title": "dup 2"},
        )
        + "{not json\n"
    )
    with pytest.raises(ImportFailed) as info:
        import_bank(bank, text)
    lines = sorted(e["line"] for e in info.value.extra["errors"])
    assert lines == [2, 3, 4, 5, 6, 8, 9]
    assert Entry.objects.filter(bank=bank).count() == 0
    assert Operation.objects.filter(bank=bank).count() == 0


def test_export_then_import_into_empty_bank_reproduces_it(bank):
    import_bank(bank, DEMO.read_text())
    import_bank(bank, DEMO_EDGES.read_text())
    first = list(export_lines(bank))
    copy = Bank.objects.create(slug="copy", name="Copy")
    import_bank(copy, "\n".join(first))
    second = list(export_lines(copy))
    types = [json.loads(line)["type"] for line in first]
    assert types.count("entry") >= 150 and types.count("edge") >= 100 and types.count("alias") >= 10
    assert types.count("relation") == 1
    assert first == second
    again = import_bank(copy, "\n".join(first))
    assert again["operation"] is None, again  # and re-import is a no-op


def test_demo_file_imports_cleanly(bank):
    result = import_bank(bank, DEMO.read_text())
    assert result["created"] >= 150
    kinds = set(Entry.objects.filter(bank=bank).values_list("kind__name", flat=True))
    assert {"recipe", "gotcha", "decision", "playbook"} <= kinds
    assert all(e.steps for e in Entry.objects.filter(bank=bank, kind__name="playbook"))


def test_import_and_export_commands(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_text(GOOD)
    call_command("import_bank", "cmdbank", str(source))
    assert "created 3" in capsys.readouterr().out
    out = tmp_path / "out.jsonl"
    call_command("export_bank", "cmdbank", "-o", str(out))
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert [o["type"] for o in exported].count("entry") == 3
    assert {"type": "kind", "name": "approval_role"}.items() <= exported[0].items()
    assert EntryKind.objects.filter(bank__slug="cmdbank", name="approval_role").exists()


def test_import_command_reports_bad_lines(tmp_path):
    from django.core.management.base import CommandError

    source = tmp_path / "bad.jsonl"
    source.write_text(jl({"type": "entry", "title": ""}))
    with pytest.raises(CommandError, match="line 1"):
        call_command("import_bank", "cmdbank", str(source))


def test_import_api_rejects_empty_and_missing_scope(bank, token_client):
    reader = token_client(bank, scopes="read,write")
    response = reader.post(
        "/api/v1/banks/acme/import", data=GOOD, content_type="application/x-ndjson"
    )
    assert response.status_code == 403
    curator = token_client(bank, scopes="curate")
    response = curator.post(
        "/api/v1/banks/acme/import", data="", content_type="application/x-ndjson"
    )
    assert response.status_code == 400 and response.json()["error"]["code"] == "empty_import"


def test_import_api_eager_job_with_bad_lines_reports_them(
    bank, token_client, django_capture_on_commit_callbacks
):
    curator = token_client(bank, scopes="curate")
    text = jl({"type": "entry", "title": "ok"}, {"type": "entry", "title": ""})
    with django_capture_on_commit_callbacks(execute=True):
        response = curator.post(
            "/api/v1/banks/acme/import", data=text, content_type="application/x-ndjson"
        )
    assert response.status_code == 202
    job = curator.get(f"/api/v1/jobs/{response.json()['job']}").json()
    assert job["status"] == "failed"
    assert job["errors"][0]["line"] == 2
    assert Entry.objects.filter(bank=bank).count() == 0


def test_job_of_other_bank_is_404(
    bank, other_bank, token_client, django_capture_on_commit_callbacks
):
    theirs = token_client(other_bank, scopes="curate")
    with django_capture_on_commit_callbacks(execute=False):
        response = theirs.post(
            "/api/v1/banks/globex/import", data=GOOD, content_type="application/x-ndjson"
        )
    mine = token_client(bank)
    assert mine.get(f"/api/v1/jobs/{response.json()['job']}").status_code == 404
