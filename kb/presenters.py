"""Plain presentations of entries shared by the API, services that answer with entry shapes
(the query, entries as of a time) and the admin. Services import this, never the API layer."""

from __future__ import annotations

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
    """The entry's own fields as API.md shows them; ``edges`` and ``aliases`` are the graph's
    to fill (``graph.api.render.entry_with_graph``)."""
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
    return data


TRUNCATION_MARKER = " …[truncated]"  # the marker the query budget ends a cut text with
MIN_MAX_CHARS = 20
MAX_MAX_CHARS = 1_000_000


def _cut(text: str, max_chars: int) -> tuple[str, bool]:
    if len(text) <= max_chars:
        return text, False
    keep = max(0, max_chars - len(TRUNCATION_MARKER))
    return text[:keep].rstrip() + TRUNCATION_MARKER, True


def shorten_texts(data: dict, max_chars: int) -> dict:
    """``data`` (an entry as read) with every long text cut to ``max_chars`` characters,
    marker included: content, summary, useful_for, the retirement's reason and evidence, and
    the notes and summaries of its edges. ``truncated`` says whether anything was cut."""
    cut_any = False

    def cut(holder: dict, key: str) -> None:
        nonlocal cut_any
        value = holder.get(key)
        if isinstance(value, str):
            holder[key], was_cut = _cut(value, max_chars)
            cut_any = cut_any or was_cut

    out = dict(data)
    for key in ("content", "summary", "useful_for"):
        cut(out, key)
    if isinstance(out.get("retired"), dict):
        out["retired"] = dict(out["retired"])
        cut(out["retired"], "reason")
        cut(out["retired"], "evidence")
    if isinstance(out.get("edges"), list):
        edges = []
        for edge in out["edges"]:
            edge = dict(edge)
            cut(edge, "note")
            if isinstance(edge.get("entry"), dict):
                edge["entry"] = dict(edge["entry"])
                cut(edge["entry"], "summary")
            edges.append(edge)
        out["edges"] = edges
    out["truncated"] = cut_any
    return out
