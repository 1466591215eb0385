"""Shared pieces of the graph admin: labels, the refusal of gone entries, read-only history."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from graph.models import (
    Edge,
    EdgeType,
)
from kb.actions.staff import staff_caller
from kb.models import Entry, EntryStatus

GONE = (EntryStatus.MERGED, EntryStatus.DELETED)


def form_with_caller(form_class, request):
    """``form_class`` bound to the admin request's caller (a subclass per request, so the
    form's ``_post_clean`` runs its action as that staff member)."""
    return type(form_class.__name__, (form_class,), {"caller": staff_caller(request)})


def _entry_label(entry: Entry | None) -> str:
    return f"{entry.short_id} {entry.title}" if entry is not None else "—"


def _relation_label(edge: Edge) -> str:
    return f"{edge.type.name}: {edge.label}" if edge.label else edge.type.name


def _refuse_gone(entry: Entry, field_name: str) -> None:
    """Links and merges name live entries; a merged or deleted one is an error, not a redirect."""
    if entry.status == EntryStatus.MERGED:
        raise ValidationError(
            {field_name: f"{entry.short_id} was merged into another entry; use the survivor."}
        )
    if entry.status == EntryStatus.DELETED:
        raise ValidationError({field_name: f"{entry.short_id} is deleted."})


def _check_type_bank(etype: EdgeType, bank_id: int) -> None:
    if etype.bank_id not in (None, bank_id):
        raise ValidationError({"type": f"The relation {etype} belongs to another bank."})


def taken_message(taken: list[Entry]) -> str:
    """Names the entries a new alias would collide with, with links to them."""
    return format_html(
        "This name already names {}. Adding it makes the name ambiguous (resolve reads aliases "
        "before titles). Tick “add anyway” to add it regardless.",
        format_html_join(
            ", ",
            '<a href="{}">{} · {} · {}</a>',
            (
                (reverse("admin:kb_entry_change", args=[e.pk]), e.title, e.kind.name, e.short_id)
                for e in taken
            ),
        ),
    )


class NoHistoryRevertMixin:
    """History is for reading: undoing a change means reverting its whole operation."""

    history_list_display = ("history_actor", "operation")

    def revert_disabled(self, request, obj=None):
        return True

    def history_form_view(self, request, object_id, version_id, extra_context=None):
        if request.method == "POST":
            raise PermissionDenied("Revert the operation instead (Operations › Revert).")
        return super().history_form_view(request, object_id, version_id, extra_context)
