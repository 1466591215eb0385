"""Both clocks end to end (``004_*`` 12.5–12.6): valid time and transaction time in
traversals, the late correction that creates three answers, an entry as believed at a past
instant, what changed between two instants, and the corrections endpoint."""

from __future__ import annotations

import datetime as dt

import pytest

from graph.curation.merge import merge_entries
from graph.edges.links import correct_edges, link, unlink
from graph.models import Alias, Edge
from graph.resolution.aliases import add_alias
from graph.retrieval.history import changed_between, entry_as_of
from graph.traversal.questions import owners_of
from graph.traversal.walk import Step, traverse
from kb.errors import InvalidInput, NotFound
from kb.models import Entry, Operation
from kb.services.entries import clean_entry_data, create_entry, update_entry

pytestmark = pytest.mark.django_db

UTC = dt.UTC


def at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


def url(slug: str, *parts: str) -> str:
    return "/api/v1/banks/" + "/".join([slug, *parts])


@pytest.fixture
def entry(bank):
    def make(title: str, kind: str = "fact") -> Entry:
        data = {"title": title, "content": f"About {title}.", "kind": kind}
        return create_entry(bank, clean_entry_data(bank, {**data, "lifetime": {"durable": True}}))

    return make


def edge_between(bank, a: Entry, b: Entry, relation: str = "see_also", **fields) -> Edge:
    return link(bank, {"from": a.short_id, "to": b.short_id, "relation": relation, **fields})


def reached(result) -> list[str]:
    return [result.nodes[nodes[-1]].title for nodes, _ in result.paths]


# --- valid time and transaction time inside the walk --------------------------------------------


def test_valid_time_is_half_open(bank, entry):
    a, b = entry("A"), entry("B")
    edge_between(bank, a, b, valid_from="2026-04-01", valid_to="2026-05-01")

    def sees(valid_at: str) -> bool:
        result = traverse(bank, a, [Step(("see_also",))], valid_at=at(valid_at))
        return reached(result) == ["B"]

    assert sees("2026-04-01T00:00:00")  # valid_from is in
    assert sees("2026-04-30T23:59:59")
    assert not sees("2026-05-01T00:00:00")  # valid_to is out
    assert not sees("2026-03-31T23:59:59")
    assert reached(traverse(bank, a, [Step(("see_also",))])) == []  # now: November 2026


def test_transaction_time_is_half_open(bank, entry):
    a, b = entry("A"), entry("B")
    edge = edge_between(bank, a, b)
    unlink(bank, edge.pk, "wrong")
    Edge.objects.filter(pk=edge.pk).update(
        recorded_at=at("2026-06-01T00:00:00"), invalidated_at=at("2026-07-01T00:00:00")
    )

    def believed(as_of: str) -> bool:
        return reached(traverse(bank, a, [Step(("see_also",))], as_of=at(as_of))) == ["B"]

    assert believed("2026-06-01T00:00:00")  # recorded_at is in
    assert believed("2026-06-30T23:59:59")
    assert not believed("2026-07-01T00:00:00")  # invalidated_at is out
    assert not believed("2026-05-31T23:59:59")
    assert reached(traverse(bank, a, [Step(("see_also",))])) == []  # not believed now


def test_both_clocks_in_every_hop_of_the_api(client_rw, bank, entry):
    a, b, c = entry("A"), entry("B"), entry("C")
    edge_between(bank, a, b)
    second = edge_between(bank, b, c, valid_from="2026-04-01")
    Edge.objects.filter(pk=second.pk).update(recorded_at=at("2026-05-03T00:00:00"))
    body = {"start": a.short_id, "relations": ["see_also"], "max_depth": 2}
    now = client_rw.post(url("acme", "traverse"), body, format="json").json()
    assert len(now["paths"]) == 1 and len(now["paths"][0]["nodes"]) == 3
    earlier = client_rw.post(
        url("acme", "traverse"), {**body, "valid_at": "2026-03-01"}, format="json"
    ).json()
    assert [len(p["nodes"]) for p in earlier["paths"]] == [2]  # hop 2 not valid yet
    assert earlier["searched"]["valid_at"].startswith("2026-03-01T00:00:00")
    believed = client_rw.post(
        url("acme", "traverse"), {**body, "as_of": "2026-04-22T12:00:00Z"}, format="json"
    ).json()
    assert believed["paths"] == []  # the first edge was recorded today, after 22 April
    assert believed["searched"]["as_of"] == "2026-04-22T12:00:00+00:00"


