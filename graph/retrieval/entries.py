"""The entries a query answer shows (results, the members folded into them and their ``via``
members), read in one prepared statement.

Only what an answer reads of an entry is read: a result's ``entry_core``, its lifecycle and
currency; a pointer's texts and steps. The ORM's ``select_related("kind").in_bulk(ids)`` took
about 1 ms of client CPU to compile, and 30–60 µs per row to decode every column (metadata,
anchors, timestamps, the kind's settings) into model instances — a hub's answer shows all its
folded members, so that cost grew with the hub (README, "Fold overhead", fifth round).
Instances are still ``Entry`` objects (with their kind cached, as ``select_related`` leaves
it), built from the row with the fields' own converters; any field not read is deferred.
They are made as ``Model.from_db`` makes them, without its per-field walk of ``__init__``
(about 6 µs a row, and a 5k-edge hub's answer shows some 21): the row's values set as the
instance's attributes, a loaded ``ModelState``; when a ``pre_init``/``post_init`` receiver
is connected for the model, ``from_db`` itself, so a receiver still runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import DEFERRED
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init

from kb.models import Entry, EntryKind
from kb.prepared import fetch_prepared

_WANTED = {
    "id",
    "short_id",
    "key",
    "title",
    "content",
    "summary",
    "useful_for",
    "systems",
    "tasks",
    "steps",
    "status",
    "expires_at",
    "retired_reason",
    "kind_id",
}
# In the model's column order; every other column is deferred.
_COLUMNS = Entry._meta.concrete_fields
_FIELDS = [f for f in _COLUMNS if f.attname in _WANTED]
FIELD_NAMES = tuple(f.attname for f in _FIELDS)
_AT = [i for i, f in enumerate(_COLUMNS) if f.attname in _WANTED]  # their places in a row
_KIND = Entry._meta.get_field("kind")

# Starts as the ORM's read did (tests/graph/test_query_statements.py labels it by that).
_SQL = (
    "SELECT "
    + ", ".join(f'"kb_entry"."{name}"' for name in FIELD_NAMES)
    + ', "kb_entrykind"."name" FROM "kb_entry"'
    ' JOIN "kb_entrykind" ON "kb_entrykind"."id" = "kb_entry"."kind_id"'
    ' WHERE "kb_entry"."id" = ANY(%(ids)s::bigint[])'
)


def answer_entries(ids: Sequence[int]) -> dict[int, Entry]:
    """The entries of ``ids`` by id, with their kinds' names, in one statement."""
    if not ids:
        return {}
    db = connections[DEFAULT_DB_ALIAS]  # not the proxy: it is looked up per attribute
    converters = [
        (i, converter)
        for i, field in enumerate(_FIELDS)
        for converter in field.get_db_converters(db)
    ]
    make = _from_db if _signalled(Entry) else _loaded
    kinds: dict[int, EntryKind] = {}
    out: dict[int, Entry] = {}
    for row in fetch_prepared(_SQL, {"ids": list(ids)}):
        values = list(row[:-1])
        for at, converter in converters:
            values[at] = converter(values[at], None, db)
        entry = make(db.alias, values)
        kind = kinds.get(entry.kind_id)
        if kind is None:
            kind = kinds[entry.kind_id] = EntryKind.from_db(
                db.alias, ("id", "name"), (entry.kind_id, row[-1])
            )
        _KIND.set_cached_value(entry, kind)
        out[entry.id] = entry
    return out


def _signalled(model) -> bool:
    return pre_init.has_listeners(model) or post_init.has_listeners(model)


def _from_db(alias: str, values: list) -> Entry:
    row = [DEFERRED] * len(_COLUMNS)
    for at, value in zip(_AT, values, strict=True):
        row[at] = value
    return Entry.from_db(alias, FIELD_NAMES, row)  # a whole row: no re-ordering


def _loaded(alias: str, values: list) -> Entry:
    """What ``_from_db`` gives when no receiver is connected: the read fields as attributes
    (the others deferred: absent, so read on access), ``_state`` loaded from ``alias``."""
    entry = Entry.__new__(Entry)
    state = ModelState()
    state.adding, state.db = False, alias
    entry.__dict__.update(zip(FIELD_NAMES, values, strict=True))
    entry._state = state
    return entry
