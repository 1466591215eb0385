"""A learning's write overlaps its model pass (issue 24): the entry and its connections are
written while the model runs, the checks that read the vectors come after, and the answer is
rendered from the rows the write holds. What a client sees must not move: the answer is the
entry as a GET reads it, and a body with several faults answers the fault the checks in their
order (the guard, the entry's values, duplicates, the connections) answer first."""

from __future__ import annotations

import pytest

from graph.actions.entries import WithGraph
from graph.curation.merge import merge_entries
from graph.edges.connections import link_connections
from graph.models import Edge
from kb.models import Entry
from kb.services.embedding import embed_entries
from kb.services.entries import clean_entry_data, create_entry
from kb.services.guard import classifier_reasons, rule_reasons

pytestmark = pytest.mark.django_db

ENTRIES = "/api/v1/banks/acme/entries"
# Refused by the guard's classifier alone (no hard rule fires; asserted below).
STATUS_REPORT = "Deployed v2.3.1 to staging, smoke tests passed, waiting for QA."
FEEDBACK_KEYS = {"warnings", "similar"}


@pytest.fixture
def targets(bank, make_entry):
    made = [
        make_entry(f"Release step {i}", content=f"Step {i} of the release checklist, in order.")
        for i in range(5)
    ]
    embed_entries(Entry.objects.filter(bank=bank))
    return made


def learning(targets, **fields) -> dict:
    body = {
        "title": "Pin the base image before a release",
        "summary": "Unpinned images break the nightly build.",
        "content": "Upgrading the base image during a release breaks the nightly build: pin it "
        "and upgrade it on its own day.",
        "useful_for": "cutting a release",
        "systems": ["ci", "build image"],
        "tasks": ["release"],
        "kind": "gotcha",
        "metadata": {"zeta": 1, "alpha": {"b": [1, 2.5, "x"], "a": None}, "mid": "text"},
        "anchors": {"files": ["ci/image.Dockerfile"], "symbols": ["build_image"]},
        "lifetime": {"expires_at": "2031-05-01"},
        "connections": [
            {"id": t.short_id, "relation": "see_also", "note": f"Read before step {i}."}
            for i, t in enumerate(targets)
        ],
    }
    body.update(fields)
    return body


def test_the_answer_is_the_entry_as_read_after_the_write(bank, client_rw, targets, make_entry):
    keyed = make_entry("Keyed target", key="service:reports", content="The reports service.")
    merge_entries(bank, targets[3].short_id, targets[4].short_id, "same checklist step")
    body = learning(targets[:2])
    body["connections"] += [
        {"id": targets[4].short_id, "relation": "part_of", "note": "The merged one."},
        {"id": "service:reports", "relation": "cites", "note": "By its key."},
    ]
    made = client_rw.post(ENTRIES, body, format="json")
    assert made.status_code == 201, made.content
    answer = made.json()
    read = client_rw.get(f"{ENTRIES}/{answer['id']}").json()
    assert {k: v for k, v in answer.items() if k not in FEEDBACK_KEYS} == read
    assert [e["entry"]["id"] for e in answer["edges"]] == [
        targets[0].short_id,
        targets[1].short_id,
        targets[3].short_id,  # the merged id's survivor
        keyed.short_id,
    ]
    assert answer["metadata"] == body["metadata"] and answer["lifetime"] == body["lifetime"]


def test_rendering_a_new_entry_from_its_rows_shows_only_its_current_edges(bank, targets):
    item = {"id": targets[0].short_id, "relation": "see_also", "note": "Before step one."}
    ended = dict(item, valid_from="2025-01-01", valid_to="2025-06-01")
    made = []

    def linker(bank, entry, connections):
        made.extend(link_connections(bank, entry, connections))

    data = clean_entry_data(
        bank, {**learning([]), "connections": [ended, dict(item, valid_from="2025-06-01")]}
    )
    entry = create_entry(bank, data, linker=linker, allow_duplicate=True)
    assert len(made) == 2 and Edge.objects.filter(from_entry=entry).count() == 2
    from_rows = WithGraph().render_entry(entry, new_edges=made)
    read = WithGraph().render_entry(Entry.objects.get(pk=entry.pk))
    assert from_rows == read
    assert [e["edge_id"] for e in read["edges"]] == [made[1].pk]  # the ended one is history


def test_a_guard_refusal_answers_before_a_bad_connection(client_rw, targets):
    assert not rule_reasons({"content": STATUS_REPORT})
    assert classifier_reasons({"title": "Status", "content": STATUS_REPORT})
    body = learning(targets[:2], title="Status", summary="", content=STATUS_REPORT)
    body["connections"].append({"id": "ffffffff", "relation": "see_also"})
    refused = client_rw.post(ENTRIES, body, format="json")
    assert refused.status_code == 422, refused.content
    assert refused.json()["error"]["code"] == "not_a_learning"
    assert not Entry.objects.filter(title="Status").exists()
    assert not Edge.objects.exists()


TRACE = (
    'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n'
    '  File "db.py", line 9, in connect\nConnectionError: refused'
)


def test_a_hard_rule_refusal_runs_no_model_and_writes_nothing(client_rw, targets, monkeypatch):
    from kb.services import write_pass

    assert rule_reasons({"content": TRACE})
    passes = []
    monkeypatch.setattr(write_pass, "_compute", lambda *args: passes.append(args) or {})
    body = learning(targets[:2], title="Crash", content=TRACE)
    body["connections"].append({"id": "ffffffff", "relation": "see_also"})
    refused = client_rw.post(ENTRIES, body, format="json")
    assert refused.status_code == 422, refused.content
    assert refused.json()["error"]["code"] == "not_a_learning"
    assert passes == []  # refused before the model was asked
    assert not Entry.objects.filter(title="Crash").exists()


