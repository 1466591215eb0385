"""Admin for aliases: adding calls ``add_alias``; history is read-only."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.utils.http import url_has_allowed_host_and_scheme
from simple_history.admin import SimpleHistoryAdmin

from graph.actions.edges import AddAlias, RemoveAlias
from graph.admin.common import (
    NoHistoryRevertMixin,
    _refuse_gone,
    form_with_caller,
    taken_message,
)
from graph.models import (
    Alias,
)
from graph.resolution import aliases as alias_service
from kb.actions.staff import execute_as, run_as_staff
from kb.admin_filters import BankFilter
from kb.errors import KbError

# --- Aliases ----------------------------------------------------------------------------------


class AliasAddForm(forms.ModelForm):
    """A new alias, written by ``add_alias`` once the form is valid."""

    class Meta:
        model = Alias
        fields = ("entry", "surface")

    add_anyway = forms.BooleanField(
        required=False, label="Add even if the name already names another entry"
    )

    def clean(self):
        data = super().clean()
        if data.get("entry") is not None:
            _refuse_gone(data["entry"], "entry")
            entry, surface = data["entry"], data.get("surface")
            taken = alias_service.names_taken(entry.bank, entry, surface) if surface else []
            if taken and not data.get("add_anyway"):
                self.add_error("surface", taken_message(taken))
        return data

    def _post_clean(self):
        super()._post_clean()
        if self.errors:
            return
        entry = self.cleaned_data["entry"]
        try:
            self.instance = execute_as(
                self.caller,
                AddAlias,
                entry.bank,
                ids={"id": entry.short_id},
                body={"surface": self.cleaned_data["surface"]},
            )
        except KbError as exc:
            self.add_error(None, exc.message)


@admin.register(Alias)
class AliasAdmin(NoHistoryRevertMixin, SimpleHistoryAdmin):
    list_display = ("surface", "entry", "bank", "source", "created_at")
    list_filter = (BankFilter, "source")
    list_select_related = ("entry", "bank")
    search_fields = ("surface", "normalized", "entry__short_id", "entry__title")
    autocomplete_fields = ("entry",)
    form = AliasAddForm
    readonly_fields = ("normalized", "bank", "source", "actor", "created_at")

    def get_form(self, request, obj=None, change=False, **kwargs):
        return form_with_caller(super().get_form(request, obj, change=change, **kwargs), request)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("entry", "surface", "add_anyway")
        return ("surface", "entry", *self.readonly_fields)

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request, obj)

    def save_model(self, request, obj, form, change):
        """``add_alias`` already wrote it."""

    def delete_model(self, request, obj):
        """Through :func:`graph.resolution.aliases.remove_alias` (one ``unlink`` operation)."""
        _remove(request, obj)

    def response_delete(self, request, obj_display, obj_id):
        back = request.GET.get("next", "")
        if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
            self.message_user(request, f"Removed the alias “{obj_display}”.", messages.SUCCESS)
            return HttpResponseRedirect(back)
        return super().response_delete(request, obj_display, obj_id)

    def delete_queryset(self, request, queryset):
        for alias in queryset.select_related("bank", "entry"):
            _remove(request, alias)


def _remove(request, alias: Alias) -> None:
    run_as_staff(
        request,
        RemoveAlias,
        alias.bank,
        ids={"id": alias.entry.short_id},
        body={"surface": alias.surface, "reason": "admin: alias removed"},
    )
