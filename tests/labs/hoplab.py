"""The hop lab (``000_*``): synthetic tasks whose answer sits one edge away from the entry the
query matches. Entry A matches the task's query; entry B holds the fact the task needs (a
proof token) and is one edge from A, with a note that says how B pertains and never what it
says. Only tasks where B is NOT in the flat top-8 count. The lab reports how often B is
reachable in the fold payload, and fails on a leak: the proof token in any note or in A.
Tangential entries linked with "background only" notes are reported separately.

Crowded mode (issue 15) gives every A ``crowd`` more noted edges to unrelated entries (other
codenames' facts from other corners of an organisation), a share of them of the same relation
and direction as the A–B edge, written before or after the A–B edge: a result whose noted edges
outnumber the neighbour slots must still hand over the hop the query needs.

B's text comes in two modes. ``opaque`` (the original, adversarial one): B names only its
codename and quirk, and the A–B note is the same generic sentence for every task, so nothing
but the edge itself tells B from the crowd. ``pertinent`` (issue 21): B still shares no word
with the question (it names its codename, its quirk and the kind of step it affects in words
of its own — checked by :func:`leak_check`), while the A–B edge note says how B bears on the
task, in the task's terms, as a curator would write it; every crowd note is distinct. So the
pertinent lab measures whether the fold hands over a hop whose relevance lives in the EDGE
NOTE, not in B (issue 15's version wrote the question's system name into B's title, which let
B's own vectors do the work).
"""

from __future__ import annotations

import random
import re
import secrets
from dataclasses import dataclass, field

from django.db import transaction

from graph.edges.links import link
from graph.models import Edge
from graph.retrieval.facts import embed_edge_notes
from graph.retrieval.query import QueryParams, run_query
from kb import audit
from kb.errors import KbError
from kb.models import Bank, Entry
from kb.services.banks import ensure_bank
from kb.services.embedding import embed_entries, embed_query
from kb.services.entries import clean_entry_data, create_entry
from tests.labs.replay import payload_ids

SYSTEMS = [
    "billing ledger",
    "invoice exporter",
    "payment gateway",
    "search indexer",
    "session store",
    "image resizer",
    "audit trail",
    "report scheduler",
    "shipping quote engine",
    "warehouse sync",
    "customer portal",
    "partner API",
    "email relay",
    "feature flag service",
    "metrics pipeline",
    "fraud scorer",
    "tax calculator",
    "pricing service",
    "inventory cache",
    "returns processor",
    "label printer bridge",
    "carrier webhook receiver",
    "SSO broker",
    "document store",
    "notification fan-out",
    "payroll export",
    "data warehouse loader",
    "rate limiter",
    "geocoding proxy",
    "backup vault",
]
ACTIONS = [
    ("rotate the credentials of", "Rotating the credentials of"),
    ("roll back a bad deploy of", "Rolling back a bad deploy of"),
    ("scale up", "Scaling up"),
    ("restore last night's backup of", "Restoring last night's backup of"),
    ("migrate the schema of", "Migrating the schema of"),
    ("drain and restart", "Draining and restarting"),
]
CODENAMES = [
    "Heron",
    "Quartz",
    "Juniper",
    "Osprey",
    "Cobalt",
    "Tamarind",
    "Lynx",
    "Basalt",
    "Marigold",
    "Fennel",
    "Saffron",
    "Kestrel",
    "Onyx",
    "Wren",
    "Sorrel",
    "Ibis",
    "Garnet",
    "Larch",
    "Plover",
    "Umber",
]
QUIRKS = [
    "the {code} signer expects the nonce header to be exactly {token}",
    "the {code} vault unlock phrase for this quarter is {token}",
    "the {code} bastion only admits sessions tagged {token}",
    "the {code} change window requires ticket prefix {token}",
]
# Pertinent mode: B names the kind of step it affects in words of its own, never the question's
# (no system name, no action); the A–B note says how it bears on the task.
PERTINENT_TITLES = [
    "{code} quirk of the signing step",
    "Gotcha in the {code} playbook job",
    "What trips up the {code} unlock",
    "{code}: the step people get wrong",
]
PERTINENT_LEADS = [
    "Affects the job that runs the playbook: ",
    "Operators keep hitting this one: ",
    "For any change ticket that uses {code}: ",
    "Before the change can close, know that ",
    "The {code} tooling behaves oddly here: ",
]
PERTINENT_NOTES = [
    "Needed for the {system}: when you {verb} it, the playbook job fails unless this is handled.",
    "Anyone who has to {verb} the {system} hits this step; get it exactly right.",
    "The {system} work ({verb}) stalls at the signing step without this.",
    "Check this first if you {verb} anything on the {system}; the usual cause of a failed run.",
]
B_TEXTS = ("opaque", "pertinent")
DISTRACTOR_SHAPES = [
    "{Action} {system} in staging",
    "{system}: {action} checklist",
    "Why {action} {system} takes so long",
    "Alerting while you {action} {system}",
    "{Action} {system} for a single tenant",
    "Who approves when you {action} {system}",
    "{system} runbook index",
    "Dry run: {action} {system}",
]


