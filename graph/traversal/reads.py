"""The SQL statements of a walk (:mod:`graph.traversal.walk`), as compact rows.

A walk that stops at its budget touches thousands of ids (a 20k-edge hub under a 2,000
expansion budget: 2,000 edges, 2,001 entries). What used to dominate it was not reading the
rows but handling them: thousands of array elements dumped one by one into each statement
and planned as constants, every row converted field by field through the ORM, an entry
scan only to check a bank that the edges already fixed. So:

- The filters of the ORM — bank, relations and both clocks (``believed_q``/``valid_q``, the
  one declaration of each) — are compiled into a ``WHERE`` fragment once per process and
  number of relations, with stand-in values each walk replaces by its own; the statements
  around it are written here.
- An id list travels as one ``bigint[]`` literal (``'{1,2,3}'``), joined in one call.
- Rows come back as plain tuples, not through the ORM's converters.
- "Which of these nodes could still go on" (the frontier of a cut walk) probes the edges
  of each node (``unnest`` of the node list, a ``LATERAL … LIMIT 1`` per node), with the
  nodes already reached excluded by a ``NOT IN`` subplan hashed once per statement (a
  ``<> ALL`` of a constant array is planned element by element); it reads no entry row.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from django.db import connection

from graph.edges.current import valid_q
from graph.edges.links import believed_q
from graph.models import Edge
from kb.prepared import send

EDGE_COLUMNS = (
    "id",
    "from_entry_id",
    "to_entry_id",
    "type_id",
    "note",
    "evidence",
    "valid_from",
    "valid_to",
    "recorded_at",
)
_TIMES = ("valid_from", "valid_to", "recorded_at")
# Times travel as microseconds since the epoch (exact: EXTRACT returns numeric) and become
# datetimes once per distinct value (the edges of one import share theirs): the driver's
# time-zone-aware loader costs more per row than the rest of the row.
_SELECT = ", ".join(
    f'(EXTRACT(EPOCH FROM "graph_edge"."{c}") * 1000000)::bigint'
    if c in _TIMES
    else f'"graph_edge"."{c}"'
    for c in EDGE_COLUMNS
)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# An id list to exclude. Written ``<> ALL(array)`` the list is a constant the planner
# estimates element by element: 2 ms to plan a probe of 2,000 nodes against 2,001 reached
# ids, 6–8 ms when both directions repeat it. As ``NOT IN (SELECT unnest(array))`` it is a
# subplan hashed once per statement and planned as one row count — as long as the planner
# expects its hash to fit ``work_mem`` × ``hash_mem_multiplier`` (about 200,000 ids at the
# 4 MB default); past that it would rescan the list for every edge, so long lists keep the
# constant (slow to plan, hashed whatever ``work_mem`` says).
_SUBPLAN_IDS = 50_000


def _not_in(count: int) -> str:
    """SQL for "not among" ``count`` ids after a column, with one array parameter."""
    if count <= _SUBPLAN_IDS:
        return "NOT IN (SELECT unnest(%s::bigint[]))"
    return "<> ALL(%s::bigint[])"


# A hop reads node by node (EdgeReads._per_node) unless both its level and its limit are
# large: then one scan in table order (_in_one_scan) is faster. Measured on a 330k-edge bank
# (levels of random entries, ``bench/traverse.py``'s graph): per node wins at every level size
# with a limit of 2,001 (11 against 27 ms at 5,000 nodes, 32 against 74 at 50,000) and at a
# limit of 100,001 up to 2,000 nodes (58 against 86 ms); from 5,000 nodes at that limit one
# scan wins (114 against 152 ms, 411 against 534 at 50,000).
PER_NODE_LEVEL = 2_000
PER_NODE_LIMIT = 10_000

# (the end in the level, the far end) per direction an edge is crossed
_ENDS = {"out": ("from_entry_id", "to_entry_id"), "in": ("to_entry_id", "from_entry_id")}


def _ways(direction: str, both: tuple[str, str] = ("out", "in")) -> tuple[str, ...]:
    """The ways an edge is crossed for ``direction``: itself, or ``both``'s two in that order."""
    return both if direction == "both" else (direction,)


def id_array(ids: Iterable[int]) -> str:
    """``ids`` as one PostgreSQL array literal, for a ``%s::bigint[]`` parameter."""
    return "{" + ",".join(map(str, ids)) + "}"


