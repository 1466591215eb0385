"""Admin for merge proposals: the curators' review queue."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html

from graph.actions.curation import DecideMergeProposal
from graph.admin.common import (
    GONE,
)
from graph.admin.merge import edges_table
from graph.curation.decisions import OPEN
from graph.curation.merge import plan_merge
from graph.models import (
    MergeProposal,
    ProposalStatus,
)
from kb.actions.staff import run_as_staff
from kb.admin_filters import BankFilter
from kb.errors import KbError

# --- Merge proposals: the review queue ---------------------------------------------------------

SIDE_BY_SIDE = ("title", "kind", "status", "summary", "content", "systems", "tasks", "key")


def _shown(value) -> str:
    if isinstance(value, list | tuple):
        value = ", ".join(str(v) for v in value)
    return "—" if value is None or value == "" else str(value)


class QueueFilter(admin.SimpleListFilter):
    """The review queue: "open" is every proposal awaiting a decision, whether the finder
    queued it as a likely duplicate (pending) or as unclear (a person must judge it)."""

    title = "queue"
    parameter_name = "queue"

    def lookups(self, request, model_admin):
        return [("open", "open (pending or unclear)"), ("decided", "decided")]

    def queryset(self, request, queryset):
        if self.value() == "open":
            return queryset.filter(status__in=OPEN)
        if self.value() == "decided":
            return queryset.exclude(status__in=OPEN)
        return queryset


def reasons_in_words(reasons: dict) -> list[str]:
    """The duplicate finder's evidence as sentences a curator can weigh."""
    lines = []
    if reasons.get("verdict"):
        lines.append(f"Verdict: {reasons['verdict']}.")
    if isinstance(reasons.get("cosine"), int | float):
        lines.append(f"The texts are {reasons['cosine']:.0%} alike (embedding cosine).")
    if isinstance(reasons.get("name_similarity"), int | float):
        lines.append(f"The titles are {reasons['name_similarity']:.0%} alike.")
    if reasons.get("shared_neighbours"):
        lines.append(f"They share {reasons['shared_neighbours']} connected entries.")
    if reasons.get("shared_tokens"):
        lines.append("Both titles contain: " + ", ".join(reasons["shared_tokens"]) + ".")
    if reasons.get("linked_as"):
        lines.append(
            "Already linked as " + ", ".join(reasons["linked_as"]) + ": likely two things."
        )
    decision = reasons.get("decision")
    if isinstance(decision, dict) and decision.get("decision"):
        said = f": {decision['reason']}" if decision.get("reason") else ""
        lines.append(f"Decided {decision['decision']}{said}.")
    return lines