# Crowded mode: unrelated facts (other codenames, other concerns) and notes that say how an
# entry pertains without naming the task; the same-relation share uses ``clarifies`` in, as B.
CROWD_TOPICS = [
    "office badge renewal dates for the {code} team",
    "cost centre mapping of the {code} budget line",
    "colour scheme of the {code} status dashboard",
    "licence renewal calendar for the {code} vendor tools",
    "seating plan of the {code} squad after the move",
    "glossary of acronyms the {code} group uses in meetings",
    "quarterly offsite agenda of the {code} team",
    "expense policy exceptions granted to {code} contractors",
    "translation memory for the {code} marketing copy",
    "printer toner ordering for the {code} floor",
    "holiday rota of the {code} support desk",
    "naming conventions of the {code} slide templates",
]
CROWD_NOTES = [
    "Read before planning the change: it says who may be away that week.",
    "Explains a term that appears in the change ticket template.",
    "Background on the team that owns one of the dashboards mentioned here.",
    "Says which budget line pays for the time spent on this.",
    "Worth a look if an approver asks where a cost should be booked.",
    "Names the people who sit next to the operators of this recipe.",
    "Context for the meeting where this recipe was last discussed.",
    "Explains why one of the screenshots here uses different colours.",
]
# Pertinent mode: the crowd's notes are distinct on every A (note + suffix), as curators write.
CROWD_SUFFIXES = [
    " Mostly of interest to the finance partner.",
    " Kept for the quarterly review.",
    " The office manager maintains it.",
    " Useful when onboarding a new hire.",
    " Mentioned in last year's retrospective.",
    " Rarely needed during a change.",
    " Owned by the workplace team.",
]
CROWD_OTHER_RELATIONS = [("see_also", "out"), ("cites", "out"), ("requires", "out")]


@dataclass(frozen=True)
class Crowd:
    """How crowded A's neighbourhood is: ``per_a`` extra noted edges, ``same_share`` of them
    ``clarifies`` into A like the A–B edge (the rest see_also / cites / requires out of A),
    written ``order`` = "before" or "after" the A–B edge."""

    per_a: int = 0
    same_share: float = 0.5
    order: str = "before"
    b_text: str = "opaque"  # "opaque" | "pertinent": see the module docstring


@dataclass
class HopTask:
    query: str
    a: Entry
    b: Entry
    tangent: Entry
    token: str


@dataclass
class HopLabReport:
    built: int = 0
    kept: int = 0
    b_in_fold: int = 0
    b_as_neighbor: int = 0
    b_as_folded: int = 0
    b_as_result: int = 0
    tangent_in_fold: int = 0
    tangent_notes_marked: int = 0
    flat_entries_lost: int = 0
    crowd: Crowd = field(default_factory=Crowd)
    leaks: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        def pct(n: int) -> float:
            return round(100.0 * n / self.kept, 1) if self.kept else 0.0

        return {
            "tasks_built": self.built,
            "tasks_kept_b_not_in_flat_top8": self.kept,
            "b_reachable_in_fold_pct": pct(self.b_in_fold),
            "b_as_neighbor": self.b_as_neighbor,
            "b_as_folded_pointer": self.b_as_folded,
            "b_as_result": self.b_as_result,
            "b_reachable_in_flat_pct": 0.0,
            "tangent_reachable_pct": pct(self.tangent_in_fold),
            "tangent_pointers_marked_background_pct": round(
                100.0 * self.tangent_notes_marked / self.tangent_in_fold, 1
            )
            if self.tangent_in_fold
            else 0.0,
            "flat_top8_entries_lost": self.flat_entries_lost,
            "crowd_edges_per_a": self.crowd.per_a,
            "crowd_same_relation_share": self.crowd.same_share,
            "crowd_written": self.crowd.order if self.crowd.per_a else "-",
            "b_text": self.crowd.b_text,
            "leaks": len(self.leaks),
        }


