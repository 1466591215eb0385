"""A hypothesis state machine over the write API of one bank, through the REST client
(issue 22): create, link, unlink, delete, retire/restore, merge, split, revert, import and
export in any order.

Invariants, after every step: no answer is a 500 (nor any 5xx); export → import into a fresh
bank reproduces the current graph (entries by id with their texts and status, current edges
by (from, to, relation, note), aliases); every operation either reverts or its revert answers
409 naming the operations that block it.

Bounded and reproducible like the schemathesis run: hypothesis's fixed seed (derandomize),
``KB_STATE_MACHINE_EXAMPLES`` examples (default 25) of at most ``KB_STATE_MACHINE_STEPS``
steps (default 12). ``KB_STATE_MACHINE_RANDOM=1`` draws new sequences each run, to search.
"""

from __future__ import annotations

import itertools
import json
import os

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from graph.models import Alias, Edge
from kb.models import Bank, Entry, Operation
from kb.services.bulk import export_lines, import_bank
from kb.services.tokens import create_token

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("KB_STATE_MACHINE_EXAMPLES", "25"))
STEPS = int(os.environ.get("KB_STATE_MACHINE_STEPS", "12"))
DERANDOMIZE = os.environ.get("KB_STATE_MACHINE_RANDOM", "") != "1"

RELATIONS = ["see_also", "corrects", "supersedes", "part_of", "cites", "clarifies"]
# Durable, specific statements (the learning guard refuses session logs and transient state).
FACTS = [
    ("Reports service retries exports", "The reports service retries a failed export 3 times."),
    ("Billing rounds half-even", "Billing rounds currency amounts half-even to two decimals."),
    ("Checkout needs the CSRF tag", "Checkout pages must render exactly one CSRF meta tag."),
    ("Settlement files are CSV", "The settlement connector writes bank files as CSV."),
    ("Auth tokens last an hour", "Access tokens issued by the auth service expire in 1 hour."),
    ("Warehouse sync runs nightly", "Warehouse sync runs at 02:00 UTC and locks the stock table."),
]


def texts(bank: Bank) -> dict:
    """The bank's current graph, named by entry ids only (comparable across banks)."""
    entries = {
        e["short_id"]: (e["title"], e["content"], e["summary"], e["useful_for"], e["status"])
        for e in Entry.objects.filter(bank=bank)
        .exclude(status__in=["merged", "deleted"])
        .values("short_id", "title", "content", "summary", "useful_for", "status")
    }
    edges = sorted(
        Edge.objects.filter(bank=bank, invalidated_at__isnull=True)
        .exclude(from_entry__status__in=["merged", "deleted"])
        .exclude(to_entry__status__in=["merged", "deleted"])
        .values_list("from_entry__short_id", "to_entry__short_id", "type__name", "note")
    )
    aliases = sorted(
        Alias.objects.filter(bank=bank)
        .exclude(entry__status__in=["merged", "deleted"])
        .values_list("surface", "entry__short_id")
    )
    return {"entries": entries, "edges": edges, "aliases": aliases}


def index(data, n: int) -> int:
    """A position in a list of ``n`` drawn with fixed bounds: the bank's state decides ``n``,
    and hypothesis needs every draw's bounds to depend on earlier draws only."""
    return data.draw(st.integers(0, 63)) % n


