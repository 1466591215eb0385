"""The curators' admin for the graph: thin views over the graph services.

Every write goes through a service and so is one audited operation: adding an edge calls
:func:`graph.services.edges.link` (note rule, duplicate check, audit), changing one calls
``retype`` or ``correct_edges``, the "Unlink" action calls ``unlink``, new aliases call
``add_alias``, merges call :func:`graph.services.curation.merge_entries` and reverts call
``revert_operation``. Closed edges are read-only, edges are never deleted, and the
simple-history "revert to this version" form is disabled (reverts are whole operations).

kb never imports graph, so this module re-registers kb's Entry and Operation admins with
subclasses that add the graph parts (edge and alias inlines, merge, revert).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.forms.models import BaseInlineFormSet
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import Truncator
from simple_history.admin import SimpleHistoryAdmin

from graph.models import (
    Alias,
    Community,
    Edge,
    EdgeSource,
    EdgeType,
    MergeProposal,
    ProposalStatus,
)
from graph.services import aliases as alias_service
from graph.services import curation
from graph.services import edges as edge_service
from graph.services.split import split_entry
from kb import audit
from kb.admin import EntryAdmin, KindBankFilter, OperationAdmin
from kb.errors import KbError
from kb.models import Entry, EntryStatus, Operation, OperationKind

GONE = (EntryStatus.MERGED, EntryStatus.DELETED)


def _entry_label(entry: Entry | None) -> str:
    return f"{entry.short_id} {entry.title}" if entry is not None else "—"


def _relation_label(edge: Edge) -> str:
    return f"{edge.type.name}: {edge.label}" if edge.label else edge.type.name


def _refuse_gone(entry: Entry, field_name: str) -> None:
    """Links and merges name live entries; a merged or deleted one is an error, not a redirect."""
    if entry.status == EntryStatus.MERGED:
        raise ValidationError(
            {field_name: f"{entry.short_id} was merged into another entry; use the survivor."}
        )
    if entry.status == EntryStatus.DELETED:
        raise ValidationError({field_name: f"{entry.short_id} is deleted."})


def _check_type_bank(etype: EdgeType, bank_id: int) -> None:
    if etype.bank_id not in (None, bank_id):
        raise ValidationError({"type": f"The relation {etype} belongs to another bank."})


class NoHistoryRevertMixin:
    """History is for reading: undoing a change means reverting its whole operation."""

    history_list_display = ("history_actor", "operation")

    def revert_disabled(self, request, obj=None):
        return True

    def history_form_view(self, request, object_id, version_id, extra_context=None):
        if request.method == "POST":
            raise PermissionDenied("Revert the operation instead (Operations › Revert).")
        return super().history_form_view(request, object_id, version_id, extra_context)


# --- Edge types -------------------------------------------------------------------------------


@admin.register(EdgeType)
class EdgeTypeAdmin(admin.ModelAdmin):
    """The relation vocabulary. Core types (no bank) are shared: only superusers edit them."""

    list_display = (
        "name",
        "bank_display",
        "inverse",
        "fold_role",
        "transitive",
        "neighbor_priority",
        "workflow_role",
    )
    list_filter = (KindBankFilter, "fold_role", "transitive", "workflow_role")
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
        payload = {
            "from": source,
            "to": data["to_entry"],
            "relation": data["type"].name,
            "note": data.get("note") or "",
            "label": data.get("label") or "",
            "valid_from": data.get("valid_from"),
            "valid_to": data.get("valid_to"),
        }
        try:
            self.instance = edge_service.link(
                source.bank, payload, reason="admin link", source=EdgeSource.STAFF
            )
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
                self.instance = edge_service.retype(old.bank, old.pk, data["type"].name, reason)
                return
            corrected = {
                "from": old.from_entry,
                "to": old.to_entry,
                "relation": data["type"].name,
                "note": data.get("note") or "",
                "label": data.get("label") or "",
                "evidence": old.evidence,
                "valid_from": old.valid_from,
                "valid_to": old.valid_to,
            }
            result = edge_service.correct_edges(old.bank, [old.pk], [corrected], reason)
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
    list_filter = ("type", "source", HasNoteFilter, EdgeStateFilter, "bank")
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
        return super().get_form(request, obj, change=change, **kwargs)

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
                with audit.operation(bank, OperationKind.UNLINK, reason=reason) as op:
                    for edge in group:
                        edge_service.unlink(bank, edge.pk, reason)
                    audit.record(op, edges=[e.pk for e in group])
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


# --- Aliases ----------------------------------------------------------------------------------


class AliasAddForm(forms.ModelForm):
    """A new alias, written by ``add_alias`` once the form is valid."""

    class Meta:
        model = Alias
        fields = ("entry", "surface")

    def clean(self):
        data = super().clean()
        if data.get("entry") is not None:
            _refuse_gone(data["entry"], "entry")
        return data

    def _post_clean(self):
        super()._post_clean()
        if self.errors:
            return
        entry = self.cleaned_data["entry"]
        try:
            self.instance = alias_service.add_alias(
                entry.bank, entry, self.cleaned_data["surface"], source="staff"
            )
        except KbError as exc:
            self.add_error(None, exc.message)


@admin.register(Alias)
class AliasAdmin(NoHistoryRevertMixin, SimpleHistoryAdmin):
    list_display = ("surface", "entry", "bank", "source", "created_at")
    list_filter = ("bank", "source")
    list_select_related = ("entry", "bank")
    search_fields = ("surface", "normalized", "entry__short_id", "entry__title")
    autocomplete_fields = ("entry",)
    form = AliasAddForm
    readonly_fields = ("normalized", "bank", "source", "actor", "created_at")

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("entry", "surface")
        return ("surface", "entry", *self.readonly_fields)

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request, obj)

    def save_model(self, request, obj, form, change):
        """``add_alias`` already wrote it."""

    def delete_model(self, request, obj):
        with audit.operation(
            obj.bank, OperationKind.UNLINK, reason="admin delete alias", alias=obj.surface
        ):
            super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        by_bank: dict[int, list[Alias]] = {}
        for alias in queryset.select_related("bank"):
            by_bank.setdefault(alias.bank_id, []).append(alias)
        for group in by_bank.values():
            with audit.operation(
                group[0].bank,
                OperationKind.UNLINK,
                reason="admin delete alias",
                aliases=[a.surface for a in group],
            ):
                for alias in group:
                    alias.delete()


# --- Merge preview ----------------------------------------------------------------------------


@dataclass
class EdgeFate:
    """What a merge does to one believed edge of ``away``."""

    edge: Edge
    fate: str  # repointed | collapses | self_loop
    new_from: Entry
    new_to: Entry
    into: Edge | None = None  # the believed edge a collapsing one folds into (None: re-pointed)


@dataclass
class MergePreview:
    """Exactly what :func:`graph.services.curation.merge_entries` will do, computed read-only."""

    keep: Entry
    away: Entry
    edges: list[EdgeFate] = field(default_factory=list)
    aliases_moved: list[Alias] = field(default_factory=list)
    aliases_new: list[str] = field(default_factory=list)

    def of(self, fate: str) -> list[EdgeFate]:
        return [f for f in self.edges if f.fate == fate]

    @property
    def repointed(self) -> list[EdgeFate]:
        return self.of("repointed")

    @property
    def collapsed(self) -> list[EdgeFate]:
        return self.of("collapses")

    @property
    def self_loops(self) -> list[EdgeFate]:
        return self.of("self_loop")

    def counts(self) -> dict:
        """The same numbers as :meth:`MergeResult.as_json`."""
        return {
            "edges_repointed": len(self.repointed),
            "edges_collapsed": len(self.collapsed),
            "aliases_added": len(self.aliases_moved) + len(self.aliases_new),
            "self_loops_dropped": [f.edge.pk for f in self.self_loops],
        }


def _overlaps(candidate: tuple, valid_from, valid_to) -> bool:
    """The valid-time overlap test of ``write_edge``'s duplicate check."""
    c_from, c_to = candidate
    return (valid_to is None or c_from is None or c_from < valid_to) and (
        valid_from is None or c_to is None or c_to > valid_from
    )