@admin.register(MergeProposal)
class MergeProposalAdmin(admin.ModelAdmin):
    list_display = ("pair", "keep", "away", "score", "status", "created_at", "decided_by")
    list_filter = (BankFilter, QueueFilter, "status")
    list_select_related = ("keep", "away", "bank")
    search_fields = ("keep__short_id", "keep__title", "away__short_id", "away__title")
    readonly_fields = (
        "bank",
        "keep",
        "away",
        "score",
        "status",
        "decided_by",
        "decided_at",
        "operation",
        "created_at",
    )
    change_form_template = "admin/graph/mergeproposal/change_form.html"
    actions = ("approve_selected", "reject_selected", "mark_unclear_selected")

    def has_add_permission(self, request):
        return False  # proposals come from the similarity job

    @admin.display(description="proposal", ordering="pk")
    def pair(self, obj: MergeProposal) -> str:
        return f"“{obj.away.title}” into “{obj.keep.title}”"

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request)

    def has_delete_permission(self, request, obj=None):
        # Proposals end by a decision (the decide action), which the finder remembers; a
        # deleted row would be proposed again and leave no record of who dropped it.
        return False

    def has_decide_permission(self, request):
        return request.user.has_perm("graph.change_mergeproposal")

    def get_urls(self):
        decide = path(
            "<path:object_id>/decide/",
            self.admin_site.admin_view(self.decide_view),
            name="graph_mergeproposal_decide",
        )
        return [decide, *super().get_urls()]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        proposal = (
            MergeProposal.objects.filter(pk=object_id)
            .select_related("keep__kind", "away__kind", "bank")
            .first()
        )
        extra = dict(extra_context or {})
        if proposal is not None:
            keep, away = proposal.keep, proposal.away
            extra["why"] = reasons_in_words(proposal.reasons or {})
            extra["title"] = f"Merge “{away.title}” into “{keep.title}”?"
            extra["side_by_side"] = [
                (name, _shown(getattr(keep, name)), _shown(getattr(away, name)))
                for name in SIDE_BY_SIDE
            ]
            extra["pair"] = [
                {"role": "keep", "entry": keep, "edges": edges_table(keep)},
                {"role": "away", "entry": away, "edges": edges_table(away)},
            ]
            mergeable = keep.status not in GONE and away.status not in GONE
            extra["preview"] = plan_merge(keep, away) if mergeable else None
            extra["can_decide"] = self.has_decide_permission(request) and proposal.status in (
                ProposalStatus.PENDING,
                ProposalStatus.UNCLEAR,
            )
            extra["decide_url"] = reverse("admin:graph_mergeproposal_decide", args=[proposal.pk])
        return super().change_view(request, object_id, form_url, extra)

    def decide_view(self, request, object_id):
        if request.method != "POST" or not self.has_decide_permission(request):
            raise PermissionDenied
        proposal = get_object_or_404(MergeProposal.objects.select_related("bank"), pk=object_id)
        self._decide(
            request,
            proposal,
            request.POST.get("decision"),
            reason=request.POST.get("reason", ""),
            keep=request.POST.get("keep") or None,
        )
        return HttpResponseRedirect(reverse("admin:graph_mergeproposal_change", args=[object_id]))

    def _decide(self, request, proposal, decision, *, reason: str = "", keep=None) -> bool:
        """One decision through :func:`graph.curation.decisions.decide_proposal` (the service
        behind ``POST .../proposals/{id}/decide``)."""
        try:
            body = {"decision": decision, "reason": reason}
            if keep is not None:
                body["keep"] = keep
            result = run_as_staff(
                request,
                DecideMergeProposal,
                proposal.bank,
                ids={"proposal_id": proposal.pk},
                body=body,
            )
        except KbError as exc:
            self.message_user(request, f"Proposal #{proposal.pk}: {exc.message}", messages.ERROR)
            return False
        if result.merge is not None:
            merge = result.merge
            self.message_user(
                request,
                format_html(
                    'Proposal #{} approved: merged {} “{}” into {} “{}” (<a href="{}">operation'
                    " #{}</a>).",
                    proposal.pk,
                    merge.away.short_id,
                    merge.away.title,
                    merge.keep.short_id,
                    merge.keep.title,
                    reverse("admin:kb_operation_change", args=[result.operation.pk]),
                    result.operation.pk,
                ),
                messages.SUCCESS,
            )
        else:
            self.message_user(
                request,
                f"Proposal #{proposal.pk} marked {result.proposal.status}.",
                messages.SUCCESS,
            )
        return True

    def _decide_all(self, request, queryset, decision: str) -> None:
        for proposal in queryset.select_related("bank").order_by("-score", "pk"):
            self._decide(request, proposal, decision, reason="admin: bulk decision")

    @admin.action(description="Approve (merge)", permissions=["decide"])
    def approve_selected(self, request, queryset):
        self._decide_all(request, queryset, "approve")

    @admin.action(description="Reject", permissions=["decide"])
    def reject_selected(self, request, queryset):
        self._decide_all(request, queryset, "reject")

    @admin.action(description="Mark unclear", permissions=["decide"])
    def mark_unclear_selected(self, request, queryset):
        self._decide_all(request, queryset, "unclear")
