"""Server-side graph layout for pictures: fixed 3D and 2D positions and Louvain clusters.

The algorithm is a pure function over plain inputs (``compute_layout``) so it can be tested
and benchmarked without a database; ``graph.analytics.layout_store`` reads a bank, calls it
and caches the result.

It scales by working top-down instead of simulating every node against every other:

1. Louvain (fixed seed) splits the graph into clusters; a singleton is its own cluster.
2. A cluster of at most ``LEAF_MAX`` nodes is laid out by Fruchterman–Reingold
   (``networkx.spring_layout``, dense and fast at that size) and scaled to a ball whose volume
   (area in 2D) grows with its node count.
3. A larger cluster is split again by Louvain and placed the same way, recursively.
4. Cluster centres come from a spring layout of the quotient graph (clusters joined by the
   edges between them), pushed apart until no two balls overlap; clusters beyond
   ``ARRANGE_MAX`` (tiny components and isolated entries) are packed on a golden spiral
   around the core, so ten thousand loose entries cost no more than ten.

Every step is seeded, so the same graph always gets the same picture.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

LAYOUT_SEED = 20260101
LEAF_MAX = 300  # nodes laid out directly by one spring layout
ARRANGE_MAX = 300  # clusters placed by a spring layout of the quotient graph; the rest spiral
SMALL = 40  # a whole graph up to this size gets one spring layout
SPACING = 14.0  # typical distance between neighbouring nodes, in layout units
ITERATIONS = 50
GOLDEN_ANGLE = math.pi * (3.0 - math.sqrt(5.0))


@dataclass
class Layout:
    """Positions per node id (3D and 2D) and each node's cluster (None: a lone node)."""

    xyz: dict[int, tuple[float, float, float]] = field(default_factory=dict)
    xy: dict[int, tuple[float, float]] = field(default_factory=dict)
    community: dict[int, int | None] = field(default_factory=dict)
    clusters: int = 0


def clusters_of(graph: nx.Graph, seed: int = LAYOUT_SEED) -> list[set]:
    """Louvain clusters of ``graph`` (largest first, ties by smallest member)."""
    if graph.number_of_nodes() == 0:
        return []
    if graph.number_of_edges() == 0:
        groups = [{node} for node in graph.nodes]
    else:
        groups = nx.community.louvain_communities(graph, weight="weight", seed=seed)
    return sorted(groups, key=lambda g: (-len(g), min(g)))


def _ball_radius(count: int, dim: int) -> float:
    return SPACING * 0.75 * max(count, 1) ** (1.0 / dim)


def _spring(graph: nx.Graph, dim: int, seed: int, weight: str | None) -> np.ndarray:
    """Fruchterman–Reingold positions of ``graph``'s nodes (in node order), centred on 0 with
    max |coord| = 1. Dense and vectorised (float32): meant for at most a few hundred nodes."""
    n = graph.number_of_nodes()
    if n == 1:
        return np.zeros((1, dim))
    if n == 2:
        return np.array([[-1.0] + [0.0] * (dim - 1), [1.0] + [0.0] * (dim - 1)])
    adjacency = nx.to_numpy_array(graph, weight=weight, dtype=np.float32)
    if weight is not None and adjacency.max() > 0:
        adjacency /= adjacency.max()
    rng = np.random.default_rng(seed)
    pos = rng.random((n, dim), dtype=np.float32)
    k = np.float32(1.0 / math.sqrt(n))
    temperature = 0.1
    cooling = temperature / (ITERATIONS + 1)
    for _ in range(ITERATIONS):
        delta = pos[:, None, :] - pos[None, :, :]
        d2 = np.einsum("ijk,ijk->ij", delta, delta)
        np.maximum(d2, 1e-4, out=d2)
        force = k * k / d2 - adjacency * np.sqrt(d2) / k
        disp = np.einsum("ijk,ij->ik", delta, force)
        length = np.sqrt(np.einsum("ik,ik->i", disp, disp))
        np.maximum(length, 1e-2, out=length)
        pos += disp * (temperature / length)[:, None]
        temperature -= cooling
    arr = pos.astype(float)
    arr -= arr.mean(axis=0)
    # Scale by the 90th percentile radius, not the extreme: a few far outliers (loose nodes)
    # must not squeeze everything else into the middle.
    spread = float(np.percentile(np.sqrt((arr**2).sum(axis=1)), 90)) or 1.0
    return arr / spread


