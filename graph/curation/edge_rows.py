"""Edge and alias rows changed set-wise inside an operation, each change with its history rows.

A constant number of statements whatever the number of rows: close many edges, append many
edges, rewrite many edges' evidence, move or add many aliases. Callers hold the entry locks
and have validated what they write; the database still enforces the edge rules (the exclusion
constraint turns a lost race into a 409, as ``write_edge`` does).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from graph.models import Alias, Edge
from kb.errors import Conflict
from kb.history_rows import record_rows


def close_edges(reasons: dict[int, str], when: dt.datetime | None = None) -> list[int]:
    """End the transaction interval of every edge in ``reasons`` (edge id → reason): one
    UPDATE and one history INSERT."""
    if not reasons:
        return []
    when = when or timezone.now()
    ids = sorted(reasons)
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE graph_edge AS e SET invalidated_at = %s, invalidated_reason = u.reason "
            "FROM unnest(%s::bigint[], %s::text[]) AS u(id, reason) WHERE e.id = u.id",
            [when, ids, [reasons[i] for i in ids]],
        )
    record_rows(Edge, ids, "~", when=when)
    return ids


def append_edges(rows: Sequence[Edge], when: dt.datetime | None = None) -> list[Edge]:
    """Insert ``rows`` (unsaved edges) in one statement, then their history rows. A row that
    clashes with a believed edge of its triple (a concurrent writer won) is a 409."""
    if not rows:
        return []
    try:
        with transaction.atomic():
            created = Edge.objects.bulk_create(list(rows))
    except IntegrityError as exc:
        raise Conflict(
            "An edge this change would write already exists (written meanwhile); try again.",
            code="duplicate_edge",
        ) from exc
    record_rows(Edge, [e.pk for e in created], "+", when=when)
    return created


def set_evidence(evidence: dict[int, dict], when: dt.datetime | None = None) -> list[int]:
    """Replace the evidence of the edges in ``evidence`` (edge id → new evidence)."""
    if not evidence:
        return []
    ids = sorted(evidence)
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE graph_edge AS e SET evidence = u.evidence "
            "FROM unnest(%s::bigint[], %s::jsonb[]) AS u(id, evidence) WHERE e.id = u.id",
            [ids, [json.dumps(evidence[i]) for i in ids]],
        )
    record_rows(Edge, ids, "~", when=when)
    return ids


def move_aliases(ids: Sequence[int], to_entry: int, when=None) -> list[int]:
    """The aliases ``ids`` now name ``to_entry``."""
    if not ids:
        return []
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE graph_alias SET entry_id = %s WHERE id = ANY(%s) RETURNING id",
            [to_entry, list(ids)],
        )
        moved = sorted(row[0] for row in cur.fetchall())
    record_rows(Alias, moved, "~", when=when)
    return moved


def add_aliases(
    bank_id: int,
    entry_id: int,
    forms: Sequence[tuple[str, str]],
    *,
    source: str,
    actor: str,
    when: dt.datetime | None = None,
) -> list[int]:
    """Add ``(surface, normalized)`` aliases of ``entry_id`` in one statement (a form may name
    several entries; a (form, entry) pair already there is left alone)."""
    if not forms:
        return []
    when = when or timezone.now()
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO graph_alias (bank_id, entry_id, surface, normalized, source, actor, "
            "created_at) SELECT %s, %s, u.surface, u.norm, %s, %s, %s "
            "FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS u(surface, norm, n) "
            "ORDER BY u.n ON CONFLICT (bank_id, normalized, entry_id) DO NOTHING RETURNING id",
            [
                bank_id,
                entry_id,
                source,
                actor,
                when,
                [surface for surface, _ in forms],
                [norm for _, norm in forms],
            ],
        )
        ids = sorted(row[0] for row in cur.fetchall())
    record_rows(Alias, ids, "+", when=when)
    return ids
