"""Admin login throttling: too many failed logins from one address, or for one username,
within a window answer **429** with ``Retry-After`` until the window passes.

Counts live in Django's cache (``KB_CACHE_URL``: Redis shared by every web process and machine;
without it a file cache in ``.run/`` shared by the processes of one machine).
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.cache import cache
from django.http import HttpResponse
from django.urls import reverse


def client_address(request) -> str:
    if settings.KB_TRUST_X_FORWARDED_FOR:
        forwarded = request.headers.get("X-Forwarded-For", "")
        if forwarded:
            return forwarded.split(",")[0].strip()[:64]
    return request.META.get("REMOTE_ADDR", "")[:64]


def _keys(request) -> list[str]:
    username = str(request.POST.get("username", ""))[:150].strip().lower()
    user_hash = hashlib.sha256(username.encode("utf-8", "replace")).hexdigest()[:32]
    return [f"kb:login-fail:ip:{client_address(request)}", f"kb:login-fail:user:{user_hash}"]


class AdminLoginThrottleMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        self._login_path = None

    def login_path(self) -> str:
        if self._login_path is None:
            self._login_path = reverse("admin:login")
        return self._login_path

    def __call__(self, request):
        if request.method != "POST" or request.path != self.login_path():
            return self.get_response(request)
        ip_key, user_key = _keys(request)
        window = settings.KB_ADMIN_LOGIN_WINDOW
        if (cache.get(ip_key) or 0) >= settings.KB_ADMIN_LOGIN_MAX_PER_ADDRESS or (
            cache.get(user_key) or 0
        ) >= settings.KB_ADMIN_LOGIN_MAX_PER_USER:
            response = HttpResponse(
                "<!doctype html><title>Too many attempts</title><h1>Too many login attempts</h1>"
                "<p>Too many failed logins from this address or for this user. Wait and try "
                "again.</p>",
                status=429,
                content_type="text/html; charset=utf-8",
            )
            response["Retry-After"] = str(window)
            return response
        response = self.get_response(request)
        # The admin re-renders the form (200) on a failed login and redirects on success.
        if response.status_code == 200:
            for key in (ip_key, user_key):
                cache.add(key, 0, window)
                try:
                    cache.incr(key)
                except ValueError:  # expired between add and incr
                    cache.set(key, 1, window)
        elif response.status_code in (301, 302, 303):
            cache.delete(user_key)
        return response