def _separate(centres: np.ndarray, radii: np.ndarray, rounds: int = 150) -> np.ndarray:
    """Push overlapping balls apart. Each round moves a ball by the mean (not the sum) of its
    overlaps, so a crowded start relaxes instead of exploding."""
    pos = centres.copy()
    k = len(radii)
    if k < 2:
        return pos
    need = radii[:, None] + radii[None, :] + SPACING * 0.5
    np.fill_diagonal(need, 0.0)
    rng = np.random.default_rng(LAYOUT_SEED)
    pos += rng.normal(size=pos.shape) * 1e-3  # no two centres exactly on one point
    for _ in range(rounds):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.sqrt((delta**2).sum(axis=2))
        np.fill_diagonal(dist, np.inf)
        overlap = np.clip(need - dist, 0.0, None)
        np.fill_diagonal(overlap, 0.0)
        touching = (overlap > 1e-6).sum(axis=1)
        if not touching.any():
            break
        push = ((overlap / np.maximum(dist, 1e-9)) / 2.0)[:, :, None] * delta
        pos += push.sum(axis=1) / np.maximum(touching, 1)[:, None]
    return pos


def _spiral(radii: list[float], inner: float, dim: int) -> np.ndarray:
    """Pack balls around a core of radius ``inner`` on a golden spiral (area/volume-filling)."""
    out = np.zeros((len(radii), dim))
    total = len(radii)
    filled = 0.0
    for i, r in enumerate(radii):
        filled += 2.2 * ((2 * r) ** dim)  # room this ball takes, with slack
        if dim == 2:
            dist = math.sqrt(inner**2 + filled / math.pi)
            angle = i * GOLDEN_ANGLE
            out[i] = (dist * math.cos(angle), dist * math.sin(angle))
        else:
            dist = (inner**3 + filled * 3.0 / (4.0 * math.pi)) ** (1.0 / 3.0)
            z = 1.0 - 2.0 * (i + 0.5) / total
            ring = math.sqrt(max(0.0, 1.0 - z * z))
            angle = i * GOLDEN_ANGLE
            out[i] = (dist * ring * math.cos(angle), dist * ring * math.sin(angle), dist * z)
    return out


def _arrange(
    groups: list[set], radii: list[float], graph: nx.Graph, dim: int, seed: int
) -> np.ndarray:
    """Centres of the clusters: a spring layout of the quotient graph for the largest
    ``ARRANGE_MAX``, overlap removal, then the rest on a spiral around them."""
    index = {node: i for i, group in enumerate(groups) for node in group}
    core = min(len(groups), ARRANGE_MAX)
    quotient = nx.Graph()
    quotient.add_nodes_from(range(core))
    weights: Counter = Counter()
    for a, b in graph.edges():
        ia, ib = index[a], index[b]
        if ia != ib and ia < core and ib < core:
            weights[(min(ia, ib), max(ia, ib))] += 1
    for (ia, ib), w in weights.items():
        quotient.add_edge(ia, ib, weight=float(w))
    r = np.array(radii[:core], dtype=float)
    packed = (np.sum(r**dim)) ** (1.0 / dim) * 0.9
    centres = _spring(quotient, dim, seed, "weight") * packed
    centres = _separate(centres, r)
    if core == len(groups):
        return centres
    extent = float(np.max(np.sqrt((centres**2).sum(axis=1)) + r))
    rest = _spiral(radii[core:], extent + SPACING, dim)
    return np.vstack([centres, rest])


def _place(
    graph: nx.Graph,
    dim: int,
    seed: int,
    groups: list[set] | None = None,
    depth: int = 0,
    memo: dict | None = None,
) -> tuple[dict, float]:
    """Positions of ``graph``'s nodes centred on 0, and the radius of the ball they fill.
    ``memo`` keeps each split (node set → clusters), so the 2D pass reuses the 3D pass's
    Louvain runs instead of repeating them."""
    n = graph.number_of_nodes()
    if (n <= LEAF_MAX and groups is None) or depth > 6:
        radius = _ball_radius(n, dim)
        if n > LEAF_MAX:  # a cluster Louvain cannot split: a seeded random ball, not a hang
            rng = np.random.default_rng(seed + depth)
            arr = rng.normal(size=(n, dim))
            arr /= np.sqrt((arr**2).sum(axis=1))[:, None]
            arr *= rng.random((n, 1)) ** (1.0 / dim)
        else:
            arr = _spring(graph, dim, seed, None)
        return {node: arr[i] * radius for i, node in enumerate(graph.nodes)}, radius
    if groups is None:
        key = frozenset(graph.nodes)
        groups = memo.get(key) if memo is not None else None
        if groups is None:
            groups = clusters_of(graph, seed)
            if len(groups) == 1:
                groups = nx.community.louvain_communities(graph, resolution=4.0, seed=seed)
                groups = sorted(groups, key=lambda g: (-len(g), min(g)))
            if memo is not None:
                memo[key] = groups
        if len(groups) == 1:
            return _place(graph, dim, seed, depth=7)
    children = [_place(graph.subgraph(g), dim, seed, depth=depth + 1, memo=memo) for g in groups]
    radii = [radius for _, radius in children]
    centres = _arrange(groups, radii, graph, dim, seed)
    positions = {}
    for (child, _), centre in zip(children, centres, strict=True):
        for node, p in child.items():
            positions[node] = p + centre
    arr = np.array(list(positions.values()))
    middle = arr.mean(axis=0)
    for node in positions:
        positions[node] = positions[node] - middle
    extent = float(np.sqrt(((arr - middle) ** 2).sum(axis=1)).max()) if len(arr) else 0.0
    return positions, extent + SPACING


