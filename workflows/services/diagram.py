"""The process flow as inline SVG, drawn on the server (no JavaScript, no CDN: works offline).

Layered layout: columns grow from the start steps along ``precedes`` (a breadth-first walk
finds what the starts reach; a depth-first walk sets aside the edges that close loops; each
step then sits one column after its furthest predecessor). Steps no start reaches are drawn
after the reachable ones, dashed. Rows within a column follow the predecessors' rows (one
barycentre pass). Artifacts sit
in a band under the flow, next to the step that makes or first needs them; each step shows its
owning role. Entries with findings are outlined in red, carry a badge with their number of
findings and link to them in the findings table.
"""

from __future__ import annotations

import textwrap
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from workflows.models import Finding, FindingStatus, Rule
from workflows.services.subgraph import FlowNode, ProcessGraph

MAX_DRAWN_STEPS = 250
COL_W, ROW_H = 230, 104
BOX_W, BOX_H = 180, 70
ART_W, ART_H = 170, 46
ART_ROW_H = 62
MARGIN = 30
LINE_CHARS = 25

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
class Placed:
    node: FlowNode
    x: float
    y: float
    w: float
    h: float
    shape: str  # step | decision | artifact | handoff
    findings: list[Finding] = field(default_factory=list)

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


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


def _wrap(text: str, width: int = LINE_CHARS, lines: int = 2) -> list[str]:
    out = textwrap.wrap(text, width=width) or [""]
    if len(out) > lines:
        out = out[:lines]
        out[-1] = out[-1][: width - 1].rstrip() + "…"
    return out


def _findings_by_entry(findings: Iterable[Finding]) -> dict[str, list[Finding]]:
    by_entry: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.status == FindingStatus.RESOLVED:
            continue
        for short_id in finding.entries:
            by_entry.setdefault(short_id, []).append(finding)
    return by_entry


