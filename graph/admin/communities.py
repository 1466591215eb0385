"""Read-only admin for communities (derived data)."""

from __future__ import annotations

from django.contrib import admin

from graph.models import (
    Community,
)
from kb.admin_audit import ReadOnlyAdmin
from kb.admin_filters import BankFilter


@admin.register(Community)
class CommunityAdmin(ReadOnlyAdmin):
    """Communities are computed (``build_communities``): read-only here."""

    list_display = ("label", "bank", "size", "computed_at")
    list_filter = (BankFilter,)
    search_fields = ("label", "summary", "terms")
    exclude = ("embedding",)
