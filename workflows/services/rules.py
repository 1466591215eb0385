"""The six gap rules of API.md "Workflows", each a pure function over a :class:`ProcessGraph`.

Each rule returns :class:`Gap`s whose message a manager can act on: what is missing, which
steps, why it matters and what would close it. No rule touches the database.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import networkx as nx

from workflows.models import Rule, Severity
from workflows.services.subgraph import PROCESS_KIND, STEP_KINDS, FlowNode, ProcessGraph

SHOWN_NAMES = 5


@dataclass(frozen=True)
class Gap:
    """One hole found by a rule. ``entries`` (sorted short ids) is its identity within the
    process and rule; ``related`` names entries that explain it."""

    rule: str
    entries: tuple[str, ...]
    message: str
    severity: str
    related: tuple[str, ...] = ()


def _names(nodes: Iterable[FlowNode]) -> str:
    titles = [f"'{n.title}'" for n in nodes]
    if len(titles) > SHOWN_NAMES:
        rest = len(titles) - SHOWN_NAMES
        return ", ".join(titles[:SHOWN_NAMES]) + f" and {rest} more"
    if len(titles) <= 1:
        return "".join(titles)
    return ", ".join(titles[:-1]) + " and " + titles[-1]


def _ids(graph: ProcessGraph, pks: Iterable[int]) -> tuple[str, ...]:
    return tuple(sorted(graph.nodes[pk].short_id for pk in pks))


def _by_title(graph: ProcessGraph, pks: Iterable[int]) -> list[FlowNode]:
    return sorted((graph.nodes[pk] for pk in pks), key=lambda n: (n.title.lower(), n.short_id))


def dead_end(graph: ProcessGraph) -> list[Gap]:
    """A step (or decision) with no successor that is not marked terminal."""
    gaps = []
    for pk in graph.steps:
        node = graph.nodes[pk]
        if node.terminal or graph.successors(pk):
            continue
        if node.is_decision:
            message = (
                f"{node.label} leads nowhere and is not marked terminal: work stops at this "
                "decision whatever the answer. Add the step that follows each answer, or mark it "
                "as an end (tick “Ends its process” on its entry page) if the process really ends here."
            )
        else:
            message = (
                f"{node.label} has no successor and is not marked terminal: work stops here. "
                "Add the next step, or mark it as an end (tick “Ends its process” on its entry "
                "page) if the process really ends here."
            )
        gaps.append(Gap(Rule.DEAD_END, (node.short_id,), message, Severity.HIGH))
    return gaps


def single_branch_decision(graph: ProcessGraph) -> list[Gap]:
    """A decision point with exactly one successor: the other answer is not covered."""
    gaps = []
    for pk in graph.steps:
        node = graph.nodes[pk]
        successors = graph.successors(pk)
        if not node.is_decision or len(successors) != 1:
            continue
        only = graph.nodes[successors[0]]
        message = (
            f"{node.label} has only one branch (to '{only.title}'): the other answer is not "
            "covered, so nobody knows what happens when it goes the other way. Add the step "
            "that handles the other outcome."
        )
        gaps.append(
            Gap(
                Rule.SINGLE_BRANCH_DECISION,
                (node.short_id,),
                message,
                Severity.MEDIUM,
                related=(only.short_id,),
            )
        )
    return gaps


def unproduced_requirement(graph: ProcessGraph) -> list[Gap]:
    """Something a step requires that no step produces and that is not marked external.

    Steps and processes named by ``requires`` are dependencies on work, not things to
    produce, and are left to the flow rules.
    """
    produced = {t for targets in graph.produces.values() for t in targets}
    needed_by: dict[int, list[int]] = {}
    for pk in graph.steps:
        for target in graph.requires.get(pk, []):
            needed_by.setdefault(target, []).append(pk)
    gaps = []
    for target in [n.pk for n in _by_title(graph, needed_by)]:
        node = graph.nodes[target]
        if node.kind in STEP_KINDS or node.kind == PROCESS_KIND:
            continue
        if target in produced or target in graph.produced_outside or node.external:
            continue
        users = _by_title(graph, needed_by[target])
        message = (
            f"'{node.title}' is required by {_names(users)} but no step produces it and it is "
            "not marked as coming from outside: the work can stall waiting for it. Add the "
            "step that produces it, or mark it as coming from outside the process if that is "
            "where it comes from."
        )
        gaps.append(
            Gap(
                Rule.UNPRODUCED_REQUIREMENT,
                (node.short_id,),
                message,
                Severity.HIGH,
                related=_ids(graph, needed_by[target]),
            )
        )
    return gaps


def unowned_step(graph: ProcessGraph) -> list[Gap]:
    """A step (or decision) with no ``owned_by`` edge."""
    gaps = []
    for pk in graph.steps:
        if graph.owned_by.get(pk):
            continue
        node = graph.nodes[pk]
        message = (
            f"{node.label} has no owner: nobody is accountable for it, so it can be skipped, "
            "delayed or done twice. Name the role or team that owns it."
        )
        gaps.append(Gap(Rule.UNOWNED_STEP, (node.short_id,), message, Severity.LOW))
    return gaps


def _reachable(starts: Iterable[int], edges: Callable[[int], Iterable[int]]) -> set[int]:
    seen = set(starts)
    queue = deque(seen)
    while queue:
        for nxt in edges(queue.popleft()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


def start_steps(graph: ProcessGraph) -> list[int]:
    return [pk for pk in graph.steps if graph.nodes[pk].start]


def unreachable_step(graph: ProcessGraph) -> list[Gap]:
    """A step not reachable from a start step along ``precedes`` inside the process.

    A process with steps but no start step gets one finding about the process instead of one
    per step: marking the start is the single fix.
    """
    steps = graph.steps
    if not steps:
        return []
    starts = start_steps(graph)
    if not starts:
        process = graph.process
        message = (
            f"Process '{process.title}' has no start step: no step is marked as where work "
            "begins, so none of its steps can be reached. Mark the first step as the start "
            "(tick “Starts its process” on its entry page)."
        )
        return [
            Gap(
                Rule.UNREACHABLE_STEP,
                (process.short_id,),
                message,
                Severity.HIGH,
                related=_ids(graph, steps),
            )
        ]
    reached = _reachable(starts, graph.step_successors)
    gaps = []
    for pk in steps:
        if pk in reached:
            continue
        node = graph.nodes[pk]
        message = (
            f"{node.label} cannot be reached from any start step: as drawn, work never gets "
            "there. Link it from the step that comes before it (precedes), or mark it as a "
            "start step (tick “Starts its process” on its entry page) if work can begin there."
        )
        gaps.append(Gap(Rule.UNREACHABLE_STEP, (node.short_id,), message, Severity.MEDIUM))
    return gaps


def loop_without_exit(graph: ProcessGraph) -> list[Gap]:
    """A cycle of steps from which no terminal step (nor a hand-off out of the process) is
    reachable: once work enters it, it never ends."""
    steps = graph.steps
    flow = nx.DiGraph()
    flow.add_nodes_from(steps)
    for pk in steps:
        flow.add_edges_from((pk, t) for t in graph.step_successors(pk))
    exits = [pk for pk in steps if graph.nodes[pk].terminal or graph.hands_off(pk)]
    can_finish = _reachable(exits, flow.predecessors)
    gaps = []
    cycles = [c for c in nx.strongly_connected_components(flow) if len(c) > 1]
    for component in sorted(cycles, key=lambda c: _ids(graph, c)):
        if component & can_finish:
            continue
        members = _by_title(graph, component)
        leaves = any(t not in component for pk in component for t in flow.successors(pk))
        why = (
            "its ways out only lead to steps that never finish"
            if leaves
            else "there is no way out of it"
        )
        message = (
            f"Steps {_names(members)} form a loop and {why}: once work enters it, it goes "
            "round for ever and never reaches an end. Add an exit: a branch leaving the loop "
            "towards a terminal step."
        )
        gaps.append(Gap(Rule.LOOP_WITHOUT_EXIT, _ids(graph, component), message, Severity.HIGH))
    return gaps


RULES: dict[str, Callable[[ProcessGraph], list[Gap]]] = {
    Rule.DEAD_END: dead_end,
    Rule.SINGLE_BRANCH_DECISION: single_branch_decision,
    Rule.UNPRODUCED_REQUIREMENT: unproduced_requirement,
    Rule.UNOWNED_STEP: unowned_step,
    Rule.UNREACHABLE_STEP: unreachable_step,
    Rule.LOOP_WITHOUT_EXIT: loop_without_exit,
}
SEVERITY_ORDER = {Severity.HIGH: 0, Severity.MEDIUM: 1, Severity.LOW: 2}


def evaluate(graph: ProcessGraph) -> list[Gap]:
    """Every rule over ``graph``: most severe first, then by rule and entries."""
    gaps = [gap for rule in RULES.values() for gap in rule(graph)]
    order = list(RULES)
    return sorted(gaps, key=lambda g: (SEVERITY_ORDER[g.severity], order.index(g.rule), g.entries))
