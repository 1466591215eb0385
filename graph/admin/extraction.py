"""Admin of edge extraction: the proposal queue (accept, reject, bulk accept by confidence band)
and an action on selected entries that queues an extraction job. Every write calls a service
(``graph.curation.edge_proposals``, ``graph.ingest.extract.jobs``)."""

from __future__ import annotations

from collections import defaultdict

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from graph.curation import edge_proposals as queue
from graph.ingest.extract.jobs import queue_extraction
from graph.models import EdgeProposal, EdgeProposalStatus
from kb import audit
from kb.admin_filters import BankFilter
from kb.errors import KbError
from kb.models import Bank, Entry


class ConfidenceBandFilter(admin.SimpleListFilter):
    title = "confidence"
    parameter_name = "band"
    BANDS = {"high": (0.85, 1.0), "medium": (0.6, 0.85), "low": (0.0, 0.6)}

    def lookups(self, request, model_admin):
        return [
            ("high", "high (≥ 0.85)"),
            ("medium", "medium (0.60–0.85)"),
            ("low", "low (< 0.60)"),
        ]

    def queryset(self, request, qs):
        band = self.BANDS.get(self.value())
        if band is None:
            return qs
        lo, hi = band
        qs = qs.filter(confidence__gte=lo)
        return qs.filter(confidence__lte=hi) if hi == 1.0 else qs.filter(confidence__lt=hi)


class ResolvedFilter(admin.SimpleListFilter):
    title = "ends"
    parameter_name = "ends"

    def lookups(self, request, model_admin):
        return [("resolved", "both resolved"), ("unresolved", "an end unresolved")]

    def queryset(self, request, qs):
        if self.value() == "resolved":
            return qs.filter(from_entry__isnull=False, to_entry__isnull=False)
        if self.value() == "unresolved":
            return qs.filter(from_entry__isnull=True) | qs.filter(to_entry__isnull=True)
        return qs


class BandForm(forms.Form):
    bank = forms.ModelChoiceField(queryset=Bank.objects.order_by("slug"))
    min_confidence = forms.FloatField(min_value=0, max_value=1, initial=0.85)
    max_confidence = forms.FloatField(min_value=0, max_value=1, initial=1.0)
    reason = forms.CharField(required=False, max_length=500)