def test_a_guard_refusal_answers_before_a_taken_key(client_rw, targets, make_entry):
    make_entry("Keyed", key="runbook:deploy", content="How a deploy goes out.")
    body = learning(targets[:1], title="Status", content=STATUS_REPORT, key="runbook:deploy")
    refused = client_rw.post(ENTRIES, body, format="json")
    assert refused.status_code == 422, refused.content
    assert refused.json()["error"]["code"] == "not_a_learning"


def test_a_duplicate_answers_before_a_bad_connection(client_rw, targets):
    body = learning(targets[:1], title=targets[0].title, summary="", content=targets[0].content)
    body["connections"].append({"id": "ffffffff", "relation": "see_also"})
    refused = client_rw.post(ENTRIES, body, format="json")
    assert refused.status_code == 409, refused.content
    error = refused.json()["error"]
    assert error["code"] == "duplicate_entry" and error["fields"] == {
        "existing": targets[0].short_id
    }
    assert Entry.objects.filter(title=targets[0].title).count() == 1
    assert not Edge.objects.exists()


def test_a_taken_key_answers_before_a_duplicate(client_rw, targets, make_entry):
    keyed = make_entry("Keyed", key="runbook:deploy", content="How a deploy goes out.")
    body = learning(targets[:1], title=targets[0].title, content=targets[0].content)
    body.update(key=keyed.key, summary="")
    refused = client_rw.post(ENTRIES, body, format="json")
    assert refused.status_code == 409, refused.content
    assert refused.json()["error"]["code"] == "duplicate_key"


def test_a_duplicate_answers_before_a_repeated_connection(client_rw, targets):
    body = learning(
        [targets[0], targets[1], targets[0]],
        title=targets[1].title + ".",
        summary="",
        content=targets[1].content,
    )
    refused = client_rw.post(ENTRIES, body, format="json")
    assert refused.status_code == 409, refused.content
    assert refused.json()["error"]["code"] == "duplicate_entry"
    assert not Edge.objects.exists()


class _Counting:
    """A stand-in embedder for the pass's mechanics (no claim on vectors' quality)."""

    name = "counting"

    def __init__(self, fail: bool = False):
        self.calls: list[list[str]] = []
        self.fail = fail

    def embed(self, texts):
        from kb.services.embedding import EmbedderError

        self.calls.append(list(texts))
        if self.fail:
            raise EmbedderError("down")
        return [[float(len(t)), 1.0] for t in texts]


def test_a_background_pass_is_read_like_one_in_turn():
    from kb.services.write_pass import in_forward_pass, one_forward_pass, remembered_vector

    embedder = _Counting()
    with one_forward_pass(["a text", "", "another"], embedder, background=True):
        assert remembered_vector("counting", "another") == [7.0, 1.0]
        assert in_forward_pass("counting", ["a text", "another", " "])
        assert not in_forward_pass("counting", ["not in it"])
    assert embedder.calls == [["a text", "another"]]
    assert remembered_vector("counting", "a text") is None  # the block ended


def test_a_failing_background_pass_leaves_each_step_to_embed_alone():
    from kb.services.write_pass import in_forward_pass, one_forward_pass, remembered_vector

    with one_forward_pass(["a text"], _Counting(fail=True), background=True):
        assert remembered_vector("counting", "a text") is None
        assert not in_forward_pass("counting", ["a text"])


def test_a_forked_process_computes_its_own_background_passes():
    import os

    from kb.services.write_pass import one_forward_pass, remembered_vector

    with one_forward_pass(["parent"], _Counting(), background=True):
        assert remembered_vector("counting", "parent") == [6.0, 1.0]  # the pool's thread runs
    pid = os.fork()
    if pid == 0:  # the child: the parent's thread is not here; a pass must not wait forever
        code = 1
        try:
            with one_forward_pass(["child"], _Counting(), background=True) as memo:
                code = 0 if memo.vectors(timeout=10) else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_staged_pass_answers_each_stage_before_the_next_is_computed():
    """In stages, a reader waits only for the stage that holds its text: the model call of a
    later stage is still held back while an earlier stage's vectors are read."""
    import threading

    from kb.services.write_pass import in_forward_pass, one_forward_pass, remembered_vector

    release = threading.Event()

    class Held(_Counting):
        def embed(self, texts):
            if "later" in texts:
                assert release.wait(10)  # the later stage waits for the test's say-so
            return super().embed(texts)

    embedder = Held()
    stages = [["first"], ["later", "first", " "], ["last"]]
    with one_forward_pass(stages, embedder, background=True) as memo:
        assert remembered_vector("counting", "first") == [5.0, 1.0]  # the later one is held
        assert in_forward_pass("counting", ["first"])
        assert embedder.calls == [["first"]]
        assert remembered_vector("other", "first") is None  # another embedder's: not waited for
        release.set()
        assert remembered_vector("counting", "last") == [4.0, 1.0]
        assert in_forward_pass("counting", ["first", "later", "last"])
        assert not in_forward_pass("counting", ["first", "not in it"])
        assert set(memo.vectors()) == {("counting", t) for t in ("first", "later", "last")}
    # One call per stage, in order; a text of an earlier stage is not embedded again.
    assert embedder.calls == [["first"], ["later"], ["last"]]


def test_a_failing_stage_leaves_its_texts_to_embed_alone():
    from kb.services.write_pass import one_forward_pass, remembered_vector

    class FailsLater(_Counting):
        def embed(self, texts):
            self.fail = texts == ["broken"]
            return super().embed(texts)

    with one_forward_pass([["fine"], ["broken"]], FailsLater(), background=True):
        assert remembered_vector("counting", "fine") == [4.0, 1.0]
        assert remembered_vector("counting", "broken") is None
