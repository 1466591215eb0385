"""Shared fixtures: banks, entries, API clients with tokens. Real PostgreSQL throughout."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from kb.models import Bank
from kb.services.entries import clean_entry_data, create_entry
from kb.services.tokens import create_token


@pytest.fixture
def bank(db) -> Bank:
    return Bank.objects.create(slug="acme", name="Acme engineering", kind="engineering")


@pytest.fixture
def other_bank(db) -> Bank:
    return Bank.objects.create(slug="globex", name="Globex", kind="business")


@pytest.fixture
def make_entry(bank):
    """Create an entry through the service, as the API would."""

    def make(title: str = "An entry", *, in_bank: Bank | None = None, **fields):
        target = in_bank or bank
        data = {
            "title": title,
            "content": fields.pop("content", f"Content of {title}."),
            "lifetime": {"durable": True},
        }
        data.update(fields)
        # Test graphs may hold look-alike entries on purpose; refusal is tested on its own.
        return create_entry(target, clean_entry_data(target, data), allow_duplicate=True)

    return make


@pytest.fixture
def token_client(db):
    """An APIClient authenticated with a fresh token for the given banks and scopes."""

    def make(*banks: Bank, scopes: str = "read,write,curate") -> APIClient:
        _, raw = create_token("test-agent", banks, scopes)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        return client

    return make


@pytest.fixture
def client_rw(bank, token_client) -> APIClient:
    return token_client(bank)


@pytest.fixture
def hashing_embedder(settings):
    """The deterministic test-only embedder, for logic that is not about retrieval quality."""
    settings.KB_EMBEDDER = "hashing"
    from kb.services.embedding import get_embedder

    return get_embedder()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """Let two suites share one server: KB_TEST_DB_SUFFIX names a test database of its own."""
    import os

    from django.conf import settings

    suffix = os.environ.get("KB_TEST_DB_SUFFIX")
    if suffix:
        db = settings.DATABASES["default"]
        db.setdefault("TEST", {})
        db["TEST"]["NAME"] = f"{db['TEST'].get('NAME') or 'test_' + db['NAME']}_{suffix}"


@pytest.fixture(autouse=True)
def _rate_limits_off(settings):
    """Tests send many requests with one token: the per-token rate limits are off unless a
    test (tests/kb/test_tokens.py) sets them."""
    settings.KB_RATE_LIMIT_PER_MINUTE = 0
    settings.KB_RATE_LIMIT_WRITES_PER_MINUTE = 0


@pytest.fixture(scope="session", autouse=True)
def _no_session_outlives_the_suite(django_db_setup, django_db_blocker):
    """Before the test database is dropped, wait (up to 30 s) for the sessions of the worker,
    web and MCP processes the suite started to end, then end those left: a process's backend
    exits after the process does (a SIGKILLed worker's even runs its statement on), and one
    still connected made the drop fail ("database … is being accessed by other users")."""
    import time

    from django.db import connection

    from tests.pg_activity import other_sessions

    yield
    with django_db_blocker.unblock():
        deadline = time.monotonic() + 30
        while other_sessions("TRUE") and time.monotonic() < deadline:
            time.sleep(0.1)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
