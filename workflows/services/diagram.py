"""The process flow as inline SVG, drawn on the server (no JavaScript, no CDN: works offline).

Layout is Graphviz ``dot`` (a layered layout: ranks along ``precedes``, crossings minimised,
edges routed around boxes, labels sized to their text), through the ``graphviz`` package;
this module only says what to draw. Steps read left to right from the start steps; steps no
start reaches are dashed; decisions are diamonds; artifacts are notes joined to the steps
that make (green, dashed) or need (brown, dotted) them; hand-offs to other processes are
dashed boxes. Each step shows its owning role. Entries with findings are red, say how many
findings they have and link to the first in the findings table. The SVG is post-processed
into plain SVG 2 (no XML prolog, no xlink), so it can be inlined in HTML and parsed as XML.
"""

from __future__ import annotations

import html
import re
import textwrap
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

import graphviz
from django.utils.safestring import SafeString, mark_safe

from workflows.models import Finding, FindingStatus, Rule
from workflows.services.subgraph import FlowNode, ProcessGraph

MAX_DRAWN_STEPS = 250
LINE_CHARS = 24
WIDE_RANKS = 7  # more ranks than this are laid out top to bottom
FONT = "Helvetica"

COLORS = {
    "step": "#e8f0fe",
    "decision": "#fff4e0",
    "artifact": "#f1f8e9",
    "handoff": "#f5f5f5",
    "stroke": "#5f6b7a",
    "hole": "#c62828",
    "hole_fill": "#ffebee",
    "edge": "#5f6b7a",
    "produces": "#2e7d32",
    "requires": "#8d6e63",
    "muted": "#6b7280",
    "start": "#2e7d32",
    "terminal": "#263238",
}


@dataclass
class Diagram:
    """The drawing, or why there is none."""

    svg: SafeString | None
    width: int = 0
    height: int = 0
    note: str = ""


def _search_order(graph: ProcessGraph) -> list[int]:
    """Roots to explore from: start steps first, then steps nothing precedes, then the rest."""
    steps = graph.steps
    targets = {t for pk in steps for t in graph.step_successors(pk)}
    starts = [pk for pk in steps if graph.nodes[pk].start]
    sources = [pk for pk in steps if pk not in targets and not graph.nodes[pk].start]
    return [*starts, *sources, *steps]


def back_edges(graph: ProcessGraph) -> set[tuple[int, int]]:
    """Edges that close a cycle in a depth-first walk from the start steps (drawn as returns)."""
    state: dict[int, int] = {}  # 1 = on the walk's stack, 2 = done
    backs: set[tuple[int, int]] = set()
    for root in _search_order(graph):
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(graph.step_successors(root)))]
        while stack:
            pk, successors = stack[-1]
            nxt = next(successors, None)
            if nxt is None:
                state[pk] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                backs.add((pk, nxt))
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(graph.step_successors(nxt))))
    return backs


def layer_steps(graph: ProcessGraph) -> tuple[dict[int, int], set[int], set[tuple[int, int]]]:
    """Column of every step, the steps a start step reaches, and the back edges.

    Layers grow from the start steps (column 0): a step sits one column after the furthest of
    its predecessors once the edges that close loops are set aside, so the flow reads left to
    right and every forward edge points right.
    """
    steps = graph.steps
    reached: set[int] = set()
    queue = deque(pk for pk in steps if graph.nodes[pk].start)
    reached.update(queue)
    while queue:
        for nxt in graph.step_successors(queue.popleft()):
            if nxt not in reached:
                reached.add(nxt)
                queue.append(nxt)
    backs = back_edges(graph)
    indegree = {pk: 0 for pk in steps}
    forward: dict[int, list[int]] = {pk: [] for pk in steps}
    for pk in steps:
        for nxt in graph.step_successors(pk):
            if (pk, nxt) not in backs:
                forward[pk].append(nxt)
                indegree[nxt] += 1
    depth = {pk: 0 for pk in steps}
    ready = deque(pk for pk in steps if indegree[pk] == 0)
    while ready:
        pk = ready.popleft()
        for nxt in forward[pk]:
            depth[nxt] = max(depth[nxt], depth[pk] + 1)
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    return depth, reached, backs


def _wrap(text: str, width: int = LINE_CHARS, lines: int = 3) -> list[str]:
    out = textwrap.wrap(text, width=width) or [""]
    if len(out) > lines:
        out = out[:lines]
        out[-1] = out[-1][: width - 1].rstrip() + "…"
    return out


def _findings_by_entry(findings: Iterable[Finding]) -> dict[str, list[Finding]]:
    """Entries with a finding still to act on: resolved findings and findings whose risk a
    manager accepted leave the drawing's red (they stay listed in the table)."""
    by_entry: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.status in (FindingStatus.RESOLVED, FindingStatus.ACCEPTED):
            continue
        for short_id in finding.entries:
            by_entry.setdefault(short_id, []).append(finding)
    return by_entry


