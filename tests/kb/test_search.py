"""Search quality with the real embedding model (all-MiniLM-L6-v2) on a realistic corpus."""

import json
from pathlib import Path

import pytest

from kb.models import Entry
from kb.services.bulk import import_bank
from kb.services.embedding import embed_entries
from kb.services.search import lifecycle_multiplier, search_entries

DATA = Path(__file__).resolve().parent.parent / "data"
pytestmark = [pytest.mark.django_db, pytest.mark.model]


def _lines(name):
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


@pytest.fixture
def corpus(bank):
    import_bank(bank, (DATA / "search_corpus.jsonl").read_text())
    embed_entries(Entry.objects.filter(bank=bank))
    return {e.key: e for e in Entry.objects.filter(bank=bank)}


def test_corpus_is_100_entries(corpus):
    assert len(corpus) == 100


def test_paraphrased_queries_find_their_entry_first(bank, corpus):
    queries = _lines("search_queries.jsonl")
    misses = []
    for case in queries:
        result = search_entries(bank, case["query"], limit=5)
        top = result.entries[result.hits[0].entry_id]
        if top.key != case["expected"]:
            misses.append((case["query"], case["expected"], top.key))
    assert not misses, misses


def test_rare_token_needs_the_lexical_arm(bank, corpus):
    for case in _lines("lexical_cases.jsonl"):
        with_lexical = search_entries(bank, case["query"], limit=5, lexical=True)
        top = with_lexical.entries[with_lexical.hits[0].entry_id]
        assert top.key == case["expected"], case
        assert "lexical" in with_lexical.hits[0].matched_by


def test_lexical_arm_finds_entry_without_vectors(bank, corpus, make_entry):
    fresh = make_entry(
        "Pager escalation quirk", content="The flag ff_pager_tristate_zz9 must stay off."
    )
    assert not hasattr(fresh, "embedding") or fresh.embedding is None
    flat = search_entries(bank, "ff_pager_tristate_zz9", limit=10)
    assert fresh.pk not in [h.entry_id for h in flat.hits]
    lexical = search_entries(bank, "ff_pager_tristate_zz9", limit=10, lexical=True)
    assert lexical.hits[0].entry_id == fresh.pk
    assert lexical.hits[0].matched_by == ["lexical"]


def test_filters_on_kinds_and_systems(bank, corpus):
    kinds = {"gotcha"}
    result = search_entries(bank, "database connection problems", limit=10, kinds=list(kinds))
    assert result.hits and all(result.entries[h.entry_id].kind.name in kinds for h in result.hits)
    some_system = next(s for e in corpus.values() for s in e.systems)
    result = search_entries(bank, "how does this work", limit=10, systems=[some_system])
    assert result.hits and all(
        some_system in result.entries[h.entry_id].systems for h in result.hits
    )


def test_retired_entries_are_downranked_not_excluded(bank, corpus):
    case = _lines("search_queries.jsonl")[0]
    target = corpus[case["expected"]]
    before = search_entries(bank, case["query"], limit=100)
    score_before = next(h.score for h in before.hits if h.entry_id == target.pk)
    Entry.objects.filter(pk=target.pk).update(status="retired")
    after = search_entries(bank, case["query"], limit=100)
    hit = next(h for h in after.hits if h.entry_id == target.pk)
    assert hit.score == pytest.approx(score_before * 0.35, rel=1e-3)
    hidden = search_entries(bank, case["query"], limit=100, include_retired=False)
    assert target.pk not in [h.entry_id for h in hidden.hits]


def test_a_done_entry_fades_with_the_age_its_status_changed(bank, corpus):
    """The statement sends a row's status-change time only for done entries (the one status
    whose multiplier reads it): a done entry's score still fades with that age."""
    import datetime as dt

    from django.utils import timezone

    case = _lines("search_queries.jsonl")[0]
    target = corpus[case["expected"]]
    before = search_entries(bank, case["query"], limit=100)
    score_before = next(h.score for h in before.hits if h.entry_id == target.pk)
    for days, multiplier in ((45, 0.4), (400, 0.2)):
        changed = timezone.now() - dt.timedelta(days=days)
        Entry.objects.filter(pk=target.pk).update(status="done", status_changed_at=changed)
        after = search_entries(bank, case["query"], limit=100)
        hit = next(h for h in after.hits if h.entry_id == target.pk)
        assert hit.score == pytest.approx(score_before * multiplier, rel=1e-3), days


def test_search_never_crosses_banks(bank, other_bank, corpus):
    import_bank(other_bank, (DATA / "search_corpus.jsonl").read_text())
    embed_entries(Entry.objects.filter(bank=other_bank))
    result = search_entries(
        other_bank, "appointment reminders by text message", limit=20, lexical=True
    )
    assert result.hits
    assert {e.bank_id for e in result.entries.values()} == {other_bank.pk}


def test_lifecycle_multipliers():
    import datetime as dt

    now = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
    assert lifecycle_multiplier("live", now, None, now) == 1.0
    assert lifecycle_multiplier("retired", now, None, now) == 0.35
    assert lifecycle_multiplier("cancelled", now, None, now) == 0.15
    assert lifecycle_multiplier("done", now, None, now) == pytest.approx(0.6)
    assert lifecycle_multiplier("done", now - dt.timedelta(days=45), None, now) == pytest.approx(
        0.4
    )
    assert lifecycle_multiplier("done", now - dt.timedelta(days=400), None, now) == pytest.approx(
        0.2
    )
    assert lifecycle_multiplier("live", now, dt.date(2026, 5, 1), now) == 0.35


