"""The context bundle (API.md "Context bundle"): sections, budget, truncation, determinism."""

from __future__ import annotations

import pytest

from graph.retrieval.context import build_context
from graph.retrieval.tokens import TokenCounter, count_tokens
from kb.errors import InvalidInput
from kb.services import claims
from workflows.models import Finding

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene(bank, make_entry, linked, hashing_embedder):
    login = make_entry(
        "Log in to production with Playwright using the lk_csrf cookie",
        summary="Read the CSRF token from the lk_csrf cookie.",
        useful_for="Use when a scripted production login answers 403.",
        content="In web/e2e/login.ts read document.cookie for lk_csrf. " * 30,
        kind="recipe",
    )
    cause = make_entry(
        "Login 403 is a duplicated CSRF meta tag",
        summary="The gateway duplicates the meta tag.",
        kind="gotcha",
    )
    linked(login, cause, "cites", note="Explains why the fixture avoids the DOM meta tag.")
    anchored = make_entry(
        "Middleware order in the login chain",
        summary="The CSRF middleware must run after the session middleware.",
        anchors={"files": ["web/e2e/login.ts"], "symbols": ["buildChain"]},
    )
    process = make_entry("Release process", kind="process")
    Finding.objects.create(
        bank=bank,
        process=process,
        rule="unowned_step",
        fingerprint="f1",
        entries=[anchored.short_id],
        message="Nobody owns this step.",
    )
    Finding.objects.create(
        bank=bank,
        process=process,
        rule="dead_end",
        fingerprint="f2",
        entries=[anchored.short_id],
        message="Closed already.",
        status="resolved",
    )
    claims.claim(bank, "web/e2e/login.ts", "agent:alice", note="rewriting the fixture")
    claims.claim(bank, anchored.short_id, "agent:bob")
    claims.claim(bank, "something unrelated", "agent:carol")
    return {"login": login, "cause": cause, "anchored": anchored}


BODY = {
    "task": "fix the login 403 on production with playwright",
    "files": ["web/e2e/login.ts"],
    "symbols": [],
    "budget_tokens": 1500,
}


def test_bundle_packs_every_section(bank, scene):
    bundle = build_context(bank, BODY)
    text = bundle.text
    assert bundle.tokens == count_tokens(text) <= 1500
    assert "agent:alice" in text and "agent:bob" in text and "agent:carol" not in text
    assert "Nobody owns this step." in text and "Closed already." not in text
    assert scene["login"].short_id in bundle.entries
    assert scene["anchored"].short_id in bundle.entries
    assert "Explains why the fixture avoids the DOM meta tag." in text  # the pointer's note
    assert "Anchored to: `web/e2e/login.ts`" in text
    assert bundle.entries.count(scene["anchored"].short_id) == 1  # never shown twice
    assert bundle.truncated is False


def test_small_budget_truncates_and_never_exceeds(bank, scene):
    full = build_context(bank, BODY)
    for budget in (32, 60, 120, 250, full.tokens - 1):
        bundle = build_context(bank, {**BODY, "budget_tokens": budget})
        assert bundle.tokens <= budget
        assert bundle.tokens == count_tokens(bundle.text)
        assert bundle.truncated is True
    assert build_context(bank, {**BODY, "budget_tokens": full.tokens}).truncated is False


def test_long_content_falls_back_to_the_compact_block(bank, scene):
    full = build_context(bank, BODY)
    assert "lk_csrf. In web/e2e" in full.text
    tight = build_context(bank, {**BODY, "budget_tokens": full.tokens - 100})
    assert scene["login"].short_id in tight.entries  # kept, without its content
    assert "lk_csrf. In web/e2e" not in tight.text
    assert tight.truncated is True


def test_same_state_same_bundle(bank, scene):
    assert build_context(bank, BODY) == build_context(bank, BODY)


def test_one_counter_counts_characters_and_is_injectable(bank, scene):
    assert count_tokens("hello world") == 3  # 11 characters, 4 a token, rounded up
    assert count_tokens("") == 0
    coarse = build_context(bank, BODY, counter=TokenCounter(chars_per_token=8))
    fine = build_context(bank, BODY)
    assert coarse.tokens == TokenCounter(chars_per_token=8).count(coarse.text)
    assert coarse.tokens < fine.tokens


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"task": ""},
        {"task": 3},
        {"task": "x", "budget_tokens": 0},
        {"task": "x", "budget_tokens": "100"},
        {"task": "x", "files": "a.py"},
        {"task": "x", "extra": 1},
    ],
)
def test_bad_bodies_are_400(bank, body):
    with pytest.raises(InvalidInput):
        build_context(bank, body)


def test_rest_endpoint(bank, other_bank, scene, token_client):
    reader = token_client(bank, scopes="read")
    response = reader.post(f"/api/v1/banks/{bank.slug}/context", BODY, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert set(body) == {"text", "tokens", "entries", "truncated"}
    assert body["tokens"] <= BODY["budget_tokens"]
    bad = reader.post(f"/api/v1/banks/{bank.slug}/context", {"task": 1}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_input"
    stranger = token_client(other_bank)
    missing = stranger.post(f"/api/v1/banks/{bank.slug}/context", BODY, format="json")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "bank_not_found"


def test_bundle_reads_the_answer_whole_not_cut_to_the_query_default(
    bank, make_entry, hashing_embedder
):
    """The bundle packs to its own budget: the query's default budget (limit × 250 tokens)
    would have cut these contents to a head, or emptied them."""
    entries = [
        make_entry(
            f"Login retry gotcha number {i}",
            content=f"Step{i} " + "playwright login retry detail " * 120 + f"TAIL{i}",
        )
        for i in range(6)
    ]
    bundle = build_context(bank, {"task": "playwright login retry", "budget_tokens": 20_000})
    assert {e.short_id for e in entries} <= set(bundle.entries)
    for e in entries:
        # the bundle's own cut (700 characters) of each content, not the query's 280-char head
        block = bundle.text.split(f"[{e.short_id}]")[1].split("\n### ")[0]
        assert len(block) > 650, e.title
