"""Edges: the services, the database rules and the REST contract."""

import pytest
from django.db import IntegrityError, connection, transaction

from graph.edges.links import current_edges_of, invalidate, link, retype, unlink
from graph.models import Edge, EdgeType
from kb.errors import Conflict, InvalidInput
from kb.models import Operation

pytestmark = pytest.mark.django_db


def test_core_edge_types_are_seeded():
    types = {t.name: t for t in EdgeType.objects.filter(bank=None)}
    assert len(types) == 14  # the thirteen of 000_* and "other"
    assert {n for n, t in types.items() if t.fold_role == "dominates"} == {
        "supersedes",
        "corrects",
        "clarifies",
    }
    assert {n for n, t in types.items() if t.fold_role == "parent"} == {
        "part_of",
        "split_from",
        "derived_from",
    }
    assert types["corrects"].neighbor_priority > types["see_also"].neighbor_priority
    assert types["conflicts_with"].neighbor_priority > types["cites"].neighbor_priority
    assert {n: t.workflow_role for n, t in types.items() if t.workflow_role} == {
        "precedes": "precedes",
        "requires": "requires",
        "produces": "produces",
        "owned_by": "owned_by",
    }


def test_link_writes_one_operation_and_history(bank, make_entry):
    a, b = make_entry("A"), make_entry("B")
    edge = link(
        bank,
        {
            "from": a.short_id,
            "to": b.short_id,
            "relation": "corrects",
            "note": "Read before trusting it.",
        },
    )
    assert edge.is_current() and edge.type.name == "corrects"
    op = Operation.objects.filter(bank=bank, kind="link").latest("id")
    assert edge.history.get().operation_id == op.pk


def test_duplicate_current_triple_is_409(bank, make_entry, linked):
    a, b = make_entry("A"), make_entry("B")
    linked(a, b, "see_also")
    with pytest.raises(Conflict) as info:
        linked(a, b, "see_also")
    assert info.value.code == "duplicate_edge"
    linked(a, b, "cites")  # another type is another edge
    assert Edge.objects.filter(from_entry=a, to_entry=b).count() == 2


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({"relation": "nonsense"}, "unknown_relation"),
        ({"relation": "other"}, "invalid_edge"),
        ({"valid_from": "2026-05-01", "valid_to": "2026-04-01"}, "invalid_interval"),
        ({"valid_from": "soon"}, "invalid_time"),
    ],
)
def test_bad_links_are_refused(bank, make_entry, payload, code):
    a, b = make_entry("A"), make_entry("B")
    with pytest.raises(InvalidInput) as info:
        link(bank, {"from": a.short_id, "to": b.short_id, "relation": "see_also", **payload})
    assert info.value.code == code
    assert Edge.objects.count() == 0


def test_self_loop_and_foreign_entry_refused(bank, other_bank, make_entry):
    a = make_entry("A")
    theirs = make_entry("Theirs", in_bank=other_bank)
    with pytest.raises(InvalidInput) as info:
        link(bank, {"from": a.short_id, "to": a.short_id, "relation": "see_also"})
    assert info.value.code == "self_loop"
    with pytest.raises(InvalidInput) as info:
        link(bank, {"from": a.short_id, "to": theirs.short_id, "relation": "see_also"})
    assert info.value.code == "entry_outside_bank"


def test_note_rule_refuses_copied_text(bank, make_entry):
    a = make_entry("A")
    b = make_entry(
        "B",
        content="The session create call needs HTTP/1.1 from curl because the gateway duplicates a meta tag.",
    )
    with pytest.raises(InvalidInput) as info:
        link(
            bank,
            {
                "from": a.short_id,
                "to": b.short_id,
                "relation": "clarifies",
                "note": "Says the session create call needs HTTP/1.1 from curl because of the gateway.",
            },
        )
    assert info.value.code == "note_repeats_target"
    edge = link(
        bank,
        {
            "from": a.short_id,
            "to": b.short_id,
            "relation": "clarifies",
            "note": "Read this before the login step of that recipe fails for you.",
        },
    )
    assert edge.note.startswith("Read this")


# --- database rules against raw SQL -------------------------------------------------------------


