"""Query-aware neighbour selection (issue 15, API.md step 7 as amended): after the pinned
replacement, neighbours and folded pointers are ordered by relevance to the query, never by
insertion order; a hub costs a bounded read, reported in stats."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from graph.retrieval import query as query_service
from graph.retrieval.query import QueryParams, run_query
from kb.models import Entry
from kb.services.embedding import embed_entries
from kb.services.search import ScoredEntry
from tests.graph.ranking_support import ranked_and_embedded

pytestmark = pytest.mark.django_db

DISTRACTORS = [
    "Cafeteria menu for the spring quarter",
    "Badge renewal dates for the facilities team",
    "Colour palette of the quarterly slide deck",
    "Holiday rota of the support desk",
    "Printer toner ordering on the third floor",
]


@pytest.fixture
def ranked(monkeypatch, hashing_embedder):
    def use(*entries, relevance=None):
        def fake_rank(bank, query, *, limit, **_):
            hits = [
                ScoredEntry(
                    e.pk,
                    1.0 - i / 100,
                    (relevance or {}).get(e.pk, 0.5),
                    0.5,
                    None,
                    ["vector"],
                    i + 1,
                )
                for i, e in enumerate(entries)
            ]
            return hits[:limit]

        monkeypatch.setattr(query_service, "rank_and_embed", ranked_and_embedded(fake_rank))

    return use


def _crowded(bank, make_entry, linked, hashing_embedder, *, needed_first: bool):
    a, other = make_entry("Rotate the ledger signing key"), make_entry("Unrelated result")
    needed = make_entry(
        "Ledger signing key quirk",
        content="The ledger signing key rotation needs the nonce header set exactly.",
    )
    crowd = [make_entry(t, content=f"{t}, kept for reference.") for t in DISTRACTORS]
    note = "Read before running this: a detail you must get exactly right."
    if needed_first:
        linked(needed, a, "clarifies", note=note)
    for c in crowd:
        linked(c, a, "clarifies", note="Background about the people around this recipe.")
    if not needed_first:
        linked(needed, a, "clarifies", note=note)
    embed_entries(Entry.objects.filter(bank=bank), embedder=hashing_embedder)
    return a, other, needed


@pytest.mark.parametrize("needed_first", [True, False])
def test_the_neighbour_the_query_asks_for_wins_whatever_the_insertion_order(
    bank, make_entry, linked, ranked, hashing_embedder, needed_first
):
    a, other, needed = _crowded(
        bank, make_entry, linked, hashing_embedder, needed_first=needed_first
    )
    ranked(a, other)
    body = run_query(bank, QueryParams("ledger signing key rotation nonce", limit=2, neighbors=1))
    assert [n["id"] for n in body["results"][0]["neighbors"]] == [needed.short_id]


def test_pinned_replacement_still_first_in_a_crowd(
    bank, make_entry, linked, ranked, hashing_embedder
):
    a, other, needed = _crowded(bank, make_entry, linked, hashing_embedder, needed_first=False)
    new = make_entry("Cafeteria opening hours")  # irrelevant to the query, but it replaces A
    linked(new, a, "supersedes")
    ranked(a, other)
    body = run_query(bank, QueryParams("ledger signing key rotation nonce", limit=2, neighbors=2))
    ids = [n["id"] for n in body["results"][0]["neighbors"]]
    assert ids[0] == new.short_id and ids[1] == needed.short_id


def test_a_bank_that_redefines_supersedes_still_pins_its_replacements(
    bank, make_entry, linked, ranked, hashing_embedder
):
    """The replacement arm names the bank's replacement types as literals (read by the fold's
    first statement): the core type and the bank's own of the same name both count."""
    from graph.models import Edge, EdgeType
    from graph.retrieval.fold import edges_among

    core = EdgeType.objects.get(bank=None, name="supersedes")
    a, other, needed = _crowded(bank, make_entry, linked, hashing_embedder, needed_first=False)
    old_style = make_entry("Replacement written with the core type")
    linked(old_style, a, "supersedes")
    own = EdgeType.objects.create(
        bank=bank, name="supersedes", fold_role=core.fold_role, neighbor_priority=50
    )
    b = make_entry("Another superseded result")
    new = make_entry("Replacement written with the bank's own type")
    linked(new, b, "supersedes")
    assert Edge.objects.get(from_entry=new).type_id == own.pk
    assert edges_among(bank, [a.pk, b.pk]).replacement_types == sorted([core.pk, own.pk])
    ranked(a, b, other)
    body = run_query(bank, QueryParams("ledger signing key rotation nonce", limit=3, neighbors=2))
    firsts = {r["id"]: r["neighbors"][0] for r in body["results"] if r["neighbors"]}
    assert firsts[a.short_id]["id"] == old_style.short_id and firsts[a.short_id]["replacement"]
    assert firsts[b.short_id]["id"] == new.short_id and firsts[b.short_id]["replacement"]


