"""The curators' admin for the graph: thin views over the graph services.

Every write goes through a service and so is one audited operation: adding an edge calls
:func:`graph.edges.links.link` (note rule, duplicate check, audit), changing one calls
``retype`` or ``correct_edges``, the "Unlink" action calls ``unlink``, new aliases call
``add_alias``, merges call :func:`graph.curation.merge.merge_entries` and reverts call
``revert_operation``. Closed edges are read-only, edges are never deleted, and the
simple-history "revert to this version" form is disabled (reverts are whole operations).

kb never imports graph, so this module re-registers kb's Entry and Operation admins with
subclasses that add the graph parts (edge and alias inlines, merge, revert).
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.widgets import AutocompleteSelect, RelatedFieldWidgetWrapper
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.forms.models import BaseInlineFormSet
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from graph.admin.common import (
    GONE,
    NoHistoryRevertMixin,
    _check_type_bank,
    _refuse_gone,
)
from graph.curation import merge as curation
from graph.curation.delete import delete_entry, plan_delete
from graph.curation.lifecycle import restore_entry, retire_entry
from graph.curation.merge import plan_merge
from graph.curation.split import split_entry
from graph.curation.timeline import entry_timeline
from graph.edges import links as edge_service
from graph.models import (
    Alias,
    Edge,
    EdgeSource,
    EdgeType,
)
from graph.resolution import aliases as alias_service
from kb import audit
from kb.admin import EntryAdmin
from kb.errors import KbError
from kb.models import Entry, EntryStatus

# --- Entry: edge and alias inlines, merge action -----------------------------------------------


class ServiceInlineFormSet(BaseInlineFormSet):
    """Existing rows are read-only; each filled extra row is written by its form's ``write``."""

    def get_form_kwargs(self, index):
        return {**super().get_form_kwargs(index), "parent": self.instance}

    def write_through_services(self, request, model_admin) -> None:
        self.new_objects, self.changed_objects, self.deleted_objects = [], [], []
        for form in self.extra_forms:
            if not form.has_changed() or not form.is_valid():
                continue
            try:
                self.new_objects.append(form.write(self.instance))
            except KbError as exc:
                model_admin.message_user(request, exc.message, messages.ERROR)


