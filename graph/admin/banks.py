"""Banks in the admin: each bank with its counts and the ways into it (stats, workflows,
proposal queue, recent operations, explorer), and the "Propose merges" action.

kb never imports graph, so kb's Bank admin is re-registered here with the graph's parts.
:func:`bank_overview` also feeds the admin home page (``templates/admin/kb_index.html``).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import admin, messages
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html, format_html_join

from graph.actions.curation import QueueMergeProposals
from graph.curation.decisions import OPEN
from graph.edges.links import current_q
from graph.models import Edge, MergeProposal
from kb.actions.staff import run_as_staff
from kb.admin import BankAdmin
from kb.models import Bank, Entry, EntryStatus, Operation


@dataclass
class BankOverview:
    """One bank on the admin home: what it holds and where to go from here."""

    bank: Bank
    entries: int
    edges: int
    open_proposals: int
    operations: int
    links: list[tuple[str, str]]


def _url(name: str, *args, query: str = "") -> str | None:
    try:
        return reverse(name, args=args) + (f"?{query}" if query else "")
    except NoReverseMatch:
        return None


def bank_links(bank: Bank) -> list[tuple[str, str]]:
    """(label, url) of every page about ``bank`` (the explorer lives on another branch)."""
    candidates = [
        ("Entries", _url("admin:kb_entry_changelist", query=f"bank__id__exact={bank.pk}")),
        ("Stats", _url("graph-stats-page", bank.slug)),
        ("Workflows", _url("workflows:bank", bank.slug)),
        (
            "Proposal queue",
            _url(
                "admin:graph_mergeproposal_changelist",
                query=f"bank__id__exact={bank.pk}&queue=open",
            ),
        ),
        (
            "Recent operations",
            _url("admin:kb_operation_changelist", query=f"bank__id__exact={bank.pk}"),
        ),
        ("Explorer", f"/explorer/{bank.slug}/"),
    ]
    return [(label, url) for label, url in candidates if url]


def bank_overview(banks: list[Bank]) -> list[BankOverview]:
    """``banks`` (one page of them) with their live entries, current edges, proposals awaiting
    a decision and operations (live = status live, as the entries list's Live filter): four grouped statements whatever the page size."""
    pks = [bank.pk for bank in banks]
    entries = dict(
        Entry.objects.filter(bank_id__in=pks, status=EntryStatus.LIVE)
        .values("bank")
        .annotate(n=Count("pk"))
        .values_list("bank", "n")
    )
    edges = dict(
        Edge.objects.filter(bank_id__in=pks)
        .filter(current_q())
        .values("bank")
        .annotate(n=Count("pk"))
        .values_list("bank", "n")
    )
    proposals = dict(
        MergeProposal.objects.filter(bank_id__in=pks, status__in=OPEN)
        .values("bank")
        .annotate(n=Count("pk"))
        .values_list("bank", "n")
    )
    operations = dict(
        Operation.objects.filter(bank_id__in=pks)
        .values("bank")
        .annotate(n=Count("pk"))
        .values_list("bank", "n")
    )
    return [
        BankOverview(
            bank,
            entries.get(bank.pk, 0),
            edges.get(bank.pk, 0),
            proposals.get(bank.pk, 0),
            operations.get(bank.pk, 0),
            bank_links(bank),
        )
        for bank in banks
    ]


@admin.register(Bank)
class GraphBankAdmin(BankAdmin):
    """kb's Bank admin plus links to each bank's pages and the "Propose merges" action."""

    list_display = (*BankAdmin.list_display, "open_proposals", "pages")
    actions = (*BankAdmin.actions, "propose_merges")

    def get_queryset(self, request):
        # MergeProposal.bank has no reverse accessor (related_name="+"): count in a subquery.
        pending = (
            MergeProposal.objects.filter(bank=OuterRef("pk"), status__in=OPEN)
            .order_by()
            .values("bank")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return (
            super()
            .get_queryset(request)
            .annotate(open_proposals=Coalesce(Subquery(pending, output_field=IntegerField()), 0))
        )

    @admin.display(description="open proposals", ordering="open_proposals")
    def open_proposals(self, obj: Bank) -> int:
        return obj.open_proposals

    @admin.display(description="pages")
    def pages(self, obj: Bank) -> str:
        return format_html_join(" · ", '<a href="{}">{}</a>', ((u, t) for t, u in bank_links(obj)))

    @admin.action(description="Propose merges (queue the duplicate finder)", permissions=["change"])
    def propose_merges(self, request, queryset):
        """``QueueMergeProposals`` per bank: a job each, enqueued after commit; the queue
        fills as the job runs (it never merges anything itself)."""
        banks = list(queryset.order_by("slug"))
        jobs = [run_as_staff(request, QueueMergeProposals, bank, body={}) for bank in banks]
        self.message_user(
            request,
            format_html(
                "Queued the duplicate finder for {} (jobs {}). Its proposals (likely duplicates "
                "and unclear pairs alike) appear in the {} as it finishes.",
                ", ".join(b.slug for b in banks),
                ", ".join(job.public_id for job in jobs),
                format_html(
                    '<a href="{}">proposal queue</a>',
                    reverse("admin:graph_mergeproposal_changelist") + "?queue=open",
                ),
            ),
            messages.SUCCESS,
        )
