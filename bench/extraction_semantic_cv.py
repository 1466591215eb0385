"""Relations by meaning: threshold and margin chosen by leave-one-set-out cross-validation.

Every tuning set is read sentence by sentence with the local extractor; every pair the model
is asked about (``graph.ingest.extract.semantic``) is kept with its cosine and margin, and
scored against the sentence's own gold (right, wrong, or from a gold-less cue sentence).
Then, for each set held out, the (threshold, margin) that maximises
``right - PENALTY * wrong`` on the *other* sets, with precision >= 0.9 on each of them and
no proposal from a cue sentence, is chosen, and the held-out set is scored
with it: the held-out figure estimates what a set nobody tuned on would give. The last
block is the choice on all sets together (the shipped constants). No blind set is read.

    .venv/bin/python bench/extraction_semantic_cv.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SETS = {
    "airline": "bench/data/extraction_airline.json",
    "hospital": "bench/data/extraction_hospital.json",
    "tuning_extra": "bench/data/extraction_tuning_extra.json",
    "theatre": "bench/data/blind/extraction_set2/extraction_theatre.json",
    "water": "bench/data/blind/extraction_set3/extraction_water.json",
    "bus": "bench/data/blind/extraction_set4/extraction_bus.json",
    "food": "bench/data/blind/extraction_food_distribution.json",
    "hotel": "bench/data/blind/extraction_set5/extraction_hotel.json",
}
THRESHOLDS = [round(0.40 + 0.02 * i, 2) for i in range(26)]  # 0.40 … 0.90
MARGINS = [0.0, 0.02, 0.04, 0.06, 0.08, 0.10, 0.15]
PENALTY = 2  # a wrong proposal costs two right ones
MIN_PRECISION = 0.9  # on every training set, and no proposal from a cue sentence


def read_set(bank, data: dict, refs: dict[str, int]) -> dict:
    """Per sentence: the phrase reader's right/wrong counts and the model's candidates."""
    from graph.ingest.extract.base import Vocabulary
    from graph.ingest.extract.local import LocalExtractor, PhraseMatcher
    from graph.ingest.extract.mentions import MentionIndex
    from kb.models import Entry

    index = MentionIndex(bank)
    vocabulary = Vocabulary.for_bank(bank)
    ext = LocalExtractor(index, by_meaning=True)
    ext._matcher, ext._vocabulary = PhraseMatcher(vocabulary), vocabulary
    ext.meaning_threshold, ext.meaning_margin = -1.0, -1.0  # keep every candidate
    out = {"gold": 0, "right": 0, "wrong": 0, "cands": []}
    for item in data["entries"]:
        source = refs[item.get("ref", item["title"])]
        ext.about(Entry.objects.select_related("kind").get(pk=source))
        for sentence in item.get("sentences", []):
            gold = {(refs[a], r, refs[b]) for a, r, b in sentence["gold"]}
            cued = bool(sentence.get("cue")) and not gold
            out["gold"] += len(gold)
            phrase_got, meaning = set(), []
            for st in ext.read_sentence(sentence["text"]):
                ends = []
                for text, is_self in ((st.from_text, st.from_self), (st.to_text, st.to_self)):
                    ends.append(source if is_self else index.resolve(text).entry_pk)
                if None in ends or ends[0] == ends[1]:
                    continue
                triple = (ends[0], st.relation, ends[1])
                if st.basis.startswith("meaning:"):
                    meaning.append((triple, st.basis))
                else:
                    phrase_got.add(triple)
            out["right"] += len(phrase_got & gold)
            out["wrong"] += len(phrase_got - gold)
            for triple, basis in meaning:
                if triple in phrase_got:
                    continue
                cos = float(basis.split(";cos=")[1].split(";")[0])
                margin = float(basis.split(";margin=")[1])
                out["cands"].append(
                    {
                        "cos": cos,
                        "margin": margin,
                        "right": triple in gold,
                        "cued": cued,
                        "text": f"{basis.split(';')[0]}  «{sentence['text']}»",
                        "key": (sentence["text"], triple),
                    }
                )
    return out


def added(cands: list[dict], t: float, m: float) -> tuple[int, int, int]:
    """Right and wrong proposals the model adds at (t, m), and those from cue sentences."""
    seen, right, wrong, cued = set(), 0, 0, 0
    for c in cands:
        if c["cos"] < t or c["margin"] < m or c["key"] in seen:
            continue
        seen.add(c["key"])
        right += c["right"]
        wrong += not c["right"]
        cued += c["cued"]
    return right, wrong, cued


def choose(sets: dict[str, dict]) -> tuple[float, float]:
    best = None
    for t in THRESHOLDS:
        for m in MARGINS:
            r = w = 0
            ok = True
            for s in sets.values():
                a, b, cued = added(s["cands"], t, m)
                r, w = r + a, w + b
                found, wrong = s["right"] + a, s["wrong"] + b
                ok = ok and not cued and found / max(found + wrong, 1) >= MIN_PRECISION
            if not ok:
                continue
            key = (r - PENALTY * w, t, m)  # ties: the higher threshold and margin
            if best is None or key > best:
                best = key
    return best[1], best[2]


def line(name: str, s: dict, t: float, m: float) -> str:
    r, w, cued = added(s["cands"], t, m)
    found, wrong = s["right"] + r, s["wrong"] + w
    p0 = s["right"] / max(s["right"] + s["wrong"], 1)
    p1 = found / max(found + wrong, 1)
    return (
        f"  {name:<13} t={t:.2f} m={m:.2f}  +{r} right +{w} wrong ({cued} from cue sentences)  "
        f"P {p0:.3f}->{p1:.3f}  R {s['right'] / s['gold']:.3f}->{found / s['gold']:.3f}"
    )


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("KB_EMBEDDER", "minilm")
    import django

    django.setup()
    from django.db import transaction
    from django.utils import timezone

    from bench.extraction import build_bank
    from kb.models import Bank

    stamp = f"{timezone.now():%Y%m%d-%H%M%S}"
    sets = {}
    with transaction.atomic():
        for n, (name, path) in enumerate(SETS.items()):
            data = json.loads((ROOT / path).read_text())
            bank = Bank.objects.create(slug=f"bench-xcv-{n}-{stamp}", name="CV")
            sets[name] = read_set(bank, data, build_bank(bank, data))
        transaction.set_rollback(True)
    print("sentence level; held-out set scored with the (t, m) chosen on the others:")
    for name in SETS:
        t, m = choose({k: v for k, v in sets.items() if k != name})
        print(line(name, sets[name], t, m))
    t, m = choose(sets)
    print(f"chosen on all sets: threshold {t:.2f}, margin {m:.2f}")
    for name in SETS:
        print(line(name, sets[name], t, m))
    if "--show" in sys.argv:
        for name, s in sets.items():
            print(f"\n{name}:")
            for c in sorted(s["cands"], key=lambda c: -c["cos"]):
                mark = "+" if c["right"] else ("C" if c["cued"] else "-")
                print(f"  {mark} {c['cos']:.3f} {c['margin']:.3f} {c['text']}")


if __name__ == "__main__":
    main()
