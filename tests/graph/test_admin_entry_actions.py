"""The admin's entry page runs the entry actions (issue 23): a refusal while the page saves —
by the edit action or by an inline row's link action — rolls the whole save back and shows
the refusal on the page; nothing is half-written."""

from __future__ import annotations

import pytest
from django.urls import reverse

from graph.models import Edge
from kb.models import Entry, Operation
from tests.graph.admin_support import (  # noqa: F401 - fast_passwords is an autouse fixture
    core,
    fast_passwords,
)
from tests.graph.test_admin import entry_post_data, management

pytestmark = pytest.mark.django_db


def test_a_refused_inline_row_rolls_back_the_entry_edit_and_the_other_rows(
    admin_client, bank, make_entry
):
    entry, target = make_entry("Payments"), make_entry("Ledger")
    url = reverse("admin:kb_entry_change", args=[entry.pk])
    operations, edges = Operation.objects.count(), Edge.objects.count()
    row = {"type": str(core("requires").pk), "to_entry": str(target.pk), "label": "", "note": ""}
    data = {
        **entry_post_data(entry),
        "title": "Payments service",
        **management("edges_out", [], 2),
        # The same edge twice: each row passes the form's checks, the second link is refused
        # (duplicate_edge) after the title and the first edge were written.
        **{f"edges_out-0-{k}": v for k, v in row.items()},
        **{f"edges_out-1-{k}": v for k, v in row.items()},
        **management("edges_in", [], 0),
        **management("aliases", [], 0),
    }
    response = admin_client.post(url, data)
    assert response.status_code == 200
    errors = str(response.context["adminform"].form.non_field_errors())
    assert "New edge: The edge" in errors and "already exists" in errors
    assert Entry.objects.get(pk=entry.pk).title == "Payments"
    assert Edge.objects.count() == edges
    assert Operation.objects.count() == operations

    data["edges_out-TOTAL_FORMS"] = "1"  # one row: the edit and the link land together
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Entry.objects.get(pk=entry.pk).title == "Payments service"
    assert Edge.objects.filter(from_entry=entry, to_entry=target).count() == 1
    kinds = list(Operation.objects.order_by("pk").values_list("kind", flat=True)[operations:])
    assert kinds == ["update", "link"]


def test_the_edit_action_refusal_is_shown_on_its_field_and_writes_nothing(
    admin_client, bank, make_entry
):
    entry = make_entry("Payments")
    make_entry("Ledger", key="svc:ledger")
    url = reverse("admin:kb_entry_change", args=[entry.pk])
    operations = Operation.objects.count()
    response = admin_client.post(url, {**entry_post_data(entry), "key": "svc:ledger"})
    assert response.status_code == 200
    assert "key" in response.context["adminform"].form.errors
    assert Entry.objects.get(pk=entry.pk).key is None
    assert Operation.objects.count() == operations
    # An unchanged form is no edit: no action, no operation.
    response = admin_client.post(url, entry_post_data(entry))
    assert response.status_code == 302
    assert Operation.objects.count() == operations
