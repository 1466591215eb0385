# One-off: give every one-sentence entry a second sentence (spec: content 2-5 sentences) and
# lengthen a few more crowd entries, so crowd content is not systematically shorter than B's.
import os, sys, json
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXTRA = json.load(open(sys.argv[1], encoding="utf-8"))
hit = set()
for name in ["hospital_pharmacy", "freight_rail_maintenance", "insurance_claims"]:
    p = os.path.join(HERE, name + ".txt")
    lines = open(p, encoding="utf-8").read().split("\n")
    for i, l in enumerate(lines):
        if l.startswith("C: ") or l.startswith("F: "):
            f = l[3:].split(" | ")
            if f[3] in EXTRA:
                f[4] = f[4].rstrip() + " " + EXTRA[f[3]]
                lines[i] = l[:3] + " | ".join(f)
                hit.add(f[3])
    open(p, "w", encoding="utf-8").write("\n".join(lines))
missing = set(EXTRA) - hit
print("applied", len(hit), "missing", sorted(missing))
