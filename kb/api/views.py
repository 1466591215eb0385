"""REST views for entries, imports and jobs: thin — parse, call a service, render."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import parsers
from rest_framework.response import Response
from rest_framework.views import APIView

from kb.actions.entries import RecallAnchors, StaleEntries
from kb.actions.imports import RESTORE_DELETED_DOC, QueueImport
from kb.actions.jobs import JobStatusAction, visible_job
from kb.api import schemas
from kb.api.actions import caller_for, respond
from kb.api.auth import AuditedViewMixin
from kb.api.errors import ApiError
from kb.api.params import int_param, int_query, reject_undocumented
from kb.api.parsers import BoundedMultiPartParser, read_bounded
from kb.inputs import single_param
from kb.models import Job
from kb.presenters import MAX_MAX_CHARS, MIN_MAX_CHARS

ERRORS = {
    400: OpenApiResponse(schemas.ErrorEnvelope, description="Bad input"),
    403: OpenApiResponse(schemas.ErrorEnvelope, description="Missing scope"),
    404: OpenApiResponse(schemas.ErrorEnvelope, description="Unknown bank or entry"),
}


class BankAPIView(AuditedViewMixin, APIView):
    """Base of every bank-scoped view."""

    def json_body(self, request) -> dict:
        data = request.data
        if not isinstance(data, dict):
            raise ApiError(400, "invalid_body", "The body must be a JSON object.")
        reject_undocumented(self, request, data)
        return data


def max_chars_param(request) -> int | None:
    """``?max_chars=N``: long texts of the answer are cut to N characters (None: whole; a
    value under ``MIN_MAX_CHARS`` counts as that, so the cut text still says something)."""
    value = int_param(request, "max_chars", 0, 0, MAX_MAX_CHARS)
    return max(value, MIN_MAX_CHARS) if value else None


MAX_CHARS_PARAMETER = OpenApiParameter(
    "max_chars",
    {"type": "integer", "minimum": 0, "maximum": MAX_MAX_CHARS, "default": 0},
    description=f"Cut every long text (content, summary, notes…) to this many characters "
    f"with a marker and set truncated: true (0: whole texts; under {MIN_MAX_CHARS} counts as "
    f"{MIN_MAX_CHARS}).",
)


class NDJSONParser(parsers.BaseParser):
    """Reads a JSON Lines body as text."""

    media_type = "application/x-ndjson"

    def parse(self, stream, media_type=None, parser_context=None):
        raw = read_bounded(stream, (parser_context or {}).get("view"))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ApiError(400, "bad_encoding", "The file must be UTF-8.") from exc


class JSONLinesAliasParser(NDJSONParser):
    media_type = "application/jsonl"


# The import: UTF-8 JSON Lines text with something in it (the lines are checked by the job).
IMPORT_TEXT = {
    "type": "string",
    "pattern": schemas.NONBLANK,
    "contentMediaType": "application/x-ndjson",
    "description": "JSON Lines (UTF-8), one object per line.",
}


def restore_deleted_flag(request, form_value) -> bool:
    """``restore_deleted`` from the query string and/or a multipart form field, each true or
    false; restoring is asked for when either says true."""
    given = [
        str(v).strip().lower()
        for v in (single_param(request.query_params, "restore_deleted"), form_value)
        if v is not None
    ]
    if any(v not in {"true", "false"} for v in given):
        raise ApiError(
            400,
            "invalid_input",
            "restore_deleted is true or false.",
            {"restore_deleted": "Not a boolean."},
        )
    return "true" in given


class ImportView(BankAPIView):
    parser_classes = [NDJSONParser, JSONLinesAliasParser, BoundedMultiPartParser]
    max_body_setting = "KB_MAX_IMPORT_BYTES"

    @extend_schema(
        parameters=[OpenApiParameter("restore_deleted", bool, description=RESTORE_DELETED_DOC)],
        request={
            "application/x-ndjson": IMPORT_TEXT,
            "multipart/form-data": {
                "type": "object",
                "properties": {
                    "file": IMPORT_TEXT,
                    "restore_deleted": {
                        "type": "string",
                        "enum": ["true", "false"],
                        "description": RESTORE_DELETED_DOC,
                    },
                },
                "required": ["file"],
                "additionalProperties": False,
            },
        },
        responses={202: schemas.JobQueuedSerializer, **ERRORS},
        summary=QueueImport.summary,
    )
    def post(self, request, bank: str):
        caller = caller_for(request)
        bank_obj = caller.bank(bank, QueueImport.scope)  # 404/403 before the body is read
        data = request.data
        form_flag = None
        if isinstance(data, str):
            text = data
        else:
            upload = data.get("file") if hasattr(data, "get") else None
            if hasattr(data, "keys") and set(data.keys()) - {"file", "restore_deleted"}:
                unknown = sorted(set(data.keys()) - {"file", "restore_deleted"})
                raise ApiError(
                    400,
                    "invalid_input",
                    f"Unknown parts: {', '.join(unknown)}; send the file as 'file'.",
                    dict.fromkeys(unknown, "Unknown part."),
                )
            if hasattr(data, "getlist") and "restore_deleted" in data:
                values = data.getlist("restore_deleted")
                form_flag = values[0] if len(values) == 1 else "twice"
            if upload is None and data:
                raise ApiError(
                    400,
                    "missing_file",
                    "Send the JSON Lines as the body or as a multipart 'file' part.",
                )
            try:
                if isinstance(upload, str):  # a form field rather than a file part
                    text = upload
                else:
                    text = upload.read().decode("utf-8") if upload is not None else ""
            except UnicodeDecodeError as exc:
                raise ApiError(400, "bad_encoding", "The file must be UTF-8.") from exc
        restore = restore_deleted_flag(request, form_flag)
        body = {"text": text, "restore_deleted": restore}
        with transaction.atomic():
            answer = QueueImport.prepare(caller, bank_obj, body=body).run()
        return Response(answer.data, status=answer.status)


class JobView(AuditedViewMixin, APIView):
    """A job's status, phase and progress (imports, embedding, layouts, extraction, gap
    reports, merge proposals): a token sees the jobs of the banks it holds, staff every job;
    else 404."""

    @extend_schema(
        responses={200: schemas.JobSerializer, 404: schemas.ErrorEnvelope},
        summary=JobStatusAction.summary,
    )
    def get(self, request, job_id: str):
        return respond(JobStatusAction, request, None, job_id=job_id)

    def check_options_access(self, request, job_id: str) -> Job:
        """The job if the caller may see it, else 404 (GET, HEAD and OPTIONS alike)."""
        return visible_job(caller_for(request), job_id)


class RecallAnchorsView(BankAPIView):
    @extend_schema(
        request=RecallAnchors.Input,
        responses={200: schemas.AnchorRecallSerializer, **ERRORS},
        summary=RecallAnchors.summary,
    )
    def post(self, request, bank: str):
        return respond(RecallAnchors, request, bank)


class StaleEntriesView(BankAPIView):
    @extend_schema(
        parameters=[
            int_query("days", 90, 0, 36500, "Not verified in this many days (default 90)."),
            int_query("limit", 100, 1, 1000),
        ],
        responses={200: schemas.StaleListSerializer, **ERRORS},
        summary=StaleEntries.summary,
    )
    def get(self, request, bank: str):
        return respond(StaleEntries, request, bank)
