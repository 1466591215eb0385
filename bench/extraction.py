"""Edge extraction benchmark: precision and recall against a hand-labelled set, and yield per kind.

The data set (``bench/data/extraction_airline.json``) is airline line maintenance — a domain
none of the demo banks touches: 27 named entries (teams, roles, systems, artifacts, policies;
two entries share the title "Duty Manager", so that name is genuinely ambiguous) and 16
documents whose 78 sentences carry 53 gold triples. Negated, hedged and merely topical
sentences carry none.

On the configured database, in fresh banks ``bench-extract-*`` inside one transaction that is\nrolled back at the end:

1. **local**: ``extract_edges(bank, extractor="local")`` — the phrases of the vocabulary.
2. **llm**: the same through the HTTP extractor against a loopback chat-completions stand-in
   (``graph.ingest.extract.standin``) replaying ``bench/data/extraction_airline_llm.json``.
   Those answers are HAND-WRITTEN stand-ins with typical model mistakes, not recordings of a
   model: the numbers say what the pipeline (validation, resolution, abstention) makes of
   such answers, not how good any model is.

A queued proposal with both ends resolved is *correct* when (from, relation, to) is a gold
triple of its document. Precision = correct / resolved proposals; recall = gold triples found
/ gold triples. Proposals with an unresolved end are counted apart (they wait for a curator
to name the entry; none is ever written on its own).

    .venv/bin/python bench/extraction.py [--data bench/data/extraction_airline.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build_bank(bank, data: dict) -> dict[str, int]:
    """Entries, aliases and the bank's own relations of the data set; returns ref → entry pk."""
    from graph.models import EdgeType
    from graph.resolution.aliases import add_alias
    from kb.services.entries import clean_entry_data, create_entry

    for rel in data.get("relations", []):
        EdgeType.objects.create(
            bank=bank,
            name=rel["name"],
            inverse=rel.get("inverse", ""),
            description=rel.get("description", ""),
            phrases=rel.get("phrases", []),
            inverse_phrases=rel.get("inverse_phrases", []),
        )
    refs: dict[str, int] = {}
    for item in data["entries"]:
        content = item.get("content") or " ".join(s["text"] for s in item.get("sentences", []))
        payload = {
            "title": item["title"],
            "content": content,
            "kind": item["kind"],
            "lifetime": {"durable": True},
        }
        if item.get("key"):
            payload["key"] = item["key"]
        entry = create_entry(bank, clean_entry_data(bank, payload), allow_duplicate=True)
        ref = item.get("ref", item["title"])
        if ref in refs:
            raise SystemExit(f"{ref!r} twice in the data set: give one a 'ref'.")
        refs[ref] = entry.pk
        for alias in item.get("aliases", []):
            add_alias(bank, entry, alias)
    return refs


def gold_by_document(data: dict, refs: dict[str, int]) -> dict[int, set[tuple]]:
    gold: dict[int, set[tuple]] = defaultdict(set)
    for item in data["entries"]:
        source = refs[item.get("ref", item["title"])]
        for sentence in item.get("sentences", []):
            for a, rel, b in sentence["gold"]:
                gold[source].add((refs[a], rel, refs[b]))
    return gold


def score(bank, data: dict, refs: dict[str, int]) -> dict:
    from graph.models import EdgeProposal

    gold = gold_by_document(data, refs)
    kinds = {
        refs[i.get("ref", i["title"])]: i["kind"] for i in data["entries"] if i.get("sentences")
    }
    correct = resolved = unresolved = 0
    # Sentences labelled with a cue (negation, hypothesis, history, plan, question: gold []):
    # any proposal quoting one is counted apart, whether or not its ends resolved.
    # (A set may also label sentences that do state something, e.g. "relative_clause": those
    # keep their gold and are not counted here.)
    cued = {
        s["text"]
        for i in data["entries"]
        for s in i.get("sentences", [])
        if s.get("cue") and not s["gold"]
    }
    from_cued: list[str] = []
    found: set[tuple] = set()
    wrong: list[str] = []
    per_kind: dict[str, Counter] = defaultdict(Counter)
    for p in EdgeProposal.objects.filter(bank=bank).select_related(
        "type", "from_entry", "to_entry"
    ):
        kind = kinds.get(p.source_entry_id, "other")
        per_kind[kind]["proposals"] += 1
        if p.span in cued:
            from_cued.append(f"{p.from_text} -{p.type.name}-> {p.to_text}  «{p.span}»")
        if p.from_entry_id is None or p.to_entry_id is None:
            unresolved += 1
            per_kind[kind]["unresolved"] += 1
            continue
        resolved += 1
        triple = (p.from_entry_id, p.type.name, p.to_entry_id)
        if triple in gold.get(p.source_entry_id, set()):
            correct += 1
            per_kind[kind]["correct"] += 1
            found.add((p.source_entry_id, *triple))
        else:
            wrong.append(f"{p.from_entry.title} -{p.type.name}-> {p.to_entry.title}  «{p.span}»")
    total_gold = sum(len(v) for v in gold.values())
    titles = {pk: ref for ref, pk in refs.items()}
    missed = sorted(
        f"{titles[a]} -{rel}-> {titles[b]}"
        for source, triples in gold.items()
        for a, rel, b in triples
        if (source, a, rel, b) not in found
    )
    docs = Counter(kinds.values())
    for kind, n in docs.items():
        per_kind[kind]["documents"] = n
        per_kind[kind]["gold"] = sum(len(gold.get(pk, ())) for pk, k in kinds.items() if k == kind)
    return {
        "resolved": resolved,
        "correct": correct,
        "unresolved": unresolved,
        "precision": correct / resolved if resolved else 0.0,
        "recall": len(found) / total_gold if total_gold else 0.0,
        "gold": total_gold,
        "per_kind": per_kind,
        "wrong": wrong,
        "missed": missed,
        "cued_sentences": len(cued),
        "from_cued": from_cued,
    }


