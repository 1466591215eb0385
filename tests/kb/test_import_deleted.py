"""Deleted and merged-away ids in imports (issue 22): a line naming a deleted entry is a line
error ``entry_deleted`` unless the import restores deleted entries; merged-away names resolve
to the survivor; no path answers 500."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from graph.curation.delete import delete_entry
from graph.curation.merge import merge_entries
from graph.models import Alias, Edge
from kb.models import Entry, Operation
from kb.services.bulk import ImportFailed, import_bank

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_embedder(hashing_embedder):
    """Vectors are not what these tests are about."""


def jl(*objs):
    return "\n".join(json.dumps(o) for o in objs) + "\n"


A = {"type": "entry", "id": "0000aaaa", "key": "svc:a", "title": "Alpha", "kind": "fact"}
B = {"type": "entry", "id": "0000bbbb", "title": "Beta", "kind": "fact"}
C = {"type": "entry", "id": "0000cccc", "title": "Gamma", "kind": "fact"}


def line_errors(exc_info) -> list[dict]:
    return exc_info.value.extra["errors"]


def test_reimporting_a_deleted_entry_is_a_line_error_with_a_restore_hint(bank):
    import_bank(bank, jl(A, B))
    delete_entry(bank, "0000aaaa", "obsolete")
    with pytest.raises(ImportFailed) as failed:
        import_bank(bank, jl(A, B))
    (error,) = line_errors(failed)
    assert error["line"] == 1 and error["code"] == "entry_deleted"
    assert "0000aaaa" in error["message"] and "restore_deleted" in error["message"]
    assert Entry.objects.get(bank=bank, short_id="0000aaaa").status == "deleted"


def test_the_key_alone_of_a_deleted_entry_is_refused_too(bank):
    import_bank(bank, jl(A))
    delete_entry(bank, "svc:a", "obsolete")
    line = {"type": "entry", "key": "svc:a", "title": "Alpha again", "kind": "fact"}
    with pytest.raises(ImportFailed) as failed:
        import_bank(bank, jl(line))
    assert line_errors(failed)[0]["code"] == "entry_deleted"


def test_edges_aliases_and_lifetimes_naming_a_deleted_entry_are_refused(bank):
    import_bank(bank, jl(A, B))
    delete_entry(bank, "0000aaaa", "obsolete")
    text = jl(
        {"type": "edge", "from": "0000bbbb", "to": "0000aaaa", "relation": "see_also"},
        {"type": "alias", "entry": "svc:a", "alias": "alpha service"},
        {**C, "lifetime": {"resolved_by": "0000aaaa"}},
    )
    with pytest.raises(ImportFailed) as failed:
        import_bank(bank, text)
    assert [(e["line"], e.get("code")) for e in line_errors(failed)] == [
        (1, "entry_deleted"),
        (2, "entry_deleted"),
        (3, "entry_deleted"),
    ]


def test_restore_deleted_restores_it_in_the_import_operation(bank):
    import_bank(bank, jl(A, B))
    delete_entry(bank, "0000aaaa", "obsolete")
    text = jl(
        {**A, "title": "Alpha restored"},
        B,
        {"type": "edge", "from": "0000bbbb", "to": "svc:a", "relation": "see_also"},
    )
    result = import_bank(bank, text, restore_deleted=True)
    assert result["restored"] == 1 and result["updated"] == 0 and result["unchanged"] == 1
    entry = Entry.objects.get(bank=bank, short_id="0000aaaa")
    assert entry.status == "live" and entry.title == "Alpha restored"
    op = Operation.objects.get(pk=result["operation"])
    restored_row = entry.history.filter(operation=op).get()
    assert restored_row.status == "live" and restored_row.history_type == "~"
    assert Edge.objects.filter(bank=bank, to_entry=entry, invalidated_at__isnull=True).count() == 1
    # The same file again changes nothing.
    again = import_bank(bank, text, restore_deleted=True)
    assert again["operation"] is None and "restored" not in again


def test_merged_away_names_resolve_to_the_survivor(bank):
    import_bank(bank, jl(A, B, C))
    merge_entries(bank, "0000aaaa", "0000bbbb", "same thing")
    text = jl(
        {"type": "edge", "from": "0000cccc", "to": "0000bbbb", "relation": "see_also"},
        {"type": "alias", "entry": "0000bbbb", "alias": "beta service"},
    )
    result = import_bank(bank, text)
    assert result["edges_created"] == 1
    edge = Edge.objects.get(bank=bank, invalidated_at__isnull=True, from_entry__short_id="0000cccc")
    assert edge.to_entry.short_id == "0000aaaa"
    assert Alias.objects.get(bank=bank, surface="beta service").entry.short_id == "0000aaaa"


def test_an_entry_line_for_a_merged_away_entry_names_the_survivor(bank):
    import_bank(bank, jl(A, B))
    merge_entries(bank, "0000aaaa", "0000bbbb", "same thing")
    with pytest.raises(ImportFailed) as failed:
        import_bank(bank, jl(B))
    (error,) = line_errors(failed)
    assert error["code"] == "entry_merged" and "0000aaaa" in error["message"]
    assert Entry.objects.get(bank=bank, short_id="0000bbbb").status == "merged"


def test_command_refuses_then_restores_with_the_flag(bank, tmp_path):
    import_bank(bank, jl(A))
    delete_entry(bank, "0000aaaa", "obsolete")
    source = tmp_path / "again.jsonl"
    source.write_text(jl(A))
    with pytest.raises(CommandError, match="entry_deleted|deleted"):
        call_command("import_bank", bank.slug, str(source))
    call_command("import_bank", bank.slug, str(source), "--restore-deleted")
    assert Entry.objects.get(bank=bank, short_id="0000aaaa").status == "live"


def _run_import(client, body, django_capture_on_commit_callbacks, **extra):
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/v1/banks/acme/import", **body, **extra)
    assert response.status_code == 202, response.content
    return client.get(f"/api/v1/jobs/{response.json()['job']}").json()


def test_rest_import_of_a_deleted_id_fails_per_line_then_restores(
    bank, token_client, django_capture_on_commit_callbacks
):
    curator = token_client(bank)
    text = jl(A, B)
    body = {"data": text, "content_type": "application/x-ndjson"}
    assert _run_import(curator, body, django_capture_on_commit_callbacks)["status"] == "succeeded"
    assert curator.delete("/api/v1/banks/acme/entries/0000aaaa?reason=gone").status_code == 200
    job = _run_import(curator, body, django_capture_on_commit_callbacks)
    assert job["status"] == "failed"
    assert [(e["line"], e.get("code")) for e in job["errors"]] == [(1, "entry_deleted")]
    response = curator.post("/api/v1/banks/acme/import?restore_deleted=maybe", **body)
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_input"
    with django_capture_on_commit_callbacks(execute=True):
        response = curator.post("/api/v1/banks/acme/import?restore_deleted=true", **body)
    job = curator.get(f"/api/v1/jobs/{response.json()['job']}").json()
    assert job["status"] == "succeeded" and job["result"]["restored"] == 1
    assert curator.get("/api/v1/banks/acme/entries/0000aaaa").json()["status"] == "live"


def test_rest_multipart_import_takes_restore_deleted_as_a_form_field(
    bank, token_client, django_capture_on_commit_callbacks
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    import_bank(bank, jl(A))
    delete_entry(bank, "0000aaaa", "obsolete")
    curator = token_client(bank, scopes="curate")
    upload = SimpleUploadedFile("a.jsonl", jl(A).encode(), content_type="application/x-ndjson")
    with django_capture_on_commit_callbacks(execute=True):
        response = curator.post(
            "/api/v1/banks/acme/import",
            {"file": upload, "restore_deleted": "true"},
            format="multipart",
        )
    assert response.status_code == 202, response.content
    job = curator.get(f"/api/v1/jobs/{response.json()['job']}").json()
    assert job["status"] == "succeeded" and job["result"]["restored"] == 1


def test_a_line_upserting_by_key_with_another_id_binds_edges_to_the_entry(bank):
    import_bank(bank, jl(A, B))
    renamed = {**A, "id": "0000dddd", "title": "Alpha by key"}
    text = jl(renamed, {"type": "edge", "from": "0000dddd", "to": "0000bbbb", "relation": "cites"})
    result = import_bank(bank, text)
    assert result["updated"] == 1 and result["edges_created"] == 1
    edge = Edge.objects.get(bank=bank, invalidated_at__isnull=True)
    assert edge.from_entry.short_id == "0000aaaa" and edge.from_entry.title == "Alpha by key"


def test_creating_an_entry_with_a_deleted_entrys_key_says_so(bank, client_rw):
    import_bank(bank, jl(A))
    delete_entry(bank, "0000aaaa", "obsolete")
    body = {"title": "Alpha anew", "content": "The alpha service.", "key": "svc:a"}
    response = client_rw.post(
        "/api/v1/banks/acme/entries", {**body, "lifetime": {"durable": True}}, format="json"
    )
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "duplicate_key" and "deleted" in error["message"]