def preview_merge(keep: Entry, away: Entry) -> MergePreview:
    """Mirror of ``merge_entries``' rules, writing nothing: each believed edge of ``away``, in
    id order, is dropped as a self-loop (its other end is ``keep``), collapses into a believed
    edge of the same (from, to, type) with overlapping valid time (one already there or one
    re-pointed earlier in the same merge), or is re-pointed; ``away``'s aliases move to
    ``keep`` and its short_id, key and title become aliases unless that form is taken."""
    bank_id = keep.bank_id
    preview = MergePreview(keep, away)
    away_edges = list(
        Edge.objects.filter(bank_id=bank_id, invalidated_at__isnull=True)
        .filter(Q(from_entry=away) | Q(to_entry=away))
        .select_related("type", "from_entry", "to_entry")
        .order_by("id")
    )
    # Every re-pointed edge has keep at one end, so only keep's believed edges can clash.
    believed: list[tuple[tuple, tuple, Edge]] = [
        ((e.from_entry_id, e.to_entry_id, e.type_id), (e.valid_from, e.valid_to), e)
        for e in Edge.objects.filter(bank_id=bank_id, invalidated_at__isnull=True)
        .filter(Q(from_entry=keep) | Q(to_entry=keep))
        .exclude(pk__in=[e.pk for e in away_edges])
        .select_related("type", "from_entry", "to_entry")
        .order_by("id")
    ]
    for edge in away_edges:
        new_from = keep if edge.from_entry_id == away.pk else edge.from_entry
        new_to = keep if edge.to_entry_id == away.pk else edge.to_entry
        if new_from.pk == new_to.pk:
            preview.edges.append(EdgeFate(edge, "self_loop", new_from, new_to))
            continue
        triple = (new_from.pk, new_to.pk, edge.type_id)
        clash = next(
            (
                other
                for key, interval, other in believed
                if key == triple and _overlaps(interval, edge.valid_from, edge.valid_to)
            ),
            None,
        )
        same_triple = [(interval, other) for key, interval, other in believed if key == triple]
        current = next((other for _, other in same_triple if other.is_current()), None)
        remainder = curation.uncovered_interval(
            edge.valid_from, edge.valid_to, [interval for interval, _ in same_triple]
        )
        if current is not None or remainder is None:
            preview.edges.append(EdgeFate(edge, "collapses", new_from, new_to, current or clash))
            continue
        preview.edges.append(EdgeFate(edge, "repointed", new_from, new_to))
        edge = copy.copy(edge)
        edge.valid_from, edge.valid_to = remainder
        # Mirrors write_edge seeing this merge's own successors; the database's one-believed-
        # row rule on away's edges makes a clash with one of them unreachable in practice.
        believed.append((triple, (edge.valid_from, edge.valid_to), edge))

    preview.aliases_moved = list(Alias.objects.filter(bank_id=bank_id, entry=away))
    surfaces = [s for s in (away.short_id, away.key, away.title) if s]
    forms_of = {s: alias_service.normalize(s) for s in surfaces}
    taken = set(
        Alias.objects.filter(bank_id=bank_id, normalized__in=set(forms_of.values())).values_list(
            "normalized", flat=True
        )
    )
    for surface in surfaces:
        norm = forms_of[surface]
        if norm and norm not in taken:
            preview.aliases_new.append(surface)
            taken.add(norm)
    return preview


