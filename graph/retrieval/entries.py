"""The entries a query answer shows (results, the members folded into them and their ``via``
members), read in one prepared statement.

Only what an answer reads of an entry is read: a result's ``entry_core``, its lifecycle and
currency; a pointer's texts and steps. The ORM's ``select_related("kind").in_bulk(ids)`` took
about 1 ms of client CPU to compile, and 30–60 µs per row to decode every column (metadata,
anchors, timestamps, the kind's settings) into model instances — a hub's answer shows all its
folded members, so that cost grew with the hub (README, "Fold overhead", fifth round).
Instances are still ``Entry`` objects (with their kind cached, as ``select_related`` leaves
it), built from the row with the fields' own converters; any field not read is deferred.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import DEFERRED

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
        (_AT[i], converter)
        for i, field in enumerate(_FIELDS)
        for converter in field.get_db_converters(db)
    ]
    kinds: dict[int, EntryKind] = {}
    out: dict[int, Entry] = {}
    deferred = [DEFERRED] * len(_COLUMNS)
    for row in fetch_prepared(_SQL, {"ids": list(ids)}):
        values = deferred.copy()
        for at, value in zip(_AT, row, strict=False):
            values[at] = value
        for at, converter in converters:
            values[at] = converter(values[at], None, db)
        entry = Entry.from_db(db.alias, FIELD_NAMES, values)  # a whole row: no re-ordering
        kind = kinds.get(entry.kind_id)
        if kind is None:
            kind = kinds[entry.kind_id] = EntryKind.from_db(
                db.alias, ("id", "name"), (entry.kind_id, row[-1])
            )
        _KIND.set_cached_value(entry, kind)
        out[entry.id] = entry
    return out
