"""Merges, deletion bridges, reverts and resolution."""

import pytest

from graph.curation.delete import delete_entry
from graph.curation.merge import merge_entries
from graph.curation.revert import revert_operation
from graph.edges.links import current_edges_of, unlink
from graph.models import Alias, Edge
from graph.resolution.aliases import add_alias, normalize, resolve
from kb.errors import Conflict
from kb.models import Entry, Operation

pytestmark = pytest.mark.django_db


def snapshot(bank):
    """Every row a revert must restore, as plain tuples."""
    entries = sorted(
        Entry.objects.filter(bank=bank).values_list(
            "pk", "short_id", "title", "status", "merged_into_id", "key"
        )
    )
    edges = sorted(
        Edge.objects.filter(bank=bank).values_list(
            "pk", "from_entry_id", "to_entry_id", "type_id", "note", "invalidated_at"
        )
    )
    aliases = sorted(Alias.objects.filter(bank=bank).values_list("pk", "entry_id", "normalized"))
    return entries, edges, aliases


def test_merge_repoints_collapses_and_drops_self_loops(bank, make_entry, linked):
    keep, away, x, y = (
        make_entry("Keep"),
        make_entry("Away", key="svc:away"),
        make_entry("X"),
        make_entry("Y"),
    )
    linked(x, away, "cites")  # re-pointed to x → keep
    linked(away, y, "see_also")  # re-pointed to keep → y
    linked(x, keep, "see_also")
    linked(x, away, "see_also")  # duplicates x → keep see_also: collapses
    loop = linked(keep, away, "corrects")  # would be keep → keep: dropped
    add_alias(bank, away, "away-service")
    result = merge_entries(bank, keep.short_id, away.short_id, "duplicates")
    assert (result.edges_repointed, result.edges_collapsed, result.self_loops_dropped) == (
        2,
        1,
        [loop.pk],
    )
    away.refresh_from_db()
    assert away.status == "merged" and away.merged_into_id == keep.pk
    assert list(current_edges_of(away)) == []
    current = {(e.from_entry_id, e.to_entry_id, e.type.name) for e in current_edges_of(keep)}
    assert current == {
        (x.pk, keep.pk, "cites"),
        (keep.pk, y.pk, "see_also"),
        (x.pk, keep.pk, "see_also"),
    }
    for surface in (away.short_id, "svc:away", "away-service"):
        assert resolve(bank, surface).entry == keep
    assert result.aliases_added >= 3


def test_merged_id_answers_the_survivor(client_rw, make_entry, bank):
    keep, away = make_entry("Keep"), make_entry("Away")
    response = client_rw.post(
        "/api/v1/banks/acme/merges",
        {"keep": keep.short_id, "away": away.short_id, "reason": "dupe"},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) >= {
        "operation",
        "keep",
        "away",
        "edges_repointed",
        "edges_collapsed",
        "aliases_added",
    }
    detail = client_rw.get(f"/api/v1/banks/acme/entries/{away.short_id}").json()
    assert detail["id"] == keep.short_id and detail["merged_from"] == away.short_id


def test_merge_then_revert_restores_everything(bank, make_entry, linked):
    keep, away, x = make_entry("Keep"), make_entry("Away"), make_entry("X")
    linked(x, away, "cites", note="Cites the old runbook.")
    linked(keep, away, "see_also")
    add_alias(bank, away, "the away one")
    before = snapshot(bank)
    result = merge_entries(bank, keep.short_id, away.short_id, "dupe")
    assert snapshot(bank) != before
    revert_operation(bank, result.operation.pk, "wrong merge")
    assert snapshot(bank) == before
    op = Operation.objects.get(pk=result.operation.pk)
    assert op.reverted_by.kind == "revert"
    with pytest.raises(Conflict) as info:
        revert_operation(bank, op.pk, "again")
    assert info.value.code == "already_reverted"


def test_revert_refuses_when_a_later_operation_changed_the_rows(bank, make_entry, linked):
    a, b = make_entry("A"), make_entry("B")
    edge = linked(a, b)
    link_op = Operation.objects.filter(kind="link").latest("id")
    unlink(bank, edge.pk, "later change")
    with pytest.raises(Conflict) as info:
        revert_operation(bank, link_op.pk, "undo link")
    assert info.value.code == "revert_conflict"
    assert info.value.extra["rows"][0]["id"] == edge.pk
    revert_operation(bank, link_op.pk, "undo link", force=True)
    assert not Edge.objects.filter(pk=edge.pk).exists()


def test_delete_bridges_every_path(bank, make_entry, linked):
    x1, x2, b, y1, y2 = (make_entry(n) for n in ("X1", "X2", "B", "Y1", "Y2"))
    linked(x1, b, "part_of")
    linked(b, y1, "part_of")  # part_of + part_of (transitive): x1 → y1 part_of
    linked(x2, b, "cites")
    linked(b, y2, "corrects")  # mixed: see_also
    result = delete_entry(bank, b.short_id, "obsolete")
    assert result.bridged == 4
    b.refresh_from_db()
    assert b.status == "deleted"
    bridged = {(e.from_entry_id, e.to_entry_id): e for e in Edge.objects.filter(source="bridged")}
    assert bridged[(x1.pk, y1.pk)].type.name == "part_of"
    assert bridged[(x1.pk, y2.pk)].type.name == "see_also"
    assert bridged[(x2.pk, y2.pk)].type.name == "see_also"
    evidence = bridged[(x2.pk, y2.pk)].evidence
    assert evidence["bridged_over"]["id"] == b.short_id
    assert [h["relation"] for h in evidence["hops"]] == ["cites", "corrects"]
    assert list(current_edges_of(b)) == []


