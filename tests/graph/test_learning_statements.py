"""The cost shape of a learning's write (issue 24): ``POST …/entries`` with its connections
runs a fixed number of SQL statements, whatever the number of connections and the size of the
bank, and the set-wise connections answer every bad one as the single link did."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from graph.curation.merge import merge_entries
from graph.edges.connections import link_connections
from graph.models import Edge
from kb.errors import Conflict
from kb.models import Entry, Operation
from kb.services.embedding import embed_entries
from kb.services.entries import clean_entry_data, create_entry

pytestmark = pytest.mark.django_db

ENTRIES = "/api/v1/banks/acme/entries"

# A learning with its noted connections, answered with the entry as GET shows it:
#   token and its banks                                              1
#   the bank's kinds (core and the bank's own, one statement)         1
#   a free short id                                                   1
#   BEGIN (a savepoint inside a test), the operation                 2
#   the same-text check (indexed)                                     1
#   the entry and its history row                                     2
#   edge types; every target, read and share-locked                  2
#   the edges, their history rows                                    2
#   the entries nearest to the new text (duplicate check, feedback)   1
#   the entry's vectors (from the write's one forward pass), COMMIT   2
# The model's pass runs in a thread meanwhile; the nearest entries are read once its vectors
# are there. The answer is rendered from the rows the write holds: the entry, the edges its
# connections wrote (a new entry has no other edges, no aliases, no removed corrections).
# Before this shape (issue 24) a learning cost 28, 42 and 63 statements with 1, 3 and 6
# connections (47 served with 3): two kinds reads, an exists() probe, a second vector search
# for the feedback, an UPDATE of the operation's details, and per connection its target, a
# lock, an overlap check and a savepoint around its edge and its history row; then 19 (the
# answer read the entry, its edges, removed corrections and aliases again after the commit).
LEARNING_STATEMENTS = 15
# Served for real (its own transaction, the post-commit event): the same, plus the layout
# cache's invalidation (one DELETE) and the workflow subscriber's one prepared read (two reads
# before issue 24's fifth round: the edges' flow ends, then the processes).
SERVED_STATEMENTS = LEARNING_STATEMENTS + 2


@pytest.fixture
def targets(bank, make_entry, hashing_embedder):
    made = [
        make_entry(f"Target {i}", content=f"Step {i} of the release checklist, in order.")
        for i in range(6)
    ]
    embed_entries(Entry.objects.filter(bank=bank))  # stored vectors: the nearest search runs
    return made


def learning(targets, title: str = "Pin the image before the release") -> dict:
    return {
        "title": title,
        "content": "Upgrading the base image during a release breaks the nightly build.",
        "useful_for": "cutting a release",
        "kind": "gotcha",
        "lifetime": {"durable": True},
        "connections": [
            {"id": t.short_id, "relation": "see_also", "note": f"Read before step {i}."}
            for i, t in enumerate(targets)
        ],
    }


def post_counted(client, body, capture) -> tuple[object, list[str]]:
    with CaptureQueriesContext(connection) as ctx, capture(execute=True):
        response = client.post(ENTRIES, body, format="json")
    return response, [q["sql"] for q in ctx.captured_queries]


@pytest.mark.parametrize("connections", [1, 3, 6])
def test_a_learning_costs_the_same_statements_whatever_its_connections(
    client_rw, targets, connections, django_capture_on_commit_callbacks
):
    client_rw.get(f"{ENTRIES}/{targets[0].short_id}")  # the token's last_used moves once
    body = learning(targets[:connections])
    made, statements = post_counted(client_rw, body, django_capture_on_commit_callbacks)
    assert made.status_code == 201, made.content
    assert len(made.json()["edges"]) == connections
    assert len(statements) == LEARNING_STATEMENTS, "\n".join(s[:120] for s in statements)


def test_a_learning_reads_no_bank_wide_scan(client_rw, targets, django_capture_on_commit_callbacks):
    client_rw.get(f"{ENTRIES}/{targets[0].short_id}")
    made, statements = post_counted(
        client_rw, learning(targets[:3]), django_capture_on_commit_callbacks
    )
    assert made.status_code == 201
    inserts = [s for s in statements if s.startswith('INSERT INTO "graph_edge" ')]
    assert len(inserts) == 1  # three edges, one statement
    locks = [s for s in statements if "FOR SHARE" in s]
    assert len(locks) == 1 and "short_id = ANY" in locks[0]  # targets read and locked at once
    # The same-text check filters on the indexed key, without the model's bank-slug ordering.
    same_text = [s for s in statements if "regexp_replace" in s]
    assert len(same_text) == 1 and 'INNER JOIN "kb_bank"' not in same_text[0]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_learning_served_for_real_costs_17_statements(bank, token_client, hashing_embedder):
    """Its own transaction and the post-commit event's subscribers, as a web request runs."""
    made = [
        create_entry(
            bank,
            clean_entry_data(
                bank,
                {"title": f"Target {i}", "content": f"Step {i}.", "lifetime": {"durable": True}},
            ),
        )
        for i in range(3)
    ]
    embed_entries(Entry.objects.filter(bank=bank))
    client = token_client(bank)
    client.get(f"{ENTRIES}/{made[0].short_id}")
    with CaptureQueriesContext(connection) as ctx:
        answer = client.post(ENTRIES, learning(made), format="json")
    assert answer.status_code == 201, answer.content
    statements = [q["sql"] for q in ctx.captured_queries]
    assert len(statements) == SERVED_STATEMENTS, "\n".join(s[:120] for s in statements)