# --- 004_* 12.6: the late correction that creates three answers -----------------------------------


@pytest.fixture
def ownership(bank, entry):
    """A0 Analytics recorded 1 March; on 3 May the correction closes A0 and appends
    A1 Analytics valid [−∞, 1 April) and P1 Platform valid [1 April, ∞)."""
    connector = entry("Settlement connector", "service")
    analytics, platform = entry("Analytics", "team"), entry("Platform", "team")
    a0 = edge_between(bank, connector, analytics, "owned_by", note="Service catalogue.")
    Edge.objects.filter(pk=a0.pk).update(recorded_at=at("2026-03-01T00:00:00"))
    correction = correct_edges(
        bank,
        close=[a0.pk],
        append=[
            {
                "from": connector.short_id,
                "to": analytics.short_id,
                "relation": "owned_by",
                "valid_to": "2026-04-01",
                "evidence": {"text": "Transfer agreed in the 1 April meeting."},
            },
            {
                "from": connector.short_id,
                "to": platform.short_id,
                "relation": "owned_by",
                "valid_from": "2026-04-01",
                "evidence": {"text": "Transfer agreed in the 1 April meeting."},
            },
        ],
        reason="Catalogue updated on 3 May: the transfer took effect on 1 April.",
    )
    may3 = at("2026-05-03T09:00:00")
    Edge.objects.filter(pk=a0.pk).update(invalidated_at=may3)
    Edge.objects.filter(pk__in=correction["appended"]).update(recorded_at=may3)
    return {"connector": connector, "a0": a0, "correction": correction}


def test_three_answers_after_a_late_correction(bank, ownership):
    connector = ownership["connector"]
    # Who owns the connector now? Platform.
    assert reached(owners_of(bank, connector)) == ["Platform"]
    # Who actually owned it on 22 April? Platform: the transfer was already valid.
    assert reached(owners_of(bank, connector, valid_at=at("2026-04-22T12:00:00"))) == ["Platform"]
    # Who did we believe owned it on 22 April? Analytics: the correction was not recorded yet.
    believed = owners_of(
        bank, connector, valid_at=at("2026-04-22T12:00:00"), as_of=at("2026-04-22T12:00:00")
    )
    assert reached(believed) == ["Analytics"]
    assert list(believed.edges) == [ownership["a0"].pk]  # the old belief, kept as history
    # After the correction, the corrected history says Analytics owned it in March.
    march = owners_of(bank, connector, valid_at=at("2026-03-15T00:00:00"))
    assert reached(march) == ["Analytics"] and ownership["a0"].pk not in march.edges
    correction = ownership["correction"]
    assert correction["closed"] == [ownership["a0"].pk] and len(correction["appended"]) == 2
    assert Operation.objects.get(pk=correction["operation"]).details["correction"] is True


def test_three_answers_through_the_api(client_rw, bank, ownership):
    owners = url("acme", "entities", ownership["connector"].short_id, "owners")

    def answer(query: str = "") -> list[str]:
        response = client_rw.get(owners + query)
        assert response.status_code == 200, response.content
        return [o["title"] for o in response.json()["owners"]]

    assert answer() == ["Platform"]
    assert answer("?valid_at=2026-04-22") == ["Platform"]
    assert answer("?valid_at=2026-04-22&as_of=2026-04-22T12:00:00Z") == ["Analytics"]
    # '+' in a query string arrives as a space; the zone is still understood.
    assert answer("?valid_at=2026-04-22&as_of=2026-04-22T12:00:00+00:00") == ["Analytics"]
    response = client_rw.get(owners + "?as_of=2026-04-22T12:00:00")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_time"


def test_changed_between_reports_both_clocks(bank, ownership):
    connector = ownership["connector"]
    report = changed_between(bank, connector, at("2026-05-01T00:00:00"), at("2026-05-10T00:00:00"))
    changes = [
        (c["change"], c["entry"]["title"], c["valid_from"], c["valid_to"])
        for c in report.edge_changes
    ]
    assert sorted(changes, key=str) == sorted(
        [
            ("invalidated", "Analytics", None, None),
            ("recorded", "Analytics", None, "2026-04-01T00:00:00+00:00"),
            ("recorded", "Platform", "2026-04-01T00:00:00+00:00", None),
        ],
        key=str,
    )
    closed = next(c for c in report.edge_changes if c["change"] == "invalidated")
    assert closed["reason"].startswith("corrected:") and closed["at"].startswith("2026-05-03")
    assert closed["operation"] == ownership["correction"]["operation"]
    appended = [c for c in report.edge_changes if c["change"] == "recorded"]
    assert all(c["replaces"] == ownership["a0"].pk for c in appended)
    # Half-open window: [3 May 09:00, …) includes the correction, [… , 3 May 09:00) does not.
    assert len(changed_between(bank, connector, at("2026-05-03T09:00:00")).edge_changes) == 3
    before = changed_between(bank, connector, at("2026-03-02T00:00:00"), at("2026-05-03T09:00:00"))
    assert before.edge_changes == []
    with pytest.raises(InvalidInput):
        changed_between(bank, connector, at("2026-05-10T00:00:00"), at("2026-05-01T00:00:00"))