def report(name: str, run, result: dict, took: float, extra: str = "") -> None:
    print(f"\n== {name} extractor ({took * 1000:.0f} ms for {run.entries} entries{extra})")
    print(
        f"statements {run.statements}, queued {run.queued} "
        f"({result['resolved']} resolved, {result['unresolved']} with an unresolved end), "
        f"dropped {dict(sorted(run.dropped.items()))}"
    )
    print(
        f"precision {result['precision']:.3f} ({result['correct']}/{result['resolved']}), "
        f"recall {result['recall']:.3f} (of {result['gold']} gold triples)"
    )
    if result["cued_sentences"]:
        print(
            f"proposals from the {result['cued_sentences']} cue sentences without gold (negated, "
            f"hypothetical, historical, planned, questions, traps): {len(result['from_cued'])}"
        )
        for line in result["from_cued"]:
            print(f"  {line}")
    print("yield per entry kind (documents with sentences):")
    print(
        f"  {'kind':<10}{'docs':>5}{'gold':>6}{'queued':>8}{'correct':>9}{'unresolved':>11}{'queued/doc':>11}"
    )
    for kind, c in sorted(result["per_kind"].items()):
        per_doc = c["proposals"] / c["documents"] if c["documents"] else 0.0
        print(
            f"  {kind:<10}{c['documents']:>5}{c['gold']:>6}{c['proposals']:>8}{c['correct']:>9}"
            f"{c['unresolved']:>11}{per_doc:>11.2f}"
        )
    if result["missed"]:
        print("gold triples not found (resolved):")
        for line in result["missed"]:
            print(f"  {line}")
    if result["wrong"]:
        print("resolved proposals not in the gold set:")
        for line in result["wrong"]:
            print(f"  {line}")


MODALITY_CUES = ("negation", "conditional", "history", "plan", "question")


def by_sentence(bank, data: dict, refs: dict[str, int], show: bool) -> None:
    """The local extractor sentence by sentence against each sentence's own gold: the table per
    cue (where the set labels one) and, with ``show``, every wrong or missed triple with its
    sentence. No queue and no de-duplication across sentences: a cause is seen where it is."""
    from graph.ingest.extract.base import Vocabulary
    from graph.ingest.extract.local import LocalExtractor, PhraseMatcher
    from graph.ingest.extract.mentions import MentionIndex
    from graph.ingest.extract.validate import agent_in_sequence
    from kb.models import Entry

    index = MentionIndex(bank)
    vocabulary = Vocabulary.for_bank(bank)
    extractor = LocalExtractor(index)
    extractor._matcher, extractor._vocabulary = PhraseMatcher(vocabulary), vocabulary
    titles = {pk: ref for ref, pk in refs.items()}
    table: dict[str, Counter] = defaultdict(Counter)
    lines = []
    for item in data["entries"]:
        source = refs[item.get("ref", item["title"])]
        extractor.about(Entry.objects.select_related("kind").get(pk=source))
        for sentence in item.get("sentences", []):
            cue = sentence.get("cue") or "-"
            gold = {(refs[a], rel, refs[b]) for a, rel, b in sentence["gold"]}
            got, unresolved, open_ends = set(), 0, []
            for st in extractor.read_sentence(sentence["text"]):
                ends = []
                for text, is_self in ((st.from_text, st.from_self), (st.to_text, st.to_self)):
                    found = index.resolve(text)
                    ends.append(source if is_self else found.entry_pk)
                kinds = [index.info[pk][2] for pk in ends if pk in index.info]
                if agent_in_sequence(vocabulary.types[st.relation], kinds):
                    continue  # validation drops it, whatever the extractor (no proposal)
                if None in ends:
                    unresolved += 1
                    open_ends.append(f"    ? {st.from_text} -{st.relation}-> {st.to_text}")
                elif ends[0] != ends[1]:
                    got.add((ends[0], st.relation, ends[1]))
            row = table[cue]
            row["sentences"] += 1
            row["gold"] += len(gold)
            row["found"] += len(got & gold)
            row["wrong"] += len(got - gold)
            row["unresolved"] += unresolved
            if cue in MODALITY_CUES and not gold and (got or unresolved):
                row["from_modality"] += 1
            bad = [f"    + {titles[a]} -{r}-> {titles[b]}" for a, r, b in sorted(got - gold)]
            bad += [f"    - {titles[a]} -{r}-> {titles[b]}" for a, r, b in sorted(gold - got)]
            bad += open_ends
            if bad:
                lines.append(f"  [{cue}] {sentence['text']}")
                lines.extend(bad)
    print("by sentence (local; + wrong, - missed, ? an end unresolved):")
    print(f"  {'cue':<17}{'sents':>6}{'gold':>6}{'found':>6}{'wrong':>6}{'unres':>6}{'modal':>6}")
    total: Counter = Counter()
    for cue, row in sorted(table.items()):
        total.update(row)
        print(
            f"  {cue:<17}{row['sentences']:>6}{row['gold']:>6}{row['found']:>6}{row['wrong']:>6}"
            f"{row['unresolved']:>6}{row['from_modality']:>6}"
        )
    resolved = total["found"] + total["wrong"]
    print(
        f"  sentence level: precision {total['found'] / max(resolved, 1):.3f} "
        f"({total['found']}/{resolved}), recall {total['found'] / max(total['gold'], 1):.3f} "
        f"({total['found']}/{total['gold']}); modality sentences with a proposal: "
        f"{total['from_modality']}"
    )
    if show:
        print("\n".join(lines))


