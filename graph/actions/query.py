"""The query use case as an action (API.md "Query"); the retrieval itself is
:mod:`graph.retrieval.query` (services return data, this renders and records)."""

from __future__ import annotations

from dataclasses import asdict

from graph.retrieval.answer_types import QueryAnswer
from graph.retrieval.query import QueryParams, execute_query, present_and_record
from graph.retrieval.query_input import QueryRequestSerializer
from graph.retrieval.tokens import DEFAULT_COUNTER, TokenCounter
from kb.actions.base import Action, Caller
from kb.api.params import query_text
from kb.models import Bank, Scope


class QueryAction(Action):
    """The query use case (API.md "Query"): one declared input
    (:class:`graph.retrieval.query_input.QueryRequestSerializer`, which also generates the
    OpenAPI request and the MCP tool schema), scope ``read``, :meth:`execute` returning typed
    data (:class:`QueryAnswer`), and :meth:`present` rendering JSON within the token budget and
    counting usage of what was shown and logging the query, in one statement. REST, MCP and
    the context bundle all run it; :func:`graph.retrieval.query.run_query` is the same in
    process on ready params."""

    name = "query"
    summary = "Query the bank (the fold query)"
    scope = Scope.READ
    Input = QueryRequestSerializer
    # Set by in-process callers (run_query: replays, labs, benches), never by a transport.
    record: bool = True
    query_vector: list[float] | None = None
    counter: TokenCounter = DEFAULT_COUNTER

    @classmethod
    def clean(cls, query, body) -> dict:
        data = super().clean(query, body)
        query_text(data)
        return data

    @classmethod
    def for_params(cls, bank: Bank, params: QueryParams, caller: Caller, **options) -> QueryAction:
        """The action on already-typed params (no request to validate)."""
        action = cls(bank, caller, data=asdict(params))
        for name, value in options.items():
            setattr(action, name, value)
        return action

    @property
    def params(self) -> QueryParams:
        return QueryParams(**self.data)

    def execute(self) -> QueryAnswer:
        return execute_query(self.bank, self.params, query_vector=self.query_vector)

    def present(self, answer: QueryAnswer) -> dict:
        """Render (the answer as the agent receives it), then count what was shown."""
        return present_and_record(
            self.bank,
            answer,
            self.params,
            actor=self.caller.actor,
            record=self.record,
            counter=self.counter,
        )
