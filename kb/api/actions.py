"""The REST transport of actions (:mod:`kb.actions`): a view method is one line,
``return respond(SomeAction, request, bank=bank, entry_id=entry_id)``.

The caller comes from the authenticated request (token or staff session) with the request id
the middleware gave it, the path ids from the URL, the query fields from the query string and
the body from the parsed JSON; the action checks the bank, the scope and the input, runs, and
its answer becomes the response. Errors raised on the way are rendered by
:func:`kb.api.errors.exception_handler`, as for any view.
"""

from __future__ import annotations

from rest_framework.response import Response

from kb.actions.base import Action, Caller
from kb.api.auth import AgentPrincipal, actor_for
from kb.errors import KbError

BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


def caller_for(request, *, via: str = "rest") -> Caller:
    """The :class:`Caller` of a DRF request: its token (with the banks authentication already
    read) or its staff user; anyone else is a caller that reaches no bank (404
    ``bank_not_found`` from :meth:`Caller.bank`, or the action's own 404, as for a job)."""
    user = request.user
    request_id = getattr(request, "request_id", None)
    if isinstance(user, AgentPrincipal):
        caller = Caller.for_token(user.token, via=via, request_id=request_id)
        caller.held = user.held
        return caller
    if user is not None and getattr(user, "is_staff", False):
        return Caller.for_staff(user, via=via, request_id=request_id)
    caller = Caller(actor=actor_for(request), via=via, user=user)
    if request_id:
        caller.request_id = request_id
    return caller


def respond(action_class: type[Action], request, bank: str | None, **kwargs) -> Response:
    """Run ``action_class`` for this request on ``bank`` with the URL's path ids (URL kwargs,
    named as the action's ``path_ids`` map them). ``bank`` None: the action finds its bank
    from its ids (a job)."""
    caller = caller_for(request)
    ids = {arg: kwargs[url] for arg, url in action_class.path_ids.items() if url in kwargs}
    body = None
    if action_class.Input is not None and request.method in BODY_METHODS:
        body = request.data
        if body is None:  # the JSON text `null` (an empty body reads as {}): not an object
            raise KbError("The body must be a JSON object.", code="invalid_body")
    action = action_class.prepare(caller, bank, ids=ids, query=request.query_params, body=body)
    answer = action.run()
    return Response(answer.data, status=answer.status)
