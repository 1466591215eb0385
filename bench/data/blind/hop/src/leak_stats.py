# Does B stand out among A's 12 neighbours by simple surface features? Prints mean lengths
# and B's rank (1 = longest) per field; a fair set has B's mean rank near 6.5.
import json, os, statistics as st
D = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for d in ["hospital_pharmacy", "freight_rail_maintenance", "insurance_claims"]:
    L = [json.loads(l) for l in open(os.path.join(D, d + ".jsonl"))]
    E = {e["id"]: e for e in L if e["type"] == "entry"}
    edges = [e for e in L if e["type"] == "edge"]
    T = [json.loads(l) for l in open(os.path.join(D, d + "_tasks.jsonl"))]
    ranks = {k: [] for k in ["note", "content", "summary", "useful_for", "title"]}
    means = {k: ([], []) for k in ranks}
    for t in T:
        nb = []
        for e in edges:
            if t["a"] in (e["from"], e["to"]):
                o = e["to"] if e["from"] == t["a"] else e["from"]
                nb.append((o, e))
        for k in ranks:
            vals = []
            for o, e in nb:
                v = len((e["note"] if k == "note" else E[o][k]).split())
                vals.append((v, o == t["b"]))
                means[k][0 if o == t["b"] else 1].append(v)
            bv = [v for v, isb in vals if isb][0]
            ranks[k].append(1 + sum(1 for v, isb in vals if v > bv))
    print(d)
    for k in ranks:
        print(f"  {k:10s} B mean {st.mean(means[k][0]):5.1f}  crowd mean {st.mean(means[k][1]):5.1f}  B rank (1=longest) {ranks[k]} mean {st.mean(ranks[k]):.1f}")
