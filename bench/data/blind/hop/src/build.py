#!/usr/bin/env python3
"""Build <domain>.jsonl and <domain>_tasks.jsonl from the hand-written src/<domain>.txt.

Source format (fields separated by ' | ', list items by '; '):
  TASK
  Q: question
  SYS: system; system            (systems/tasks for A and its crowd)
  TASKS: task; task
  EDGE: relation | AB or BA | note
  A: kind | title | content | summary | useful_for
  B: kind | systems | tasks | title | content | summary | useful_for
  C: kind | relation | out (A->C) or in (C->A) | title | content | summary | useful_for | note
  FILLER
  F: kind | systems | tasks | title | content | summary | useful_for
  FE: i | j | relation | note        (1-based filler indexes)
Entry and edge order in the output is shuffled (seeded) so file position says nothing.
"""
import json
import os
import random
import sys


def split(line, n):
    parts = [p.strip() for p in line.split(" | ")]
    if len(parts) != n:
        raise SystemExit(f"expected {n} fields, got {len(parts)}: {line[:120]}")
    return parts


def lst(s):
    return [x.strip() for x in s.split(";") if x.strip()]


def build(src, outdir, name, seed):
    rng = random.Random(seed)
    used = set()

    def new_id():
        while True:
            i = "%08x" % rng.getrandbits(32)
            if i not in used:
                used.add(i)
                return i

    def entry(kind, title, content, summary, useful, systems, tasks):
        return {"type": "entry", "id": new_id(), "title": title, "content": content,
                "summary": summary, "useful_for": useful, "kind": kind,
                "systems": systems, "tasks": tasks}

    entries, edges, tasks, fillers = [], [], [], []
    cur = None
    mode = None
    for raw in open(src, encoding="utf-8"):
        line = raw.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        if line == "TASK":
            mode, cur = "task", {"crowd": []}
            tasks.append(cur)
            continue
        if line == "FILLER":
            mode = "filler"
            continue
        key, _, rest = line.partition(": ")
        if key == "Q":
            cur["q"] = rest.strip()
        elif key == "SYS":
            cur["sys"] = lst(rest)
        elif key == "TASKS":
            cur["tasks"] = lst(rest)
        elif key == "EDGE":
            cur["edge"] = split(rest, 3)
        elif key == "A":
            cur["A"] = split(rest, 5)
        elif key == "B":
            cur["B"] = split(rest, 7)
        elif key == "C":
            cur["crowd"].append(split(rest, 8))
        elif key == "F":
            fillers.append(split(rest, 7))
        elif key == "FE":
            cur_fe = split(rest, 4)
            edges.append(("filler", cur_fe))
        else:
            raise SystemExit(f"unknown line: {line[:80]}")

    out_edges, out_tasks = [], []
    for t in tasks:
        k, title, content, summ, use = t["A"]
        A = entry(k, title, content, summ, use, t["sys"], t["tasks"])
        k, bsys, btasks, title, content, summ, use = t["B"]
        B = entry(k, title, content, summ, use, lst(bsys), lst(btasks))
        entries += [A, B]
        rel, d, note = t["edge"]
        fr, to = (A["id"], B["id"]) if d == "AB" else (B["id"], A["id"])
        out_edges.append({"type": "edge", "from": fr, "to": to, "relation": rel, "note": note})
        out_tasks.append({"question": t["q"], "a": A["id"], "b": B["id"],
                          "edge": {"from": fr, "to": to, "relation": rel}})
        if len(t["crowd"]) != 11:
            raise SystemExit(f"task {t['q']!r} has {len(t['crowd'])} crowd entries")
        for k, rel, d, title, content, summ, use, note in t["crowd"]:
            C = entry(k, title, content, summ, use, t["sys"], t["tasks"])
            entries.append(C)
            fr, to = (A["id"], C["id"]) if d == "out" else (C["id"], A["id"])
            assert d in ("out", "in"), d
            out_edges.append({"type": "edge", "from": fr, "to": to, "relation": rel, "note": note})
    fobjs = []
    for k, fs, ft, title, content, summ, use in fillers:
        fobjs.append(entry(k, title, content, summ, use, lst(fs), lst(ft)))
    entries += fobjs
    for _, (i, j, rel, note) in edges:
        out_edges.append({"type": "edge", "from": fobjs[int(i) - 1]["id"], "to": fobjs[int(j) - 1]["id"],
                          "relation": rel, "note": note})
    rng.shuffle(entries)
    rng.shuffle(out_edges)
    with open(os.path.join(outdir, name + ".jsonl"), "w", encoding="utf-8") as fh:
        for o in entries + out_edges:
            fh.write(json.dumps(o, ensure_ascii=False) + "\n")
    with open(os.path.join(outdir, name + "_tasks.jsonl"), "w", encoding="utf-8") as fh:
        for o in out_tasks:
            fh.write(json.dumps(o, ensure_ascii=False) + "\n")
    print(f"{name}: {len(entries)} entries, {len(out_edges)} edges, {len(out_tasks)} tasks")


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    outdir = os.path.dirname(here)
    names = sys.argv[1:] or ["hospital_pharmacy", "freight_rail_maintenance", "insurance_claims"]
    for n, name in enumerate(names):
        src = os.path.join(here, name + ".txt")
        if os.path.exists(src):
            build(src, outdir, name, seed=sum(ord(c) * (i + 1) for i, c in enumerate(name)))
