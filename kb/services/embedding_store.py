"""The embedding job's write of one batch of vectors, in pgvector's binary form (issue 24).

Rendering 384 floats as pgvector text (``'[0.0123…, …]'``) and parsing it back in the server
cost about a fifth of the job on this 2-core box, as much CPU taken from the model. The job
therefore sends each vector as the 4 + 4 x 384 bytes of pgvector's binary format (the same
float32 values, so the same stored vectors) by ``COPY … (FORMAT BINARY)`` into a temporary
table, then upserts from it (emptying it) inside one transaction, the same
conflict rule as the ORM's upsert (a concurrent write of the same entry waits, then one
update wins; never a unique-key error)."""

from __future__ import annotations

import struct

from django.db import connection, transaction

STAGE = "kb_embedding_stage"
COLUMNS = (
    "entry_id",
    "bank_id",
    "model",
    "source_hash",
    "computed_at",
    "content",
    "useful_for",
    "context",
)
# COPY's binary rows carry no type: each field's bytes go to the column's own input function.
# The vectors are written as raw bytes (declared bytea to the client), pgvector's vector_recv
# reads them: int16 dimension, int16 unused, then the float32 components, big-endian.
TYPES = ("int8", "int8", "text", "text", "timestamptz", "bytea", "bytea", "bytea")


def vector_bytes(vector) -> bytes | None:
    """``vector`` in pgvector's binary format (float32 components, as stored)."""
    if vector is None:
        return None
    import numpy as np

    values = np.asarray(vector, dtype=">f4")
    return struct.pack(">HH", values.shape[0], 0) + values.tobytes()


def store_rows(rows: list[tuple]) -> None:
    """Upsert ``rows`` (tuples in ``COLUMNS`` order, vectors as :func:`vector_bytes`) into
    ``kb_entryembedding``: COPY into the session's staging table, then one INSERT … ON
    CONFLICT that empties it, in one transaction (three statements with the staging table's
    ``CREATE … IF NOT EXISTS``)."""
    names = ", ".join(COLUMNS)
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in COLUMNS if c != "entry_id")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"CREATE TEMP TABLE IF NOT EXISTS {STAGE} (LIKE kb_entryembedding)")
        with cursor.cursor.copy(f"COPY {STAGE} ({names}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(list(TYPES))
            for row in rows:
                copy.write_row(row)
        cursor.execute(
            f"WITH staged AS (DELETE FROM {STAGE} RETURNING *)"
            f" INSERT INTO kb_entryembedding ({names}) SELECT {names} FROM staged"
            f" ON CONFLICT (entry_id) DO UPDATE SET {updates}"
        )
