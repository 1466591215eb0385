"""The staff admin of the core app: thin views over the actions.

Every write that touches knowledge runs its action as the staff member
(:mod:`kb.actions.staff`), and so is one audited operation: the entry form runs the entry
create/edit actions (:mod:`kb.admin_entry_form`), "Mark verified" the verify action, bank
archive/restore ``ArchiveBank``, a bank's and an entry kind's add and change pages
``SaveBank``/``SaveEntryKind`` (:mod:`kb.admin_config`). Tokens belong to no bank: their admin runs the
token actions without one (``CreateToken``, ``SetTokenExpiry``, ``RevokeTokens``,
:mod:`kb.admin_tokens`); the raw secret is shown once and never stored. The actor is the staff
user.

``BankAdmin`` and ``EntryAdmin`` are declared here and registered by the graph app's
subclasses (``graph.admin.banks``, ``graph.admin.entries``), which own the bank and entry use
cases that need the graph; tokens, claims, jobs and kinds are registered here.
"""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.forms import SimpleArrayField
from django.db.models import Count, IntegerField, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.html import format_html
from simple_history.admin import SimpleHistoryAdmin

from kb.actions.banks import ArchiveBank, DeleteEntryKind, SaveBank, SaveEntryKind
from kb.actions.entries import UpdateEntry, VerifyEntry
from kb.actions.staff import run_as_staff, staff_caller
from kb.admin_config import ActionSaveAdmin
from kb.admin_entry_form import ActionRefused, EntryAdminForm
from kb.admin_filters import BankFilter, KindFilter
from kb.models import (
    Bank,
    Entry,
    EntryKind,
)


class LinesArrayField(SimpleArrayField):
    """A list of strings edited one per line; blank lines are ignored."""

    def to_python(self, value):
        if isinstance(value, str):
            value = "\n".join(line.strip() for line in value.splitlines() if line.strip())
        return super().to_python(value)


ONE_PER_LINE = {
    ArrayField: {
        "form_class": LinesArrayField,
        "delimiter": "\n",
        "widget": forms.Textarea(attrs={"rows": 3, "cols": 60}),
        "help_text": "One per line.",
    }
}


# --- Banks and kinds --------------------------------------------------------------------------