def test_correctors_of_the_core_type_and_the_banks_own_are_both_found(bank, make_entry, linked):
    """The corrector read names each correction type id as a literal arm (one per type, read
    by the fold's first statement): both types count, no type means no corrector, and the
    lookup by name (no ids given) finds the same."""
    from graph.models import EdgeType
    from graph.retrieval.fold import edges_among, neighbors_of

    core = EdgeType.objects.get(bank=None, name="corrects")
    a, b, plain = make_entry("Corrected by core"), make_entry("Corrected by own"), make_entry("P")
    fix_a = make_entry("Correction written with the core type")
    linked(fix_a, a, "corrects")
    own = EdgeType.objects.create(bank=bank, name="corrects", fold_role=core.fold_role)
    fix_b = make_entry("Correction written with the bank's own type")
    linked(fix_b, b, "corrects")
    types = edges_among(bank, [a.pk, b.pk]).correction_types
    assert types == sorted([core.pk, own.pk])
    results = [a.pk, b.pk, plain.pk]
    expected = {a.pk: [fix_a.short_id], b.pk: [fix_b.short_id]}
    assert neighbors_of(bank, results, results, 2, correction_types=types).correctors == expected
    assert neighbors_of(bank, results, results, 2, correction_types=None).correctors == expected
    assert neighbors_of(bank, results, results, 2, correction_types=[core.pk]).correctors == {
        a.pk: [fix_a.short_id]
    }
    assert neighbors_of(bank, results, results, 2, correction_types=[]).correctors == {}


