"""Merge proposals with the real embedding model: blocking, scoring, abstention, no merging."""

from io import StringIO

import pytest
from django.core.management import call_command

from config.celery import app as celery_app
from graph.curation.merge import merge_entries
from graph.curation.proposals import LIKELY_DUPLICATE, propose_merges
from graph.models import MergeProposal
from graph.tasks import propose_merges_task
from kb.models import Entry
from kb.services.embedding import embed_entries

pytestmark = [pytest.mark.django_db, pytest.mark.model]

CORPUS = {
    "dup_a": (
        "Playwright login to production needs HTTP/1.1",
        "When logging in to production from an end-to-end test, the session-create POST must "
        "use HTTP/1.1; curl needs --http1.1 because the page has a duplicated CSRF meta tag.",
    ),
    "dup_b": (
        "Production login from Playwright requires HTTP/1.1",
        "End-to-end tests that log in to production must send the session-create POST over "
        "HTTP/1.1 (curl --http1.1); a duplicated CSRF meta tag breaks HTTP/2.",
    ),
    "recipe": (
        "Playwright recipe for production login",
        "Use the loopback cookie-jar pattern: start a browser context, log in once through the "
        "form, save storage state and reuse it across tests.",
    ),
    "invoices": (
        "Nightly invoice export cron",
        "The invoice exporter runs nightly from cron and writes CSV files to the billing "
        "bucket; retries three times on S3 errors.",
    ),
    "vacuum": (
        "Postgres vacuum settings for the events table",
        "The events table needs autovacuum_vacuum_scale_factor 0.01 because it receives "
        "millions of inserts a day.",
    ),
}


@pytest.fixture
def corpus(bank, make_entry):
    entries = {
        name: make_entry(title, content=content) for name, (title, content) in CORPUS.items()
    }
    embed_entries(list(entries.values()))  # the real all-MiniLM-L6-v2 model
    return entries


@pytest.fixture
def eager_celery():
    """No broker in tests: tasks run in-process through ``.delay``."""
    saved = (celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates)
    celery_app.conf.update(task_always_eager=True, task_eager_propagates=True)
    yield
    celery_app.conf.update(task_always_eager=saved[0], task_eager_propagates=saved[1])


def proposals(bank):
    return {
        (p.keep.short_id, p.away.short_id): p
        for p in MergeProposal.objects.filter(bank=bank).select_related("keep", "away")
    }


def test_near_duplicates_get_one_pending_proposal_and_nothing_else(bank, corpus):
    run = propose_merges(bank)

    dup_a, dup_b = corpus["dup_a"], corpus["dup_b"]
    assert set(proposals(bank)) == {(dup_a.short_id, dup_b.short_id)}  # keep = the older one
    proposal = MergeProposal.objects.get(bank=bank)
    assert proposal.status == "pending"
    assert proposal.reasons["verdict"] == LIKELY_DUPLICATE
    assert proposal.reasons["cosine"] > 0.9
    assert "embedding" in proposal.reasons["blocked_by"]
    assert (run.pending, run.unclear, run.entries) == (1, 0, 5)
    assert run.proposals == [proposal.pk]
    # proposals never merge
    assert not Entry.objects.filter(bank=bank, status="merged").exists()


def test_rerun_adds_nothing(bank, corpus):
    propose_merges(bank)
    again = propose_merges(bank)
    assert (again.pending, again.unclear, again.proposals) == (0, 0, [])
    assert again.skipped_existing >= 1
    assert MergeProposal.objects.filter(bank=bank).count() == 1


def test_rejected_pair_is_not_proposed_again_in_either_order(bank, corpus):
    dup_a, dup_b = corpus["dup_a"], corpus["dup_b"]
    MergeProposal.objects.create(bank=bank, keep=dup_b, away=dup_a, score=0.9, status="rejected")
    run = propose_merges(bank)
    assert run.pending == 0 and MergeProposal.objects.filter(bank=bank).count() == 1


def test_keep_is_the_more_connected_entry(bank, corpus, linked):
    linked(corpus["dup_b"], corpus["recipe"], "see_also")
    propose_merges(bank)
    assert set(proposals(bank)) == {(corpus["dup_b"].short_id, corpus["dup_a"].short_id)}


def test_pair_already_typed_as_distinct_abstains_as_unclear(bank, corpus, linked):
    linked(corpus["dup_b"], corpus["dup_a"], "corrects")
    run = propose_merges(bank)
    proposal = MergeProposal.objects.get(bank=bank)
    assert (run.pending, run.unclear) == (0, 1)
    assert proposal.status == "unclear" and proposal.reasons["linked_as"] == ["corrects"]


def test_merged_entries_and_entries_without_vectors_are_skipped(bank, corpus, make_entry):
    merge_entries(bank, corpus["dup_a"].short_id, corpus["dup_b"].short_id, "duplicates")
    # a third wording with no vectors yet: shares title tokens but cannot be judged
    make_entry(corpus["dup_a"].title + " (copy)", content=CORPUS["dup_a"][1])
    run = propose_merges(bank)
    assert (run.pending, run.unclear, run.entries) == (0, 0, 4)
    assert not MergeProposal.objects.filter(bank=bank).exists()


def test_other_banks_are_never_paired(bank, other_bank, corpus, make_entry):
    twin = make_entry(CORPUS["dup_a"][0], content=CORPUS["dup_a"][1], in_bank=other_bank)
    embed_entries([twin])
    assert propose_merges(other_bank).proposals == []
    run = propose_merges(bank)
    assert run.pending == 1
    assert not MergeProposal.objects.filter(keep=twin).exists()
    assert not MergeProposal.objects.filter(away=twin).exists()


def test_command_and_eager_task_give_the_same_proposals(bank, corpus, eager_celery):
    out = StringIO()
    call_command("propose_merges", "acme", stdout=out, stderr=StringIO())
    assert "Proposed 1 likely duplicates and 0 unclear pairs" in out.getvalue()
    by_command = {k: (p.status, p.score) for k, p in proposals(bank).items()}
    MergeProposal.objects.filter(bank=bank).delete()

    result = propose_merges_task.delay(bank.pk).get()

    assert result["pending"] == 1 and result["bank"] == bank.pk
    assert {k: (p.status, p.score) for k, p in proposals(bank).items()} == by_command
    assert MergeProposal.objects.get(bank=bank).reasons["proposed_by"] == "celery:propose_merges"
