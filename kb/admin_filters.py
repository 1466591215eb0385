"""List filters that stay usable with hundreds of banks.

:class:`BankFilter` replaces Django's one-link-per-bank sidebar with a search box (the slug
or name is typed, with suggestions) and shows only the chosen bank; it reads and writes the
same ``bank__id__exact`` parameter as Django's own filter, so links built elsewhere keep
working. :class:`KindFilter` lists the core kinds plus the chosen bank's own.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Q

from kb.banks_directory import search_banks, switcher_suggestions
from kb.models import Bank, EntryKind


def as_pk(value: str | None) -> int | None:
    """A primary key from a query parameter, or None (never an integer the database cannot
    hold: a 30-digit id must not turn into a 500)."""
    value = (value or "").strip()
    return int(value) if value.isdigit() and len(value) <= 18 else None


class BankFilter(admin.SimpleListFilter):
    title = "bank"
    parameter_name = "bank__id__exact"
    slug_parameter = "bank_slug"
    template = "admin/kb/bank_filter.html"
    bank_field = "bank_id"

    def __init__(self, request, params, model, model_admin):
        typed = params.pop(self.slug_parameter, None)
        if typed and typed[-1].strip():
            bank = (
                Bank.objects.filter(slug__iexact=typed[-1].strip()).first()
                or search_banks(typed[-1]).first()
            )
            params[self.parameter_name] = [str(bank.pk) if bank else "0"]
        super().__init__(request, params, model, model_admin)
        self.hidden_params = [
            (key, value)
            for key, values in request.GET.lists()
            for value in values
            if key not in (self.parameter_name, self.slug_parameter, "p")
        ]
        self.suggestions = switcher_suggestions()
        self.chosen = self._chosen()

    def _chosen(self) -> Bank | None:
        pk = as_pk(self.value())
        return Bank.objects.filter(pk=pk).first() if pk is not None else None

    def lookups(self, request, model_admin):
        # Only the chosen bank: the search box finds the others.
        pk = as_pk(request.GET.get(self.parameter_name))
        bank = Bank.objects.filter(pk=pk).first() if pk is not None else None
        return [(str(bank.pk), bank.slug)] if bank else [("", "")]

    def has_output(self):
        return True

    def expected_parameters(self):
        return [self.parameter_name, self.slug_parameter]

    def choices(self, changelist):
        yield {
            "selected": self.value() is None,
            "query_string": changelist.get_query_string(
                remove=[self.parameter_name, self.slug_parameter]
            ),
            "display": "All banks",
        }

    def queryset(self, request, queryset):
        value = self.value()
        if value is None:
            return queryset
        pk = as_pk(value)
        return queryset.none() if pk is None else queryset.filter(**{self.bank_field: pk})


class TokenBankFilter(BankFilter):
    """Tokens by one of the banks they hold."""

    parameter_name = "banks__id__exact"
    slug_parameter = "banks_slug"
    bank_field = "banks__id"


class KindFilter(admin.SimpleListFilter):
    """Entry kinds: the core vocabulary, plus the chosen bank's own kinds."""

    title = "kind"
    parameter_name = "kind__id__exact"

    def lookups(self, request, model_admin):
        bank = as_pk(request.GET.get(BankFilter.parameter_name))
        scope = Q(bank__isnull=True) | (Q(bank_id=bank) if bank is not None else Q(pk=None))
        kinds = EntryKind.objects.filter(scope).order_by("name")
        return [(str(k.pk), k.name if k.bank_id is None else f"{k.name} (bank)") for k in kinds]

    def queryset(self, request, queryset):
        value = self.value()
        if value is None:
            return queryset
        pk = as_pk(value)
        return queryset.none() if pk is None else queryset.filter(kind_id=pk)