def test_connections_are_stamped_with_the_create_operation(client_rw, targets):
    made = client_rw.post(ENTRIES, learning(targets[:3]), format="json")
    assert made.status_code == 201, made.content
    entry = Entry.objects.get(short_id=made.json()["id"])
    edges = list(Edge.objects.filter(from_entry=entry).order_by("id"))
    op = Operation.objects.get(details__entry=entry.short_id)
    assert [e.to_entry_id for e in edges] == [t.pk for t in targets[:3]]
    for edge in edges:
        rows = list(Edge.history.filter(id=edge.pk))
        assert [(r.history_type, r.operation_id) for r in rows] == [("+", op.pk)]
        assert edge.actor == op.actor and edge.note.startswith("Read before step")
    assert entry.history.get().operation_id == op.pk


def test_a_repeated_connection_is_refused_at_its_index(client_rw, targets):
    body = learning([targets[0], targets[1], targets[0]])
    refused = client_rw.post(ENTRIES, body, format="json")
    assert refused.status_code == 409, refused.content
    error = refused.json()["error"]
    assert error["code"] == "duplicate_edge"
    assert error["message"].startswith("connections[2]: The edge ")
    assert error["fields"] == {
        "connections": error["message"].replace("connections[2]: ", "Item 2: ")
    }
    assert not Entry.objects.filter(title=body["title"]).exists()
    assert not Edge.objects.exists()


def create_with(bank, connections: list) -> Entry:
    """The service with the graph's linker (valid times are not in the REST body's schema)."""
    data = clean_entry_data(bank, {**learning([]), "connections": connections})
    return create_entry(bank, data, linker=link_connections, allow_duplicate=True)


def test_the_same_relation_again_after_the_first_ends_is_two_edges(bank, targets):
    item = {"id": targets[0].short_id, "relation": "see_also", "note": "Before step one."}
    entry = create_with(
        bank, [dict(item, valid_to="2026-01-01"), dict(item, valid_from="2026-01-01")]
    )
    assert Edge.objects.filter(from_entry=entry, to_entry=targets[0]).count() == 2


def test_an_overlap_with_an_ended_connection_is_refused_as_history(bank, targets):
    item = {"id": targets[0].short_id, "relation": "see_also", "note": "Before step one."}
    ended = dict(item, valid_from="2025-01-01", valid_to="2025-06-01")
    overlapping = dict(item, valid_from="2025-03-01", valid_to="2025-04-01")
    with pytest.raises(Conflict) as refused:
        create_with(bank, [ended, overlapping])
    assert refused.value.code == "edge_overlaps_history"
    assert refused.value.message.startswith("connections[1]: ")
    assert not Edge.objects.exists()


def test_each_bad_connection_answers_as_its_link_would(client_rw, targets):
    cases = [
        ({"id": "ffffffff", "relation": "see_also"}, 400, "entry_outside_bank"),
        ({"id": targets[2].short_id, "relation": "no_such_relation"}, 400, None),
        ({"id": 7, "relation": "see_also"}, 400, "invalid_edge"),
        (
            {"id": targets[2].short_id, "relation": "see_also", "note": targets[2].content},
            400,
            "note_repeats_target",
        ),
    ]
    for item, status, code in cases:
        body = learning([targets[0], targets[1]])
        body["connections"].append(item)
        answer = client_rw.post(ENTRIES, body, format="json")
        assert answer.status_code == status, (item, answer.content)
        error = answer.json()["error"]
        if code:
            assert error["code"] == code, (item, error)
        assert "connections" in error["fields"], error
        assert "connections[2]" in error["message"], error
    assert not Edge.objects.exists()
    assert not Entry.objects.filter(title=learning([])["title"]).exists()


def test_a_connection_to_a_merged_id_or_a_key_lands_on_the_live_entry(
    bank, client_rw, targets, make_entry
):
    keyed = make_entry("Keyed target", key="service:reports", content="The reports service.")
    merge_entries(bank, targets[3].short_id, targets[4].short_id, "same checklist step")
    body = learning([targets[0]])
    body["connections"] += [
        {"id": targets[4].short_id, "relation": "see_also", "note": "The merged one."},
        {"id": "service:reports", "relation": "see_also", "note": "By its key."},
    ]
    made = client_rw.post(ENTRIES, body, format="json")
    assert made.status_code == 201, made.content
    linked = {e["entry"]["id"] for e in made.json()["edges"]}
    assert linked == {targets[0].short_id, targets[3].short_id, keyed.short_id}