def render_diagram(
    graph: ProcessGraph, findings: Iterable[Finding], *, link_base: str = ""
) -> Diagram:
    """Lay out and draw ``graph``; holes come from the unresolved ``findings`` and link to
    ``{link_base}#finding-<id>`` (the findings table of the process page)."""
    steps = graph.steps
    if not steps:
        return Diagram(None, note="This process has no steps yet: add entries with part_of.")
    if len(steps) > MAX_DRAWN_STEPS:
        return Diagram(
            None,
            note=f"{len(steps)} steps are too many to draw legibly; the findings below list "
            "every hole.",
        )
    findings = list(findings)
    holes = _findings_by_entry(findings)
    depth, reached, _ = layer_steps(graph)

    # Columns and rows: reachable steps first, then the rest; barycentre of predecessors.
    predecessors: dict[int, list[int]] = {pk: [] for pk in steps}
    for pk in steps:
        for nxt in graph.step_successors(pk):
            predecessors[nxt].append(pk)
    columns: dict[int, list[int]] = {}
    for pk in steps:
        columns.setdefault(depth[pk], []).append(pk)
    row: dict[int, float] = {}
    for col in sorted(columns):
        members = columns[col]

        def key(pk: int, _row=row) -> tuple:
            placed = [_row[p] for p in predecessors[pk] if p in _row]
            centre = sum(placed) / len(placed) if placed else 1e6
            return (pk not in reached, centre, graph.nodes[pk].title.lower())

        members.sort(key=key)
        for i, pk in enumerate(members):
            row[pk] = i
    # Hand-offs (successors outside the process) get a column after their source.
    handoffs: dict[int, tuple[int, int]] = {}
    for pk in steps:
        for target in graph.successors(pk):
            if not graph.nodes[target].is_step and target not in handoffs:
                col = depth[pk] + 1
                used = len(columns.get(col, [])) + sum(1 for c, _ in handoffs.values() if c == col)
                handoffs[target] = (col, used)

    n_cols = max([*columns, *[c for c, _ in handoffs.values()]]) + 1
    n_rows = max([len(m) for m in columns.values()] + [r + 1 for _, r in handoffs.values()] + [1])
    flow_h = MARGIN * 2 + n_rows * ROW_H
    placed: dict[int, Placed] = {}
    for pk in steps:
        node = graph.nodes[pk]
        x = MARGIN + depth[pk] * COL_W
        y = MARGIN + row[pk] * ROW_H
        placed[pk] = Placed(
            node,
            x,
            y,
            BOX_W,
            BOX_H,
            "decision" if node.is_decision else "step",
            holes.get(node.short_id, []),
        )
    for target, (col, r) in handoffs.items():
        node = graph.nodes[target]
        placed[target] = Placed(
            node, MARGIN + col * COL_W, MARGIN + r * ROW_H, BOX_W, BOX_H, "handoff"
        )

    # Artifacts: under the column of the step that makes them, else the first that needs them.
    artifact_col: dict[int, int] = {}
    for relation in (graph.produces, graph.requires):
        for pk in steps:
            for target in relation.get(pk, []):
                node = graph.nodes[target]
                if node.is_step or target == graph.process.pk:
                    continue
                if node.kind in ("role", "team", "person"):
                    continue
                artifact_col.setdefault(target, depth[pk])
    art_rows: dict[int, int] = {}
    for target in sorted(artifact_col, key=lambda t: graph.nodes[t].title.lower()):
        col = artifact_col[target]
        r = sum(1 for t in art_rows if artifact_col[t] == col)
        art_rows[target] = r
        node = graph.nodes[target]
        placed[target] = Placed(
            node,
            MARGIN + col * COL_W + (BOX_W - ART_W) / 2,
            flow_h + 10 + r * ART_ROW_H,
            ART_W,
            ART_H,
            "artifact",
            holes.get(node.short_id, []),
        )
    art_h = (max(art_rows.values()) + 1) * ART_ROW_H + 30 if art_rows else 0

    # Owners (roles) per step, and the legend of roles.
    owners: dict[int, list[FlowNode]] = {
        pk: [graph.nodes[t] for t in graph.owned_by.get(pk, [])] for pk in steps
    }
    roles: dict[str, tuple[FlowNode, int]] = {}
    for pk in steps:
        for owner in owners[pk]:
            count = roles.get(owner.short_id, (owner, 0))[1]
            roles[owner.short_id] = (owner, count + 1)

    width = max(MARGIN * 2 + n_cols * COL_W + 60, 760)  # room for a last "✕ stops"
    legend_y = flow_h + art_h + 10
    height = legend_y + legend_height(width - 2 * MARGIN, roles) + 10
    loop_nodes = {
        short_id
        for f in findings
        if f.rule == Rule.LOOP_WITHOUT_EXIT and f.status != FindingStatus.RESOLVED
        for short_id in f.entries
    }

    parts: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="flow" role="img" '
        f'aria-label="Flow of {escape(graph.process.title)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="system-ui, sans-serif" font-size="12">',
        "<defs>"
        f'<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        f'fill="{COLORS["edge"]}"/></marker>'
        f'<marker id="arrow-hole" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        f'fill="{COLORS["hole"]}"/></marker>'
        f'<marker id="arrow-art" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" '
        f'markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        f'fill="{COLORS["requires"]}"/></marker>'
        "</defs>",
    ]
    if art_rows:
        parts.append(
            f'<line x1="{MARGIN}" y1="{flow_h - 4}" x2="{width - MARGIN}" '
            f'y2="{flow_h - 4}" stroke="#d0d7de" stroke-dasharray="4 4"/>'
            f'<text x="{MARGIN}" y="{flow_h - 9}" fill="{COLORS["muted"]}" font-size="11">'
            "Artifacts (made ⟶ / needed ⇢)</text>"
        )

    # Artifact edges first (under everything else).
    for pk in steps:
        src = placed[pk]
        for target in graph.produces.get(pk, []):
            if target in placed and placed[target].shape == "artifact":
                dst = placed[target]
                parts.append(
                    _curve(
                        src.cx - 20,
                        src.y + src.h,
                        dst.cx - 20,
                        dst.y,
                        COLORS["produces"],
                        dash="5 3",
                        marker="arrow",
                        cls="art-edge produces",
                        opacity=0.55,
                    )
                )
        for target in graph.requires.get(pk, []):
            if target in placed and placed[target].shape == "artifact":
                dst = placed[target]
                parts.append(
                    _curve(
                        dst.cx + 20,
                        dst.y,
                        src.cx + 20,
                        src.y + src.h,
                        COLORS["requires"],
                        dash="2 3",
                        marker="arrow-art",
                        cls="art-edge requires",
                        opacity=0.55,
                    )
                )
    # Flow edges: next column as a curve; longer jumps and returns run orthogonally through
    # the gaps between rows and columns, so no line crosses a box.
    lanes: dict[tuple, int] = {}

    def lane(key: tuple) -> float:
        lanes[key] = lanes.get(key, 0) + 1
        return ((lanes[key] - 1) % 5 - 2) * 4.0

    row_gap, col_gap = ROW_H - BOX_H, COL_W - BOX_W
    for pk in steps:
        src = placed[pk]
        for target in graph.successors(pk):
            dst = placed.get(target)
            if dst is None:
                continue
            in_loop = src.node.short_id in loop_nodes and dst.node.short_id in loop_nodes
            color = COLORS["hole"] if in_loop else COLORS["edge"]
            marker = "arrow-hole" if in_loop else "arrow"
            if dst.x > src.x and round(dst.x - src.x) == COL_W:
                parts.append(_curve_h(src.x + src.w, src.cy, dst.x, dst.cy, color, marker))
                continue
            if dst.x > src.x:  # forward over several columns
                gx1 = src.x + src.w + col_gap / 2 + lane(("col", src.x))
                gy = dst.y - row_gap / 2 + lane(("row", dst.y))
                gx2 = dst.x - col_gap / 2 + lane(("col", dst.x - COL_W))
                points = [
                    (src.x + src.w, src.cy),
                    (gx1, src.cy),
                    (gx1, gy),
                    (gx2, gy),
                    (gx2, dst.cy),
                    (dst.x - 2, dst.cy),
                ]
            else:  # a return to an earlier (or the same) column
                sx, tx = src.cx + 12, dst.cx - 12
                gy1 = src.y - row_gap / 2 + lane(("row", src.y))
                if round(src.y) == round(dst.y):
                    points = [(sx, src.y), (sx, gy1), (tx, gy1), (tx, dst.y - 2)]
                else:
                    gx = src.x - col_gap / 2 + lane(("col", src.x - COL_W))
                    gy2 = dst.y - row_gap / 2 + lane(("row", dst.y))
                    points = [
                        (sx, src.y),
                        (sx, gy1),
                        (gx, gy1),
                        (gx, gy2),
                        (tx, gy2),
                        (tx, dst.y - 2),
                    ]
            path = " L".join(f"{x:.1f},{y:.1f}" for x, y in points)
            parts.append(
                f'<path d="M{path}" fill="none" stroke="{color}" stroke-width="1.6" '
                f'stroke-linejoin="round" marker-end="url(#{marker})"/>'
            )

    for pk in steps:
        parts.append(_draw_step(placed[pk], owners[pk], pk not in reached, link_base))
    for target in handoffs:
        parts.append(_draw_handoff(placed[target], link_base))
    for target in art_rows:
        parts.append(_draw_artifact(placed[target], link_base))
    parts.append(_legend(MARGIN, legend_y, width - 2 * MARGIN, roles))
    parts.append("</svg>")
    return Diagram(mark_safe("".join(parts)), width, height)