def compute_layout(
    node_ids: Iterable[int], edges: Iterable[tuple[int, int]], *, seed: int = LAYOUT_SEED
) -> Layout:
    """Lay out a graph: 3D and 2D positions for every node and its cluster number.

    ``edges`` may repeat a pair or name a node missing from ``node_ids`` (ignored). Cluster
    numbers rank clusters by size (0 is the largest); a node in no multi-node cluster gets
    None.
    """
    graph = nx.Graph()
    graph.add_nodes_from(sorted(set(node_ids)))
    for a, b in edges:
        if a == b or a not in graph or b not in graph:
            continue
        if graph.has_edge(a, b):
            graph[a][b]["weight"] += 1.0
        else:
            graph.add_edge(a, b, weight=1.0)
    layout = Layout()
    if graph.number_of_nodes() == 0:
        return layout
    groups = clusters_of(graph, seed)
    number = 0
    for group in groups:
        if len(group) < 2:
            for node in group:
                layout.community[node] = None
            continue
        for node in group:
            layout.community[node] = number
        number += 1
    layout.clusters = number
    # Beyond a handful of entries the picture is clusters placed as balls (constellations);
    # one spring layout of everything would crowd the connected part into the middle.
    top_groups = groups if graph.number_of_nodes() > SMALL and len(groups) > 1 else None
    memo: dict = {}
    pos3, _ = _place(graph, 3, seed, top_groups, memo=memo)
    pos2, _ = _place(graph, 2, seed, top_groups, memo=memo)
    for node in graph.nodes:
        x, y, z = (round(float(v), 1) for v in pos3[node])
        layout.xyz[node] = (x, y, z)
        x2, y2 = (round(float(v), 1) for v in pos2[node])
        layout.xy[node] = (x2, y2)
    return layout


def extent_of(known: dict[int, tuple]) -> float:
    """The largest coordinate of a cached layout (where the far shell starts)."""
    return max((max(abs(c) for c in p) for p in known.values()), default=0.0)


def provisional_position(
    node: int, neighbours: Iterable[int], known: dict[int, tuple], dim: int, extent: float
) -> tuple:
    """Where to draw a node the cached layout does not know yet: beside a placed neighbour
    (a small seeded offset), else on a far shell. Deterministic per node id."""
    rng = np.random.default_rng(node)
    offset = rng.normal(size=dim)
    offset = offset / (np.sqrt((offset**2).sum()) or 1.0)
    for other in neighbours:
        if other in known:
            base = np.array(known[other][:dim], dtype=float)
            return tuple(round(float(v), 1) for v in base + offset * SPACING)
    return tuple(round(float(v), 1) for v in offset * (extent + 4 * SPACING))


def arrange_groups(
    sizes: list[int], pairs: dict[tuple[int, int], float], dim: int, *, seed: int = LAYOUT_SEED
) -> np.ndarray:
    """Centres for groups of ``sizes`` entries (one ball each, volume growing with its size)
    joined by ``pairs`` (index pair → edge count): a spring layout of the group graph with
    overlaps removed. This is the community overview of a bank too large to draw whole."""
    quotient = nx.Graph()
    quotient.add_nodes_from(range(len(sizes)))
    for (a, b), weight in pairs.items():
        if a != b and 0 <= a < len(sizes) and 0 <= b < len(sizes):
            quotient.add_edge(a, b, weight=float(weight))
    if not sizes:
        return np.zeros((0, dim))
    radii = np.array([_ball_radius(s, dim) for s in sizes], dtype=float)
    packed = float(np.sum(radii**dim)) ** (1.0 / dim) * 0.9
    centres = _spring(quotient, dim, seed, "weight") * packed
    return np.round(_separate(centres, radii), 1)
