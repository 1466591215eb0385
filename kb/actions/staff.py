"""Running an action from a server-rendered page (the admin, the workflow manager pages): the
staff member as the caller, the action executed in their audit and request context, and any
refused input raised as a ``KbError`` the page can show."""

from __future__ import annotations

from kb.actions.base import Caller


def staff_caller(request):
    """The :class:`~kb.actions.base.Caller` of an admin request: the staff member, through the
    admin, under the request's id."""
    return Caller.for_staff(
        request.user, via="admin", request_id=getattr(request, "request_id", None)
    )


def prepare_as(caller, action_class, bank, **kwargs):
    """``action_class`` on ``bank`` for ``caller``, its declared input checked and nothing
    written yet (a form checks its values this way before the page saves anything). A
    refused input is an :class:`~kb.errors.InvalidInput` (a ``KbError`` the page shows),
    whichever layer refused it."""
    from rest_framework.exceptions import ValidationError

    from kb.api.errors import ApiError
    from kb.errors import InvalidInput

    try:
        return action_class.prepare(caller, bank, **kwargs)
    except ApiError as exc:  # strict JSON types, unknown fields
        raise InvalidInput(exc.message, code=exc.code, fields=exc.fields) from None
    except ValidationError as exc:
        detail = exc.detail if isinstance(exc.detail, dict) else {"input": exc.detail}
        fields = {
            name: " ".join(map(str, v)) if isinstance(v, list) else str(v)
            for name, v in detail.items()
        }
        message = "; ".join(f"{name}: {text}" for name, text in fields.items())
        raise InvalidInput(message or "Some fields are invalid.", fields=fields) from None


def execute_prepared(action):
    """Execute a prepared action as its caller (audit actor, request context); its data."""
    with action.caller.acting():
        return action.execute()


def execute_as(caller, action_class, bank, **kwargs):
    """Prepare ``action_class`` on ``bank`` for ``caller`` and execute it as that caller; its
    data (the admin renders its own page, not the action's JSON). A refused input is an
    :class:`~kb.errors.InvalidInput` (a ``KbError`` the page shows), whichever layer refused
    it."""
    return execute_prepared(prepare_as(caller, action_class, bank, **kwargs))


def run_as_staff(request, action_class, bank, **kwargs):
    """:func:`execute_as` the admin request's staff member: an admin view's one line per use
    case (``ids=``, ``query=``, ``body=`` as :meth:`~kb.actions.base.Action.prepare` takes
    them), through the same declaration and checks as REST and MCP; returns the action's
    data."""
    return execute_as(staff_caller(request), action_class, bank, **kwargs)
