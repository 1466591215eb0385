"""The layout refresh job on a real Celery worker over Redis (a queue of its own): a burst of
edits in separate transactions schedules the debounced job, and the worker lays the bank out."""

from __future__ import annotations

import pytest

from graph.analytics.layout_store import read_graph
from graph.edges.links import link
from graph.models import GraphLayout
from tests.kb.test_celery_worker import celery_worker_process, wait_for  # noqa: F401

pytestmark = [
    pytest.mark.celery_worker,
    pytest.mark.xdist_group("celery_worker"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def test_edits_refresh_the_layout_on_a_real_worker(
    celery_worker_process,  # noqa: F811
    bank,
    make_entry,
    settings,
    monkeypatch,
):
    from kb import tasks

    # Vectors are not this test's subject (and pgserver's pgvector needs AVX-512 to write them).
    monkeypatch.setattr(tasks.embed_entries_task, "delay", lambda *args, **kwargs: None)
    settings.KB_LAYOUT_AUTO_REFRESH = True
    settings.KB_LAYOUT_COUNTDOWN = 2
    entries = [make_entry(f"Worker layout {i}") for i in range(4)]  # four commits
    for a, b in zip(entries, entries[1:], strict=False):
        link(bank, {"from": a.short_id, "to": b.short_id, "relation": "see_also", "note": "Next."})
    # Edits that land while a job is pending ride along; edits after it started schedule
    # another: either way the worker ends on the final graph.
    expected = read_graph(bank).fingerprint()
    done = wait_for(
        lambda: (
            GraphLayout.objects.filter(bank=bank, fingerprint=expected)
            .exclude(computed_at=None)
            .first()
        )
    )
    assert done is not None, "the worker never refreshed the layout"
    assert done.node_count == 4 and done.edge_count == 3 and done.clusters >= 1
    assert done.requested_at is None
    assert celery_worker_process.poll() is None, "the worker died"