def edges_table(entry: Entry) -> list[dict]:
    """An entry's current edges as rows seen from the entry (direction, relation, other end)."""
    rows = []
    for edge in edge_service.current_edges_of(entry):
        outgoing = edge.from_entry_id == entry.pk
        rows.append(
            {
                "edge": edge,
                "direction": "→" if outgoing else "←",
                "relation": _relation_label(edge)
                if outgoing
                else edge.type.inverse or edge.type.name,
                "other": edge.to_entry if outgoing else edge.from_entry,
                "note": edge.note,
            }
        )
    return rows


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
        try:
            req = edge_service.clean_link(self.parent.bank, self._payload(other))
        except KbError as exc:
            raise ValidationError(exc.message) from None
        if (
            Edge.objects.filter(from_entry=req.from_entry, to_entry=req.to_entry, type=req.type)
            .filter(invalidated_at__isnull=True)
            .exists()
        ):
            raise ValidationError(
                f"The edge {req.from_entry.short_id} -{req.type.name}-> "
                f"{req.to_entry.short_id} already exists."
            )
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
            clash = (
                Alias.objects.filter(bank_id=self.parent.bank_id, normalized=norm)
                .exclude(entry=self.parent)
                .select_related("entry")
                .first()
            )
            if clash is not None:
                raise ValidationError(f"This alias already names {_entry_label(clash.entry)}.")
        return surface

    def write(self, entry: Entry) -> Alias:
        return alias_service.add_alias(
            entry.bank, entry, self.cleaned_data["surface"], source="staff"
        )


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
    fields = ("edge_link", "type", "label", "to_entry", "note")
    readonly_fields = ("edge_link",)
    autocomplete_fields = ("type", "to_entry")

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
    fields = ("edge_link", "from_entry", "type", "label", "note")
    autocomplete_fields = ("type", "from_entry")


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


class GraphEntryAdmin(EntryAdmin):
    """kb's Entry admin plus current edges and aliases inline, and the merge action."""

    inlines = (OutgoingEdgeInline, IncomingEdgeInline, AliasInline)
    actions = (*EntryAdmin.actions, "merge_selected", "split_selected")

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
        return queryset, distinct

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
            "preview": preview_merge(keep, away),
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


