"""GET …/entries/{id}?as_of= answers what the bank believed then (entry fields and edges)."""

import datetime as dt

import pytest
from django.utils import timezone

from graph.models import Edge

pytestmark = pytest.mark.django_db


def test_entry_detail_as_of(client_rw, make_entry, linked):
    entry = make_entry("Original title")
    other = make_entry("Other")
    created = timezone.now()
    edge = linked(entry, other, "see_also")
    Edge.objects.filter(pk=edge.pk).update(recorded_at=created + dt.timedelta(seconds=1))
    client_rw.patch(
        f"/api/v1/banks/acme/entries/{entry.short_id}", {"title": "New title"}, format="json"
    )
    now = client_rw.get(f"/api/v1/banks/acme/entries/{entry.short_id}").json()
    assert now["title"] == "New title" and len(now["edges"]) == 1
    then = client_rw.get(
        f"/api/v1/banks/acme/entries/{entry.short_id}", {"as_of": created.isoformat()}
    )
    assert then.status_code == 200, then.content
    body = then.json()
    assert body["title"] == "Original title" and body["edges"] == []
    naive = client_rw.get(
        f"/api/v1/banks/acme/entries/{entry.short_id}", {"as_of": "2026-01-01T00:00:00"}
    )
    assert naive.status_code == 400
    before = client_rw.get(
        f"/api/v1/banks/acme/entries/{entry.short_id}", {"as_of": "2000-01-01T00:00:00Z"}
    )
    assert before.status_code == 404 and before.json()["error"]["code"] == "entry_not_found"
