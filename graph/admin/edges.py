"""Admin for the relation vocabulary (edge types) and edges: every write through the edge services."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.text import Truncator
from simple_history.admin import SimpleHistoryAdmin

from graph.actions.edges import LinkEntries, RetypeEdge, UnlinkEdge, UnlinkEdges
from graph.actions.traverse import CorrectEdges
from graph.actions.vocabulary import DeleteEdgeType, SaveEdgeType
from graph.admin.common import (
    NoHistoryRevertMixin,
    _check_type_bank,
    _entry_label,
    _refuse_gone,
    _relation_label,
    form_with_caller,
)
from graph.edges import links as edge_service
from graph.models import (
    Edge,
    EdgeType,
)
from kb.actions.staff import execute_as, run_as_staff
from kb.admin_config import ActionSaveAdmin
from kb.admin_filters import BankFilter
from kb.api.render import iso
from kb.errors import KbError

# --- Edge types -------------------------------------------------------------------------------


@admin.register(EdgeType)
class EdgeTypeAdmin(ActionSaveAdmin, admin.ModelAdmin):
    """The relation vocabulary, saved through ``SaveEdgeType`` (one ``configure`` operation on
    the type's bank). Core types (no bank) are shared: only superusers edit them."""

    save_action = SaveEdgeType
    delete_action = DeleteEdgeType

    list_display = (
        "name",
        "bank_display",
        "inverse",
        "fold_role",
        "transitive",
        "neighbor_priority",
        "workflow_role",
    )
    list_filter = (
        BankFilter,
        ("bank", admin.EmptyFieldListFilter),
        "fold_role",
        "transitive",
        "workflow_role",
    )
    list_select_related = ("bank",)
    search_fields = ("name", "inverse", "description", "bank__slug")
    ordering = ("bank__slug", "name")

    @admin.display(description="bank", ordering="bank__slug")
    def bank_display(self, obj: EdgeType) -> str:
        return obj.bank.slug if obj.bank_id else "core"

    def get_readonly_fields(self, request, obj=None):
        # A type never moves between banks: its edges would point across tenants.
        return ("bank",) if obj is not None else ()

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        if "bank" in form.base_fields and not request.user.is_superuser:
            form.base_fields["bank"].required = True
            form.base_fields["bank"].help_text = "Only superusers add core (bank-less) types."
        return form

    def _core_locked(self, request, obj) -> bool:
        return obj is not None and obj.bank_id is None and not request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return not self._core_locked(request, obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return not self._core_locked(request, obj) and super().has_delete_permission(request, obj)


# --- Edges ------------------------------------------------------------------------------------


class HasNoteFilter(admin.SimpleListFilter):
    title = "has note"
    parameter_name = "has_note"

    def lookups(self, request, model_admin):
        return [("yes", "Yes"), ("no", "No")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.exclude(note="")
        if self.value() == "no":
            return queryset.filter(note="")
        return queryset


class EdgeStateFilter(admin.SimpleListFilter):
    """Current (believed and valid now), believed but outside its valid time, or closed."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [
            ("current", "Current"),
            ("not_valid_now", "Believed, not valid now"),
            ("closed", "Closed (invalidated)"),
        ]

    def queryset(self, request, queryset):
        now = timezone.now()
        if self.value() == "current":
            return queryset.filter(edge_service.current_q(now))
        if self.value() == "not_valid_now":
            return queryset.filter(invalidated_at__isnull=True).filter(
                Q(valid_from__gt=now) | Q(valid_to__lte=now)
            )
        if self.value() == "closed":
            return queryset.filter(invalidated_at__isnull=False)
        return queryset


def _instant(value) -> str | None:
    return value.isoformat() if value is not None else None


class EdgeAddForm(forms.ModelForm):
    """A new edge, written by ``link`` once the form itself is valid (service errors become
    non-field errors and nothing is written)."""

    class Meta:
        model = Edge
        fields = ("from_entry", "type", "label", "to_entry", "note", "valid_from", "valid_to")

    def clean(self):
        data = super().clean()
        source, target, etype = (data.get(k) for k in ("from_entry", "to_entry", "type"))
        if source is not None:
            _refuse_gone(source, "from_entry")
        if target is not None:
            _refuse_gone(target, "to_entry")
        if source is not None and etype is not None:
            _check_type_bank(etype, source.bank_id)
        if source is not None and source == target:
            raise ValidationError("An edge cannot join an entry to itself.")
        return data

    def _post_clean(self):
        super()._post_clean()
        if self.errors:
            return
        data = self.cleaned_data
        source = data["from_entry"]
        body = {
            "from": source.short_id,
            "to": data["to_entry"].short_id,
            "relation": data["type"].name,
            "note": data.get("note") or "",
            "label": data.get("label") or "",
            "valid_from": _instant(data.get("valid_from")),
            "valid_to": _instant(data.get("valid_to")),
            "reason": "admin link",
        }
        try:
            self.instance = execute_as(self.caller, LinkEntries, source.bank, body=body)
        except KbError as exc:
            self.add_error(None, exc.message)


class EdgeChangeForm(forms.ModelForm):
    """An open edge's relation, label or note. A relation change alone is a ``retype``; a
    note or label change closes the row and appends the corrected one (``correct_edges``)."""

    reason = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
        help_text="Required when you change anything; recorded on the operation.",
    )

    class Meta:
        model = Edge
        fields = ("type", "label", "note")

    def clean(self):
        data = super().clean()
        if data.get("type") is not None:
            _check_type_bank(data["type"], self.instance.bank_id)
        changed = set(self.changed_data) - {"reason"}
        if changed and not (data.get("reason") or "").strip():
            self.add_error("reason", "Say why the edge changes.")
        return data

    def _post_clean(self):
        super()._post_clean()
        changed = set(self.changed_data) - {"reason"}
        if self.errors or not changed:
            return
        data = self.cleaned_data
        old = Edge.objects.select_related("bank", "from_entry", "to_entry").get(pk=self.instance.pk)
        reason = data["reason"].strip()
        try:
            if changed == {"type"}:
                self.instance = execute_as(
                    self.caller,
                    RetypeEdge,
                    old.bank,
                    ids={"edge_id": old.pk},
                    body={"relation": data["type"].name, "reason": reason},
                )
                return
            # The body as a client sends it (ids and instants as strings): the action
            # checks it against the one declaration.
            corrected = {
                "from": old.from_entry.short_id,
                "to": old.to_entry.short_id,
                "relation": data["type"].name,
                "note": data.get("note") or "",
                "label": data.get("label") or "",
                "evidence": old.evidence,
                "valid_from": iso(old.valid_from),
                "valid_to": iso(old.valid_to),
            }
            result = execute_as(
                self.caller,
                CorrectEdges,
                old.bank,
                body={"close": [old.pk], "append": [corrected], "reason": reason},
            )
        except KbError as exc:
            self.add_error(None, exc.message)
            return
        self.instance = Edge.objects.get(pk=result["appended"][0])


EDGE_ADD_FIELDS = ("from_entry", "type", "label", "to_entry", "note", "valid_from", "valid_to")
EDGE_READONLY = (
    "bank",
    "from_entry",
    "to_entry",
    "source",
    "actor",
    "valid_from",
    "valid_to",
    "recorded_at",
    "invalidated_at",
    "invalidated_reason",
    "replaces",
    "evidence_json",
)


@admin.register(Edge)
class EdgeAdmin(NoHistoryRevertMixin, SimpleHistoryAdmin):
    list_display = (
        "id",
        "from_display",
        "relation_display",
        "to_display",
        "note_display",
        "source",
        "valid_from",
        "valid_to",
        "recorded_at",
        "invalidated_at",
    )
    list_display_links = ("id",)
    list_filter = (BankFilter, "type", "source", HasNoteFilter, EdgeStateFilter)
    list_select_related = ("bank", "type", "from_entry", "to_entry")
    search_fields = (
        "note",
        "from_entry__short_id",
        "from_entry__title",
        "to_entry__short_id",
        "to_entry__title",
    )
    autocomplete_fields = ("from_entry", "to_entry", "type")
    actions = ("unlink_selected",)
    date_hierarchy = "recorded_at"

    # -- changelist columns

    @admin.display(description="from", ordering="from_entry__title")
    def from_display(self, obj: Edge) -> str:
        return _entry_label(obj.from_entry)

    @admin.display(description="relation", ordering="type__name")
    def relation_display(self, obj: Edge) -> str:
        return _relation_label(obj)

    @admin.display(description="to", ordering="to_entry__title")
    def to_display(self, obj: Edge) -> str:
        return _entry_label(obj.to_entry)

    @admin.display(description="note")
    def note_display(self, obj: Edge) -> str:
        return Truncator(obj.note).chars(60)

    @admin.display(description="evidence")
    def evidence_json(self, obj: Edge) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.evidence or {}, indent=2, default=str))

    # -- forms: add through link, change through retype / correct_edges

    def get_form(self, request, obj=None, change=False, **kwargs):
        kwargs["form"] = EdgeAddForm if obj is None else EdgeChangeForm
        return form_with_caller(super().get_form(request, obj, change=change, **kwargs), request)

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return [(None, {"fields": EDGE_ADD_FIELDS})]
        edge = ["from_entry", "type", "label", "to_entry", "note"]
        if obj.invalidated_at is None:
            edge.append("reason")
        return [
            ("Edge", {"fields": edge}),
            (
                "Time",
                {
                    "fields": (
                        "valid_from",
                        "valid_to",
                        "recorded_at",
                        "invalidated_at",
                        "invalidated_reason",
                    )
                },
            ),
            ("Provenance", {"fields": ("bank", "source", "actor", "evidence_json", "replaces")}),
        ]

    def get_readonly_fields(self, request, obj=None):
        return EDGE_READONLY if obj is not None else ()

    def has_change_permission(self, request, obj=None):
        if obj is not None and obj.invalidated_at is not None:
            return False  # closed rows are the record of what was believed
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return False  # edges are unlinked (closed), never deleted

    def has_unlink_permission(self, request):
        return self.has_change_permission(request)

    def save_model(self, request, obj, form, change):
        """The form already wrote the edge through a service (or changed nothing)."""

    # -- unlink

    def get_urls(self):
        unlink = path(
            "<path:object_id>/unlink/",
            self.admin_site.admin_view(self.unlink_view),
            name="graph_edge_unlink",
        )
        return [unlink, *super().get_urls()]

    def unlink_view(self, request, object_id):
        """Unlink one edge (from its page or an entry's page): a reason, then ``unlink``."""
        if not self.has_unlink_permission(request):
            raise PermissionDenied
        edge = get_object_or_404(
            Edge.objects.select_related("bank", "type", "from_entry", "to_entry"), pk=object_id
        )
        back = request.GET.get("next") or request.POST.get("next") or ""
        if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
            back = ""
        back = back or reverse("admin:graph_edge_change", args=[edge.pk])
        error = ""
        if request.method == "POST":
            reason = (request.POST.get("reason") or "").strip()
            if not reason:
                error = "Give a reason: it is recorded on the operation."
            else:
                try:
                    run_as_staff(
                        request,
                        UnlinkEdge,
                        edge.bank,
                        ids={"edge_id": edge.pk},
                        body={"reason": reason},
                    )
                except KbError as exc:
                    error = exc.message
                else:
                    self.message_user(
                        request,
                        f"Unlinked “{edge.from_entry.title}” —{edge.type.name}→ "
                        f"“{edge.to_entry.title}”.",
                        messages.SUCCESS,
                    )
                    return HttpResponseRedirect(back)
        context = {
            **self.admin_site.each_context(request),
            "title": "Unlink an edge",
            "opts": self.model._meta,
            "edge": edge,
            "next": back,
            "error": error,
            "reason": request.POST.get("reason", ""),
        }
        return TemplateResponse(request, "admin/graph/edge/unlink_one.html", context)

    @admin.action(description="Unlink selected edges…", permissions=["unlink"])
    def unlink_selected(self, request, queryset):
        edges = list(queryset.select_related("bank", "type", "from_entry", "to_entry"))
        open_edges = [e for e in edges if e.invalidated_at is None]
        error = ""
        if request.POST.get("confirm") == "yes":
            reason = (request.POST.get("reason") or "").strip()
            if not reason:
                error = "Give a reason: it is recorded on the operation."
            else:
                self._unlink(request, open_edges, reason)
                return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Unlink edges",
            "opts": self.model._meta,
            "edges": open_edges,
            "closed": [e for e in edges if e.invalidated_at is not None],
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
            "error": error,
            "reason": request.POST.get("reason", ""),
        }
        return TemplateResponse(request, "admin/graph/edge/unlink_confirmation.html", context)

    def _unlink(self, request, edges: list[Edge], reason: str) -> None:
        by_bank: dict[int, list[Edge]] = {}
        for edge in edges:
            by_bank.setdefault(edge.bank_id, []).append(edge)
        done = 0
        for group in by_bank.values():
            bank = group[0].bank
            try:
                # One operation per bank: one reviewable, revertible unit per curator action.
                run_as_staff(
                    request,
                    UnlinkEdges,
                    bank,
                    body={"edges": [e.pk for e in group], "reason": reason},
                )
            except KbError as exc:
                self.message_user(request, f"{bank.slug}: {exc.message}", messages.ERROR)
                continue
            done += len(group)
        if done:
            self.message_user(
                request, f"Unlinked {done} edge{'' if done == 1 else 's'}.", messages.SUCCESS
            )
        elif not edges:
            self.message_user(request, "No open edges were selected.", messages.WARNING)