def test_the_fold_statements_are_prepared_and_answer_the_same_unprepared(
    bank, make_entry, linked, ranked, hashing_embedder, settings
):
    """kb/prepared.py: the neighbour, pool-edge and answer-entry statements are prepared on
    the server once per connection, nothing else is (psycopg keeps no cache of the ORM's
    statements); with KB_PREPARED_STATEMENTS off the answer is the same."""
    a, other, needed = _crowded(bank, make_entry, linked, hashing_embedder, needed_first=False)
    ranked(a, other)
    params = QueryParams("ledger signing key rotation nonce", limit=2, neighbors=2)
    prepared = [run_query(bank, params, record=False) for _ in range(3)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        statements = [row[0] for row in cursor.fetchall()]
    assert len(statements) == 3, statements  # one each, reused by the later queries
    assert any("WITH qv AS" in s for s in statements)
    assert any("WITH types AS" in s for s in statements)
    assert any(s.startswith('SELECT "kb_entry"."id"') for s in statements)
    raw = connection.connection
    assert raw.prepare_threshold is None  # left as Django sets it, between the two statements
    assert not raw._prepared._counts  # the ORM's statements were not counted or cached
    settings.KB_PREPARED_STATEMENTS = False
    plain = run_query(bank, params, record=False)

    def answer(body):
        return [
            (r["id"], [(n["id"], n["relation"], n["direction"]) for n in r["neighbors"]])
            for r in body["results"]
        ]

    assert answer(plain) == answer(prepared[-1]) == answer(prepared[0])
    assert answer(plain)[0][1][0][0] == needed.short_id
    assert plain["stats"]["neighbor_cap_reached"] == prepared[0]["stats"]["neighbor_cap_reached"]


def test_without_vectors_note_relevance_then_note_then_priority_decide(
    bank, make_entry, linked, ranked
):
    a, other = make_entry("A"), make_entry("B")
    bare_corrects, noted_seealso, noted_match = (make_entry(t) for t in ("x", "y", "z"))
    linked(bare_corrects, a, "corrects")
    linked(a, noted_seealso, "see_also", note="Background for the outage.")
    linked(a, noted_match, "see_also", note="Explains the nonce header the signer wants.")
    ranked(a, other)
    body = run_query(bank, QueryParams("which nonce header", limit=2, neighbors=3))
    assert [n["id"] for n in body["results"][0]["neighbors"]] == [
        noted_match.short_id,  # its note matches the query's words
        noted_seealso.short_id,  # a note beats a bare link of higher priority
        bare_corrects.short_id,
    ]


def test_folded_pointers_ordered_by_relevance(bank, make_entry, linked, ranked):
    rep, other = make_entry("Representative"), make_entry("Other")
    weak, strong = make_entry("weak"), make_entry("strong")
    linked(weak, rep, "clarifies", note="Background.")
    linked(strong, rep, "clarifies", note="Background.")
    # pool rank puts weak first, but strong is the more relevant to the query
    ranked(rep, other, weak, strong, relevance={weak.pk: 0.2, strong.pk: 0.7})
    body = run_query(bank, QueryParams("q", limit=2))
    assert [p["id"] for p in body["results"][0]["related"]] == [strong.short_id, weak.short_id]


def test_a_hub_reads_a_bounded_candidate_set_and_says_so(
    bank, make_entry, linked, ranked, hashing_embedder
):
    from graph.retrieval.relevance import NEIGHBOR_CANDIDATE_CAP

    hub, other = make_entry("Hub"), make_entry("Other")
    for i in range(NEIGHBOR_CANDIDATE_CAP + 5):
        linked(hub, make_entry(f"spoke {i}"), "see_also", note=f"Spoke {i} of the hub.")
    ranked(hub, other)
    with CaptureQueriesContext(connection) as ctx:
        body = run_query(bank, QueryParams("q", limit=2, neighbors=3))
    assert body["stats"]["neighbor_cap_reached"] == 1
    assert len(body["results"][0]["neighbors"]) == 3
    ranked(other, make_entry("Another"))
    with CaptureQueriesContext(connection) as ctx2:
        quiet = run_query(bank, QueryParams("q", limit=2, neighbors=3))
    assert quiet["stats"]["neighbor_cap_reached"] == 0
    assert len(ctx.captured_queries) == len(ctx2.captured_queries)


def test_fold_replay_reports_neighbour_slot_pressure(bank, make_entry, linked, ranked):
    from tests.labs.replay import replay

    crowded, quiet = make_entry("Crowded"), make_entry("Quiet")
    for i in range(4):
        linked(crowded, make_entry(f"n{i}"), "see_also", note=f"Noted edge {i}.")
    linked(quiet, make_entry("only"), "see_also", note="One noted edge.")
    ranked(crowded, quiet)
    run_query(bank, QueryParams("q", limit=2, neighbors=3))  # logged
    summary = replay(bank).summary()
    assert summary["queries"] == 1
    assert summary["results_with_neighbor_slot_pressure_pct"] == 50.0
    assert summary["queries_with_neighbor_slot_pressure_pct"] == 100.0


def test_note_relevance_is_the_full_text_rank_matched_or_not(bank, make_entry, linked):
    """The note match skips the rank for a note none of the query's words match (``@@``
    first): every note's figure is still ``ts_rank_cd``'s own, 0 where nothing matches,
    in both fold statements."""
    from graph.retrieval.fold import edges_among, neighbors_of
    from graph.retrieval.relevance import note_terms

    query = "rotate the ledger signing key"
    a, b = make_entry("Ledger key"), make_entry("Signing runbook")
    notes = {
        "Rotate the ledger key before the signing window.": True,
        "Signing happens on the ledger host.": True,
        "Background about the cafeteria menu.": False,
        "The printer toner order.": False,
    }
    outside = []
    for i, note in enumerate(notes):
        other = make_entry(f"Linked entry {i}")
        linked(a, other, "see_also", note=note)
        linked(other, b, "see_also", note=note)
        outside.append(other)
    linked(a, b, "clarifies", note="Rotate the signing key of the ledger first.")
    linked(b, a, "cites", note="Cafeteria rota.")

    def ranks() -> dict[str, float]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT note, ts_rank_cd(note_tsv, to_tsquery('english', %s), 32) "
                "FROM graph_edge WHERE bank_id = %s",
                [note_terms(query), bank.pk],
            )
            return {note: float(rank) for note, rank in cursor.fetchall()}

    expected = ranks()
    assert sorted(n for n, r in expected.items() if r > 0) == sorted(
        [n for n, matched in notes.items() if matched]
        + ["Rotate the signing key of the ledger first."]
    )
    assert sum(1 for r in expected.values() if r == 0) == 3  # unmatched: exactly 0
    graph = edges_among(bank, [a.pk, b.pk], query)
    assert len(graph.edges) == 2
    for edge in graph.edges:
        assert edge.note_relevance == pytest.approx(expected[edge.note], abs=1e-6)
    from graph.retrieval.relevance import NOTE_RELEVANCE_SQL

    sql = (
        "SELECT ed.note, "
        + NOTE_RELEVANCE_SQL.format(
            note="ed.note", tsv="ed.note_tsv", tsquery="to_tsquery('english', %(note_terms)s)"
        )
        + " FROM graph_edge ed WHERE ed.bank_id = %(bank)s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, {"note_terms": note_terms(query), "bank": bank.pk})
        got = {note: float(rank) for note, rank in cursor.fetchall()}
    assert got == pytest.approx(expected, abs=1e-6)
    # no vectors here: a neighbour's relevance is NOTE_WEIGHT times its note's rank
    chosen = neighbors_of(bank, [a.pk], [a.pk, b.pk], 4, query=query).neighbors
    assert len(chosen) == 4
    for n in chosen:
        assert n.relevance == pytest.approx(0.5 * expected[n.note], abs=1e-6)
    assert [notes[n.note] for n in chosen] == [True, True, False, False]
