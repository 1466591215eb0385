"""The set-wise import: complete history stamped with the one import operation, progress
during the write phase, all or nothing, and a statement count that does not grow per line."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from graph.curation.revert import revert_operation
from graph.models import Alias, Edge
from kb.models import Entry, Job
from kb.services.bulk import ImportFailed, import_bank, refresh_statistics

pytestmark = pytest.mark.django_db


def lines(n: int, tag: str = "svc") -> str:
    out = [{"type": "entry", "key": f"{tag}:{i}", "title": f"{tag} number {i}"} for i in range(n)]
    out += [{"type": "alias", "entry": f"{tag}:{i}", "alias": f"{tag}-alias-{i}"} for i in range(n)]
    out += [
        {"type": "edge", "from": f"{tag}:{i}", "to": f"{tag}:{(i + 1) % n}", "relation": "cites"}
        for i in range(n)
    ]
    out += [
        {"type": "edge", "from": f"{tag}:{i}", "to": f"{tag}:{(i + 2) % n}", "relation": "see_also"}
        for i in range(n)
    ]
    return "\n".join(json.dumps(line) for line in out)


def test_every_row_gets_a_history_row_of_the_import_operation(bank):
    phases = []
    result = import_bank(
        bank, lines(30), actor="agent:loader", progress=lambda p, d, t: phases.append((p, d, t))
    )
    op = result["operation"]
    assert (result["created"], result["aliases_created"], result["edges_created"]) == (30, 30, 60)
    for model, count in ((Entry, 30), (Alias, 30), (Edge, 60)):
        rows = model.history.model.objects.filter(operation_id=op)
        assert rows.count() == count == model.objects.filter(bank=bank).count()
        assert set(rows.values_list("history_type", "history_actor")) == {("+", "agent:loader")}
        assert set(rows.values_list("id", flat=True)) == set(
            model.objects.filter(bank=bank).values_list("pk", flat=True)
        )
    assert ("writing entries", 30, 30) in phases and ("writing edges", 60, 60) in phases
    assert ("writing aliases", 30, 30) in phases
    # One revertible operation: the revert removes all of it.
    revert_operation(bank, op, "wrong file")
    assert not Entry.objects.filter(bank=bank).exists()
    assert not Edge.objects.filter(bank=bank).exists()


def test_a_bad_line_writes_nothing(bank):
    text = lines(20) + "\n" + json.dumps({"type": "edge", "from": "svc:1", "to": "nope"})
    with pytest.raises(ImportFailed) as failed:
        import_bank(bank, text)
    assert [e["line"] for e in failed.value.extra["errors"]] == [81]
    assert not Entry.objects.filter(bank=bank).exists()


def test_reimport_changes_nothing_and_a_changed_edge_is_replaced(bank):
    import_bank(bank, lines(10))
    assert import_bank(bank, lines(10))["operation"] is None
    changed = lines(10).replace('"relation": "cites"}', '"relation": "cites", "note": "Why."}', 1)
    result = import_bank(bank, changed)
    assert (result["edges_updated"], result["edges_unchanged"]) == (1, 19)
    (new,) = Edge.objects.filter(bank=bank, invalidated_at__isnull=True, note="Why.")
    assert new.replaces.invalidated_at is not None


def test_import_statements_do_not_grow_with_the_lines(bank, other_bank):
    with CaptureQueriesContext(connection) as small:
        import_bank(bank, lines(10, "a"))
    with CaptureQueriesContext(connection) as large:
        import_bank(other_bank, lines(200, "b"))
    assert len(small.captured_queries) == len(large.captured_queries)


def test_many_new_entries_are_embedded_by_a_job_with_progress(
    bank, hashing_embedder, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        result = import_bank(bank, lines(300))
    job = Job.objects.get(public_id=result["embedding_job"])
    assert job.kind == "embed" and job.status == "succeeded"  # eager Celery: ran at commit
    assert job.progress_done == job.progress_total == 300
    assert Entry.objects.filter(bank=bank, embedding__isnull=False).count() == 300


def test_a_reimport_changing_entries_updates_them_set_wise_with_history(bank, other_bank):
    counts = []
    for target, n, tag in ((bank, 10, "a"), (other_bank, 200, "b")):
        import_bank(target, lines(n, tag))
        renamed = lines(n, tag).replace(f'"title": "{tag} number', f'"title": "{tag} renamed')
        renamed = renamed.replace(
            f'"key": "{tag}:0", ', f'"key": "{tag}:0", "status": "retired", ', 1
        )
        with CaptureQueriesContext(connection) as ctx:
            result = import_bank(target, renamed)
        counts.append(len(ctx.captured_queries))
        assert (result["updated"], result["unchanged"], result["created"]) == (n, 0, 0)
        op = result["operation"]
        history = Entry.history.model.objects.filter(operation_id=op)
        assert history.count() == n
        assert set(history.values_list("history_type", "history_actor")) == {("~", "system")}
        assert {t.split(" ")[1] for t in history.values_list("title", flat=True)} == {"renamed"}
        first = Entry.objects.get(bank=target, key=f"{tag}:0")
        assert first.status == "retired" and first.status_changed_at == first.updated_at
        assert first.status_changed_at > first.created_at
        assert Entry.objects.filter(bank=target, title__contains=" renamed ").count() == n
        # Complete history: reverting the re-import restores every title and the status.
        revert_operation(target, op, "wrong file")
        assert Entry.objects.filter(bank=target, title__contains=" number ").count() == n
        assert Entry.objects.get(pk=first.pk).status == "live"
    assert counts[0] == counts[1], f"{counts[0]} statements for 10 changed, {counts[1]} for 200"


def test_reverting_an_import_that_created_entries_costs_the_same_at_10_and_1000(
    bank, other_bank, hashing_embedder, django_capture_on_commit_callbacks
):
    counts = []
    for target, n, tag in ((bank, 10, "a"), (other_bank, 1000, "b")):
        with django_capture_on_commit_callbacks(execute=True):
            op = import_bank(target, lines(n, tag))["operation"]
        assert Entry.objects.filter(bank=target, embedding__isnull=False).count() == n
        with CaptureQueriesContext(connection) as ctx:
            result = revert_operation(target, op, "wrong file")
        counts.append(len(ctx.captured_queries))
        assert not Entry.objects.filter(bank=target).exists()
        for model, written in ((Entry, n), (Alias, n), (Edge, 2 * n)):
            gone = model.history.model.objects.filter(
                operation_id=result.operation.pk, history_type="-"
            )
            assert gone.count() == written, model
    assert counts[0] == counts[1], f"{counts[0]} statements for 10 entries, {counts[1]} for 1,000"


def _analyze_count(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT analyze_count FROM pg_stat_user_tables WHERE relname = %s", [table])
        return cursor.fetchone()[0]


def test_a_large_import_refreshes_the_planner_statistics_after_commit(
    bank, other_bank, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr("kb.services.bulk.ANALYZE_AFTER_ROWS", 100)
    before = _analyze_count("graph_edge")
    with django_capture_on_commit_callbacks(execute=True) as small:
        import_bank(bank, lines(10, "small"))  # 40 rows: below the threshold
    assert refresh_statistics not in small
    with django_capture_on_commit_callbacks(execute=True) as large:
        import_bank(other_bank, lines(30, "large"))  # 120 rows
    assert large.count(refresh_statistics) == 1
    assert _analyze_count("graph_edge") == before + 1
