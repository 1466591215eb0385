"""Admin of edge extraction: the proposal queue (accept, reject, bulk accept by confidence band)
and an action on selected entries that queues an extraction job. Every write calls a service
(``graph.curation.edge_proposals``, ``graph.ingest.extract.jobs``)."""

from __future__ import annotations

from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from graph.actions.extraction import AcceptProposalBand, DecideEdgeProposal
from graph.admin.entries import BankScopedAutocomplete
from graph.curation import edge_proposals as queue
from graph.ingest.extract import confidence as scoring
from graph.models import EdgeProposal, EdgeProposalStatus
from kb.actions.staff import run_as_staff
from kb.admin_filters import BankFilter
from kb.banks_directory import switcher_suggestions
from kb.errors import KbError
from kb.models import Bank, Entry, EntryStatus


class ConfidenceBandFilter(admin.SimpleListFilter):
    """The bands of ``graph.ingest.extract.confidence`` (the bench reports each one's
    precision on the tuning and blind sets)."""

    title = "confidence"
    parameter_name = "band"
    BANDS = {name: (lo, hi) for name, lo, hi in scoring.BANDS}

    def lookups(self, request, model_admin):
        return [
            (name, f"{name} (≥ {lo:.2f})" if hi == 1.0 else f"{name} ({lo:.2f}–{hi:.2f})")
            for name, lo, hi in scoring.BANDS
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
    """A bulk accept: a band (or the selected ids) and a reason; previewed before it runs."""

    bank = forms.ModelChoiceField(
        queryset=Bank.objects.filter(archived_at__isnull=True),
        widget=forms.TextInput(attrs={"list": "kb-band-banks", "placeholder": "bank slug"}),
        to_field_name="slug",
    )
    min_confidence = forms.FloatField(min_value=0, max_value=1, initial=scoring.HIGH)
    max_confidence = forms.FloatField(min_value=0, max_value=1, initial=1.0)
    reason = forms.CharField(
        max_length=500,
        widget=forms.TextInput(attrs={"size": 60}),
        help_text="Recorded on the operation; say why this batch is safe to accept.",
    )
    ids = forms.CharField(required=False, widget=forms.HiddenInput)

    def clean_ids(self) -> list[int] | None:
        raw = (self.cleaned_data.get("ids") or "").strip()
        if not raw:
            return None
        try:
            return [int(x) for x in raw.split(",") if x.strip()]
        except ValueError:
            raise forms.ValidationError("Malformed selection.") from None


class DecideForm(forms.Form):
    """Accept or reject one proposal; an unresolved end is picked with the edge picker."""

    from_entry = forms.ModelChoiceField(queryset=Entry.objects.none(), required=False)
    to_entry = forms.ModelChoiceField(queryset=Entry.objects.none(), required=False)
    reason = forms.CharField(
        required=False, max_length=500, widget=forms.TextInput(attrs={"size": 60})
    )

    def __init__(self, *args, proposal: EdgeProposal, admin_site, **kwargs):
        super().__init__(*args, **kwargs)
        live = Entry.objects.filter(bank_id=proposal.bank_id).exclude(
            status__in=(EntryStatus.MERGED, EntryStatus.DELETED)
        )
        for name, text in (("from_entry", proposal.from_text), ("to_entry", proposal.to_text)):
            field = self.fields[name]
            field.label = f"{'From' if name == 'from_entry' else 'To'} (“{text}”)"
            field.widget = BankScopedAutocomplete(
                EdgeProposal._meta.get_field(name), admin_site, proposal.bank_id
            )
            field.queryset = live  # after the widget: the setter hands it the choices
            field.initial = getattr(proposal, f"{name}_id")


PREVIEW_ROWS = 200


def _candidates(proposal: EdgeProposal) -> list[dict]:
    """The candidates stored for an unresolved end, as entries a page can name and link."""
    raw = proposal.candidates or {}
    ids = {c.get("id") for side in raw.values() for c in side if isinstance(c, dict)}
    found = {
        e.short_id: e
        for e in Entry.objects.filter(bank_id=proposal.bank_id, short_id__in=ids).select_related(
            "kind"
        )
    }
    return [
        {"side": side, "entry": found.get(c.get("id")), "score": c.get("score")}
        for side, listed in raw.items()
        for c in listed
        if isinstance(c, dict) and found.get(c.get("id"))
    ]


def confidence_terms(proposal: EdgeProposal) -> list[dict]:
    """Each feature's contribution to the proposal's confidence, in words (largest first)."""
    return [
        {"words": scoring.WORDS.get(name, name), "value": value}
        for name, value in (proposal.confidence_basis or {}).get("terms", [])
    ]


def _next_in_queue(proposal: EdgeProposal) -> str:
    """The next open proposal of the same bank (the queue is worked in order), or the list."""
    following = (
        EdgeProposal.objects.filter(bank_id=proposal.bank_id, status=EdgeProposalStatus.OPEN)
        .order_by("-confidence", "pk")
        .values_list("pk", flat=True)
        .first()
    )
    if following is not None:
        return reverse("admin:graph_edgeproposal_change", args=[following])
    return (
        reverse("admin:graph_edgeproposal_changelist")
        + f"?bank__id__exact={proposal.bank_id}&status__exact=open"
    )


@admin.register(EdgeProposal)
class EdgeProposalAdmin(admin.ModelAdmin):
    """The queue: read the span, then accept (writes the edge) or reject (kept forever)."""

    list_display = (
        "id",
        "statement",
        "span_short",
        "confidence",
        "why",
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

    def has_delete_permission(self, request, obj=None):
        return False  # proposals end by a decision (accept or reject), never by a row delete

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

    @admin.display(description="why (largest contributions)")
    def why(self, obj: EdgeProposal) -> str:
        return scoring.explain(obj.confidence_basis, limit=2) or "—"

    @admin.display(description="span")
    def span_short(self, obj: EdgeProposal) -> str:
        return obj.span if len(obj.span) <= 140 else obj.span[:139] + "…"

    def get_urls(self):
        band = path(
            "accept-band/",
            self.admin_site.admin_view(self.accept_band_view),
            name="graph_edgeproposal_accept_band",
        )
        decide = path(
            "<path:object_id>/decide/",
            self.admin_site.admin_view(self.decide_view),
            name="graph_edgeproposal_decide",
        )
        return [band, decide, *super().get_urls()]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """The review page: the statement in words, the quoted span, the candidates of an
        unresolved end, and Accept / Reject with a picker for each end."""
        proposal = get_object_or_404(
            EdgeProposal.objects.select_related(
                "bank", "type", "source_entry", "from_entry__kind", "to_entry__kind"
            ),
            pk=object_id,
        )
        if not self.has_view_or_change_permission(request, proposal) and not (
            self.has_decide_permission(request)
        ):
            raise PermissionDenied
        return self._review(
            request, proposal, DecideForm(proposal=proposal, admin_site=self.admin_site)
        )

    def _review(self, request, proposal: EdgeProposal, form: DecideForm):
        context = {
            **self.admin_site.each_context(request),
            "title": f"Edge proposal #{proposal.pk}",
            "opts": self.model._meta,
            "proposal": proposal,
            "form": form,
            "media": self.media + form.media,
            "candidates": _candidates(proposal),
            "band": scoring.band_of(proposal.confidence),
            "confidence_terms": confidence_terms(proposal),
            "can_decide": self.has_decide_permission(request)
            and proposal.status == EdgeProposalStatus.OPEN,
            "decide_url": reverse("admin:graph_edgeproposal_decide", args=[proposal.pk]),
        }
        return TemplateResponse(request, "admin/graph/edgeproposal/review.html", context)

    def decide_view(self, request, object_id):
        if request.method != "POST" or not self.has_decide_permission(request):
            raise PermissionDenied
        proposal = get_object_or_404(EdgeProposal.objects.select_related("bank"), pk=object_id)
        form = DecideForm(request.POST, proposal=proposal, admin_site=self.admin_site)
        if not form.is_valid():
            return self._review(request, proposal, form)
        decision = "reject" if "_reject" in request.POST else "accept"
        ends = {
            side: (
                form.cleaned_data[f"{side}_entry"].short_id
                if form.cleaned_data[f"{side}_entry"]
                else None
            )
            for side in ("from", "to")
        }
        try:
            body = {"decision": decision, "reason": form.cleaned_data["reason"] or ""}
            if decision == "accept":
                body.update({side: ref for side, ref in ends.items() if ref is not None})
            result = run_as_staff(
                request,
                DecideEdgeProposal,
                proposal.bank,
                ids={"proposal_id": proposal.pk},
                body=body,
            )
        except KbError as exc:
            form.add_error(None, exc.message)
            return self._review(request, proposal, form)
        if result.edge is not None:
            self.message_user(
                request,
                format_html(
                    'Accepted proposal #{}: wrote <a href="{}">edge #{}</a> (operation #{}).',
                    proposal.pk,
                    reverse("admin:graph_edge_change", args=[result.edge.pk]),
                    result.edge.pk,
                    result.operation.pk,
                ),
                messages.SUCCESS,
            )
        else:
            self.message_user(request, f"Rejected proposal #{proposal.pk}.", messages.SUCCESS)
        return HttpResponseRedirect(_next_in_queue(proposal))

    def changelist_view(self, request, extra_context=None):
        extra = dict(extra_context or {})
        extra["accept_band_url"] = reverse("admin:graph_edgeproposal_accept_band")
        return super().changelist_view(request, extra)

    def accept_band_view(self, request):
        """Bulk accept in two steps: the preview (how many, which ones) and, once confirmed,
        one operation through the bulk accept action (:class:`AcceptProposalBand`)."""
        if not self.has_decide_permission(request):
            raise PermissionDenied
        data = request.POST if request.method == "POST" else (request.GET or None)
        form = BandForm(data)
        form.fields["reason"].required = "_confirm" in request.POST  # previews need none
        preview = None
        if data is not None and form.is_valid():
            band = form.cleaned_data
            lo, hi = band["min_confidence"], band["max_confidence"]
            if lo > hi:
                form.add_error("max_confidence", "The band's top is below its bottom.")
            elif request.method == "POST" and "_confirm" in request.POST:
                try:
                    result = run_as_staff(
                        request,
                        AcceptProposalBand,
                        band["bank"],
                        body={
                            "min_confidence": lo,
                            "max_confidence": hi,
                            "ids": band["ids"],
                            "reason": band["reason"],
                        },
                    )
                except KbError as exc:
                    self.message_user(request, exc.message, messages.ERROR)
                else:
                    self._report(request, result)
                    return HttpResponseRedirect(reverse("admin:graph_edgeproposal_changelist"))
            else:
                chosen = queue.band_proposals(band["bank"], lo, hi, band["ids"])
                rows = list(
                    chosen.select_related("type", "from_entry", "to_entry").order_by(
                        "-confidence", "pk"
                    )[:PREVIEW_ROWS]
                )
                for row in rows:
                    row.why = scoring.explain(row.confidence_basis, limit=2)
                preview = {"count": chosen.count(), "rows": rows}
        context = {
            **self.admin_site.each_context(request),
            "title": "Bulk accept edge proposals",
            "form": form,
            "preview": preview,
            "preview_rows": PREVIEW_ROWS,
            "bank_suggestions": switcher_suggestions(),
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
        """Opens the bulk accept preview for the selection (one bank at a time); proposals
        with an unresolved end are listed with a link to pick the entry on their page."""
        chosen = list(queryset.select_related("bank").order_by("pk"))
        banks = {p.bank for p in chosen}
        if len(banks) != 1:
            self.message_user(
                request, "Select proposals of one bank (filter by bank first).", messages.WARNING
            )
            return None
        for proposal in chosen:
            if proposal.status == EdgeProposalStatus.OPEN and not proposal.resolved:
                self.message_user(
                    request,
                    format_html(
                        'Proposal #{} has an unresolved end: <a href="{}">open it</a> to pick '
                        "the entry.",
                        proposal.pk,
                        reverse("admin:graph_edgeproposal_change", args=[proposal.pk]),
                    ),
                    messages.WARNING,
                )
        query = urlencode(
            {
                "bank": banks.pop().slug,
                "min_confidence": 0,
                "max_confidence": 1,
                "ids": ",".join(str(p.pk) for p in chosen),
                "reason": "",
            }
        )
        return HttpResponseRedirect(f"{reverse('admin:graph_edgeproposal_accept_band')}?{query}")

    @admin.action(description="Reject selected (never raised again)", permissions=["decide"])
    def reject_selected(self, request, queryset):
        count = 0
        for proposal in queryset.select_related("bank"):
            try:
                run_as_staff(
                    request,
                    DecideEdgeProposal,
                    proposal.bank,
                    ids={"proposal_id": proposal.pk},
                    body={"decision": "reject"},
                )
                count += 1
            except KbError as exc:
                self.message_user(
                    request, f"Proposal #{proposal.pk}: {exc.message}", messages.WARNING
                )
        if count:
            self.message_user(request, f"Rejected {count} proposal(s).", messages.SUCCESS)
