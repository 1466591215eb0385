"""What managers do with findings: acknowledge, accept, resolve, reopen, assign, comment.

Every change is one transaction that writes a :class:`FindingEvent` (who, when, from which
status to which, the comment), so a finding's history reads as a log.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from kb.errors import InvalidInput, NotFound
from kb.inputs import parse_int_id
from kb.models import Bank, Entry
from workflows.models import Finding, FindingEvent, FindingEventKind, FindingStatus

STATUS_ACTIONS = {
    "acknowledge": FindingStatus.ACKNOWLEDGED,
    "accept": FindingStatus.ACCEPTED,
    "resolve": FindingStatus.RESOLVED,
    "reopen": FindingStatus.OPEN,
}
ACTIONS = (*STATUS_ACTIONS, "assign", "comment")
COMMENT_MAX = 2000
VIEW_PERMISSION = "workflows.view_gap_reports"
CHANGE_PERMISSION = "workflows.change_finding"
MANAGERS_GROUP = "managers"


def get_finding(bank: Bank, process: Entry, finding_id: Any) -> Finding:
    """A finding of ``process`` in ``bank``; 404 ``finding_not_found`` otherwise."""
    pk = parse_int_id(finding_id, "finding_id")
    finding = Finding.objects.filter(bank=bank, process=process, pk=pk).first()
    if finding is None:
        raise NotFound(f"No finding {finding_id!r} in this process.", code="finding_not_found")
    return finding


def assignable_users():
    """Active staff who may work findings: superusers and holders of the change permission."""
    User = get_user_model()
    perm = Q(user_permissions__codename="change_finding") | Q(
        groups__permissions__codename="change_finding"
    )
    return (
        User.objects.filter(is_active=True, is_staff=True)
        .filter(Q(is_superuser=True) | perm)
        .distinct()
        .order_by("username")
    )


def change_finding(
    bank: Bank,
    finding: Finding,
    *,
    action: str,
    actor: str,
    comment: str = "",
    assignee: str | None = None,
) -> Finding:
    """Apply one manager action to ``finding`` and record it.

    ``action`` is one of acknowledge, accept, resolve, reopen (status changes), assign
    (``assignee`` is a username, or empty to unassign) or comment (``comment`` required).
    """
    if action not in ACTIONS:
        raise InvalidInput(
            f"Unknown action {action!r}; use one of {', '.join(ACTIONS)}.",
            code="invalid_action",
            fields={"action": "Unknown action."},
        )
    if not isinstance(comment, str):
        raise InvalidInput("comment must be text.", code="invalid_comment")
    comment = comment.strip()
    if len(comment) > COMMENT_MAX:
        raise InvalidInput(
            f"A comment may be at most {COMMENT_MAX} characters.",
            code="invalid_comment",
            fields={"comment": "Too long."},
        )
    if finding.bank_id != bank.pk:
        raise NotFound("No such finding in this bank.", code="finding_not_found")
    now = timezone.now()
    with transaction.atomic():
        finding = Finding.objects.select_for_update().get(pk=finding.pk)
        event = FindingEvent(
            finding=finding,
            bank=bank,
            at=now,
            actor=actor,
            from_status=finding.status,
            to_status=finding.status,
            comment=comment,
        )
        if action in STATUS_ACTIONS:
            _change_status(finding, event, STATUS_ACTIONS[action], now)
        elif action == "assign":
            _assign(finding, event, assignee)
        else:
            if not comment:
                raise InvalidInput(
                    "Write a comment first.",
                    code="comment_required",
                    fields={"comment": "Required."},
                )
            event.kind = FindingEventKind.COMMENT
        if comment:
            finding.comment = comment
        finding.save(
            update_fields=["status", "status_changed_at", "resolved_at", "assignee", "comment"]
        )
        event.save()
    return finding


def _change_status(finding: Finding, event: FindingEvent, target: str, now) -> None:
    if finding.status == target:
        raise InvalidInput(f"The finding is already {target}.", code="status_unchanged")
    event.kind = FindingEventKind.STATUS
    event.to_status = target
    finding.status = target
    finding.status_changed_at = now
    finding.resolved_at = now if target == FindingStatus.RESOLVED else None


def _assign(finding: Finding, event: FindingEvent, assignee: str | None) -> None:
    user = None
    if assignee:
        user = assignable_users().filter(username=assignee).first()
        if user is None:
            raise InvalidInput(
                f"{assignee!r} is not a manager who can work findings.",
                code="invalid_assignee",
                fields={"assignee": "Not a manager."},
            )
    if (user.pk if user else None) == finding.assignee_id:
        raise InvalidInput("The finding already has this assignee.", code="unchanged")
    event.kind = FindingEventKind.ASSIGNED
    event.assignee = user.get_username() if user else ""
    finding.assignee = user
