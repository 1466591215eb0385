"""`import_bank` against a broker returns once the data is committed: the embedding job is
queued for a worker (none consumes this test's queue), the entries are there and found by
their words, and no vector was computed by the command."""

from __future__ import annotations

import io
import json
import os
import uuid

import pytest
import redis
from django.core.management import call_command

from config.celery import app as celery_app
from kb.models import Entry, EntryEmbedding, Job
from kb.services.search import search_entries
from tests.kb.test_celery_worker import _reset_celery_caches

BROKER = os.environ.get("KB_TEST_BROKER_URL", "redis://127.0.0.1:6379/14")

pytestmark = [pytest.mark.celery_worker, pytest.mark.django_db]


@pytest.fixture
def unconsumed_queue():
    client = redis.Redis.from_url(BROKER)
    client.ping()  # fails loudly if Redis is not there
    queue = f"kbtest-idle-{uuid.uuid4().hex[:8]}"
    keys = ("broker_url", "task_always_eager", "task_default_queue")
    previous = {key: getattr(celery_app.conf, key) for key in keys}
    celery_app.conf.update(broker_url=BROKER, task_always_eager=False, task_default_queue=queue)
    _reset_celery_caches()
    try:
        yield client, queue
    finally:
        celery_app.conf.update(**previous)
        _reset_celery_caches()
        client.delete(queue)


def test_import_bank_returns_once_the_data_is_committed(
    unconsumed_queue, bank, tmp_path, settings, hashing_embedder
):
    client, queue = unconsumed_queue
    settings.CELERY_TASK_ALWAYS_EAGER = False
    path = tmp_path / "later.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(
                {
                    "type": "entry",
                    "key": f"later:{i}",
                    "title": f"Obsidian gateway {i}",
                    "content": f"Vectors come later for entry {i}.",
                    "kind": "fact",
                }
            )
            for i in range(50)
        )
    )
    out = io.StringIO()
    call_command("import_bank", bank.slug, str(path), stdout=out, stderr=io.StringIO())
    job = Job.objects.get(bank=bank, kind="embed")
    assert f"Embedding job {job.public_id}: 50 entries" in out.getvalue()
    assert f"manage.py jobs {job.public_id} --wait" in out.getvalue()
    assert (job.status, job.phase, job.progress_total) == ("queued", "queued", 50)
    assert client.llen(queue) == 1  # the task waits on the broker for a worker
    assert Entry.objects.filter(bank=bank).count() == 50
    assert not EntryEmbedding.objects.filter(bank=bank).exists()
    found = search_entries(bank, "obsidian gateway 7", limit=3, lexical=True)
    assert found.entries[found.hits[0].entry_id].key == "later:7"
