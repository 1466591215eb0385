"""Admin for operations: what each changed, and reverting one."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.postgres.aggregates import ArrayAgg
from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import PermissionDenied
from django.db.models import CharField, OuterRef, Subquery
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse

from graph.actions.curation import RevertOperation
from graph.curation import revert
from graph.curation.timeline import describe_revert, operation_story
from graph.models import (
    Alias,
    Edge,
    EdgeType,
)
from kb.actions.staff import run_as_staff
from kb.admin_audit import OperationAdmin
from kb.errors import KbError
from kb.models import Entry, Operation

# --- Operations: revert -------------------------------------------------------------------------


def _describe_change(change: dict, entries: dict[int, Entry], types: dict[int, str]) -> str:
    state = change["after"] or change["before"] or {}
    if change["model"] == "entry":
        return f"{state.get('short_id', '')} {state.get('title', '')}".strip()
    if change["model"] == "edge":
        ends = [entries.get(state.get(k)) for k in ("from_entry_id", "to_entry_id")]
        names = [e.short_id if e else "?" for e in ends]
        return f"{names[0]} -{types.get(state.get('type_id'), '?')}-> {names[1]}"
    return f"{state.get('surface', '')} → {getattr(entries.get(state.get('entry_id')), 'short_id', '?')}"


def change_rows(op: Operation) -> list[dict]:
    """``operation_changes`` for a page: each row with a label and the fields that differ."""
    changes = revert.operation_changes(op)
    entry_ids, type_ids = set(), set()
    for change in changes:
        for state in (change["before"], change["after"]):
            if state:
                entry_ids.update(
                    state.get(k) for k in ("from_entry_id", "to_entry_id", "entry_id") if k in state
                )
                if "type_id" in state:
                    type_ids.add(state["type_id"])
    entries = Entry.objects.in_bulk(entry_ids - {None})
    types = dict(EdgeType.objects.filter(pk__in=type_ids).values_list("pk", "name"))
    rows = []
    for change in changes:
        before, after = change["before"] or {}, change["after"] or {}
        names = sorted(set(before) | set(after))
        diff = [
            (name, before.get(name, "—"), after.get(name, "—"))
            for name in names
            if before.get(name) != after.get(name)
        ]
        rows.append({**change, "label": _describe_change(change, entries, types), "diff": diff})
    return rows


def _affected(history_model, path: str) -> Subquery:
    """The short ids reached through ``path`` from the history rows an operation wrote."""
    rows = (
        history_model.objects.filter(operation_id=OuterRef("pk"))
        .order_by()
        .values("operation_id")
        .annotate(ids=ArrayAgg(path, distinct=True))
        .values("ids")[:1]
    )
    return Subquery(rows, output_field=ArrayField(CharField()))


@admin.register(Operation)
class GraphOperationAdmin(OperationAdmin):
    """kb's read-only Operation admin plus the revert flow and the entries each touched."""

    change_form_template = "admin/graph/operation/change_form.html"
    actions = ("revert_selected",)
    list_display = ("id", "kind", "reason", "affected", "bank", "actor", "created_at")
    AFFECTED_SHOWN = 6

    def get_queryset(self, request):
        # Three subqueries in the list's one statement: entries changed, and the two ends of
        # the edges and the entries of the aliases the operation wrote.
        return (
            super()
            .get_queryset(request)
            .annotate(
                affected_entries=_affected(Entry.history.model, "short_id"),
                affected_from=_affected(Edge.history.model, "from_entry__short_id"),
                affected_to=_affected(Edge.history.model, "to_entry__short_id"),
                affected_alias=_affected(Alias.history.model, "entry__short_id"),
            )
        )

    @admin.display(description="affected entries")
    def affected(self, obj: Operation) -> str:
        ids = sorted(
            {
                i
                for name in ("affected_entries", "affected_from", "affected_to", "affected_alias")
                for i in (getattr(obj, name, None) or [])
                if i
            }
        )
        shown = ", ".join(ids[: self.AFFECTED_SHOWN])
        more = len(ids) - self.AFFECTED_SHOWN
        return f"{shown} and {more} more" if more > 0 else (shown or "—")

    def has_revert_permission(self, request):
        return request.user.has_perm("kb.change_entry")

    def get_urls(self):
        revert = path(
            "<path:object_id>/revert/",
            self.admin_site.admin_view(self.revert_view),
            name="kb_operation_revert",
        )
        return [revert, *super().get_urls()]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        op = Operation.objects.filter(pk=object_id).first()
        extra = {
            **(extra_context or {}),
            "story": operation_story(op) if op is not None else [],
            "can_revert": self.has_revert_permission(request),
            "revert_url": reverse("admin:kb_operation_revert", args=[object_id]),
        }
        return super().change_view(request, object_id, form_url, extra)

    @admin.action(description="Revert…", permissions=["revert"])
    def revert_selected(self, request, queryset):
        ops = list(queryset[:2])
        if len(ops) != 1:
            self.message_user(request, "Select exactly one operation to revert.", messages.WARNING)
            return None
        return HttpResponseRedirect(reverse("admin:kb_operation_revert", args=[ops[0].pk]))

    def revert_view(self, request, object_id):
        if not self.has_revert_permission(request):
            raise PermissionDenied
        op = get_object_or_404(Operation.objects.select_related("bank"), pk=object_id)
        if request.method == "POST":
            force = request.POST.get("force") in ("on", "yes", "true", "1")
            try:
                result = run_as_staff(
                    request,
                    RevertOperation,
                    op.bank,
                    ids={"op_id": op.pk},
                    body={"reason": request.POST.get("reason", ""), "force": force},
                )
            except KbError as exc:
                self.message_user(request, exc.message, messages.ERROR)
            else:
                self.message_user(
                    request,
                    f"Reverted operation #{op.pk}: {result.rows} row(s) restored "
                    f"(operation #{result.operation.pk}).",
                    messages.SUCCESS,
                )
                return HttpResponseRedirect(
                    reverse("admin:kb_operation_change", args=[result.operation.pk])
                )
            op.refresh_from_db()
        context = {
            **self.admin_site.each_context(request),
            "title": f"Revert operation #{op.pk}",
            "opts": self.model._meta,
            "operation": op,
            "changes": change_rows(op),
            "story": operation_story(op),
            "undo": describe_revert(revert.revert_plan(op)[0]) if op.reverted_by_id is None else [],
            "conflicts": revert.revert_plan(op)[1] if op.reverted_by_id is None else [],
            "reason": request.POST.get("reason", ""),
        }
        return TemplateResponse(request, "admin/graph/operation/revert_confirmation.html", context)
