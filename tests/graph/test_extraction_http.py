"""The chat-completions extractor against a loopback stand-in server speaking the protocol:
the prompt, the gleaning pass, and failures (timeouts, 429, malformed answers) that leave
nothing half-written."""

from __future__ import annotations

import json

import pytest

from graph.ingest.extract.run import extract_edges
from graph.ingest.extract.standin import ChatStandIn, Reply, chat_reply
from graph.models import EdgeProposal, ExtractionState

pytestmark = pytest.mark.django_db

FIRST = "The Sterile Supply Unit is owned by the Theatres Directorate."
SECOND = "Instrument Tracking requires the Sterile Supply Unit."


@pytest.fixture
def llm_settings(settings):
    settings.KB_EXTRACT_LLM_MODEL = "stand-in-model"
    settings.KB_EXTRACT_LLM_KEY = "sk-test"
    settings.KB_EXTRACT_LLM_TIMEOUT = 0.5
    settings.KB_EXTRACT_LLM_ATTEMPTS = 3
    settings.KB_EXTRACT_LLM_BACKOFF = 0.01
    settings.KB_EXTRACT_LLM_MAX_WAIT = 0.05
    return settings


@pytest.fixture
def theatre(bank, make_entry):
    e = {
        "ssu": make_entry("Sterile Supply Unit", kind="team", content="Cleans instruments."),
        "theatres": make_entry("Theatres Directorate", kind="team", content="Runs theatres."),
        "tracking": make_entry("Instrument Tracking", kind="service", content="Tracks trays."),
    }
    e["doc"] = make_entry("Theatre logistics", kind="fact", content=f"{FIRST} {SECOND}")
    return e


def rel(a, t, b, span):
    return {"from": a, "type": t, "to": b, "evidence": span}


def answer(*items) -> str:
    return json.dumps({"relationships": list(items)})


OWNED = rel("Sterile Supply Unit", "owned_by", "Theatres Directorate", FIRST)
REQUIRES = rel("Instrument Tracking", "requires", "Sterile Supply Unit", SECOND)


def scripted(*replies):
    """A responder answering with ``replies`` in order (the last one repeats)."""
    queue = list(replies)

    def respond(body):
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return respond


def run_llm(bank, server, settings, entries):
    settings.KB_EXTRACT_LLM_URL = server.url
    return extract_edges(bank, entries=entries, extractor="llm")


def test_prompt_lists_the_vocabulary_and_the_rules_and_gleaning_adds_what_was_missed(
    bank, theatre, llm_settings
):
    with ChatStandIn(scripted(chat_reply(answer(OWNED)), chat_reply(answer(REQUIRES)))) as server:
        run = run_llm(bank, server, llm_settings, [theatre["doc"].short_id])

    assert len(server.requests) == 2
    first, glean = (r["body"] for r in server.requests)
    assert server.requests[0]["path"] == "/v1/chat/completions"
    assert server.requests[0]["auth"] == "Bearer sk-test"
    assert first["model"] == "stand-in-model" and first["temperature"] == 0
    system = first["messages"][0]["content"]
    for needle in ("- requires:", "- owned_by:", "Do not infer.", "Do not normalise", "verbatim"):
        assert needle in system
    assert "- other:" not in system  # "other" needs a curator's label, never extracted
    assert FIRST in first["messages"][1]["content"]
    # The gleaning pass sees its own first answer and is asked only for what it missed.
    assert [m["role"] for m in glean["messages"]] == ["system", "user", "assistant", "user"]
    assert glean["messages"][2]["content"] == answer(OWNED)
    assert "missed" in glean["messages"][3]["content"]

    assert run.queued == 2 and run.failed == []
    got = {
        (p.from_entry_id, p.type.name, p.to_entry_id, p.extractor): p
        for p in EdgeProposal.objects.filter(bank=bank).select_related("type")
    }
    owned = (theatre["ssu"].pk, "owned_by", theatre["theatres"].pk, "llm")
    gleaned = (theatre["tracking"].pk, "requires", theatre["ssu"].pk, "llm")
    assert set(got) == {owned, gleaned}
    # The extractor's own doubt (prior 0.8, gleaned 0.7) is one feature of the confidence.
    doubt = {k: p.confidence_basis["features"]["extractor_doubt"] for k, p in got.items()}
    assert doubt[gleaned] > doubt[owned] > 0


