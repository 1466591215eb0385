"""Per-bank vector indexes (issue 12 item 3) and the query-embedding cache (item 4)."""

import pytest
from celery.exceptions import Retry
from django.db import connection

from kb.models import Entry, EntryKind, Job
from kb.prepared import fetch_prepared
from kb.services import embedding, search
from kb.services.embedding import embed_entries, embed_query
from kb.services.job_progress import JobProgress
from kb.services.search import rank_candidates
from kb.services.vector_index import (
    _LOCK_NAMESPACE,
    banks_needing_indexes,
    drop_bank_vector_indexes,
    drop_orphan_indexes,
    ensure_bank_vector_indexes,
    existing_indexes,
    index_name,
    lexical_indexes,
    orphan_indexes,
)
from kb.tasks import ensure_bank_vector_indexes_task
from tests.pg_activity import holding_advisory_lock
from tests.plans import analyzed_plan, indexes_read

pytestmark = pytest.mark.django_db


@pytest.fixture
def filled(bank, other_bank, make_entry, hashing_embedder):
    for i in range(30):
        make_entry(f"deploy step {i}", content=f"rollout canary number {i}")
        make_entry(f"globex note {i}", content=f"rollout canary number {i}", in_bank=other_bank)
    embed_entries(Entry.objects.all(), embedder=hashing_embedder)
    with connection.cursor() as cur:  # DDL inside the test's transaction needs no pending FKs
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")
    return bank


def test_no_index_spans_the_banks(db):
    with connection.cursor() as cur:
        cur.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'kb_entryembedding'"
            " AND indexdef ILIKE '%%hnsw%%'"
        )
        assert all("WHERE (bank_id =" in row[0] for row in cur.fetchall())


def test_a_bank_gets_its_own_indexes_only_past_the_threshold(filled, settings):
    settings.KB_BANK_VECTOR_INDEX_AT = 1000
    assert ensure_bank_vector_indexes(filled, concurrently=False).created == []
    assert banks_needing_indexes([filled.pk]) == []
    settings.KB_BANK_VECTOR_INDEX_AT = 20
    assert banks_needing_indexes([filled.pk]) == [filled.pk]
    report = ensure_bank_vector_indexes(filled, concurrently=False)
    own = [index_name(filled.pk, d) for d in ("content", "useful_for", "context")]
    own += list(lexical_indexes(filled.pk))
    assert sorted(report.created) == sorted(own) and len(own) == 3 + 2 + 2
    assert ensure_bank_vector_indexes(filled, concurrently=False).created == []  # idempotent
    assert banks_needing_indexes([filled.pk]) == []
    assert len(drop_bank_vector_indexes(filled.pk)) == 7 and not existing_indexes(filled.pk)


def _mark_unusable(name: str) -> None:
    """What a ``CREATE INDEX CONCURRENTLY`` that failed half-way leaves: the index in the
    catalogue, not valid, never read."""
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", [name]
        )


def test_an_index_a_failed_build_left_is_built_again(filled, settings):
    settings.KB_BANK_VECTOR_INDEX_AT = 20
    ensure_bank_vector_indexes(filled, concurrently=False)
    assert banks_needing_indexes([filled.pk]) == []
    broken = index_name(filled.pk, "content")
    _mark_unusable(broken)
    assert broken not in existing_indexes(filled.pk)  # not counted: the planner never reads it
    assert banks_needing_indexes([filled.pk]) == [filled.pk]  # so the next job builds it
    report = ensure_bank_vector_indexes(filled, force=True, concurrently=False)
    assert report.created == [broken] and broken not in report.present
    job = Job.objects.filter(bank=filled, kind="vector_indexes").order_by("-pk").first()
    assert job.result == {"built": [broken], "rebuilt": [broken]}
    assert broken in existing_indexes(filled.pk) and len(existing_indexes(filled.pk)) == 7
    _mark_unusable(broken)
    assert len(drop_bank_vector_indexes(filled.pk)) == 7  # the unusable one goes too


