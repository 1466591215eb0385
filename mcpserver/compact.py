"""Compact tool answers (API.md "Changes: Sizes"): by default the MCP read and write tools
answer with what an agent acts on — ``id``, ``title``, ``kind``, ``status``, ``warnings`` and
what the tool is about (``similar`` for a new learning, the edge for a link, the entry's texts,
cut, and its edges for a read) — instead of echoing the whole entry. ``full: true`` returns the
REST answer unchanged. The REST answer is computed the same way either way; only the tool's
rendering differs, so REST and MCP keep one behaviour."""

from __future__ import annotations

from kb.presenters import shorten_texts

# A compact read cuts texts to this many characters (``max_chars`` overrides it).
COMPACT_READ_CHARS = 2000
FULL = {
    "type": "boolean",
    "default": False,
    "description": "Return the whole REST answer instead of the compact one.",
}


def _head(data: dict) -> dict:
    return {
        "id": data.get("id"),
        "title": data.get("title"),
        "kind": data.get("kind"),
        "status": data.get("status"),
        "warnings": data.get("warnings") or [],
    }


def compact_entry_written(data: dict) -> dict:
    """report_learning, verify_entry, retire_entry, restore: the entry's identity, the
    warnings, the similar entries, and the state the write changed."""
    out = _head(data)
    if "similar" in data:
        out["similar"] = data["similar"]
    if data.get("verified_at"):
        out["verified_at"] = data["verified_at"]
    if isinstance(data.get("retired"), dict):
        out["retired"] = {"reason": shorten_texts(data["retired"], 300)["reason"]}
    if data.get("merged_from"):
        out["merged_from"] = data["merged_from"]
    return out


def compact_entry_read(data: dict) -> dict:
    """get_entry: the identity, the texts an agent reads (cut to ``COMPACT_READ_CHARS`` unless
    the call asked for ``max_chars``), its edges as pointers and its aliases."""
    shortened = data if "truncated" in data else shorten_texts(data, COMPACT_READ_CHARS)
    out = _head(shortened)
    for key in ("key", "summary", "useful_for", "content", "truncated", "merged_from"):
        if key in shortened:
            out[key] = shortened[key]
    out["edges"] = [
        {
            "edge_id": edge.get("edge_id"),
            "relation": edge.get("relation"),
            "direction": edge.get("direction"),
            "id": (edge.get("entry") or {}).get("id"),
            "note": edge.get("note"),
        }
        for edge in shortened.get("edges") or []
    ]
    out["aliases"] = shortened.get("aliases") or []
    return out


def compact_edge(data: dict) -> dict:
    """link_entries, unlink_entries: the edge's id, ends, relation, note and warnings."""
    out = {key: data.get(key) for key in ("id", "from", "to", "relation", "note")}
    out["warnings"] = data.get("warnings") or []
    if data.get("invalidated_at"):
        out["invalidated_at"] = data["invalidated_at"]
    return out


COMPACTORS = {
    "entry_read": compact_entry_read,
    "entry_written": compact_entry_written,
    "edge": compact_edge,
}


def compact_answer(kind: str | None, data):
    """The compact rendering of a successful answer of a tool whose spec says ``compact``."""
    if kind is None or not isinstance(data, dict):
        return data
    return COMPACTORS[kind](data)