def _text(value: str) -> str:
    """Text for a Graphviz HTML-like label (escaped; the label is markup)."""
    return html.escape(value, quote=True)


def _label(title_lines: list[str], extra: list[tuple[str, str, int]], *, bold: bool = True) -> str:
    """An HTML-like label: the title lines, then (text, colour, point size) lines."""
    rows = [f"<B>{_text(line)}</B>" if bold else _text(line) for line in title_lines]
    rows += [
        f'<FONT COLOR="{color}" POINT-SIZE="{size}">{_text(text)}</FONT>'
        for text, color, size in extra
    ]
    return "<" + "<BR/>".join(rows) + ">"


def _tooltip(node: FlowNode, findings: list[Finding]) -> str:
    lines = [f"{node.label} ({node.short_id})", *(f"• {f.message}" for f in findings)]
    return "\n".join(lines)


def _node_attrs(node: FlowNode, findings: list[Finding], link_base: str) -> dict[str, str]:
    attrs = {"id": f"node-{node.short_id}", "tooltip": _tooltip(node, findings)}
    if findings:
        attrs["URL"] = f"{link_base}#finding-{findings[0].pk}"
        attrs["target"] = "_self"
        attrs["class"] = "hole"  # dot writes class="node hole" on the node's group
    return attrs


def build_dot(
    graph: ProcessGraph, findings: list[Finding], *, link_base: str = ""
) -> graphviz.Digraph:
    """The flow as a Graphviz graph (what to draw; ``dot`` decides where)."""
    holes = _findings_by_entry(findings)
    depth, reached, backs = layer_steps(graph)
    # Long flows read top to bottom (a page scrolls down, not sideways); short ones left to right.
    ranks = max(depth.values(), default=0) + 1
    loop_nodes = {
        short_id
        for f in findings
        if f.rule == Rule.LOOP_WITHOUT_EXIT and f.status != FindingStatus.RESOLVED
        for short_id in f.entries
    }
    dot = _digraph(ranks)
    roles = _draw_steps(dot, graph, holes, reached, link_base)
    drawn = _draw_flow(dot, graph, loop_nodes, backs, link_base)
    _draw_artifacts(dot, graph, holes, drawn, link_base)
    _legend(dot, roles)
    return dot


def _digraph(ranks: int) -> graphviz.Digraph:
    dot = graphviz.Digraph("flow", engine="dot")
    dot.attr(
        rankdir="LR" if ranks <= WIDE_RANKS else "TB",
        nodesep="0.35",
        ranksep="0.55",
        fontname=FONT,
        fontsize="11",
        bgcolor="transparent",
        pad="0.2",
        newrank="true",
    )
    dot.attr("node", fontname=FONT, fontsize="11", margin="0.14,0.08", penwidth="1.3")
    dot.attr("edge", fontname=FONT, fontsize="10", color=COLORS["edge"], arrowsize="0.7")
    return dot


def _step_extra(owners: list[FlowNode], found: list[Finding]) -> list[tuple[str, str, int]]:
    """The small lines under a step's title: its owner, then what its findings say."""
    owner_text = "⚑ " + (", ".join(o.title for o in owners) if owners else "no owner")
    extra = [(_wrap(owner_text, 30, 1)[0], COLORS["muted"] if owners else COLORS["hole"], 9)]
    if found:
        extra.append((f"⚠ {len(found)} finding{'s' if len(found) != 1 else ''}", COLORS["hole"], 9))
    if any(f.rule == Rule.DEAD_END for f in found):
        extra.append(("✕ stops here", COLORS["hole"], 9))
    if any(f.rule == Rule.SINGLE_BRANCH_DECISION for f in found):
        extra.append(("? missing branch", COLORS["hole"], 9))
    return extra


def _draw_steps(
    dot: graphviz.Digraph,
    graph: ProcessGraph,
    holes: dict[str, list[Finding]],
    reached: set[int],
    link_base: str,
) -> dict[str, tuple[FlowNode, int]]:
    """One box (or diamond) per step; returns the roles that own steps, with their counts."""
    roles: dict[str, tuple[FlowNode, int]] = {}
    for pk in graph.steps:
        node = graph.nodes[pk]
        found = holes.get(node.short_id, [])
        owners = [graph.nodes[t] for t in graph.owned_by.get(pk, [])]
        for owner in owners:
            roles[owner.short_id] = (owner, roles.get(owner.short_id, (owner, 0))[1] + 1)
        title = _wrap(node.title, 20 if node.is_decision else LINE_CHARS)
        if node.start:
            title[0] = "▶ " + title[0]
        if node.terminal:
            title[-1] = title[-1] + " ■"
        styles = ["filled"] + (["rounded"] if not node.is_decision else [])
        if pk not in reached:
            styles.append("dashed")
        dot.node(
            f"n{pk}",
            _label(title, _step_extra(owners, found)),
            shape="diamond" if node.is_decision else "box",
            style=",".join(styles),
            fillcolor=COLORS["hole_fill"]
            if found
            else COLORS["decision" if node.is_decision else "step"],
            color=COLORS["hole"] if found else COLORS["stroke"],
            penwidth="2.4" if found else ("2.6" if node.terminal else "1.3"),
            peripheries="2" if node.terminal else "1",
            **_node_attrs(node, found, link_base),
        )
    return roles


