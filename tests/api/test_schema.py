"""The OpenAPI schema is a contract: it must match the committed snapshot.

Regenerate on purpose with `make schema` and review the diff.
"""

from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

SNAPSHOT = Path(__file__).with_name("openapi-snapshot.yaml")


def test_schema_matches_snapshot(tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--file", str(out), "--validate")
    generated = yaml.safe_load(out.read_text())
    committed = yaml.safe_load(SNAPSHOT.read_text())
    assert generated == committed, "The API schema changed: run `make schema` and review the diff."


def test_contract_paths_are_in_schema():
    paths = yaml.safe_load(SNAPSHOT.read_text())["paths"]
    for path in (
        "/api/v1/banks/{bank}/query",
        "/api/v1/banks/{bank}/entries",
        "/api/v1/banks/{bank}/entries/{entry_id}",
        "/api/v1/banks/{bank}/import",
        "/api/v1/jobs/{job_id}",
    ):
        assert path in paths


@pytest.mark.django_db
def test_schema_and_docs_are_served(admin_client):
    schema = admin_client.get("/api/v1/schema/")
    assert schema.status_code == 200 and b"openapi" in schema.content
    docs = admin_client.get("/api/v1/docs/")
    assert docs.status_code == 200
    # Offline: the docs page loads Swagger UI from the sidecar's static files, not a CDN.
    assert b"cdn" not in docs.content.lower() and b"swagger-ui" in docs.content.lower()


def _request_property(name: str, schema_name: str) -> dict:
    schemas = yaml.safe_load(SNAPSHOT.read_text())["components"]["schemas"]
    return schemas[schema_name]["properties"][name]


def test_a_text_the_server_refuses_blank_says_so_in_the_schema():
    """DRF refuses a trimmed-to-nothing text for a CharField that does not allow blank; the
    schema says it with the non-blank pattern (minLength 1 alone admits one space), requests
    only, and never for a field that allows blank or keeps its white space."""
    import re

    from kb.api.openapi import NONBLANK

    decided_end = _request_property("from", "DecideRequestRequest")
    assert decided_end["pattern"] == NONBLANK
    assert not re.search(NONBLANK, "\u00a0 \t") and re.search(NONBLANK, " a ")
    assert _request_property("relation", "AppendedEdgeRequest")["pattern"] == NONBLANK
    # A response's text is not validated and may be empty.
    assert _request_property("summary", "QueryResult").get("pattern") != NONBLANK


@pytest.mark.django_db
def test_the_non_blank_rule_follows_the_field_declaration():
    from drf_spectacular.generators import SchemaGenerator
    from rest_framework import serializers
    from rest_framework.views import APIView

    from kb.api.openapi import NONBLANK, KnowledgeBankAutoSchema

    class Body(serializers.Serializer):
        name = serializers.CharField()
        optional_text = serializers.CharField(allow_blank=True)
        kept_as_sent = serializers.CharField(trim_whitespace=False)

    auto = KnowledgeBankAutoSchema()
    auto.registry = SchemaGenerator().registry
    view = APIView()
    view.swagger_fake_view, view.request = True, None
    auto.view, auto.method, auto.path = view, "POST", ""
    fields = Body().fields
    mapped = {n: auto._map_serializer_field(f, "request") for n, f in fields.items()}
    assert mapped["name"]["pattern"] == NONBLANK
    assert "pattern" not in mapped["optional_text"]
    assert "pattern" not in mapped["kept_as_sent"]
    assert "pattern" not in auto._map_serializer_field(fields["name"], "response")