def _raw_insert(bank_id, from_id, to_id, type_id, valid_from=None, invalidated=False):
    with connection.cursor() as cur:
        cur.execute(
            """INSERT INTO graph_edge (bank_id, from_entry_id, to_entry_id, type_id, label, note, evidence, source,
                                       actor, valid_from, recorded_at, invalidated_at, invalidated_reason)
               VALUES (%s, %s, %s, %s, '', '', '{}', 'staff', 'raw', %s, now(), %s, '')""",
            [bank_id, from_id, to_id, type_id, valid_from, "2026-01-01" if invalidated else None],
        )


def test_database_refuses_self_loop(bank, make_entry):
    a = make_entry("A")
    see_also = EdgeType.objects.get(bank=None, name="see_also")
    with pytest.raises(IntegrityError), transaction.atomic():
        _raw_insert(bank.pk, a.pk, a.pk, see_also.pk)


def test_database_refuses_edge_across_banks(bank, other_bank, make_entry):
    a = make_entry("A")
    theirs = make_entry("Theirs", in_bank=other_bank)
    see_also = EdgeType.objects.get(bank=None, name="see_also")
    with pytest.raises(IntegrityError), transaction.atomic():
        _raw_insert(bank.pk, a.pk, theirs.pk, see_also.pk)
        connection.check_constraints()  # the composite foreign keys are deferred to commit
    with pytest.raises(IntegrityError), transaction.atomic():
        _raw_insert(other_bank.pk, a.pk, theirs.pk, see_also.pk)
        connection.check_constraints()


def test_database_refuses_second_current_triple(bank, make_entry):
    a, b = make_entry("A"), make_entry("B")
    see_also = EdgeType.objects.get(bank=None, name="see_also")
    _raw_insert(bank.pk, a.pk, b.pk, see_also.pk)
    with pytest.raises(IntegrityError), transaction.atomic():
        _raw_insert(bank.pk, a.pk, b.pk, see_also.pk)
    _raw_insert(bank.pk, a.pk, b.pk, see_also.pk, invalidated=True)  # closed history rows are fine
    assert Edge.objects.filter(from_entry=a, to_entry=b).count() == 2


# --- unlink, retype, invalidate ------------------------------------------------------------------


def test_unlink_keeps_the_row_and_requires_a_reason(bank, make_entry, linked):
    a, b = make_entry("A"), make_entry("B")
    edge = linked(a, b)
    with pytest.raises(InvalidInput):
        unlink(bank, edge.pk, "")
    unlink(bank, edge.pk, "was wrong")
    edge.refresh_from_db()
    assert edge.invalidated_at is not None and edge.invalidated_reason == "was wrong"
    assert list(current_edges_of(a)) == []
    with pytest.raises(Conflict):
        unlink(bank, edge.pk, "again")
    linked(a, b)  # the triple may be linked again once unlinked


def test_retype_closes_and_appends(bank, make_entry, linked):
    a, b = make_entry("A"), make_entry("B")
    edge = linked(a, b, "see_also", note="Background for the same outage.")
    new = retype(bank, edge.pk, "clarifies", "it does clarify")
    edge.refresh_from_db()
    assert edge.invalidated_at is not None
    assert new.type.name == "clarifies" and new.replaces_id == edge.pk and new.note == edge.note
    assert [e.pk for e in current_edges_of(a)] == [new.pk]


def test_invalidate_closes_valid_time_keeping_old_belief(bank, make_entry, linked):
    import datetime as dt

    a, b = make_entry("A"), make_entry("B")
    edge = linked(a, b, "owned_by")
    new = invalidate(bank, edge.pk, "2026-04-01", "ownership moved")
    edge.refresh_from_db()
    assert edge.valid_to is None and edge.invalidated_at is not None  # the old belief, intact
    assert new.valid_to == dt.datetime(2026, 4, 1, tzinfo=dt.UTC) and new.invalidated_at is None
    assert list(current_edges_of(a)) == []


# --- REST -----------------------------------------------------------------------------------------


