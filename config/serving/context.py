"""The request (or task) being served, for log lines and metrics.

A context variable holds one mutable :class:`RequestInfo` per request; code deeper in the
stack (the unit of work, DRF authentication) fills in what it learns, and the log filter
and the request log read it. Celery tasks get one too, keyed by the task id.
"""

from __future__ import annotations

import contextvars
import re
import uuid
from dataclasses import dataclass, field

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


@dataclass
class RequestInfo:
    request_id: str
    method: str = ""
    path: str = ""
    route: str = ""
    bank: str = ""
    actor: str = ""
    status: int = 0
    operation_ids: list[int] = field(default_factory=list)
    # Set by the replica middleware: this request only reads, a replica may serve it.
    replica_reads: bool = False


_current: contextvars.ContextVar[RequestInfo | None] = contextvars.ContextVar(
    "kb_request_info", default=None
)


def current() -> RequestInfo | None:
    return _current.get()


def begin(info: RequestInfo) -> contextvars.Token:
    return _current.set(info)


def end(token: contextvars.Token) -> None:
    _current.reset(token)


def request_id_from(header: str | None) -> str:
    """The caller's ``X-Request-ID`` when it is a sane token, else a fresh one."""
    if header and _REQUEST_ID.match(header):
        return header
    return uuid.uuid4().hex


def note_operation(operation_id: int) -> None:
    """Called by the unit of work (``kb.unit_of_work.start_operation``) for each operation it
    opens: the request's log lines name its operations."""
    info = _current.get()
    if info is not None and operation_id not in info.operation_ids:
        info.operation_ids.append(operation_id)