def test_changed_between_api_and_operations(client_rw, bank, entry):
    a, b = entry("A"), entry("B")
    since = dt.datetime.now(UTC) - dt.timedelta(minutes=1)
    edge = edge_between(bank, a, b, "cites")
    unlink(bank, edge.pk, "cited by mistake")
    response = client_rw.get(
        url("acme", "entities", a.short_id, "changes") + f"?from={since.isoformat()}"
    )
    assert response.status_code == 200, response.content
    data = response.json()
    kinds = {c["change"]: c["operation"] for c in data["edge_changes"]}
    assert set(kinds) == {"recorded", "invalidated"}
    assert Operation.objects.get(pk=kinds["recorded"]).kind == "link"
    assert Operation.objects.get(pk=kinds["invalidated"]).kind == "unlink"
    assert [c["change"] for c in data["entry_changes"]] == ["created"]  # A, a minute ago
    bad = client_rw.get(url("acme", "entities", a.short_id, "changes"))
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_time"


# --- an entry as of a past instant ----------------------------------------------------------------


def _date_history(entry: Entry, *dates: str) -> None:
    """Give the entry's history rows, oldest first, the given dates."""
    history = Entry.history.model.objects.filter(id=entry.pk).order_by("history_date", "history_id")
    for row, when in zip(history, dates, strict=True):
        Entry.history.model.objects.filter(history_id=row.history_id).update(history_date=at(when))


def test_entry_as_of_reads_history_edges_and_aliases(bank, entry):
    svc, team = entry("Reports", "service"), entry("Analytics", "team")
    update_entry(bank, svc, {"title": "Reports service"})
    _date_history(svc, "2026-03-01T00:00:00", "2026-05-03T00:00:00")
    _date_history(team, "2026-03-01T00:00:00")
    owned = edge_between(bank, svc, team, "owned_by")
    unlink(bank, owned.pk, "moved")
    Edge.objects.filter(pk=owned.pk).update(
        recorded_at=at("2026-03-15T00:00:00"), invalidated_at=at("2026-05-03T00:00:00")
    )
    alias = add_alias(bank, svc, "rpt")
    Alias.history.model.objects.filter(id=alias.pk).update(history_date=at("2026-04-01T00:00:00"))

    with pytest.raises(NotFound) as info:
        entry_as_of(bank, svc.short_id, "2026-02-01T00:00:00Z")
    assert info.value.code == "entry_not_found"
    then = entry_as_of(bank, svc.short_id, "2026-04-22T12:00:00Z")
    assert then["title"] == "Reports" and then["id"] == svc.short_id
    assert [(e["relation"], e["direction"], e["entry"]["title"]) for e in then["edges"]] == [
        ("owned_by", "out", "Analytics")
    ]
    assert then["aliases"] == ["rpt"] and then["version"]["change"] == "created"
    early = entry_as_of(bank, svc.short_id, "2026-03-10T00:00:00Z")
    assert early["edges"] == [] and early["aliases"] == []  # edge recorded 15 March
    now = entry_as_of(bank, svc.short_id, dt.datetime.now(UTC))
    assert now["title"] == "Reports service" and now["edges"] == []
    # valid_at separately from as_of: the edge believed on 22 April, asked about 2020.
    assert entry_as_of(bank, svc.short_id, "2026-04-22T12:00:00Z", "2020-01-01")["edges"]


def test_entry_as_of_follows_a_merge_only_after_it(bank, entry):
    keep, away = entry("Reports service"), entry("Reports svc")
    _date_history(away, "2026-03-01T00:00:00")
    merge_entries(bank, keep.short_id, away.short_id, "duplicate")
    after = entry_as_of(bank, away.short_id, dt.datetime.now(UTC) + dt.timedelta(seconds=1))
    assert after["id"] == keep.short_id and after["merged_from"] == away.short_id
    before = entry_as_of(bank, away.short_id, "2026-04-01T00:00:00Z")
    assert before["id"] == away.short_id and before["status"] == "live"