# --- Operations: revert -------------------------------------------------------------------------


def _describe_change(change: dict, entries: dict[int, Entry], types: dict[int, str]) -> str:
    state = change["after"] or change["before"] or {}
    if change["model"] == "entry":
        return f"{state.get('short_id', '')} {state.get('title', '')}".strip()
    if change["model"] == "edge":
        ends = [entries.get(state.get(k)) for k in ("from_entry_id", "to_entry_id")]
        names = [e.short_id if e else "?" for e in ends]
        return f"{names[0]} -{types.get(state.get('type_id'), '?')}-> {names[1]}"
    return f"{state.get('surface', '')} → {getattr(entries.get(state.get('entry_id')), 'short_id', '?')}"


def change_rows(op: Operation) -> list[dict]:
    """``operation_changes`` for a page: each row with a label and the fields that differ."""
    changes = curation.operation_changes(op)
    entry_ids, type_ids = set(), set()
    for change in changes:
        for state in (change["before"], change["after"]):
            if state:
                entry_ids.update(
                    state.get(k) for k in ("from_entry_id", "to_entry_id", "entry_id") if k in state
                )
                if "type_id" in state:
                    type_ids.add(state["type_id"])
    entries = Entry.objects.in_bulk(entry_ids - {None})
    types = dict(EdgeType.objects.filter(pk__in=type_ids).values_list("pk", "name"))
    rows = []
    for change in changes:
        before, after = change["before"] or {}, change["after"] or {}
        names = sorted(set(before) | set(after))
        diff = [
            (name, before.get(name, "—"), after.get(name, "—"))
            for name in names
            if before.get(name) != after.get(name)
        ]
        rows.append({**change, "label": _describe_change(change, entries, types), "diff": diff})
    return rows


class GraphOperationAdmin(OperationAdmin):
    """kb's read-only Operation admin plus the revert flow."""

    change_form_template = "admin/graph/operation/change_form.html"
    actions = ("revert_selected",)

    def has_revert_permission(self, request):
        return request.user.has_perm("kb.change_entry")

    def get_urls(self):
        revert = path(
            "<path:object_id>/revert/",
            self.admin_site.admin_view(self.revert_view),
            name="kb_operation_revert",
        )
        return [revert, *super().get_urls()]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra = {
            **(extra_context or {}),
            "can_revert": self.has_revert_permission(request),
            "revert_url": reverse("admin:kb_operation_revert", args=[object_id]),
        }
        return super().change_view(request, object_id, form_url, extra)

    @admin.action(description="Revert…", permissions=["revert"])
    def revert_selected(self, request, queryset):
        ops = list(queryset[:2])
        if len(ops) != 1:
            self.message_user(request, "Select exactly one operation to revert.", messages.WARNING)
            return None
        return HttpResponseRedirect(reverse("admin:kb_operation_revert", args=[ops[0].pk]))

    def revert_view(self, request, object_id):
        if not self.has_revert_permission(request):
            raise PermissionDenied
        op = get_object_or_404(Operation.objects.select_related("bank"), pk=object_id)
        if request.method == "POST":
            force = request.POST.get("force") in ("on", "yes", "true", "1")
            try:
                result = curation.revert_operation(
                    op.bank, op.pk, request.POST.get("reason", ""), force=force
                )
            except KbError as exc:
                self.message_user(request, exc.message, messages.ERROR)
            else:
                self.message_user(
                    request,
                    f"Reverted operation #{op.pk}: {result['rows']} row(s) restored "
                    f"(operation #{result['operation']}).",
                    messages.SUCCESS,
                )
                return HttpResponseRedirect(
                    reverse("admin:kb_operation_change", args=[result["operation"]])
                )
            op.refresh_from_db()
        context = {
            **self.admin_site.each_context(request),
            "title": f"Revert operation #{op.pk}",
            "opts": self.model._meta,
            "operation": op,
            "changes": change_rows(op),
            "conflicts": curation.revert_plan(op)[1] if op.reverted_by_id is None else [],
            "reason": request.POST.get("reason", ""),
        }
        return TemplateResponse(request, "admin/graph/operation/revert_confirmation.html", context)


admin.site.unregister(Operation)
admin.site.register(Operation, GraphOperationAdmin)


@admin.register(Community)
class CommunityAdmin(admin.ModelAdmin):
    """Communities are computed (``build_communities``): read-only here."""

    list_display = ("label", "bank", "size", "computed_at")
    list_filter = ("bank",)
    search_fields = ("label", "summary", "terms")
    exclude = ("embedding",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


from graph import admin_extraction  # noqa: E402,F401  (edge extraction queue and actions)
