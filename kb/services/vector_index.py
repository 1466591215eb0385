"""Per-bank search indexes (issue 12): every large bank gets its own HNSW index per search
dimension — a partial index ``WHERE bank_id = <bank>`` — so a bank's query walks a graph of
its own rows only, never other banks'. Small banks need none: below
``KB_BANK_VECTOR_INDEX_AT`` vectors the search is an exact scan of the bank's rows (which the
per-bank B-tree on ``bank_id`` makes cheap), and that scan stays the fallback while an index is
being built.

The lexical arm's GIN indexes (full text, title trigrams and their short-title tiers) get the
same treatment: the shared ones hold every bank's rows, so a large bank's query read the
posting lists of all banks and ANDed them with the bank's B-tree (on a database of several
large banks, 36 ms for the arm against 7 ms with the bank's own indexes at 100k entries).

The planner picks a bank's partial index because the search statement names the bank as an
integer written into its text (the statement is otherwise prepared with parameters,
kb/services/search.py), which implies the index predicate.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from kb.locks import session_lock
from kb.models import Bank

DIMENSIONS = ("content", "useful_for", "context")
_LOCK_NAMESPACE = 0x1DE7  # advisory-lock namespace of index builds (second key: the bank id)
# The tables the own indexes are on, resolved as the DDL resolves them (the search path): a
# same-named index of another schema is never counted, rebuilt or pruned.
_ON_OUR_TABLES = "i.indrelid IN ('kb_entryembedding'::regclass, 'kb_entry'::regclass)"


def index_threshold() -> int:
    return settings.KB_BANK_VECTOR_INDEX_AT


def index_name(bank_id: int, dimension: str) -> str:
    return f"kb_emb_{dimension}_bank_{bank_id}"


def lexical_indexes(bank_id: int) -> dict[str, str]:
    """The bank's own lexical indexes on ``kb_entry``: name → ``USING … WHERE …``."""
    from kb.services.search import TITLE_TRIGRAM_TIERS

    bank = f"bank_id = {int(bank_id)}"
    made = {
        f"kb_entry_tsv_bank_{bank_id}": f"gin (search_tsv) WHERE {bank}",
        f"kb_entry_trgm_bank_{bank_id}": f"gin (title gin_trgm_ops) WHERE {bank}",
    }
    for title_at_most, _ in TITLE_TRIGRAM_TIERS:
        made[f"kb_entry_trgm{title_at_most}_bank_{bank_id}"] = (
            f"gin (title gin_trgm_ops) WHERE {bank}"
            f" AND cardinality(show_trgm(title)) <= {title_at_most}"
        )
    return made


def _own_index_names(bank_id: int) -> list[str]:
    return [index_name(bank_id, d) for d in DIMENSIONS] + list(lexical_indexes(bank_id))


@dataclass
class BankIndexReport:
    bank: str
    vectors: int
    created: list[str]
    present: list[str]
    seconds: float
    busy: bool = False  # another session was building this bank's indexes: none built here


def _own_indexes(bank_id: int) -> dict[str, bool]:
    """The bank's own indexes in the catalogue: name → usable. An index is unusable while a
    ``CREATE INDEX CONCURRENTLY`` builds it, and stays so when that build failed (a worker
    killed, a cancelled statement): PostgreSQL keeps it, never reads it, and ``IF NOT
    EXISTS`` would skip it forever."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT c.relname, i.indisvalid AND i.indisready FROM pg_index i"
            " JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = ANY(%s)"
            f" AND {_ON_OUR_TABLES}",
            [_own_index_names(bank_id)],
        )
        return dict(cur.fetchall())


def existing_indexes(bank_id: int) -> set[str]:
    """The bank's own indexes the planner can read (an invalid one is not counted)."""
    return {name for name, usable in _own_indexes(bank_id).items() if usable}


def bank_vector_count(bank_id: int, up_to: int | None = None) -> int:
    with connection.cursor() as cur:
        if up_to:
            cur.execute(
                "SELECT count(*) FROM (SELECT 1 FROM kb_entryembedding WHERE bank_id = %s"
                " LIMIT %s) s",
                [bank_id, up_to],
            )
        else:
            cur.execute("SELECT count(*) FROM kb_entryembedding WHERE bank_id = %s", [bank_id])
        return cur.fetchone()[0]


def banks_needing_indexes(bank_ids) -> list[int]:
    """Those of ``bank_ids`` past the threshold without all their own indexes (two cheap,
    bounded statements per bank: a capped count and a catalogue lookup)."""
    threshold = index_threshold()
    return [
        bank_id
        for bank_id in sorted(bank_ids)
        if bank_vector_count(bank_id, up_to=threshold) >= threshold
        and len(existing_indexes(bank_id)) < len(_own_index_names(bank_id))
    ]


def _definitions(bank_id: int) -> dict[str, str]:
    """Every own index of the bank: name → ``table USING … WHERE …`` (``bank_id`` an integer
    literal in DDL, never text from outside)."""
    bank_id = int(bank_id)
    wanted = {
        index_name(bank_id, dim): f"kb_entryembedding USING hnsw ({dim} vector_cosine_ops)"
        f" WITH (m = 16, ef_construction = 64) WHERE bank_id = {bank_id}"
        for dim in DIMENSIONS
    }
    for name, using in lexical_indexes(bank_id).items():
        wanted[name] = f"kb_entry USING {using}"
    return wanted


