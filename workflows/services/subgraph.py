"""Load one process as a small in-memory flow graph, in a fixed handful of queries.

Members are the live entries with a current ``part_of`` edge to the process entry. Flow comes
from current edges whose type has a workflow role (``precedes``, ``requires``, ``produces``,
``owned_by`` — read from the bank's vocabulary, so bank-defined types with a role take part).
Only current edges count. The rules in :mod:`workflows.services.rules` are pure functions over
the :class:`ProcessGraph` this returns.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property

from django.db.models import Q
from django.db.models.expressions import RawSQL

from graph.edges.links import current_q
from graph.models import Edge, EdgeType, WorkflowRole
from kb.errors import NotFound
from kb.models import Bank, Entry, EntryStatus
from kb.services.entries import find_entry

MEMBERSHIP_RELATION = "part_of"  # membership has no workflow role; it is the container relation
PROCESS_KIND = "process"
DECISION_KIND = "decision_point"
STEP_KINDS = frozenset({"step", DECISION_KIND})
BRANCH_LABEL_WORDS = 4  # a branch drawn from an edge's note shows its first words
INACTIVE_STATUSES = (
    EntryStatus.RETIRED,
    EntryStatus.CANCELLED,
    EntryStatus.MERGED,
    EntryStatus.DELETED,
)


def _flag(metadata: object, name: str) -> bool:
    """A metadata flag is set by ``true`` (or the string "true", as spreadsheets write it)."""
    if not isinstance(metadata, dict):
        return False
    value = metadata.get(name)
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


@dataclass(frozen=True)
class FlowNode:
    """An entry as the rules see it."""

    pk: int
    short_id: str
    title: str
    kind: str
    member: bool
    start: bool = False
    terminal: bool = False
    external: bool = False

    @property
    def is_step(self) -> bool:
        return self.member and self.kind in STEP_KINDS

    @property
    def is_decision(self) -> bool:
        return self.member and self.kind == DECISION_KIND

    @property
    def label(self) -> str:
        """How a manager reads the node: "Step 'Verify insurance'"."""
        noun = {
            "step": "Step",
            DECISION_KIND: "Decision",
            "artifact": "Artifact",
            "role": "Role",
            "team": "Team",
            PROCESS_KIND: "Process",
        }.get(self.kind, "Entry")
        return f"{noun} '{self.title}'"


def branch_words(label: str | None, note: str | None) -> str:
    """What a branch reads in the drawing: the edge's label; else a note's lead-in before a
    colon ("Yes: paid by the due date" reads "Yes"); else the note's first words."""
    if (label or "").strip():
        return label.strip()
    note = " ".join((note or "").split())
    head, colon, _ = note.partition(":")
    if colon and 0 < len(head.split()) <= 3:
        return head
    words = note.split()
    cut = " ".join(words[:BRANCH_LABEL_WORDS])
    return cut + ("…" if len(words) > BRANCH_LABEL_WORDS else "")


@dataclass
class ProcessGraph:
    """One process: its member entries, the entries its steps point at, and the flow edges."""

    process: FlowNode
    nodes: dict[int, FlowNode]
    precedes: dict[int, list[int]] = field(default_factory=dict)
    requires: dict[int, list[int]] = field(default_factory=dict)
    produces: dict[int, list[int]] = field(default_factory=dict)
    owned_by: dict[int, list[int]] = field(default_factory=dict)
    produced_outside: frozenset[int] = frozenset()
    # (from, to) of a ``precedes`` edge -> the words that label it (the edge's label, else
    # the first words of its note): a decision's branches read "yes" / "no" in the drawing.
    branch_labels: dict[tuple[int, int], str] = field(default_factory=dict)

    @cached_property
    def steps(self) -> list[int]:
        """Member steps and decision points, ordered by title (a stable reading order).

        Members are all known when the graph is built, so this is computed once."""
        found = [n for n in self.nodes.values() if n.is_step]
        return [n.pk for n in sorted(found, key=lambda n: (n.title.lower(), n.short_id))]

    def successors(self, pk: int) -> list[int]:
        """Where work goes next: steps of this process, or anything outside it (a hand-off).

        A ``precedes`` edge to a non-step member (an artifact, a role) or to the process
        itself says nothing about flow and is ignored.
        """
        out = []
        for target in self.precedes.get(pk, []):
            node = self.nodes[target]
            if node.is_step or (not node.member and target != self.process.pk):
                out.append(target)
        return out

    def step_successors(self, pk: int) -> list[int]:
        return [t for t in self.successors(pk) if self.nodes[t].is_step]

    def hands_off(self, pk: int) -> bool:
        """True when the step passes work to something outside this process."""
        return any(not self.nodes[t].member for t in self.successors(pk))


def workflow_types(bank: Bank) -> tuple[dict[int, str], set[int]]:
    """The bank's vocabulary read for workflows: type id → workflow role, and part_of ids."""
    roles: dict[int, str] = {}
    membership: set[int] = set()
    for pk, name, role in EdgeType.objects.filter(Q(bank__isnull=True) | Q(bank=bank)).values_list(
        "pk", "name", "workflow_role"
    ):
        if role:
            roles[pk] = role
        if name == MEMBERSHIP_RELATION:
            membership.add(pk)
    return roles, membership


def find_process(bank: Bank, ref: str) -> Entry:
    """The process entry ``ref`` (short id or key) of ``bank``; 404 ``process_not_found``."""
    try:
        entry = find_entry(bank, ref)
    except NotFound:
        entry = None
    if entry is None or entry.kind.name != PROCESS_KIND or entry.status in INACTIVE_STATUSES:
        raise NotFound(f"No process {ref!r} in bank {bank.slug!r}.", code="process_not_found")
    return entry


