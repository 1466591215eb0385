"""Fixtures of the MCP tests: a bank, an agent token with every scope, a read-only one.

The tests run in committed transactions (the server is another process) with a serialized
rollback, so the vocabulary rows of the data migrations are back for the next test."""

from __future__ import annotations

import pytest

from kb.models import Bank
from kb.services.tokens import create_token


@pytest.fixture
def mcp_world(db, hashing_embedder):
    """Committed rows (the server runs in another process): banks ``acme`` and ``globex``, a
    read-write token on acme only, and a read-only token on acme."""
    acme = Bank.objects.create(slug="acme", name="Acme engineering", kind="engineering")
    Bank.objects.create(slug="globex", name="Globex", kind="business")
    writer_token, writer = create_token("mcp-agent", [acme], "read,write,curate")
    _, reader = create_token("mcp-reader", [acme], "read")
    return {"bank": acme, "writer": writer, "reader": reader, "writer_id": writer_token.pk}
