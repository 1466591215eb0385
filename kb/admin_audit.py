"""The read-only audit admins: operations (what each changed, in words first) and jobs.

Nothing here writes: every row is written by the services inside an operation. ``ReadOnlyAdmin``
is shared with the workflow admins.
"""

from __future__ import annotations

import json

from django.contrib import admin
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, format_html_join

from kb.admin_filters import BankFilter
from kb.models import Entry, Job, Operation

# --- Read-only audit and jobs ------------------------------------------------------------------


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


HISTORY_TYPES = {"+": "created", "~": "changed", "-": "deleted"}


class OperationAdmin(ReadOnlyAdmin):
    list_display = ("id", "kind", "bank", "actor", "reason", "created_at")
    list_filter = ("kind", BankFilter)
    list_select_related = ("bank",)
    search_fields = ("actor", "reason")
    date_hierarchy = "created_at"
    fieldsets = (
        (None, {"fields": ("kind", "bank", "actor", "reason", "created_at", "reverted_by")}),
        ("Entry history rows", {"fields": ("entry_changes",)}),
        ("Details (as stored)", {"classes": ("collapse",), "fields": ("details_json",)}),
    )
    readonly_fields = (
        "kind",
        "bank",
        "actor",
        "reason",
        "created_at",
        "reverted_by",
        "details_json",
        "entry_changes",
    )

    @admin.display(description="details")
    def details_json(self, obj: Operation) -> str:
        return format_html(
            "<pre>{}</pre>", json.dumps(obj.details, indent=2, sort_keys=True, default=str)
        )

    @admin.display(description="entry history rows")
    def entry_changes(self, obj: Operation) -> str:
        rows = list(Entry.history.filter(operation=obj).order_by("history_date", "history_id"))
        if not rows:
            return "—"
        existing = set(
            Entry.objects.filter(pk__in={r.id for r in rows}).values_list("pk", flat=True)
        )
        body = format_html_join(
            "\n",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    row.history_date.strftime("%Y-%m-%d %H:%M:%S"),
                    HISTORY_TYPES.get(row.history_type, row.history_type),
                    self._entry_link(row, row.id in existing),
                    row.title,
                    row.status,
                    row.history_change_reason or "",
                )
                for row in rows
            ),
        )
        return format_html(
            "<table><thead><tr><th>when</th><th>change</th><th>entry</th><th>title</th>"
            "<th>status</th><th>reason</th></tr></thead><tbody>{}</tbody></table>",
            body,
        )

    @staticmethod
    def _entry_link(row, exists: bool) -> str:
        if not exists:
            return row.short_id
        try:
            url = reverse("admin:kb_entry_history", args=[row.id])
        except NoReverseMatch:
            return row.short_id
        return format_html('<a href="{}">{}</a>', url, row.short_id)


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = ("public_id", "kind", "bank", "status", "progress", "created_at", "finished_at")
    list_filter = ("status", "kind", BankFilter)
    list_select_related = ("bank",)
    search_fields = ("public_id", "actor")

    @admin.display(description="progress")
    def progress(self, obj: Job) -> str:
        return (
            f"{obj.progress_done}/{obj.progress_total}"
            if obj.progress_total
            else str(obj.progress_done)
        )
