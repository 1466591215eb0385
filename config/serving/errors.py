"""``handler500``: the last resort of every request. A database that is away is a 503 with
``Retry-After``, not a 500; anything else keeps the API's envelope under /api/."""

from __future__ import annotations

import sys

from django.http import JsonResponse
from django.views.defaults import server_error

from config.serving.database import is_database_unavailable, unavailable_response


def server_error_handler(request, *args, **kwargs):
    exc = sys.exc_info()[1]
    if is_database_unavailable(exc):
        return unavailable_response(request)
    if request.path.startswith("/api/"):
        return JsonResponse(
            {
                "error": {
                    "code": "internal_error",
                    "message": "Something went wrong on our side; nothing was written.",
                    "fields": {},
                }
            },
            status=500,
        )
    return server_error(request, *args, **kwargs)
