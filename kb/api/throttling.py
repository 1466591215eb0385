"""The per-token request limit of every API view (``KB_RATE_LIMIT_PER_MINUTE``).

Writes have a second, lower limit counted where the write scope is checked
(:func:`kb.api.auth.bank_for`). Staff sessions are not limited. Counting lives in
:mod:`kb.services.ratelimit` (PostgreSQL, shared by every process).
"""

from __future__ import annotations

from rest_framework.throttling import BaseThrottle

from kb.api.auth import AgentPrincipal
from kb.services.ratelimit import count_request


class TokenRateThrottle(BaseThrottle):
    def allow_request(self, request, view) -> bool:
        user = request.user
        if not isinstance(user, AgentPrincipal):
            return True
        decision = count_request(user.token.pk, "all")
        self._retry_after = decision.retry_after
        return decision.allowed

    def wait(self):
        return getattr(self, "_retry_after", 1)