def test_edges_api_contract(client_rw, make_entry):
    a, b = make_entry("A"), make_entry("B")
    body = {
        "from": a.short_id,
        "to": b.short_id,
        "relation": "corrects",
        "note": "Fixes its retry count.",
        "evidence": {"sentence": "x"},
        "valid_from": "2026-01-01",
    }
    created = client_rw.post("/api/v1/banks/acme/edges", body, format="json")
    assert created.status_code == 201, created.content
    edge = created.json()
    assert (
        isinstance(edge["id"], int)
        and edge["relation"] == "corrects"
        and edge["from"] == a.short_id
    )
    again = client_rw.post("/api/v1/banks/acme/edges", body, format="json")
    assert again.status_code == 409 and again.json()["error"]["code"] == "duplicate_edge"
    loop = client_rw.post("/api/v1/banks/acme/edges", {**body, "to": a.short_id}, format="json")
    assert loop.status_code == 400 and loop.json()["error"]["code"] == "self_loop"
    unknown = client_rw.post(
        "/api/v1/banks/acme/edges", {**body, "relation": "likes"}, format="json"
    )
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "unknown_relation"
    detail = client_rw.get(f"/api/v1/banks/acme/entries/{a.short_id}").json()
    assert detail["edges"] == [
        {
            "edge_id": edge["id"],
            "relation": "corrects",
            "direction": "out",
            "note": "Fixes its retry count.",
            "entry": {"id": b.short_id, "title": "B", "summary": ""},
        }
    ]
    assert (
        client_rw.get(f"/api/v1/banks/acme/entries/{b.short_id}").json()["edges"][0]["direction"]
        == "in"
    )
    no_reason = client_rw.post(f"/api/v1/banks/acme/edges/{edge['id']}/unlink", {}, format="json")
    assert no_reason.status_code == 400 and no_reason.json()["error"]["code"] == "reason_required"
    unlinked = client_rw.post(
        f"/api/v1/banks/acme/edges/{edge['id']}/unlink", {"reason": "wrong"}, format="json"
    )
    assert unlinked.status_code == 200 and unlinked.json()["invalidated_at"]
    assert client_rw.get(f"/api/v1/banks/acme/entries/{a.short_id}").json()["edges"] == []


def test_edge_of_other_bank_is_not_found(bank, other_bank, token_client, make_entry):
    x, y = make_entry("X", in_bank=other_bank), make_entry("Y", in_bank=other_bank)
    edge = link(other_bank, {"from": x.short_id, "to": y.short_id, "relation": "see_also"})
    client = token_client(bank)
    response = client.post(
        f"/api/v1/banks/acme/edges/{edge.pk}/unlink", {"reason": "x"}, format="json"
    )
    assert response.status_code == 404 and response.json()["error"]["code"] == "edge_not_found"
    assert Edge.objects.get(pk=edge.pk).invalidated_at is None


def test_retype_and_invalidate_api(client_rw, make_entry, linked):
    a, b = make_entry("A"), make_entry("B")
    edge = linked(a, b)
    r = client_rw.post(
        f"/api/v1/banks/acme/edges/{edge.pk}/retype",
        {"relation": "cites", "reason": "it cites"},
        format="json",
    )
    assert (
        r.status_code == 200 and r.json()["relation"] == "cites" and r.json()["replaces"] == edge.pk
    )
    i = client_rw.post(
        f"/api/v1/banks/acme/edges/{r.json()['id']}/invalidate",
        {"valid_to": "2026-02-01", "reason": "ended"},
        format="json",
    )
    assert i.status_code == 200 and i.json()["valid_to"].startswith("2026-02-01")


def test_report_learning_with_connections_is_one_transaction(client_rw, make_entry):
    target = make_entry("Target recipe", content="Run the deploy with the blue green flag on.")
    body = {
        "title": "Deploy gotcha",
        "content": "Deploys fail when the cache is cold.",
        "kind": "gotcha",
        "lifetime": {"durable": True},
        "connections": [
            {
                "id": target.short_id,
                "relation": "corrects",
                "note": "Read before following its step two.",
            }
        ],
    }
    response = client_rw.post("/api/v1/banks/acme/entries", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["edges"][0]["relation"] == "corrects"
    bad = dict(
        body,
        title="Another",
        connections=[
            {"id": target.short_id, "relation": "see_also"},
            {"id": "ffffffff", "relation": "see_also"},
        ],
    )
    response = client_rw.post("/api/v1/banks/acme/entries", bad, format="json")
    assert response.status_code == 400 and "connections" in response.json()["error"]["fields"]
    from kb.models import Entry

    assert not Entry.objects.filter(title="Another").exists()
    assert Edge.objects.count() == 1
