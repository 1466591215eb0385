"""Agent tokens: created once (the raw value is shown once), stored as a SHA-256 hash."""

from __future__ import annotations

import functools
import hashlib
import logging
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from kb import audit
from kb.errors import InvalidInput
from kb.models import AgentToken, Bank, OperationKind, Scope
from kb.prepared import fetch_prepared
from kb.unit_of_work import start_operation

logger = logging.getLogger("kb.tokens")

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
    name: str,
    banks: Iterable[Bank],
    scopes: Iterable[str],
    created_by: str = "",
    expires_at: datetime | None = None,
) -> tuple[AgentToken, str]:
    """Create a token; return it with the raw secret (never stored, shown once). With
    ``expires_at`` the token stops authenticating at that time."""
    banks = list(banks)
    if expires_at is not None and expires_at <= timezone.now():
        raise InvalidInput("A token's expiry must be in the future.", code="invalid_token")
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
        expires_at=expires_at,
    )
    token.banks.set(banks)
    return token, raw


def _live_q(now: datetime, prefix: str = "") -> Q:
    """Not revoked and not expired at ``now``, on ``AgentToken`` reached through ``prefix``."""
    return Q(**{f"{prefix}revoked_at__isnull": True}) & (
        Q(**{f"{prefix}expires_at__isnull": True}) | Q(**{f"{prefix}expires_at__gt": now})
    )


def live_tokens(now: datetime | None = None):
    """Tokens that authenticate now: not revoked, not expired."""
    return AgentToken.objects.filter(_live_q(now or timezone.now()))


def token_state(token: AgentToken, now: datetime | None = None) -> str:
    """``revoked``, ``expired`` or ``active``."""
    now = now or timezone.now()
    if token.revoked_at is not None:
        return "revoked"
    if token.expires_at is not None and token.expires_at <= now:
        return "expired"
    return "active"


def authenticate_token(raw: str) -> AgentToken | None:
    """The live token for ``raw`` (not revoked, not expired), or None. Touches
    ``last_used_at`` at most once a minute, so a busy token costs no write per request."""
    return authenticate_token_for_bank(raw, None)[0]


def _columns(model) -> str:
    table = model._meta.db_table
    return ", ".join(f'"{table}"."{f.column}"' for f in model._meta.concrete_fields)


@functools.cache
def _token_and_bank_sql() -> str:
    # At most one row (token_hash and slug are unique, so is each token-bank pair): no ORDER
    # BY. Fixed text, prepared on the server (kb/prepared.py): every API request runs it, and
    # as an ORM query it cost 0.7 ms of Python to compile and 0.35 ms to plan each time.
    return f"""SELECT {_columns(AgentToken)}, {_columns(Bank)}
  FROM "kb_agenttoken_banks"
  JOIN "kb_agenttoken" ON "kb_agenttoken"."id" = "kb_agenttoken_banks"."agenttoken_id"
  JOIN "kb_bank" ON "kb_bank"."id" = "kb_agenttoken_banks"."bank_id"
 WHERE "kb_agenttoken"."token_hash" = %(hash)s AND "kb_bank"."slug" = %(slug)s
   AND "kb_agenttoken"."revoked_at" IS NULL
   AND ("kb_agenttoken"."expires_at" IS NULL OR "kb_agenttoken"."expires_at" > %(now)s)
 LIMIT 1"""


def _instance(model, values):
    """A model instance from its concrete columns' values, converted as the ORM converts them
    (each field's ``get_db_converters``, as ``graph.retrieval.entries`` does too)."""
    fields = model._meta.concrete_fields
    converted = list(values)
    for at, field in enumerate(fields):
        for converter in field.get_db_converters(connection):
            converted[at] = converter(converted[at], None, connection)
    return model.from_db(connection.alias, [f.attname for f in fields], converted)


def _token_and_bank(token_hash: str, slug: str, now: datetime):
    """The live token with ``token_hash`` and its bank ``slug`` in one prepared statement, or
    (None, None) when the token is not live or does not hold the bank."""
    rows = fetch_prepared(_token_and_bank_sql(), {"hash": token_hash, "slug": slug, "now": now})
    if not rows:
        return None, None
    split = len(AgentToken._meta.concrete_fields)
    return _instance(AgentToken, rows[0][:split]), _instance(Bank, rows[0][split:])


def authenticate_token_for_bank(
    raw: str, bank_slug: str | None
) -> tuple[AgentToken | None, Bank | None]:
    """The live token for ``raw`` and, read by the same statement, the bank ``bank_slug`` if
    the token holds it — so a bank-scoped request authenticates and finds its bank in one
    statement. The bank is None when the token does not hold it or no such bank exists (then
    a second statement reads the token alone)."""
    if not raw.startswith(TOKEN_PREFIX):
        return None, None
    now = timezone.now()
    token = bank = None
    if bank_slug:
        token, bank = _token_and_bank(hash_token(raw), bank_slug, now)
    if token is None:
        token = live_tokens(now).filter(token_hash=hash_token(raw)).first()
        if token is None:
            return None, None
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        AgentToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token, bank


@dataclass(frozen=True)
class RevokeResult:
    revoked: list[str]  # prefixes of the tokens revoked now
    already: list[str]  # prefixes that were revoked before


@transaction.atomic
def revoke_tokens(tokens: Iterable[AgentToken], actor: str = "", reason: str = "") -> RevokeResult:
    """Revoke tokens: they stop authenticating at once; the rows stay for the audit trail.

    The only way a token is revoked (admin action, ``revoke_token`` command): each bank a
    revoked token held gets one ``revoke_token`` operation naming the prefixes, so the bank's
    history shows who cut its agents off and when. Revoking a revoked token changes nothing
    and records nothing; a revocation is final (no path clears ``revoked_at``)."""
    ids = [t.pk for t in tokens]
    rows = list(
        AgentToken.objects.select_for_update()
        .filter(pk__in=ids)
        .prefetch_related("banks")
        .order_by("pk")
    )
    now = timezone.now()
    fresh = [t for t in rows if t.revoked_at is None]
    already = [t.prefix for t in rows if t.revoked_at is not None]
    AgentToken.objects.filter(pk__in=[t.pk for t in fresh]).update(revoked_at=now)
    actor = actor or audit.current().actor
    by_bank: dict[int, tuple[Bank, list[str]]] = {}
    for token in fresh:
        token.revoked_at = now
        for bank in token.banks.all():
            by_bank.setdefault(bank.pk, (bank, []))[1].append(token.prefix)
    for bank, prefixes in by_bank.values():
        start_operation(
            bank,
            OperationKind.REVOKE_TOKEN,
            actor=actor,
            reason=reason or audit.current().reason or "token revoked",
            details={"tokens": prefixes},
            created_at=now,
        )
    if fresh:
        logger.info("Revoked %s by %s", ", ".join(t.prefix for t in fresh), actor)
    return RevokeResult(revoked=[t.prefix for t in fresh], already=already)


def set_token_expiry(token: AgentToken, expires_at: datetime | None) -> AgentToken:
    """Give a token an expiry (or none). An expiry already past is refused."""
    if expires_at is not None and expires_at <= timezone.now():
        raise InvalidInput("A token's expiry must be in the future.", code="invalid_token")
    AgentToken.objects.filter(pk=token.pk).update(expires_at=expires_at)
    token.expires_at = expires_at
    return token
