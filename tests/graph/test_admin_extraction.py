"""The admin of edge extraction: the queue's actions and band page call the services; the entry
action queues a job; relation phrases are editable on the edge type."""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from graph.ingest.extract.confidence import BANDS, HIGH
from graph.ingest.extract.run import extract_edges
from graph.models import Edge, EdgeProposal, EdgeSource, EdgeType
from kb.models import Job, Operation

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def doc(bank, make_entry):
    make_entry("Sterile Supply Unit", kind="team", content="Cleans instruments.")
    make_entry("Theatres Directorate", kind="team", content="Runs theatres.")
    make_entry("Instrument Tracking", kind="service", content="Tracks trays.")
    return make_entry(
        "Theatre logistics",
        content=(
            "The Sterile Supply Unit is owned by the Theatres Directorate. "
            "Instrument Tracking requires the Sterile Supply Unit. "
            "It needs the Porter Pool."
        ),
    )


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_queue_lists_proposals_and_filters_by_band(admin_client, bank, doc):
    extract_edges(bank, entries=[doc.short_id])
    changelist = reverse("admin:graph_edgeproposal_changelist")
    response = admin_client.get(changelist)
    assert response.status_code == 200
    assert len(response.context["cl"].result_list) == 3
    assert "Bulk accept by confidence band" in response.content.decode()
    listed = list(response.context["cl"].result_list)
    assert [p.confidence for p in listed] == sorted((p.confidence for p in listed), reverse=True)
    assert listed[-1].to_text == "Porter Pool"  # the unresolved end ranks last
    by_band = {}
    for name, lo, _hi in BANDS:
        shown = admin_client.get(changelist, {"band": name}).context["cl"].result_list
        by_band[name] = {p.pk for p in shown}
        assert all(p.confidence >= lo for p in shown)
    assert set().union(*by_band.values()) == {p.pk for p in listed}  # every one in one band
    assert by_band["high"] and listed[-1].pk not in by_band["high"]
    body = response.content.decode()
    assert "largest contributions" in body and "an end unresolved" in body
    unresolved = admin_client.get(changelist, {"ends": "unresolved"})
    assert [p.to_text for p in unresolved.context["cl"].result_list] == ["Porter Pool"]


def test_accept_action_previews_then_accepts_and_revert_reopens(admin_client, bank, doc):
    extract_edges(bank, entries=[doc.short_id])
    changelist = reverse("admin:graph_edgeproposal_changelist")
    requires = EdgeProposal.objects.get(bank=bank, type__name="requires", to_entry__isnull=False)
    unresolved = EdgeProposal.objects.get(bank=bank, to_entry__isnull=True)
    response = admin_client.post(
        changelist,
        {"action": "accept_selected", ACTION_CHECKBOX_NAME: [requires.pk, unresolved.pk]},
        follow=True,
    )
    # The preview: how many and which, nothing written yet; the unresolved one is pointed to.
    assert "unresolved end" in " ".join(messages_of(response))
    assert response.context["preview"]["count"] == 1
    assert [p.pk for p in response.context["preview"]["rows"]] == [requires.pk]
    assert not Edge.objects.filter(bank=bank).exists()
    url = reverse("admin:graph_edgeproposal_accept_band")
    form = {"bank": bank.slug, "min_confidence": "0", "max_confidence": "1"}
    form["ids"] = f"{requires.pk},{unresolved.pk}"
    refused = admin_client.post(url, {**form, "_confirm": "1"})
    assert refused.status_code == 200 and "reason" in refused.context["form"].errors
    response = admin_client.post(url, {**form, "reason": "checked", "_confirm": "1"}, follow=True)
    assert "Accepted 1 proposal(s)" in " ".join(messages_of(response))
    edge = Edge.objects.get(bank=bank)
    assert edge.source == EdgeSource.EXTRACTED and edge.evidence["quote"] == requires.span
    requires.refresh_from_db()
    assert requires.status == "accepted" and requires.operation_id is not None

    # Reverting the batch returns its proposal to the queue (no "accepted" without an edge).
    from graph.curation.revert import revert_operation

    revert_operation(bank, requires.operation_id, "wrong batch")
    requires.refresh_from_db()
    assert (requires.status, requires.edge_id, requires.operation_id) == ("open", None, None)

    admin_client.post(
        changelist, {"action": "reject_selected", ACTION_CHECKBOX_NAME: [unresolved.pk]}
    )
    unresolved.refresh_from_db()
    assert unresolved.status == "rejected" and unresolved.decided_by.startswith("staff:")


