"""The learning guard: session logs and transient state are refused, learnings pass."""

import json
from pathlib import Path

import pytest

from kb.services.guard import guard_reasons

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


def _labelled():
    path = ROOT / "bench" / "data" / "guard_labelled.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_labelled_set_precision_and_recall():
    """The issue's targets on the labelled set (three domains, half legitimate)."""
    rows = _labelled()
    assert len(rows) >= 150 and len({r["domain"] for r in rows}) >= 3
    assert abs(sum(r["label"] == "accept" for r in rows) - len(rows) / 2) <= 2
    tp = fp = fn = 0
    for row in rows:
        refused = bool(guard_reasons({"title": "", "content": row["text"]}))
        should = row["label"] == "refuse"
        tp += refused and should
        fp += refused and not should
        fn += should and not refused
    assert tp / (tp + fp) >= 0.95 and tp / (tp + fn) >= 0.9, (tp, fp, fn)


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
