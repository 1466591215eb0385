"""The learning guard: session logs and transient state are refused, learnings pass."""

import json
from pathlib import Path

import numpy as np
import pytest

from kb.services import guard_model
from kb.services.guard import HARD_RULES, guard_reasons
from kb.services.guard_model import TRAINING_FILES, judge

ROOT = Path(__file__).resolve().parents[2]

REFUSED = {
    "timestamped log": "2026-11-03 10:01:12 starting deploy\n2026-11-03 10:01:15 pulling image\n"
    "2026-11-03 10:02:40 migration ok\n2026-11-03 10:03:01 done",
    "bracketed times": "[10:01:12] connecting\n[10:01:13] retrying\n[10:01:15] connected\n[10:01:20] closed",
    "today narration": "Today I ran the migration on staging and then I looked at the logs for a while.",
    "session narration": "In this session we tried three different fixes before lunch.",
    "step log": "First I ran make build.\nThen I ran make test.\nThen I opened the report.",
    "stack trace": 'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\n'
    '  File "db.py", line 9, in connect\nConnectionError: refused',
    "java trace": "java.lang.IllegalStateException: closed\n  at com.acme.Pool.get(Pool.java:42)\n"
    "  at com.acme.Api.call(Api.java:10)",
    "process id": "The worker is stuck; its pid is 48213 on node 3.",
    "temp path": "The export was written to /tmp/tmpx8f3k2q1/report.csv for review.",
    "pytest dir": "Fixtures live in /tmp/pytest-of-root/pytest-12/test_a0 right now.",
    "command output": "$ kubectl get pods\nNAME READY STATUS\napi-1 1/1 Running\n$ kubectl logs api-1\n"
    "> started\n> listening on 8080\n$ curl localhost:8080\n> ok",
}