def _draw_handoff(dot: graphviz.Digraph, pk: int, node: FlowNode, link_base: str) -> None:
    dot.node(
        f"n{pk}",
        _label(
            _wrap(node.title), [("hand-off (outside this process)", COLORS["muted"], 9)], bold=False
        ),
        shape="box",
        style="rounded,dashed,filled",
        fillcolor=COLORS["handoff"],
        color=COLORS["muted"],
        **_node_attrs(node, [], link_base),
    )


def _draw_flow(
    dot: graphviz.Digraph,
    graph: ProcessGraph,
    loop_nodes: set[str],
    backs: set[tuple[int, int]],
    link_base: str,
) -> set[int]:
    """The flow edges between steps (and hand-offs to entries outside the process); a
    decision's branches carry their labels. Returns the entries drawn so far."""
    drawn = set(graph.steps)
    for pk in graph.steps:
        for target in graph.successors(pk):
            node = graph.nodes[target]
            if not node.is_step and target not in drawn:
                drawn.add(target)
                _draw_handoff(dot, target, node, link_base)
            if target not in drawn:
                continue
            src, dst = graph.nodes[pk].short_id, node.short_id
            in_loop = src in loop_nodes and dst in loop_nodes
            decision = graph.nodes[pk].is_decision
            branch = graph.branch_labels.get((pk, target), "") if decision else ""
            dot.edge(
                f"n{pk}",
                f"n{target}",
                color=COLORS["hole"] if in_loop else COLORS["edge"],
                penwidth="1.8" if in_loop else "1.3",
                constraint="false" if (pk, target) in backs else "true",
                **({"label": branch, "fontsize": "9"} if branch else {}),
            )
    return drawn


def _draw_artifact(
    dot: graphviz.Digraph, pk: int, node: FlowNode, found: list[Finding], link_base: str
) -> None:
    extra = [("from outside", COLORS["muted"], 8)] if node.external else []
    if found:
        extra.append((f"⚠ {len(found)} finding(s)", COLORS["hole"], 9))
    dot.node(
        f"n{pk}",
        _label(_wrap(node.title, LINE_CHARS, 2), extra, bold=False),
        shape="note",
        style="filled,dashed" if node.external else "filled",
        fillcolor=COLORS["hole_fill"] if found else COLORS["artifact"],
        color=COLORS["hole"] if found else COLORS["stroke"],
        fontsize="10",
        penwidth="2.2" if found else "1.1",
        **_node_attrs(node, found, link_base),
    )


def _draw_artifacts(
    dot: graphviz.Digraph,
    graph: ProcessGraph,
    holes: dict[str, list[Finding]],
    drawn: set[int],
    link_base: str,
) -> None:
    """Artifacts as notes: joined to the steps that produce them (green, dashed) and to the
    steps that require them (brown, dotted)."""
    artifacts: set[int] = set()
    for relation, color, style in (
        (graph.produces, COLORS["produces"], "dashed"),
        (graph.requires, COLORS["requires"], "dotted"),
    ):
        for pk in graph.steps:
            for target in relation.get(pk, []):
                node = graph.nodes[target]
                if node.is_step or target == graph.process.pk:
                    continue
                if node.kind in ("role", "team", "person"):
                    continue
                if target not in artifacts and target not in drawn:
                    artifacts.add(target)
                    _draw_artifact(dot, target, node, holes.get(node.short_id, []), link_base)
                produced = relation is graph.produces
                ends = (f"n{pk}", f"n{target}") if produced else (f"n{target}", f"n{pk}")
                dot.edge(*ends, color=color, style=style, arrowsize="0.6", penwidth="1.1")


