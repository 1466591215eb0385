"""Celery tasks of graph analytics: thin wrappers over services. They take bank ids and are
idempotent (communities are replaced whole; edge vectors are skipped when up to date).

Celery's autodiscovery loads ``graph/tasks.py``, which imports this module.
"""

from __future__ import annotations

from celery import shared_task

from kb import audit


def _bank(bank_id: int):
    from kb.models import Bank

    return Bank.objects.filter(pk=bank_id).first()


@shared_task(name="graph.build_communities", acks_late=True)
def build_communities_task(bank_id: int) -> dict:
    """Recompute one bank's Louvain communities and their summaries."""
    from graph.analytics.communities import build_communities

    bank = _bank(bank_id)
    if bank is None:
        return {"bank": bank_id, "error": "bank_not_found"}
    with audit.acting_as("celery:build_communities"):
        built = build_communities(bank)
    from graph.analytics.view_cache import warm_views

    warm_views(bank)  # the explorer's overview and largest communities, laid out ahead
    return {"bank": bank_id, "communities": built.communities, "members": built.members}


@shared_task(name="graph.build_all_communities", acks_late=True)
def build_all_communities_task() -> int:
    """Nightly fan-out: one ``graph.build_communities`` task per bank; returns how many."""
    from kb.models import Bank

    ids = list(Bank.objects.order_by("pk").values_list("pk", flat=True))
    for bank_id in ids:
        build_communities_task.delay(bank_id)
    return len(ids)


@shared_task(name="graph.embed_edge_notes", acks_late=True)
def embed_edge_notes_task(bank_id: int) -> dict:
    """Embed the fact sentences of one bank's noted edges that are new or changed."""
    from graph.retrieval.facts import embed_edge_notes

    bank = _bank(bank_id)
    if bank is None:
        return {"bank": bank_id, "error": "bank_not_found"}
    return {"bank": bank_id, "embedded": embed_edge_notes(bank)}


@shared_task(name="graph.embed_all_edge_notes", acks_late=True)
def embed_all_edge_notes_task() -> int:
    """Periodic fan-out of ``graph.embed_edge_notes`` over every bank; returns how many."""
    from kb.models import Bank

    ids = list(Bank.objects.order_by("pk").values_list("pk", flat=True))
    for bank_id in ids:
        embed_edge_notes_task.delay(bank_id)
    return len(ids)


@shared_task(name="graph.refresh_layout", acks_late=True)
def refresh_layout_task(bank_id: int, requested_at: str | None = None) -> str:
    """The debounced layout refresh that edits schedule (idempotent per request)."""
    from graph.analytics.layout_store import run_requested

    return run_requested(bank_id, requested_at)