class NewEdgeForm(forms.ModelForm):
    """An extra row of an edge inline: validated like ``link`` (bank, note rule, duplicate)
    and written by ``link`` when the entry is saved."""

    outgoing = True

    def __init__(self, *args, parent: Entry | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.parent = parent

    def _ends(self, other: Entry) -> tuple[Entry, Entry]:
        return (self.parent, other) if self.outgoing else (other, self.parent)

    def _payload(self, other: Entry) -> dict:
        source, target = self._ends(other)
        data = self.cleaned_data
        return {
            "from": source,
            "to": target,
            "relation": data["type"].name,
            "note": data.get("note") or "",
            "label": data.get("label") or "",
        }

    def clean(self):
        data = super().clean()
        other_field = "to_entry" if self.outgoing else "from_entry"
        other, etype = data.get(other_field), data.get("type")
        if self.instance.pk is not None or self.parent is None or other is None or etype is None:
            return data
        _refuse_gone(self.parent, other_field)
        _refuse_gone(other, other_field)
        _check_type_bank(etype, self.parent.bank_id)
        try:  # the link service's own checks, so the page shows them before anything is written
            req = edge_service.clean_link(self.parent.bank, self._payload(other))
            edge_service.check_not_believed(req)
        except KbError as exc:
            raise ValidationError(exc.message) from None
        return data

    def write(self, entry: Entry) -> Edge:
        other = self.cleaned_data["to_entry" if self.outgoing else "from_entry"]
        return edge_service.link(
            entry.bank, self._payload(other), reason="admin link", source=EdgeSource.STAFF
        )


class NewIncomingEdgeForm(NewEdgeForm):
    outgoing = False


class NewAliasForm(forms.ModelForm):
    """An extra alias row, written by ``add_alias`` when the entry is saved."""

    def __init__(self, *args, parent: Entry | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.parent = parent

    def clean_surface(self):
        surface = (self.cleaned_data.get("surface") or "").strip()
        if self.instance.pk is None and self.parent is not None:
            norm = alias_service.normalize(surface)
            if not norm:
                raise ValidationError("An alias needs letters or digits.")
        return surface

    def write(self, entry: Entry) -> Alias:
        return alias_service.add_alias(
            entry.bank, entry, self.cleaned_data["surface"], source="staff"
        )


class BankScopedAutocomplete(AutocompleteSelect):
    """An entry picker that searches only the parent entry's bank (``?bank=`` is read by
    :meth:`GraphEntryAdmin.get_search_results`)."""

    def __init__(self, field, admin_site, bank_id: int, **kwargs):
        super().__init__(field, admin_site, **kwargs)
        self.bank_id = bank_id

    def get_url(self):
        return f"{super().get_url()}?bank={self.bank_id}"


class ServiceInline(admin.TabularInline):
    formset = ServiceInlineFormSet
    template = "admin/graph/edit_inline/tabular.html"
    extra = 1

    def has_change_permission(self, request, obj=None):
        return False  # existing rows change through their own admin (retype, unlink)

    def has_delete_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request, obj=None):
        return (
            obj is not None and obj.status not in GONE and super().has_add_permission(request, obj)
        )


class OutgoingEdgeInline(ServiceInline):
    model = Edge
    fk_name = "from_entry"
    form = NewEdgeForm
    verbose_name = "outgoing edge"
    verbose_name_plural = "outgoing edges (current)"
    fields = ("edge_link", "type", "label", "to_entry", "note", "unlink_link")
    readonly_fields = ("edge_link", "unlink_link")
    other_end = "to_entry"

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)
        if obj is not None:
            fields = formset.form.base_fields
            # Relations: the core vocabulary plus this bank's own; ends: this bank's entries.
            fields["type"].queryset = EdgeType.objects.filter(
                Q(bank__isnull=True) | Q(bank_id=obj.bank_id)
            ).order_by("name")
            end = fields[self.other_end]
            end.queryset = Entry.objects.filter(bank_id=obj.bank_id).exclude(status__in=GONE)
            end.widget = RelatedFieldWidgetWrapper(
                BankScopedAutocomplete(
                    Edge._meta.get_field(self.other_end), self.admin_site, obj.bank_id
                ),
                Edge._meta.get_field(self.other_end).remote_field,
                self.admin_site,
            )
        return formset

    @admin.display(description="")
    def unlink_link(self, obj: Edge) -> str:
        if obj is None or obj.pk is None:
            return ""
        url = reverse("admin:graph_edge_unlink", args=[obj.pk])
        back = reverse(
            "admin:kb_entry_change",
            args=[obj.from_entry_id if self.fk_name == "from_entry" else obj.to_entry_id],
        )
        return format_html('<a class="button" href="{}?next={}">Unlink…</a>', url, back)

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .filter(edge_service.current_q())
            .select_related("type", "from_entry", "to_entry")
        )

    @admin.display(description="edge")
    def edge_link(self, obj: Edge) -> str:
        if obj is None or obj.pk is None:
            return "new"
        url = reverse("admin:graph_edge_change", args=[obj.pk])
        return format_html('<a href="{}">#{}</a>', url, obj.pk)


class IncomingEdgeInline(OutgoingEdgeInline):
    fk_name = "to_entry"
    form = NewIncomingEdgeForm
    verbose_name = "incoming edge"
    verbose_name_plural = "incoming edges (current)"
    fields = ("edge_link", "from_entry", "type", "label", "note", "unlink_link")
    other_end = "from_entry"


class AliasInline(ServiceInline):
    model = Alias
    form = NewAliasForm
    fields = ("surface", "alias_source", "alias_added")
    readonly_fields = ("alias_source", "alias_added")

    @admin.display(description="source")
    def alias_source(self, obj: Alias) -> str:
        return obj.source if obj is not None and obj.pk else "new"

    @admin.display(description="added")
    def alias_added(self, obj: Alias) -> str:
        return f"{obj.created_at:%Y-%m-%d %H:%M} by {obj.actor or '?'}" if obj and obj.pk else ""


