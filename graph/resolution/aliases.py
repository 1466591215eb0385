"""Aliases (surface forms naming an entry) and resolution with abstention."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from rapidfuzz import fuzz

from graph.models import Alias
from kb.errors import InvalidInput, NotFound
from kb.models import Bank, Entry, EntryStatus, OperationKind
from kb.unit_of_work import unit_of_work

# Fuzzy resolution: scores are 0–100 over titles, keys (and their last segment) and aliases.
RESOLVE_CONFIDENT = 88.0  # a single clear winner at or above this resolves
RESOLVE_MARGIN = 8.0  # ... and it must beat the runner-up by this much (else: ambiguous)
RESOLVE_FLOOR = 72.0  # abstention: below this nothing is a candidate, so not_found
ENTITY_BONUS = 5.0  # a bare name (a few words) prefers kinds that name things
BARE_NAME_WORDS = 4
FUZZY_CEILING = 99.0  # a fuzzy score never reaches an exact match's 100


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
    with unit_of_work(
        bank,
        OperationKind.ALIAS,
        reason=f"alias “{surface.strip()}” added to {entry.short_id}",
        actor=actor,
        alias=surface,
        entry=entry.short_id,
    ) as op:
        existing = Alias.objects.filter(bank=bank, normalized=norm, entry=entry).first()
        if existing is not None:
            return existing  # a form may name several entries, but each pair only once
        return Alias.objects.create(
            bank=bank,
            entry=entry,
            surface=surface.strip(),
            normalized=norm,
            source=source,
            actor=op.actor,
        )


def names_taken(bank: Bank, entry: Entry, surface: str) -> list[Entry]:
    """The other current entries ``surface`` already names, by title or by alias: adding it
    to ``entry`` would make the name ambiguous (or steal it, since resolve reads aliases
    before titles). The admin asks for a confirmation naming them."""
    norm = normalize(surface) if isinstance(surface, str) else ""
    if not norm:
        return []
    gone = (EntryStatus.DELETED, EntryStatus.MERGED)
    by_alias = Alias.objects.filter(bank=bank, normalized=norm).values("entry_id")
    words = [w for w in norm.split() if w]
    titled = Entry.objects.filter(bank=bank)
    for word in words:  # narrow in SQL, compare normalised titles exactly in Python
        titled = titled.filter(title__icontains=word)
    candidates = Entry.objects.filter(bank=bank, pk__in=by_alias) | Entry.objects.filter(
        pk__in=titled.values("pk")[:200]
    )
    found = (
        candidates.exclude(pk=entry.pk).exclude(status__in=gone).select_related("kind").distinct()
    )
    alias_named = set(by_alias.values_list("entry_id", flat=True))
    return [e for e in found if e.pk in alias_named or normalize(e.title) == norm]


def remove_alias(
    bank: Bank, entry: Entry, surface: str, *, reason: str = "", actor: str | None = None
) -> Alias:
    """Stop ``surface`` naming ``entry`` (one ``unlink`` operation; revertible). 404
    ``alias_not_found`` when that form does not name this entry."""
    norm = normalize(surface) if isinstance(surface, str) else ""
    alias = Alias.objects.filter(bank=bank, entry=entry, normalized=norm).first() if norm else None
    if alias is None:
        raise NotFound(f"{surface!r} is not an alias of {entry.short_id}.", code="alias_not_found")
    with unit_of_work(
        bank,
        OperationKind.UNALIAS,
        reason=reason or f"alias “{alias.surface}” removed from {entry.short_id}",
        actor=actor,
        entry=entry.short_id,
        alias=alias.surface,
    ):
        alias.delete()
    return alias


@dataclass
class Resolution:
    status: str  # resolved | ambiguous | not_found
    matched: str | None = None  # short_id | key | exact (a title) | alias | fuzzy
    entry: Entry | None = None
    candidates: list[dict] = field(default_factory=list)


def _follow(entry: Entry) -> Entry:
    seen = set()
    while entry.merged_into_id and entry.pk not in seen:
        seen.add(entry.pk)
        entry = Entry.objects.select_related("kind").get(pk=entry.merged_into_id)
    return entry


def candidate(entry: Entry, score: float) -> dict:
    """What an agent needs to choose between candidates: id, title, kind, key and score."""
    return {
        "id": entry.short_id,
        "title": entry.title,
        "kind": entry.kind.name,
        "key": entry.key,
        "score": round(score, 3),
    }


def _key_forms(key: str) -> list[str]:
    """A key and its last segment: ``service:billing`` is also named ``billing``."""
    forms = [key]
    tail = re.split(r"[:/]", key)[-1]
    if tail and tail != key:
        forms.append(tail)
    return forms


def surface_score(
    query: str,
    surface: str,
    generic: set[str] = frozenset(),
    weight: Callable[[str], float] | None = None,
) -> float:
    """How well ``surface`` (normalised) names what ``query`` (normalised) asks for, 0–100.

    Full-string similarity (typos, word order), or containment: every query word is in the
    surface, scored by how much of the surface the query covers, each word counted by
    ``weight`` (its rarity in the bank: "Dr" covers less of "Dr Okafor" than "Okafor" does).
    ``generic`` words (the entry's kind name: "Billing *service*") do not count against the
    cover. Partial-substring scores are never used: they made every title containing
    "billing" a 0.9 tie.
    """
    if query == surface:
        return 100.0
    best = max(fuzz.ratio(query, surface), fuzz.token_sort_ratio(query, surface))
    q_words, s_words = set(query.split()), set(surface.split())
    if q_words and q_words <= s_words:
        meaningful = (s_words - generic) | (q_words & generic)
        w = weight or (lambda _word: 1.0)
        cover = sum(map(w, q_words)) / max(sum(map(w, meaningful)), 1e-9)
        best = max(best, 70.0 + 25.0 * min(cover, 1.0))
    return float(best)


def _bare_name(norm: str) -> bool:
    return 0 < len(norm.split()) <= BARE_NAME_WORDS


def resolve(bank: Bank, text: str, *, limit: int = 5) -> Resolution:
    """short_id, key, exact title or alias, then fuzzy matching with an abstention band.

    Exact means equal up to case, white space, accents and punctuation (:func:`normalize`),
    scores 1.0 and answers ``matched`` ``key``, ``exact`` (a title) or ``alias``; a form that
    names several entries so answers ``ambiguous`` with all of them. Fuzzy scores stay under
    1.0 and resolve only a clear winner (≥ ``RESOLVE_CONFIDENT`` and ahead of the runner-up by
    ``RESOLVE_MARGIN``); for a bare name, kinds flagged ``entity`` (service, team, person …) get
    ``ENTITY_BONUS``; nothing scoring under ``RESOLVE_FLOOR`` is a candidate. ``ambiguous``
    always lists two or more candidates: a lone fuzzy candidate under the bar is ``not_found``
    with that candidate listed.
    """
    text = " ".join((text or "").split())
    if not text:
        return Resolution("not_found")
    live = (
        Entry.objects.filter(bank=bank).exclude(status=EntryStatus.DELETED).select_related("kind")
    )
    entry = live.filter(short_id=text.lower()).first()
    if entry is not None:
        return Resolution("resolved", "short_id", _follow(entry))
    keyed = list(live.filter(key__iexact=text).order_by("id")[:limit])
    if len({e.pk for e in keyed}) == 1 or any(e.key == text for e in keyed):
        exact = next((e for e in keyed if e.key == text), keyed[0])
        return Resolution("resolved", "key", _follow(exact))
    norm = normalize(text)
    if not norm:
        return Resolution("not_found")
    named, how = _named_exactly(bank, live, norm)
    for entry in keyed:
        named.setdefault(_follow(entry).pk, _follow(entry))
        how.setdefault(_follow(entry).pk, "key")
    if len(named) == 1:
        ((pk, entry),) = named.items()
        return Resolution("resolved", how[pk], entry)
    if len(named) > 1:
        kinds = set(how.values())
        matched = kinds.pop() if len(kinds) == 1 else None
        return Resolution("ambiguous", matched, None, [candidate(e, 1.0) for e in named.values()])
    return _fuzzy(bank, live, norm, limit)


def _named_exactly(bank: Bank, live, norm: str) -> tuple[dict[int, Entry], dict[int, str]]:
    """Entries whose alias or title equals ``norm`` (normalised), and how each matched."""
    named: dict[int, Entry] = {}
    how: dict[int, str] = {}
    for alias in (
        Alias.objects.filter(bank=bank, normalized=norm)
        .exclude(entry__status=EntryStatus.DELETED)
        .select_related("entry__kind")
        .order_by("id")
    ):
        survivor = _follow(alias.entry)
        named.setdefault(survivor.pk, survivor)
        how.setdefault(survivor.pk, "alias")
    # Titles: narrowed in SQL by the longest word, compared on the normalised form in Python.
    longest = max(norm.split(), key=len)
    titled = live.exclude(status=EntryStatus.MERGED).filter(title__icontains=longest)
    for entry in titled.order_by("id")[:200]:
        if normalize(entry.title) == norm:
            named.setdefault(entry.pk, entry)
            how[entry.pk] = "exact"
    return named, how


def _fuzzy(bank: Bank, live, norm: str, limit: int) -> Resolution:
    rows = live.exclude(status=EntryStatus.MERGED).values_list(
        "pk", "title", "key", "kind__name", "kind__entity", "kind__structural"
    )
    surfaces: dict[int, set[str]] = {}
    meta: dict[int, tuple[str, bool]] = {}
    for pk, title, key, kind, entity, structural in rows:
        forms = {normalize(title)} if title else set()
        # A key names its entry; its last segment is a bare name only for entity kinds
        # ("service:billing" is "billing", "recipe:ledger" is no name for "ledger").
        for form in (_key_forms(key) if entity or structural else [key]) if key else []:
            forms.add(normalize(form))
        surfaces[pk] = {f for f in forms if f}
        meta[pk] = (kind, bool(entity or structural))
    for pk, alias_norm in Alias.objects.filter(bank=bank, entry_id__in=surfaces).values_list(
        "entry_id", "normalized"
    ):
        surfaces[pk].add(alias_norm)
    bare = _bare_name(norm)
    frequency = Counter(
        word for forms in surfaces.values() for word in set(" ".join(forms).split())
    )
    total = max(len(surfaces), 1)

    def rarity(word: str) -> float:
        return math.log(1 + total / frequency.get(word, 1))

    scored: list[tuple[float, int]] = []
    for pk, forms in surfaces.items():
        kind, entity = meta[pk]
        generic = set(normalize(kind).split())
        score = max((surface_score(norm, form, generic, rarity) for form in forms), default=0.0)
        if score < RESOLVE_FLOOR:
            continue
        if bare and entity:
            score += ENTITY_BONUS
        score = min(score, FUZZY_CEILING)  # 1.0 belongs to exact matches
        scored.append((score, pk))
    if not scored:
        return Resolution("not_found")
    scored.sort(key=lambda item: (-item[0], item[1]))
    ranked = scored[:limit]
    entries = Entry.objects.select_related("kind").in_bulk([pk for _, pk in ranked])
    candidates = [candidate(entries[pk], s / 100) for s, pk in ranked]
    best, best_pk = ranked[0]
    runner_up = ranked[1][0] if len(ranked) > 1 else 0.0
    if best >= RESOLVE_CONFIDENT and best - runner_up >= RESOLVE_MARGIN:
        return Resolution("resolved", "fuzzy", _follow(entries[best_pk]), candidates)
    if len(candidates) < 2:
        return Resolution("not_found", None, None, candidates)
    return Resolution("ambiguous", None, None, candidates)
