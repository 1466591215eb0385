"""Actions: one class per use case, the single thing every interface calls.

An action declares its input once — path ids (:attr:`Action.path_ids`), query-string fields
(:attr:`Action.Query`, a DRF serializer read leniently, as strings) and body fields
(:attr:`Action.Input`, a DRF serializer with strict JSON types that refuses unknown fields) —
and the scope it needs. From those declarations come the OpenAPI operation (the REST view's
``extend_schema``) and the MCP tool's ``inputSchema`` (:func:`mcpserver.tools.action_schema`).

Every transport builds a :class:`Caller` (who, through what, under which request id), asks
:meth:`Action.prepare` for a validated action on a bank — the bank check, the scope check and
the write throttle happen there, once — and calls :meth:`Action.run`, which executes inside the
caller's audit context and the request context the log lines read, and presents the result as
the JSON the contract names. REST (:func:`kb.api.actions.respond`), MCP
(:mod:`mcpserver.dispatch`), admin views, Celery tasks and commands all go through here; none
re-validates or writes rows itself.

Adding a use case: subclass :class:`Action` in the app that owns it (its ``actions`` module),
declare ``Input``/``Query``/``path_ids``/``scope``, implement ``execute`` (returns data) and
``present`` (renders it); then one line per interface: a REST view calling ``respond``, an MCP
``ToolSpec(action=...)``, an admin form calling ``run``.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kb import audit
from kb.errors import Forbidden, KbError, NotFound
from kb.models import AgentToken, Bank, Scope

VIA = ("rest", "mcp", "admin", "job", "command")


@dataclass
class Caller:
    """Who is acting and through what: the one request context every interface builds.

    ``actor`` is the audit name (``token:<name>``, ``staff:<username>``, ``system``);
    ``request_id`` is the id the log lines and the operation carry; ``token`` is set for
    agent callers (bank membership, scopes, throttles), ``user`` for staff.
    """

    actor: str
    via: str = "rest"
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    token: AgentToken | None = None
    user: Any = None
    # Banks looked up for this caller by slug (a token's: the Bank if held, else None).
    held: dict[str, Bank | None] = field(default_factory=dict)

    @classmethod
    def for_token(cls, token: AgentToken, *, via: str, request_id: str | None = None) -> Caller:
        caller = cls(actor=token.actor, via=via, token=token)
        if request_id:
            caller.request_id = request_id
        return caller

    @classmethod
    def for_staff(cls, user, *, via: str = "admin", request_id: str | None = None) -> Caller:
        caller = cls(actor=f"staff:{user.get_username()}", via=via, user=user)
        if request_id:
            caller.request_id = request_id
        return caller

    @classmethod
    def system(cls, actor: str = "system", *, via: str = "job") -> Caller:
        return cls(actor=actor, via=via)

    def bank(self, slug: str, scope: str = Scope.READ) -> Bank:
        """The bank ``slug`` if this caller may use it with ``scope``: 404 ``bank_not_found``
        when it is not theirs, 403 ``missing_scope`` when the token lacks the scope, 429 past a
        token's write limit. Staff and system (job, command) callers reach every bank; a REST or
        MCP caller with neither token nor staff user reaches none."""
        if self.token is None:
            if self.via in ("rest", "mcp") and not getattr(self.user, "is_staff", False):
                raise NotFound(f"No bank {slug!r} is available to you.", code="bank_not_found")
            bank = Bank.objects.filter(slug=slug).first()
            if bank is None:
                raise NotFound(f"No bank {slug!r}.", code="bank_not_found")
            return bank
        if slug not in self.held:
            self.held[slug] = self.token.banks.filter(slug=slug).first()
        bank = self.held[slug]
        if bank is None:
            raise NotFound(f"No bank {slug!r} is available to this token.", code="bank_not_found")
        check_scope(self.token, scope)
        return bank

    @contextlib.contextmanager
    def acting(self) -> Iterator[None]:
        """The audit actor and the request context (log lines, operations) for one call."""
        from config.serving import context

        info = context.current()
        begun = None
        if info is None:
            info = context.RequestInfo(self.request_id, method=self.via.upper())
            begun = context.begin(info)
        info.actor = info.actor or self.actor
        try:
            with audit.acting_as(self.actor):
                yield
        finally:
            if begun is not None:
                context.end(begun)


def check_scope(token: AgentToken, scope: str) -> None:
    """403 ``missing_scope`` unless ``token`` has ``scope``; 429 past its write limit."""
    if scope not in token.scopes:
        name = Scope(scope).value  # messages name scopes as API.md does: 'write'
        raise Forbidden(
            f"This token lacks the '{name}' scope this request needs.",
            code="missing_scope",
            fields={"scope": f"Needs '{name}'; the token has {', '.join(token.scopes) or 'none'}."},
        )
    if scope != Scope.READ:
        from kb.api.auth import throttle_writes

        throttle_writes(token)


@dataclass
class Answer:
    """What an action hands back to its transport: the HTTP status and the JSON body."""

    status: int
    data: Any


class Action:
    """One use case. Subclasses declare their input and scope and implement :meth:`execute`
    (returns data, writes through services) and :meth:`present` (renders that data)."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    scope: ClassVar[str] = Scope.READ
    # Path ids: the argument name (MCP, ``self.ids``) -> the REST URL kwarg, in URL order:
    # ``{"id": "entry_id"}``.
    path_ids: ClassVar[dict[str, str]] = {}
    # Body fields: strict JSON types, unknown fields refused (None: no body).
    Input: ClassVar[type | None] = None
    # Query-string fields (read as strings by REST; typed arguments over MCP).
    Query: ClassVar[type | None] = None
    status: ClassVar[int] = 200
    # The code of the 400 for a body field ``Input`` does not declare (API.md: entries answer
    # ``invalid_entry``).
    unknown_field_code: ClassVar[str] = "invalid_input"
    # True: ``Input`` declares the body's fields (schema, unknown fields refused) while the
    # service checks their values, with the bank's own limits and vocabulary, in one place.
    values_checked_by_service: ClassVar[bool] = False

    def __init__(self, bank: Bank, caller: Caller, *, ids: dict | None = None, data=None):
        self.bank, self.caller = bank, caller
        self.ids = dict(ids or {})
        self.data = data if data is not None else {}

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def prepare(
        cls,
        caller: Caller,
        bank: str | Bank,
        *,
        ids: Mapping | None = None,
        query: Mapping | None = None,
        body: Any = None,
    ) -> Action:
        """The action on ``bank`` for this caller, its input checked against the declaration
        (400 on bad input, 404/403/429 from the bank check) — before anything is written."""
        bank_obj = bank if isinstance(bank, Bank) else caller.bank(bank, cls.scope)
        data = cls.clean(query or {}, body)
        return cls(bank_obj, caller, ids=dict(ids or {}), data=data)

    @classmethod
    def clean(cls, query: Mapping, body: Any) -> dict:
        """The declared input as one dict: query fields then body fields."""
        from kb.api.params import declared, unknown_fields, validated

        data: dict = {}
        if cls.Query is not None:
            serializer = cls.Query(data=query_dict(query, cls.Query))
            serializer.is_valid(raise_exception=True)
            data.update(serializer.validated_data)
        if cls.Input is not None:
            if body is None:
                body = {}
            if not isinstance(body, dict):
                raise KbError("The body must be a JSON object.", code="invalid_body")
            unknown = unknown_fields(declared(cls.Input), body)
            if unknown:
                raise KbError(
                    f"Unknown fields: {', '.join(unknown)}.",
                    code=cls.unknown_field_code,
                    fields=dict.fromkeys(unknown, "Unknown field."),
                )
            data.update(body if cls.values_checked_by_service else validated(cls.Input, body))
        return data

    # -- running ----------------------------------------------------------------------------

    def execute(self) -> Any:
        raise NotImplementedError

    def present(self, result: Any) -> Any:
        return result

    def run(self) -> Answer:
        """Execute as the caller, then render."""
        with self.caller.acting():
            result = self.execute()
            return Answer(self.status, self.present(result))


def query_dict(query: Mapping, serializer_class) -> dict:
    """The declared query fields of a REST ``QueryDict`` (one value each; a list field takes
    every value) or of a plain dict of typed MCP arguments."""
    from kb.api.params import declared

    fields = declared(serializer_class).fields
    out = {}
    for name, f in fields.items():
        if name not in query:
            continue
        if hasattr(query, "getlist"):
            values = query.getlist(name)
            if getattr(f, "child", None) is not None:
                out[name] = values
            elif len(values) == 1:
                out[name] = values[0]
            else:
                raise KbError(
                    f"{name} is given more than once.",
                    code="invalid_input",
                    fields={name: "Give it once."},
                )
        else:
            out[name] = query[name]
    return out
