"""The title-trigram arm's tiers (kb migration 0022): a short query reads an index of the
titles short enough to match it. The tiers only choose an index: the arm must find exactly
the titles whose whole-title similarity reaches the threshold, as a scan of every title says.
"""

from __future__ import annotations

import itertools
import random

import pytest
from django.db import connection, transaction
from hypothesis import given
from hypothesis import strategies as st

from kb.models import Bank, Entry, EntryKind
from kb.prepared import fetch_prepared
from kb.services import search
from tests.plans import analyzed_plan, indexes_read
from tests.property_settings import property_settings

pytestmark = pytest.mark.django_db

PROPERTY = property_settings(40)
# Words sharing many trigrams (so titles and typos land on both sides of the threshold).
WORDS = ["data", "date", "update", "ledger", "pledge", "payment", "pay", "ment", "kube", "proxy"]
_banks = itertools.count(1)


def lexical_rows(bank: Bank, query: str) -> list[tuple]:
    sql = search._statement(True, (), bank.pk, 80, search.LEXICAL_SCAN)
    return fetch_prepared(sql, search._lexical_params(query))


def every_title_reaching(bank: Bank, query: str) -> dict[int, float]:
    """Entries whose title reaches the threshold, by computing each title's similarity."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, similarity(title, %s) FROM kb_entry WHERE bank_id = %s"
            " AND similarity(title, %s) >= %s",
            [query, bank.pk, query, search.TRIGRAM_THRESHOLD],
        )
        return dict(cursor.fetchall())


def trigram_count(text: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT cardinality(show_trgm(%s))", [text])
        return cursor.fetchone()[0]


title_words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=9)


def typo(draw, text: str) -> str:
    """``text``, or with one letter dropped."""
    if len(text) < 2 or not draw(st.booleans()):
        return text
    cut = draw(st.integers(0, len(text) - 1))
    return text[:cut] + text[cut + 1 :]


@PROPERTY
@given(titles=st.lists(title_words, min_size=1, max_size=40), data=st.data())
def test_the_arm_finds_exactly_the_titles_reaching_the_threshold(titles, data):
    """Queries of any length, often a part of a title (the near matches at a tier's edge)."""
    words = data.draw(
        st.one_of(
            st.lists(st.sampled_from(WORDS), min_size=1, max_size=7),
            st.sampled_from(titles).flatmap(
                lambda t: st.integers(0, len(t) - 1).flatmap(
                    lambda i: st.integers(i + 1, len(t)).map(lambda j: t[i:j])
                )
            ),
        )
    )
    query = typo(data.draw, " ".join(words))
    with transaction.atomic():
        bank = Bank.objects.create(slug=f"tiers-{next(_banks)}", name="Tiers")
        kind = EntryKind.objects.get(bank=None, name="fact")
        Entry.objects.bulk_create(
            Entry(bank=bank, kind=kind, short_id=f"{i:08x}", title=" ".join(words).capitalize())
            for i, words in enumerate(titles)
        )
        rows = lexical_rows(bank, query)
        expected = every_title_reaching(bank, query)
        transaction.set_rollback(True)
    full_text = [entry_id for entry_id, ts, _ in rows if ts is not None]
    found = {entry_id: trg for entry_id, _, trg in rows if trg is not None}
    if len(full_text) >= 10:  # the arm runs only when full text found few
        assert found == {}
    else:
        assert found.keys() == expected.keys()
        assert all(found[i] == pytest.approx(expected[i]) for i in found)


@pytest.mark.parametrize(
    "query, title",
    [
        ("kube proxy", "Kube proxy update"),  # 11 trigrams against 18 (similarity 0.61)
        ("payment ledger", "Payment ledger update data"),  # 15 against 26
    ],
)
def test_a_longer_title_than_the_shorter_tier_holds_is_found(bank, query, title):
    """A query just past the smaller tier's range matches a title too long for that
    tier's index: its own tier must hold it."""
    kind = EntryKind.objects.get(bank=None, name="fact")
    entry = Entry.objects.create(bank=bank, kind=kind, short_id="0000a001", title=title)
    assert trigram_count(title) > search.TITLE_TRIGRAM_TIERS[0][0]
    expected = every_title_reaching(bank, query)
    assert entry.pk in expected
    found = {entry_id: trg for entry_id, _, trg in lexical_rows(bank, query) if trg is not None}
    assert found.keys() == expected.keys()


def test_each_tier_is_exact_for_the_queries_it_takes():
    """A title reaching the threshold has at most (query trigrams) / threshold of its own:
    a tier's index holds every title a query of its range can match."""
    for title_at_most, query_at_most in search.TITLE_TRIGRAM_TIERS:
        assert query_at_most / search.TRIGRAM_THRESHOLD < title_at_most + 1
        assert (query_at_most + 1) / search.TRIGRAM_THRESHOLD >= title_at_most


def test_the_tiers_indexes_hold_the_titles_the_search_says():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'kb_entry'"
            " AND indexname LIKE 'kb_entry_title_trgm_%%'"
        )
        defined = dict(cursor.fetchall())
    assert set(defined) == {f"kb_entry_title_trgm_{k}" for k, _ in search.TITLE_TRIGRAM_TIERS}
    for title_at_most, _ in search.TITLE_TRIGRAM_TIERS:
        assert f"<= {title_at_most})" in defined[f"kb_entry_title_trgm_{title_at_most}"]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize(
    "query, tier", [("dta", 16), ("kubeproxy ledgr", 40), ("payment ledger pledge updat", None)]
)
def test_a_query_reads_no_title_index_but_its_tiers(bank, query, tier):
    """3,000 titles sharing the query's trigrams: a query may read its own tier's index or
    the index of every title, never a smaller tier's (which lacks titles it can match); a
    one-word query reads the short titles' index. (Which of the two a longer query's branch
    reads is PostgreSQL's choice: the 40-trigram index holds most of these titles, so it
    costs about what the whole one does.) The rows are committed and vacuumed, as a bank's
    are once autovacuum has seen them: GIN indexes keep fresh rows in a pending list whose
    size the planner knows only roughly, so inside a test's transaction the short titles'
    index was sometimes passed over for a larger one (the 40-trigram index once, the whole
    one once, in whole-suite runs)."""
    kind = EntryKind.objects.get(bank=None, name="fact")
    rng = random.Random(7)
    Entry.objects.bulk_create(
        Entry(
            bank=bank,
            kind=kind,
            short_id=f"{i:08x}",
            # one in ten a single word, the rest 5-9: the short titles' index is small
            title=" ".join(
                rng.choice(WORDS) for _ in range(1 if i % 10 == 0 else rng.randint(5, 9))
            ),
        )
        for i in range(3000)
    )
    count = trigram_count(query)
    wanted = next((k for k, q in search.TITLE_TRIGRAM_TIERS if count <= q), None)
    assert wanted == tier, f"{query!r} has {count} trigrams"
    sql = search._statement(True, (), bank.pk, 80, search.LEXICAL_SCAN)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE kb_entry")
        cursor.execute("SET enable_seqscan = off")  # the test asks which index
    try:
        read = indexes_read(analyzed_plan(sql, search._lexical_params(query)))
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET enable_seqscan")
    ran = {name for name in read if name.startswith("kb_entry_title_trgm")}
    own = f"kb_entry_title_trgm_{tier}" if tier else "kb_entry_title_trgm"
    assert ran <= {own, "kb_entry_title_trgm"}
    if tier == 16:
        assert ran == {own}
