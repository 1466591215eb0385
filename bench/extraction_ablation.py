"""Edge extraction ablation: each rule of the local extractor switched off, on the tuning sets.

For every rule of ``graph/ingest/extract/local.py`` / ``clauses.py`` / ``cues.py`` the rule is
switched off (by patching the module in this process only), and the local extractor reads every
sentence of the TUNING sets; each sentence is scored against its own gold. A rule earns its
place when switching it off loses a gold triple or adds a wrong one on some set, and gains
nothing on any. It never reads a blind set.

    .venv/bin/python bench/extraction_ablation.py
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TUNING = [
    ROOT / "bench/data/extraction_airline.json",
    ROOT / "bench/data/extraction_hospital.json",
    ROOT / "bench/data/extraction_tuning_extra.json",
    ROOT / "bench/data/blind/extraction_set2/extraction_theatre.json",  # demoted to tuning
    ROOT / "bench/data/blind/extraction_set3/extraction_water.json",  # demoted to tuning
    ROOT / "bench/data/blind/extraction_food_distribution.json",  # demoted to tuning
    ROOT / "bench/data/blind/extraction_set4/extraction_bus.json",  # demoted to tuning
    ROOT / "bench/data/blind/extraction_set5/extraction_hotel.json",  # demoted to tuning
]
NEVER = re.compile(r"(?!x)x")
OLD_COORDINATION = re.compile(
    r"^\s*(?:,\s*(?:and|or)?|and|or|as well as)\s+(?:the\s+|a\s+|an\s+)?$"
)
NEW_HEDGES = {
    "maybe", "likely", "unlikely", "think", "believe", "seems", "seem", "presumably",
    "apparently", "supposedly", "reportedly", "ideally",
}  # fmt: skip


def switches():
    """Rule name → (module or class, attribute, replacement) to switch it off."""
    from graph.ingest.extract import clauses as cl
    from graph.ingest.extract import cues, local, phrases
    from graph.ingest.extract import sequences as sq

    ext = local.LocalExtractor
    carried = ext._carried_subject

    def no_and(self, r, clause_start, previous):
        word = re.search(r"(\w+)$", r.sentence[:clause_start].rstrip())
        if word and word.group(1).lower() in {"and", "but"}:
            return None
        return carried(self, r, clause_start, previous)

    return {
        "relative clauses": (cl, "relative_head", lambda s, m, ms: (False, None)),
        "parentheticals": (cl, "parenthetical_head", lambda *a: None),
        "relative pronoun subject": (cl, "antecedent_of", lambda *a: None),
        "shared subject after and/but": (ext, "_carried_subject", no_and),
        "coordinated subjects": (ext, "_coordinated_before", lambda self, r, m: []),
        "list ends at a verb": (cl, "ends_noun_phrase", lambda s, e: True),
        "possessor": (cl, "possessor", lambda s, e: False),
        "name after a preposition": (cl, "after_preposition", lambda *a: False),
        "name inside another noun phrase": (local, "_clean_object_gap", local._clean_gap),
        "object modifying the next noun": (cl, "object_ends", lambda s, e: True),
        "subject modifying the next noun": (cl, "modifies_next_noun", lambda *a: False),
        "plural verb forms": (phrases, "plural_form", lambda p: None),
        "reduced participles": (phrases, "reduced_form", lambda p: None),
        "the <head noun> is the entry": (ext, "_names_the_entry", lambda self, w: False),
        "restriction only on/when": (cues, "RESTRICTION", NEVER),
        "fronted When": (cues, "FRONTED_CONDITION", NEVER),
        "hedges think/likely/...": (cues, "HYPOTHESIS", cues.HYPOTHESIS - NEW_HEDGES),
        # issue 21, branch extract2
        "reported speech, hearsay": (cues, "REPORTED", NEVER),
        "cues per clause (; , but)": (cues, "CLAUSE_BREAK", NEVER),
        "'follows X to the letter'": (cues, "COMPLIANCE", NEVER),
        "'May' the month": (cues, "MONTH_MAY", NEVER),
        "perfect/past of a passive": (phrases, "perfect_forms", lambda p, e: []),
        "passive of an active phrase": (phrases, "passive_form", lambda p: None),
        "adverb inside a phrase": (phrases, "INNER_ADVERB", "(?!x)x"),
        "article, ordinal in a phrase": (phrases, "ARTICLE", "(?:a|an)"),
        "verb shared by 2 prepositions": (phrases.PhraseMatcher, "elided", lambda *a: []),
        "object closed (adverb, though)": (cl, "closes_object", lambda s, n: False),
        "small clause 'X being ...'": (cl, "small_clause_follows", lambda s, e: False),
        "aspectual 'before X starts'": (cl, "ASPECTUAL", set()),
        "a group's members": (cl, "members_follow", lambda s, e: False),
        "discourse parenthetical": (cl, "DISCOURSE", set()),
        "run of parentheticals": (cl, "_has_verb_lead", lambda s, c: True),
        "asides between dashes": (cl, "DASH_ASIDE", NEVER),
        "'respectively'": (cl, "pairs", lambda s, e, a, b: [(x, y) for y in b for x in a]),
        "object 'it' is the entry": (cl, "pronoun_object_ends", lambda s, e: False),
        "stranded preposition": (cl, "stranded", lambda *a: False),
        "participle in a list": (local, "COORDINATION", OLD_COORDINATION),
        "'X for Y' subject is X": (cl, "head_of_modifier", lambda *a: None),
        "'First A, then B'": (sq, "then_list", lambda s, m: []),
        "fronted 'After/Once X,'": (sq, "fronted_after", lambda s, m: None),
        "adverbial before 'by'": (phrases, "ADVERBIAL", "(?!x)x"),
        "'after X is signed'": (cl, "temporal_clause", lambda s, st, n: False),
        "ellipsis '; Y does'": (cl, "elliptical_subjects", lambda *a: iter(())),
        # issue 21, branch extract (round 4)
        "present 'when' after the clause": (cues, "WHEN", NEVER),
        "in case/provided/as long as/...": (cues, "CONDITION", NEVER),
        "'cannot ... without/until'": (phrases, "CANNOT_WITHOUT", "(?!x)x"),
        "object inside 'verb ... prep'": (phrases, "split_verb", lambda w: False),
        "class synonyms (is held by...)": (phrases, "class_synonyms", lambda v: {}),
        "'<label> sequence: A, B, C'": (sq, "ORDER_LABEL", NEVER),
        "'Owned by X: A, B' label": (cl, "label_subjects", lambda *a: []),
    }


def score(bank, data: dict, refs: dict[str, int]) -> Counter:
    from graph.ingest.extract.base import Vocabulary
    from graph.ingest.extract.local import LocalExtractor, PhraseMatcher
    from graph.ingest.extract.mentions import MentionIndex
    from kb.models import Entry

    index, vocabulary = MentionIndex(bank), Vocabulary.for_bank(bank)
    extractor = LocalExtractor(index)
    extractor._matcher, extractor._vocabulary = PhraseMatcher(vocabulary), vocabulary
    out: Counter = Counter()
    for item in data["entries"]:
        source = refs[item.get("ref", item["title"])]
        extractor.about(Entry.objects.select_related("kind").get(pk=source))
        for sentence in item.get("sentences", []):
            gold = {(refs[a], r, refs[b]) for a, r, b in sentence["gold"]}
            got, unresolved = set(), 0
            for st in extractor.read_sentence(sentence["text"]):
                pairs = ((st.from_text, st.from_self), (st.to_text, st.to_self))
                ends = [source if own else index.resolve(text).entry_pk for text, own in pairs]
                if None in ends:
                    unresolved += 1
                elif ends[0] != ends[1]:
                    got.add((ends[0], st.relation, ends[1]))
            out["gold"] += len(gold)
            out["found"] += len(got & gold)
            out["wrong"] += len(got - gold)
            out["unresolved"] += unresolved
    return out


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("KB_EMBEDDER", "hashing")
    import django

    django.setup()
    from django.db import transaction
    from django.utils import timezone

    from bench.extraction import build_bank
    from kb.models import Bank

    stamp = f"{timezone.now():%Y%m%d-%H%M%S}"
    with transaction.atomic():
        sets = []
        for n, path in enumerate(TUNING):
            data = json.loads(path.read_text())
            bank = Bank.objects.create(slug=f"bench-ablation-{n}-{stamp}", name="Ablation")
            sets.append((path.stem.removeprefix("extraction_"), bank, data, build_bank(bank, data)))
        print(f"{'without':<34}" + "".join(f"{name:>20}" for name, *_ in sets))
        rules = {"(all rules on)": None, **switches()}
        for rule, switch in rules.items():
            if switch is not None:
                owner, attr, off = switch
                saved = getattr(owner, attr)
                setattr(owner, attr, off)
            cells = []
            for _name, bank, data, refs in sets:
                c = score(bank, data, refs)
                cells.append(f"{c['found']}/{c['gold']} w{c['wrong']} u{c['unresolved']}")
            if switch is not None:
                setattr(owner, attr, saved)
            print(f"{rule:<34}" + "".join(f"{cell:>20}" for cell in cells))
        transaction.set_rollback(True)


if __name__ == "__main__":
    main()
