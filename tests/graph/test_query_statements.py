"""POST /query end to end in a pinned number of statements (issue 12 item 4): the token, its
bank and the rate-limit count, the search, the fold's two statements with the entries the
answer shows read between them (after the plan says which), and one statement for usage plus
the query log — whatever the answer holds. A hybrid query (the default) has one more: the
lexical arm, sent before the model runs and read after it (kb.services.search.rank_and_embed),
so PostgreSQL matches the words while the model runs instead of after it."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from graph.models import QueryLog
from kb.models import Entry
from kb.services.embedding import embed_entries
from kb.services.usage import relaxed_commit_cte

pytestmark = pytest.mark.django_db

QUERY_STATEMENTS = 7
# The lexical arm is its own statement so that it can run beside the model (pipeline mode); the
# search statement then scores its ids with the vector arms' (was 7 with the arm inside it).
HYBRID_QUERY_STATEMENTS = QUERY_STATEMENTS + 1


def _labels(captured) -> list[str]:
    out = []
    for q in captured:
        sql = " ".join(q["sql"].split())
        if "kb_agenttoken_banks" in sql and "kb_agenttoken" in sql and "kb_bank" in sql:
            out.append("token+bank")
        elif "kb_tokenratewindow" in sql:
            out.append("rate")
        elif "WITH vc AS" in sql:
            out.append("search")
        elif "WITH ft AS" in sql:
            out.append("lexical")
        elif "WITH qv AS" in sql:
            out.append("neighbours")
        elif "FROM graph_edge ed JOIN graph_edgetype" in sql:
            out.append("edges")
        elif "graph_querylog" in sql and "UPDATE kb_entry" in sql:
            out.append("usage+log")
        elif sql.startswith('SELECT "kb_entry"'):
            out.append("entries")
        else:
            out.append(sql[:60])
    return out


@pytest.fixture
def linked_bank(bank, make_entry, hashing_embedder):
    from graph.edges.links import link

    entries = [make_entry(f"Deploy rollout canary step {i}") for i in range(12)]
    for a, b in zip(entries, entries[1:], strict=False):
        link(bank, {"from": a.short_id, "to": b.short_id, "relation": "see_also", "note": "next"})
    embed_entries(Entry.objects.filter(bank=bank), embedder=hashing_embedder)
    return bank


def test_post_query_takes_a_fixed_number_of_statements(linked_bank, token_client, settings):
    settings.KB_RATE_LIMIT_PER_MINUTE = 600  # counted, as in production
    client = token_client(linked_bank, scopes="read")
    url = f"/api/v1/banks/{linked_bank.slug}/query"
    assert client.post(url, {"query": "warm up"}, format="json").status_code == 200
    for body in (
        {"query": "deploy rollout canary"},
        {"query": "canary step", "limit": 3, "neighbors": 5, "budget_tokens": 8000},
        {"query": "rollout", "pool": 40, "limit": 12, "expand": ["nothing"], "compact": True},
        {"query": "deploy canary", "lexical": False},
    ):
        with CaptureQueriesContext(connection) as ctx:
            response = client.post(url, body, format="json")
        assert response.status_code == 200, response.content
        assert response.json()["results"], (body, response.json())
        labels = _labels(ctx.captured_queries)
        lexical = body.get("lexical", True)
        assert labels == [
            "token+bank",
            "rate",
            *(["lexical"] if lexical else []),
            "search",
            "edges",
            "entries",
            "neighbours",
            "usage+log",
        ], labels
        expected = HYBRID_QUERY_STATEMENTS if lexical else QUERY_STATEMENTS
        assert len(ctx.captured_queries) == expected


def test_one_statement_bumps_usage_of_returned_results_and_logs(linked_bank, token_client):
    client = token_client(linked_bank, scopes="read")
    before = dict(Entry.objects.filter(bank=linked_bank).values_list("short_id", "usage_count"))
    response = client.post(
        f"/api/v1/banks/{linked_bank.slug}/query",
        {"query": "deploy", "limit": 3, "budget_tokens": 8000},
        format="json",
    )
    body = response.json()
    returned = {r["id"] for r in body["results"]}
    pointed = {p["id"] for r in body["results"] for p in r["related"] + r["neighbors"]}
    after = dict(Entry.objects.filter(bank=linked_bank).values_list("short_id", "usage_count"))
    assert returned and {k for k in after if after[k] != before[k]} == returned
    assert all(after[k] == before[k] + 1 for k in returned)
    assert all(after[k] == before[k] for k in pointed - returned)
    log = QueryLog.objects.get(bank=linked_bank, query="deploy")
    assert log.result_ids == [r["id"] for r in body["results"]]
    assert log.neighbor_ids == [p["id"] for r in body["results"] for p in r["neighbors"]]
    assert log.params["limit"] == 3 and log.actor == "agent:test-agent"
    assert Entry.objects.filter(short_id__in=returned, last_used_at__isnull=False).count() == len(
        returned
    )


def test_a_token_without_the_bank_gets_404_in_two_statements(bank, other_bank, token_client):
    client = token_client(other_bank, scopes="read")
    with CaptureQueriesContext(connection) as ctx:
        response = client.post(f"/api/v1/banks/{bank.slug}/query", {"query": "x"}, format="json")
    assert response.status_code == 404 and response.json()["error"]["code"] == "bank_not_found"
    # the token+bank read finds no row, then the token alone (no third read in bank_for)
    reads = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith("SELECT")]
    assert len(reads) == 2 and "kb_agenttoken_banks" in reads[0], reads
    missing = client.post("/api/v1/banks/nope/query", {"query": "x"}, format="json")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "bank_not_found"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_counters_commit_without_waiting_only_when_on_their_own(bank, token_client):
    assert "synchronous_commit" in relaxed_commit_cte()
    with transaction.atomic():
        assert "synchronous_commit" not in relaxed_commit_cte()
        with connection.cursor() as cursor:
            cursor.execute(f"WITH {relaxed_commit_cte()} SELECT setting FROM relaxed")
            cursor.execute("SHOW synchronous_commit")
            assert cursor.fetchone()[0] == "on"  # an enclosing transaction keeps its commit
    # On its own (autocommit), the whole request path works and writes what it must.
    client = token_client(bank, scopes="read")
    assert (
        client.post(f"/api/v1/banks/{bank.slug}/query", {"query": "x"}, format="json").status_code
        == 200
    )
    assert QueryLog.objects.filter(bank=bank, query="x").count() == 1