def test_one_session_builds_a_banks_indexes_at_a_time(filled):
    with holding_advisory_lock(_LOCK_NAMESPACE, filled.pk):  # a worker building them now
        report = ensure_bank_vector_indexes(filled, force=True, concurrently=False)
        assert report.busy and report.created == [] and not existing_indexes(filled.pk)
    report = ensure_bank_vector_indexes(filled, force=True, concurrently=False)
    assert not report.busy and len(report.created) == 7


def test_a_bank_with_all_its_indexes_takes_no_lock(filled):
    ensure_bank_vector_indexes(filled, force=True, concurrently=False)
    with holding_advisory_lock(_LOCK_NAMESPACE, filled.pk):
        report = ensure_bank_vector_indexes(filled, force=True, concurrently=False)
        assert not report.busy and report.created == [] and len(report.present) == 7


def test_the_index_job_finding_the_bank_busy_looks_again_later(filled, settings):
    """As a worker runs it (not eager): retried, not acknowledged with the indexes missing."""
    settings.KB_BANK_VECTOR_INDEX_AT = 20
    with holding_advisory_lock(_LOCK_NAMESPACE, filled.pk), pytest.raises(Retry):
        ensure_bank_vector_indexes_task(filled.pk)
    assert len(ensure_bank_vector_indexes_task(filled.pk)) == 7
    assert Job.objects.get(bank=filled, kind="vector_indexes").actor == "celery:vector_indexes"


def test_index_builds_show_as_a_job_with_a_phase_per_index(filled):
    phases = []
    real = JobProgress._write

    def watched(progress, done, total):
        phases.append((progress.current, done, total))
        real(progress, done, total)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(JobProgress, "_write", watched)
        report = ensure_bank_vector_indexes(filled, force=True, concurrently=False)
    job = Job.objects.get(bank=filled, kind="vector_indexes")
    assert (job.status, job.phase, job.progress_done, job.progress_total) == (
        "succeeded",
        "done",
        7,
        7,
    )
    assert job.result == {"built": report.created, "rebuilt": []} and len(report.created) == 7
    assert [phase for phase, _, _ in phases[:7]] == [f"building {n}" for n in report.created]
    assert [done for _, done, _ in phases[:7]] == list(range(7))
    ensure_bank_vector_indexes(filled, force=True, concurrently=False)  # nothing to build
    assert Job.objects.filter(bank=filled, kind="vector_indexes").count() == 1  # no empty job


def test_an_index_job_whose_process_died_is_closed_by_the_next_build(filled, other_bank):
    """A killed worker's job row stays running (nothing marks it; its statement may even run
    on to the end); the next build, holding the bank's lock, marks it failed and names
    itself. Another bank's running index job is not touched."""
    from django.utils import timezone

    def running(bank):
        return Job.objects.create(
            bank=bank, kind="vector_indexes", status="running", started_at=timezone.now()
        )

    dead, elsewhere = running(filled), running(other_bank)
    ensure_bank_vector_indexes(filled, force=True, concurrently=False)
    new = Job.objects.filter(bank=filled, kind="vector_indexes").exclude(pk=dead.pk).get()
    dead.refresh_from_db()
    assert dead.status == "failed" and dead.finished_at is not None
    assert new.public_id in dead.errors[0]["message"] and new.status == "succeeded"
    elsewhere.refresh_from_db()
    assert elsewhere.status == "running"


def test_a_deleted_banks_indexes_are_pruned_and_no_other(filled, other_bank):
    ensure_bank_vector_indexes(filled, force=True, concurrently=False)
    ensure_bank_vector_indexes(other_bank, force=True, concurrently=False)
    assert not set(orphan_indexes()) & set(lexical_indexes(filled.pk))  # both banks live
    gone = filled.pk
    Entry.objects.filter(bank=filled).delete()
    filled.delete()
    own = set(lexical_indexes(gone)) | {
        index_name(gone, d) for d in ("content", "useful_for", "context")
    }
    assert {name for name, bank_id in orphan_indexes().items() if bank_id == gone} == own
    assert own <= set(drop_orphan_indexes(concurrently=False))
    assert not set(orphan_indexes()) & own
    assert len(existing_indexes(other_bank.pk)) == 7  # the live bank's are untouched


