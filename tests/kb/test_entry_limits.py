"""Entry limits (issue 22, API.md "Changes: Sizes"): declared once in kb.entry_limits, per-bank
overrides in the bank's settings, 400 too_long naming the field and the limit on every write
path (REST POST and PATCH, import lines, admin form)."""

from __future__ import annotations

import json

import pytest

from kb.entry_limits import DEFAULT_LIMITS, HARD_LIMITS, ITEM_CHARS, limits_for
from kb.models import Entry
from kb.services.bulk import ImportFailed, import_bank

URL = "/api/v1/banks/acme/entries"


def _body(**fields) -> dict:
    return {
        "title": "Sandbox card numbers",
        "content": "Strip spaces first.",
        "kind": "gotcha",
        "lifetime": {"durable": True},
        **fields,
    }


def test_one_declaration_feeds_the_model_and_the_schema(client_rw):
    assert Entry._meta.get_field("title").max_length == HARD_LIMITS["title"]
    assert Entry._meta.get_field("systems").base_field.max_length == ITEM_CHARS["systems"]
    schema = client_rw.get("/api/v1/schema/?format=json").json()
    write = schema["components"]["schemas"]["EntryWriteRequest"]["properties"]
    assert write["content"]["maxLength"] == DEFAULT_LIMITS["content"]
    assert write["title"]["maxLength"] == DEFAULT_LIMITS["title"]
    assert write["tasks"]["maxItems"] == DEFAULT_LIMITS["tasks"]


@pytest.mark.parametrize(
    ("field", "value", "limit"),
    [
        ("title", "t" * 301, 300),
        ("content", "word " * 5000, DEFAULT_LIMITS["content"]),
        ("useful_for", "u" * 501, 500),
    ],
)
def test_post_over_a_limit_is_400_too_long_naming_field_and_limit(client_rw, field, value, limit):
    response = client_rw.post(URL, _body(**{field: value}), format="json")
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "too_long"
    assert f"at most {limit} characters" in error["fields"][field]
    assert field in error["message"]
    assert not Entry.objects.exists()


def test_list_fields_are_bounded_by_count_and_item_length(client_rw):
    many = client_rw.post(URL, _body(tasks=[f"task {i}" for i in range(31)]), format="json")
    assert many.json()["error"]["code"] == "too_long"
    assert "at most 30 items" in many.json()["error"]["fields"]["tasks"]
    long_item = client_rw.post(URL, _body(anchors={"files": ["a" * 501]}), format="json")
    assert long_item.json()["error"]["fields"]["anchors"].startswith("anchors.files[0]")
    steps = client_rw.post(URL, _body(steps=[{"do": "x" * 2100}]), format="json")
    assert "steps[0] must be at most 2000 characters" in steps.json()["error"]["fields"]["steps"]


def test_a_size_problem_next_to_another_problem_is_invalid_entry_naming_both(client_rw):
    response = client_rw.post(URL, _body(title="t" * 301, kind="banana"), format="json")
    error = response.json()["error"]
    assert error["code"] == "invalid_entry" and set(error["fields"]) == {"title", "kind"}


def test_patch_is_bounded_too(client_rw, make_entry):
    entry = make_entry("Short")
    response = client_rw.patch(f"{URL}/{entry.short_id}", {"summary": "s" * 501}, format="json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "too_long"
    entry.refresh_from_db()
    assert entry.summary == ""


def test_a_bank_sets_its_own_limits_within_the_hard_ceiling(bank, client_rw):
    bank.settings = {"entry_limits": {"content": 100, "tasks": 2, "title": 10_000}}
    bank.save()
    limits = limits_for(bank)
    assert limits.limit("content") == 100 and limits.limit("tasks") == 2
    assert limits.limit("title") == HARD_LIMITS["title"]  # never above the column
    response = client_rw.post(URL, _body(content="x " * 60), format="json")
    assert response.json()["error"]["fields"]["content"].startswith(
        "content must be at most 100 characters"
    )
    bank.settings = {"entry_limits": {"content": 30_000}}
    bank.save()
    text = "The sandbox refuses spaced card numbers. " + " ".join(
        f"Case {i} covers issuer {i * 7} with its own rule." for i in range(600)
    )
    assert DEFAULT_LIMITS["content"] < len(text) <= 30_000
    made = client_rw.post(URL, _body(content=text), format="json")
    assert made.status_code == 201, made.json()


def test_an_import_line_over_a_limit_is_a_line_error(bank):
    lines = [
        {"type": "entry", "title": "Fine", "content": "ok", "kind": "fact"},
        {"type": "entry", "title": "Too big", "content": "y" * 20_001, "kind": "fact"},
    ]
    with pytest.raises(ImportFailed) as failed:
        import_bank(bank, "\n".join(json.dumps(line) for line in lines))
    (error,) = failed.value.extra["errors"]
    assert error["line"] == 2 and error["code"] == "too_long"
    assert "content must be at most 20000 characters" in error["message"]
    assert not Entry.objects.exists()


def test_the_admin_form_shows_the_limit_on_the_field(bank, admin_client):
    from django.urls import reverse

    from kb.models import EntryKind, Operation

    fact = EntryKind.objects.get(bank__isnull=True, name="fact")
    count = Operation.objects.count()
    response = admin_client.post(
        reverse("admin:kb_entry_add"),
        {
            "bank": bank.pk,
            "title": "Admin entry",
            "content": "z" * 20_001,
            "kind": fact.pk,
            "durable": "on",
            "metadata": "{}",
            "_save": "Save",
        },
    )
    # The create action refused it while the page saved: nothing written, the limit shown
    # on the field it names.
    assert response.status_code == 200
    form = response.context["adminform"].form
    assert set(form.errors) == {"content"}, form.errors
    assert "content must be at most 20000 characters" in str(form.errors["content"])
    assert not Entry.objects.filter(bank=bank, title="Admin entry").exists()
    assert Operation.objects.count() == count


def test_reads_take_max_chars_and_mark_what_they_cut(client_rw, make_entry):
    long = make_entry("Long recipe", content="Run the export, then check the totals. " * 100)
    short = make_entry("Short fact", content="Fits.")
    whole = client_rw.get(f"{URL}/{long.short_id}").json()
    assert "truncated" not in whole and whole["content"] == long.content
    cut = client_rw.get(f"{URL}/{long.short_id}", {"max_chars": 120}).json()
    assert cut["truncated"] is True and len(cut["content"]) <= 120
    assert cut["content"].endswith("…[truncated]")
    assert long.content.startswith(cut["content"].removesuffix(" …[truncated]"))
    fits = client_rw.get(f"{URL}/{short.short_id}", {"max_chars": 120}).json()
    assert fits["truncated"] is False and fits["content"] == "Fits."
    batch = client_rw.get(URL, {"ids": f"{long.short_id},{short.short_id}", "max_chars": 120})
    truncated = [r["truncated"] for r in batch.json()["results"]]
    assert truncated == [True, False]
    bad = client_rw.get(f"{URL}/{long.short_id}", {"max_chars": "lots"})
    assert bad.status_code == 400
