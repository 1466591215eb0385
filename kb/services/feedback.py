"""What a write tells its writer: warnings about the payload and entries it lands near.

An agent that writes a learning next to an existing one should hear about it at once (the
bank grows duplicates otherwise), and a connection without a note is the weakest kind of
pointer (``000_*``: the note says how the other entry pertains). Nothing here refuses a write;
it answers with ``warnings`` and ``similar`` beside the written row.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings

from kb.models import Bank, Entry
from kb.services.duplicates import Neighbour, nearest_entries
from kb.services.embedding import dimension_texts

SIMILAR_LIMIT = 3


@dataclass
class WriteWarning:
    code: str
    message: str
    fields: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        return {"code": self.code, "message": self.message, "fields": self.fields}


@dataclass
class WriteFeedback:
    warnings: list[WriteWarning] = field(default_factory=list)
    similar: list[dict] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"warnings": [w.as_json() for w in self.warnings], "similar": self.similar}


def note_warnings(connections: list | None, prefix: str = "connections") -> list[WriteWarning]:
    """One ``connection_without_note`` warning naming every connection that has no note."""
    bare = [
        i
        for i, item in enumerate(connections or [])
        if isinstance(item, dict) and not str(item.get("note") or "").strip()
    ]
    if not bare:
        return []
    where = ", ".join(f"{prefix}[{i}]" for i in bare) if prefix else "the edge"
    return [
        WriteWarning(
            "connection_without_note",
            f"No note on {where}: say how the other entry pertains (why a reader would go "
            "there), never what it says — a pointer without a note is hard to act on.",
            {prefix or "note": "Missing note."},
        )
    ]


def similar_entries(
    bank: Bank, entry: Entry, *, limit: int = SIMILAR_LIMIT, nearest: list[Neighbour] | None = None
) -> list[dict]:
    """Live entries of ``bank`` whose content vector is close to ``entry``'s text (cosine
    similarity ≥ ``KB_SIMILAR_MIN``), best first. ``nearest``: the entries nearest to that text
    as the write's duplicate check read them before ``entry`` existed (at least ``limit``);
    otherwise one embedding and one statement."""
    text = dimension_texts(entry)["content"]
    if not text.strip():
        return []
    if nearest is None:
        nearest = nearest_entries(bank, text, limit=limit, exclude_pk=entry.pk)
    floor = settings.KB_SIMILAR_MIN
    return [
        {"id": near.short_id, "title": near.title, "score": round(1 - near.distance, 3)}
        for near in nearest
        if near.distance <= 1 - floor
    ][:limit]


def entry_feedback(
    bank: Bank, entry: Entry, connections: list | None, nearest: list[Neighbour] | None = None
) -> WriteFeedback:
    """Warnings and similar entries for a new ``entry`` (``nearest``: see
    :func:`similar_entries`)."""
    feedback = WriteFeedback(warnings=note_warnings(connections))
    feedback.similar = similar_entries(bank, entry, nearest=nearest)
    top = feedback.similar[0] if feedback.similar else None
    if top is not None and top["score"] >= settings.KB_DUPLICATE_MIN:
        feedback.warnings.append(
            WriteWarning(
                "duplicate",
                f"This reads like entry {top['id']} ({top['title']!r}, similarity "
                f"{top['score']}): if it is the same knowledge, extend that entry or merge the two.",
                {"similar": top["id"]},
            )
        )
    return feedback
