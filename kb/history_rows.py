"""Historical rows written set-wise: one ``INSERT … SELECT`` per model and change, whatever the
number of rows, stamped with the audit context like the rows simple-history writes one by one.

simple-history writes a historical row per ``save()``; a merge of a hub or an import of an
index changes thousands of rows, and one statement per row is what made them slow. Code that
changes rows with set-wise SQL calls :func:`record_rows` right after (or, for deletions, right
before) the change, so the audit stays complete: each row gets its historical row with the
operation id, the actor and the reason.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence

from django.db import connection
from django.utils import timezone

from kb import audit
from kb.signals import rows_written

REASON_MAX = 100  # simple-history's history_change_reason column


@functools.cache
def tracked_columns(model) -> tuple[str, ...]:
    """The columns a historical row copies from its model's row (in the model's order)."""
    return tuple(f.column for f in model.history.model.tracked_fields)


def record_rows(
    model,
    ids: Sequence[int],
    change: str,
    *,
    when: dt.datetime | None = None,
    reason: str | None = None,
) -> int:
    """Write one historical row of type ``change`` (``+``, ``~`` or ``-``) for each row of
    ``model`` in ``ids``, copying its present state, in one statement. Returns how many."""
    if not ids:
        return 0
    if change not in ("+", "~", "-"):
        raise ValueError(f"Unknown history change {change!r}.")
    ctx = audit.current()
    hist = model.history.model
    columns = tracked_columns(model)
    quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
    why = (reason if reason is not None else ctx.reason) or None
    sql = (
        f"INSERT INTO {connection.ops.quote_name(hist._meta.db_table)} "
        f"({quoted}, history_date, history_type, history_change_reason, operation_id, "
        f"history_actor) "
        f"SELECT {quoted}, %s, %s, %s, %s, %s FROM {connection.ops.quote_name(model._meta.db_table)} "
        f"WHERE id = ANY(%s) ORDER BY id"
    )
    with connection.cursor() as cur:
        cur.execute(
            sql,
            [
                when or timezone.now(),
                change,
                why[:REASON_MAX] if why else None,
                ctx.operation_id,
                ctx.actor,
                list(ids),
            ],
        )
        written = cur.rowcount
    # Set-wise writes bypass save(): tell those who keep derived state (reports, layouts).
    rows_written.send(sender=model, ids=list(ids), change=change, using=connection.alias)
    return written


# Field types whose Python value psycopg writes as is (no database preparation needed).
PLAIN_TYPES = frozenset(
    {
        "AutoField",
        "BigAutoField",
        "BigIntegerField",
        "BooleanField",
        "CharField",
        "DateTimeField",
        "DateField",
        "FloatField",
        "ForeignKey",
        "IntegerField",
        "PositiveIntegerField",
        "SlugField",
        "TextField",
    }
)


def reserve_ids(model, count: int) -> list[int]:
    """``count`` fresh primary keys from the table's sequence (one statement)."""
    if count <= 0:
        return []
    table = model._meta.db_table
    column = model._meta.pk.column
    with connection.cursor() as cur:
        cur.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [table, column, count],
        )
        return [row[0] for row in cur.fetchall()]


def copy_rows(
    model,
    objs: Sequence,
    *,
    chunk: int = 20_000,
    progress=None,
    phase: str = "writing",
    when: dt.datetime | None = None,
) -> list[int]:
    """Insert unsaved ``objs`` with PostgreSQL ``COPY`` in chunks, each chunk followed by its
    historical rows (``+``, stamped with the audit context); sets each object's primary key.
    ``progress(phase, done, total)`` is called after every chunk."""
    if not objs:
        return []
    fields = list(model._meta.concrete_fields)
    plain = [f.get_internal_type() in PLAIN_TYPES for f in fields]
    q = connection.ops.quote_name
    columns = ", ".join(q(f.column) for f in fields)
    total = len(objs)
    ids = reserve_ids(model, total)
    for obj, pk in zip(objs, ids, strict=True):
        obj.pk = pk
        obj._state.adding = False
        obj._state.db = connection.alias
    when = when or timezone.now()
    for start in range(0, total, chunk):
        part = objs[start : start + chunk]
        with connection.cursor() as cur:
            raw = cur.cursor  # the psycopg cursor under Django's wrapper
            with raw.copy(f"COPY {q(model._meta.db_table)} ({columns}) FROM STDIN") as copy:
                for obj in part:
                    values = obj.__dict__
                    copy.write_row(
                        [
                            values[f.attname]
                            if is_plain
                            else f.get_db_prep_save(values[f.attname], connection)
                            for f, is_plain in zip(fields, plain, strict=True)
                        ]
                    )
        record_rows(model, [o.pk for o in part], "+", when=when)
        if progress:
            progress(phase, min(start + chunk, total), total)
    return ids
