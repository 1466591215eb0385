"""The query log: what was asked and answered, for fold_replay and usage."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from kb.models import BankOwned


class QueryLog(BankOwned):
    """Every query, as asked and as answered: the raw material of fold_replay (``000_*``)."""

    actor = models.CharField(max_length=200, blank=True, default="")
    query = models.TextField()
    params = models.JSONField(default=dict)
    result_ids = models.JSONField(default=list)
    pointer_ids = models.JSONField(default=list)
    neighbor_ids = models.JSONField(default=list)
    took_ms = models.FloatField(default=0.0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["bank", "created_at"])]

    def __str__(self) -> str:
        return f"{self.query[:60]} ({len(self.result_ids)} results)"
