"""Every API route, read from the URL configuration (so a route added anywhere is covered).

``api_routes()`` walks ``config.urls`` and yields each route under ``api/v1/`` with its view
class, its path parameters and the HTTP methods the view answers. Tests fill the parameters
with ids of their choosing and call every method.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver

API_PREFIX = "api/v1/"
PARAM = re.compile(r"<(?:(?P<converter>\w+):)?(?P<name>\w+)>")
METHODS = ("get", "post", "put", "patch", "delete", "head", "options")
WRITE_METHODS = ("post", "put", "patch", "delete")


@dataclass(frozen=True)
class Route:
    route: str  # e.g. "api/v1/banks/<slug:bank>/entries/<str:entry_id>"
    name: str | None
    view_class: type
    params: tuple[str, ...]
    converters: dict

    @property
    def methods(self) -> list[str]:
        allowed = [m for m in METHODS if hasattr(self.view_class, m)]
        if "get" in allowed and "head" not in allowed:
            allowed.append("head")  # Django answers HEAD with the GET handler
        return allowed

    def path(self, **values) -> str:
        def fill(match):
            return str(values[match.group("name")])

        return "/" + PARAM.sub(fill, self.route)

    def __str__(self) -> str:
        return self.route


def _walk(patterns, prefix: str = ""):
    for item in patterns:
        route = prefix + str(item.pattern)
        if isinstance(item, URLResolver):
            yield from _walk(item.url_patterns, route)
        elif isinstance(item, URLPattern):
            yield route, item


def api_routes() -> list[Route]:
    routes = []
    for route, pattern in _walk(get_resolver().url_patterns):
        if not route.startswith(API_PREFIX):
            continue
        callback = pattern.callback
        view_class = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
        if view_class is None:
            continue
        matches = list(PARAM.finditer(route))
        routes.append(
            Route(
                route=route,
                name=pattern.name,
                view_class=view_class,
                params=tuple(m.group("name") for m in matches),
                converters={m.group("name"): m.group("converter") or "str" for m in matches},
            )
        )
    return routes
