"""Per-token request counters for the rate limits (kept in PostgreSQL so that every web
process on every machine shares one count)."""

from __future__ import annotations

from django.db import models

__all__ = ["TokenRateWindow"]


class TokenRateWindow(models.Model):
    """How many requests a token sent in one fixed one-minute window, per bucket."""

    token = models.ForeignKey("kb.AgentToken", on_delete=models.CASCADE, related_name="+")
    bucket = models.CharField(max_length=10, help_text="all: every request; write: writes.")
    window_start = models.BigIntegerField(help_text="Unix time of the window's first second.")
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["token", "bucket", "window_start"], name="kb_token_rate_window_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.token_id}/{self.bucket}@{self.window_start}: {self.count}"
