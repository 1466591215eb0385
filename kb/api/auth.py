"""Bearer-token authentication and bank access for the agent API."""

from __future__ import annotations

from dataclasses import dataclass, field

from rest_framework import authentication, exceptions

from kb import audit
from kb.models import AgentToken, Bank, Scope
from kb.services.tokens import authenticate_token_for_bank


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
    # Banks looked up for this request by slug: the Bank if the token holds it, else None.
    held: dict[str, Bank | None] = field(default_factory=dict)

    @property
    def actor(self) -> str:
        return self.token.actor

    def held_bank(self, slug: str) -> Bank | None:
        """The bank ``slug`` if the token holds it (read once per request)."""
        if slug not in self.held:
            self.held[slug] = self.token.banks.filter(slug=slug).first()
        return self.held[slug]

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
        # A bank-scoped route names its bank in the URL: the statement that authenticates the
        # token also reads that bank when the token holds it (bank_for then reads nothing).
        kwargs = (getattr(request, "parser_context", None) or {}).get("kwargs") or {}
        slug = kwargs.get("bank") if isinstance(kwargs.get("bank"), str) else None
        token, bank = authenticate_token_for_bank(parts[1], slug)
        if token is None:
            raise exceptions.AuthenticationFailed("Unknown or revoked token.")
        principal = AgentPrincipal(token)
        if slug:
            principal.held[slug] = bank  # None: not held (or no such bank), already known
        return principal, token

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
    """The bank ``slug`` if the caller holds it (else 404) with ``scope`` (else 403): the
    request's :class:`~kb.actions.base.Caller` makes the one check every interface makes."""
    from kb.api.actions import caller_for

    return caller_for(request).bank(slug, scope)


class AuditedViewMixin:
    """Attribute every write of the request to the authenticated caller: the actor is bound
    once authentication is done (``initial``) and unbound when the view is left, however it
    is left (a view that raised past ``finalize_response`` once left its caller bound to the
    thread's context, where the next request served by that thread found it)."""

    def dispatch(self, request, *args, **kwargs):
        with audit.restored():
            return super().dispatch(request, *args, **kwargs)

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        audit.rebind(actor_for(request))
