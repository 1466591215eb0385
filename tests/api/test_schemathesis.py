"""schemathesis over EVERY operation of the served OpenAPI schema, in-process against the WSGI
application, with a real token (all scopes) on the test database and every check enabled.

Generic: the operations come from the schema at ``/api/v1/schema/``, so endpoints added later
are covered without editing this file. Bounded by ``KB_SCHEMATHESIS_EXAMPLES`` examples per
operation (default 5, plus the explicit examples; no shrinking) so that it adds about
two minutes to ``make test`` on two cores. ``KB_SCHEMATHESIS_EXAMPLES=200`` searches deeper.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase
from hypothesis import settings as hypothesis_settings
from schemathesis.config import SchemathesisConfig

from config.wsgi import application

EXAMPLES = int(os.environ.get("KB_SCHEMATHESIS_EXAMPLES", "5"))
BANK = "sthesis"

CONFIG = SchemathesisConfig.from_dict(
    {
        "parameters": {"path.bank": BANK},
        "checks": {
            "enabled": True,
            # A schema-valid request may still name an entry, relation or edge the bank does not
            # have: the contract answers those with 400 (API.md), which no schema can express.
            "positive_data_acceptance": {
                "expected-statuses": ["2xx", "400", "401", "403", "404", "409", "422", "429"]
            },
        },
        "generation": {"mode": "all"},
        "operations": [
            {
                # A JSON Lines body is text on the wire: a generated "non-string" body is sent
                # as its text, which is a valid (if useless) file, so only positive cases apply.
                "include-path": "/api/v1/banks/{bank}/import",
                "generation": {"mode": "positive"},
            }
        ],
    }
)
# JSON Lines bodies (the import) are sent as the text schemathesis generates for them.
schemathesis.serializer.alias("application/x-ndjson", "text/plain")
schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", application, config=CONFIG)


@pytest.fixture
def bearer(db, settings):
    """A bank with a few rows, and a token holding it with every scope."""
    from graph.services.edges import link
    from kb.models import Bank
    from kb.services.entries import clean_entry_data, create_entry
    from kb.services.tokens import create_token

    settings.KB_EMBEDDER = "hashing"
    bank = Bank.objects.create(slug=BANK, name="Schemathesis")
    entries = [
        create_entry(
            bank,
            clean_entry_data(
                bank, {"title": f"Entry {i}", "content": "Text.", "lifetime": {"durable": True}}
            ),
        )
        for i in range(3)
    ]
    link(bank, {"from": entries[0].short_id, "to": entries[1].short_id, "relation": "cites"})
    _, raw = create_token("schemathesis", [bank], "read,write,curate")
    # The application is called as a real WSGI server would; like Django's test client, keep
    # the test's database connection (and its transaction) across requests.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield {"Authorization": f"Bearer {raw}"}
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@schema.parametrize()
@hypothesis_settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_answers_as_its_schema_says(case, bearer):
    case.call_and_validate(headers=bearer)
