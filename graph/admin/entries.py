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
from django.contrib import admin
from django.contrib.admin.views.autocomplete import AutocompleteJsonView
from django.contrib.admin.widgets import AutocompleteSelect
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Case, Exists, IntegerField, OuterRef, Q, Value, When
from django.db.models.functions import Length
from django.forms.models import BaseInlineFormSet
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from graph.actions.edges import AddAlias, LinkEntries
from graph.actions.entries import CreateEntry, UpdateEntry
from graph.admin.common import (
    GONE,
    NoHistoryRevertMixin,
    _check_type_bank,
    _refuse_gone,
    form_with_caller,
    taken_message,
)
from graph.admin.entry_actions import EntryCurationActions
from graph.admin.entry_extraction import extract_edges_from_selected
from graph.curation.timeline import entry_timeline
from graph.edges import links as edge_service
from graph.edges.notes import note_as_seen
from graph.models import (
    Alias,
    Edge,
    EdgeType,
)
from graph.resolution import aliases as alias_service
from kb.actions.staff import prepare_as, run_as_staff
from kb.admin import EntryAdmin
from kb.admin_entry_form import ActionRefused
from kb.admin_filters import as_pk
from kb.errors import KbError
from kb.models import Entry

# --- Entry: edge and alias inlines, merge action -----------------------------------------------


class ServiceInlineFormSet(BaseInlineFormSet):
    """Existing rows are read-only; each filled extra row is written by its form's ``write``."""

    def get_form_kwargs(self, index):
        return {**super().get_form_kwargs(index), "parent": self.instance}

    def _construct_form(self, i, **kwargs):
        form = super()._construct_form(i, **kwargs)
        edge = form.instance
        if isinstance(edge, Edge) and edge.pk is not None:
            # Existing rows are read-only: show the note as read from this entry's end.
            edge.note = note_as_seen(
                edge.note, "out" if edge.from_entry_id == self.instance.pk else "in"
            )
        return form

    def write_through_actions(self, request) -> None:
        """Each filled extra row through its action; a refusal leaves the admin's transaction
        (the entry's save with it) and is shown on the page again."""
        self.new_objects, self.changed_objects, self.deleted_objects = [], [], []
        for form in self.extra_forms:
            if not form.has_changed() or not form.is_valid():
                continue
            try:
                self.new_objects.append(form.write(self.instance, request))
            except KbError as exc:
                name = self.model._meta.verbose_name
                raise ActionRefused(
                    KbError(f"New {name}: {exc.message}", code=exc.code), on_form=False
                ) from exc


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
        try:  # the link action's own checks, so the row shows them before anything is written
            prepare_as(self.caller, LinkEntries, self.parent.bank, body=self._body(other)).check()
        except KbError as exc:
            raise ValidationError(exc.message) from None
        return data

    def _body(self, other: Entry) -> dict:
        """The row as the link action's body."""
        source, target = self._ends(other)
        body = {**self._payload(other), "from": source.short_id, "to": target.short_id}
        return {**body, "reason": "admin link"}

    def write(self, entry: Entry, request) -> Edge:
        other = self.cleaned_data["to_entry" if self.outgoing else "from_entry"]
        return run_as_staff(request, LinkEntries, entry.bank, body=self._body(other))


class NewIncomingEdgeForm(NewEdgeForm):
    outgoing = False


