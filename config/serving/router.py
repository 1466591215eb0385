"""Read replicas: read-only endpoints read from ``DATABASE_REPLICA_URLS``, everything else
(and every write, and any read inside a transaction) goes to the primary.

``ReplicaReadMiddleware`` marks a request as read-only when it is a GET/HEAD under /api/ or a
POST to a route that only reads (query, traverse, searches, anchor recall, context), unless
the same caller wrote within ``KB_REPLICA_PIN_SECONDS`` (then it reads its own writes from
the primary). ``ReplicaRouter`` sends the marked request's reads to a replica.
"""

from __future__ import annotations

import hashlib
import random

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import MiddlewareNotUsed
from django.db import connections

from config.serving import context

SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


def replica_aliases() -> list[str]:
    return [alias for alias in settings.DATABASES if alias.startswith("replica_")]


class ReplicaRouter:
    def db_for_read(self, model, **hints):
        info = context.current()
        if info is None or not info.replica_reads:
            return None
        if connections["default"].in_atomic_block:
            return "default"
        aliases = replica_aliases()
        return random.choice(aliases) if aliases else None

    def db_for_write(self, model, **hints):
        return "default"

    def allow_relation(self, obj1, obj2, **hints):
        return True  # replicas hold the primary's data

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == "default"


def _caller_key(request) -> str:
    credential = request.headers.get("Authorization") or request.COOKIES.get(
        settings.SESSION_COOKIE_NAME, ""
    )
    return (
        "kb:replica-pin:" + hashlib.sha256(credential.encode("utf-8", "replace")).hexdigest()[:32]
    )


class ReplicaReadMiddleware:
    def __init__(self, get_response):
        if not replica_aliases():
            raise MiddlewareNotUsed  # no replicas: every read goes to the primary anyway
        self.get_response = get_response

    def process_view(self, request, view_func, view_args, view_kwargs):
        match = request.resolver_match
        read_only = request.path.startswith("/api/") and (
            request.method in SAFE_METHODS
            or (match is not None and match.url_name in settings.KB_REPLICA_READ_ROUTES)
        )
        if read_only and settings.KB_REPLICA_PIN_SECONDS and cache.get(_caller_key(request)):
            read_only = False  # this caller wrote a moment ago: read its writes from the primary
        info = context.current()
        if info is not None:
            info.replica_reads = read_only and bool(replica_aliases())
        request._kb_read_only = read_only
        return None

    def __call__(self, request):
        response = self.get_response(request)
        if (
            not getattr(request, "_kb_read_only", True)
            and request.method not in SAFE_METHODS
            and response.status_code < 400
            and settings.KB_REPLICA_PIN_SECONDS
        ):
            cache.set(_caller_key(request), 1, settings.KB_REPLICA_PIN_SECONDS)
        return response
