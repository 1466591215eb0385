"""The admin of edge extraction: the queue's actions and band page call the services; the entry
action queues a job; relation phrases are editable on the edge type."""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

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
    high = admin_client.get(changelist, {"band": "high"})
    assert {p.confidence for p in high.context["cl"].result_list} == {0.9}
    unresolved = admin_client.get(changelist, {"ends": "unresolved"})
    assert [p.to_text for p in unresolved.context["cl"].result_list] == ["Porter Pool"]


def test_accept_and_reject_actions_call_the_service(admin_client, bank, doc):
    extract_edges(bank, entries=[doc.short_id])
    changelist = reverse("admin:graph_edgeproposal_changelist")
    requires = EdgeProposal.objects.get(bank=bank, type__name="requires", to_entry__isnull=False)
    unresolved = EdgeProposal.objects.get(bank=bank, to_entry__isnull=True)
    response = admin_client.post(
        changelist,
        {"action": "accept_selected", ACTION_CHECKBOX_NAME: [requires.pk, unresolved.pk]},
        follow=True,
    )
    text = " ".join(messages_of(response))
    assert "Accepted 1 proposal(s)" in text and "unresolved end" in text
    edge = Edge.objects.get(bank=bank)
    assert edge.source == EdgeSource.EXTRACTED and edge.evidence["quote"] == requires.span
    requires.refresh_from_db()
    assert requires.status == "accepted" and requires.operation_id is not None

    admin_client.post(
        changelist, {"action": "reject_selected", ACTION_CHECKBOX_NAME: [unresolved.pk]}
    )
    unresolved.refresh_from_db()
    assert unresolved.status == "rejected" and unresolved.decided_by.startswith("staff:")


def test_band_page_accepts_the_band_as_one_operation(admin_client, bank, doc):
    extract_edges(bank, entries=[doc.short_id])
    url = reverse("admin:graph_edgeproposal_accept_band")
    assert admin_client.get(url).status_code == 200
    before = Operation.objects.count()
    response = admin_client.post(
        url, {"bank": bank.pk, "min_confidence": "0.85", "max_confidence": "1", "reason": "ok"}
    )
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
