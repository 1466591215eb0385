"""Aliases (surface forms naming an entry) and resolution with abstention."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

from graph.models import Alias
from kb import audit
from kb.errors import Conflict, InvalidInput
from kb.models import Bank, Entry, EntryStatus, OperationKind

RESOLVE_CONFIDENT = 90.0  # fuzzy score at or above which a single clear winner resolves
RESOLVE_MARGIN = 6.0  # ... and it must beat the runner-up by this much
RESOLVE_CANDIDATE = 70.0  # below this nothing is a candidate: not_found


def normalize(text: str) -> str:
    """Case-, accent- and punctuation-insensitive form: 'Reports-Service' → 'reports service'."""
    text = unicodedata.normalize("NFKD", text or "")
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    return re.sub(r"[\W_]+", " ", text).strip()


def add_alias(
    bank: Bank, entry: Entry, surface: str, *, source: str = "staff", actor: str | None = None
) -> Alias:
    """Name ``entry`` by ``surface`` (409 if the normalised form already names an entry)."""
    if not isinstance(surface, str) or not normalize(surface):
        raise InvalidInput(
            "An alias needs letters or digits.", code="invalid_alias", fields={"alias": "Empty."}
        )
    if len(surface) > 300:
        raise InvalidInput(
            "An alias must be at most 300 characters.",
            code="invalid_alias",
            fields={"alias": "Too long."},
        )
    norm = normalize(surface)
    with audit.operation(bank, OperationKind.LINK, actor=actor, alias=surface) as op:
        existing = Alias.objects.filter(bank=bank, normalized=norm).first()
        if existing is not None:
            if existing.entry_id == entry.pk:
                return existing
            raise Conflict(
                f"The alias {surface!r} already names another entry.", code="duplicate_alias"
            )
        return Alias.objects.create(
            bank=bank,
            entry=entry,
            surface=surface.strip(),
            normalized=norm,
            source=source,
            actor=op.actor,
        )


@dataclass
class Resolution:
    status: str  # resolved | ambiguous | not_found
    matched: str | None = None  # short_id | key | alias | fuzzy
    entry: Entry | None = None
    candidates: list[dict] = field(default_factory=list)


def _follow(entry: Entry) -> Entry:
    seen = set()
    while entry.merged_into_id and entry.pk not in seen:
        seen.add(entry.pk)
        entry = Entry.objects.select_related("kind").get(pk=entry.merged_into_id)
    return entry


def resolve(bank: Bank, text: str, *, limit: int = 5) -> Resolution:
    """short_id, key, alias, then fuzzy matching with an abstention band."""
    text = (text or "").strip()
    if not text:
        return Resolution("not_found")
    live = (
        Entry.objects.filter(bank=bank).exclude(status=EntryStatus.DELETED).select_related("kind")
    )
    for matched, lookup in (("short_id", {"short_id": text.lower()}), ("key", {"key": text})):
        entry = live.filter(**lookup).first()
        if entry is not None:
            return Resolution("resolved", matched, _follow(entry))
    norm = normalize(text)
    alias = Alias.objects.filter(bank=bank, normalized=norm).select_related("entry").first()
    if alias is not None and alias.entry.status != EntryStatus.DELETED:
        return Resolution("resolved", "alias", _follow(alias.entry))
    # Fuzzy: over titles, keys and aliases of entries that are not merged away.
    choices: dict[str, list[int]] = {}
    for pk, title, key in live.exclude(status=EntryStatus.MERGED).values_list("pk", "title", "key"):
        for surface in (title, key):
            if surface:
                choices.setdefault(normalize(surface), []).append(pk)
    for pk, alias_norm in Alias.objects.filter(bank=bank).values_list("entry_id", "normalized"):
        choices.setdefault(alias_norm, []).append(pk)
    if not norm or not choices:
        return Resolution("not_found")
    scored: dict[int, float] = {}
    for surface, score, _ in process.extract(
        norm, list(choices), scorer=fuzz.WRatio, limit=limit * 4
    ):
        for pk in choices[surface]:
            scored[pk] = max(scored.get(pk, 0.0), float(score))
    ranked = sorted(scored.items(), key=lambda kv: -kv[1])
    ranked = [(pk, s) for pk, s in ranked if s >= RESOLVE_CANDIDATE][:limit]
    if not ranked:
        return Resolution("not_found")
    entries = Entry.objects.select_related("kind").in_bulk([pk for pk, _ in ranked])
    candidates = [
        {"id": entries[pk].short_id, "title": entries[pk].title, "score": round(s / 100, 3)}
        for pk, s in ranked
    ]
    best_pk, best = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
    if best >= RESOLVE_CONFIDENT and best - runner_up >= RESOLVE_MARGIN:
        return Resolution("resolved", "fuzzy", _follow(entries[best_pk]), candidates)
    return Resolution("ambiguous", None, None, candidates)
