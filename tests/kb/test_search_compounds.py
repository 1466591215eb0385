"""Keyword queries and compound words (issue 21): an entry that writes ``read/write``,
``fail-over``, ``settings.toml`` or ``billing.jobs.nightly`` is found by a query naming the
parts, and a query naming the compound finds an entry that writes the parts apart. Such a
match is an exact lexical hit: the answer is never ``no_good_match`` and never ``low``."""

import pytest

from graph.retrieval.query import QueryParams, run_query
from kb.models import Entry
from kb.services.embedding import embed_entries
from kb.services.search import compound_parts, rank_candidates

pytestmark = pytest.mark.django_db

# (title, content, query) — the query names the compound's parts, or the compound itself
CASES = [
    ("Read/write split of the ledger replicas", "Route reports to the replica.", "read write"),
    ("Fail-over drill for the queue brokers", "Run it each quarter.", "failover drill"),
    ("Where settings.toml is read from", "The loader looks in three places.", "settings toml"),
    ("Nightly job timing", "billing.jobs.nightly runs at 02:00 UTC.", "billing jobs nightly"),
    ("Badge reader and door controller", "The badge reader talks to the door.", "badge/door"),
    ("Scanner pairing", "Pair the scanner over TCP/IP, never over serial.", "tcp ip scanner"),
]


def test_compound_parts_splits_only_joined_words():
    assert compound_parts("lockout/tagout of a pump") == "lockout tagout of a pump"
    assert compound_parts("kb.services.search") == "kb services search"
    assert compound_parts("fail-over") == "fail over"
    assert compound_parts("fail-over", closed=True) == "failover"
    assert compound_parts("-legacy deploy") == "-legacy deploy"  # websearch negation kept
    assert compound_parts("end of sentence. Next") == "end of sentence. Next"


@pytest.mark.parametrize(("title", "content", "query"), CASES)
def test_the_lexical_arm_matches_either_reading(bank, make_entry, title, content, query):
    target = make_entry(title, content=content)
    for i in range(5):
        make_entry(f"Seating plan {i} for the quarterly offsite", content="Tables and chairs.")
    hits = rank_candidates(bank, query, limit=5, lexical=True, query_vector=[0.0] * 384)
    assert hits and hits[0].entry_id == target.pk, query
    assert hits[0].lexical_score is not None


def test_without_the_parts_the_compound_alone_was_not_found(bank, make_entry):
    # The reading PostgreSQL gives a compound by itself: one token, which the parts miss.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT to_tsvector('english', 'Read/write split') @@ "
            "websearch_to_tsquery('english', 'read write')"
        )
        assert cursor.fetchone()[0] is False


def test_a_keyword_query_on_a_compound_is_answered(bank, make_entry, hashing_embedder):
    target = make_entry(
        "Lock-out/tag-out of the conveyor drive",
        content="Isolate the drive at the panel, then hang your padlock and tag on it.",
    )
    for i in range(12):
        make_entry(f"Unrelated recipe {i} about quarterly budgets and seating plans")
    embed_entries(Entry.objects.filter(bank=bank), embedder=hashing_embedder)
    bank.settings = {**bank.settings, "relevance_floor": 0.99, "confidence_high": 0.995}
    bank.save()  # out of the vectors' reach: only the lexical arm can answer
    for query in ("tag out conveyor", "lock-out tag-out", "lock out/tag out"):
        body = run_query(bank, QueryParams(query), record=False)
        top3 = {r["id"]: r for r in body["results"][:3]}
        assert target.short_id in top3, query
        assert body["no_good_match"] is False, query
        assert top3[target.short_id]["confidence"] in ("medium", "high"), query
