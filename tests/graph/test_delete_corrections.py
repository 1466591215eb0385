"""Deleting an entry that corrects or supersedes another (issue 22): the delete plan says so
(REST preview, admin confirmation page, the delete's own answer) and the corrected entry stays
marked: ``corrected_by``/``superseded_by`` naming the replacement when one exists, else
``correction_removed`` naming the deleted corrector — never silently a plain ``see_also``."""

import pytest
from django.urls import reverse

from graph.curation.delete import delete_entry, plan_delete
from graph.curation.revert import revert_operation
from graph.models import Edge

pytestmark = pytest.mark.django_db


@pytest.fixture
def corrected(make_entry, linked):
    """old ← corrects — fix; clarifier — clarifies → fix."""
    old = make_entry("Login 403 is an HTTP/2 problem")
    fix = make_entry("Login 403 is a duplicated CSRF meta tag")
    clarifier = make_entry("Scope of the CSRF fix")
    linked(fix, old, "corrects")
    linked(clarifier, fix, "clarifies")
    return old, fix, clarifier


def current(bank, source, target, relation):
    return Edge.objects.filter(
        bank=bank,
        from_entry=source,
        to_entry=target,
        type__name=relation,
        invalidated_at__isnull=True,
    )


def test_with_no_replacement_the_plan_and_the_entry_say_correction_removed(
    bank, corrected, client_rw
):
    old, fix, _ = corrected
    preview = client_rw.get(f"/api/v1/banks/acme/entries/{fix.short_id}/delete-plan")
    assert preview.status_code == 200
    (correction,) = preview.json()["corrections"]
    assert correction["relation"] == "corrects" and correction["carried_to"] is None
    assert correction["target"]["id"] == old.short_id
    assert "correction_removed" in correction["effect"]
    assert client_rw.get(f"/api/v1/banks/acme/entries/{old.short_id}").json()["corrected_by"] == (
        fix.short_id
    )

    response = client_rw.delete(f"/api/v1/banks/acme/entries/{fix.short_id}?reason=wrong")
    assert response.status_code == 200
    assert response.json()["corrections"][0]["carried_to"] is None
    shown = client_rw.get(f"/api/v1/banks/acme/entries/{old.short_id}").json()
    assert shown["corrected_by"] is None
    (removed,) = shown["correction_removed"]
    assert removed["by"] == fix.short_id and removed["relation"] == "corrects"

    # Reverting the delete brings the correction back, and the mark goes.
    revert_operation(bank, response.json()["operation"], "mistake")
    shown = client_rw.get(f"/api/v1/banks/acme/entries/{old.short_id}").json()
    assert shown["corrected_by"] == fix.short_id and shown["correction_removed"] == []


def test_a_superseding_entry_takes_the_correction_over(bank, corrected, make_entry, linked):
    old, fix, clarifier = corrected
    runbook = make_entry("Runbook: login 403")
    linked(runbook, fix, "supersedes")
    plan = plan_delete(bank, fix)
    (correction,) = plan.corrections
    assert correction.replacement.pk == runbook.pk
    result = delete_entry(bank, fix.short_id, "the runbook says it all")
    assert result.corrections[0].replacement.pk == runbook.pk
    carried = current(bank, runbook, old, "corrects").get()
    assert carried.source == "bridged" and fix.short_id in carried.note
    assert carried.evidence["bridged_over"]["id"] == fix.short_id
    # The clarifier's hop is still a neighbour link, but the correction is not one of those.
    assert not current(bank, runbook, old, "see_also").exists()
    assert current(bank, clarifier, old, "see_also").exists()


def test_a_superseded_supersession_is_carried_too(bank, make_entry, linked, client_rw):
    v1, v2, v3 = make_entry("Policy v1"), make_entry("Policy v2"), make_entry("Policy v3")
    linked(v2, v1, "supersedes")
    linked(v3, v2, "supersedes")
    preview = client_rw.get(f"/api/v1/banks/acme/entries/{v2.short_id}/delete-plan").json()
    assert preview["corrections"][0]["carried_to"]["id"] == v3.short_id
    client_rw.delete(f"/api/v1/banks/acme/entries/{v2.short_id}?reason=folded into v3")
    assert client_rw.get(f"/api/v1/banks/acme/entries/{v1.short_id}").json()["superseded_by"] == (
        v3.short_id
    )


def test_delete_plan_of_a_deleted_entry_is_409_and_unknown_is_404(bank, corrected, client_rw):
    _, fix, _ = corrected
    delete_entry(bank, fix.short_id, "gone")
    gone = client_rw.get(f"/api/v1/banks/acme/entries/{fix.short_id}/delete-plan")
    assert gone.status_code in (404, 409)
    missing = client_rw.get("/api/v1/banks/acme/entries/ffffffff/delete-plan")
    assert missing.status_code == 404


def test_admin_confirmation_page_shows_the_corrections_and_the_delete_keeps_the_mark(
    bank, corrected, admin_client, client_rw
):
    old, fix, _ = corrected
    url = reverse("admin:kb_entry_delete", args=[fix.pk])
    page = admin_client.get(url).content.decode()
    assert "Corrections and supersessions (1)" in page
    assert "correction_removed" in page and old.short_id in page
    admin_client.post(url, {"reason": "wrong"})
    fix.refresh_from_db()
    assert fix.status == "deleted"
    shown = client_rw.get(f"/api/v1/banks/acme/entries/{old.short_id}").json()
    assert shown["correction_removed"][0]["by"] == fix.short_id


def test_admin_page_names_the_replacement(bank, corrected, make_entry, linked, admin_client):
    _, fix, _ = corrected
    runbook = make_entry("Runbook: login 403")
    linked(runbook, fix, "supersedes")
    page = admin_client.get(reverse("admin:kb_entry_delete", args=[fix.pk])).content.decode()
    assert "carried over" in page and runbook.short_id in page