def test_delete_api_and_revert_api(client_rw, make_entry, linked, bank):
    x, b, y = make_entry("X"), make_entry("B"), make_entry("Y")
    linked(x, b, "precedes")
    linked(b, y, "precedes")
    before = snapshot(bank)
    no_reason = client_rw.delete(f"/api/v1/banks/acme/entries/{b.short_id}")
    assert no_reason.status_code == 400
    response = client_rw.delete(f"/api/v1/banks/acme/entries/{b.short_id}?reason=obsolete")
    assert response.status_code == 200 and response.json()["bridged"] == 1
    assert client_rw.get(f"/api/v1/banks/acme/entries/{b.short_id}").status_code == 404
    op = response.json()["operation"]
    shown = client_rw.get(f"/api/v1/banks/acme/operations/{op}").json()
    assert shown["kind"] == "delete" and any(
        c["model"] == "edge" and c["change"] == "created" for c in shown["changes"]
    )
    reverted = client_rw.post(
        f"/api/v1/banks/acme/operations/{op}/revert", {"reason": "mistake"}, format="json"
    )
    assert reverted.status_code == 200 and reverted.json()["reverted"] == op
    assert snapshot(bank) == before


def test_revert_of_an_import(bank):
    from kb.services.bulk import import_bank

    before = snapshot(bank)
    result = import_bank(bank, '{"type": "entry", "title": "Imported"}\n')
    revert_operation(bank, result["operation"], "bad import")
    assert snapshot(bank) == before


def test_resolve_order_and_abstention(bank, make_entry):
    reports = make_entry("Reports service", key="service:reports")
    make_entry("Billing service")
    make_entry("Billing services overview")
    add_alias(bank, reports, "reports-svc")
    assert resolve(bank, reports.short_id).matched == "short_id"
    assert resolve(bank, "service:reports").matched == "key"
    hit = resolve(bank, "Reports SVC")
    assert (hit.status, hit.matched, hit.entry) == ("resolved", "alias", reports)
    fuzzy = resolve(bank, "reports servce")
    assert fuzzy.status == "resolved" and fuzzy.matched == "fuzzy" and fuzzy.entry == reports
    exact = resolve(bank, "billing  Service")  # a title, up to case and spacing
    assert (exact.status, exact.matched, exact.entry.title) == (
        "resolved",
        "exact",
        "Billing service",
    )
    close = resolve(bank, "billing svc")
    # One candidate under the bar: not_found listing it (ambiguous needs two or more).
    assert close.status == "not_found" and close.matched is None
    assert [c["title"] for c in close.candidates] == ["Billing service"]
    assert resolve(bank, "quantum teleporter").status == "not_found"
    assert normalize("Reports-Service") == "reports service"


def test_resolve_api(client_rw, make_entry):
    make_entry("Reports service", key="service:reports")
    body = client_rw.get("/api/v1/banks/acme/resolve", {"q": "service:reports"}).json()
    assert (
        body["status"] == "resolved"
        and body["matched"] == "key"
        and body["entry"]["key"] == "service:reports"
    )
    assert client_rw.get("/api/v1/banks/acme/resolve").status_code == 400
    assert (
        client_rw.get("/api/v1/banks/acme/resolve", {"q": "zzzz qqqq"}).json()["status"]
        == "not_found"
    )


def test_curation_needs_curate_scope(bank, token_client, make_entry):
    writer = token_client(bank, scopes="read,write")
    a, b = make_entry("A"), make_entry("B")
    r = writer.post(
        "/api/v1/banks/acme/merges",
        {"keep": a.short_id, "away": b.short_id, "reason": "x"},
        format="json",
    )
    assert r.status_code == 403
    assert writer.delete(f"/api/v1/banks/acme/entries/{a.short_id}?reason=x").status_code == 403


def test_merge_keeps_a_connection_that_keep_only_had_in_the_past(bank, make_entry, linked):
    from graph.curation.merge import plan_merge

    keep, away, x = make_entry("Keep"), make_entry("Away"), make_entry("X")
    linked(keep, x, "cites", valid_to="2021-01-01")  # keep cited x until 2021
    linked(away, x, "cites")  # away cites x now
    preview = plan_merge(keep, away).counts()
    result = merge_entries(bank, keep.short_id, away.short_id, "dupe")
    assert (result.edges_repointed, result.edges_collapsed) == (1, 0)
    assert preview["edges_repointed"] == 1 and preview["edges_collapsed"] == 0
    current = [e for e in current_edges_of(keep) if e.to_entry_id == x.pk]
    assert len(current) == 1 and current[0].valid_from.year == 2021  # trimmed, not overlapping
