"""Resolve measured on a labelled set: two domains of entities, documents that mention them,
and surface forms labelled with the entry they name, ``ambiguous``, ``not_found`` or
``not_resolved`` (either of the two: the form must not resolve).

Precision is the share of resolved answers that name the right entry; recall the share of
forms labelled with an entry that resolve to it; abstention the share of forms labelled
not to resolve that do not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from graph.resolution.aliases import add_alias, resolve
from kb.models import Bank
from kb.services.entries import clean_entry_data, create_entry

DATA = Path(__file__).resolve().parents[2] / "bench" / "data" / "resolve_labelled.json"


@dataclass
class ResolveScore:
    resolved: int = 0
    resolved_right: int = 0
    should_resolve: int = 0
    should_abstain: int = 0
    abstained_right: int = 0
    matched_labelled: int = 0  # resolved answers to queries labelled with a ``matched``
    matched_right: int = 0
    misses: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.resolved_right / self.resolved if self.resolved else 1.0

    @property
    def recall(self) -> float:
        return self.resolved_right / self.should_resolve if self.should_resolve else 1.0

    @property
    def abstention(self) -> float:
        return self.abstained_right / self.should_abstain if self.should_abstain else 1.0


def domains(path: Path | None = None) -> dict:
    return json.loads((path or DATA).read_text())["domains"]


def load_domain(bank: Bank, spec: dict) -> dict[str, str]:
    """Create the domain's entries and aliases in ``bank``; return key → short_id."""
    ids = {}
    for item in spec["entries"]:
        data = clean_entry_data(
            bank,
            {
                "title": item["title"],
                "content": f"{item['title']}.",
                "kind": item["kind"],
                "key": item["key"],
                "lifetime": {"durable": True},
            },
        )
        entry = create_entry(bank, data, actor="resolve-eval", allow_duplicate=True)
        ids[item["key"]] = entry.short_id
        for alias in item.get("aliases", []):
            add_alias(bank, entry, alias, source="import", actor="resolve-eval")
    return ids


def evaluate(bank: Bank, spec: dict, ids: dict[str, str]) -> ResolveScore:
    score = ResolveScore()
    for query in spec["queries"]:
        result = resolve(bank, query["q"])
        expect = query["expect"]
        got = result.entry.short_id if result.status == "resolved" else result.status
        if result.status == "resolved":
            score.resolved += 1
        if expect in ("ambiguous", "not_found", "not_resolved"):
            score.should_abstain += 1
            ok = result.status != "resolved" and expect in ("not_resolved", result.status)
            score.abstained_right += ok
        else:
            score.should_resolve += 1
            ok = result.status == "resolved" and got == ids[expect]
        if result.status == "resolved" and got == ids.get(expect):
            score.resolved_right += 1
            if "matched" in query:
                score.matched_labelled += 1
                said = "exact" if result.matched == "key" else result.matched
                score.matched_right += said == query["matched"]
                if said != query["matched"]:
                    score.misses.append(f"{query['q']!r}: matched {said}, label {query['matched']}")
        if not ok:
            score.misses.append(f"{query['q']!r}: expected {expect}, got {got}")
    return score
