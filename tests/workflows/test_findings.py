"""What managers do with findings, and the audit trail it leaves."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission, User

from kb.errors import InvalidInput, NotFound
from workflows.models import Finding
from workflows.services.findings import assignable_users, change_finding, get_finding
from workflows.services.reports import build_report

pytestmark = pytest.mark.django_db


@pytest.fixture
def finding(flow):
    f = flow()
    f.step("Ship goods", start=True, owner=None, terminal=True)
    build_report(f.bank, f.process)
    return Finding.objects.get(rule="unowned_step")


def test_managers_group_holds_the_permissions():
    group = Group.objects.get(name="managers")
    codenames = set(group.permissions.values_list("codename", flat=True))
    assert {"view_gap_reports", "change_finding"} <= codenames
    assert Permission.objects.filter(codename="view_gap_reports").count() == 1


def test_status_actions_are_audited(finding, bank):
    for action, status in [
        ("acknowledge", "acknowledged"),
        ("accept", "accepted"),
        ("reopen", "open"),
        ("resolve", "resolved"),
    ]:
        changed = change_finding(
            bank, finding, action=action, actor="staff:maria", comment=f"{action} it"
        )
        assert changed.status == status
    finding.refresh_from_db()
    assert finding.status == "resolved" and finding.resolved_at is not None
    assert finding.comment == "resolve it"
    history = [
        (e.kind, e.from_status, e.to_status, e.actor, e.comment)
        for e in finding.events.order_by("at", "id")
    ]
    assert history == [
        ("detected", "", "open", "system:gap-report", ""),
        ("status", "open", "acknowledged", "staff:maria", "acknowledge it"),
        ("status", "acknowledged", "accepted", "staff:maria", "accept it"),
        ("status", "accepted", "open", "staff:maria", "reopen it"),
        ("status", "open", "resolved", "staff:maria", "resolve it"),
    ]


def test_assign_and_comment(finding, bank, manager, plain_staff):
    change_finding(bank, finding, action="assign", actor="staff:boss", assignee="maria")
    finding.refresh_from_db()
    assert finding.assignee == manager
    with pytest.raises(InvalidInput) as exc:
        change_finding(bank, finding, action="assign", actor="staff:boss", assignee="sam")
    assert exc.value.code == "invalid_assignee"
    change_finding(bank, finding, action="assign", actor="staff:boss", assignee="")
    finding.refresh_from_db()
    assert finding.assignee is None
    with pytest.raises(InvalidInput) as exc:
        change_finding(bank, finding, action="comment", actor="staff:boss", comment="  ")
    assert exc.value.code == "comment_required"
    change_finding(bank, finding, action="comment", actor="staff:boss", comment="Ask Billing.")
    finding.refresh_from_db()
    assert finding.comment == "Ask Billing." and finding.status == "open"
    kinds = [(e.kind, e.assignee) for e in finding.events.order_by("at", "id")]
    assert kinds == [("detected", ""), ("assigned", "maria"), ("assigned", ""), ("comment", "")]


def test_bad_actions_are_refused_and_change_nothing(finding, bank, other_bank):
    for kwargs, code in [
        ({"action": "delete"}, "invalid_action"),
        ({"action": "reopen"}, "status_unchanged"),
        ({"action": "comment", "comment": "x" * 2001}, "invalid_comment"),
    ]:
        with pytest.raises(InvalidInput) as exc:
            change_finding(bank, finding, actor="m", **kwargs)
        assert exc.value.code == code
    with pytest.raises(NotFound):
        change_finding(other_bank, finding, action="acknowledge", actor="m")
    assert finding.events.count() == 1
    with pytest.raises(InvalidInput) as malformed:
        get_finding(bank, finding.process, "abc")
    assert malformed.value.code == "invalid_id"
    with pytest.raises(NotFound):
        get_finding(bank, finding.process, str(finding.pk + 1000))
    assert get_finding(bank, finding.process, str(finding.pk)) == finding


def test_assignable_users_are_active_staff_managers(manager, plain_staff):
    boss = User.objects.create_superuser("boss", password="pw-boss-123")
    User.objects.create_user("gone", is_staff=True, is_active=False).groups.add(
        Group.objects.get(name="managers")
    )
    assert list(assignable_users()) == [boss, manager]