class Times(dict):
    """Microseconds since the epoch → an aware UTC datetime, each made once; None → None."""

    def __init__(self):
        super().__init__({None: None})

    def __missing__(self, micros: int) -> dt.datetime:
        value = self[micros] = EPOCH + dt.timedelta(microseconds=micros)
        return value

    def of(self, micros: int | None) -> dt.datetime | None:
        return None if micros is None else self[micros]


def evidence_of(raw):
    """A ``jsonb`` column read raw (text) as the ORM's JSONField would give it."""
    if raw is None or isinstance(raw, (dict, list)):
        return raw
    return {} if raw == "{}" else json.loads(raw)


def edge_filter(
    bank_id: int, type_ids: Sequence[int], as_of: dt.datetime, valid_at: dt.datetime
) -> tuple[str, list]:
    """The ORM's own ``WHERE`` for the bank, the relations and both clocks (``believed_q``
    and ``valid_q``, the one declaration of each), compiled."""
    qs = Edge.objects.filter(bank_id=bank_id, type_id__in=type_ids)
    qs = qs.filter(believed_q(as_of) & valid_q(valid_at))
    sql, params = qs.query.get_compiler(using=qs.db).compile(qs.query.where)
    return sql, list(params)


# Stand-ins the filter is compiled with once per number of relations, then replaced by the
# walk's values: compiling the ORM's filter took ~1 ms of every walk. Nothing real takes
# these values (ids are positive, no edge is dated in year 1).
_BANK = -1
_AS_OF = dt.datetime(1, 1, 1, 0, 0, 0, 1, tzinfo=dt.UTC)
_VALID_AT = dt.datetime(1, 1, 1, 0, 0, 0, 2, tzinfo=dt.UTC)


@functools.lru_cache(maxsize=64)
def _filter_template(relations: int) -> tuple[str, tuple] | None:
    """``edge_filter`` compiled with stand-ins, or None if a parameter could not be told
    apart from the others (then every walk compiles its own)."""
    stand_ins = [-2 - i for i in range(relations)]
    sql, params = edge_filter(_BANK, stand_ins, _AS_OF, _VALID_AT)
    known = {_BANK, _AS_OF, _VALID_AT, *stand_ins}
    if not all(isinstance(p, int | dt.datetime) and p in known for p in params):
        return None
    return sql, tuple(params)


class EdgeRow(NamedTuple):
    """An edge of a walk (:mod:`graph.traversal.walk`)."""

    id: int
    from_id: int
    to_id: int
    type_id: int
    note: str
    evidence: dict
    valid_from: dt.datetime | None
    valid_to: dt.datetime | None
    recorded_at: dt.datetime


class NodeInfo(NamedTuple):
    """An entry a walk reached, as its answer shows it."""

    short_id: str
    title: str
    kind: str
    key: str | None


