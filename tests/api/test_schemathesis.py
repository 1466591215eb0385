"""schemathesis over EVERY operation of the served OpenAPI schema, in-process against the WSGI
application, with a real token (all scopes) on the test database and every check enabled, for
positive and negative data alike.

Generic: the operations come from the schema at ``/api/v1/schema/``, so endpoints added later
are covered without editing this file. Bounded by ``KB_SCHEMATHESIS_EXAMPLES`` examples per
operation (default 5, plus the explicit and coverage cases; no shrinking); each operation is a
test of its own, so ``-n 2`` spreads them over two workers. ``KB_SCHEMATHESIS_EXAMPLES=200``
searches deeper; ``KB_SCHEMATHESIS_RANDOM=1`` draws new examples each run (the default is
hypothesis's fixed seed, so a run is reproducible); ``KB_SCHEMATHESIS_ONLY=<regex on paths>``
runs some operations only.
"""

from __future__ import annotations

import json
import os
import re

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, assume
from hypothesis import settings as hypothesis_settings
from schemathesis.config import SchemathesisConfig
from schemathesis.openapi.checks import RejectedPositiveData

from config.wsgi import application

EXAMPLES = int(os.environ.get("KB_SCHEMATHESIS_EXAMPLES", "5"))
# The suite's run is reproducible (hypothesis's fixed seed per operation): what it finds, it
# finds on every machine. KB_SCHEMATHESIS_RANDOM=1 draws new examples on each run, to search.
DERANDOMIZE = os.environ.get("KB_SCHEMATHESIS_RANDOM", "") != "1"
BANK = "sthesis"

CONFIG = SchemathesisConfig.from_dict(
    {
        "parameters": {"path.bank": BANK},
        # Every check, with positive data held to the rule below instead of the built-in one.
        "checks": {"enabled": True, "positive_data_acceptance": {"enabled": False}},
        "generation": {"mode": "all"},
    }
)
# A schema-valid request can only be refused for what the bank holds, never for its shape:
# 2xx, or 401/403/404/409/429 (a token, a missing row named in the path, a conflict with the
# bank's state, a rate limit), or a 400 whose code says that a value names something this bank
# does not have — API.md answers an unknown entry or relation named in a body with 400, and
# kinds and relations are each bank's own vocabulary, which one schema for every bank cannot list.
ACCEPTED = {*range(200, 300), 401, 403, 404, 409, 429}
NAMES_WHAT_THE_BANK_LACKS = {
    "entry_outside_bank",  # an entry id or key the bank does not have, named in a body
    "entry_not_found",  # the same, for a list of entries (extractions)
    "unknown_relation",  # a relation outside the bank's vocabulary
    "unknown_kind",  # an entry kind outside the bank's vocabulary
    "invalid_value",  # a filter value (kinds, relations) outside the bank's vocabulary
    "ambiguous_start",  # a traverse start name that several of the bank's entries carry
    "invalid_cursor",  # a page cursor the server did not give out (cursors are opaque)
}
# The same, said per field inside a wider code (``invalid_entry``: an unknown kind, or a
# ``lifetime.resolved_by`` that names no entry of the bank).
LACKS_MESSAGE = re.compile(
    r"^unknown (kind|relation)|^unknown entry\.$|names no entry of this bank", re.IGNORECASE
)


def names_what_the_bank_lacks(error: dict) -> bool:
    if error.get("code") in NAMES_WHAT_THE_BANK_LACKS:
        return True
    fields = error.get("fields") or {}
    return bool(fields) and all(LACKS_MESSAGE.search(str(m)) for m in fields.values())


@schemathesis.check
def positive_data_accepted(ctx, response, case):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code in ACCEPTED:
        return None
    if response.status_code == 400:
        try:
            error = json.loads(response.content)["error"]
        except (ValueError, KeyError, TypeError):
            error = {}
        if names_what_the_bank_lacks(error):
            return None
    raise RejectedPositiveData(
        operation=case.operation.label,
        message=f"A schema-valid request was refused with {response.status_code}.",
        status_code=response.status_code,
        allowed_statuses=["2xx", "401", "403", "404", "409", "429"],
    )


# JSON Lines bodies (the import) are sent as the text schemathesis generates for them.
schemathesis.serializer.alias("application/x-ndjson", "text/plain")
schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", application, config=CONFIG)
if os.environ.get("KB_SCHEMATHESIS_ONLY"):  # a regular expression on paths, while developing
    schema = schema.include(path_regex=os.environ["KB_SCHEMATHESIS_ONLY"])


@pytest.fixture
def bearer(db, settings):
    """A bank with a few rows, and a token holding it with every scope."""
    from graph.edges.links import link
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
    derandomize=DERANDOMIZE,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_answers_as_its_schema_says(case, bearer):
    # A JSON Lines body is text on the wire: a mutation of its JSON type (an object, a number)
    # is sent as text that is itself JSON Lines, so it is no request the schema forbids.
    assume(case.media_type != "application/x-ndjson" or isinstance(case.body, str))
    case.call_and_validate(headers=bearer)
