"""Convert a blind extraction set (sentences at the top level, as its writer made it) to the
bench's format: each sentence inside the entry whose content it is (the first entry the
sentence names, by title or alias, longest name first), the writers' kinds named as the
product's core kinds. Mechanical: no sentence, gold, title or alias is changed.

    python3 bench/data/blind/to_bench_format.py extraction_set3/extraction_set3.json \\
        extraction_set3/extraction_water.json

One script for every set (set 2 theatre, 3 water, 4 bus, 5 hotel): each set's README names
its output file.
"""

import json
import re
import sys
from pathlib import Path

# The writers' kinds named as the product's core kinds (a name mapping only).
KINDS = {
    "document": "artifact",
    "place": "container",
    "procedure": "process",
    "system": "service",
    "product": "artifact",
    "vendor": "other",
}


def convert(data: dict) -> dict:
    entries = [dict(e, kind=KINDS.get(e["kind"], e["kind"]), sentences=[]) for e in data["entries"]]
    names = sorted(
        ((n, e) for e in entries for n in [e["title"], *e.get("aliases", [])]),
        key=lambda ne: -len(ne[0]),
    )
    for s in data["sentences"]:
        first = None
        for name, entry in names:
            m = re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", s["text"], re.IGNORECASE)
            if m and (first is None or m.start() < first[0]):
                first = (m.start(), entry)
        owner = first[1] if first else entries[0]
        owner["sentences"].append(dict(s))
    out = {k: v for k, v in data.items() if k != "sentences"}
    out["entries"] = entries
    return out


if __name__ == "__main__":
    here = Path(__file__).parent
    source, target = (here / a for a in sys.argv[1:3])
    out = convert(json.loads(source.read_text()))
    target.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(sum(len(e["sentences"]) for e in out["entries"]), "sentences in", len(out["entries"]), "entries")