def processes_of(bank: Bank):
    """The live process entries of ``bank``, by title."""
    return (
        Entry.objects.filter(bank=bank, kind__name=PROCESS_KIND)
        .exclude(status__in=INACTIVE_STATUSES)
        .order_by("title", "id")
    )


def _any_of(ids) -> RawSQL:
    """``IN`` over many ids as one array parameter (Django would bind each id separately)."""
    return RawSQL("SELECT unnest(%s::bigint[])", (list(ids),))


def _node(pk, short_id, title, kind, metadata, member: bool) -> FlowNode:
    return FlowNode(
        pk=pk,
        short_id=short_id,
        title=title,
        kind=kind,
        member=member,
        start=_flag(metadata, "start"),
        terminal=_flag(metadata, "terminal"),
        external=_flag(metadata, "external"),
    )


def load_process_graph(bank: Bank, process: Entry) -> ProcessGraph:
    """Read the process subgraph in at most six queries, whatever its size.

    Guarantees: only current edges; only entries of ``bank``; retired, cancelled, merged and
    deleted entries take no part.
    """
    roles, membership = workflow_types(bank)
    root = _node(
        process.pk, process.short_id, process.title, PROCESS_KIND, process.metadata, member=False
    )
    nodes: dict[int, FlowNode] = {process.pk: root}
    # Two plain index lookups rather than one semi-join: the plan stays good even before
    # PostgreSQL has statistics for a freshly imported bank.
    member_ids = list(
        Edge.objects.filter(bank=bank, to_entry=process, type_id__in=membership)
        .filter(current_q())
        .values_list("from_entry_id", flat=True)
    )
    _add_nodes(bank, nodes, member_ids, member=True)
    graph = ProcessGraph(process=root, nodes=nodes)
    step_ids = [pk for pk, n in nodes.items() if n.is_step]
    if not step_ids or not roles:
        return graph
    flow_rows = list(
        Edge.objects.filter(bank=bank, type_id__in=list(roles), from_entry_id__in=_any_of(step_ids))
        .filter(current_q())
        .order_by("id")
        .values_list("from_entry_id", "to_entry_id", "type_id", "label", "note")
    )
    # What the steps point at outside the process (roles, shared artifacts, hand-offs).
    outside = {row[1] for row in flow_rows if row[1] not in nodes}
    if outside:
        _add_nodes(bank, nodes, outside, member=False)
    _add_flow(graph, roles, flow_rows)
    graph.produced_outside = _produced_outside(bank, graph, roles, step_ids)
    return graph


def _add_nodes(bank: Bank, nodes: dict[int, FlowNode], ids, *, member: bool) -> None:
    """The active entries among ``ids`` as flow nodes (one statement)."""
    rows = (
        Entry.objects.filter(bank=bank, pk__in=_any_of(ids))
        .exclude(status__in=INACTIVE_STATUSES)
        .order_by()
        .values_list("pk", "short_id", "title", "kind__name", "metadata")
    )
    for pk, short_id, title, kind, metadata in rows:
        nodes[pk] = _node(pk, short_id, title, kind, metadata, member=member)


def _add_flow(graph: ProcessGraph, roles: dict, flow_rows: list[tuple]) -> None:
    """The steps' edges by workflow role, and the words of a decision's branches."""
    by_role: dict[str, dict[int, list[int]]] = {
        WorkflowRole.PRECEDES: defaultdict(list),
        WorkflowRole.REQUIRES: defaultdict(list),
        WorkflowRole.PRODUCES: defaultdict(list),
        WorkflowRole.OWNED_BY: defaultdict(list),
    }
    for source, target, type_id, label, note in flow_rows:
        if target not in graph.nodes:  # retired, merged or deleted
            continue
        targets = by_role[roles[type_id]][source]
        if target not in targets:  # two types with one role (core + bank) count once
            targets.append(target)
        words = branch_words(label, note)
        if roles[type_id] == WorkflowRole.PRECEDES and words:
            graph.branch_labels.setdefault((source, target), words)
    graph.precedes = dict(by_role[WorkflowRole.PRECEDES])
    graph.requires = dict(by_role[WorkflowRole.REQUIRES])
    graph.produces = dict(by_role[WorkflowRole.PRODUCES])
    graph.owned_by = dict(by_role[WorkflowRole.OWNED_BY])


def _produced_outside(
    bank: Bank, graph: ProcessGraph, roles: dict, step_ids: list[int]
) -> frozenset[int]:
    """What the steps require that a step of another process produces (one statement)."""
    produced_here = {t for targets in graph.produces.values() for t in targets}
    candidates = {
        t
        for targets in graph.requires.values()
        for t in targets
        if t not in produced_here and not graph.nodes[t].external
    }
    if not candidates:
        return graph.produced_outside
    produce_types = [pk for pk, role in roles.items() if role == WorkflowRole.PRODUCES]
    return frozenset(
        Edge.objects.filter(
            bank=bank, type_id__in=produce_types, to_entry_id__in=_any_of(candidates)
        )
        .filter(current_q())
        .exclude(from_entry_id__in=_any_of(step_ids))
        .filter(from_entry__kind__name__in=STEP_KINDS)
        .exclude(from_entry__status__in=INACTIVE_STATUSES)
        .values_list("to_entry_id", flat=True)
    )
