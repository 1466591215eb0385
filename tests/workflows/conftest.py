"""Builders for small process graphs: entries through the services, edges through ``link``."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from graph.edges.links import link
from kb.services.entries import clean_entry_data, create_entry


class FlowBuilder:
    """Build a process in ``bank``: steps join it with part_of, flow edges by name."""

    def __init__(self, bank, title: str = "Order to cash"):
        self.bank = bank
        self.process = self.entry(title, "process")
        self.roles: dict[str, object] = {}

    def entry(self, title: str, kind: str, **metadata):
        data = {
            "title": title,
            "content": f"{title} ({kind}).",
            "kind": kind,
            "metadata": metadata,
            "lifetime": {"durable": True},
        }
        return create_entry(self.bank, clean_entry_data(self.bank, data), allow_duplicate=True)

    def member(self, title: str, kind: str = "step", **metadata):
        entry = self.entry(title, kind, **metadata)
        self.link(entry, self.process, "part_of")
        return entry

    def step(self, title: str, *, owner: str | None = "Operations", **metadata):
        entry = self.member(title, "step", **metadata)
        if owner:
            self.own(entry, owner)
        return entry

    def decision(self, title: str, *, owner: str | None = "Operations", **metadata):
        entry = self.member(title, "decision_point", **metadata)
        if owner:
            self.own(entry, owner)
        return entry

    def artifact(self, title: str, *, member: bool = True, **metadata):
        return (
            self.member(title, "artifact", **metadata)
            if member
            else self.entry(title, "artifact", **metadata)
        )

    def own(self, entry, role_title: str):
        role = self.roles.get(role_title)
        if role is None:
            role = self.roles[role_title] = self.entry(role_title, "role")
        return self.link(entry, role, "owned_by")

    def link(self, a, b, relation: str, **fields):
        return link(
            self.bank, {"from": a.short_id, "to": b.short_id, "relation": relation, **fields}
        )

    def chain(self, *entries, relation: str = "precedes"):
        for a, b in zip(entries, entries[1:], strict=False):
            self.link(a, b, relation)


@pytest.fixture
def flow(bank):
    """``flow()`` starts a new process in the ``acme`` bank."""
    return lambda title="Order to cash": FlowBuilder(bank, title)


@pytest.fixture
def healthy(flow):
    """A process with no hole: a start, a two-way decision, a loop with an exit, produced and
    external requirements, an owner everywhere, a terminal step."""
    f = flow("Healthy order to cash")
    receive = f.step("Receive order", start=True)
    check = f.step("Check credit", owner="Credit control")
    ok = f.decision("Credit ok?", owner="Credit control")
    reject = f.step("Reject order", terminal=True)
    ship = f.step("Ship goods", owner="Warehouse")
    paid = f.decision("Paid?", owner="Accounts receivable")
    remind = f.step("Send reminder", owner="Accounts receivable")
    close = f.step("Close order", terminal=True, owner="Accounts receivable")
    f.chain(receive, check, ok, ship, paid, close)
    f.link(ok, reject, "precedes")
    f.link(paid, remind, "precedes")
    f.link(remind, paid, "precedes")
    po = f.artifact("Customer PO", external=True)
    order = f.artifact("Sales order")
    f.link(receive, po, "requires")
    f.link(receive, order, "produces")
    f.link(ship, order, "requires")
    f.steps = dict(
        receive=receive,
        check=check,
        ok=ok,
        reject=reject,
        ship=ship,
        paid=paid,
        remind=remind,
        close=close,
    )
    return f


@pytest.fixture
def manager(db):
    user = User.objects.create_user("maria", password="pw-maria-123", is_staff=True)
    user.groups.add(Group.objects.get(name="managers"))
    return user


@pytest.fixture
def plain_staff(db):
    return User.objects.create_user("sam", password="pw-sam-123", is_staff=True)