class WriteAPIMachine(RuleBasedStateMachine):
    """One bank, written only through REST; the database is read to check invariants."""

    client = None  # set per test: an APIClient with a read,write,curate token on every bank
    run_on_commit = None  # set per test: django_capture_on_commit_callbacks
    counter = itertools.count()

    @initialize()
    def new_bank(self):
        n = next(self.counter)
        self.bank = Bank.objects.create(slug=f"sm{n}", name=f"State machine {n}")
        _, raw = create_token(f"sm-{n}", [self.bank], "read,write,curate")
        from rest_framework.test import APIClient

        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        self.url = f"/api/v1/banks/{self.bank.slug}"
        self.ids: list[str] = []
        self.made = 0
        self.last = None

    # --- helpers ---------------------------------------------------------------------------

    def call(self, method: str, path: str, body=None, **kwargs):
        with type(self).run_on_commit(execute=True):
            send = getattr(self.client, method)
            if body is not None:
                kwargs.setdefault("format", "json")
                response = send(self.url + path, body, **kwargs)
            else:
                response = send(self.url + path, **kwargs)
        self.last = (method, path, body, response.status_code)
        assert response.status_code < 500, (method, path, body, response.content[:2000])
        return response

    def pick_two(self, data, *statuses: str) -> tuple[str, str]:
        """Two ids, distinct whenever the machine has two."""
        first = self.pick(data, *statuses)
        second = self.pick(data, *statuses)
        if second == first and len(self.ids) > 1:
            others = [i for i in self.ids if i != first]
            second = others[index(data, len(others))]
        return first, second

    def pick(self, data, *statuses: str) -> str:
        """An id the machine made; mostly one whose entry has one of ``statuses`` (when
        given and any has), sometimes any (deleted and merged ones included)."""
        ids = self.ids
        if (
            statuses
            and data.draw(st.sampled_from(["having", "having", "having", "any"])) == "having"
        ):
            status = dict(
                Entry.objects.filter(bank=self.bank, short_id__in=self.ids).values_list(
                    "short_id", "status"
                )
            )
            ids = [i for i in self.ids if status.get(i) in statuses] or ids
        return ids[index(data, len(ids))]

    # --- rules -----------------------------------------------------------------------------

    @rule(fact=st.sampled_from(FACTS))
    def create_entry(self, fact):
        self.made += 1
        title, content = fact
        body = {
            "title": f"{title} ({self.made})",
            "content": content,
            "kind": "fact",
            "lifetime": {"durable": True},
        }
        response = self.call("post", "/entries", body)
        if response.status_code == 201:
            self.ids.append(response.json()["id"])

    @precondition(lambda self: len(self.ids) >= 2)
    @rule(data=st.data(), relation=st.sampled_from(RELATIONS), noted=st.booleans())
    def link(self, data, relation, noted):
        source, target = self.pick_two(data, "live", "retired")
        body = {"from": source, "to": target, "relation": relation}
        if noted:
            body["note"] = "Read this one first for the rollout order."
        self.call("post", "/edges", body)

    @precondition(lambda self: bool(self.ids))
    @rule(data=st.data())
    def unlink(self, data):
        edges = list(
            Edge.objects.filter(bank=self.bank, invalidated_at__isnull=True)
            .order_by("id")
            .values_list("id", flat=True)
        )
        if edges:
            edge = edges[index(data, len(edges))]
            self.call("post", f"/edges/{edge}/unlink", {"reason": "not true"})

    @precondition(lambda self: bool(self.ids))
    @rule(data=st.data())
    def delete(self, data):
        self.call("delete", f"/entries/{self.pick(data, 'live', 'retired')}?reason=obsolete")

    @precondition(lambda self: bool(self.ids))
    @rule(data=st.data())
    def retire(self, data):
        body = {"reason": "replaced", "evidence": "Replaced by the new runbook."}
        self.call("post", f"/entries/{self.pick(data, 'live')}/retire", body)

    @precondition(lambda self: bool(self.ids))
    @rule(data=st.data())
    def restore(self, data):
        self.call("post", f"/entries/{self.pick(data, 'retired')}/restore", {})

    @precondition(lambda self: len(self.ids) >= 2)
    @rule(data=st.data())
    def merge(self, data):
        keep, away = self.pick_two(data, "live", "retired")
        body = {"keep": keep, "away": away, "reason": "same thing"}
        self.call("post", "/merges", body)

    @precondition(lambda self: bool(self.ids))
    @rule(data=st.data())
    def split(self, data):
        parts = [
            {"title": f"Part {i} of a split ({self.made})", "content": f"Half {i} of the text."}
            for i in (1, 2)
        ]
        response = self.call(
            "post",
            f"/entries/{self.pick(data, 'live', 'retired')}/split",
            {"parts": parts, "reason": "two facts"},
        )
        if response.status_code in (200, 201):
            self.ids.extend(response.json()["parts"])

    @precondition(lambda self: bool(self.ids))
    @rule(data=st.data())
    def revert(self, data):
        ops = list(
            Operation.objects.filter(bank=self.bank, reverted_by__isnull=True)
            .exclude(kind="revert")
            .order_by("id")
            .values_list("id", flat=True)
        )
        if ops:
            op = ops[index(data, len(ops))]
            self.check_revert(op)

    @rule(data=st.data(), restore=st.booleans(), with_edge=st.booleans())
    def import_lines(self, data, restore, with_edge):
        lines = [
            {
                "type": "entry",
                "id": f"{data.draw(st.integers(0, 3)):08x}",
                "title": f"Imported fact {self.made}",
                "content": "Imported: the API gateway strips hop-by-hop headers.",
                "kind": "fact",
            }
        ]
        if with_edge and self.ids:
            lines.append(
                {"type": "edge", "from": lines[0]["id"], "to": self.pick(data), "relation": "cites"}
            )
        if self.ids and data.draw(st.booleans()):
            lines.append({"type": "alias", "entry": self.pick(data), "alias": "the gateway fact"})
        text = "\n".join(json.dumps(line) for line in lines) + "\n"
        path = "/import" + ("?restore_deleted=true" if restore else "")
        response = self.call("post", path, data=text, content_type="application/x-ndjson")
        assert response.status_code == 202, response.content
        job = self.client.get(f"/api/v1/jobs/{response.json()['job']}").json()
        assert job["status"] in ("succeeded", "failed"), job
        if job["status"] == "failed":
            assert all(e.get("line") for e in job["errors"]), job  # a line error, nothing else
        if lines[0]["id"] not in self.ids and job["status"] == "succeeded":
            self.ids.append(lines[0]["id"])

    @rule()
    def export_round_trip(self):
        self.check_round_trip()

    # --- invariants ------------------------------------------------------------------------

    def check_revert(self, op: int) -> None:
        """Revert ``op``: it reverts, or 409 names the operations that block it."""
        response = self.call("post", f"/operations/{op}/revert", {"reason": "check"})
        if response.status_code == 200:
            return
        error = response.json()["error"]
        assert response.status_code == 409, (op, response.content)
        if error["code"] == "revert_conflict":
            blocking = error.get("operations")
            assert blocking, ("a revert conflict must name what blocks it", op, error)
            known = set(Operation.objects.filter(bank=self.bank).values_list("id", flat=True))
            assert set(blocking) <= known and op not in blocking, (op, blocking)
        else:
            assert error["code"] == "already_reverted", error

    def check_round_trip(self) -> None:
        exported = "\n".join(export_lines(self.bank)) + "\n"
        n = next(self.counter)
        fresh = Bank.objects.create(slug=f"smcopy{n}", name=f"copy {n}")
        import_bank(fresh, exported, embed=False)
        assert texts(fresh) == texts(self.bank)

    @invariant()
    def no_server_error(self):
        assert self.last is None or self.last[3] < 500, self.last

    def teardown(self):
        if getattr(self, "bank", None) is not None:
            self.check_round_trip()


def test_write_api_state_machine(hashing_embedder, django_capture_on_commit_callbacks):
    WriteAPIMachine.run_on_commit = staticmethod(django_capture_on_commit_callbacks)
    run_state_machine_as_test(
        WriteAPIMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            derandomize=DERANDOMIZE,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no shrinking: bounded time
            suppress_health_check=list(HealthCheck),
        ),
    )
