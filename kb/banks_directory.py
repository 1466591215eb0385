"""Finding a bank among hundreds: one search used by the bank switcher (explorer, stats,
landing page), the admin home's bank table and the bank filters of the admin lists.

A bank is matched by slug or name; an exact slug wins, then slugs and names that start with
the words, then ones that contain them. Pages are ``PAGE_SIZE`` banks long.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import Case, IntegerField, Q, QuerySet, Value, When

from kb.models import Bank

PAGE_SIZE = 25
SWITCHER_SUGGESTIONS = 200  # slugs offered by the switcher's datalist; the search finds the rest
# Where the switcher can take you: URL name and whether it takes the bank's slug.
DESTINATIONS = {
    "explorer": "explorer:page",
    "stats": "graph-stats-page",
    "workflows": "workflows:bank",
    "entries": "admin:kb_entry_changelist",
    "admin": "admin:index",
}


def search_banks(query: str | None, *, archived: bool = False) -> QuerySet[Bank]:
    """Banks matching ``query`` (slug or name), best match first; every bank when empty.
    Archived banks are left out unless ``archived``."""
    query = (query or "").strip()
    qs = Bank.objects.all() if archived else Bank.objects.filter(archived_at__isnull=True)
    if not query:
        return qs.order_by("slug")
    words = query.split()
    for word in words:
        qs = qs.filter(Q(slug__icontains=word) | Q(name__icontains=word))
    rank = Case(
        When(slug__iexact=query, then=Value(0)),
        When(name__iexact=query, then=Value(1)),
        When(Q(slug__istartswith=query) | Q(name__istartswith=query), then=Value(2)),
        default=Value(3),
        output_field=IntegerField(),
    )
    return qs.annotate(match_rank=rank).order_by("match_rank", "slug")


@dataclass
class BankPage:
    """One page of a bank search, with what a template needs to link the other pages."""

    query: str
    page: Page
    total: int

    @property
    def banks(self) -> list[Bank]:
        return list(self.page.object_list)


def bank_page(
    query: str | None, page: str | int | None, per_page: int = PAGE_SIZE, archived: bool = False
) -> BankPage:
    """A page of :func:`search_banks`; an out-of-range or malformed page number gives the
    nearest page instead of an error."""
    paginator = Paginator(search_banks(query, archived=archived), per_page)
    return BankPage((query or "").strip(), paginator.get_page(page), paginator.count)


def switcher_suggestions() -> list[str]:
    live = Bank.objects.filter(archived_at__isnull=True).order_by("slug")
    return list(live.values_list("slug", flat=True)[:SWITCHER_SUGGESTIONS])
