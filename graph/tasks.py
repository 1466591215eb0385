"""Celery tasks of the graph app: thin wrappers over services. They take bank ids and are
idempotent (a re-run writes nothing new), so ``acks_late`` redelivery is safe."""

from __future__ import annotations

from celery import shared_task

from kb import audit


def _bank(bank_id: int):
    from kb.models import Bank

    return Bank.objects.filter(pk=bank_id).first()


def _missing(bank_id: int) -> dict:
    return {"bank": bank_id, "error": "bank_not_found"}


@shared_task(name="graph.backfill_citations", acks_late=True)
def backfill_citations_task(bank_id: int, metadata: bool = True) -> dict:
    """Citation backfill (and, unless ``metadata`` is false, the metadata-link backfill)."""
    from graph.ingest.backfill import backfill_citations, backfill_metadata

    bank = _bank(bank_id)
    if bank is None:
        return _missing(bank_id)
    with audit.acting_as("celery:backfill_citations"):
        out = {"bank": bank_id, "citations": backfill_citations(bank).as_json()}
        if metadata:
            out["metadata"] = backfill_metadata(bank).as_json()
    return out


@shared_task(name="graph.parse_headers", acks_late=True)
def parse_headers_task(bank_id: int) -> dict:
    """Header backfill: the relations stated on entries' ``Related:`` lines."""
    from graph.ingest.headers import backfill_headers

    bank = _bank(bank_id)
    if bank is None:
        return _missing(bank_id)
    with audit.acting_as("celery:parse_headers"):
        return {"bank": bank_id, "headers": backfill_headers(bank).as_json()}


@shared_task(name="graph.propose_merges", acks_late=True)
def propose_merges_task(bank_id: int, limit: int = 200) -> dict:
    """Queue likely-duplicate pairs of the bank as merge proposals (never merges)."""
    from graph.curation.proposals import propose_merges

    bank = _bank(bank_id)
    if bank is None:
        return _missing(bank_id)
    from kb.services.job_progress import tracked_job

    with (
        audit.acting_as("celery:propose_merges"),
        tracked_job(bank, "merge_proposals", actor="celery:propose_merges") as (job, progress),
    ):
        progress.phase("finding likely duplicates", total=1)
        job.result = propose_merges(bank, limit=limit).as_json()
        progress(1, 1)
    return {"bank": bank_id, **job.result}


from graph.analytics import tasks as analytics_tasks  # noqa: E402,F401  (autodiscovery only loads tasks.py)
from graph.ingest.extract import jobs as _extraction_jobs  # noqa: E402,F401  (its Celery task)