class NewAliasForm(forms.ModelForm):
    """An extra alias row, written by ``add_alias`` when the entry is saved. A name that
    already names another entry (title or alias) is refused until "add anyway" is ticked."""

    add_anyway = forms.BooleanField(required=False, label="add anyway")

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

    def clean(self):
        data = super().clean()
        surface = data.get("surface")
        if self.instance.pk is None and self.parent is not None and surface:
            taken = alias_service.names_taken(self.parent.bank, self.parent, surface)
            if taken and not data.get("add_anyway"):
                self.add_error("surface", taken_message(taken))
        return data

    def write(self, entry: Entry, request) -> Alias:
        return run_as_staff(
            request,
            AddAlias,
            entry.bank,
            ids={"id": entry.short_id},
            body={"surface": self.cleaned_data["surface"]},
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
        formset.form = form_with_caller(formset.form, request)  # its rows check as the staff
        if obj is not None:
            fields = formset.form.base_fields
            # Relations: the core vocabulary plus this bank's own; ends: this bank's entries.
            fields["type"].queryset = EdgeType.objects.filter(
                Q(bank__isnull=True) | Q(bank_id=obj.bank_id)
            ).order_by("name")
            end = fields[self.other_end]
            end.queryset = Entry.objects.filter(bank_id=obj.bank_id).exclude(status__in=GONE)
            end.widget = BankScopedAutocomplete(
                Edge._meta.get_field(self.other_end), self.admin_site, obj.bank_id
            )
            type_widget = fields["type"].widget
            for flag in ("can_add_related", "can_change_related", "can_delete_related"):
                setattr(type_widget, flag, False)  # relations are edited on their own page
            type_widget.can_view_related = False
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
    fields = ("surface", "add_anyway", "alias_source", "alias_added", "remove_link")
    readonly_fields = ("alias_source", "alias_added", "remove_link")

    @admin.display(description="add anyway")
    def add_anyway(self, obj: Alias) -> str:
        return ""  # a choice made when adding; saved aliases show nothing here

    @admin.display(description="")
    def remove_link(self, obj: Alias) -> str:
        if obj is None or obj.pk is None:
            return ""
        url = reverse("admin:graph_alias_delete", args=[obj.pk])
        back = reverse("admin:kb_entry_change", args=[obj.entry_id])
        return format_html('<a class="button" href="{}?next={}">Remove…</a>', url, back)

    @admin.display(description="source")
    def alias_source(self, obj: Alias) -> str:
        return obj.source if obj is not None and obj.pk else "new"

    @admin.display(description="added")
    def alias_added(self, obj: Alias) -> str:
        return f"{obj.created_at:%Y-%m-%d %H:%M} by {obj.actor or '?'}" if obj and obj.pk else ""


@admin.register(Entry)
class GraphEntryAdmin(EntryCurationActions, NoHistoryRevertMixin, EntryAdmin):
    """kb's Entry admin plus current edges and aliases inline, and the merge action."""

    inlines = (OutgoingEdgeInline, IncomingEdgeInline, AliasInline)
    create_action = CreateEntry  # creating may link connections: graph's use case
    update_action = UpdateEntry
    actions = (
        *EntryAdmin.actions,
        "retire_selected",
        "restore_selected",
        "merge_selected",
        "split_selected",
        "delete_bridging",
        extract_edges_from_selected,
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
            formset.write_through_actions(request)
        else:
            super().save_formset(request, form, formset, change)

    def get_search_results(self, request, queryset, search_term):
        if request.GET.get("app_label") != "graph":
            return super().get_search_results(request, queryset, search_term)
        # An entry picker (an edge end, an alias's entry, a proposal's end): live entries of
        # the bank, best match first (exact name, then prefix, then all words).
        queryset = queryset.exclude(status__in=GONE)
        bank = as_pk(request.GET.get("bank"))
        if bank is not None:  # a picker on an entry's page: that entry's bank only
            queryset = queryset.filter(bank_id=bank)
        return ranked_matches(queryset, search_term).select_related("kind", "bank"), False

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


def ranked_matches(queryset, term: str):
    """Entries of ``queryset`` matching ``term``, ranked: 0 an exact title, alias, id or key;
    1 a title or alias starting with it; 2 a title holding every word; shorter titles first
    within a rank. An empty term lists by title."""
    term = (term or "").strip()
    if not term:
        return queryset.order_by("title")
    norm = alias_service.normalize(term)
    aliases = Alias.objects.filter(entry=OuterRef("pk"))
    every_word = Q()
    for word in term.split():
        every_word &= Q(title__icontains=word)
    exact = (
        Q(title__iexact=term)
        | Q(short_id__iexact=term)
        | Q(key__iexact=term)
        | Exists(aliases.filter(normalized=norm))
    )
    prefix = Q(title__istartswith=term) | Exists(aliases.filter(normalized__startswith=norm))
    matching = queryset.filter(
        every_word
        | Q(short_id__iexact=term)
        | Q(key__iexact=term)
        | Exists(aliases.filter(normalized__startswith=norm) if norm else aliases.none())
    )
    rank = Case(
        When(exact, then=Value(0)),
        When(prefix, then=Value(1)),
        When(every_word, then=Value(2)),
        default=Value(3),
        output_field=IntegerField(),
    )
    return matching.annotate(match_rank=rank).order_by("match_rank", Length("title"), "title")


class EntryAutocomplete(AutocompleteJsonView):
    """Autocomplete answers that name an entry by title, kind and id (pickers must show which
    entry they mean; other models keep Django's text)."""

    def serialize_result(self, obj, to_field_name):
        result = super().serialize_result(obj, to_field_name)
        if isinstance(obj, Entry):
            result["text"] = f"{obj.title} · {obj.kind.name} · {obj.bank.slug} · {obj.short_id}"
        return result