def _curve_h(x1: float, y1: float, x2: float, y2: float, color: str, marker: str) -> str:
    mid = (x1 + x2) / 2
    return (
        f'<path d="M{x1:.1f},{y1:.1f} C{mid:.1f},{y1:.1f} {mid:.1f},{y2:.1f} {x2 - 2:.1f},'
        f'{y2:.1f}" fill="none" stroke="{color}" stroke-width="1.6" '
        f'marker-end="url(#{marker})"/>'
    )


def _curve(x1, y1, x2, y2, color, *, dash, marker, cls, opacity) -> str:
    mid = (y1 + y2) / 2
    return (
        f'<path class="{cls}" d="M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} '
        f'{x2:.1f},{y2:.1f}" fill="none" stroke="{color}" stroke-width="1.2" '
        f'stroke-dasharray="{dash}" opacity="{opacity}" marker-end="url(#{marker})"/>'
    )


def _tooltip(p: Placed) -> str:
    lines = [p.node.label + f" ({p.node.short_id})"]
    lines += [f"• {f.message}" for f in p.findings]
    return f"<title>{escape(chr(10).join(lines))}</title>"


def _open(p: Placed, link_base: str) -> str:
    """A hole links to its (first) finding; other entries are plain groups."""
    ident = f'id="node-{escape(p.node.short_id)}" data-entry="{escape(p.node.short_id)}"'
    if p.findings:
        href = f"{link_base}#finding-{p.findings[0].pk}"
        return f'<a href="{escape(href)}" {ident} class="node hole">'
    return f'<g {ident} class="node">'


def _close(p: Placed) -> str:
    return "</a>" if p.findings else "</g>"


def _badge(p: Placed) -> str:
    if not p.findings:
        return ""
    x, y = p.x + p.w - 4, p.y + 4
    return (
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="10" fill="{COLORS["hole"]}"/>'
        f'<text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle" fill="#fff" font-size="11" '
        f'font-weight="700">{len(p.findings)}</text>'
    )


