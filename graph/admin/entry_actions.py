"""The entry actions that change what an entry is: delete with bridging (its own page),
retire, restore, merge and split. Each calls its service (the one REST calls) and shows what
it will do first; none edits ``status`` itself."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Q
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from graph.actions.curation import MergeEntries, SplitEntry
from graph.actions.entries import DeleteEntry, RestoreEntry, RetireEntry
from graph.admin.common import (
    GONE,
)
from graph.curation.delete import plan_delete
from graph.curation.merge import plan_merge
from graph.edges import links as edge_service
from graph.models import (
    Edge,
)
from kb.actions.staff import run_as_staff
from kb.errors import KbError
from kb.models import Entry, EntryStatus


class EntryCurationActions:
    """Mixed into the Entry admin (``GraphEntryAdmin``)."""

    # -- status changes: only through their services ------------------------------------------

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.status in GONE:
            return False
        return request.user.has_perm("kb.delete_entry")

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # Django's cascade; entries delete by bridging
        return actions

    def delete_view(self, request, object_id, extra_context=None):
        """Delete with bridging (:func:`graph.curation.delete.delete_entry`, as
        ``DELETE /entries/{id}``): the page shows the plan, a reason is required."""
        entry = get_object_or_404(Entry.objects.select_related("bank", "kind"), pk=object_id)
        if not self.has_delete_permission(request, entry):
            raise PermissionDenied
        error = ""
        if request.method == "POST":
            reason = (request.POST.get("reason") or "").strip()
            if not reason:
                error = "Give a reason: it is recorded on the delete operation."
            else:
                try:
                    result = run_as_staff(
                        request,
                        DeleteEntry,
                        entry.bank,
                        ids={"id": entry.short_id},
                        body={"reason": reason},
                    )
                except KbError as exc:
                    error = exc.message
                else:
                    self.message_user(
                        request,
                        format_html(
                            'Deleted {} “{}”: {} connection(s) bridged (<a href="{}">operation'
                            " #{}</a>, revertible).",
                            entry.short_id,
                            entry.title,
                            result.bridged,
                            reverse("admin:kb_operation_change", args=[result.operation.pk]),
                            result.operation.pk,
                        ),
                        messages.SUCCESS,
                    )
                    # Back to the list as it was filtered (Django's _changelist_filters).
                    filters = request.GET.get("_changelist_filters", "")
                    back = reverse("admin:kb_entry_changelist")
                    return HttpResponseRedirect(f"{back}?{filters}" if filters else back)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Delete {entry.short_id} “{entry.title}”",
            "opts": self.model._meta,
            "entry": entry,
            "plan": plan_delete(entry.bank, entry),
            "error": error,
            "reason": request.POST.get("reason", ""),
        }
        return TemplateResponse(request, "admin/graph/entry/delete_confirmation.html", context)

    @admin.action(description="Delete (bridging its edges) …", permissions=["delete"])
    def delete_bridging(self, request, queryset):
        entries = list(queryset[:2])
        if len(entries) != 1:
            self.message_user(request, "Select one entry to delete.", messages.WARNING)
            return None
        url = reverse("admin:kb_entry_delete", args=[entries[0].pk])
        filters = request.GET.urlencode()
        return HttpResponseRedirect(
            f"{url}?{urlencode({'_changelist_filters': filters})}" if filters else url
        )

    @admin.action(description="Retire (reason and evidence) …", permissions=["change"])
    def retire_selected(self, request, queryset):
        """:func:`graph.curation.lifecycle.retire_entry` per entry (``POST .../retire``)."""
        entries = list(queryset.select_related("bank", "kind").order_by("pk"))
        live = [e for e in entries if e.status == EntryStatus.LIVE]
        error = ""
        if request.POST.get("confirm") == "yes":
            reason = request.POST.get("reason", "")
            evidence = request.POST.get("evidence", "")
            superseded_by = (request.POST.get("superseded_by") or "").strip() or None
            done = []
            try:
                with transaction.atomic():  # all or nothing for one curator action
                    for entry in live:
                        run_as_staff(
                            request,
                            RetireEntry,
                            entry.bank,
                            ids={"id": entry.short_id},
                            body={
                                "reason": reason,
                                "evidence": evidence,
                                "superseded_by": superseded_by,
                            },
                        )
                        done.append(entry.short_id)
            except KbError as exc:
                error = exc.message + (
                    " " + "; ".join(f"{k}: {v}" for k, v in exc.fields.items())
                    if exc.fields
                    else ""
                )
            else:
                self.message_user(
                    request, f"Retired {', '.join(done) or 'nothing'}.", messages.SUCCESS
                )
                return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Retire entries",
            "opts": self.model._meta,
            "entries": live,
            "skipped": [e for e in entries if e.status != EntryStatus.LIVE],
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
            "error": error,
            "reason": request.POST.get("reason", ""),
            "evidence": request.POST.get("evidence", ""),
            "superseded_by": request.POST.get("superseded_by", ""),
        }
        return TemplateResponse(request, "admin/graph/entry/retire_confirmation.html", context)

    @admin.action(description="Restore (undo a retirement)", permissions=["change"])
    def restore_selected(self, request, queryset):
        """:func:`graph.curation.lifecycle.restore_entry` per retired entry."""
        done = []
        for entry in queryset.select_related("bank").filter(status=EntryStatus.RETIRED):
            try:
                run_as_staff(
                    request,
                    RestoreEntry,
                    entry.bank,
                    ids={"id": entry.short_id},
                    body={"reason": "admin: restored"},
                )
            except KbError as exc:
                self.message_user(request, f"{entry.short_id}: {exc.message}", messages.ERROR)
            else:
                done.append(entry.short_id)
        if done:
            self.message_user(request, f"Restored {', '.join(done)}.", messages.SUCCESS)
        else:
            self.message_user(request, "No retired entry was selected.", messages.WARNING)

    @admin.action(description="Merge selected into …", permissions=["change"])
    def merge_selected(self, request, queryset):
        entries = list(queryset.select_related("bank", "kind").order_by("pk"))
        if len(entries) != 2:
            self.message_user(request, "Select exactly two entries to merge.", messages.WARNING)
            return None
        first, second = entries
        if first.bank_id != second.bank_id:
            self.message_user(request, "Entries of different banks never merge.", messages.ERROR)
            return None
        gone = [e for e in entries if e.status in GONE]
        if gone:
            self.message_user(
                request,
                f"{gone[0].short_id} is already {gone[0].status}; it cannot be merged.",
                messages.ERROR,
            )
            return None
        chosen = request.POST.get("preview_keep") or request.POST.get("keep")
        keep = second if chosen == str(second.pk) else first
        away = first if keep is second else second
        error = ""
        if request.POST.get("confirm") == "yes" and not request.POST.get("preview_keep"):
            reason = (request.POST.get("reason") or "").strip()
            if not reason:
                error = "Give a reason: it is recorded on the merge operation."
            else:
                try:
                    result = run_as_staff(
                        request,
                        MergeEntries,
                        keep.bank,
                        body={"keep": keep.short_id, "away": away.short_id, "reason": reason},
                    )
                except KbError as exc:
                    self.message_user(request, exc.message, messages.ERROR)
                    return None
                counts = result.as_json()
                self.message_user(
                    request,
                    format_html(
                        'Merged {} into {} (<a href="{}">operation #{}</a>): {} edges '
                        "re-pointed, {} collapsed, {} self-loops dropped, {} aliases added.",
                        away.short_id,
                        keep.short_id,
                        reverse("admin:kb_operation_change", args=[result.operation.pk]),
                        result.operation.pk,
                        counts["edges_repointed"],
                        counts["edges_collapsed"],
                        len(counts["self_loops_dropped"]),
                        counts["aliases_added"],
                    ),
                    messages.SUCCESS,
                )
                return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Merge entries",
            "opts": self.model._meta,
            "entries": entries,
            "keep": keep,
            "away": away,
            "preview": plan_merge(keep, away),
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
            "error": error,
            "reason": request.POST.get("reason", ""),
        }
        return TemplateResponse(request, "admin/graph/entry/merge_confirmation.html", context)

    @admin.action(description="Split selected into parts …", permissions=["change"])
    def split_selected(self, request, queryset):
        """One entry → new parts joined by ``split_from``; each current edge stays or moves
        to a part. One ``split`` operation (revertible from the Operation page)."""
        entries = list(queryset.select_related("bank", "kind"))
        if len(entries) != 1 or entries[0].status in GONE:
            self.message_user(request, "Select exactly one live entry to split.", messages.WARNING)
            return None
        entry = entries[0]
        edges = list(
            Edge.objects.filter(bank=entry.bank)
            .filter(Q(from_entry=entry) | Q(to_entry=entry))
            .filter(edge_service.current_q())
            .select_related("type", "from_entry", "to_entry")
            .order_by("id")
        )
        parts_text = request.POST.get("parts", "")
        error = ""
        if request.POST.get("confirm") == "yes":
            error = self._split(request, entry, edges, parts_text)
            if not error:
                return None
        context = {
            **self.admin_site.each_context(request),
            "title": f"Split {entry.short_id}",
            "opts": self.model._meta,
            "entry": entry,
            "edges": [
                (edge, (request.POST.get(f"edge_{edge.pk}") or "keep").strip()) for edge in edges
            ],
            "part_numbers": [
                str(n)
                for n in range(
                    1, max(3, sum(1 for line in parts_text.splitlines() if line.strip())) + 1
                )
            ],
            "parts": parts_text,
            "reason": request.POST.get("reason", ""),
            "error": error,
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/graph/entry/split_confirmation.html", context)

    def _split(self, request, entry, edges, parts_text: str) -> str:
        """Run the split the page describes (one part per line, ``title | summary``; each
        edge kept or moved to a part numbered from 1); the error in the page's terms, or ""."""
        parts = [
            {
                "title": title.strip(),
                "summary": summary.strip(),
                "kind": entry.kind.name,
                "lifetime": {"durable": True},
            }
            for title, _, summary in (line.partition("|") for line in parts_text.splitlines())
            if title.strip()
        ]
        moves = {}
        for edge in edges:
            choice = (request.POST.get(f"edge_{edge.pk}") or "keep").strip()
            if choice != "keep":
                moves[str(edge.pk)] = int(choice) - 1 if choice.isdigit() else choice
        try:
            result = run_as_staff(
                request,
                SplitEntry,
                entry.bank,
                ids={"id": entry.short_id},
                body={"parts": parts, "edges": moves, "reason": request.POST.get("reason", "")},
            )
        except KbError as exc:
            # The page numbers parts from 1 (the service from 0): say it in the page's terms.
            n_parts = len(parts)
            details = [
                f"edge #{k.split('.', 1)[1]}: choose keep or a part from 1 to {n_parts}"
                if k.startswith("edges.") and n_parts
                else f"{k}: {v}"
                for k, v in (exc.fields or {}).items()
            ]
            return exc.message + (" " + "; ".join(details) if details else "")
        self.message_user(
            request,
            format_html(
                'Split {} into {} (<a href="{}">operation #{}</a>).',
                entry.short_id,
                ", ".join(part.short_id for part in result.parts),
                reverse("admin:kb_operation_change", args=[result.operation.pk]),
                result.operation.pk,
            ),
            messages.SUCCESS,
        )
        return ""
