"""One gate in front of every API view: the body limit, and storable path parts and parameters.

- A declared ``Content-Length`` above the limit (``KB_MAX_BODY_BYTES``, or a view's own
  ``max_body_bytes`` such as the import's ``KB_MAX_IMPORT_BYTES``) answers **413** in the error
  envelope before anything reads the body; a body sent without a length is cut at the same
  limit by the parsers (:mod:`kb.api.parsers`).
- Path parts and query parameters (names and values) must be storable strings
  (:mod:`kb.inputs`): **400** ``invalid_string`` naming the parameter. (An integer path id of
  another shape is **400** ``invalid_id`` from ``kb.inputs.parse_int_id``, which the services
  call after the bank check.)

It guards the paths in ``KB_LIMITED_PATH_PREFIXES`` (``/api/`` and ``/mcp`` by default).
"""

from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse

from kb.api.errors import envelope
from kb.api.parsers import body_limit
from kb.errors import InvalidInput
from kb.inputs import check_path_and_query


def _guarded(path: str) -> bool:
    prefixes = settings.KB_LIMITED_PATH_PREFIXES
    return any(path.startswith(prefix) for prefix in prefixes)


def _error(status: int, code: str, message: str, fields: dict) -> JsonResponse:
    return JsonResponse(envelope(code, message, fields), status=status)


def _request_head_too_large(request) -> JsonResponse | None:
    """414 for a URL longer than ``KB_MAX_URL_BYTES``, 431 for headers past
    ``KB_MAX_HEADER_BYTES`` (names and values, as received)."""
    url_limit = settings.KB_MAX_URL_BYTES
    url_bytes = len(request.META.get("PATH_INFO", "").encode("utf-8", "surrogateescape")) + len(
        request.META.get("QUERY_STRING", "")
    )
    if url_bytes > url_limit:
        return _error(
            414,
            "uri_too_long",
            f"The URL is longer than the limit of {url_limit} bytes.",
            {"url": f"At most {url_limit} bytes."},
        )
    header_limit = settings.KB_MAX_HEADER_BYTES
    header_bytes = sum(
        len(key) - 5 + len(str(value))
        for key, value in request.META.items()
        if key.startswith("HTTP_")
    )
    if header_bytes > header_limit:
        return _error(
            431,
            "headers_too_large",
            f"The request headers are larger than the limit of {header_limit} bytes.",
            {"headers": f"At most {header_limit} bytes."},
        )
    return None


class RequestLimitsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if _guarded(request.path_info):
            answer = _request_head_too_large(request)
            if answer is not None:
                return answer
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if not _guarded(request.path_info):
            return None
        view_class = getattr(view_func, "view_class", None) or getattr(view_func, "cls", None)
        limit = body_limit(view_class)
        declared = request.META.get("CONTENT_LENGTH") or "0"
        try:
            length = int(declared)
        except ValueError:
            return _error(
                400,
                "invalid_content_length",
                "The Content-Length header is not a whole number.",
                {"Content-Length": "A whole number of bytes."},
            )
        if length > limit:
            return _error(
                413,
                "body_too_large",
                f"The request body is larger than the limit of {limit} bytes.",
                {"body": f"At most {limit} bytes."},
            )
        try:
            check_path_and_query(view_kwargs, request.GET)
        except InvalidInput as exc:
            return _error(400, exc.code, exc.message, exc.fields)
        return None
