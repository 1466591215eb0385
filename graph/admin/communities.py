"""Read-only admin for communities (derived data)."""

from __future__ import annotations

from django.contrib import admin

from graph.models import (
    Community,
)
from kb.admin_filters import BankFilter


@admin.register(Community)
class CommunityAdmin(admin.ModelAdmin):
    """Communities are computed (``build_communities``): read-only here."""

    list_display = ("label", "bank", "size", "computed_at")
    list_filter = (BankFilter,)
    search_fields = ("label", "summary", "terms")
    exclude = ("embedding",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