def load_answers(path: Path) -> dict[str, list[str]]:
    """Stand-in answers as the chat message contents the stand-in server replays."""
    recorded = {}
    for title, a in json.loads(path.read_text())["answers"].items():
        texts = [
            json.dumps({"relationships": a["first"]}),
            json.dumps({"relationships": a["glean"]}),
        ]
        if a.get("fence"):
            texts = [f"```json\n{t}\n```" for t in texts]
        recorded[title] = texts
    return recorded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        nargs="+",
        default=[
            str(ROOT / "bench/data/extraction_airline.json"),
            str(ROOT / "bench/data/extraction_hospital.json"),
        ],
        help="labelled data sets; the HTTP extractor runs where <name>_llm.json exists",
    )
    parser.add_argument(
        "--by-sentence",
        action="store_true",
        help="also score the local extractor per sentence and per cue",
    )
    parser.add_argument(
        "--show", action="store_true", help="with --by-sentence: list every wrong or missed triple"
    )
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # The real model: the local extractor matches unphrased predicates by meaning with it
    # (entries are not embedded: nothing is committed).
    os.environ.setdefault("KB_EMBEDDER", "minilm")
    import django

    django.setup()
    from django.conf import settings
    from django.db import transaction
    from django.utils import timezone

    from graph.ingest.extract.llm import LLMConfig, LLMExtractor
    from graph.ingest.extract.run import extract_edges
    from graph.ingest.extract.standin import ChatStandIn, replay
    from kb.models import Bank

    stamp = f"{timezone.now():%Y%m%d-%H%M%S}"
    # Everything runs in one transaction that is rolled back: nothing is left behind, and no
    # after-commit work (embedding the new entries) runs — vectors are not read here.
    with transaction.atomic():
        for n, path in enumerate(map(Path, args.data)):
            data = json.loads(path.read_text())
            answers = path.with_name(path.stem + "_llm.json")
            sentences = sum(len(i.get("sentences", [])) for i in data["entries"])
            print(f"\n#### {path.name}: {data['domain']}")
            print(f"{len(data['entries'])} entries, {sentences} sentences")
            for name in ("local", "llm") if answers.exists() else ("local",):
                bank = Bank.objects.create(
                    slug=f"bench-extract-{n}-{name}-{stamp}", name="Extraction bench"
                )
                refs = build_bank(bank, data)
                if name == "local":
                    started = time.perf_counter()
                    run = extract_edges(bank, extractor="local")
                    took = time.perf_counter() - started
                    report("local", run, score(bank, data, refs), took)
                    if args.by_sentence:
                        by_sentence(bank, data, refs, args.show)
                    again = extract_edges(bank, extractor="local")
                    print(
                        f"incremental re-run: read {again.entries} entries, queued {again.queued}"
                    )
                    continue
                with ChatStandIn(replay(load_answers(answers))) as server:
                    cfg = LLMConfig(url=server.url, model=settings.KB_EXTRACT_LLM_MODEL, timeout=10)
                    impl = LLMExtractor(cfg)
                    started = time.perf_counter()
                    run = extract_edges(bank, extractor="llm", extractor_instance=impl)
                    took = time.perf_counter() - started
                extra = f", {impl.calls} HTTP calls"
                report("llm (stand-in)", run, score(bank, data, refs), took, extra)
        transaction.set_rollback(True)


if __name__ == "__main__":
    main()
