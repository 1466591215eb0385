"""Bearer-token authentication and bank access for the agent API."""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework import authentication, exceptions

from kb import audit
from kb.api.errors import ApiError
from kb.models import AgentToken, Bank, Scope
from kb.services.tokens import authenticate_token


def throttle_writes(token: AgentToken) -> None:
    """429 once the token passed its write limit this minute (``KB_RATE_LIMIT_WRITES_…``)."""
    from kb.services.ratelimit import count_request

    decision = count_request(token.pk, "write")
    if not decision.allowed:
        raise exceptions.Throttled(wait=decision.retry_after)


@dataclass
class AgentPrincipal:
    """The authenticated caller of a token request (stands in for ``request.user``)."""

    token: AgentToken
    is_authenticated: bool = True
    is_staff: bool = False
    is_superuser: bool = False

    @property
    def actor(self) -> str:
        return self.token.actor

    def get_username(self) -> str:
        return self.token.actor


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1", "replace")
        if not header:
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != "bearer":
            raise exceptions.AuthenticationFailed("Malformed Authorization header.")
        token = authenticate_token(parts[1])
        if token is None:
            raise exceptions.AuthenticationFailed("Unknown or revoked token.")
        return AgentPrincipal(token), token

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


def actor_for(request) -> str:
    user = request.user
    if isinstance(user, AgentPrincipal):
        return user.actor
    if user is not None and getattr(user, "is_authenticated", False):
        return f"staff:{user.get_username()}"
    return "anonymous"


def bank_for(request, slug: str, scope: str = Scope.READ) -> Bank:
    """The bank ``slug`` if the caller holds it (else 404) with ``scope`` (else 403)."""
    user = request.user
    bank = Bank.objects.filter(slug=slug).first()
    if isinstance(user, AgentPrincipal):
        token = user.token
        if bank is None or not token.banks.filter(pk=bank.pk).exists():
            raise ApiError(404, "bank_not_found", f"No bank {slug!r} is available to this token.")
        if scope not in token.scopes:
            raise ApiError(
                403, "missing_scope", f"This token lacks the {scope!r} scope for this request."
            )
        if scope != Scope.READ:
            throttle_writes(token)
        return bank
    if user is not None and getattr(user, "is_staff", False):
        if bank is None:
            raise ApiError(404, "bank_not_found", f"No bank {slug!r}.")
        return bank
    raise ApiError(404, "bank_not_found", f"No bank {slug!r} is available to you.")


class AuditedViewMixin:
    """Attribute every write of the request to the authenticated caller."""

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self._audit_cm = audit.acting_as(actor_for(request))
        self._audit_cm.__enter__()

    def finalize_response(self, request, response, *args, **kwargs):
        cm = getattr(self, "_audit_cm", None)
        if cm is not None:
            cm.__exit__(None, None, None)
            self._audit_cm = None
        return super().finalize_response(request, response, *args, **kwargs)