class EdgeReads:
    """The statements of one walk over ``bank_id``'s edges believed at ``as_of`` and valid at
    ``valid_at``, reaching only entries of ``kind_ids`` (None: every kind)."""

    def __init__(
        self,
        bank_id: int,
        as_of: dt.datetime,
        valid_at: dt.datetime,
        kind_ids: Sequence[int] | None,
    ):
        self.bank_id, self.as_of, self.valid_at = bank_id, as_of, valid_at
        self.kinds = None if kind_ids is None else id_array(kind_ids)
        self._where: dict[tuple[int, ...], tuple[str, list]] = {}
        self.times = Times()

    def edge_rows(self, rows: Mapping[int, tuple]) -> dict[int, EdgeRow]:
        """``hop`` rows (keyed by edge id) as ``EdgeRow``s, in the same order: evidence as
        the ORM gives it, times as datetimes (each distinct one made once)."""
        at, new = self.times, tuple.__new__  # (EdgeRow's own __new__ is a Python function)
        return {
            i: new(
                EdgeRow,
                (i, a, b, t, note, {} if ev == "{}" else evidence_of(ev), at[vf], at[vt], at[rec]),
            )
            for i, a, b, t, note, ev, vf, vt, rec in rows.values()
        }

    def where(self, type_ids: Sequence[int]) -> tuple[str, list]:
        """``edge_filter`` of the walk for ``type_ids`` (made once per relation set)."""
        key = tuple(type_ids)
        if key not in self._where:
            template = _filter_template(len(key))
            if template is None:
                self._where[key] = edge_filter(self.bank_id, key, self.as_of, self.valid_at)
            else:
                sql, stand_ins = template
                value = {_BANK: self.bank_id, _AS_OF: self.as_of, _VALID_AT: self.valid_at}
                value.update((-2 - i, type_id) for i, type_id in enumerate(key))
                self._where[key] = (sql, [value[p] for p in stand_ins])
        return self._where[key]

    def _far_kind(self, far: str) -> tuple[str, list]:
        """`` AND`` "the edge's ``far`` end is of an allowed kind" (empty: every kind)."""
        if self.kinds is None:
            return "", []
        return (
            ' AND EXISTS (SELECT 1 FROM "kb_entry" k WHERE '
            f'k.id = "graph_edge"."{far}" AND k.kind_id = ANY(%s::bigint[]))',
            [self.kinds],
        )

    def hop(self, level: Sequence[int], type_ids, direction: str, limit: int) -> list[tuple]:
        """At most ``limit`` allowed edges touching ``level`` in ``direction``: one statement
        (no ORDER BY: the reading stops at the ``LIMIT``).

        Written as one ``near = ANY(level) … LIMIT``, PostgreSQL may walk the bank's edge index
        and filter, guessing a hub's edges spread over the bank (edges added later sit at its
        end): 58 ms against 5 ms for a 20k-edge hub's first 2,001 in a 330k-edge bank. So a
        hop reads each node's edges through the index of its end (:meth:`_per_node`), where
        the ``LIMIT`` stops the reading; a hop that may read most of a wide level's edges
        (many nodes and a large limit) reads them in one scan planned without the ``LIMIT``
        (:meth:`_in_one_scan`: pages in table order, 25–30 % faster there)."""
        where, params = self.where(type_ids)
        nodes = id_array(sorted(level))
        per_node = len(level) <= PER_NODE_LEVEL or limit <= PER_NODE_LIMIT
        read = self._per_node if per_node else self._in_one_scan
        sql, args = read(where, params, direction, nodes, limit)
        with connection.cursor() as cursor:
            cursor.execute(sql, args)
            return cursor.fetchall()

    def _per_node(self, where: str, params: list, direction: str, nodes: str, limit: int):
        """``unnest`` of the level in id order, a ``LATERAL`` read per node. Both directions
        read a node's incoming and outgoing edges; an outgoing one whose far end is in the
        level (it is read as that node's incoming edge) is left out, so none comes twice."""
        branches, args = [], [nodes]
        for way in _ways(direction, ("in", "out")):
            near, far = _ENDS[way]
            branch = (
                f'SELECT {_SELECT} FROM "graph_edge" WHERE {where} AND "graph_edge"."{near}" = n.id'
            )
            kind, kind_args = self._far_kind(far)
            branch += kind
            args += [*params, *kind_args]
            if direction == "both" and way == "out":
                # not (far end in the level and this end of a kind its incoming read allows)
                outside = f'"graph_edge"."to_entry_id" {_not_in(nodes.count(",") + 1)}'
                seen, seen_args = self._far_kind("from_entry_id")
                branch += f" AND ({outside} OR NOT (TRUE{seen}))" if seen else f" AND {outside}"
                args += [nodes, *seen_args]
            branches.append(branch)
        # The LIMIT inside keeps the read per node: without it PostgreSQL may turn the
        # LATERAL into a join, sorting every edge of the bank for a wide level (129 ms
        # against 11 ms for a level of 2,000 entries). Its value is the outer one's.
        sql = (
            "SELECT h.* FROM unnest(%s::bigint[]) AS n(id) CROSS JOIN LATERAL "
            f"({' UNION ALL '.join(f'({b})' for b in branches)} LIMIT %s) AS h LIMIT %s"
        )
        return sql, [*args, limit, limit]

    def _in_one_scan(self, where: str, params: list, direction: str, nodes: str, limit: int):
        """The edges of every node of the level by ``= ANY``, planned as if all were read
        (``OFFSET 0`` keeps the outer ``LIMIT`` from the plan)."""
        parts, args = [], list(params)
        for way in _ways(direction):
            near, far = _ENDS[way]
            kind, kind_args = self._far_kind(far)
            parts.append(f'("graph_edge"."{near}" = ANY(%s::bigint[]){kind})')
            args += [nodes, *kind_args]
        sql = (
            f'SELECT * FROM (SELECT {_SELECT} FROM "graph_edge" WHERE {where} '
            f"AND ({' OR '.join(parts)}) OFFSET 0) AS h LIMIT %s"
        )
        return sql, [*args, limit]

    def still_open(
        self,
        nodes: Sequence[int],
        type_ids,
        direction: str,
        *,
        skip_edges: Sequence[int] = (),
        reached: Sequence[int] = (),
    ) -> set[int]:
        """Those of ``nodes`` with an allowed edge, other than ``skip_edges``, to an entry
        not in ``reached``: one statement, one index probe per node and direction."""
        if not nodes or not type_ids:
            return set()
        sql, args = self._open_sql(nodes, type_ids, direction, skip_edges, id_array(reached))
        with connection.cursor() as cursor:
            cursor.execute(sql, args)
            return {row[0] for row in cursor.fetchall()}

    def entries_and_open(
        self, pks: Sequence[int], nodes: Sequence[int] = (), type_ids=(), direction: str = "out"
    ) -> Pending:
        """``entry_rows`` of ``pks`` (a sixth column, null, ends each row), and
        ``still_open(nodes, …, reached=pks)``, in one statement: the walk's last question and
        its answer's entries share a round trip, a plan and the id list. Sent, not awaited:
        inside ``pipelined`` the caller works while PostgreSQL reads (``Pending.result``)."""
        reached = id_array(pks)
        if not nodes or not type_ids:
            return Pending(_ENTRIES, [reached, self.bank_id], probe=False)
        probe, args = self._open_sql(nodes, type_ids, direction, (), reached)
        # The open nodes come as one array in a row of their own (no entry id): 1,845 rows
        # of one id each cost the client more than the 2,001 entry rows beside them.
        sql = (
            f"SELECT *, NULL::bigint[] FROM ({_ENTRIES}) AS e UNION ALL "
            f"SELECT NULL, NULL, NULL, NULL, NULL, (SELECT array_agg(n.id) FROM ({probe}) AS n)"
        )
        return Pending(sql, [reached, self.bank_id, *args], probe=True)

    def _open_sql(self, nodes, type_ids, direction: str, skip_edges, reached: str):
        """The statement of ``still_open`` (``reached`` as an array literal) and its
        parameters."""
        where, params = self.where(type_ids)
        skipped, excluding = id_array(skip_edges), _not_in(reached.count(",") + 1)
        probes, args = [], []
        for way in _ways(direction):
            near, far = _ENDS[way]
            probe = f'SELECT 1 FROM "graph_edge" WHERE {where} AND "graph_edge"."{near}" = n.id'
            args += params
            if skip_edges:
                probe += f' AND "graph_edge"."id" {_not_in(len(skip_edges))}'
                args.append(skipped)
            if reached != "{}":
                probe += f' AND "graph_edge"."{far}" {excluding}'
                args.append(reached)
            kind, kind_args = self._far_kind(far)
            probe += kind
            args += kind_args
            probes.append(f"{probe} LIMIT 1")
        # LATERAL … LIMIT 1: one index probe per node and direction, which PostgreSQL cannot
        # turn into a hash of every edge of the relation (it does with a plain EXISTS). In id
        # order, consecutive probes share index pages: ~25 % less time than in discovery
        # order for 2,000 nodes. One direction is its probe alone (the wrapper of two, an
        # Append and a second Limit per node, cost ~7 % of the statement for nothing).
        if len(probes) > 1:
            probes = [
                f"SELECT 1 FROM ({' UNION ALL '.join(f'({p})' for p in probes)}) AS p LIMIT 1"
            ]
        sql = (
            "SELECT n.id FROM unnest(%s::bigint[]) AS n(id) CROSS JOIN LATERAL "
            f"({probes[0]}) AS hit"
        )
        return sql, [id_array(sorted(nodes)), *args]


class Pending:
    """One statement executed at once (``kb.prepared.send``; inside ``pipelined``: sent, not
    awaited) and read by ``result``: (its entry rows, the open nodes when it also asked for
    them)."""

    def __init__(self, sql: str, params: list, *, probe: bool):
        self.probe = probe
        self.sent = send(sql, params)

    def result(self) -> tuple[list[tuple], set[int]]:
        rows = self.sent.rows()
        if not self.probe:
            return rows, set()
        opened = set(next(row[5] for row in reversed(rows) if row[0] is None) or ())
        return [row for row in rows if row[0] is not None], opened


_ENTRIES = (
    'SELECT e."id", e."short_id", e."title", k."name", e."key" FROM "kb_entry" e '
    'JOIN "kb_entrykind" k ON k."id" = e."kind_id" '
    'WHERE e."id" = ANY(%s::bigint[]) AND e."bank_id" = %s'
)