@admin.register(EdgeProposal)
class EdgeProposalAdmin(admin.ModelAdmin):
    """The queue: read the span, then accept (writes the edge) or reject (kept forever)."""

    list_display = (
        "id",
        "statement",
        "span_short",
        "confidence",
        "extractor",
        "status",
        "source_entry",
        "bank",
    )
    list_filter = (BankFilter, "status", ConfidenceBandFilter, ResolvedFilter, "extractor")
    list_select_related = ("type", "bank", "source_entry", "from_entry", "to_entry")
    search_fields = ("span", "from_text", "to_text", "source_entry__short_id")
    ordering = ("-confidence", "id")
    readonly_fields = [f.name for f in EdgeProposal._meta.fields]
    actions = ("accept_selected", "reject_selected")
    change_list_template = "admin/graph/edgeproposal/change_list.html"

    def has_add_permission(self, request):
        return False  # proposals come from extraction runs

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request)

    def has_decide_permission(self, request):
        return request.user.has_perm("graph.change_edgeproposal")

    @admin.display(description="proposal")
    def statement(self, obj: EdgeProposal) -> str:
        def end(entry, text):
            return f"{entry.short_id} {entry.title}" if entry else f"“{text}” (unresolved)"

        return format_html(
            "{} <b>{}</b> {}",
            end(obj.from_entry, obj.from_text),
            obj.type.name,
            end(obj.to_entry, obj.to_text),
        )

    @admin.display(description="span")
    def span_short(self, obj: EdgeProposal) -> str:
        return obj.span if len(obj.span) <= 140 else obj.span[:139] + "…"

    def get_urls(self):
        band = path(
            "accept-band/",
            self.admin_site.admin_view(self.accept_band_view),
            name="graph_edgeproposal_accept_band",
        )
        return [band, *super().get_urls()]

    def changelist_view(self, request, extra_context=None):
        extra = dict(extra_context or {})
        extra["accept_band_url"] = reverse("admin:graph_edgeproposal_accept_band")
        return super().changelist_view(request, extra)

    def accept_band_view(self, request):
        if not self.has_decide_permission(request):
            raise PermissionDenied
        form = BandForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                result = queue.accept_band(
                    data["bank"],
                    min_confidence=data["min_confidence"],
                    max_confidence=data["max_confidence"],
                    reason=data["reason"],
                )
            except KbError as exc:
                self.message_user(request, exc.message, messages.ERROR)
            else:
                self._report(request, result)
                return HttpResponseRedirect(reverse("admin:graph_edgeproposal_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "title": "Bulk accept edge proposals by confidence band",
            "form": form,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/graph/edgeproposal/accept_band.html", context)

    def _report(self, request, result: queue.BulkAccept) -> None:
        if result.accepted:
            self.message_user(
                request,
                f"Accepted {len(result.accepted)} proposal(s) as operation "
                f"#{result.operation.pk} (revert it to undo them all).",
                messages.SUCCESS,
            )
        for skip in result.skipped:
            self.message_user(
                request, f"Proposal #{skip['proposal']}: {skip['message']}", messages.WARNING
            )
        if not result.accepted and not result.skipped:
            self.message_user(request, "No open, resolved proposal in that band.", messages.INFO)

    @admin.action(
        description="Accept selected (writes the edges, one operation)", permissions=["decide"]
    )
    def accept_selected(self, request, queryset):
        by_bank = defaultdict(list)
        for proposal in queryset.select_related("bank"):
            if proposal.status != EdgeProposalStatus.OPEN:
                self.message_user(
                    request,
                    f"Proposal #{proposal.pk} was already {proposal.status}.",
                    messages.WARNING,
                )
            elif not proposal.resolved:
                self.message_user(
                    request,
                    f"Proposal #{proposal.pk} has an unresolved end; accept it over the API "
                    "naming the entry, or reject it.",
                    messages.WARNING,
                )
            else:
                by_bank[proposal.bank].append(proposal.pk)
        for bank, ids in by_bank.items():
            self._report(request, queue.accept_band(bank, min_confidence=0.0, ids=ids))

    @admin.action(description="Reject selected (never raised again)", permissions=["decide"])
    def reject_selected(self, request, queryset):
        count = 0
        for proposal in queryset.select_related("bank"):
            try:
                queue.decide_edge_proposal(proposal.bank, proposal.pk, "reject")
                count += 1
            except KbError as exc:
                self.message_user(
                    request, f"Proposal #{proposal.pk}: {exc.message}", messages.WARNING
                )
        if count:
            self.message_user(request, f"Rejected {count} proposal(s).", messages.SUCCESS)


@admin.action(description="Extract edge proposals from selected (local extractor)")
def extract_edges_from_selected(modeladmin, request, queryset):
    """Queue one extraction job per bank over the selected entries."""
    by_bank = defaultdict(list)
    for entry in queryset.select_related("bank"):
        by_bank[entry.bank].append(entry.short_id)
    actor = audit.current().actor
    for bank, ids in by_bank.items():
        with transaction.atomic():
            job = queue_extraction(bank, ids, "local", actor)
        job.refresh_from_db()
        modeladmin.message_user(
            request,
            f"Extraction job {job.public_id} on {bank.slug}: {len(ids)} entries, {job.status}. "
            "Review the results under Edge proposals.",
            messages.SUCCESS,
        )


# The entry admin is registered elsewhere (and moving): add the action to whatever class holds it.
_entry_admin = admin.site._registry.get(Entry)
if _entry_admin is not None and extract_edges_from_selected not in (_entry_admin.actions or ()):
    type(_entry_admin).actions = (*type(_entry_admin).actions, extract_edges_from_selected)
