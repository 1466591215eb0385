"""Request middleware: request ids, the request log line and latency metrics; security
headers (a Content-Security-Policy with a per-request nonce) on HTML pages."""

from __future__ import annotations

import logging
import secrets
import time

from django.conf import settings
from django.utils.functional import SimpleLazyObject, empty

from config.serving import context, metrics

logger = logging.getLogger("config.serving.request")

QUIET_ROUTES = {"healthz", "readyz", "metrics"}


def _actor(request) -> str:
    """Who made the request, without touching the database (the user may be unevaluated)."""
    user = request.__dict__.get("user")
    if user is None:
        return ""
    if isinstance(user, SimpleLazyObject):
        if user._wrapped is empty:
            return ""
        user = user._wrapped
    actor = getattr(user, "actor", None)
    if actor:
        return actor
    if getattr(user, "is_authenticated", False):
        return f"staff:{user.get_username()}"
    return ""


def _route(request) -> str:
    """The URL pattern that served the request (never the raw path: bounded label values)."""
    match = getattr(request, "resolver_match", None)
    if match is not None:
        return match.route or match.view_name or "unnamed"
    if request.path.startswith("/" + settings.STATIC_URL.lstrip("/")):
        return "static"
    return "unmatched"


class RequestContextMiddleware:
    """Outermost: give each request an id (the caller's ``X-Request-ID`` when sane), echo it,
    log one structured line per request and observe its latency by route."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = context.request_id_from(request.headers.get("X-Request-ID"))
        request.request_id = request_id
        info = context.RequestInfo(request_id, method=request.method, path=request.path)
        token = context.begin(info)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            elapsed = time.perf_counter() - started
            route = _route(request)
            match = getattr(request, "resolver_match", None)
            info.route = route
            info.bank = (match.kwargs.get("bank") or "") if match else ""
            info.actor = info.actor or _actor(request)
            response["X-Request-ID"] = request_id
            metrics.observe_request(request.method, route, response.status_code, elapsed)
            level = logging.DEBUG if route in QUIET_ROUTES else logging.INFO
            if response.status_code >= 500:
                level = logging.WARNING
            logger.log(
                level,
                "%s %s %s",
                request.method,
                request.path,
                response.status_code,
                extra={
                    "method": request.method,
                    "path": request.path,
                    "route": route,
                    "status": response.status_code,
                    "duration_ms": round(elapsed * 1000, 1),
                    "operations": list(info.operation_ids),
                },
            )
            return response
        finally:
            context.end(token)


class SecurityHeadersMiddleware:
    """A Content-Security-Policy on every HTML page (``KB_CSP``; ``{nonce}`` is replaced by a
    fresh per-request nonce that templates read as ``request.csp_nonce``)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        nonce = secrets.token_urlsafe(16)
        request.csp_nonce = nonce
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html"):
            header = (
                "Content-Security-Policy-Report-Only"
                if settings.KB_CSP_REPORT_ONLY
                else "Content-Security-Policy"
            )
            if header not in response:
                response[header] = settings.KB_CSP.replace("{nonce}", nonce)
        return response
