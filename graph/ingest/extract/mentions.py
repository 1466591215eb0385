"""Entity mentions: find the bank's names in prose and resolve surface forms, with abstention.

One :class:`MentionIndex` is built per extraction run (three statements: entries, aliases),
so resolving thousands of surface forms costs no query each. Its answers follow the resolve
service (``graph.resolution.aliases.resolve``): short_id, key, alias, then names; a form that
names several entries is *ambiguous* (all candidates kept), and fuzzy matching only resolves
a clear winner. Fuzzy matching uses plain edit similarity rather than the resolve service's
partial-match scorer: "the hangar" must not resolve to "Hangar 3 slot planning" here,
because a wrong end makes a plausible false edge (``004_*`` 12.4: bias toward precision).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

from graph.models import Alias
from graph.resolution.aliases import (
    RESOLVE_CONFIDENT,
    RESOLVE_FLOOR,
    RESOLVE_MARGIN,
    normalize,
)
from kb.models import Bank, Entry, EntryStatus

TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
MAX_MENTION_TOKENS = 10
LEADING_WORDS = {
    "the", "a", "an", "our", "its", "their", "this", "that", "these", "those", "each", "every",
    "any", "all", "both", "new", "current",
}  # fmt: skip
STOPWORDS = LEADING_WORDS | {
    "and", "or", "of", "to", "in", "on", "for", "by", "with", "is", "are", "be", "it", "as",
    "at", "from", "not", "no",
}  # fmt: skip


@dataclass(frozen=True)
class Mention:
    """A name of the bank found in a text: character offsets and the entries it names."""

    start: int
    end: int
    entry_pks: tuple[int, ...]


@dataclass
class Resolved:
    """A surface form resolved: ``resolved`` (one entry), ``ambiguous`` or ``not_found``."""

    status: str
    entry_pk: int | None = None
    matched: str | None = None  # short_id | key | alias | title | fuzzy
    candidates: list[dict] = field(default_factory=list)


def significant(norm: str) -> bool:
    """A name worth finding in prose: not only stopwords, not a lone letter ("QA" counts)."""
    tokens = norm.split()
    content = [t for t in tokens if t not in STOPWORDS]
    return bool(content) and (len(tokens) > 1 or len(tokens[0]) >= 2)


def strip_leading(norm: str) -> str:
    tokens = norm.split()
    while tokens and tokens[0] in LEADING_WORDS:
        tokens.pop(0)
    return " ".join(tokens)


def head_noun_names(info: dict[int, tuple[str, str, str]], names: dict) -> dict[str, int]:
    """ "the station" for the one entry whose title of two words or more ends in "Station":
    a lower-case reference names an entry when exactly one title has that head noun, and no
    name of the bank is already spelled so."""
    heads: dict[str, set[int]] = {}
    for pk, (_, title, _) in info.items():
        tokens = normalize(title).split()
        if len(tokens) >= 2 and tokens[-1].isalpha() and len(tokens[-1]) >= 4:
            if tokens[-1] not in STOPWORDS:
                heads.setdefault(tokens[-1], set()).add(pk)
    return {
        f"the {head}": next(iter(pks))
        for head, pks in heads.items()
        if len(pks) == 1 and f"the {head}" not in names and head not in names
    }


class MentionIndex:
    """The bank's names (titles, keys, aliases, short ids) of entries that are not merged away
    or deleted, for finding mentions in text and resolving surface forms."""

    def __init__(self, bank: Bank):
        self.info: dict[int, tuple[str, str, str]] = {}  # pk -> (short_id, title, kind)
        self.short_ids: dict[str, int] = {}
        self.keys: dict[str, int] = {}
        self.aliases: dict[str, set[int]] = {}
        self.titles: dict[str, set[int]] = {}
        rows = (
            Entry.objects.filter(bank=bank)
            .exclude(status__in=[EntryStatus.MERGED, EntryStatus.DELETED])
            .values_list("pk", "short_id", "key", "title", "kind__name")
        )
        for pk, short_id, key, title, kind in rows:
            self.info[pk] = (short_id, title, kind)
            self.short_ids[short_id] = pk
            if key:
                self.keys[key] = pk
            self.titles.setdefault(normalize(title), set()).add(pk)
        merged = dict(
            Entry.objects.filter(bank=bank, status=EntryStatus.MERGED).values_list(
                "pk", "merged_into_id"
            )
        )
        for pk, norm in Alias.objects.filter(bank=bank).values_list("entry_id", "normalized"):
            seen = set()
            while pk in merged and pk not in seen:  # an alias of a merged entry names its survivor
                seen.add(pk)
                pk = merged[pk]
            if pk in self.info:
                self.aliases.setdefault(norm, set()).add(pk)
        self._names: dict[str, set[int]] = {}
        for table in (self.titles, self.aliases):
            for norm, pks in table.items():
                self._names.setdefault(norm, set()).update(pks)
        for key, pk in self.keys.items():
            self._names.setdefault(normalize(key), set()).add(pk)
        self._trie: dict[tuple[str, ...], tuple[int, ...]] = {}
        for norm, pks in self._names.items():
            tokens = tuple(norm.split())
            if tokens and len(tokens) <= MAX_MENTION_TOKENS and significant(norm):
                self._trie[tokens] = tuple(sorted(pks))
        for short_id, pk in self.short_ids.items():
            self._trie[(short_id,)] = (pk,)
        self.heads = head_noun_names(self.info, self._names)
        self._head_keys = {tuple(form.split()) for form in self.heads}
        for form, pk in self.heads.items():
            self._trie.setdefault(tuple(form.split()), (pk,))

    # --- finding names in prose ------------------------------------------------------------

    def find(self, text: str, own_nouns: Collection[str] = ()) -> list[Mention]:
        """Every name of the bank in ``text``, longest first, never overlapping. A head noun
        in ``own_nouns`` ("the policy" in a policy's text) names the entry being read, not
        the one entry whose title ends in it: it is left to the reader."""
        skip = {form for form in self._head_keys if form[-1] in own_nouns}
        tokens = [(m.start(), m.end(), normalize(m.group())) for m in TOKEN.finditer(text)]
        found, i = [], 0
        while i < len(tokens):
            hit = self._longest_at(tokens, i, skip)
            if hit is not None and tokens[i][2] in LEADING_WORDS:
                # "the Dress Rehearsal": an alias "the dress" must not swallow the article of
                # a longer name starting at the next word.
                later = self._longest_at(tokens, i + 1, skip)
                if later is not None and later[0] + 1 > hit[0]:
                    i, hit = i + 1, later
            if hit is None:
                i += 1
                continue
            n, pks = hit
            found.append(Mention(tokens[i][0], tokens[i + n - 1][1], pks))
            i += n
        return found

    def _longest_at(self, tokens: list, i: int, skip=()) -> tuple[int, tuple[int, ...]] | None:
        for n in range(min(MAX_MENTION_TOKENS, len(tokens) - i), 0, -1):
            key = tuple(t[2] for t in tokens[i : i + n])
            if key in self._trie and key not in skip:
                return n, self._trie[key]
        return None

    # --- resolving a surface form ------------------------------------------------------------

    def candidates(self, pks) -> list[dict]:
        return [
            {"id": self.info[pk][0], "title": self.info[pk][1]}
            for pk in sorted(pks, key=lambda p: self.info[p][1])
        ]

    def _exact(self, pks: set[int], matched: str) -> Resolved:
        if len(pks) == 1:
            return Resolved("resolved", next(iter(pks)), matched)
        return Resolved("ambiguous", None, matched, self.candidates(pks))

    def resolve(self, text: str) -> Resolved:
        text = (text or "").strip()
        if not text:
            return Resolved("not_found")
        if text.lower() in self.short_ids:
            return Resolved("resolved", self.short_ids[text.lower()], "short_id")
        if text in self.keys:
            return Resolved("resolved", self.keys[text], "key")
        norm = normalize(text)
        for form in dict.fromkeys([norm, strip_leading(norm)]):
            if form in self.aliases:
                return self._exact(self.aliases[form], "alias")
            if form in self._names:
                return self._exact(self._names[form], "title")
        if norm in self.heads:  # "the station": the one entry whose title ends in "Station"
            return Resolved("resolved", self.heads[norm], "head_noun")
        form = strip_leading(norm)
        if not form or not self._names:
            return Resolved("not_found")
        scored: dict[int, float] = {}
        for name, score, _ in process.extract(
            form, list(self._names), scorer=fuzz.ratio, limit=20, score_cutoff=RESOLVE_FLOOR
        ):
            for pk in self._names[name]:
                scored[pk] = max(scored.get(pk, 0.0), float(score))
        ranked = sorted(scored.items(), key=lambda kv: -kv[1])
        if not ranked:
            return Resolved("not_found")
        best_pk, best = ranked[0]
        runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
        if best >= RESOLVE_CONFIDENT and best - runner_up >= RESOLVE_MARGIN:
            return Resolved("resolved", best_pk, "fuzzy")
        cands = [
            {"id": self.info[pk][0], "title": self.info[pk][1], "score": round(s / 100, 3)}
            for pk, s in ranked[:5]
        ]
        return Resolved("ambiguous", None, "fuzzy", cands)
