"""Manager pages: processes with open findings and trend, a process's flow and its findings.

Server-rendered, staff login; viewing needs ``workflows.view_gap_reports`` and changing a
finding ``workflows.change_finding`` (the "managers" group holds both; superusers pass). Views
are thin: they resolve the bank and process, call a service and render.
"""

from __future__ import annotations

import csv
from functools import wraps

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from kb.actions.staff import execute_as, staff_caller
from kb.errors import InvalidInput, KbError, NotFound
from kb.models import Bank
from workflows.actions import DecideFinding, regenerate_report
from workflows.models import FindingEvent, FindingStatus, Rule
from workflows.services import findings as finding_service
from workflows.services.diagram import render_diagram, render_sparkline
from workflows.services.reports import (
    ensure_report,
    open_counts,
    process_overview,
    report_findings,
)
from workflows.services.subgraph import find_process, load_process_graph

VIEW = finding_service.VIEW_PERMISSION
CHANGE = finding_service.CHANGE_PERMISSION


def manager_required(*perms: str):
    """Staff with ``perms`` only: anonymous users go to the login page, others get 403."""

    def decorate(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            user = request.user
            if not user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not (user.is_active and user.is_staff and user.has_perms(perms)):
                raise PermissionDenied("Workflow reports are for managers.")
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


def _bank(slug: str) -> Bank:
    bank = Bank.objects.filter(slug=slug).first()
    if bank is None:
        raise Http404("No such bank.")
    return bank


def _process(bank: Bank, process_id: str):
    try:
        return find_process(bank, process_id)
    except NotFound as exc:
        raise Http404(exc.message) from exc


def _actor(request) -> str:
    return f"staff:{request.user.get_username()}"


def _filters(request) -> tuple[str, str]:
    rule = request.GET.get("rule", "")
    status = request.GET.get("status", "")
    return (
        rule if rule in Rule.values else "",
        status if status in FindingStatus.values else "",
    )


@require_GET
@manager_required(VIEW)
def process_list(request, bank: str | None = None):
    """Every process (of one bank, or of all) with open findings and their trend."""
    banks = [_bank(bank)] if bank else list(Bank.objects.order_by("slug"))
    sections = []
    for bank_obj in banks:
        rows = process_overview(bank_obj, build_missing=True, actor=_actor(request))
        for row in rows:
            row.sparkline = render_sparkline(row.trend)
        if rows or bank:
            sections.append({"bank": bank_obj, "rows": rows})
    return render(
        request,
        "workflows/process_list.html",
        {"sections": sections, "single_bank": banks[0] if bank else None},
    )


@require_GET
@manager_required(VIEW)
def process_detail(request, bank: str, process_id: str):
    """The flow diagram with its holes, and the findings table with filters and actions."""
    bank_obj = _bank(bank)
    process = _process(bank_obj, process_id)
    report = ensure_report(bank_obj, process, actor=_actor(request))
    graph = load_process_graph(bank_obj, process)
    all_findings = report_findings(report)
    rule, status = _filters(request)
    shown = [f for f in all_findings if (not rule or f.rule == rule)]
    shown = [f for f in shown if (not status or f.status == status)]
    events: dict[int, list[FindingEvent]] = {}
    for event in FindingEvent.objects.filter(
        bank=bank_obj, finding_id__in=[f.pk for f in shown]
    ).order_by("at", "id"):
        events.setdefault(event.finding_id, []).append(event)
    titles = {n.short_id: n.title for n in graph.nodes.values()}
    for finding in shown:
        finding.history = events.get(finding.pk, [])
        finding.entry_refs = [
            {"id": short_id, "title": titles.get(short_id, "")} for short_id in finding.entries
        ]
        finding.actions = [
            (action, label)
            for action, label, target in (
                ("acknowledge", "Acknowledge", FindingStatus.ACKNOWLEDGED),
                ("accept", "Accept risk", FindingStatus.ACCEPTED),
                ("resolve", "Resolve", FindingStatus.RESOLVED),
                ("reopen", "Reopen", FindingStatus.OPEN),
            )
            if finding.status != target
        ]
    can_change = request.user.has_perm(CHANGE)
    return render(
        request,
        "workflows/process_detail.html",
        {
            "bank": bank_obj,
            "process": process,
            "report": report,
            "diagram": render_diagram(graph, all_findings),
            "findings": shown,
            "total": len(all_findings),
            "counts": open_counts(report),
            "rules": Rule.choices,
            "statuses": FindingStatus.choices,
            "rule": rule,
            "status": status,
            "can_change": can_change,
            "assignees": list(finding_service.assignable_users()) if can_change else [],
            "step_count": len(graph.steps),
        },
    )


@require_POST
@manager_required(VIEW, CHANGE)
def regenerate(request, bank: str, process_id: str):
    """The "Regenerate now" button."""
    bank_obj = _bank(bank)
    process = _process(bank_obj, process_id)
    built = regenerate_report(staff_caller(request), process)
    report = built.report
    messages.success(
        request,
        f"Report regenerated: {report.finding_count} findings, {built.created} new, "
        f"{built.auto_resolved} closed since the last report.",
    )
    return redirect("workflows:process", bank=bank_obj.slug, process_id=process.short_id)


# Decisions that close a finding are asked for a reason (the page's confirmation step).
DECISIONS_NEEDING_A_COMMENT = ("accept", "resolve")


@require_POST
@manager_required(VIEW, CHANGE)
def finding_action(request, bank: str, process_id: str, finding_id: int):
    """Acknowledge, accept, resolve, reopen, assign or comment on one finding (audited)."""
    bank_obj = _bank(bank)
    process = _process(bank_obj, process_id)
    try:
        finding = finding_service.get_finding(bank_obj, process, finding_id)
    except (NotFound, InvalidInput) as exc:  # a malformed id names no finding either
        raise Http404(exc.message) from exc
    action = request.POST.get("action", "")
    comment = (request.POST.get("comment") or "").strip()
    if action in DECISIONS_NEEDING_A_COMMENT and not comment:
        messages.error(
            request,
            f"Finding #{finding.pk}: say why in the comment box before you "
            f"{'accept the risk' if action == 'accept' else 'mark it resolved'}; "
            "nothing was changed.",
        )
        target = reverse("workflows:process", args=[bank_obj.slug, process.short_id])
        return redirect(f"{target}#finding-{finding.pk}")
    try:
        execute_as(
            staff_caller(request),
            DecideFinding,
            bank_obj,
            ids={"process_id": process.short_id, "finding_id": finding.pk},
            body={
                "action": action,
                "comment": request.POST.get("comment", ""),
                "assignee": request.POST.get("assignee", ""),
            },
        )
        messages.success(request, f"Finding #{finding.pk} updated.")
    except KbError as exc:
        messages.error(request, f"Finding #{finding.pk}: {exc.message}")
    fallback = reverse("workflows:process", args=[bank_obj.slug, process.short_id])
    target = request.POST.get("next") or fallback
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = fallback
    return redirect(f"{target.split('#')[0]}#finding-{finding.pk}")


def _cell(value: object) -> str:
    """A CSV cell that a spreadsheet will not run as a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


@require_GET
@manager_required(VIEW)
def findings_csv(request, bank: str, process_id: str):
    """The findings of the latest report as CSV (the page's filters apply)."""
    bank_obj = _bank(bank)
    process = _process(bank_obj, process_id)
    report = ensure_report(bank_obj, process, actor=_actor(request))
    rule, status = _filters(request)
    graph = load_process_graph(bank_obj, process)
    titles = {n.short_id: n.title for n in graph.nodes.values()}
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = (
        f'attachment; filename="{bank_obj.slug}-{process.short_id}-gaps.csv"'
    )
    writer = csv.writer(response)
    writer.writerow(
        [
            "finding",
            "rule",
            "severity",
            "status",
            "entries",
            "entry_titles",
            "message",
            "assignee",
            "comment",
            "first_seen_at",
            "last_seen_at",
            "report",
            "generated_at",
        ]
    )
    for f in report_findings(report, rule=rule, status=status):
        writer.writerow(
            [
                _cell(v)
                for v in (
                    f.pk,
                    f.rule,
                    f.severity,
                    f.status,
                    " ".join(f.entries),
                    "; ".join(titles.get(e, e) for e in f.entries),
                    f.message,
                    f.assignee.get_username() if f.assignee else "",
                    f.comment,
                    f.first_seen_at.isoformat(),
                    f.last_seen_at.isoformat(),
                    report.pk,
                    report.generated_at.isoformat(),
                )
            ]
        )
    return response


@require_GET
@manager_required(VIEW)
def flow_svg(request, bank: str, process_id: str):
    """The flow drawing alone, at full size; holes link back to the process page."""
    bank_obj = _bank(bank)
    process = _process(bank_obj, process_id)
    report = ensure_report(bank_obj, process, actor=_actor(request))
    page = reverse("workflows:process", args=[bank_obj.slug, process.short_id])
    diagram = render_diagram(
        load_process_graph(bank_obj, process), report_findings(report), link_base=page
    )
    if diagram.svg is None:
        raise Http404(diagram.note)
    return HttpResponse(diagram.svg, content_type="image/svg+xml; charset=utf-8")
