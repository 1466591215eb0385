"""The core of Knowledge Bank: banks, entries, their vocabulary, embeddings and audit."""

from __future__ import annotations

import functools
import secrets

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.utils import timezone
from pgvector.django import VectorField
from simple_history.manager import HistoryManager
from simple_history.models import HistoricalRecords

from kb.entry_limits import HARD_LIMITS, ITEM_CHARS

DEFAULT_DIMENSION_WEIGHTS = {"content": 0.5, "useful_for": 0.3, "context": 0.2}
DEFAULT_LEXICAL_WEIGHT = 0.5
DEFAULT_KIND_WEIGHT_SCALE = 0.05


class BankKind(models.TextChoices):
    ENGINEERING = "engineering"
    BUSINESS = "business"
    GENERAL = "general"


class Bank(models.Model):
    """A tenant. Every other row belongs to exactly one bank; nothing joins across banks."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=BankKind.choices, default=BankKind.GENERAL)
    settings = models.JSONField(
        default=dict,
        blank=True,
        help_text='Per-bank tuning, e.g. {"dimension_weights": {"content": 0.5, '
        '"useful_for": 0.3, "context": 0.2}, "lexical_weight": 0.5, "kind_weight_scale": 0.05}.',
    )
    created_at = models.DateTimeField(auto_now_add=True)
    archived_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Set by the archive service: an archived bank keeps every row but leaves the "
        "bank lists, switchers and filters (restore it from the Banks list).",
    )

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def dimension_weights(self) -> dict[str, float]:
        weights = dict(DEFAULT_DIMENSION_WEIGHTS)
        custom = (self.settings or {}).get("dimension_weights") or {}
        for name in weights:
            if isinstance(custom.get(name), int | float):
                weights[name] = float(custom[name])
        return weights

    def setting(self, name: str, default: float) -> float:
        value = (self.settings or {}).get(name)
        return float(value) if isinstance(value, int | float) else default


class BankOwned(models.Model):
    """Mixin for rows that belong to one bank."""

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")

    class Meta:
        abstract = True


class EntryKind(models.Model):
    """Entry kind vocabulary. Core kinds have no bank; a bank may add its own.

    ``weight`` is the additive category weight of ``002_*`` (decision 3 … container −3,
    structural 0); search turns it into a multiplier ``1 + scale × weight``.
    """

    bank = models.ForeignKey(
        Bank, null=True, blank=True, on_delete=models.CASCADE, related_name="kinds"
    )
    name = models.SlugField(max_length=64)
    weight = models.FloatField(default=1.0)
    container = models.BooleanField(default=False, help_text="Groups other entries (downranked).")
    structural = models.BooleanField(
        default=False, help_text="Names a part of the system (weight 0)."
    )
    entity = models.BooleanField(
        default=False,
        help_text="Names a thing (service, team, person, system): bare-name resolution prefers it.",
    )
    description = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["bank", "name"], name="entrykind_unique_per_bank"),
            models.UniqueConstraint(
                fields=["name"], condition=Q(bank__isnull=True), name="entrykind_unique_core"
            ),
        ]

    def __str__(self) -> str:
        return self.name if self.bank_id is None else f"{self.name} ({self.bank})"


class EntryStatus(models.TextChoices):
    LIVE = "live"
    RETIRED = "retired"
    CANCELLED = "cancelled"
    DONE = "done"
    MERGED = "merged"
    DELETED = "deleted"


def new_short_id() -> str:
    return secrets.token_hex(4)


def new_job_id() -> str:
    return secrets.token_hex(8)


class HistoryManagerOnce(HistoryManager):
    """simple-history's ``Model.history`` builds a manager class from its queryset class on
    every access (``Manager.from_queryset``, an ``inspect.getmembers`` of the queryset: about
    1 ms), and every ``save()`` of an audited row reads it to write the historical row. This
    manager builds that class once per queryset class; each access still gets its own
    manager instance."""

    @classmethod
    @functools.cache
    def from_queryset(cls, queryset_class, class_name=None):
        return super().from_queryset(queryset_class, class_name)


class AuditedHistory(models.Model):
    """Extra columns on every historical row: the operation and actor that wrote it."""

    operation = models.ForeignKey(
        "kb.Operation", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Not "actor": Edge and Alias have an ``actor`` column of their own, which history tracks.
    history_actor = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        abstract = True


def title_letters() -> models.Func:
    """The ASCII letters and digits of an entry's lower-cased NFKC title: the key on which the
    duplicate check (``kb.services.duplicates``) narrows "same text" candidates in SQL. Entries
    are indexed on ``(bank, title_letters())``; the check filters on this same expression."""
    return models.Func(
        Lower(
            models.Func(
                models.F("title"),
                function="normalize",
                template="%(function)s(%(expressions)s, NFKC)",
            )
        ),
        models.Value("[^a-z0-9]+"),
        models.Value(""),
        models.Value("g"),
        function="regexp_replace",
    )


class Entry(BankOwned):
    """A unit of knowledge, cited by its 8-character ``short_id``."""

    short_id = models.CharField(max_length=8, default=new_short_id)
    # Sizes come from kb.entry_limits (the one declaration of entry limits).
    key = models.CharField(max_length=HARD_LIMITS["key"], null=True, blank=True)
    title = models.CharField(max_length=HARD_LIMITS["title"])
    content = models.TextField(blank=True, default="")
    summary = models.CharField(max_length=HARD_LIMITS["summary"], blank=True, default="")
    useful_for = models.CharField(max_length=HARD_LIMITS["useful_for"], blank=True, default="")
    systems = ArrayField(
        models.CharField(max_length=ITEM_CHARS["systems"]), default=list, blank=True
    )
    tasks = ArrayField(models.CharField(max_length=ITEM_CHARS["tasks"]), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    kind = models.ForeignKey(EntryKind, on_delete=models.PROTECT, related_name="entries")
    status = models.CharField(max_length=12, choices=EntryStatus.choices, default=EntryStatus.LIVE)
    status_changed_at = models.DateTimeField(default=timezone.now)
    steps = models.JSONField(null=True, blank=True, help_text="Playbook steps, returned whole.")
    anchor_files = ArrayField(
        models.CharField(max_length=ITEM_CHARS["anchor_files"]), default=list, blank=True
    )
    anchor_symbols = ArrayField(
        models.CharField(max_length=ITEM_CHARS["anchor_symbols"]), default=list, blank=True
    )
    # Lifetime: exactly one of durable, expires_at, resolved_by.
    durable = models.BooleanField(default=True)
    expires_at = models.DateField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="resolves"
    )
    retired_reason = models.TextField(blank=True, default="")
    retired_evidence = models.TextField(blank=True, default="")
    merged_into = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="merged_from"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    verified_at = models.DateTimeField(null=True, blank=True)
    verified_by = models.CharField(max_length=200, blank=True, default="")
    usage_count = models.PositiveIntegerField(default=0)
    last_used_at = models.DateTimeField(null=True, blank=True)
    created_by = models.CharField(max_length=200, blank=True, default="")

    history = HistoricalRecords(
        bases=[AuditedHistory],
        history_manager=HistoryManagerOnce,
        excluded_fields=["usage_count", "last_used_at"],
        cascade_delete_history=False,
    )

    class Meta:
        verbose_name_plural = "entries"
        ordering = ["bank", "title"]
        constraints = [
            models.UniqueConstraint(
                fields=["bank", "short_id"], name="entry_short_id_unique_per_bank"
            ),
            # Target of the composite foreign keys that keep an edge's ends in the edge's bank.
            models.UniqueConstraint(fields=["id", "bank"], name="entry_id_bank_unique"),
            models.UniqueConstraint(
                fields=["bank", "key"],
                condition=Q(key__isnull=False),
                name="entry_key_unique_per_bank",
            ),
            models.CheckConstraint(
                condition=Q(short_id__regex=r"^[0-9a-f]{8}$"), name="entry_short_id_format"
            ),
            models.CheckConstraint(
                condition=(
                    Q(durable=True, expires_at__isnull=True, resolved_by__isnull=True)
                    | Q(durable=False, expires_at__isnull=False, resolved_by__isnull=True)
                    | Q(durable=False, expires_at__isnull=True, resolved_by__isnull=False)
                ),
                name="entry_exactly_one_lifetime",
            ),
            models.CheckConstraint(
                condition=~Q(resolved_by=models.F("id")), name="entry_not_resolved_by_itself"
            ),
        ]
        indexes = [
            models.Index(fields=["bank", "status"]),
            GinIndex(fields=["anchor_files"], name="entry_anchor_files_gin"),
            GinIndex(fields=["anchor_symbols"], name="entry_anchor_symbols_gin"),
            models.Index(fields=["bank", "kind"]),
            models.Index(models.F("bank"), title_letters(), name="entry_title_letters"),
        ]

    def __str__(self) -> str:
        return f"{self.short_id} {self.title}"

    @property
    def lifetime(self) -> dict:
        if self.expires_at is not None:
            return {"expires_at": self.expires_at.isoformat()}
        if self.resolved_by_id is not None:
            return {"resolved_by": self.resolved_by.short_id}
        return {"durable": True}

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at < timezone.localdate()

    @property
    def context_text(self) -> str:
        """The text of the ``context`` search dimension: title, systems and tasks."""
        return " | ".join(
            part for part in [self.title, ", ".join(self.systems), ", ".join(self.tasks)] if part
        )


class EntryEmbedding(models.Model):
    """One vector per search dimension of an entry (content, useful_for, context)."""

    entry = models.OneToOneField(
        Entry, primary_key=True, on_delete=models.CASCADE, related_name="embedding"
    )
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    content = VectorField(dimensions=settings.KB_EMBEDDING_DIM, null=True)
    useful_for = VectorField(dimensions=settings.KB_EMBEDDING_DIM, null=True)
    context = VectorField(dimensions=settings.KB_EMBEDDING_DIM, null=True)
    model = models.CharField(max_length=200)
    source_hash = models.CharField(max_length=64)
    computed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        # No HNSW index spans the banks: each large bank gets partial HNSW indexes of its own
        # (kb.services.vector_index, built by a job), smaller banks are scanned exactly.
        indexes: list = []


class OperationKind(models.TextChoices):
    CREATE = "create"
    UPDATE = "update"
    VERIFY = "verify"
    RETIRE = "retire"
    RESTORE = "restore"
    LINK = "link"
    UNLINK = "unlink"
    RETYPE = "retype"
    INVALIDATE = "invalidate"
    RENOTE = "renote"
    MERGE = "merge"
    SPLIT = "split"
    DELETE = "delete"
    IMPORT = "import"
    BACKFILL = "backfill"
    REVERT = "revert"
    CLAIM = "claim"
    RELEASE = "release"
    REVOKE_TOKEN = "revoke_token"
    ALIAS = "alias"
    UNALIAS = "unalias"
    ARCHIVE = "archive"
    UNARCHIVE = "unarchive"
    CONFIGURE = "configure"  # a bank's row or vocabulary (kinds, relation types)
    CREATE_TOKEN = "create_token"
    TOKEN_EXPIRY = "token_expiry"


class Operation(BankOwned):
    """An audited changeset: one reviewable, revertible unit of change."""

    kind = models.CharField(max_length=20, choices=OperationKind.choices)
    actor = models.CharField(max_length=200)
    reason = models.TextField(blank=True, default="")
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # The request (HTTP, MCP tool call, task) that wrote it: the id its log lines carry.
    request_id = models.CharField(max_length=128, blank=True, default="")
    reverted_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reverts"
    )
    # The request (HTTP, MCP, task or command) that opened it, as its log lines show it.
    request_id = models.CharField(max_length=128, blank=True, default="")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["bank", "created_at"])]

    def __str__(self) -> str:
        return f"#{self.pk} {self.kind} by {self.actor}"


class Scope(models.TextChoices):
    READ = "read"
    WRITE = "write"
    CURATE = "curate"


class AgentToken(models.Model):
    """An agent's bearer token: stored hashed, bound to banks with scopes."""

    name = models.CharField(max_length=200)
    prefix = models.CharField(max_length=12, unique=True, help_text="Visible part of the token.")
    token_hash = models.CharField(max_length=64, unique=True)
    scopes = ArrayField(models.CharField(max_length=10, choices=Scope.choices), default=list)
    banks = models.ManyToManyField(Bank, related_name="tokens")
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=200, blank=True, default="")
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="The token stops working at this time (empty: never)."
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def actor(self) -> str:
        return f"agent:{self.name}"


class JobStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Job(BankOwned):
    """A long-running piece of work (an import, a backfill) with progress an agent can poll."""

    public_id = models.CharField(max_length=32, unique=True, default=new_job_id)
    kind = models.CharField(max_length=40)
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    actor = models.CharField(max_length=200, blank=True, default="")
    payload = models.TextField(blank=True, default="")
    # What the job is doing now ("validating", "writing edges", "embedding", …): with
    # progress_done/progress_total it is the progress the API, the admin and the CLI show.
    phase = models.CharField(max_length=60, blank=True, default="")
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    # Deliveries that started the job: more than one means a worker was lost mid-run.
    attempts = models.PositiveIntegerField(default=0)
    result = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} {self.public_id} ({self.status})"


from kb.models_claims import *  # noqa: E402,F401,F403
from kb.models_tokens import *  # noqa: E402,F401,F403