def test_entry_as_of_api(client_rw, bank, other_bank, entry, token_client):
    svc = entry("Reports")
    _date_history(svc, "2026-03-01T00:00:00")
    path = url("acme", "entries", svc.short_id, "as_of")
    response = client_rw.get(path + "?as_of=2026-04-22T12:00:00+00:00")
    assert response.status_code == 200, response.content
    assert response.json()["title"] == "Reports" and response.json()["as_of"].startswith(
        "2026-04-22"
    )
    for query, status, code in [
        ("", 400, "invalid_time"),
        ("?as_of=2026-04-22T12:00:00", 400, "invalid_time"),
        ("?as_of=2026-02-01T00:00:00Z", 404, "entry_not_found"),
        ("?as_of=2026-04-22T12:00:00Z&colour=1", 400, "invalid_input"),
    ]:
        response = client_rw.get(path + query)
        assert response.status_code == status, (query, response.content)
        assert response.json()["error"]["code"] == code
    theirs = token_client(other_bank)
    response = theirs.get(
        url("globex", "entries", svc.short_id, "as_of") + "?as_of=2026-04-22T00:00:00Z"
    )
    assert response.status_code == 404


# --- the corrections endpoint ---------------------------------------------------------------------


def test_corrections_endpoint(client_rw, bank, token_client, entry):
    connector, analytics, platform = entry("Connector"), entry("Analytics"), entry("Platform")
    old = edge_between(bank, connector, analytics, "owned_by")
    body = {
        "close": [old.pk],
        "append": [
            {
                "from": connector.short_id,
                "to": platform.short_id,
                "relation": "owned_by",
                "valid_from": "2026-04-01",
                "note": "Since the April transfer.",
                "evidence": {"text": "meeting notes"},
            }
        ],
        "reason": "Transfer took effect 1 April.",
    }
    reader = token_client(bank, scopes="read")
    assert reader.post(url("acme", "corrections"), body, format="json").status_code == 403
    response = client_rw.post(url("acme", "corrections"), body, format="json")
    assert response.status_code == 200, response.content
    data = response.json()
    assert set(data) == {"operation", "closed", "appended"} and data["closed"] == [old.pk]
    (new_id,) = data["appended"]
    new = Edge.objects.get(pk=new_id)
    assert (
        new.to_entry_id == platform.pk and new.source == "correction" and new.replaces_id == old.pk
    )
    old.refresh_from_db()
    assert old.invalidated_at is not None  # closed, kept
    again = client_rw.post(url("acme", "corrections"), body, format="json")
    assert again.status_code == 409 and again.json()["error"]["code"] == "edge_closed"
    for bad, status, code in [
        ({**body, "colour": 1}, 400, "invalid_input"),
        ({**body, "close": ["x"]}, 400, "invalid_input"),
        ({**body, "append": "x"}, 400, "invalid_input"),
        ({"close": [], "append": [], "reason": "x"}, 400, "empty_correction"),
        ({"close": [999999], "reason": "x"}, 404, "edge_not_found"),
        ({"close": [new_id]}, 400, "reason_required"),
        (
            {"append": [{**body["append"][0], "relation": "nope"}], "reason": "x"},
            400,
            "unknown_relation",
        ),
    ]:
        response = client_rw.post(url("acme", "corrections"), bad, format="json")
        assert response.status_code == status, (bad, response.content)
        assert response.json()["error"]["code"] == code
    assert Edge.objects.get(pk=new_id).invalidated_at is None  # nothing half-written


def test_entry_as_of_response_is_what_the_entry_detail_view_delegates_to(bank, entry):
    from django.http import QueryDict

    from graph.api.traverse_views import entry_as_of_response
    from kb.api.errors import ApiError

    svc = entry("Reports")
    _date_history(svc, "2026-03-01T00:00:00")
    data = entry_as_of_response(bank, svc.short_id, QueryDict("as_of=2026-04-22T12:00:00+00:00"))
    assert data["title"] == "Reports" and data["as_of"] == "2026-04-22T12:00:00+00:00"
    with pytest.raises(ApiError):
        entry_as_of_response(bank, svc.short_id, QueryDict("as_of=2026-04-22T12:00:00Z&as_of=x"))
