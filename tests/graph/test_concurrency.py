"""Concurrent writers on one bank: real transactions, one database connection per thread.

Eight writers link, unlink and merge overlapping entries at the same time; afterwards the
graph must still obey its rules and the history must replay to the live rows. A few
deterministic interleavings (held transactions, waits observed in ``pg_stat_activity``) pin
down the races between a merge or a delete and the writes that overlap it.
"""

from __future__ import annotations

import random
import re
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable

import pytest
from django.db import OperationalError, connection, transaction
from django.utils import timezone

from graph.curation.delete import delete_entry
from graph.curation.merge import merge_entries
from graph.edges.current import current_edge_sql
from graph.edges.links import current_q, link, unlink
from graph.models import Alias, Edge
from kb import audit
from kb.errors import Conflict, InvalidInput, KbError, NotFound
from kb.models import Bank, Entry, EntryStatus, Operation
from kb.services.entries import clean_entry_data, create_entry
from tests.pg_activity import other_sessions

pytestmark = [
    pytest.mark.xdist_group("concurrency"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

WRITERS = 8
OPERATIONS_PER_WRITER = 20
ENTRIES = 12
RELATIONS = ["see_also", "part_of", "cites", "precedes"]
RETRYABLE = {"40P01": "deadlock", "40001": "serialization failure"}
EXPECTED = (Conflict, InvalidInput, NotFound)
JOIN_TIMEOUT = 60


def sqlstate(exc: BaseException) -> str | None:
    """The PostgreSQL error code behind a Django database error, if any."""
    while exc is not None:
        code = getattr(exc, "sqlstate", None)
        if code:
            return code
        exc = exc.__cause__
    return None


def in_thread(target: Callable, *args) -> tuple[threading.Thread, dict]:
    """Run ``target`` on its own connection; the dict gets its result or exception."""
    outcome: dict = {}

    def run():
        try:
            outcome["result"] = target(*args)
        except BaseException as exc:  # reported by the test, not lost in the thread
            outcome["error"] = exc
            outcome["traceback"] = traceback.format_exc()
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def lock_waiters() -> int:
    """Backends of this test database waiting for a lock right now."""
    return other_sessions("wait_event_type = 'Lock'")


def wait_until_blocked(count: int, *threads: threading.Thread, timeout: float = 5.0) -> bool:
    """Wait until ``count`` backends wait for a lock: True once they do — the intended race is
    on. False when the threads ended first (nothing waited: the race did not happen) or on
    timeout. Tests assert it, so a change that stops the writers from meeting is noticed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if lock_waiters() >= count:
            return True
        if not any(t.is_alive() for t in threads):
            return lock_waiters() >= count
        time.sleep(0.02)
    return False


def make_entries(bank: Bank, count: int) -> list[Entry]:
    return [
        create_entry(
            bank,
            clean_entry_data(
                bank,
                {
                    "title": f"Concurrent entry {i}",
                    "content": f"Body {i}.",
                    "lifetime": {"durable": True},
                },
            ),
        )
        for i in range(count)
    ]


def current_edges_on(statuses) -> list[tuple]:
    return list(
        Edge.objects.filter(current_q())
        .filter(from_entry__status__in=statuses)
        .values_list("pk", "from_entry__short_id", "to_entry__short_id", "type__name")
    ) + list(
        Edge.objects.filter(current_q())
        .filter(to_entry__status__in=statuses)
        .values_list("pk", "from_entry__short_id", "to_entry__short_id", "type__name")
    )


# --- eight writers at once ------------------------------------------------------------------


def writer(number: int, bank_pk: int, refs: list[str], start: threading.Barrier, log: list):
    """~20 random link / unlink / merge calls; expected refusals and retries are logged."""
    rng = random.Random(7919 * (number + 1))
    bank = Bank.objects.get(pk=bank_pk)
    start.wait(timeout=JOIN_TIMEOUT)
    with audit.acting_as(f"writer-{number}"):
        for _ in range(OPERATIONS_PER_WRITER):
            kind = rng.choices(["link", "unlink", "merge"], weights=[6, 3, 1])[0]
            a, b = rng.sample(refs, 2)
            for _attempt in range(5):
                try:
                    if kind == "link":
                        relation = rng.choice(RELATIONS)
                        edge = link(bank, {"from": a, "to": b, "relation": relation}, reason="w")
                        log.append(("link", number, edge.pk))
                    elif kind == "unlink":
                        open_ids = list(
                            Edge.objects.filter(bank=bank)
                            .filter(current_q())
                            .values_list("pk", flat=True)
                        )
                        if not open_ids:
                            break
                        edge_id = rng.choice(open_ids)
                        unlink(bank, edge_id, "retracted by a writer")
                        log.append(("unlink", number, edge_id))
                    else:
                        result = merge_entries(bank, a, b, "duplicates found by a writer")
                        log.append(("merge", number, result.operation.pk, a, b))
                    break
                except EXPECTED as exc:
                    log.append(("refused", number, kind, exc.code))
                    break
                except OperationalError as exc:
                    code = sqlstate(exc)
                    if code not in RETRYABLE:
                        raise
                    table = re.search(r'in relation "(\w+)"', str(exc))
                    on = f" on a {table[1]} row" if table else ""
                    log.append(("retry", number, f"{kind}: {RETRYABLE[code]}{on}"))
                    time.sleep(rng.uniform(0.005, 0.05))


def test_eight_concurrent_writers_keep_the_graph_consistent(hashing_embedder):
    bank = Bank.objects.create(slug="race", name="Race")
    entries = make_entries(bank, ENTRIES)
    refs = [e.short_id for e in entries]
    start = threading.Barrier(WRITERS)
    log: list = []
    runs = [in_thread(writer, n, bank.pk, refs, start, log) for n in range(WRITERS)]
    for thread, _ in runs:
        thread.join(JOIN_TIMEOUT)
    assert not any(t.is_alive() for t, _ in runs), "a writer hung"
    crashed = [o["traceback"] for _, o in runs if "error" in o]
    assert not crashed, "a writer hit an unexpected error:\n" + "\n".join(crashed)

    outcomes = Counter(
        (row[0], row[-1]) if row[0] in ("refused", "retry") else row[0] for row in log
    )
    print(f"\n{WRITERS} writers x {OPERATIONS_PER_WRITER} operations: {dict(outcomes)}")
    linked = [row[2] for row in log if row[0] == "link"]
    unlinked = {row[2] for row in log if row[0] == "unlink"}
    merge_ops = {row[2]: (row[3], row[4]) for row in log if row[0] == "merge"}
    assert linked and unlinked and merge_ops, f"the run exercised too little: {dict(outcomes)}"

    problems = graph_problems(bank, linked, unlinked, merge_ops)
    assert not problems, "after the concurrent run:\n" + "\n".join(problems)


def creator(edge_pk: int) -> str:
    """'<kind> #<operation>' of the operation that inserted an edge row."""
    row = (
        Edge.history.model.objects.filter(id=edge_pk, history_type="+")
        .select_related("operation")
        .first()
    )
    return f"{row.operation.kind} #{row.operation_id}" if row and row.operation else "?"


def graph_problems(bank: Bank, linked: list, unlinked: set, merge_ops: dict) -> list[str]:
    """Every broken invariant, each as one line (all are checked, so one run shows all)."""
    live = {e.pk: e for e in Edge.objects.filter(bank=bank)}
    return (
        duplicate_current_triples(bank)
        + lost_edges(bank, live, linked, unlinked, merge_ops)
        + broken_merges(bank, merge_ops)
        + history_mismatches(bank, live)
    )


def duplicate_current_triples(bank: Bank) -> list[str]:
    """1. No duplicate current triple."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT from_entry_id, to_entry_id, type_id, count(*) FROM graph_edge e
            WHERE bank_id = %(bank)s AND {current_edge_sql("e", "%(now)s")}
            GROUP BY 1, 2, 3 HAVING count(*) > 1
            """,
            {"bank": bank.pk, "now": timezone.now()},
        )
        return [f"duplicate current triple {row}" for row in cursor.fetchall()]


def lost_edges(bank: Bank, live: dict, linked: list, unlinked: set, merge_ops: dict) -> list[str]:
    """2. No lost edge: every edge a writer was told it created still exists, and is either
    current or was closed by a recorded unlink or merge; no edge row vanished."""
    hist = Edge.history.model
    problems = [f"edge {pk} (linked by a writer) vanished" for pk in linked if pk not in live]
    for pk in linked:
        edge = live.get(pk)
        if edge is None or edge.invalidated_at is None:
            continue
        closing = (
            hist.objects.filter(id=pk, invalidated_at__isnull=False)
            .order_by("history_id")
            .select_related("operation")
            .first()
        )
        if closing is None or closing.operation is None:
            problems.append(f"edge {pk} was closed without a recorded operation")
        elif not (
            (closing.operation.kind == "unlink" and pk in unlinked)
            or (closing.operation.kind == "merge" and closing.operation_id in merge_ops)
        ):
            problems.append(
                f"edge {pk} was closed by an unrecorded {closing.operation.kind} "
                f"operation {closing.operation_id}"
            )
    history_ids = set(hist.objects.filter(bank_id=bank.pk).values_list("id", flat=True))
    if history_ids != set(live):
        problems.append(f"edge rows without history {set(live) - history_ids}")
        problems.append(f"edge history without rows {history_ids - set(live)}")
    return problems


def broken_merges(bank: Bank, merge_ops: dict) -> list[str]:
    """3. No current edge touches a merged entry; merges form chains that end at a live entry,
    and each entry was merged away by exactly one successful merge."""
    problems = [
        f"current edge {pk} {source} -{relation}-> {target} touches a merged entry "
        f"(inserted by {creator(pk)})"
        for pk, source, target, relation in current_edges_on([EntryStatus.MERGED])
    ]
    aways = Counter(away for _, away in merge_ops.values())
    problems += [f"{ref} was merged away {n} times" for ref, n in aways.items() if n > 1]
    by_pk = {e.pk: e for e in Entry.objects.filter(bank=bank)}
    for start in by_pk.values():
        entry, seen = start, {start.pk}
        while entry.merged_into_id is not None and entry.merged_into_id not in seen:
            entry = by_pk[entry.merged_into_id]
            seen.add(entry.pk)
        if entry.status != EntryStatus.LIVE:
            problems.append(f"merged_into of {start.short_id} ends at {entry.status} {entry}")
    merged = {e.short_id for e in by_pk.values() if e.status == EntryStatus.MERGED}
    if merged != set(aways):
        problems.append(f"merged entries {merged} differ from the merges reported {set(aways)}")
    return problems


def history_mismatches(bank: Bank, live: dict) -> list[str]:
    """4. History replays to the final state, and every history row names an operation of
    this bank."""
    hist = Edge.history.model
    problems = []
    fields = [f.attname for f in hist.tracked_fields]
    for edge in live.values():
        last = hist.objects.filter(id=edge.pk).order_by("-history_id").first()
        if last is None:
            continue  # reported by lost_edges
        if {f: getattr(last, f) for f in fields} != {f: getattr(edge, f) for f in fields}:
            differ = sorted(f for f in fields if getattr(last, f) != getattr(edge, f))
            problems.append(f"edge {edge.pk}: the latest history row differs in {differ}")
    ops = set(Operation.objects.filter(bank=bank).values_list("pk", flat=True))
    for model in (Entry, Edge, Alias):
        rows = model.history.model.objects.filter(bank_id=bank.pk)
        if rows.filter(operation__isnull=True).exists():
            problems.append(f"{model.__name__} history rows without an operation")
        if not set(rows.values_list("operation_id", flat=True)) <= ops:
            problems.append(f"{model.__name__} history rows of another bank's operation")
    return problems


# --- deterministic interleavings ------------------------------------------------------------


def held(release: threading.Event, done: threading.Event, call: Callable, *args):
    """Run ``call`` inside a transaction that stays open until ``release`` is set."""
    with transaction.atomic():
        result = call(*args)
        done.set()
        assert release.wait(JOIN_TIMEOUT)
    return result


@pytest.mark.parametrize("curation", ["merge", "delete"])
def test_a_link_committing_during_a_merge_or_delete_is_not_left_behind(curation, hashing_embedder):
    """A link to B commits while B is merged away or deleted: the edge must not stay current
    on B (the curation waits for the link and takes its edge along, or the link is refused)."""
    bank = Bank.objects.create(slug="race", name="Race")
    keep, doomed, x = make_entries(bank, 3)
    release, linked = threading.Event(), threading.Event()
    payload = {"from": x.short_id, "to": doomed.short_id, "relation": "cites"}
    linker, link_outcome = in_thread(held, release, linked, link, bank, payload)
    assert linked.wait(JOIN_TIMEOUT) or "error" in link_outcome
    if curation == "merge":
        curator, curate_outcome = in_thread(
            merge_entries, bank, keep.short_id, doomed.short_id, "dupes"
        )
    else:
        curator, curate_outcome = in_thread(delete_entry, bank, doomed.short_id, "obsolete")
    assert wait_until_blocked(1, curator), f"the {curation} never waited for the open link"
    release.set()
    for thread in (linker, curator):
        thread.join(JOIN_TIMEOUT)
    for outcome in (link_outcome, curate_outcome):
        error = outcome.get("error")
        assert error is None or isinstance(error, KbError), outcome.get("traceback")
    assert "error" not in curate_outcome, curate_outcome.get("traceback")
    gone = EntryStatus.MERGED if curation == "merge" else EntryStatus.DELETED
    assert Entry.objects.get(pk=doomed.pk).status == gone
    assert current_edges_on([gone]) == [], f"a current edge still touches the {gone} entry"


@pytest.mark.parametrize("side", ["away", "keep"])
def test_a_merge_of_an_entry_merged_meanwhile_is_refused(side, hashing_embedder):
    """merge(B into A) commits while merge(B into C) — or merge(A into C)… — waits for its
    locks: the waiting merge must see B (or A) merged and refuse, not merge it again."""
    bank = Bank.objects.create(slug="race", name="Race")
    a, b, c, y = make_entries(bank, 4)
    link(bank, {"from": b.short_id, "to": y.short_id, "relation": "cites"})
    if side == "away":  # first: B into A; then: B into C
        first, second = (a, b), (c, b)
    else:  # first: A into C; then: B into A (A is the survivor it keeps)
        first, second = (c, a), (a, b)
    release, merged = threading.Event(), threading.Event()
    holder, first_outcome = in_thread(
        held, release, merged, merge_entries, bank, first[0].short_id, first[1].short_id, "one"
    )
    assert merged.wait(JOIN_TIMEOUT), first_outcome.get("traceback")
    waiter, second_outcome = in_thread(
        merge_entries, bank, second[0].short_id, second[1].short_id, "two"
    )
    assert wait_until_blocked(1, waiter), "the second merge never waited for the first"
    release.set()
    for thread in (holder, waiter):
        thread.join(JOIN_TIMEOUT)
    assert "error" not in first_outcome, first_outcome.get("traceback")
    error = second_outcome.get("error")
    assert isinstance(error, Conflict) and error.code == "already_merged", (
        f"the second merge should be refused as already_merged; it "
        f"{'succeeded' if error is None else 'raised ' + repr(error)}. "
        + " / ".join(
            f"{e.title}: {e.status} into {e.merged_into_id}"
            for e in Entry.objects.filter(bank=bank).order_by("title")
        )
    )
    assert current_edges_on([EntryStatus.MERGED]) == []


def test_crossed_merges_do_not_deadlock(hashing_embedder):
    """merge(B into A) and merge(A into B) at once: one wins, the other is refused with a
    409 — never a database deadlock (which the API would turn into a 500)."""
    bank = Bank.objects.create(slug="race", name="Race")
    a, b = make_entries(bank, 2)

    def lock_b():
        return Entry.objects.select_for_update().get(pk=b.pk)

    release, locked = threading.Event(), threading.Event()
    blocker, _ = in_thread(held, release, locked, lock_b)
    assert locked.wait(JOIN_TIMEOUT)
    # merge(keep=B, away=A) queues first on B; merge(keep=A, away=B) then holds A and queues
    # on B behind it. When B is released the first holds B and wants A: a lock cycle.
    into_b, into_b_outcome = in_thread(merge_entries, bank, b.short_id, a.short_id, "dupe")
    assert wait_until_blocked(1, into_b), "merge(A into B) never queued on B"
    into_a, into_a_outcome = in_thread(merge_entries, bank, a.short_id, b.short_id, "dupe")
    assert wait_until_blocked(2, into_a), "merge(B into A) never queued behind it"
    release.set()
    for thread in (blocker, into_b, into_a):
        thread.join(JOIN_TIMEOUT)
    errors = [o for o in (into_b_outcome, into_a_outcome) if "error" in o]
    leaked = [o["traceback"] for o in errors if not isinstance(o["error"], KbError)]
    assert not leaked, "a database error escaped the merge service:\n" + "\n".join(leaked)
    assert len(errors) == 1 and errors[0]["error"].code == "already_merged"
    statuses = sorted(Entry.objects.filter(bank=bank).values_list("status", flat=True))
    assert statuses == [EntryStatus.LIVE, EntryStatus.MERGED]


def test_a_merge_does_not_block_links_in_another_bank(hashing_embedder, other_bank):
    """Tenancy holds for locks too: while a merge in one bank is open, a link of the same
    core relation in another bank commits at once (the merge must not lock the shared
    edge-type row, which every new edge's foreign key check needs)."""
    bank = Bank.objects.create(slug="race", name="Race")
    keep, away, neighbour = make_entries(bank, 3)
    link(bank, {"from": away.short_id, "to": neighbour.short_id, "relation": "cites"})
    x, y = make_entries(other_bank, 2)
    release, merged = threading.Event(), threading.Event()
    merger, merge_outcome = in_thread(
        held, release, merged, merge_entries, bank, keep.short_id, away.short_id, "dupe"
    )
    assert merged.wait(JOIN_TIMEOUT), merge_outcome.get("traceback")
    payload = {"from": x.short_id, "to": y.short_id, "relation": "cites"}
    linker, link_outcome = in_thread(link, other_bank, payload)
    linker.join(3)
    blocked = linker.is_alive()
    release.set()
    for thread in (merger, linker):
        thread.join(JOIN_TIMEOUT)
    assert "error" not in merge_outcome, merge_outcome.get("traceback")
    assert "error" not in link_outcome, link_outcome.get("traceback")
    assert not blocked, "a link in another bank waited for the merge to commit"


def test_a_link_and_a_merge_sharing_a_neighbour_do_not_deadlock(hashing_embedder):
    """A link X→N2 (cites) is open while merge(away into keep) re-points away→N1 (cites) and
    away→N2 (see_also): the merge may wait for the link, but must hold nothing the link's
    commit needs meanwhile — such as the `cites` edge-type row that locking away→N1 with
    its joined rows took — or the two deadlock and one of them fails (a 500 in the API)."""
    bank = Bank.objects.create(slug="race", name="Race")
    keep, away, n1, n2, x = make_entries(bank, 5)
    link(bank, {"from": away.short_id, "to": n1.short_id, "relation": "cites"})
    link(bank, {"from": away.short_id, "to": n2.short_id, "relation": "see_also"})
    release, linked = threading.Event(), threading.Event()
    payload = {"from": x.short_id, "to": n2.short_id, "relation": "cites"}
    linker, link_outcome = in_thread(held, release, linked, link, bank, payload)
    assert linked.wait(JOIN_TIMEOUT), link_outcome.get("traceback")
    merger, merge_outcome = in_thread(merge_entries, bank, keep.short_id, away.short_id, "dupe")
    # The race this test is about: the merge runs while the link's transaction is open. It
    # either queues on a lock the link holds, or completes entirely before the link commits;
    # both are checked, so a merge that never met the open link cannot pass unnoticed.
    waited = wait_until_blocked(1, merger)
    finished_while_link_open = not merger.is_alive() and linker.is_alive()
    assert waited or finished_while_link_open, "the merge did not run while the link was open"
    release.set()
    for thread in (linker, merger):
        thread.join(JOIN_TIMEOUT)
    leaked = [o["traceback"] for o in (link_outcome, merge_outcome) if "error" in o]
    assert not leaked, "a writer failed:\n" + "\n".join(leaked)
    current = set(
        Edge.objects.filter(bank=bank)
        .filter(current_q())
        .values_list("from_entry", "to_entry", "type__name")
    )
    assert current == {
        (keep.pk, n1.pk, "cites"),
        (keep.pk, n2.pk, "see_also"),
        (x.pk, n2.pk, "cites"),
    }