def _draw_step(p: Placed, owners: list[FlowNode], unreached: bool, link_base: str) -> str:
    hole = bool(p.findings)
    stroke = COLORS["hole"] if hole else COLORS["stroke"]
    fill = COLORS["hole_fill"] if hole else COLORS[p.shape]
    width = 2.4 if hole else 1.3
    dash = ' stroke-dasharray="6 4"' if unreached else ""
    out = [_open(p, link_base), _tooltip(p)]
    if p.shape == "decision":
        pts = (
            f"{p.cx:.1f},{p.y:.1f} {p.x + p.w:.1f},{p.cy:.1f} "
            f"{p.cx:.1f},{p.y + p.h:.1f} {p.x:.1f},{p.cy:.1f}"
        )
        out.append(
            f'<polygon points="{pts}" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="{width}"{dash}/>'
        )
        lines = _wrap(p.node.title, width=20)
        text_y = p.cy - 6 * (len(lines) - 1) - 2
    else:
        extra = ""
        if p.node.terminal:
            extra = f' stroke-width="{width + 1.6}"'
        out.append(
            f'<rect x="{p.x:.1f}" y="{p.y:.1f}" width="{p.w}" height="{p.h}" rx="9" '
            f'fill="{fill}" stroke="{stroke}" stroke-width="{width}"{dash}{extra}/>'
        )
        lines = _wrap(p.node.title)
        text_y = p.y + 20
    for i, line in enumerate(lines):
        out.append(
            f'<text x="{p.cx:.1f}" y="{text_y + i * 14:.1f}" text-anchor="middle" '
            f'font-weight="600" fill="#1f2937">{escape(line)}</text>'
        )
    owner_text = ", ".join(o.title for o in owners) if owners else "no owner"
    owner_color = COLORS["muted"] if owners else COLORS["hole"]
    owner_y = p.y + p.h - 9 if p.shape == "step" else p.y + p.h + 13
    out.append(
        f'<text x="{p.cx:.1f}" y="{owner_y:.1f}" text-anchor="middle" font-size="10.5" '
        f'fill="{owner_color}">{escape(_wrap("⚑ " + owner_text, 30, 1)[0])}</text>'
    )
    if p.node.start:
        out.append(
            f'<text x="{p.x + 6:.1f}" y="{p.y - 5:.1f}" font-size="10" font-weight="700" '
            f'fill="{COLORS["start"]}">▶ START</text>'
        )
    if p.node.terminal:
        out.append(
            f'<text x="{p.x + p.w - 6:.1f}" y="{p.y - 5:.1f}" text-anchor="end" font-size="10" '
            f'font-weight="700" fill="{COLORS["terminal"]}">END ■</text>'
        )
    if any(f.rule == Rule.DEAD_END for f in p.findings):
        x = p.x + p.w
        out.append(
            f'<line x1="{x:.1f}" y1="{p.cy:.1f}" x2="{x + 26:.1f}" y2="{p.cy:.1f}" '
            f'stroke="{COLORS["hole"]}" stroke-width="2" stroke-dasharray="3 3"/>'
            f'<text x="{x + 30:.1f}" y="{p.cy + 4:.1f}" fill="{COLORS["hole"]}" '
            f'font-weight="700">✕ stops</text>'
        )
    if any(f.rule == Rule.SINGLE_BRANCH_DECISION for f in p.findings):
        out.append(
            f'<line x1="{p.x + p.w * 0.75:.1f}" y1="{p.y + p.h * 0.75:.1f}" '
            f'x2="{p.x + p.w + 4:.1f}" y2="{p.y + p.h + 12:.1f}" stroke="{COLORS["hole"]}" '
            f'stroke-width="2" stroke-dasharray="3 3"/><text x="{p.x + p.w + 6:.1f}" '
            f'y="{p.y + p.h + 22:.1f}" fill="{COLORS["hole"]}" font-weight="700">'
            "? missing branch</text>"
        )
    out.append(_badge(p))
    out.append(_close(p))
    return "".join(out)


def _draw_handoff(p: Placed, link_base: str) -> str:
    lines = _wrap(p.node.title)
    out = [
        _open(p, link_base),
        _tooltip(p),
        f'<rect x="{p.x:.1f}" y="{p.y:.1f}" width="{p.w}" height="{p.h}" rx="9" '
        f'fill="{COLORS["handoff"]}" stroke="{COLORS["muted"]}" stroke-dasharray="5 3"/>',
        f'<text x="{p.cx:.1f}" y="{p.y + 16:.1f}" text-anchor="middle" font-size="10" '
        f'fill="{COLORS["muted"]}">hand-off (outside this process)</text>',
    ]
    for i, line in enumerate(lines):
        out.append(
            f'<text x="{p.cx:.1f}" y="{p.y + 34 + i * 14:.1f}" text-anchor="middle" '
            f'fill="#1f2937">{escape(line)}</text>'
        )
    out.append(_close(p))
    return "".join(out)


