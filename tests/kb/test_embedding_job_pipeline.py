"""The embedding job's batches (issue 24): the model runs on the next batch in a thread while
this one is stored; the statements per batch, the order of progress, idempotence and the
vectors stay what they were when model and database took turns."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kb.models import EntryEmbedding, Job
from kb.services.bulk import import_bank
from kb.services.embedding import (
    create_embedding_job,
    dimension_texts,
    embed_in_batches,
    run_embedding_job,
)

pytestmark = pytest.mark.django_db


def _ids(bank, n: int) -> list[int]:
    text = "\n".join(
        json.dumps(
            {
                "type": "entry",
                "key": f"pipe:{i}",
                "title": f"Pipeline entry {i}",
                "content": f"Batch {i} of the overlapping embedding job.",
                "kind": "fact",
            }
        )
        for i in range(n)
    )
    return import_bank(bank, text, reason="test", embed=False)["to_embed"]


def test_each_batch_costs_four_statements_and_progress_follows_the_batches(bank, hashing_embedder):
    ids = _ids(bank, 25)
    seen = []
    with CaptureQueriesContext(connection) as queries:
        written = embed_in_batches(ids, batch=10, progress=lambda d, t: seen.append((d, t)))
    assert written == 25
    assert seen == [(10, 25), (20, 25), (25, 25)]
    sql = [q["sql"].split()[0].upper() for q in queries.captured_queries]
    sql = [s for s in sql if s not in ("SAVEPOINT", "RELEASE")]  # the write's transaction
    # per batch: its entries, their stored digests, the staging table (if not there yet),
    # [the COPY of its vectors, not in Django's log], one upsert from the staging table
    assert sorted(sql) == sorted(["SELECT", "SELECT", "CREATE", "WITH"] * 3)
    assert EntryEmbedding.objects.filter(entry_id__in=ids).count() == 25


def test_vectors_are_those_of_each_entry_text_and_a_rerun_writes_nothing(bank, hashing_embedder):
    ids = _ids(bank, 23)
    assert embed_in_batches(ids, batch=4) == 23
    for row in EntryEmbedding.objects.filter(entry_id__in=ids).select_related("entry"):
        texts = dimension_texts(row.entry)
        assert list(row.content) == pytest.approx(hashing_embedder.embed([texts["content"]])[0])
        assert row.useful_for is None  # blank dimension: not embedded
    with CaptureQueriesContext(connection) as queries:
        assert embed_in_batches(ids, batch=4) == 0
    assert not any(q["sql"].startswith("INSERT") for q in queries.captured_queries)


def test_a_model_failure_fails_the_job_and_keeps_the_batches_stored_before_it(
    bank, hashing_embedder, monkeypatch
):
    ids = _ids(bank, 12)
    calls = []
    real = type(hashing_embedder).embed

    def flaky(self, texts):
        calls.append(len(texts))
        if len(calls) == 2:
            raise RuntimeError("model lost")
        return real(self, texts)

    monkeypatch.setattr(type(hashing_embedder), "embed", flaky)
    job = create_embedding_job(bank, ids)
    monkeypatch.setattr("django.conf.settings.KB_EMBED_BATCH_SIZE", 5)
    with pytest.raises(RuntimeError, match="model lost"):
        run_embedding_job(ids, job.pk)
    job.refresh_from_db()
    assert job.status == "failed"
    assert EntryEmbedding.objects.filter(entry_id__in=ids).count() == 5
    monkeypatch.setattr(type(hashing_embedder), "embed", real)
    assert embed_in_batches(ids, batch=5) == 7  # resumed: only what was missing
    assert Job.objects.get(pk=job.pk).progress_done <= 12
