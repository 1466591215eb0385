"""Plain presentations of entries shared by the API, services that answer with entry shapes
(the query, entries as of a time) and the admin. Services import this, never the API layer."""

from __future__ import annotations

from kb import extensions
from kb.models import Entry


def iso(value) -> str | None:
    return value.isoformat() if value is not None else None


def entry_core(entry: Entry) -> dict:
    """The fields every entry representation shares (a query result less score and links)."""
    return {
        "id": entry.short_id,
        "key": entry.key,
        "title": entry.title,
        "kind": entry.kind.name,
        "status": entry.status,
        "summary": entry.summary,
        "content": entry.content,
        "useful_for": entry.useful_for,
        "systems": list(entry.systems),
        "tasks": list(entry.tasks),
        "steps": entry.steps,
    }


def entry_detail(entry: Entry, merged_from: str | None = None) -> dict:
    data = entry_core(entry)
    data.update(
        {
            "metadata": entry.metadata,
            "lifetime": entry.lifetime,
            "expired": entry.is_expired,
            "anchors": {"files": list(entry.anchor_files), "symbols": list(entry.anchor_symbols)},
            "created_at": iso(entry.created_at),
            "updated_at": iso(entry.updated_at),
            "verified_at": iso(entry.verified_at),
            "verified_by": entry.verified_by or None,
            "usage_count": entry.usage_count,
            "edges": [],
            "aliases": [],
        }
    )
    if entry.status == "retired":
        data["retired"] = {"reason": entry.retired_reason, "evidence": entry.retired_evidence}
    if merged_from:
        data["merged_from"] = merged_from
    for extend in extensions.registry.detail_extensions:
        extend(entry, data)
    return data
