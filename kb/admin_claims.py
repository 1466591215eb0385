"""Admin for claims: live claims per bank for staff, and a release action (the same action
as REST and MCP). Claims are made by agents, so there is no add form and no field edits."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import Q
from django.utils import timezone

from kb.actions.claims import ReleaseClaim
from kb.actions.staff import run_as_staff
from kb.admin_filters import BankFilter
from kb.errors import KbError
from kb.models import Claim
from kb.services import claims as claim_service


class ClaimStateFilter(admin.SimpleListFilter):
    """Live by default: what an agent would be told about right now."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("live", "Live"), ("expired", "Expired"), ("released", "Released"), ("all", "All")]

    def choices(self, changelist):
        for lookup, title in self.lookup_choices:
            yield {
                "selected": (self.value() or "live") == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request, queryset):
        now = timezone.now()
        value = self.value() or "live"
        if value == "live":
            return queryset.filter(released_at__isnull=True, expires_at__gt=now)
        if value == "expired":
            return queryset.filter(
                Q(released_by=claim_service.EXPIRED)
                | Q(released_at__isnull=True, expires_at__lte=now)
            )
        if value == "released":
            return queryset.filter(released_at__isnull=False).exclude(
                released_by=claim_service.EXPIRED
            )
        return queryset


@admin.register(Claim)
class ClaimAdmin(admin.ModelAdmin):
    list_display = ("subject", "bank", "holder", "since", "expires_at", "live", "entry_link")
    list_filter = (ClaimStateFilter, BankFilter)
    search_fields = ("subject", "holder", "note")
    ordering = ("bank", "since")
    list_select_related = ("bank", "entry")
    actions = ["release_selected"]
    readonly_fields = [f.name for f in Claim._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return False  # a claim ends by its release (the release action), never by a row delete

    @admin.display(boolean=True, description="live")
    def live(self, obj: Claim) -> bool:
        return obj.is_live

    @admin.display(description="entry")
    def entry_link(self, obj: Claim) -> str:
        return obj.entry.short_id if obj.entry_id else ""

    @admin.action(description="Release selected claims")
    def release_selected(self, request, queryset):
        """The release action per live claim, as REST and MCP run it; staff count as curators
        (releasing an agent's claim is audited naming whose it was)."""
        released = 0
        for found in queryset.select_related("bank"):
            if not found.is_live:
                continue
            try:
                run_as_staff(
                    request,
                    ReleaseClaim,
                    found.bank,
                    ids={"claim_id": str(found.pk)},
                    body={"reason": "admin"},
                )
            except KbError as exc:
                messages.error(request, f"{found.subject}: {exc.message}")
            else:
                released += 1
        messages.success(request, f"Released {released} claim(s).")
