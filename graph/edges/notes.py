"""Two-ended notes: a note that reads right from either end of its edge.

A note says how the *other* entry pertains to the one being read. A person writing a link
writes it from the ``from`` end. The system's own edges (supersede on retire, split, bridging
on delete, and those edges as a merge re-points them) are read from both ends, so they store
both readings in the one ``note`` column: the reading from the ``from`` end, the separator
``" ⇄ "``, then the reading from the ``to`` end. A person may write a two-ended note the
same way.

Everything that shows a note beside a direction calls :func:`note_as_seen` (or
:func:`notes_as_seen` over a query's results); full-text search keeps reading the whole
column, which holds both readings' words.
"""

from __future__ import annotations

from collections.abc import Iterable

SEPARATOR = " ⇄ "


def two_ended(from_end: str, to_end: str) -> str:
    """The stored note of a system edge: its reading from the ``from`` end, then the ``to``
    end's."""
    return f"{from_end}{SEPARATOR}{to_end}"


def note_ends(note: str | None) -> tuple[str, str]:
    """(reading from the ``from`` end, reading from the ``to`` end); equal for a plain note."""
    note = note or ""
    if SEPARATOR not in note:
        return note, note
    from_end, _, to_end = note.partition(SEPARATOR)
    return from_end.strip(), to_end.strip()


def note_as_seen(note: str | None, direction: str) -> str:
    """The note as read from one end: ``direction`` is seen from the entry being read
    (``"out"``: it is the edge's ``from`` end; ``"in"``: its ``to`` end)."""
    from_end, to_end = note_ends(note)
    return to_end if direction == "in" else from_end


def notes_as_seen(results: Iterable[dict]) -> None:
    """Every pointer of a query's results (``related``, ``neighbors``, ``links``, ``hops``)
    gets its note as read from its result."""
    for result in results:
        for name in ("related", "neighbors", "links", "hops"):
            for item in result.get(name) or ():
                if item.get("note") and item.get("direction") in ("in", "out"):
                    item["note"] = note_as_seen(item["note"], item["direction"])


# The system's readings. ``{other}`` names the entry at the far end; the entry being read is
# "this one".


def supersede_note(replacement: str, retired: str) -> str:
    """``replacement supersedes retired``, written when an entry retires in its favour."""
    return two_ended(
        f"Replaces {retired}, which is retired; read this one instead.",
        f"Replaced by {replacement}; read that one instead.",
    )


def split_note(part: str, original: str) -> str:
    """``part split_from original``, written by a split."""
    return two_ended(
        f"Split out of {original}; read that one for what this part left behind.",
        f"{part} holds a part split out of this one; read it for that part.",
    )


def bridge_note(deleted: str, first: str, second: str, source: str, target: str) -> str:
    """``source → target`` bridged over the deleted entry (hops ``first`` then ``second``)."""
    hops = f"{first}, then {second}"
    return two_ended(
        f"Bridged over deleted {deleted} ({hops}): this one led to {target} through it.",
        f"Bridged over deleted {deleted} ({hops}): {source} led to this one through it.",
    )


def note_after_merge(note: str, away: str, keep: str) -> str:
    """A two-ended note re-pointed by a merge names the surviving entry, not the merged one
    (a plain note, a person's words, is kept as written)."""
    if SEPARATOR not in (note or ""):
        return note
    return note.replace(away, keep)
