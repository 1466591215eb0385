"""Agent tokens: created once (the raw value is shown once), stored as a SHA-256 hash."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from kb.errors import InvalidInput
from kb.models import AgentToken, Bank, Scope

TOKEN_PREFIX = "kb_"
LAST_USED_RESOLUTION = timedelta(minutes=1)


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def parse_scopes(value: str | Iterable[str]) -> list[str]:
    items = value.split(",") if isinstance(value, str) else list(value)
    scopes = sorted({s.strip() for s in items if s.strip()})
    unknown = [s for s in scopes if s not in Scope.values]
    if unknown or not scopes:
        raise InvalidInput(
            f"Scopes must be a non-empty subset of read, write, curate; got {', '.join(unknown) or 'none'}.",
            code="invalid_scopes",
        )
    return scopes


@transaction.atomic
def create_token(
    name: str, banks: Iterable[Bank], scopes: Iterable[str], created_by: str = ""
) -> tuple[AgentToken, str]:
    """Create a token; return it with the raw secret (never stored, shown once)."""
    banks = list(banks)
    if not name.strip():
        raise InvalidInput("A token needs a name.", code="invalid_token")
    if not banks:
        raise InvalidInput("A token must hold at least one bank.", code="invalid_token")
    prefix = secrets.token_hex(4)
    while AgentToken.objects.filter(prefix=prefix).exists():
        prefix = secrets.token_hex(4)
    raw = f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    token = AgentToken.objects.create(
        name=name.strip(),
        prefix=prefix,
        token_hash=hash_token(raw),
        scopes=parse_scopes(scopes),
        created_by=created_by,
    )
    token.banks.set(banks)
    return token, raw


def authenticate_token(raw: str) -> AgentToken | None:
    """The live token for ``raw``, or None. Touches ``last_used_at`` at most once a minute."""
    if not raw.startswith(TOKEN_PREFIX):
        return None
    token = AgentToken.objects.filter(token_hash=hash_token(raw), revoked_at__isnull=True).first()
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        AgentToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