def _crowd_edges(bank: Bank, a: Entry, i: int, crowd: Crowd, rng: random.Random, make) -> None:
    same = round(crowd.per_a * crowd.same_share)
    for j in range(crowd.per_a):
        code = f"{CODENAMES[(i * 7 + j * 3 + 5) % len(CODENAMES)]}-{1000 + i * 50 + j}"
        topic = CROWD_TOPICS[(i + j) % len(CROWD_TOPICS)].format(code=code)
        other = make(
            topic[0].upper() + topic[1:],
            f"Reference note on the {topic}; kept for the people who ask about it.",
        )
        relation, direction = ("clarifies", "in") if j < same else rng.choice(CROWD_OTHER_RELATIONS)
        ends = (other, a) if direction == "in" else (a, other)
        link(
            bank,
            {
                "from": ends[0].short_id,
                "to": ends[1].short_id,
                "relation": relation,
                "note": CROWD_NOTES[(i + j) % len(CROWD_NOTES)]
                + (
                    CROWD_SUFFIXES[(i * 3 + j) % len(CROWD_SUFFIXES)]
                    if crowd.b_text != "opaque"
                    else ""
                ),
            },
        )


def _b_text(
    mode: str, i: int, code: str, token: str, system: str, rng: random.Random
) -> tuple[str, str]:
    """B's title and content: the quirk with the proof token, opaque or pertinent."""
    quirk = rng.choice(QUIRKS).format(code=code, token=token)
    if mode == "opaque":
        return f"{code} quirk", f"One quirk to know: {quirk}."
    if mode != "pertinent":
        raise ValueError(f"b_text must be one of {B_TEXTS}")
    title = PERTINENT_TITLES[i % len(PERTINENT_TITLES)].format(code=code)
    lead = PERTINENT_LEADS[(i // len(PERTINENT_TITLES) + i) % len(PERTINENT_LEADS)]
    return title, lead.format(code=code) + quirk + "."


def _ab_note(mode: str, i: int, action: str, system: str) -> str:
    """The A–B edge note: generic (opaque) or saying how B bears on this task (pertinent)."""
    if mode == "opaque":
        return (
            "Read before running this recipe: a step it relies on has a quirk you must get "
            "exactly right."
        )
    verb = action.split()[0]  # "rotate", "roll", "scale": the task's verb, not A's wording
    return PERTINENT_NOTES[i % len(PERTINENT_NOTES)].format(verb=verb, system=system)


def build_tasks(bank: Bank, count: int, seed: int = 7, crowd: Crowd | None = None) -> list[HopTask]:
    """Write ``count`` synthetic tasks (A, B, a tangent and distractors) into ``bank``."""
    crowd = crowd or Crowd()
    rng = random.Random(seed)
    # B's proof token: unguessable from the question, but the same for the same seed (drawn
    # at random per run it moved B's vector, and with it the lab's figures, run to run).
    tokens = random.Random(f"proof-{seed}")
    tasks = []
    with audit.acting_as("hop_lab"), transaction.atomic():
        for i in range(count):
            system = SYSTEMS[i % len(SYSTEMS)]
            action, action_title = ACTIONS[(i // len(SYSTEMS) + i) % len(ACTIONS)]
            code = f"{CODENAMES[i % len(CODENAMES)]}-{i}"
            token = f"PROOF-{tokens.getrandbits(24):06X}"

            def make(title, content, kind="fact", **extra):
                data = {
                    "title": title,
                    "content": content,
                    "kind": kind,
                    "lifetime": {"durable": True},
                    **extra,
                }
                return create_entry(bank, clean_entry_data(bank, data), allow_duplicate=True)

            a = make(
                f"{action_title} the {system}",
                f"Recipe to {action} the {system}: announce in #ops, run the playbook job, watch the "
                f"dashboards for ten minutes, then close the change ticket.",
                kind="recipe",
                useful_for=f"When you need to {action} the {system}.",
                systems=[system],
            )
            b = make(*_b_text(crowd.b_text, i, code, token, system, rng), kind="gotcha")
            tangent = make(
                f"History of the {code} name",
                f"The {code} codename came from a 2019 naming contest; it has no technical meaning.",
            )
            for shape in DISTRACTOR_SHAPES:
                make(
                    shape.format(Action=action_title, action=action, system=system),
                    f"Notes about how teams {action} the {system}: timing, approvals, staging differences.",
                    systems=[system],
                )
            if crowd.per_a and crowd.order == "before":
                _crowd_edges(bank, a, i, crowd, rng, make)
            link(
                bank,
                {
                    "from": b.short_id,
                    "to": a.short_id,
                    "relation": "clarifies",
                    "note": _ab_note(crowd.b_text, i, action, system),
                },
            )
            link(
                bank,
                {
                    "from": a.short_id,
                    "to": tangent.short_id,
                    "relation": "see_also",
                    "note": "Background only: naming history, not needed to do this task.",
                },
            )
            if crowd.per_a and crowd.order == "after":
                _crowd_edges(bank, a, i, crowd, rng, make)
            tasks.append(HopTask(f"How do I {action} the {system}?", a, b, tangent, token))
        # One batched pass before commit: the per-entry embedding jobs queued on commit then
        # find every vector current and skip the model (same vectors, far fewer model calls).
        embed_entries(Entry.objects.filter(bank=bank))
    embed_edge_notes(bank)  # as the periodic job does: the notes' fact vectors
    return tasks


QUESTION_STOPWORDS = {"how", "do", "i", "the", "of", "a", "in", "to", "for", "and", "up"}


def question_words_in_b(task: HopTask) -> set[str]:
    """Words of the question (less stopwords) that B's title or content contains."""
    words = {w for w in re.findall(r"[a-z0-9]+", task.query.lower()) if w not in QUESTION_STOPWORDS}
    b_words = set(re.findall(r"[a-z0-9]+", f"{task.b.title} {task.b.content}".lower()))
    return words & b_words


def leak_check(bank: Bank, tasks: list[HopTask], *, b_shares_words: bool = True) -> list[str]:
    """The proof token must appear in no note and nowhere in A; unless ``b_shares_words``, B
    must share no word with the question either."""
    notes = list(Edge.objects.filter(bank=bank).values_list("note", flat=True))
    leaks = []
    for t in tasks:
        if not b_shares_words and question_words_in_b(t):
            leaks.append(f"B of {t.query!r} shares {sorted(question_words_in_b(t))}")
        a_text = " ".join([t.a.title, t.a.content, t.a.summary, t.a.useful_for])
        if t.token in a_text:
            leaks.append(f"{t.token} appears in A ({t.a.short_id})")
        if any(t.token in note for note in notes):
            leaks.append(f"{t.token} appears in an edge note")
    return leaks


def run_lab(
    bank: Bank, tasks: list[HopTask], *, limit: int = 8, crowd: Crowd | None = None
) -> HopLabReport:
    report = HopLabReport(built=len(tasks), crowd=crowd or Crowd())
    report.leaks = leak_check(bank, tasks, b_shares_words=False)
    for t in tasks:
        vector = embed_query(t.query)
        flat = run_query(
            bank, QueryParams(t.query, fold=False, limit=limit), record=False, query_vector=vector
        )
        if t.b.short_id in {r["id"] for r in flat["results"]}:
            continue  # the flat search already finds B: not a hop task
        report.kept += 1
        folded = run_query(
            bank, QueryParams(t.query, limit=limit), record=False, query_vector=vector
        )
        results, shown, pointers = payload_ids(folded)
        report.flat_entries_lost += sum(1 for r in flat["results"] if r["id"] not in shown)
        if t.b.short_id in shown:
            report.b_in_fold += 1
            if t.b.short_id in results:
                report.b_as_result += 1
            elif any(p["id"] == t.b.short_id and p["kind"] == "folded" for p in pointers):
                report.b_as_folded += 1
            else:
                report.b_as_neighbor += 1
        tangent_pointers = [p for p in pointers if p["id"] == t.tangent.short_id]
        if tangent_pointers:
            report.tangent_in_fold += 1
            if all(p["note"].lower().startswith("background only") for p in tangent_pointers):
                report.tangent_notes_marked += 1
    return report


def hop_lab(
    count: int = 30, *, seed: int = 7, keep: bool = False, crowd: Crowd | None = None
) -> tuple[HopLabReport, str]:
    """Build a scratch bank, run the lab, drop the bank unless ``keep``."""
    slug = f"hop-lab-{secrets.token_hex(3)}"
    bank, _ = ensure_bank(slug, name="Hop lab (scratch)")
    try:
        tasks = build_tasks(bank, count, seed, crowd)
        embed_entries(Entry.objects.filter(bank=bank))
        report = run_lab(bank, tasks, crowd=crowd)
    except KbError:
        bank.delete()
        raise
    if not keep:
        bank.delete()
    return report, slug