ACCEPTED = {
    "gotcha": "Retries without an Idempotency-Key header double-charge: always send the key from checkout.",
    "trace with lesson": 'Traceback (most recent call last):\n  File "db.py", line 9, in connect\n'
    "ConnectionError: refused\nThis happens because PgBouncer is not started yet; wait for its health check.",
    "durable tmp fact": "The exporter writes to /tmp/lk-export which is wiped on every pod restart, so stream it instead.",
    "pid 1": "In containers PID 1 must reap zombies; use tini as the entrypoint.",
    "one timestamp": "The outage on 2026-03-02 10:14 UTC came from a missing index; add it before deploys.",
    "commands as recipe": "Rotate the key with `vault kv put secret/app key=...`, then restart the pods.",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused(name):
    assert guard_reasons({"title": "x", "content": REFUSED[name]}), name


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted(name):
    assert guard_reasons({"title": "A learning", "content": ACCEPTED[name]}) == [], name


@pytest.mark.parametrize("path", ["kb/demo/engineering.jsonl", "tests/data/search_corpus.jsonl"])
def test_no_false_positives_on_realistic_banks(path):
    for line in (ROOT / path).read_text().splitlines():
        obj = json.loads(line)
        if obj.get("type") == "entry":
            assert guard_reasons(obj) == [], obj["title"]


@pytest.mark.django_db
def test_api_answers_422_not_a_learning(client_rw):
    body = {
        "title": "Session",
        "content": REFUSED["today narration"],
        "lifetime": {"durable": True},
    }
    response = client_rw.post("/api/v1/banks/acme/entries", body, format="json")
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "not_a_learning" and "narrates" in error["message"]
    from kb.models import Entry

    assert not Entry.objects.exists()


def _rows(name):
    path = ROOT / "bench" / "data" / name
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def training():
    """Every training row with its MiniLM vector, embedded once for the module."""
    from kb.services.embedding import MiniLMEmbedder

    rows = [dict(row, file=name) for name in TRAINING_FILES for row in _rows(name)]
    vectors = np.asarray(MiniLMEmbedder().embed([r["text"] for r in rows]), dtype=np.float64)
    return rows, vectors


def _precision_recall(rows, refused):
    tp = sum(r and row["label"] == "refuse" for row, r in zip(rows, refused, strict=True))
    fp = sum(r and row["label"] != "refuse" for row, r in zip(rows, refused, strict=True))
    fn = sum(not r and row["label"] == "refuse" for row, r in zip(rows, refused, strict=True))
    return tp / (tp + fp), tp / (tp + fn)


def _guard(text, vector, model=None):
    """The guard's decision with a known vector: the hard rules, then the classifier."""
    if any(rule(text) for rule in HARD_RULES):
        return True
    return judge(text, vector, with_model=model).refused


def test_training_sets_have_three_domains_and_half_legitimate():
    for name in TRAINING_FILES:
        rows = _rows(name)
        assert len({r["domain"] for r in rows}) >= 3, name
        assert abs(sum(r["label"] == "accept" for r in rows) - len(rows) / 2) <= 2, name
    assert len(_rows("guard_extra.jsonl")) >= 150


def test_shipped_model_was_trained_on_the_shipped_sets():
    """bench/guard.py --train must be rerun when a training file or a signal changes."""
    rows = [row for name in TRAINING_FILES for row in _rows(name)]
    assert guard_model.model().data_hash == guard_model.data_hash(rows)


@pytest.mark.model
def test_shipped_guard_meets_the_targets_on_every_training_file(training):
    rows, vectors = training
    for name in TRAINING_FILES:
        picked = [(row, v) for row, v in zip(rows, vectors, strict=True) if row["file"] == name]
        refused = [_guard(row["text"], v) for row, v in picked]
        precision, recall = _precision_recall([row for row, _v in picked], refused)
        assert precision >= 0.95 and recall >= 0.9, (name, precision, recall)


@pytest.mark.model
@pytest.mark.parametrize("test_file", TRAINING_FILES)
def test_cross_validation_on_a_file_it_was_not_trained_on(training, test_file):
    """Retrained without ``test_file`` (another author, or other domains), the guard keeps
    the order of the targets on it. Measured: labelled 0.975/0.975, held-out 0.947/0.900,
    extra 0.976/0.865 (precision/recall)."""
    rows, vectors = training
    test = np.array([row["file"] == test_file for row in rows])
    train = [r for r, t in zip(rows, test, strict=True) if not t]
    model = guard_model.Model.of(guard_model.train(train, vectors[~test]))
    picked = [(row, v) for row, v, t in zip(rows, vectors, test, strict=True) if t]
    refused = [_guard(row["text"], v, model) for row, v in picked]
    precision, recall = _precision_recall([row for row, _v in picked], refused)
    assert precision >= 0.93 and recall >= 0.85, (precision, recall)


def test_refusal_quotes_its_signals_and_the_labelled_reports_it_resembles():
    reasons = guard_reasons(
        {"title": "", "content": "The orders-processor consumer is 2M messages behind right now."}
    )
    assert reasons and "score" in reasons[0]
    assert '("right now")' in reasons[0]
    assert "closest to these labelled session reports" in reasons[0]


def test_the_classifier_judges_the_content_not_the_title_around_it():
    recipe = {
        "title": "Log in to production with Playwright using the lk_csrf cookie",
        "content": "In web/e2e/login.ts read the lk_csrf cookie, not the meta tag.",
        "useful_for": "Use when a scripted production login answers 403.",
    }
    assert guard_reasons(recipe) == []
    status = {"title": "Checkout", "content": "Checkout is returning 502s for a third of users."}
    assert guard_reasons(status)


def test_under_the_test_only_hashing_embedder_the_guard_judges_by_its_signals(
    hashing_embedder,
):
    verdict = judge("The nightly import is still running, about 60% complete.")
    assert not verdict.with_embedding and verdict.refused
    assert guard_reasons({"title": "A learning", "content": "Something that holds."}) == []


def test_the_guard_is_deterministic():
    text = "Payroll file sent to the bank, confirmation came back clean."
    assert guard_reasons({"content": text}) == guard_reasons({"content": text})


def test_without_the_local_model_the_guard_judges_by_its_signals(monkeypatch):
    monkeypatch.setattr(guard_model, "_embed", lambda text: None)
    verdict = judge("Staging is down right now, the deploy is in progress.")
    assert not verdict.with_embedding and verdict.refused and not verdict.nearest
    lesson = (
        "Deploys must wait for the schema migration job, because old pods crash on new columns."
    )
    assert guard_reasons({"content": lesson}) == []


@pytest.mark.parametrize(
    "text",
    [
        "Ran pytest at 10:32, all green.",
        "Staging is down right now, the deploy is in progress.",
        "Deployed v2.3.1, smoke tests passed, waiting for QA.",
        "The nightly import is still running, about 60% complete.",
    ],
)
def test_session_reports_in_any_wording_are_refused_with_the_words_matched(text):
    reasons = guard_reasons({"title": "", "content": text})
    assert reasons and '("' in reasons[0]  # the refusal quotes what it matched


@pytest.mark.parametrize(
    "text",
    [
        "Run `pytest -k slow` before merging: the slow suite catches migration drift.",
        "The release pipeline runs at 02:00 UTC every night, so never merge schema changes after 01:30.",
        "Since 2026-01-01 the payments API rejects TLS 1.1; clients must negotiate TLS 1.2.",
        "Logs live in /var/log/app/*.log on every node and are rotated daily at 00:00.",
    ],
)
def test_lasting_lessons_with_commands_paths_numbers_and_dates_pass(text):
    assert guard_reasons({"title": "", "content": text}) == []


def test_a_post_mortem_told_in_the_past_tense_passes_and_a_run_report_does_not():
    post_mortem = (
        "On 2024-03-02 at 10:14 we deployed v2.3 and the API went down. We rolled back at "
        "10:40. Root cause: the orders table had no index on customer_id, and the new query "
        "scanned it. Lesson: always add indexes in a migration that runs before the deploy."
    )
    run_report = (
        "Deployed to staging at 14:00. Ran the smoke tests. Three failed on the login page. "
        "Rolled back and opened a ticket. Waiting on the auth team."
    )
    assert guard_reasons({"content": post_mortem}) == []
    assert guard_reasons({"content": run_report})


def test_the_classifier_reads_the_opening_of_a_long_text():
    opening = "Consumer lag on the orders topic is climbing right now, 2M messages behind. "
    long_text = opening * 20_000
    verdict = judge(long_text)
    assert verdict.refused
    assert verdict.probability == judge(long_text[: guard_model.CLASSIFIED_CHARS]).probability


def _quotes(reason: str) -> list[str]:
    import re

    return re.findall(r'\("([^"]+)"\)', reason)


@pytest.mark.parametrize(
    "text",
    [
        "Then I ran the migration.\nI tried the rollback next.",
        "This morning we checked the replica lag and it was fine.",
        "So far\nwe ran the suite twice.",
    ],
)
def test_narration_refusal_quotes_only_words_of_the_text(text):
    """Issue 22: the refusal quoted "today I ran…" for a text that never said "today"."""
    reasons = guard_reasons({"title": "", "content": text})
    assert reasons
    quotes = _quotes(reasons[0])
    assert quotes, reasons[0]
    for quote in quotes:
        assert quote in text, (quote, text)


GOTCHA = "The payments sandbox rejects card numbers with spaces, so strip them first. "


def test_a_text_repeating_one_sentence_is_refused_with_a_verbatim_quote():
    text = GOTCHA * 40
    reasons = guard_reasons({"title": "Sandbox card numbers", "content": text})
    assert reasons and reasons[0].startswith("It repeats itself")
    (quote,) = _quotes(reasons[0])
    assert quote in text


def test_a_long_text_saying_things_once_or_twice_is_not_refused_as_repetition():
    from kb.services.guard import repeated_text

    text = " ".join(
        f"Step {i}: run migration {i} and check table t{i} for rows." for i in range(30)
    )
    assert repeated_text(text) is None
    assert repeated_text(GOTCHA * 2 + text) is None  # a paste doubled is not "many times"


@pytest.mark.django_db
def test_api_refuses_repetition_with_422(client_rw):
    body = {"title": "Sandbox cards", "content": GOTCHA * 40, "lifetime": {"durable": True}}
    response = client_rw.post("/api/v1/banks/acme/entries", body, format="json")
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "not_a_learning"
    assert "repeats itself" in response.json()["error"]["message"]