def ensure_bank_vector_indexes(
    bank: Bank, *, force: bool = False, concurrently: bool = True
) -> BankIndexReport:
    """Create the bank's own HNSW and lexical indexes once it holds
    ``KB_BANK_VECTOR_INDEX_AT`` vectors (or at once with ``force``). Idempotent; builds
    CONCURRENTLY so writes go on meanwhile (so it must run outside a transaction, as a Celery
    task or a command does). One session builds a bank's indexes at a time (another finds it
    ``busy`` and leaves them); an unusable index left by a failed build is dropped and built
    again."""
    started = time.perf_counter()
    threshold = index_threshold()
    vectors = bank_vector_count(bank.pk, up_to=threshold)
    wanted = _definitions(bank.pk) if force or vectors >= threshold else {}
    created: list[str] = []
    busy = False
    present = existing_indexes(bank.pk)
    if set(wanted) - present:  # something to build: one builder at a time
        with session_lock(_LOCK_NAMESPACE, bank.pk) as builder:
            busy = not builder
            if builder:
                created = _build(bank, wanted, concurrently)
    return BankIndexReport(
        bank.slug, vectors, created, sorted(present), time.perf_counter() - started, busy
    )


def _build(bank: Bank, wanted: dict[str, str], concurrently: bool) -> list[str]:
    """Build those of ``wanted`` the bank lacks, or has unusable (a failed build's leftover,
    never read by the planner: dropped first). Under the bank's build lock, so an unusable
    index seen here is no other session's build in progress. A ``vector_indexes`` job row
    shows the builds (minutes for a large bank's HNSW indexes) on the jobs page, the job API
    and ``manage.py jobs``, one phase per index."""
    from kb.audit import current
    from kb.services.job_progress import tracked_job

    found = _own_indexes(bank.pk)
    todo = {name: definition for name, definition in wanted.items() if not found.get(name)}
    if not todo:
        return []
    how = "CONCURRENTLY " if concurrently else ""
    with tracked_job(bank, "vector_indexes", actor=current().actor) as (job, progress):
        _close_interrupted(bank, job)
        for done, (name, definition) in enumerate(todo.items()):
            progress.phase(f"building {name}", total=len(todo), done=done)
            with connection.cursor() as cur:
                if name in found:
                    cur.execute(f"DROP INDEX {how}IF EXISTS {name}")
                cur.execute(f"CREATE INDEX {how}IF NOT EXISTS {name} ON {definition}")
        job.result = {"built": list(todo), "rebuilt": sorted(set(todo) & set(found))}
        progress(len(todo), len(todo))
    return list(todo)


def _close_interrupted(bank: Bank, job) -> None:
    """Earlier index jobs of the bank still marked running lost their process (a killed
    worker or command: its statement may have run on, but nothing marks its row). Under the
    bank's build lock no live build can be running, so they are marked failed, naming the job
    that finishes their work."""
    from django.utils import timezone

    from kb.models import Job, JobStatus

    note = (
        f"Interrupted: its process ended before it finished; job {job.public_id} builds the rest."
    )
    Job.objects.filter(bank=bank, kind="vector_indexes", status=JobStatus.RUNNING).exclude(
        pk=job.pk
    ).update(
        status=JobStatus.FAILED,
        errors=[{"line": None, "message": note}],
        finished_at=timezone.now(),
    )


def drop_bank_vector_indexes(bank_id: int) -> list[str]:
    """Drop a bank's own indexes (a deleted bank, or to rebuild), usable or not."""
    return _drop(sorted(_own_indexes(int(bank_id))), concurrently=False)


def _drop(names: list[str], *, concurrently: bool) -> list[str]:
    """``DROP INDEX`` each of ``names`` (our own index names, never text from outside)."""
    how = "CONCURRENTLY " if concurrently else ""
    for name in names:
        with connection.cursor() as cur:
            cur.execute(f"DROP INDEX {how}IF EXISTS {name}")
    return names


def orphan_indexes() -> dict[str, int]:
    """Own indexes of banks that no longer exist (a bank deleted from a shell or a script:
    the product archives banks, never deletes them): name → the bank id it names."""
    prefixes = [name.removesuffix("_bank_0") for name in _own_index_names(0)]
    with connection.cursor() as cur:
        cur.execute(
            "SELECT c.relname, substring(c.relname FROM '_bank_([0-9]+)$')::bigint AS bank_id"
            " FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            f" WHERE c.relname ~ %s AND {_ON_OUR_TABLES}",
            ["^(" + "|".join(prefixes) + ")_bank_[0-9]+$"],
        )
        found = dict(cur.fetchall())
    alive = set(Bank.objects.filter(pk__in=set(found.values())).values_list("pk", flat=True))
    return {name: bank_id for name, bank_id in sorted(found.items()) if bank_id not in alive}


def drop_orphan_indexes(*, concurrently: bool = True) -> list[str]:
    """Drop :func:`orphan_indexes` (CONCURRENTLY: no lock on the tables other banks read)."""
    return _drop(list(orphan_indexes()), concurrently=concurrently)
