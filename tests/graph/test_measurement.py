"""The measurement labs of tests/labs (run by bench/fold_replay.py and bench/hop_lab.py): the
replay of logged queries and the one-hop lab with its leak check."""

import random

import pytest

from graph.models import Edge, QueryLog
from graph.retrieval.fold import neighbors_of
from graph.retrieval.query import QueryParams, run_query
from kb.models import Entry
from kb.services.embedding import embed_entries, embed_query
from tests.labs.hoplab import (
    SYSTEMS,
    Crowd,
    _b_text,
    build_tasks,
    leak_check,
    question_words_in_b,
    run_lab,
)
from tests.labs.replay import replay

pytestmark = pytest.mark.django_db


def test_replay_reports_pointers_and_loses_nothing(bank, make_entry, linked, hashing_embedder):
    base = [
        make_entry(f"deploy rollout step {i}", content=f"deploy rollout canary step {i}")
        for i in range(12)
    ]
    for x, y in zip(base, base[1:], strict=False):
        linked(x, y, "see_also", note="Next part of the same rollout.")
    far = make_entry("pager escalation policy", content="who gets paged")
    linked(base[0], far, "cites")
    embed_entries(Entry.objects.filter(bank=bank), embedder=hashing_embedder)
    for q in ("deploy rollout", "canary step", "pager escalation"):
        run_query(bank, QueryParams(q, limit=4))
    assert QueryLog.objects.filter(bank=bank).count() == 3
    usage_before = list(Entry.objects.filter(bank=bank).values_list("usage_count", flat=True))
    report = replay(bank, days=1)
    summary = report.summary()
    assert summary["queries"] == 3 and summary["entries_lost"] == 0, report.lost
    assert summary["share_with_folded_pointer_pct"] > 0 and summary["entries_gained_per_query"] > 0
    assert summary["note_coverage_pct"] > 0
    # replaying neither logs nor counts usage
    assert QueryLog.objects.filter(bank=bank).count() == 3
    assert (
        list(Entry.objects.filter(bank=bank).values_list("usage_count", flat=True)) == usage_before
    )


@pytest.mark.model
def test_hop_lab_hands_over_the_hop_with_the_real_model(bank):
    tasks = build_tasks(bank, 6)
    embed_entries(Entry.objects.filter(bank=bank))
    report = run_lab(bank, tasks)
    assert report.leaks == []
    assert report.kept >= 4  # B must not be in the flat top-8 for these tasks
    assert report.b_in_fold == report.kept
    assert report.tangent_in_fold == report.tangent_notes_marked


def test_leak_check_catches_a_note_that_says_what(bank, hashing_embedder):
    tasks = build_tasks(bank, 2)
    assert leak_check(bank, tasks) == []
    edge = Edge.objects.filter(to_entry=tasks[0].a, type__name="clarifies").get()
    Edge.objects.filter(pk=edge.pk).update(note=f"The nonce is {tasks[0].token}.")
    assert leak_check(bank, tasks) == [f"{tasks[0].token} appears in an edge note"]


def test_pertinent_b_shares_no_question_word_and_its_note_says_how_it_bears(bank, hashing_embedder):
    crowd = Crowd(4, 0.5, "before", "pertinent")
    tasks = build_tasks(bank, 3, crowd=crowd)
    assert leak_check(bank, tasks, b_shares_words=False) == []
    for i, t in enumerate(tasks):
        assert not question_words_in_b(t) and t.token in t.b.content
        assert SYSTEMS[i] not in f"{t.b.title} {t.b.content}".lower()
        ab = Edge.objects.get(bank=bank, from_entry=t.b, to_entry=t.a)
        assert SYSTEMS[i] in ab.note  # the note says how B bears on the task
        notes = list(
            Edge.objects.filter(bank=bank, to_entry=t.a)
            .exclude(note="")
            .values_list("note", flat=True)
        )
        notes += list(
            Edge.objects.filter(bank=bank, from_entry=t.a)
            .exclude(note="")
            .values_list("note", flat=True)
        )
        assert len(notes) == len(set(notes)) == 4 + 2  # crowd, A-B and tangent, distinct
    title, content = _b_text("opaque", 0, "Heron-0", "PROOF-X", SYSTEMS[0], random.Random(1))
    assert "PROOF-X" in content and SYSTEMS[0] not in f"{title} {content}".lower()


@pytest.mark.model
def test_crowded_hop_lab_hands_over_a_pertinent_hop_with_the_real_model(bank):
    crowd = Crowd(10, 0.5, "before", "pertinent")
    tasks = build_tasks(bank, 6, crowd=crowd)
    report = run_lab(bank, tasks, crowd=crowd)
    assert report.leaks == [] and report.flat_entries_lost == 0
    assert report.kept >= 4  # B must not be in the flat top-8 for these tasks
    assert report.b_in_fold == report.kept
    # The neighbour statement itself: with B outside the pool, A's 3 slots and its hop lines
    # among 12 noted edges (10 crowd edges written first) must hand over B with its note, and
    # the note ranks it into the slots for most tasks.
    in_slots = 0
    for t in tasks:
        vector = embed_query(t.query)
        chosen = neighbors_of(bank, [t.a.pk], [t.a.pk], 3, query=t.query, query_vector=vector)
        handed = [n for n in chosen.neighbors + chosen.hops if n.entry_id == t.b.pk]
        assert handed and handed[0].note, t.query
        in_slots += t.b.pk in [n.entry_id for n in chosen.neighbors]
    assert in_slots >= len(tasks) - 1
