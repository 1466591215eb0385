"""Helpers shared by the graph admin test modules (test_admin, test_admin_curation)."""

from __future__ import annotations

import pytest

from graph.models import Alias, Edge, EdgeType
from kb.models import Entry

COPIED = "Every deploy waits for the release train on Tuesday mornings without exception."


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """admin_client creates a superuser; a cheap hasher keeps that fast."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def rows(response) -> set[int]:
    return {obj.pk for obj in response.context["cl"].result_list}


def snapshot(bank) -> tuple:
    """Every column a merge touches and a revert must restore."""
    entries = list(
        Entry.objects.filter(bank=bank)
        .order_by("pk")
        .values(
            *[
                f.attname
                for f in Entry._meta.concrete_fields
                if f.name not in ("usage_count", "last_used_at")
            ]
        )
    )
    edges = list(Edge.objects.filter(bank=bank).order_by("pk").values())
    aliases = list(Alias.objects.filter(bank=bank).order_by("pk").values())
    return entries, edges, aliases


def core(name: str) -> EdgeType:
    return EdgeType.objects.get(bank=None, name=name)