@pytest.mark.parametrize("query", ["rolout", "globex deploy stp", "canary number 7"])
def test_the_lexical_arm_reads_the_banks_own_indexes_and_answers_the_same(filled, query):
    """Once the bank has its own lexical indexes its lexical arm reads them (no other bank's
    rows) and returns the same rows as through the shared ones."""
    kind = EntryKind.objects.get(bank=None, name="fact")
    Entry.objects.bulk_create(  # enough rows that an index read is worth it to the planner
        Entry(bank=filled, kind=kind, short_id=f"b{i:07x}", title=f"rollout wave {i} of globex")
        for i in range(3000)
    )
    sql = search._statement(True, (), filled.pk, 80, search.LEXICAL_SCAN)
    params = search._lexical_params(query)
    before = sorted(fetch_prepared(sql, params))
    ensure_bank_vector_indexes(filled, force=True, concurrently=False)
    with connection.cursor() as cur:
        cur.execute("ANALYZE kb_entry")
        cur.execute("SET LOCAL enable_seqscan = off")  # a small table: make the plan show intent
    ran = indexes_read(analyzed_plan(sql, params))
    own = set(lexical_indexes(filled.pk))
    assert ran & own, ran
    assert not {name for name in ran if name.startswith("kb_entry_")} - own - {"kb_entry_pkey"}, ran
    assert sorted(fetch_prepared(sql, params)) == before


def test_the_bank_query_uses_its_own_index_and_matches_exact(filled, other_bank):
    query = "rollout canary number 7"
    exact = [h.entry_id for h in rank_candidates(filled, query, limit=10)]
    ensure_bank_vector_indexes(filled, force=True, concurrently=False)
    vector = embed_query(query)
    with connection.cursor() as cur:
        cur.execute("SET LOCAL enable_seqscan = off")  # a 60-row table: make the plan show intent
        cur.execute(
            "EXPLAIN SELECT entry_id FROM kb_entryembedding WHERE bank_id = %s"
            " AND content IS NOT NULL ORDER BY content <=> %s::vector LIMIT 10",
            [filled.pk, str(vector)],
        )
        plan = " ".join(row[0] for row in cur.fetchall())
    assert index_name(filled.pk, "content") in plan
    found = [h.entry_id for h in rank_candidates(filled, query, limit=10)]
    assert set(found) == set(exact)
    banks = set(Entry.objects.filter(pk__in=found).values_list("bank_id", flat=True))
    assert banks == {filled.pk}
    other = rank_candidates(other_bank, query, limit=10)  # no index of its own: exact scan
    assert {e.bank_id for e in Entry.objects.filter(pk__in=[h.entry_id for h in other])} == {
        other_bank.pk
    }


def test_repeated_queries_skip_the_model(hashing_embedder, settings, monkeypatch):
    calls = []
    original = hashing_embedder.embed

    def counting(texts):
        calls.append(list(texts))
        return original(texts)

    monkeypatch.setattr(hashing_embedder, "embed", counting)
    embedding._QUERY_CACHE.clear()
    first = embed_query("why does login fail with 403")
    again = embed_query("why does login fail with 403")
    embed_query("a different question")
    assert first == again and len(calls) == 2
    settings.KB_QUERY_EMBEDDING_CACHE = 0
    embed_query("why does login fail with 403")
    assert len(calls) == 3


def test_a_query_vector_renders_its_pgvector_text_once(hashing_embedder, settings):
    """The search and the fold both send the query vector: its text is built once per vector
    (and so once per repeated question), and it is the text a plain list renders."""
    from django.db import connection

    from kb.services.embedding import vector_literal

    embedding._QUERY_CACHE.clear()
    vector = embed_query("rotate the ledger key")
    text = vector_literal(vector)
    assert text == str(list(vector)) and vector_literal(vector) is text
    assert vector_literal(embed_query("rotate the ledger key")) is text  # cached question
    assert vector_literal(None) is None and vector_literal([0.5, 1.0]) == "[0.5, 1.0]"
    with connection.cursor() as cursor:
        cursor.execute("SELECT vector_dims(%s::vector)", [text])
        assert cursor.fetchone()[0] == len(vector)
    settings.KB_QUERY_EMBEDDING_CACHE = 0
    assert vector_literal(embed_query("rotate the ledger key")) == text
