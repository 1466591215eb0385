"""One learning, one forward pass: the guard, the duplicate check, the entry's three vectors and
the write feedback all read it (``kb.services.embedding.one_forward_pass``). It runs in three
stages, one model call each, in the order the write reads them (issue 24, fifth round): the
content text, the guard's text, the other two search texts; no text is embedded twice."""

from __future__ import annotations

import numpy as np
import pytest

from graph.models import Edge
from kb.models import Entry, EntryEmbedding
from kb.services import guard
from kb.services.embedding import (
    DIMENSIONS,
    MiniLMEmbedder,
    dimension_texts,
    embed_entries,
    get_embedder,
)

pytestmark = [pytest.mark.django_db, pytest.mark.model]

ENTRIES = "/api/v1/banks/acme/entries"


@pytest.fixture
def model_calls(monkeypatch):
    """Every call of the real model's embed, with its texts."""
    calls: list[list[str]] = []
    original = MiniLMEmbedder.embed

    def counting(self, texts):
        calls.append(list(texts))
        return original(self, texts)

    monkeypatch.setattr(MiniLMEmbedder, "embed", counting)
    return calls


@pytest.fixture
def verdicts(monkeypatch):
    """The guard classifier's verdicts (to see that it judged with the embedding)."""
    seen = []
    original = guard.judge

    def spying(text, *args, **kwargs):
        verdict = original(text, *args, **kwargs)
        seen.append(verdict)
        return verdict

    monkeypatch.setattr(guard, "judge", spying)
    return seen


@pytest.fixture
def three_targets(bank, make_entry):
    made = [
        make_entry(
            "Staging database credentials",
            content="Rotate them with the vault job, never by hand: the app caches the password.",
        ),
        make_entry("Vault job schedule", content="The vault job runs at 02:00 UTC."),
        make_entry("On-call rota", content="Pages go to the platform on-call engineer."),
    ]
    embed_entries(Entry.objects.filter(bank=bank))  # stored vectors: the duplicate check runs
    return made


def learning(targets) -> dict:
    return {
        "title": "Rotate staging credentials only after the vault job finished",
        "content": "Rotating the staging database credentials while the nightly vault job "
        "runs leaves the app with a revoked password; wait for the job to finish first.",
        "useful_for": "changing database credentials on staging",
        "systems": ["staging", "vault"],
        "kind": "gotcha",
        "lifetime": {"durable": True},
        "connections": [
            {"id": t.short_id, "relation": "see_also", "note": f"Read before step {i}."}
            for i, t in enumerate(targets)
        ],
    }


def test_a_learning_with_three_connections_runs_the_model_once_in_three_stages(
    client_rw, three_targets, model_calls, verdicts, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        made = client_rw.post(ENTRIES, learning(three_targets), format="json")
    assert made.status_code == 201, made.content
    body = learning(three_targets)
    entry = Entry.objects.get(short_id=made.json()["id"])
    texts = dimension_texts(entry)
    # The content text (the nearest entries wait for it), the guard's, the other two.
    assert model_calls == [
        [texts["content"]],
        [guard.embedded_text(body)],
        [texts["useful_for"], texts["context"]],
    ], [len(c) for c in model_calls]
    assert verdicts and all(v.with_embedding for v in verdicts)  # the guard used the model
    assert Edge.objects.filter(from_entry=entry).count() == 3
    stored = EntryEmbedding.objects.get(entry=entry)
    assert stored.model == get_embedder().name
    expected = get_embedder().embed([texts[d] for d in DIMENSIONS])  # each vector is its own
    for dim, vector in zip(DIMENSIONS, expected, strict=True):
        got = np.asarray(getattr(stored, dim))
        assert float(got @ np.asarray(vector)) >= 0.9999, dim


def test_a_refused_duplicate_runs_only_the_pass(
    client_rw, three_targets, model_calls, django_capture_on_commit_callbacks
):
    body = learning(three_targets)
    body.update(title=three_targets[0].title, content=three_targets[0].content)
    body["connections"] = body["connections"][1:]
    with django_capture_on_commit_callbacks(execute=True):
        refused = client_rw.post(ENTRIES, body, format="json")
    assert refused.status_code == 409, refused.content
    assert refused.json()["error"]["code"] == "duplicate_entry"
    assert len(model_calls) <= 3  # the pass's stages, nothing else (one not yet run is not)
    assert model_calls[0] == [dimension_texts(three_targets[0])["content"]]
    embedded = [text for call in model_calls for text in call]
    assert len(embedded) == len(set(embedded))  # no text twice
    assert not Entry.objects.filter(title=body["title"]).exclude(pk=three_targets[0].pk).exists()


def test_a_service_write_outside_a_pass_embeds_after_commit(
    bank, make_entry, model_calls, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        entry = make_entry("Outside any forward pass", content="Embedded by the task.")
    assert not EntryEmbedding.objects.filter(entry=entry).exists()
    assert callbacks and model_calls == []
    for callback in callbacks:
        callback()
    assert EntryEmbedding.objects.filter(entry=entry).exists()
    assert len(model_calls) == 1