def test_model_output_is_validated_like_any_other(bank, theatre, llm_settings):
    bad = [
        rel("Sterile Supply Unit", "owned_by", "Theatres Directorate", "Owned by theatres."),
        rel("Sterile Supply Unit", "is_run_by", "Theatres Directorate", FIRST),
        rel("SSU", "owned_by", "Theatres Directorate", FIRST),  # normalised: not in the span
        {"from": "Sterile Supply Unit", "type": "owned_by"},  # no object, no span
    ]
    fenced = "```json\n" + answer(*bad, OWNED) + "\n```"
    with ChatStandIn(scripted(chat_reply(fenced), chat_reply(answer(OWNED)))) as server:
        run = run_llm(bank, server, llm_settings, [theatre["doc"].short_id])
    assert run.queued == 1
    assert run.dropped == {
        "span_not_verbatim": 1,
        "relation_not_in_vocabulary": 1,
        "end_not_in_span": 1,
    }
    assert EdgeProposal.objects.filter(bank=bank).count() == 1


@pytest.mark.parametrize(
    "failure",
    [
        Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}),
        Reply(503, {"error": {"message": "overloaded"}}),
        chat_reply("this is not JSON at all"),
        Reply(200, "<html>gateway</html>"),
        Reply(200, {"choices": []}),
    ],
    ids=["429", "503", "content-not-json", "body-not-json", "no-choices"],
)
def test_transient_failures_are_retried(bank, theatre, llm_settings, failure):
    good = [chat_reply(answer(OWNED)), chat_reply(answer())]
    with ChatStandIn(scripted(failure, *good)) as server:
        run = run_llm(bank, server, llm_settings, [theatre["doc"].short_id])
    assert len(server.requests) == 3  # the failure, then both passes
    assert run.queued == 1 and run.failed == []


def test_timeouts_are_retried_then_the_entry_fails_with_nothing_queued(bank, theatre, llm_settings):
    slow = Reply(200, json.dumps({"choices": []}), delay=1.5)  # longer than the 0.5 s timeout
    with ChatStandIn(scripted(slow)) as server:
        run = run_llm(bank, server, llm_settings, [theatre["doc"].short_id])
    assert len(server.requests) == 3  # KB_EXTRACT_LLM_ATTEMPTS
    assert run.queued == 0 and run.failed[0]["entry"] == theatre["doc"].short_id
    assert "after 3 attempts" in run.failed[0]["message"]
    assert not EdgeProposal.objects.filter(bank=bank).exists()
    state = ExtractionState.objects.get(bank=bank, extractor="llm")
    assert state.pending == [theatre["doc"].pk]  # kept for the next run


def test_a_failed_gleaning_pass_discards_the_first_pass_too(bank, theatre, llm_settings):
    replies = [chat_reply(answer(OWNED)), chat_reply("{broken")]
    with ChatStandIn(scripted(*replies)) as server:
        run = run_llm(bank, server, llm_settings, [theatre["doc"].short_id])
    assert len(server.requests) == 4  # first pass, then three malformed gleaning answers
    assert run.queued == 0 and len(run.failed) == 1
    assert not EdgeProposal.objects.filter(bank=bank).exists()


def test_persistent_rate_limit_stops_the_run_and_the_next_run_resumes(bank, theatre, llm_settings):
    limited = Reply(429, {"error": {"message": "quota"}}, {"Retry-After": "3600"})
    with ChatStandIn(scripted(limited)) as server:
        run = run_llm(bank, server, llm_settings, None)  # incremental: all four entries
    # Retry-After is capped (KB_EXTRACT_LLM_MAX_WAIT): three attempts, then the run stops
    # instead of hammering the endpoint for the remaining entries.
    assert len(server.requests) == 3
    assert run.queued == 0 and run.left_for_next_run == 4
    state = ExtractionState.objects.get(bank=bank, extractor="llm")
    assert sorted(state.pending) == sorted(e.pk for e in theatre.values())

    def healthy(body):
        doc = body["messages"][1]["content"]
        if FIRST in doc and len(body["messages"]) == 2:
            return chat_reply(answer(OWNED, REQUIRES))
        return chat_reply(answer())

    with ChatStandIn(healthy) as server:
        again = run_llm(bank, server, llm_settings, None)
    assert again.entries == 4 and again.queued == 2 and again.failed == []
    state.refresh_from_db()
    assert state.pending == []


def test_a_refused_request_is_not_retried(bank, theatre, llm_settings):
    with ChatStandIn(scripted(Reply(401, {"error": {"message": "bad key"}}))) as server:
        run = run_llm(bank, server, llm_settings, [theatre["doc"].short_id])
    assert len(server.requests) == 1
    assert "HTTP 401" in run.failed[0]["message"] and run.queued == 0


def test_unconfigured_endpoint_is_a_clear_error(bank, theatre, settings):
    from kb.errors import KbError

    settings.KB_EXTRACT_LLM_URL = ""
    with pytest.raises(KbError) as exc:
        extract_edges(bank, entries=[theatre["doc"].short_id], extractor="llm")
    assert exc.value.code == "extractor_not_configured"
