"""Local extractor speed: this checkout's reader against the one at ``--before`` in one run.

The local extractor of commit ``--before`` (its ``graph/ingest/extract/local.py`` with that
commit's ``clauses``, ``cues`` and other reader modules, loaded from git; it shares this
checkout's mention index) and this checkout's
read every sentence of the tuning sets, alternating sentence by sentence, ``--rounds`` times.
Prints p50/p95 per sentence and the ratio, with the load average (a shared box: only the
ratio within one run means anything). No blind set is read.

    .venv/bin/python bench/extraction_speed.py --before 0ea5daa [--rounds 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
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
]


PACKAGE = "graph.ingest.extract"
# The reader's own modules, in import order; those missing at a commit are skipped.
READER_MODULES = ("clauses", "phrases", "cues", "sequences", "local")


def _source(commit: str, name: str) -> str | None:
    shown = subprocess.run(
        ["git", "show", f"{commit}:graph/ingest/extract/{name}.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return shown.stdout if shown.returncode == 0 else None


def load_before(commit: str):
    """The local reader of ``commit`` with the helper modules of that commit (clauses, cues,
    …): each is executed under its own name while this checkout's are swapped out, so the
    old reader runs its own rules, not this checkout's; then this checkout's are restored."""

    package = importlib.import_module(PACKAGE)
    # This checkout's modules are imported first, so that they are the ones restored.
    saved = {n: importlib.import_module(f"{PACKAGE}.{n}") for n in READER_MODULES}
    loaded = {}
    try:
        for name in READER_MODULES:
            source = _source(commit, name)
            if source is None:
                continue
            full = f"{PACKAGE}.{name}"
            spec = importlib.util.spec_from_loader(full, loader=None)
            module = importlib.util.module_from_spec(spec)
            sys.modules[full] = module  # dataclasses look their module up
            setattr(package, name, module)
            exec(compile(source, f"{commit}:{name}.py", "exec"), module.__dict__)
            loaded[name] = module
    finally:
        for name, module in saved.items():
            sys.modules[f"{PACKAGE}.{name}"] = module
            setattr(package, name, module)
    before = loaded["local"]
    sys.modules["local_before"] = before
    return before


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="commit whose local extractor to compare")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--per-entry",
        action="store_true",
        help="time whole entries (extract(): one model call per entry) with the predicate "
        "cache emptied before each reading, instead of sentences",
    )
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("KB_EMBEDDER", "minilm")  # the model the extractor now calls
    import django

    django.setup()
    from django.db import transaction
    from django.utils import timezone

    from bench.extraction import build_bank
    from graph.ingest.extract import local as after_module
    from graph.ingest.extract.base import Vocabulary
    from graph.ingest.extract.mentions import MentionIndex
    from kb.models import Bank, Entry

    before_module = load_before(args.before)
    stamp = f"{timezone.now():%Y%m%d-%H%M%S}"
    times: dict[str, list[float]] = {"before": [], "after": []}
    with transaction.atomic():
        readers = []
        for n, path in enumerate(TUNING):
            data = json.loads(path.read_text())
            bank = Bank.objects.create(slug=f"bench-xspeed-{n}-{stamp}", name="Speed")
            refs = build_bank(bank, data)
            index, vocabulary = MentionIndex(bank), Vocabulary.for_bank(bank)
            pair = {}
            for name, module in (("before", before_module), ("after", after_module)):
                ext = module.LocalExtractor(index)
                ext._matcher, ext._vocabulary = module.PhraseMatcher(vocabulary), vocabulary
                pair[name] = ext
            texts = [s["text"] for i in data["entries"] for s in i.get("sentences", [])]
            if args.per_entry:
                pks = [
                    refs[i.get("ref", i["title"])] for i in data["entries"] if i.get("sentences")
                ]
                texts = list(Entry.objects.filter(pk__in=pks).select_related("kind"))
            readers.append((pair, texts, vocabulary))
        for _ in range(args.rounds):
            for pair, texts, vocabulary in readers:
                for text in texts:
                    for name in ("before", "after"):
                        model = getattr(pair[name], "_meaning", None)
                        if args.per_entry and model and model[1] is not None:
                            model[1]._cache.clear()  # cold: every predicate goes to the model
                        started = time.perf_counter()
                        if args.per_entry:
                            pair[name].extract(text, vocabulary)
                        else:
                            pair[name].read_sentence(text)
                        times[name].append((time.perf_counter() - started) * 1000)
        transaction.set_rollback(True)
    load = os.getloadavg()[0]
    unit = "entries" if args.per_entry else "sentences"
    print(f"load average {load:.1f} on {os.cpu_count()} cores; {len(times['after'])} {unit} each")
    for name in ("before", "after"):
        t = times[name]
        print(f"  {name:<7} p50 {percentile(t, 0.5):.3f} ms  p95 {percentile(t, 0.95):.3f} ms")
    ratio50 = percentile(times["after"], 0.5) / percentile(times["before"], 0.5)
    ratio95 = percentile(times["after"], 0.95) / percentile(times["before"], 0.95)
    print(f"  ratio after/before: p50 {ratio50:.2f}, p95 {ratio95:.2f}")


if __name__ == "__main__":
    main()