def test_review_page_accepts_an_unresolved_end_with_the_picker(admin_client, bank, doc, make_entry):
    extract_edges(bank, entries=[doc.short_id])
    porters = make_entry("Porter Pool", kind="team", content="Moves patients.")
    unresolved = EdgeProposal.objects.get(bank=bank, to_entry__isnull=True)
    page = admin_client.get(reverse("admin:graph_edgeproposal_change", args=[unresolved.pk]))
    body = page.content.decode()
    assert page.status_code == 200 and unresolved.span in body and "Accept (write the edge)" in body
    assert "an end unresolved: -" in body  # why the confidence, term by term
    assert f"autocomplete/?bank={bank.pk}" in body  # the edge picker, scoped to the bank
    decide = reverse("admin:graph_edgeproposal_decide", args=[unresolved.pk])
    missing = admin_client.post(decide, {"_accept": "1"})
    assert missing.status_code == 200 and "did not resolve" in missing.content.decode()
    done = admin_client.post(decide, {"_accept": "1", "to_entry": porters.pk, "reason": "yes"})
    assert done.status_code == 302
    unresolved.refresh_from_db()
    assert unresolved.status == "accepted" and unresolved.edge.to_entry_id == porters.pk


def test_band_page_previews_then_accepts_the_band_as_one_operation(admin_client, bank, doc):
    extract_edges(bank, entries=[doc.short_id])
    url = reverse("admin:graph_edgeproposal_accept_band")
    assert admin_client.get(url).status_code == 200
    before = Operation.objects.count()
    band = {"bank": bank.slug, "min_confidence": str(HIGH), "max_confidence": "1"}
    preview = admin_client.post(url, {**band, "_preview": "1"})
    assert preview.context["preview"]["count"] == 2 and Operation.objects.count() == before
    assert "why (largest contributions)" in preview.content.decode()
    response = admin_client.post(url, {**band, "reason": "ok", "_confirm": "1"})
    assert response.status_code == 302
    assert Edge.objects.filter(bank=bank, source=EdgeSource.EXTRACTED).count() == 2
    assert Operation.objects.count() == before + 1
    assert EdgeProposal.objects.filter(bank=bank, status="open").count() == 1  # the unresolved


def test_entry_action_queues_an_extraction_job(
    admin_client, bank, doc, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:kb_entry_changelist"),
            {"action": "extract_edges_from_selected", ACTION_CHECKBOX_NAME: [doc.pk]},
            follow=True,
        )
    assert response.status_code == 200
    job = Job.objects.get(bank=bank, kind="extract_edges")
    assert job.status == "succeeded" and job.result["queued"] == 3
    assert any(job.public_id in m for m in messages_of(response))
    assert EdgeProposal.objects.filter(bank=bank, source_entry=doc).count() == 3


def test_relation_phrases_are_editable_on_the_edge_type(admin_client, bank):
    etype = EdgeType.objects.create(bank=bank, name="depends_on", inverse="dependency_of")
    url = reverse("admin:graph_edgetype_change", args=[etype.pk])
    page = admin_client.get(url)
    assert page.status_code == 200 and 'name="phrases"' in page.content.decode()
    response = admin_client.post(
        url,
        {
            "name": "depends_on",
            "inverse": "dependency_of",
            "fold_role": "",
            "neighbor_priority": 10,
            "score_weight": 1.0,
            "workflow_role": "",
            "description": "",
            "phrases": "depends on,relies on",
            "inverse_phrases": "",
        },
    )
    assert response.status_code == 302
    etype.refresh_from_db()
    assert etype.phrases == ["depends on", "relies on"]
