"""Request parsers that apply the input rule of :mod:`kb.inputs` to every body.

``BoundedJSONParser`` is the API's default parser: it reads at most the body limit, parses,
refuses nesting deeper than ``KB_MAX_JSON_DEPTH`` and strings PostgreSQL cannot store.
``BoundedMultiPartParser`` checks the form fields of an upload the same way.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from kb.api.errors import ApiError
from kb.inputs import check_json, loads_checked


def body_limit(view=None) -> int:
    """The byte limit for a request body: the setting the view names in ``max_body_setting``
    (e.g. the import's ``KB_MAX_IMPORT_BYTES``), else ``KB_MAX_BODY_BYTES``."""
    name = getattr(view, "max_body_setting", None) or "KB_MAX_BODY_BYTES"
    return getattr(settings, name)


def too_large(limit: int) -> ApiError:
    return ApiError(
        413,
        "body_too_large",
        f"The request body is larger than the limit of {limit} bytes.",
        {"body": f"At most {limit} bytes."},
    )


def read_bounded(stream, view=None) -> bytes:
    """The whole body, or 413 once it passes the limit (also for bodies without a length)."""
    if stream is None:
        return b""
    limit = body_limit(view)
    raw = stream.read(limit + 1)
    if len(raw) > limit:
        raise too_large(limit)
    return raw


class BoundedJSONParser(parsers.JSONParser):
    """JSON bodies within the size and depth limits, holding only storable strings."""

    def parse(self, stream, media_type=None, parser_context=None):
        context = parser_context or {}
        raw = read_bounded(stream, context.get("view"))
        encoding = context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"The body is not {encoding} text.") from exc
        try:
            return loads_checked(text)
        except ValueError as exc:
            raise ParseError(str(exc)) from exc


class BoundedMultiPartParser(parsers.MultiPartParser):
    """Multipart uploads whose form fields hold only storable strings (files are checked by
    whoever reads them, e.g. the importer line by line)."""

    def parse(self, stream, media_type=None, parser_context=None):
        result = super().parse(stream, media_type, parser_context)
        check_json({key: result.data.getlist(key) for key in result.data})
        for name, upload in result.files.items():
            check_json(getattr(upload, "name", "") or "", f"{name}.filename")
        return result
