"""REST views for entries, imports and jobs: thin — parse, call a service, render."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import parsers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from kb import extensions
from kb.actions.entries import VerifyEntry
from kb.api import schemas
from kb.api.actions import respond
from kb.api.auth import AgentPrincipal, AuditedViewMixin, actor_for, bank_for
from kb.api.errors import ApiError
from kb.api.params import int_param, int_query, reject_undocumented, reject_unknown
from kb.api.parsers import BoundedMultiPartParser, read_bounded
from kb.api.render import entry_core, entry_detail
from kb.errors import NotFound
from kb.inputs import single_param
from kb.models import Bank, Job, Scope
from kb.presenters import MAX_MAX_CHARS, MIN_MAX_CHARS, shorten_texts
from kb.services import import_jobs
from kb.services.duplicates import read_allow_duplicate
from kb.services.embedding import one_forward_pass
from kb.services.entries import (
    EDITABLE_FIELDS,
    clean_entry_data,
    create_entry,
    find_entry,
    update_entry,
    write_texts,
)
from kb.services.feedback import entry_feedback
from kb.services.guard import check_learning
from kb.services.recall import recall_anchors, stale_entries

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


def _detail_response(bank: Bank, ref: str, max_chars: int | None = None) -> dict:
    entry = find_entry(bank, ref)
    merged_from = ref if ref not in (entry.short_id, entry.key) else None
    data = entry_detail(entry, merged_from=merged_from)
    return shorten_texts(data, max_chars) if max_chars else data


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


MAX_BATCH_IDS = 100


class EntryListView(BankAPIView):
    unknown_field_code = "invalid_entry"

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "ids",
                {"type": "string", "pattern": "^[^\\x00]*[^\\x00\\s,][^\\x00]*$"},
                required=True,
                description=f"Comma-separated entry ids or keys (at most {MAX_BATCH_IDS}).",
            ),
            MAX_CHARS_PARAMETER,
        ],
        responses={200: schemas.EntryBatchSerializer, **ERRORS},
        operation_id="banks_entries_batch",
        summary="Read several entries in one call",
    )
    def get(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        raw = request.query_params.get("ids", "")
        ids = list(dict.fromkeys(x.strip() for x in raw.split(",") if x.strip()))
        if not ids:
            raise ApiError(
                400, "invalid_ids", "Pass ids=a,b,c (one or more entry ids).", {"ids": "required"}
            )
        if len(ids) > MAX_BATCH_IDS:
            raise ApiError(
                400,
                "invalid_ids",
                f"At most {MAX_BATCH_IDS} ids per call.",
                {"ids": f"{len(ids)} given"},
            )
        max_chars = max_chars_param(request)
        results, missing = [], []
        for ref in ids:
            try:
                results.append(_detail_response(bank_obj, ref, max_chars))
            except NotFound:
                missing.append(ref)
        return Response({"results": results, "missing": missing})

    @extend_schema(
        request=schemas.EntryWriteSerializer,
        responses={
            201: schemas.EntryWrittenSerializer,
            409: schemas.ErrorEnvelope,
            422: schemas.ErrorEnvelope,
            **ERRORS,
        },
        summary="Report a learning",
    )
    def post(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.WRITE)
        body = dict(self.json_body(request))
        allow_duplicate = read_allow_duplicate(body)
        data = clean_entry_data(bank_obj, body)
        # One model call for the whole write: the guard, the duplicate check, the entry's
        # vectors and the feedback's similar entries all read this pass.
        with one_forward_pass(write_texts(data)):
            check_learning(data)
            entry = create_entry(
                bank_obj, data, actor=actor_for(request), allow_duplicate=allow_duplicate
            )
            feedback = entry_feedback(bank_obj, entry, data.get("connections"))
        return Response(
            {**entry_detail(find_entry(bank_obj, entry.short_id)), **feedback.as_json()},
            status=status.HTTP_201_CREATED,
        )


class EntryDetailView(BankAPIView):
    unknown_field_code = "invalid_entry"

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "as_of",
                {"type": "string", "format": "date-time"},
                description="ISO timestamp with zone: what the bank believed then.",
            ),
            OpenApiParameter(
                "valid_at",
                {
                    "anyOf": [
                        {"type": "string", "format": "date"},
                        {"type": "string", "format": "date-time"},
                    ]
                },
                description="With as_of: edges valid at this date or time.",
            ),
            MAX_CHARS_PARAMETER,
        ],
        responses={200: schemas.EntrySerializer, **ERRORS},
        summary="Read an entry (optionally as the bank believed it at a time)",
    )
    def get(self, request, bank: str, entry_id: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        max_chars = max_chars_param(request)
        as_of = extensions.registry.get(extensions.ENTRY_AS_OF)
        if "as_of" in request.query_params and as_of is not None:
            data = as_of(bank_obj, entry_id, request.query_params)
            return Response(shorten_texts(data, max_chars) if max_chars else data)
        return Response(_detail_response(bank_obj, entry_id, max_chars))

    @extend_schema(
        request=schemas.EntryPatchSerializer,
        responses={200: schemas.EntrySerializer, **ERRORS},
        summary="Edit an entry (moves updated_at, never verified_at)",
    )
    def patch(self, request, bank: str, entry_id: str):
        bank_obj = bank_for(request, bank, Scope.WRITE)
        entry = find_entry(bank_obj, entry_id)
        changes = clean_entry_data(
            bank_obj, self.json_body(request), partial=True, allowed=EDITABLE_FIELDS
        )
        if not changes:
            raise ApiError(400, "empty_patch", "Send at least one field to change.")
        update_entry(bank_obj, entry, changes, actor=actor_for(request))
        return Response(_detail_response(bank_obj, entry.short_id))

    @extend_schema(
        parameters=[OpenApiParameter("reason", schemas.NONBLANK_TEXT, required=True)],
        responses={200: schemas.DeleteResultSerializer, **ERRORS},
        summary="Delete an entry, bridging its edges (scope curate)",
    )
    def delete(self, request, bank: str, entry_id: str):
        bank_obj = bank_for(request, bank, Scope.CURATE)
        reason = request.query_params.get("reason") or (
            request.data.get("reason") if isinstance(request.data, dict) else ""
        )
        deleter = extensions.registry.get(extensions.ENTRY_DELETER)
        if deleter is None:
            raise ApiError(400, "not_supported_yet", "Deleting entries needs the graph app.")
        result = deleter(bank_obj, entry_id, reason, actor=actor_for(request))
        return Response(result.as_json())


class EntryVerifyView(BankAPIView):
    @extend_schema(
        request=VerifyEntry.Input,
        responses={200: schemas.EntrySerializer, **ERRORS},
        summary=VerifyEntry.summary,
    )
    def post(self, request, bank: str, entry_id: str):
        return respond(VerifyEntry, request, bank, entry_id=entry_id)


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


RESTORE_DELETED_DOC = (
    "true: an entry line whose id or key names a deleted entry restores it (audited in the "
    "import operation); false (default): such a line is a line error entry_deleted."
)


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
        summary="Import JSON Lines as a background job",
    )
    def post(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.CURATE)
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
        with transaction.atomic():
            job = import_jobs.queue_import_job(
                bank_obj, text, actor_for(request), restore_deleted=restore
            )
        return Response({"job": job.public_id}, status=status.HTTP_202_ACCEPTED)


def job_json(job: Job) -> dict:
    return {
        "id": job.public_id,
        "kind": job.kind,
        "bank": job.bank.slug,
        "status": job.status,
        "progress": {
            "done": job.progress_done,
            "total": job.progress_total,
            "phase": job.phase,
        },
        "result": job.result,
        "errors": job.errors,
        "created_at": job.created_at.isoformat(),
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }


class JobView(AuditedViewMixin, APIView):
    @extend_schema(
        responses={200: schemas.JobSerializer, 404: schemas.ErrorEnvelope}, summary="Job status"
    )
    def get(self, request, job_id: str):
        return Response(job_json(self.check_options_access(request, job_id)))

    def check_options_access(self, request, job_id: str) -> Job:
        """The job if the caller may see it, else 404 (GET, HEAD and OPTIONS alike)."""
        job = Job.objects.select_related("bank").filter(public_id=job_id).first()
        user = request.user
        visible = job is not None and (
            getattr(user, "is_staff", False)
            or (
                isinstance(user, AgentPrincipal)
                and user.token.banks.filter(pk=job.bank_id).exists()
            )
        )
        if not visible:
            raise ApiError(404, "job_not_found", f"No job {job_id!r} is visible to you.")
        return job


class RecallAnchorsView(BankAPIView):
    @extend_schema(
        request=schemas.RecallAnchorsRequestSerializer,
        responses={200: schemas.AnchorRecallSerializer, **ERRORS},
        summary="Entries anchored to the files and symbols being edited",
    )
    def post(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        body = self.json_body(request)
        reject_unknown(body, {"files", "symbols", "limit"})
        limit = body.get("limit", 20)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 100:
            raise ApiError(
                400, "invalid_input", "limit must be between 1 and 100.", {"limit": "Out of range."}
            )
        hits = recall_anchors(bank_obj, body.get("files"), body.get("symbols"), limit=limit)
        return Response(
            {
                "results": [
                    {
                        **entry_core(h.entry),
                        "lifecycle": h.entry.status if h.entry.status != "live" else None,
                        "matched": {"files": h.files, "symbols": h.symbols},
                    }
                    for h in hits
                ]
            }
        )


class StaleEntriesView(BankAPIView):
    @extend_schema(
        parameters=[
            int_query("days", 90, 0, 36500, "Not verified in this many days (default 90)."),
            int_query("limit", 100, 1, 1000),
        ],
        responses={200: schemas.StaleListSerializer, **ERRORS},
        summary="Entries nobody verified in N days",
    )
    def get(self, request, bank: str):
        bank_obj = bank_for(request, bank, Scope.READ)
        days = int_param(request, "days", 90, 0, 36500)
        limit = int_param(request, "limit", 100, 1, 1000)
        entries = stale_entries(bank_obj, days, limit=limit)
        return Response(
            {
                "days": days,
                "results": [
                    {
                        **entry_core(e),
                        "verified_at": e.verified_at.isoformat() if e.verified_at else None,
                        "updated_at": e.updated_at.isoformat(),
                        "usage_count": e.usage_count,
                    }
                    for e in entries
                ],
            }
        )
