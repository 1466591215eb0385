"""The search's lexical arm on a side connection (kb/side.py, issue 24): the same candidates
and ranking as on the request's connection, never inside a transaction, never waiting for a
pool, and the connection closed or given back."""

import gc
import json
import threading
import time
from pathlib import Path

import pytest
from django.core.signals import request_finished
from django.db import connection, transaction
from psycopg_pool import ConnectionPool

from kb import side
from kb.models import Entry, EntryEmbedding
from kb.services import search
from kb.services.bulk import import_bank
from kb.services.embedding import embed_entries

DATA = Path(__file__).resolve().parent.parent / "data"
committed = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def _queries() -> list[str]:
    lines = (DATA / "lexical_cases.jsonl").read_text().splitlines()
    lexical = [json.loads(line)["query"] for line in lines if line.strip()]
    return [*lexical[:6], "database connection problems", "how do we deploy", RARE, "zz9 none"]


def _ranking(bank, query, **options):
    hits, vector = search.rank_and_embed(bank, query, limit=10, lexical=True, **options)
    return [
        (h.entry_id, h.score, h.relevance, h.vector_score, h.lexical_score, h.matched_by, h.rank)
        for h in hits
    ], list(vector)


@pytest.fixture
def counted(monkeypatch):
    """How many searches took the side path."""
    calls = []
    real = search._rows_beside

    def rows_beside(*args):
        calls.append(args[0])
        return real(*args)

    monkeypatch.setattr(search, "_rows_beside", rows_beside)
    return calls


RARE = "ff_pager_tristate_zz9"


@pytest.fixture
def committed_corpus(bank, hashing_embedder, make_entry):
    import_bank(bank, (DATA / "search_corpus.jsonl").read_text())
    embed_entries(Entry.objects.filter(bank=bank), embedder=hashing_embedder)
    fresh = make_entry("Pager quirk", content=f"The flag {RARE} stays off.")
    EntryEmbedding.objects.filter(entry=fresh).delete()  # no vector: found by words alone
    return bank


@committed
def test_the_side_path_ranks_as_the_request_connection_does(
    committed_corpus, other_bank, counted, settings
):
    bank = committed_corpus
    kinds = {"kinds": ["gotcha"]}
    cases = [(q, {}) for q in _queries()] + [(_queries()[0], kinds), (_queries()[1], kinds)]
    cases.append((_queries()[2], {"include_retired": False, "systems": ["nothing-such"]}))
    beside = [_ranking(bank, q, **o) for q, o in cases]
    assert len(counted) == len(cases)
    raw = counted[0]
    assert raw.info.backend_pid != connection.connection.info.backend_pid
    assert all(c is raw for c in counted)  # one per thread, kept
    settings.KB_SIDE_CONNECTION = False
    alone = [_ranking(bank, q, **o) for q, o in cases]
    assert len(counted) == len(cases)
    assert beside == alone
    lexical_only = {h[0] for r, _ in beside for h in r if h[5] == ["lexical"]}
    both = {h[0] for r, _ in beside for h in r if h[5] == ["vector", "lexical"]}
    assert lexical_only and both  # both merges of the two connections' rows are exercised
    assert _ranking(other_bank, _queries()[0])[0] == []  # the bank filter holds on both


@committed
def test_the_side_path_logs_its_statements_with_the_request(committed_corpus, counted):
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        _ranking(committed_corpus, _queries()[0])
    starts = [q["sql"].lstrip()[:10] for q in ctx.captured_queries]
    assert starts == ["WITH ft AS", "WITH vc AS", "WITH vc AS"] and len(counted) == 1


@committed
def test_inside_atomic_the_request_connection_is_used(bank, make_entry, counted):
    with transaction.atomic():
        fresh = make_entry("Pager quirk", content="The flag ff_pager_tristate_zz9 stays off.")
        with side.side_connection() as lent:
            assert lent is None
        hits, _ = _ranking(bank, "ff_pager_tristate_zz9", query_vector=[0.05] * 384)
        assert [h[0] for h in hits] == [fresh.pk]  # its uncommitted row is seen
    assert counted == []
    hits, _ = _ranking(bank, "ff_pager_tristate_zz9", query_vector=[0.05] * 384)
    assert [h[0] for h in hits] == [fresh.pk] and len(counted) == 1  # committed: beside


def test_a_test_transaction_never_lends_one(bank):
    assert connection.in_atomic_block
    with side.side_connection() as lent:
        assert lent is None


@committed
def test_off_never_lends_one(bank, settings):
    settings.KB_SIDE_CONNECTION = False
    with side.side_connection() as lent:
        assert lent is None
    settings.KB_SIDE_CONNECTION = True
    with side.side_connection() as lent:
        assert lent is not None


@pytest.fixture
def small_pool(monkeypatch):
    params = {**connection.get_connection_params(), "autocommit": True}
    pool = ConnectionPool(kwargs=params, min_size=1, max_size=1, timeout=5, open=True)
    pool.wait()
    monkeypatch.setattr(side, "_pool", lambda: pool)
    yield pool
    pool.close()


@committed
def test_a_pool_lends_a_free_connection_and_takes_it_back(bank, small_pool):
    with side.side_connection() as lent:
        assert lent is not None and lent.execute("SELECT 1").fetchone() == (1,)
        assert small_pool.get_stats()["pool_available"] == 0
    assert small_pool.get_stats()["pool_available"] == 1
    assert getattr(side._local, "held", None) is None  # nothing of its own opened


@committed
def test_an_exhausted_pool_falls_back_without_waiting(bank, make_entry, small_pool, counted):
    fresh = make_entry("Pager quirk", content="The flag ff_pager_tristate_zz9 stays off.")
    taken = small_pool.getconn()
    try:
        started = time.perf_counter()
        hits, _ = _ranking(bank, "ff_pager_tristate_zz9", query_vector=[0.05] * 384)
        assert time.perf_counter() - started < 1.0  # the pool's timeout is 5 s
        assert [h[0] for h in hits] == [fresh.pk] and counted == []
    finally:
        small_pool.putconn(taken)
    assert _ranking(bank, "ff_pager_tristate_zz9", query_vector=[0.05] * 384)[0] == hits
    assert len(counted) == 1 and small_pool.get_stats()["pool_available"] == 1


@committed
def test_the_threads_connection_is_closed_when_asked_and_after_a_closed_request(bank):
    with side.side_connection() as first:
        assert first is not None and not first.closed
    side.close_side_connection()
    assert first.closed
    with side.side_connection() as second:
        assert second is not first
    request_finished.send(sender=None)  # the request's connection kept (CONN_MAX_AGE)
    assert not second.closed and connection.connection is not None
    connection.close()
    request_finished.send(sender=None)
    assert second.closed


@committed
def test_the_threads_connection_is_closed_when_the_thread_ends(bank):
    lent = []

    def work():
        try:
            with side.side_connection() as raw:
                lent.append(raw)
        finally:
            connection.close()

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    del thread
    gc.collect()
    assert lent[0] is not None and lent[0].closed
