"""An entry's metadata and steps in the admin as labelled fields (``kb.admin_metadata``): known
keys as form fields, other keys as name/value rows, steps one per line, problems in words, and
nothing shown as ``null``; what is saved goes through the entry service."""

from __future__ import annotations

import re

import pytest

from kb.models import Entry, Operation
from kb.services.entries import clean_entry_data, create_entry
from tests.kb.test_admin import change_url, entry_post_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def gotcha(bank):
    return create_entry(
        bank,
        clean_entry_data(
            bank,
            {
                "title": "Exports over 60 s get a 504",
                "content": "The gateway cuts idle streams after 60 s.",
                "kind": "gotcha",
                "metadata": {"likelihood": "high", "ticket": "OPS-12", "retries": 3, "tags": ["a"]},
                "lifetime": {"durable": True},
            },
        ),
    )


def _rows(html: str) -> list[tuple[str, str]]:
    keys = dict(re.findall(r'name="metadata__key_(\d+)" value="([^"]*)"', html))
    values = dict(re.findall(r'name="metadata__value_(\d+)" value="([^"]*)"', html))
    return [(keys[i], values[i].replace("&quot;", '"')) for i in sorted(keys, key=int)]


def _post(gotcha: Entry, rows: list[tuple[str, str]], **known) -> dict:
    data = entry_post_data(gotcha, metadata=None, steps=known.pop("steps", ""))
    data["metadata__rows"] = str(len(rows))
    for i, (key, value) in enumerate(rows):
        data[f"metadata__key_{i}"] = key
        data[f"metadata__value_{i}"] = value
    data.update({f"metadata__{k}": v for k, v in known.items()})
    return data


def test_metadata_and_steps_render_as_labelled_fields(admin_client, gotcha):
    html = admin_client.get(change_url(gotcha)).content.decode()
    content = html[html.index('id="id_title"') : html.index("Classification")]
    assert "null" not in content
    assert re.search(r'<textarea name="steps"[^>]*>\s*</textarea>', content)
    assert "Likelihood" in content and "Ends its process" in content
    assert re.search(r'<option value="high" selected>high</option>', content)
    rows = _rows(content)
    assert sorted(rows[:3]) == [("retries", "3"), ("tags", '["a"]'), ("ticket", "OPS-12")]
    assert rows[3:] == [("", "")] * 3  # blank rows to add names
    assert '{"likelihood"' not in content  # no raw JSON of the whole object


def test_saving_labelled_metadata_and_steps(admin_client, gotcha):
    rows = [("ticket", "OPS-13"), ("retries", "4"), ("tags", ""), ("owner", "platform"), ("", "")]
    data = _post(
        gotcha, rows, likelihood="low", impact="high", terminal="on", steps="Check\nRetry\n"
    )
    response = admin_client.post(change_url(gotcha), data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    gotcha.refresh_from_db()
    assert gotcha.metadata == {
        "terminal": True,
        "likelihood": "low",
        "impact": "high",
        "ticket": "OPS-13",
        "retries": 4,
        "tags": "",
        "owner": "platform",
    }
    assert gotcha.steps == ["Check", "Retry"]
    assert Operation.objects.filter(
        bank=gotcha.bank, kind="update", actor__startswith="staff:"
    ).exists()


def test_metadata_problems_are_said_in_words_and_change_nothing(admin_client, gotcha):
    before = dict(gotcha.metadata)
    rows = [("", "orphan value"), ("ticket", "A"), ("ticket", "B"), ("impact", "high")]
    response = admin_client.post(change_url(gotcha), _post(gotcha, rows, steps="{broken"))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["metadata"] == [
        "Row 1 has a value but no name: name it or clear the value.",
        "Row 3: “ticket” is named twice; keep one row.",
        "Row 4: “impact” has its own field above (Impact); use that.",
    ]
    assert "Line 1 starts with { but is not a JSON object" in errors["steps"][0]
    gotcha.refresh_from_db()
    assert gotcha.metadata == before


def test_an_unchanged_form_changes_nothing(admin_client, gotcha):
    html = admin_client.get(change_url(gotcha)).content.decode()
    data = _post(gotcha, _rows(html), likelihood="high")
    operations = Operation.objects.count()
    response = admin_client.post(change_url(gotcha), data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    gotcha.refresh_from_db()
    assert gotcha.metadata == {
        "likelihood": "high",
        "ticket": "OPS-12",
        "retries": 3,
        "tags": ["a"],
    }
    assert Operation.objects.count() == operations