class ArchivedFilter(admin.SimpleListFilter):
    """Banks in use by default; archived ones on request."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("all", "all"), ("archived", "archived")]

    def choices(self, changelist):
        yield {
            "selected": self.value() is None,
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": "in use",
        }
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request, queryset):
        if self.value() == "all":
            return queryset
        if self.value() == "archived":
            return queryset.filter(archived_at__isnull=False)
        return queryset.filter(archived_at__isnull=True)


class BankAdmin(ActionSaveAdmin, admin.ModelAdmin):
    """Banks: add and change through ``SaveBank`` (one ``configure`` operation), archive and
    restore through ``ArchiveBank``."""

    save_action = SaveBank
    list_display = ("slug", "name", "kind", "entry_count", "archived_at", "created_at")
    list_filter = (ArchivedFilter, "kind")
    search_fields = ("slug", "name")
    readonly_fields = ("created_at", "archived_at")
    list_per_page = 50
    actions = ("archive_selected", "restore_selected")

    def has_delete_permission(self, request, obj=None):
        # A bank's rows are audited history; it is archived (the ArchiveBank action),
        # never deleted from the admin.
        return False

    def _set_archived(self, request, queryset, archived: bool) -> None:
        done = [
            bank.slug
            for bank in queryset.order_by("slug")
            if run_as_staff(
                request,
                ArchiveBank,
                bank,
                body={"archived": archived, "reason": f"admin: {request.user}"},
            )
        ]
        verb = "Archived" if archived else "Restored"
        self.message_user(
            request,
            f"{verb} {len(done)} bank(s){': ' + ', '.join(done[:20]) if done else ''}"
            f"{' …' if len(done) > 20 else ''}.",
            messages.SUCCESS if done else messages.INFO,
        )

    @admin.action(
        description="Archive (hide from bank lists; keeps every row)", permissions=["change"]
    )
    def archive_selected(self, request, queryset):
        self._set_archived(request, queryset, True)

    @admin.action(description="Restore archived banks", permissions=["change"])
    def restore_selected(self, request, queryset):
        self._set_archived(request, queryset, False)

    def get_queryset(self, request):
        # Entry.bank has no reverse accessor (related_name="+"), so count with a subquery.
        counts = (
            Entry.objects.filter(bank=OuterRef("pk"))
            .order_by()
            .values("bank")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return (
            super()
            .get_queryset(request)
            .annotate(entry_count=Coalesce(Subquery(counts, output_field=IntegerField()), 0))
        )

    @admin.display(description="entries", ordering="entry_count")
    def entry_count(self, obj: Bank) -> int:
        return obj.entry_count


@admin.register(EntryKind)
class EntryKindAdmin(ActionSaveAdmin, admin.ModelAdmin):
    """Entry kinds: add and change through ``SaveEntryKind`` (core kinds: superusers)."""

    save_action = SaveEntryKind
    delete_action = DeleteEntryKind
    list_display = ("name", "bank", "weight", "container", "structural", "description")
    list_filter = (BankFilter, ("bank", admin.EmptyFieldListFilter), "container", "structural")
    list_select_related = ("bank",)
    search_fields = ("name", "description", "bank__slug")
    ordering = ("bank__slug", "name")


# --- Entries ----------------------------------------------------------------------------------


class VerifiedFilter(admin.SimpleListFilter):
    """Staleness: entries nobody verified in N days (``002_*``: the two clocks kept apart)."""

    title = "verified"
    parameter_name = "verified"
    DAYS = (30, 90, 180)

    def lookups(self, request, model_admin):
        return [("never", "never")] + [(str(d), f"not in {d} days") for d in self.DAYS]

    def queryset(self, request, queryset):
        value = self.value()
        if value == "never":
            return queryset.filter(verified_at__isnull=True)
        if value and value.isdigit():
            cutoff = timezone.now() - timedelta(days=int(value))
            return queryset.filter(Q(verified_at__isnull=True) | Q(verified_at__lt=cutoff))
        return queryset


class EntryAdmin(SimpleHistoryAdmin):
    """Entries: the form's values run the entry actions (``create_action``, ``update_action``;
    kb has no create of its own — creating may link connections, a graph use case — so the
    graph app's admin names both)."""

    form = EntryAdminForm
    create_action = None
    update_action = UpdateEntry
    formfield_overrides = ONE_PER_LINE
    list_display = (
        "short_id",
        "title_cell",
        "bank",
        "kind",
        "status",
        "updated_at",
        "verified_at",
        "usage_count",
    )
    list_select_related = ("bank", "kind")
    list_filter = (BankFilter, KindFilter, "status", VerifiedFilter)
    search_fields = ("short_id", "key", "title", "content")
    autocomplete_fields = ("kind", "resolved_by")
    date_hierarchy = "updated_at"
    actions = ("mark_verified",)
    history_list_display = ("history_actor", "operation")
    fieldsets = (
        (
            "Content",
            {
                "fields": (
                    "short_id",
                    "title",
                    "key",
                    "summary",
                    "content",
                    "useful_for",
                    "steps",
                    "metadata",
                )
            },
        ),
        ("Classification", {"fields": ("bank", "kind", "status", "systems", "tasks")}),
        (
            "Lifetime",
            {
                "fields": (
                    "durable",
                    "expires_at",
                    "resolved_by",
                    "retired_reason",
                    "retired_evidence",
                    "merged_into",
                )
            },
        ),
        ("Anchors", {"fields": ("anchor_files", "anchor_symbols")}),
        (
            "Clocks",
            {
                "fields": (
                    "created_at",
                    "created_by",
                    "updated_at",
                    "status_changed_at",
                    "verified_at",
                    "verified_by",
                    "usage_count",
                    "last_used_at",
                )
            },
        ),
    )
    # Status and its bookkeeping change only through their services (retire, restore, merge,
    # delete with bridging), never as form fields.
    readonly_fields = (
        "short_id",
        "status",
        "retired_reason",
        "retired_evidence",
        "created_at",
        "created_by",
        "updated_at",
        "status_changed_at",
        "usage_count",
        "last_used_at",
        "verified_at",
        "verified_by",
        "merged_into",
    )

    @admin.display(description="title", ordering="title")
    def title_cell(self, obj: Entry) -> str:
        """One line, cut with an ellipsis; the whole title on hover."""
        return format_html(
            '<span class="kb-title-cell" title="{}" style="display:inline-block;max-width:26em;'
            'white-space:nowrap;overflow:hidden;text-overflow:ellipsis;vertical-align:bottom">'
            "{}</span>",
            obj.title,
            obj.title,
        )

    def has_delete_permission(self, request, obj=None):
        # Deleting an entry bridges its edges (the graph app's delete page); kb alone keeps
        # entries (retire them instead).
        return False

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is not None:
            return fieldsets
        # Only a new entry is checked for duplicates; the box lets staff store a copy anyway.
        return (*fieldsets, ("Duplicates", {"fields": ("allow_duplicate",)}))

    def get_readonly_fields(self, request, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))
        # An entry never moves between banks: its kind, links and history are bank-scoped.
        return fields + ("bank",) if obj is not None else fields

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        attrs = {
            "caller": staff_caller(request),
            "create_action": self.create_action,
            "update_action": self.update_action,
            "refused": getattr(request, "_kb_entry_refused", None),
        }
        return type(form.__name__, (form,), attrs)

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ActionRefused as refused:
            # The action refused while the page saved: the admin's transaction is rolled back
            # (nothing half-written); the same submission is shown again with the refusal.
            request._kb_entry_refused = refused
            return super().changeform_view(request, object_id, form_url, extra_context)

    def save_model(self, request, obj, form, change):
        """Through the entry action, as REST and MCP: create or edit (the form prepared it)."""
        entry = form.write()
        # The admin keeps working with ``obj``: make it the row the action wrote.
        for field in Entry._meta.concrete_fields:
            setattr(obj, field.attname, getattr(entry, field.attname))
        obj._state.adding = False
        obj._state.db = entry._state.db

    @admin.action(description="Mark verified", permissions=["change"])
    def mark_verified(self, request, queryset):
        count = 0
        for entry in queryset.select_related("bank"):
            run_as_staff(
                request,
                VerifyEntry,
                entry.bank,
                ids={"id": entry.short_id},
                body={"note": "admin: mark verified"},
            )
            count += 1
        self.message_user(
            request,
            f"Marked {count} entr{'y' if count == 1 else 'ies'} verified.",
            messages.SUCCESS,
        )


import kb.admin_audit  # noqa: E402,F401  (operations and jobs, read-only)
import kb.admin_claims  # noqa: E402,F401  (claims admin lives in its own module)
import kb.admin_tokens  # noqa: E402,F401  (token lifecycle: expiry, state, revoke)