def _legend(dot: graphviz.Digraph, roles: dict[str, tuple[FlowNode, int]]) -> None:
    """One compact legend node: the shapes, the artifact edges and the roles that own steps."""
    names = [
        f"{role.title} ({count})"
        for role, count in sorted(roles.values(), key=lambda item: item[0].title.lower())
    ]
    role_lines = textwrap.wrap("Roles (⚑ owner, steps owned): " + (" · ".join(names) or "none"), 48)
    roles_cell = '<BR ALIGN="LEFT"/>'.join(_text(line) for line in role_lines)
    label = (
        '<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="3" CELLPADDING="4" COLOR="#d0d7de">'
        '<TR><TD COLSPAN="2"><B>Legend</B></TD></TR>'
        f'<TR><TD BGCOLOR="{COLORS["step"]}">step</TD>'
        f'<TD BGCOLOR="{COLORS["decision"]}">decision (diamond)</TD></TR>'
        f'<TR><TD BGCOLOR="{COLORS["artifact"]}">artifact (note)</TD>'
        f'<TD BGCOLOR="{COLORS["hole_fill"]}" COLOR="{COLORS["hole"]}">has a finding: click it</TD></TR>'
        f'<TR><TD><FONT COLOR="{COLORS["produces"]}">- - → produces</FONT></TD>'
        f'<TD><FONT COLOR="{COLORS["requires"]}">· · → required by</FONT></TD></TR>'
        f'<TR><TD COLSPAN="2" ALIGN="LEFT">{roles_cell}<BR ALIGN="LEFT"/></TD></TR>'
        "</TABLE>>"
    )
    dot.node("legend", label, shape="plaintext", fontsize="9", id="legend")


_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_PT = re.compile(r'(width|height)="([\d.]+)pt"')


def _plain_svg(svg: str) -> tuple[str, int, int]:
    """Graphviz's SVG as plain inline SVG 2: no prolog, doctype or comments, ``href``
    instead of ``xlink:href``, holes' links classed ``hole``, sizes in pixels."""
    svg = _COMMENT.sub("", _PROLOG.sub("", svg, count=1))
    svg = svg.replace(' xmlns:xlink="http://www.w3.org/1999/xlink"', "")
    svg = re.sub(r' xlink:title="[^"]*"', "", svg)
    svg = svg.replace("xlink:href=", "href=").replace("&#45;", "-")
    svg = re.sub(r'<a href="([^"]*#finding-\d+)"', r'<a class="hole" href="\1"', svg)
    size = {}

    def px(match: re.Match) -> str:
        value = round(float(match.group(2)) * 4 / 3)
        size[match.group(1)] = value
        return f'{match.group(1)}="{value}"'

    head, rest = svg.split(">", 1)
    head = _PT.sub(px, head)
    return head + ">" + rest, size.get("width", 0), size.get("height", 0)


def render_diagram(
    graph: ProcessGraph, findings: Iterable[Finding], *, link_base: str = ""
) -> Diagram:
    """Lay out and draw ``graph`` with Graphviz; holes come from the unresolved ``findings``
    and link to ``{link_base}#finding-<id>`` (the findings table of the process page)."""
    steps = graph.steps
    if not steps:
        return Diagram(None, note="This process has no steps yet: add entries with part_of.")
    if len(steps) > MAX_DRAWN_STEPS:
        return Diagram(
            None,
            note=f"{len(steps)} steps are too many to draw legibly; the findings below list "
            "every hole.",
        )
    dot = build_dot(graph, list(findings), link_base=link_base)
    try:
        raw = dot.pipe(format="svg", encoding="utf-8")
    except graphviz.ExecutableNotFound:
        return Diagram(
            None,
            note="Graphviz is not installed (Debian: apt-get install graphviz); the findings "
            "below list every hole.",
        )
    except graphviz.CalledProcessError:
        return Diagram(
            None, note="The flow could not be laid out; the findings below list every hole."
        )
    svg, width, height = _plain_svg(raw)
    title = _text(graph.process.title)
    svg = svg.replace(
        "<svg ",
        f'<svg class="flow" role="img" aria-label="Flow of {title}" ',
        1,
    )
    return Diagram(mark_safe(svg), width, height)


def render_sparkline(values: list[int], width: int = 120, height: int = 28) -> SafeString:
    """Open findings over the last reports as a small inline SVG line (oldest left)."""
    if not values:
        return mark_safe('<span class="muted">no reports yet</span>')
    top = max(max(values), 1)
    step = width / max(len(values) - 1, 1)
    points = [
        (i * step if len(values) > 1 else width / 2, height - 4 - (v / top) * (height - 8))
        for i, v in enumerate(values)
    ]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    last_x, last_y = points[-1]
    label = ", ".join(str(v) for v in values)
    return mark_safe(
        f'<svg class="spark" width="{width + 8}" height="{height}" role="img" '
        f'aria-label="open findings in the last reports: {label}">'
        f"<title>Open findings, oldest to newest: {label}</title>"
        f'<polyline points="{path}" fill="none" stroke="#c62828" stroke-width="1.8"/>'
        f'<circle cx="{last_x:.1f}" cy="{last_y:.1f}" r="3" fill="#c62828"/></svg>'
    )
