"""Open workflow findings for the context bundle (registered with graph in ``ready``)."""

from __future__ import annotations

from graph.retrieval.context import FindingLine
from kb.models import Bank
from workflows.models import Finding, FindingStatus


def open_findings_naming(bank: Bank, short_ids: list[str]) -> list[FindingLine]:
    """Open findings of ``bank`` whose entries include any of ``short_ids``."""
    if not short_ids:
        return []
    found = (
        Finding.objects.filter(
            bank=bank, status=FindingStatus.OPEN, entries__overlap=list(short_ids)
        )
        .select_related("process")
        .order_by("id")[:50]
    )
    return [
        FindingLine(
            id=f.pk,
            rule=f.rule,
            entries=tuple(f.entries),
            message=f.message,
            process=f.process.title,
        )
        for f in found
    ]
