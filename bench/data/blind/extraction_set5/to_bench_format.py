"""Convert extraction_set5.json (sentences at the top level) to the bench's format (each
sentence inside the entry whose content it is: the first entry the sentence names, by title
or alias, longest name first) and kinds named as the product's core kinds. Mechanical: no
sentence, gold, title or alias is changed."""

import json
import re
from pathlib import Path

HERE = Path(__file__).parent
data = json.loads((HERE / "extraction_set5.json").read_text())
# The writer's kinds named as the product's core kinds (a name mapping only).
KINDS = {
    "document": "artifact", "place": "container", "procedure": "process", "system": "service",
    "product": "artifact", "vendor": "other",
}
entries = [
    dict(e, kind=KINDS.get(e["kind"], e["kind"]), sentences=[]) for e in data["entries"]
]
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
    owner["sentences"].append({k: v for k, v in s.items()})
out = {k: v for k, v in data.items() if k != "sentences"}
out["entries"] = entries
(HERE / "extraction_hotel.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
print(sum(len(e["sentences"]) for e in entries), "sentences in", len(entries), "entries")