class GraphEntryAdmin(NoHistoryRevertMixin, EntryAdmin):
    """kb's Entry admin plus current edges and aliases inline, and the merge action."""

    inlines = (OutgoingEdgeInline, IncomingEdgeInline, AliasInline)
    actions = (
        *EntryAdmin.actions,
        "retire_selected",
        "restore_selected",
        "merge_selected",
        "split_selected",
        "delete_bridging",
    )

    def get_inline_instances(self, request, obj=None):
        return super().get_inline_instances(request, obj) if obj is not None else []

    def get_formsets_with_inlines(self, request, obj=None):
        # A POST that does not carry an inline (an edit scripted against the entry fields
        # only) leaves that inline alone instead of failing on its missing management form.
        for formset, inline in super().get_formsets_with_inlines(request, obj):
            prefix = formset.get_default_prefix()
            if request.method == "POST" and f"{prefix}-TOTAL_FORMS" not in request.POST:
                continue
            yield formset, inline

    def save_formset(self, request, form, formset, change):
        if isinstance(formset, ServiceInlineFormSet):
            formset.write_through_services(request, self)
        else:
            super().save_formset(request, form, formset, change)

    def get_search_results(self, request, queryset, search_term):
        queryset, distinct = super().get_search_results(request, queryset, search_term)
        if request.GET.get("app_label") == "graph":  # autocomplete for an edge or alias end
            queryset = queryset.exclude(status__in=GONE)
            bank = request.GET.get("bank", "")
            if bank.isdigit():  # a picker on an entry's page: that entry's bank only
                queryset = queryset.filter(bank_id=int(bank))
            queryset = queryset.select_related("kind")
        return queryset, distinct

    def history_view(self, request, object_id, extra_context=None):
        """One timeline: the entry's versions, its edges and its aliases, grouped by the
        operation that wrote them, in words and titles (:func:`entry_timeline`)."""
        entry = get_object_or_404(Entry.objects.select_related("bank", "kind"), pk=object_id)
        if not self.has_view_or_change_permission(request, entry):
            raise PermissionDenied
        context = {
            **self.admin_site.each_context(request),
            "title": f"History of {entry.short_id} “{entry.title}”",
            "opts": self.model._meta,
            "entry": entry,
            "timeline": entry_timeline(entry),
        }
        return TemplateResponse(request, "admin/graph/entry/timeline.html", context)

    # -- status changes: only through their services ------------------------------------------

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.status in GONE:
            return False
        return request.user.has_perm("kb.delete_entry")

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # Django's cascade; entries delete by bridging
        return actions

    def delete_view(self, request, object_id, extra_context=None):
        """Delete with bridging (:func:`graph.curation.delete.delete_entry`, as
        ``DELETE /entries/{id}``): the page shows the plan, a reason is required."""
        entry = get_object_or_404(Entry.objects.select_related("bank", "kind"), pk=object_id)
        if not self.has_delete_permission(request, entry):
            raise PermissionDenied
        error = ""
        if request.method == "POST":
            reason = (request.POST.get("reason") or "").strip()
            if not reason:
                error = "Give a reason: it is recorded on the delete operation."
            else:
                try:
                    result = delete_entry(entry.bank, entry.short_id, reason)
                except KbError as exc:
                    error = exc.message
                else:
                    self.message_user(
                        request,
                        format_html(
                            'Deleted {} “{}”: {} connection(s) bridged (<a href="{}">operation'
                            " #{}</a>, revertible).",
                            entry.short_id,
                            entry.title,
                            result.bridged,
                            reverse("admin:kb_operation_change", args=[result.operation.pk]),
                            result.operation.pk,
                        ),
                        messages.SUCCESS,
                    )
                    return HttpResponseRedirect(reverse("admin:kb_entry_changelist"))
        context = {
            **self.admin_site.each_context(request),
            "title": f"Delete {entry.short_id} “{entry.title}”",
            "opts": self.model._meta,
            "entry": entry,
            "plan": plan_delete(entry.bank, entry),
            "error": error,
            "reason": request.POST.get("reason", ""),
        }
        return TemplateResponse(request, "admin/graph/entry/delete_confirmation.html", context)

    @admin.action(description="Delete (bridging its edges) …", permissions=["delete"])
    def delete_bridging(self, request, queryset):
        entries = list(queryset[:2])
        if len(entries) != 1:
            self.message_user(request, "Select one entry to delete.", messages.WARNING)
            return None
        return HttpResponseRedirect(reverse("admin:kb_entry_delete", args=[entries[0].pk]))

    @admin.action(description="Retire (reason and evidence) …", permissions=["change"])
    def retire_selected(self, request, queryset):
        """:func:`graph.curation.lifecycle.retire_entry` per entry (``POST .../retire``)."""
        entries = list(queryset.select_related("bank", "kind").order_by("pk"))
        live = [e for e in entries if e.status == EntryStatus.LIVE]
        error = ""
        if request.POST.get("confirm") == "yes":
            reason = request.POST.get("reason", "")
            evidence = request.POST.get("evidence", "")
            superseded_by = (request.POST.get("superseded_by") or "").strip() or None
            done = []
            try:
                with transaction.atomic():  # all or nothing for one curator action
                    for entry in live:
                        retire_entry(
                            entry.bank,
                            entry.short_id,
                            reason,
                            evidence,
                            superseded_by=superseded_by,
                        )
                        done.append(entry.short_id)
            except KbError as exc:
                error = exc.message + (
                    " " + "; ".join(f"{k}: {v}" for k, v in exc.fields.items())
                    if exc.fields
                    else ""
                )
            else:
                self.message_user(
                    request, f"Retired {', '.join(done) or 'nothing'}.", messages.SUCCESS
                )
                return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Retire entries",
            "opts": self.model._meta,
            "entries": live,
            "skipped": [e for e in entries if e.status != EntryStatus.LIVE],
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
            "error": error,
            "reason": request.POST.get("reason", ""),
            "evidence": request.POST.get("evidence", ""),
            "superseded_by": request.POST.get("superseded_by", ""),
        }
        return TemplateResponse(request, "admin/graph/entry/retire_confirmation.html", context)

    @admin.action(description="Restore (undo a retirement)", permissions=["change"])
    def restore_selected(self, request, queryset):
        """:func:`graph.curation.lifecycle.restore_entry` per retired entry."""
        done = []
        for entry in queryset.select_related("bank").filter(status=EntryStatus.RETIRED):
            try:
                restore_entry(entry.bank, entry.short_id, reason="admin: restored")
            except KbError as exc:
                self.message_user(request, f"{entry.short_id}: {exc.message}", messages.ERROR)
            else:
                done.append(entry.short_id)
        if done:
            self.message_user(request, f"Restored {', '.join(done)}.", messages.SUCCESS)
        else:
            self.message_user(request, "No retired entry was selected.", messages.WARNING)

    @admin.action(description="Merge selected into …", permissions=["change"])
    def merge_selected(self, request, queryset):
        entries = list(queryset.select_related("bank", "kind").order_by("pk"))
        if len(entries) != 2:
            self.message_user(request, "Select exactly two entries to merge.", messages.WARNING)
            return None
        first, second = entries
        if first.bank_id != second.bank_id:
            self.message_user(request, "Entries of different banks never merge.", messages.ERROR)
            return None
        gone = [e for e in entries if e.status in GONE]
        if gone:
            self.message_user(
                request,
                f"{gone[0].short_id} is already {gone[0].status}; it cannot be merged.",
                messages.ERROR,
            )
            return None
        chosen = request.POST.get("preview_keep") or request.POST.get("keep")
        keep = second if chosen == str(second.pk) else first
        away = first if keep is second else second
        error = ""
        if request.POST.get("confirm") == "yes" and not request.POST.get("preview_keep"):
            reason = (request.POST.get("reason") or "").strip()
            if not reason:
                error = "Give a reason: it is recorded on the merge operation."
            else:
                try:
                    result = curation.merge_entries(keep.bank, keep.short_id, away.short_id, reason)
                except KbError as exc:
                    self.message_user(request, exc.message, messages.ERROR)
                    return None
                counts = result.as_json()
                self.message_user(
                    request,
                    format_html(
                        'Merged {} into {} (<a href="{}">operation #{}</a>): {} edges '
                        "re-pointed, {} collapsed, {} self-loops dropped, {} aliases added.",
                        away.short_id,
                        keep.short_id,
                        reverse("admin:kb_operation_change", args=[result.operation.pk]),
                        result.operation.pk,
                        counts["edges_repointed"],
                        counts["edges_collapsed"],
                        len(counts["self_loops_dropped"]),
                        counts["aliases_added"],
                    ),
                    messages.SUCCESS,
                )
                return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Merge entries",
            "opts": self.model._meta,
            "entries": entries,
            "keep": keep,
            "away": away,
            "preview": plan_merge(keep, away),
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
            "error": error,
            "reason": request.POST.get("reason", ""),
        }
        return TemplateResponse(request, "admin/graph/entry/merge_confirmation.html", context)

    @admin.action(description="Split selected into parts …", permissions=["change"])
    def split_selected(self, request, queryset):
        """One entry → new parts joined by ``split_from``; each current edge stays or moves
        to a part. One ``split`` operation (revertible from the Operation page)."""
        entries = list(queryset.select_related("bank", "kind"))
        if len(entries) != 1 or entries[0].status in GONE:
            self.message_user(request, "Select exactly one live entry to split.", messages.WARNING)
            return None
        entry = entries[0]
        edges = list(
            Edge.objects.filter(bank=entry.bank)
            .filter(Q(from_entry=entry) | Q(to_entry=entry))
            .filter(edge_service.current_q())
            .select_related("type", "from_entry", "to_entry")
            .order_by("id")
        )
        parts_text = request.POST.get("parts", "")
        error = ""
        if request.POST.get("confirm") == "yes":
            parts = [
                {
                    "title": title.strip(),
                    "summary": summary.strip(),
                    "kind": entry.kind.name,
                    "lifetime": {"durable": True},
                }
                for title, _, summary in (line.partition("|") for line in parts_text.splitlines())
                if title.strip()
            ]
            moves = {}
            for edge in edges:
                choice = (request.POST.get(f"edge_{edge.pk}") or "keep").strip()
                if choice != "keep":
                    moves[str(edge.pk)] = int(choice) - 1 if choice.isdigit() else choice
            try:
                result = split_entry(
                    entry.bank,
                    entry.short_id,
                    parts,
                    edges=moves,
                    reason=request.POST.get("reason", ""),
                    actor=audit.current().actor,
                )
            except KbError as exc:
                error = exc.message + (
                    " " + "; ".join(f"{k}: {v}" for k, v in exc.fields.items())
                    if exc.fields
                    else ""
                )
            else:
                self.message_user(
                    request,
                    format_html(
                        'Split {} into {} (<a href="{}">operation #{}</a>).',
                        entry.short_id,
                        ", ".join(part.short_id for part in result.parts),
                        reverse("admin:kb_operation_change", args=[result.operation.pk]),
                        result.operation.pk,
                    ),
                    messages.SUCCESS,
                )
                return None
        context = {
            **self.admin_site.each_context(request),
            "title": f"Split {entry.short_id}",
            "opts": self.model._meta,
            "entry": entry,
            "edges": edges,
            "parts": parts_text,
            "reason": request.POST.get("reason", ""),
            "error": error,
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/graph/entry/split_confirmation.html", context)


admin.site.unregister(Entry)
admin.site.register(Entry, GraphEntryAdmin)
