#!/usr/bin/env python3
"""Verify the blind hop evaluation set (stdlib only).

Usage: python3 check.py [DIR]     (DIR defaults to the directory of this script)

Checks, per domain (<domain>.jsonl + <domain>_tasks.jsonl):
  * every line is valid JSON; entries come before edges; required fields present
  * entry ids are 8 lowercase hex chars and unique; kinds and relations are in the core sets
  * every edge end exists; every edge has a non-empty note
  * for each task: A and B exist, the stated A-B edge exists with that relation and direction,
    A has exactly 12 noted edges to 12 distinct neighbours (B + 11 crowd)
  * the question has 8-20 words and no content word of it occurs in B's texts
    (title, content, summary, useful_for, and also systems/tasks to be strict).
    Content word = lowercase token, stop-words removed, crude stem (strip trailing
    s/es/ing/ed/ion, repeatedly, then a trailing e). As an extra, stricter guard, two stems of
    5+ letters that share their first 5 letters also count as a shared stem
    (catches inspect/inspector, valu/valuation).
  * at least 4 crowd entries share a content word with the question
Exit status 0 when everything passes, 1 otherwise.
"""
import json
import os
import re
import sys

CORE_RELATIONS = {"cites", "see_also", "part_of", "supersedes", "split_from", "derived_from",
                  "corrects", "clarifies", "conflicts_with", "precedes", "requires", "produces",
                  "owned_by"}
CORE_KINDS = {"decision", "architecture", "goal", "risk", "lesson", "gotcha", "recipe", "playbook",
              "policy", "gap", "fact", "step", "decision_point", "artifact", "role", "team",
              "person", "service", "process", "container", "structural", "other"}

STOP = set("""
a an the and or but if then else of to in on at by for from with without into onto over under
about as is are was were be been being am do does did doing done have has had having can could
shall should will would may might must i me my mine we us our ours you your yours he him his she
her hers it its they them their theirs this that these those there here what which who whom
whose when where why how not no nor so than too very just also any all each every some such
s t isn don doesn didn won wouldn shouldn
can't cannot it's that's what's who's let's i'm we're they're via per up down out off again
further once while during before after until within between through against among
""".split())

ENTRY_FIELDS = ["id", "title", "content", "summary", "useful_for", "kind", "systems", "tasks"]
B_TEXT_FIELDS = ["title", "content", "summary", "useful_for"]


def stem(w):
    changed = True
    while changed:
        changed = False
        for suf in ("ing", "ion", "es", "ed", "s"):
            if w.endswith(suf) and len(w) - len(suf) >= 3:
                w = w[: -len(suf)]
                changed = True
                break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def content_stems(text):
    toks = re.findall(r"[a-z]+", text.lower())
    return {stem(t) for t in toks if t not in STOP and len(t) > 1}


def shared(qstems, stems):
    out = set()
    for q in qstems:
        for s in stems:
            if q == s or (len(q) >= 5 and len(s) >= 5 and q[:5] == s[:5]):
                out.add((q, s))
    return out


def entry_text(e, fields):
    parts = []
    for f in fields:
        v = e.get(f, "")
        parts.append(" ".join(v) if isinstance(v, list) else str(v))
    return " ".join(parts)