def _draw_artifact(p: Placed, link_base: str) -> str:
    hole = bool(p.findings)
    stroke = COLORS["hole"] if hole else COLORS["stroke"]
    fill = COLORS["hole_fill"] if hole else COLORS["artifact"]
    dash = ' stroke-dasharray="5 3"' if p.node.external else ""
    fold = 12
    x2, y2 = p.x + p.w, p.y + p.h
    out = [
        _open(p, link_base),
        _tooltip(p),
        f'<path d="M{p.x:.1f},{p.y:.1f} H{x2 - fold:.1f} L{x2:.1f},{p.y + fold:.1f} '
        f'V{y2:.1f} H{p.x:.1f} Z" fill="{fill}" stroke="{stroke}" '
        f'stroke-width="{2.2 if hole else 1.1}"{dash}/>',
    ]
    lines = _wrap(p.node.title, width=24, lines=2)
    for i, line in enumerate(lines):
        out.append(
            f'<text x="{p.cx:.1f}" y="{p.y + 18 + i * 13:.1f}" text-anchor="middle" '
            f'font-size="11" fill="#1f2937">{escape(line)}</text>'
        )
    if p.node.external:
        out.append(
            f'<text x="{p.x + 4:.1f}" y="{p.y - 3:.1f}" font-size="9.5" '
            f'fill="{COLORS["muted"]}">from outside</text>'
        )
    out.append(_badge(p))
    out.append(_close(p))
    return "".join(out)


def _legend(x: float, y: float, width: float, roles: dict[str, tuple[FlowNode, int]]) -> str:
    """A band under the drawing: the shapes, the artifact edges, and the roles that own steps."""
    out = [f'<g class="legend"><text x="{x:.1f}" y="{y + 12:.1f}" font-weight="700">Legend</text>']
    items = [
        ("rect", COLORS["step"], COLORS["stroke"], "step"),
        ("diamond", COLORS["decision"], COLORS["stroke"], "decision"),
        ("doc", COLORS["artifact"], COLORS["stroke"], "artifact"),
        ("rect", COLORS["hole_fill"], COLORS["hole"], "has a finding (click it)"),
        ("produces", COLORS["produces"], "5 3", "produces"),
        ("requires", COLORS["requires"], "2 3", "requires"),
    ]
    xx = x + 64
    for shape, fill, stroke, label in items:
        if shape == "diamond":
            out.append(
                f'<polygon points="{xx + 10:.1f},{y:.1f} {xx + 20:.1f},{y + 8:.1f} '
                f'{xx + 10:.1f},{y + 16:.1f} {xx:.1f},{y + 8:.1f}" fill="{fill}" '
                f'stroke="{stroke}"/>'
            )
        elif shape in ("produces", "requires"):
            out.append(
                f'<line x1="{xx:.1f}" y1="{y + 8:.1f}" x2="{xx + 20:.1f}" y2="{y + 8:.1f}" '
                f'stroke="{fill}" stroke-width="1.6" stroke-dasharray="{stroke}"/>'
            )
        else:
            out.append(
                f'<rect x="{xx:.1f}" y="{y:.1f}" width="20" height="16" rx="3" fill="{fill}" '
                f'stroke="{stroke}"/>'
            )
        out.append(f'<text x="{xx + 26:.1f}" y="{y + 12:.1f}">{escape(label)}</text>')
        xx += 40 + 7 * len(label)
    names = [
        f"{role.title} ({count})"
        for role, count in sorted(roles.values(), key=lambda item: item[0].title.lower())
    ]
    text = "Roles (⚑ owner, steps owned): " + (" · ".join(names) if names else "none")
    for i, line in enumerate(textwrap.wrap(text, width=max(40, int(width / 6.6)))):
        out.append(
            f'<text x="{x:.1f}" y="{y + 36 + i * 16:.1f}" fill="#374151">{escape(line)}</text>'
        )
    out.append("</g>")
    return "".join(out)


def legend_height(width: float, roles: dict) -> float:
    names = sum(len(role.title) + 6 for role, _ in roles.values()) + 32
    return 44 + 16 * max(1, -(-names // max(40, int(width / 6.6))))


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