def test_a_misspelt_title_is_found_by_trigram_only_at_the_threshold(bank, make_entry):
    """Full text misses a misspelt title; the trigram arm finds it when the whole query is
    close to the title (similarity >= TRIGRAM_THRESHOLD), and not when it is only near."""
    from django.db import connection

    from kb.services.search import TRIGRAM_THRESHOLD

    title = "Kubernetes ingress certificate rotation"
    entry = make_entry(title, content="Rotate the wildcard certificate before it lapses.")
    close, near = "Kubernetes ingres certficate rotaton", "Kubernetes ingress tls expiry"
    with connection.cursor() as cursor:
        cursor.execute("SELECT similarity(%s, %s), similarity(%s, %s)", [title, close, title, near])
        sim_close, sim_near = cursor.fetchone()
    assert sim_close >= TRIGRAM_THRESHOLD > sim_near >= 0.3  # near passes pg_trgm's default
    hits = search_entries(bank, close, limit=5, lexical=True).hits
    found = [h for h in hits if h.entry_id == entry.pk and "lexical" in h.matched_by]
    assert found and found[0].lexical_score == pytest.approx(sim_close, abs=1e-6)
    hits = search_entries(bank, near, limit=5, lexical=True).hits
    assert not [h for h in hits if h.entry_id == entry.pk and "lexical" in h.matched_by]


def test_the_sessions_trigram_threshold_is_the_searchs():
    """The title-trigram arm's index condition (``%``) reads the session's threshold
    (config/settings.py sets it): above the search's own it would drop titles the search
    keeps, below it the index reads more for rows the explicit filter drops."""
    from django.db import connection

    from kb.services.search import TRIGRAM_THRESHOLD

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT similarity('a', 'a'), current_setting('pg_trgm.similarity_threshold')"
        )
        assert float(cursor.fetchone()[1]) == TRIGRAM_THRESHOLD


def test_the_search_is_one_prepared_statement_per_bank_and_answers_as_unprepared(
    bank, other_bank, corpus, settings
):
    """kb/services/search.py: the search statement is prepared on the server once per bank and
    shape on a connection (the bank and the arms' LIMITs written into its text, so the partial
    HNSW indexes apply under a generic plan), reused by later questions, and ranks exactly as
    the same statement run unprepared (KB_PREPARED_STATEMENTS off)."""
    from django.db import connection

    import_bank(other_bank, (DATA / "search_corpus.jsonl").read_text())
    embed_entries(Entry.objects.filter(bank=other_bank))
    cases = [
        (bank, "appointment reminders by text message", {"lexical": True}),
        (bank, "database connection problems", {"lexical": True, "kinds": ["gotcha"]}),
        (bank, "how does this work", {"lexical": False}),
        (other_bank, "appointment reminders by text message", {"lexical": True}),
    ]

    def ranking(result):
        return [(h.entry_id, h.score, h.relevance, h.matched_by) for h in result.hits]

    prepared = [ranking(search_entries(b, q, limit=10, **o)) for b, q, o in cases * 2]
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        searches = [row[0] for row in cursor.fetchall() if "WITH vc AS" in row[0]]
    assert len(searches) == 4, searches  # one per (bank, shape), reused by the second round
    assert sum(f"bank_id = {other_bank.pk} " in s for s in searches) == 1
    assert all("%(" not in s and "$1" in s for s in searches)  # the rest are parameters
    settings.KB_PREPARED_STATEMENTS = False
    plain = [ranking(search_entries(b, q, limit=10, **o)) for b, q, o in cases]
    assert all(plain) and plain == prepared[:4] == prepared[4:]


def test_the_lexical_arm_runs_beside_the_model_and_ranks_as_run_before_it(
    bank, corpus, monkeypatch
):
    """rank_and_embed sends the lexical arm's statement (prepared, pipeline mode) before the
    model runs and reads it after: the model is called with the statement already executed,
    and the ranking is the one a driver without pipelines gives (statement read at once)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from kb.services import search

    real, seen = search.embed_query, []

    def recording(text):
        seen.append([q["sql"].lstrip()[:10] for q in ctx.captured_queries])
        return real(text)

    monkeypatch.setattr(search, "embed_query", recording)
    queries = ["appointment reminders by text message", "Kubernetes ingres certficate"]

    def ranking(query):
        hits, vector = search.rank_and_embed(bank, query, limit=10, lexical=True)
        assert len(vector) == 384
        return [(h.entry_id, h.score, h.lexical_score, h.matched_by) for h in hits]

    with CaptureQueriesContext(connection) as ctx:
        piped = [ranking(q) for q in queries]
    assert seen == [["WITH ft AS"], ["WITH ft AS", "WITH vc AS", "WITH ft AS"]]
    assert any("lexical" in h[3] for h in piped[0])
    connection.ensure_connection()
    monkeypatch.setattr(type(connection.connection), "pipeline", None)
    with CaptureQueriesContext(connection) as ctx:
        plain = [ranking(q) for q in queries]
    assert plain == piped