def check_domain(d, name):
    errs, info = [], []
    bank_path = os.path.join(d, name + ".jsonl")
    task_path = os.path.join(d, name + "_tasks.jsonl")
    entries, edges = {}, []
    seen_edge = False
    with open(bank_path, encoding="utf-8") as fh:
        for ln, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                o = json.loads(line)
            except json.JSONDecodeError as ex:
                errs.append(f"{name}.jsonl:{ln}: invalid JSON ({ex})")
                continue
            t = o.get("type")
            if t == "entry":
                if seen_edge:
                    errs.append(f"{name}.jsonl:{ln}: entry after edges")
                for f in ENTRY_FIELDS:
                    if f not in o:
                        errs.append(f"{name}.jsonl:{ln}: entry missing {f}")
                eid = o.get("id", "")
                if not re.fullmatch(r"[0-9a-f]{8}", eid):
                    errs.append(f"{name}.jsonl:{ln}: bad id {eid!r}")
                if eid in entries:
                    errs.append(f"{name}.jsonl:{ln}: duplicate id {eid}")
                if o.get("kind") not in CORE_KINDS:
                    errs.append(f"{name}.jsonl:{ln}: non-core kind {o.get('kind')!r}")
                if not isinstance(o.get("systems"), list) or not isinstance(o.get("tasks"), list):
                    errs.append(f"{name}.jsonl:{ln}: systems/tasks must be lists")
                entries[eid] = o
            elif t == "edge":
                seen_edge = True
                for f in ("from", "to", "relation", "note"):
                    if f not in o:
                        errs.append(f"{name}.jsonl:{ln}: edge missing {f}")
                if o.get("relation") not in CORE_RELATIONS:
                    errs.append(f"{name}.jsonl:{ln}: non-core relation {o.get('relation')!r}")
                edges.append((ln, o))
            else:
                errs.append(f"{name}.jsonl:{ln}: unknown type {t!r}")
    for ln, e in edges:
        for end in ("from", "to"):
            if e.get(end) not in entries:
                errs.append(f"{name}.jsonl:{ln}: edge {end} {e.get(end)!r} does not exist")
        if e.get("from") == e.get("to"):
            errs.append(f"{name}.jsonl:{ln}: self-loop")
        if not str(e.get("note", "")).strip():
            errs.append(f"{name}.jsonl:{ln}: edge without note")

    tasks = []
    with open(task_path, encoding="utf-8") as fh:
        for ln, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                tasks.append((ln, json.loads(line)))
            except json.JSONDecodeError as ex:
                errs.append(f"{name}_tasks.jsonl:{ln}: invalid JSON ({ex})")

    a_ids, b_ids = set(), set()
    n_ab = n_ba = 0
    same_rel_fracs, note_lens = [], []
    for ln, t in tasks:
        tag = f"{name}_tasks.jsonl:{ln}"
        q, a, b, te = t.get("question", ""), t.get("a"), t.get("b"), t.get("edge", {})
        nq = len(q.split())
        if not 8 <= nq <= 20:
            errs.append(f"{tag}: question has {nq} words (want 8-20)")
        if a not in entries or b not in entries:
            errs.append(f"{tag}: a or b missing from bank")
            continue
        if a == b:
            errs.append(f"{tag}: a == b")
        if {te.get("from"), te.get("to")} != {a, b}:
            errs.append(f"{tag}: task edge does not join a and b")
        if te.get("from") == a:
            n_ab += 1
        else:
            n_ba += 1
        match = [e for _, e in edges if e.get("from") == te.get("from") and e.get("to") == te.get("to")
                 and e.get("relation") == te.get("relation")]
        if len(match) != 1:
            errs.append(f"{tag}: stated A-B edge found {len(match)} times in bank")
        a_edges = [e for _, e in edges if (e.get("from") == a or e.get("to") == a)
                   and str(e.get("note", "")).strip()]
        if len(a_edges) != 12:
            errs.append(f"{tag}: A {a} has {len(a_edges)} noted edges (want 12)")
        nbrs = [e["to"] if e["from"] == a else e["from"] for e in a_edges]
        if len(set(nbrs)) != len(nbrs):
            errs.append(f"{tag}: A has repeated neighbours")
        if b not in nbrs:
            errs.append(f"{tag}: B is not a neighbour of A")
        for e in a_edges:
            note_lens.append(len(e["note"].split()))
            if not 8 <= len(e["note"].split()) <= 25:
                errs.append(f"{tag}: note of {len(e['note'].split())} words: {e['note']!r}")
        crowd = [x for x in nbrs if x != b]
        ab_rel = te.get("relation")
        same = sum(1 for e in a_edges if e.get("relation") == ab_rel) - 1
        same_rel_fracs.append(same / max(1, len(crowd)))
        qstems = content_stems(q)
        bad = shared(qstems, content_stems(entry_text(entries[b], B_TEXT_FIELDS + ["systems", "tasks"])))
        if bad:
            errs.append(f"{tag}: B {b} shares question stems {sorted(bad)}")
        overlap = 0
        for c in crowd:
            if shared(qstems, content_stems(entry_text(entries[c], B_TEXT_FIELDS))):
                overlap += 1
        if overlap < 4:
            errs.append(f"{tag}: only {overlap} crowd entries share a question word (want >= 4)")
        info.append(f"  task {ln:2d}: crowd sharing question words {overlap:2d}/11, "
                    f"crowd with A-B relation '{ab_rel}' {same:2d}/11, "
                    f"direction {'A->B' if te.get('from') == a else 'B->A'}")
        a_ids.add(a)
        b_ids.add(b)
    if len(a_ids) != len(tasks):
        errs.append(f"{name}: A ids not distinct across tasks")

    n_entries, n_edges = len(entries), len(edges)
    in_tasks = set()
    for _, t in tasks:
        a = t.get("a")
        in_tasks.add(a)
        for _, e in edges:
            if e.get("from") == a:
                in_tasks.add(e["to"])
            if e.get("to") == a:
                in_tasks.add(e["from"])
    fillers = n_entries - len(in_tasks)
    summary = (f"{name}: {n_entries} entries ({len(in_tasks)} in task neighbourhoods, {fillers} filler), "
               f"{n_edges} edges, {len(tasks)} tasks (A->B {n_ab}, B->A {n_ba}), "
               f"notes {min(note_lens) if note_lens else 0}-{max(note_lens) if note_lens else 0} words")
    return errs, [summary] + info


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    domains = sorted(f[:-len("_tasks.jsonl")] for f in os.listdir(d) if f.endswith("_tasks.jsonl"))
    all_errs = []
    for name in domains:
        errs, info = check_domain(d, name)
        print("\n".join(info))
        for e in errs:
            print("  FAIL", e)
        all_errs += errs
    print(f"\n{len(domains)} domains checked: {'PASS' if not all_errs else f'FAIL ({len(all_errs)} problems)'}")
    return 0 if not all_errs else 1


if __name__ == "__main__":
    sys.exit(main())
