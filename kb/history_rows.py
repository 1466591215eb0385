"""Historical rows written set-wise: one ``INSERT … SELECT`` per model and change, whatever the
number of rows, stamped with the audit context like the rows simple-history writes one by one.

simple-history writes a historical row per ``save()``; a merge of a hub or an import of an
index changes thousands of rows, and one statement per row is what made them slow. Code that
changes rows with set-wise SQL calls :func:`record_rows` right after (or, for deletions, right
before) the change, so the audit stays complete: each row gets its historical row with the
operation id, the actor and the reason (:func:`kb.audit.history_stamp`, the rule simple-history's
rows follow too), and the unit of work notes the rows for its post-commit event.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Sequence

from django.db import connection
from django.utils import timezone

from kb import audit
from kb.unit_of_work import note_rows


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
    sql = _insert_history_sql(model)
    stamp = audit.history_stamp(reason)
    with connection.cursor() as cur:
        cur.execute(
            sql,
            [
                when or timezone.now(),
                change,
                stamp["history_change_reason"],
                stamp["operation_id"],
                stamp["history_actor"],
                list(ids),
            ],
        )
        written = cur.rowcount
    # Set-wise writes bypass save(): the unit of work learns of them here.
    note_rows(model, ids, change, using=connection.alias)
    return written


@functools.cache
def _insert_history_sql(model) -> str:
    """:func:`record_rows`' statement for ``model``: its historical model, the columns and the
    text are looked up once per model class, not per write."""
    q = connection.ops.quote_name
    quoted = ", ".join(q(c) for c in tracked_columns(model))
    return (
        f"INSERT INTO {q(model.history.model._meta.db_table)} "
        f"({quoted}, history_date, history_type, history_change_reason, operation_id, "
        f"history_actor) "
        f"SELECT {quoted}, %s, %s, %s, %s, %s FROM {q(model._meta.db_table)} "
        f"WHERE id = ANY(%s) ORDER BY id"
    )


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


def _preparer(field):
    """How a value of ``field`` is made ready for ``COPY``: None when psycopg writes it as it
    is; JSON as its text (the server parses it: three times faster than psycopg's ``Jsonb``
    wrapper per value); anything else through Django's ``get_db_prep_save``."""
    kind = field.get_internal_type()
    if kind in PLAIN_TYPES:
        return None
    if kind == "JSONField":
        dumps = functools.partial(json.dumps, cls=field.encoder)
        return lambda value, _connection: None if value is None else dumps(value)
    return field.get_db_prep_save


def _copy(model, fields: list, rows, *, table: str | None = None) -> None:
    """``COPY`` ``rows`` (sequences of ``fields``' Python values, in order) into ``table``
    (default: the model's), preparing only the values psycopg cannot write as they are."""
    q = connection.ops.quote_name
    prepared = [_preparer(f) for f in fields]
    columns = ", ".join(q(f.column) for f in fields)
    target = q(table or model._meta.db_table)
    plain = all(p is None for p in prepared)
    with connection.cursor() as cur:
        raw = cur.cursor  # the psycopg cursor under Django's wrapper
        with raw.copy(f"COPY {target} ({columns}) FROM STDIN") as copy:
            write = copy.write_row
            if plain:
                for row in rows:
                    write(row)
                return
            for row in rows:
                write(
                    [
                        v if prep is None else prep(v, connection)
                        for v, prep in zip(row, prepared, strict=True)
                    ]
                )


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
    ids = reserve_ids(model, len(objs))
    for obj, pk in zip(objs, ids, strict=True):
        obj.pk = pk
        obj._state.adding = False
        obj._state.db = connection.alias
    fields = list(model._meta.concrete_fields)
    names = [f.attname for f in fields]
    values = [[o.__dict__[n] for n in names] for o in objs]
    _copy_chunks(model, fields, values, ids, chunk, progress, phase, when)
    return ids


@functools.cache
def _defaults(model) -> tuple[tuple[str, object, bool], ...]:
    """(attname, default, callable?) of each concrete field but the primary key."""
    out = []
    for f in model._meta.concrete_fields:
        if f.primary_key:
            continue
        if f.has_default():
            out.append((f.attname, f.default, callable(f.default)))
        else:
            out.append((f.attname, None, False))
    return tuple(out)


def copy_dicts(
    model,
    rows: Sequence[dict],
    *,
    ids: Sequence[int] | None = None,
    chunk: int = 20_000,
    progress=None,
    phase: str = "writing",
    when: dt.datetime | None = None,
) -> list[int]:
    """Like :func:`copy_rows` for rows given as ``{attname: value}`` (no model instances):
    a field a row leaves out gets its default. ``ids`` are primary keys reserved beforehand
    with :func:`reserve_ids` (else reserved here). Returns the ids, in the rows' order."""
    if not rows:
        return []
    ids = list(ids) if ids is not None else reserve_ids(model, len(rows))
    defaults = _defaults(model)
    fields = [model._meta.pk] + [model._meta.get_field(name) for name, _, _ in defaults]
    values = [
        [pk]
        + [
            row[name] if name in row else (default() if dynamic else default)
            for name, default, dynamic in defaults
        ]
        for pk, row in zip(ids, rows, strict=True)
    ]
    _copy_chunks(model, fields, values, ids, chunk, progress, phase, when)
    return ids


def _copy_chunks(model, fields, values, ids, chunk, progress, phase, when) -> None:
    when = when or timezone.now()
    total = len(values)
    for start in range(0, total, chunk):
        _copy(model, fields, values[start : start + chunk])
        record_rows(model, ids[start : start + chunk], "+", when=when)
        if progress:
            progress(phase, min(start + chunk, total), total)


def update_rows(
    model,
    rows: Sequence[dict],
    columns: Sequence[str],
    *,
    when: dt.datetime | None = None,
    reason: str | None = None,
) -> int:
    """Set ``columns`` (attnames) of many rows to the values in ``rows`` (each with ``id``),
    set-wise: ``COPY`` into a temporary table, one ``UPDATE … FROM``, then their historical
    rows (``~``, stamped with the audit context). A constant number of statements."""
    if not rows:
        return 0
    q = connection.ops.quote_name
    fields = [model._meta.pk] + [model._meta.get_field(c) for c in columns]
    table = q(model._meta.db_table)
    temp = f"kb_update_{model._meta.db_table}"
    cols = [f.column for f in fields]
    with connection.cursor() as cur:
        cur.execute(
            f"CREATE TEMP TABLE {q(temp)} ON COMMIT DROP AS SELECT "
            + ", ".join(q(c) for c in cols)
            + f" FROM {table} WITH NO DATA"
        )
    _copy(model, fields, ([row[f.attname] for f in fields] for row in rows), table=temp)
    sets = ", ".join(f"{q(c)} = u.{q(c)}" for c in cols[1:])
    with connection.cursor() as cur:
        cur.execute(f"UPDATE {table} AS m SET {sets} FROM {q(temp)} AS u WHERE m.id = u.id")
        cur.execute(f"DROP TABLE {q(temp)}")
    ids = sorted(row["id"] for row in rows)
    return record_rows(model, ids, "~", when=when, reason=reason)
