"""Admin for merge proposals: the curators' review queue."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils import timezone

from graph.admin.common import (
    GONE,
)
from graph.admin.merge import edges_table, preview_merge
from graph.curation import merge as curation
from graph.models import (
    MergeProposal,
    ProposalStatus,
)
from kb import audit
from kb.errors import KbError

# --- Merge proposals: the review queue ---------------------------------------------------------

SIDE_BY_SIDE = ("title", "kind", "status", "summary", "content", "systems", "tasks", "key")


def _shown(value) -> str:
    if isinstance(value, list | tuple):
        value = ", ".join(str(v) for v in value)
    return "—" if value is None or value == "" else str(value)


@admin.register(MergeProposal)
class MergeProposalAdmin(admin.ModelAdmin):
    list_display = ("id", "keep", "away", "score", "status", "created_at", "decided_by")
    list_filter = ("status", "bank")
    list_select_related = ("keep", "away", "bank")
    search_fields = ("keep__short_id", "keep__title", "away__short_id", "away__title")
    readonly_fields = (
        "bank",
        "keep",
        "away",
        "score",
        "reasons",
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

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request)

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
            extra["side_by_side"] = [
                (name, _shown(getattr(keep, name)), _shown(getattr(away, name)))
                for name in SIDE_BY_SIDE
            ]
            extra["pair"] = [
                {"role": "keep", "entry": keep, "edges": edges_table(keep)},
                {"role": "away", "entry": away, "edges": edges_table(away)},
            ]
            mergeable = keep.status not in GONE and away.status not in GONE
            extra["preview"] = preview_merge(keep, away) if mergeable else None
            extra["can_decide"] = self.has_decide_permission(request) and proposal.status in (
                ProposalStatus.PENDING,
                ProposalStatus.UNCLEAR,
            )
            extra["decide_url"] = reverse("admin:graph_mergeproposal_decide", args=[proposal.pk])
        return super().change_view(request, object_id, form_url, extra)

    def decide_view(self, request, object_id):
        if request.method != "POST" or not self.has_decide_permission(request):
            raise PermissionDenied
        proposal = get_object_or_404(MergeProposal, pk=object_id)
        decision = request.POST.get("decision")
        if decision == "approve":
            self._approve(request, proposal)
        elif decision in ("reject", "unclear"):
            self._decide(request, [proposal], decision)
        else:
            self.message_user(request, "Unknown decision.", messages.ERROR)
        return HttpResponseRedirect(reverse("admin:graph_mergeproposal_change", args=[object_id]))

    def _open(self, request, proposal: MergeProposal) -> bool:
        if proposal.status in (ProposalStatus.PENDING, ProposalStatus.UNCLEAR):
            return True
        self.message_user(
            request, f"Proposal #{proposal.pk} was already {proposal.status}.", messages.WARNING
        )
        return False

    def _approve(self, request, proposal: MergeProposal) -> bool:
        if not self._open(request, proposal):
            return False
        proposal = MergeProposal.objects.select_related("bank", "keep", "away").get(pk=proposal.pk)
        try:
            with transaction.atomic():
                result = curation.merge_entries(
                    proposal.bank,
                    proposal.keep.short_id,
                    proposal.away.short_id,
                    f"approved proposal #{proposal.pk}",
                )
                proposal.status = ProposalStatus.APPROVED
                proposal.decided_by = audit.current().actor
                proposal.decided_at = timezone.now()
                proposal.operation = result.operation
                proposal.save(update_fields=["status", "decided_by", "decided_at", "operation"])
        except KbError as exc:
            self.message_user(request, f"Proposal #{proposal.pk}: {exc.message}", messages.ERROR)
            return False
        self.message_user(
            request,
            f"Proposal #{proposal.pk} approved: merged {proposal.away.short_id} into "
            f"{proposal.keep.short_id} (operation #{result.operation.pk}).",
            messages.SUCCESS,
        )
        return True

    def _decide(self, request, proposals, decision: str) -> None:
        status = ProposalStatus.REJECTED if decision == "reject" else ProposalStatus.UNCLEAR
        count = 0
        for proposal in proposals:
            if proposal.status == status or not self._open(request, proposal):
                continue
            proposal.status = status
            proposal.decided_by = audit.current().actor
            proposal.decided_at = timezone.now()
            proposal.save(update_fields=["status", "decided_by", "decided_at"])
            count += 1
        if count:
            self.message_user(request, f"Marked {count} proposal(s) {status}.", messages.SUCCESS)

    @admin.action(description="Approve (merge)", permissions=["decide"])
    def approve_selected(self, request, queryset):
        for proposal in queryset.order_by("-score", "pk"):
            self._approve(request, proposal)

    @admin.action(description="Reject", permissions=["decide"])
    def reject_selected(self, request, queryset):
        self._decide(request, list(queryset), "reject")

    @admin.action(description="Mark unclear", permissions=["decide"])
    def mark_unclear_selected(self, request, queryset):
        self._decide(request, list(queryset), "unclear")
