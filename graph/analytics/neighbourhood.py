"""An entry's neighbourhood as a small server-drawn SVG: its current edges to depth 1 or 2, so a
curator sees what a merge, split or delete will touch. No script, no network: an ``<img>``.

The entry sits in the middle, its neighbours on a ring, their neighbours on an outer ring
inside their parent's sector. Two statements read the edges (one per depth).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

from django.db.models import Q

from graph.edges.links import current_q
from graph.models import Edge
from kb.models import Entry, EntryStatus

WIDTH = 760
HEIGHT = 720
RING1 = 165.0
RING2 = 268.0
MAX_RING1 = 24
MAX_RING2 = 36
HIDDEN = (EntryStatus.MERGED, EntryStatus.DELETED)
PALETTE = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#17becf",
]  # fmt: skip


def kind_colour(kind: str) -> str:
    digest = hashlib.md5(kind.encode(), usedforsecurity=False).digest()
    return PALETTE[digest[0] % len(PALETTE)]


@dataclass
class Neighbourhood:
    """The entries and current edges around a centre, up to a depth, with what was left out."""

    centre: Entry
    depth_of: dict[int, int] = field(default_factory=dict)
    parent_of: dict[int, int] = field(default_factory=dict)
    entries: dict[int, Entry] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    left_out: int = 0


def _edges_touching(bank_id: int, ids: set[int]) -> list[Edge]:
    return list(
        Edge.objects.filter(bank_id=bank_id)
        .filter(current_q())
        .filter(Q(from_entry_id__in=ids) | Q(to_entry_id__in=ids))
        .exclude(from_entry__status__in=HIDDEN)
        .exclude(to_entry__status__in=HIDDEN)
        .select_related("type", "from_entry__kind", "to_entry__kind")
        .order_by("pk")
    )


def read_neighbourhood(entry: Entry, depth: int = 2) -> Neighbourhood:
    """Entries within ``depth`` (1 or 2) current edges of ``entry``, capped per ring."""
    hood = Neighbourhood(entry, {entry.pk: 0}, {}, {entry.pk: entry})
    frontier = {entry.pk}
    seen_edges: set[int] = set()
    caps = {1: MAX_RING1, 2: MAX_RING2}
    for level in range(1, max(1, min(depth, 2)) + 1):
        found: set[int] = set()
        for edge in _edges_touching(entry.bank_id, frontier):
            a, b = edge.from_entry, edge.to_entry
            near, far = (a, b) if a.pk in frontier else (b, a)
            if far.pk not in hood.depth_of:
                if sum(1 for d in hood.depth_of.values() if d == level) >= caps[level]:
                    hood.left_out += 1
                    continue
                hood.depth_of[far.pk] = level
                hood.parent_of[far.pk] = near.pk
                hood.entries[far.pk] = far
                found.add(far.pk)
            if edge.pk not in seen_edges:
                seen_edges.add(edge.pk)
                hood.edges.append(edge)
        frontier = found
        if not frontier:
            break
    hood.left_out = max(0, hood.left_out)
    return hood


def _positions(hood: Neighbourhood) -> dict[int, tuple[float, float]]:
    cx, cy = WIDTH / 2, HEIGHT / 2 + 28
    pos = {hood.centre.pk: (cx, cy)}
    ring1 = [pk for pk, d in hood.depth_of.items() if d == 1]
    angle_of = {}
    for i, pk in enumerate(ring1):
        angle = -math.pi / 2 + 2 * math.pi * i / max(len(ring1), 1)
        angle_of[pk] = angle
        pos[pk] = (cx + RING1 * math.cos(angle), cy + RING1 * math.sin(angle))
    # The outer ring uses the whole circle: its entries are spread evenly, in the order of
    # their parents' angles, and the ring is turned so they sit as near their parents as it can.
    ring2 = sorted(
        (pk for pk, d in hood.depth_of.items() if d == 2),
        key=lambda pk: (angle_of.get(hood.parent_of[pk], 0.0) % (2 * math.pi), pk),
    )
    if ring2:
        m = len(ring2)
        even = [2 * math.pi * (i + 0.5) / m for i in range(m)]
        ideal = [angle_of.get(hood.parent_of[pk], 0.0) % (2 * math.pi) for pk in ring2]
        turn = math.atan2(
            sum(math.sin(a - b) for a, b in zip(ideal, even, strict=True)),
            sum(math.cos(a - b) for a, b in zip(ideal, even, strict=True)),
        )
        for i, pk in enumerate(ring2):
            angle = even[i] + turn
            radius = RING2 + (30 if i % 2 else 0)
            pos[pk] = (cx + radius * math.cos(angle), cy + radius * math.sin(angle))
    return pos


def _short(text: str, size: int) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


def neighbourhood_svg(entry: Entry, depth: int = 2) -> str:
    """The SVG document of ``entry``'s neighbourhood."""
    hood = read_neighbourhood(entry, depth)
    pos = _positions(hood)
    ring1 = sum(1 for d in hood.depth_of.values() if d == 1)
    ring2 = sum(1 for d in hood.depth_of.values() if d == 2)
    caption = f"{ring1} neighbour(s) at depth 1" + (f", {ring2} at depth 2" if depth > 1 else "")
    if hood.left_out:
        caption += f" · {hood.left_out} more edge(s) not drawn"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="kb-neighbourhood" width="{WIDTH}" '
        f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="Neighbourhood of {escape(entry.title)}" font-family="sans-serif">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="19" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#8a94a6"/></marker></defs>',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#fbfcfe" rx="8"/>',
        f'<text x="16" y="26" font-size="14" font-weight="600" fill="#223">'
        f"{escape(_short(entry.title, 80))}</text>",
        f'<text x="16" y="46" font-size="12" fill="#667">{escape(caption)} '
        "(current edges; dashed: no note)</text>",
    ]
    for edge in hood.edges:
        a, b = pos.get(edge.from_entry_id), pos.get(edge.to_entry_id)
        if a is None or b is None:
            continue
        dashed = "" if (edge.note or "").strip() else ' stroke-dasharray="5 4"'
        outer = max(hood.depth_of[edge.from_entry_id], hood.depth_of[edge.to_entry_id]) == 2
        colour = "#b8c0cc" if outer else "#7d8899"
        parts.append(
            f'<line x1="{a[0]:.1f}" y1="{a[1]:.1f}" x2="{b[0]:.1f}" y2="{b[1]:.1f}" '
            f'stroke="{colour}" stroke-width="1.4"{dashed} marker-end="url(#arrow)">'
            f"<title>{escape(edge.type.name)}: {escape(_short(edge.note or '', 200))}</title>"
            "</line>"
        )
        if not outer:
            mx, my = (a[0] + b[0]) / 2, (a[1] + b[1]) / 2
            parts.append(
                f'<text x="{mx:.1f}" y="{my - 3:.1f}" font-size="10" fill="#556" '
                f'text-anchor="middle" paint-order="stroke" stroke="#fbfcfe" stroke-width="3">'
                f"{escape(edge.type.name)}</text>"
            )
    for pk, (x, y) in pos.items():
        node = hood.entries[pk]
        depth_here = hood.depth_of[pk]
        radius = 13 if depth_here == 0 else (8 if depth_here == 1 else 6)
        colour = kind_colour(node.kind.name)
        parts.append(
            f'<g class="node depth-{depth_here}" data-id="{escape(node.short_id)}">'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}" fill="{colour}" '
            f'stroke="#fff" stroke-width="2"/>'
            f"<title>{escape(node.title)} ({escape(node.kind.name)}, {escape(node.status)})"
            "</title></g>"
        )
        size = 40 if depth_here < 2 else 24
        font = 12 if depth_here == 0 else (11 if depth_here == 1 else 9)
        weight = ' font-weight="600"' if depth_here == 0 else ""
        parts.append(
            f'<text x="{x:.1f}" y="{y + radius + font + 1:.1f}" font-size="{font}"{weight} '
            f'fill="#223" text-anchor="middle" paint-order="stroke" stroke="#fbfcfe" '
            f'stroke-width="3">{escape(_short(node.title, size))}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)
