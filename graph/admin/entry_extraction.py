"""The entry admin's "Extract edge proposals from selected" action (declared in
``GraphEntryAdmin.actions``): one extraction job per bank over the selected entries, each
started through the :class:`graph.actions.extraction.RunExtraction` action as the staff
member."""

from __future__ import annotations

from collections import defaultdict

from django.contrib import admin, messages

from graph.actions.extraction import RunExtraction
from kb.actions.staff import run_as_staff


@admin.action(description="Extract edge proposals from selected (local extractor)")
def extract_edges_from_selected(modeladmin, request, queryset):
    """Queue one extraction job per bank over the selected entries."""
    by_bank = defaultdict(list)
    for entry in queryset.select_related("bank"):
        by_bank[entry.bank].append(entry.short_id)
    for bank, ids in by_bank.items():
        job = run_as_staff(
            request, RunExtraction, bank, body={"entries": ids, "extractor": "local"}
        )
        job.refresh_from_db()
        modeladmin.message_user(
            request,
            f"Extraction job {job.public_id} on {bank.slug}: {len(ids)} entries, {job.status}. "
            "Review the results under Edge proposals.",
            messages.SUCCESS,
        )
