"""Read-only admin of gap reports and findings: managers change findings on the workflow pages,
where every change is an audited :class:`FindingEvent` (``workflows.services.findings``)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from kb.admin_audit import ReadOnlyAdmin
from kb.admin_filters import BankFilter
from workflows.models import Finding, FindingEvent, GapReport, PendingRegeneration


@admin.register(GapReport)
class GapReportAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "process",
        "bank",
        "generated_at",
        "trigger",
        "finding_count",
        "open_count",
        "took_ms",
    )
    list_filter = ("trigger", BankFilter)
    list_select_related = ("process", "bank")
    date_hierarchy = "generated_at"
    exclude = ("findings",)


class FindingEventInline(admin.TabularInline):
    model = FindingEvent
    extra = 0
    can_delete = False
    fields = ("at", "actor", "kind", "from_status", "to_status", "assignee", "comment", "report")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Finding)
class FindingAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "process",
        "rule",
        "severity",
        "status",
        "assignee",
        "last_seen_at",
        "page",
    )
    list_filter = ("status", "rule", "severity", BankFilter)
    list_select_related = ("process", "process__bank", "assignee")
    search_fields = ("message", "fingerprint", "process__title")
    inlines = [FindingEventInline]

    @admin.display(description="manager page")
    def page(self, obj: Finding) -> str:
        url = reverse("workflows:process", args=[obj.process.bank.slug, obj.process.short_id])
        return format_html('<a href="{}#finding-{}">open</a>', url, obj.pk)


@admin.register(PendingRegeneration)
class PendingRegenerationAdmin(ReadOnlyAdmin):
    list_display = ("process", "bank", "requested_at")
