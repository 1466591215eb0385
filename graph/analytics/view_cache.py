"""Cached layouts of the explorer's views of a bank too large to draw whole.

Laying out the 1,000 most central entries of a 10k-entry community is Louvain-bound (seconds);
counting the edges between a 65k bank's communities is one aggregate over every current edge.
Both are kept in ``ViewLayout`` rows, so opening a view again is a read:

- a community's drill-down is stored under ``community:<id>:<cap>[:<kinds>]`` with the
  fingerprint of the node set and edge pairs it was laid out from; a reader whose nodes or
  edges differ lays it out again and replaces the row, so a stale picture is never served;
- the overview (edge counts between communities and their positions) is stored under
  ``overview`` with the fingerprint of the community set; edits of the bank's entries and edges
  drop it after commit, on the same path that marks the bank layout for refresh
  (``layout_store.bank_changed``, the unit of work's one post-commit event), and a rebuild of the communities drops every row (cascade).

The layout job and ``build_communities`` warm the overview and the largest communities
(``warm_views``), so the first visitor does not pay for them either.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from collections import Counter
from collections.abc import Callable

import numpy as np
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from graph.analytics.layout import Layout, compute_layout
from graph.analytics.layout_store import POSITION_DTYPE, fingerprint_of, pack_positions
from graph.models import Community, ViewLayout
from kb.models import Bank

WARM_COMMUNITIES = 5  # the largest communities the layout job lays out ahead of a visit


def community_key(community_id: int, cap: int, kinds: list[str] | None) -> str:
    key = f"community:{community_id}:{cap}"
    if kinds:
        key += ":" + hashlib.sha1(",".join(sorted(kinds)).encode()).hexdigest()[:16]
    return key


def _pack(layout: Layout, ids: list[int]) -> bytes:
    return pack_positions(layout, ids).tobytes()


def _unpack(row: ViewLayout) -> Layout:
    records = np.frombuffer(bytes(row.positions), dtype=POSITION_DTYPE)
    layout = Layout(clusters=row.clusters)
    for record in records:
        pk = int(record["id"])
        layout.xyz[pk] = tuple(round(float(v), 1) for v in record["xyz"])
        layout.xy[pk] = tuple(round(float(v), 1) for v in record["xy"])
        cluster = int(record["community"])
        layout.community[pk] = None if cluster < 0 else cluster
    return layout


def _store(bank: Bank, key: str, community: Community | None, **fields) -> None:
    """Replace the row (a concurrent reader that stored first wins nothing: same picture)."""
    try:
        with transaction.atomic():
            ViewLayout.objects.update_or_create(
                bank=bank, key=key, defaults={"community": community, **fields}
            )
    except IntegrityError:  # another request stored the same key at the same moment
        pass


def community_layout(
    bank: Bank, key: str, community: Community, ids: list[int], pairs: list[tuple[int, int]]
) -> tuple[Layout, dt.datetime | None]:
    """The layout of a community's drawn nodes ``ids`` with edges ``pairs`` and when it was
    computed: the stored one when it was computed from the same nodes and edges, else laid out
    now and stored (then the time is None)."""
    fingerprint = fingerprint_of(ids, pairs)
    row = ViewLayout.objects.filter(bank=bank, key=key, fingerprint=fingerprint).first()
    if row is not None:
        return _unpack(row), row.computed_at
    started = time.perf_counter()
    layout = compute_layout(ids, pairs)
    _store(
        bank,
        key,
        community,
        fingerprint=fingerprint,
        positions=_pack(layout, ids),
        node_count=len(ids),
        clusters=layout.clusters,
        computed_at=timezone.now(),
        took_ms=(time.perf_counter() - started) * 1000,
    )
    return layout, None


def _overview_fingerprint(shown: list[Community]) -> str:
    digest = hashlib.sha1()
    for c in shown:
        digest.update(f"{c.pk}:{c.size}:{c.computed_at.isoformat()}|".encode())
    return digest.hexdigest()


def overview_parts(
    bank: Bank,
    shown: list[Community],
    count_pairs: Callable[[], Counter],
    arrange: Callable[[Counter], tuple[np.ndarray, np.ndarray]],
) -> tuple[Counter, np.ndarray, np.ndarray]:
    """The overview's edge counts between communities and their 3D and 2D positions: stored,
    or computed with ``count_pairs`` and ``arrange`` and stored."""
    fingerprint = _overview_fingerprint(shown)
    row = ViewLayout.objects.filter(bank=bank, key="overview", fingerprint=fingerprint).first()
    if row is not None:
        pairs = Counter({(a, b): n for a, b, n in row.data.get("pairs", [])})
        records = np.frombuffer(bytes(row.positions), dtype=POSITION_DTYPE)
        xyz, xy = records["xyz"].astype(float), records["xy"].astype(float)
        return pairs, np.round(xyz, 1), np.round(xy, 1)  # stored as float32
    started = time.perf_counter()
    pairs = count_pairs()
    xyz, xy = arrange(pairs)
    packed = np.zeros(len(shown), dtype=POSITION_DTYPE)
    packed["id"] = [c.pk for c in shown]
    if shown:
        packed["xyz"], packed["xy"], packed["community"] = xyz, xy, -1
    _store(
        bank,
        "overview",
        None,
        fingerprint=fingerprint,
        positions=packed.tobytes(),
        data={"pairs": [[a, b, n] for (a, b), n in sorted(pairs.items())]},
        node_count=len(shown),
        clusters=len(shown),
        computed_at=timezone.now(),
        took_ms=(time.perf_counter() - started) * 1000,
    )
    return pairs, xyz, xy


def drop_overviews(bank_ids: set[int]) -> None:
    """After commit of an edit: the overview's edge counts may have changed. One statement
    in autocommit (a queryset's delete opens a transaction around it: three round trips after
    every write; nothing references these rows and no signal watches them)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {ViewLayout._meta.db_table}"
            " WHERE bank_id = ANY(%s) AND community_id IS NULL",
            [sorted(bank_ids)],
        )


def warm_views(bank: Bank, top: int = WARM_COMMUNITIES) -> int:
    """For a bank the explorer opens on its overview: compute (or confirm) the overview and
    the ``top`` largest communities' drill-downs with the default filters; returns how many
    community views were laid out now (0 for a bank drawn whole)."""
    from graph.analytics.graph_data import GraphFilters
    from graph.analytics.overview import (
        communities_overview,
        community_view,
        drawable_count,
        overview_min,
    )

    if drawable_count(bank) <= overview_min():
        return 0
    communities_overview(bank)
    filters = GraphFilters()
    computed = 0
    for pk in (
        Community.objects.filter(bank=bank)
        .order_by("-size", "id")
        .values_list("pk", flat=True)[:top]
    ):
        view = community_view(bank, pk, filters)
        computed += view["layout"]["status"] == "computed"
    return computed
