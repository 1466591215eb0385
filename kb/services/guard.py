"""The learning guard: refuse session logs and transient state, accept real learnings.

A small rule set. Each rule looks at the text an agent wants to store and either passes or
names the problem in one sentence. ``check_learning`` raises ``Refused`` (422
``not_a_learning``) with the reasons; :func:`guard_reasons` returns them for tests and tools.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kb.errors import Refused

_TIMESTAMP_LINE = re.compile(
    r"^\s*[\[(]?(\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}(:\d{2})?|\d{1,2}:\d{2}:\d{2})([.,]\d+)?\s*(Z|[+-]\d{2}:?\d{2}|UTC)?[\])]?"
)
_NARRATION = re.compile(
    r"\b(today|this morning|this afternoon|just now|right now|so far|in this session|this session)\b[^.]{0,60}\b"
    r"(i|we)\b[^.]{0,20}\b(ran|tried|started|opened|ran into|looked|checked|am|was|did|spent|fixed|went)\b",
    re.IGNORECASE,
)
_FIRST_PERSON_LOG = re.compile(
    r"^\s*(then |next |after that |first |finally )?(i|we) (ran|tried|opened|typed|clicked|checked|looked at)\b",
    re.IGNORECASE | re.MULTILINE,
)
_TRACE_LINE = re.compile(
    r"^\s*(Traceback \(most recent call last\)|File \".+\", line \d+|at [\w.$<>]+\(.*:\d+\)|\w+(\.\w+)*(Error|Exception): )"
)
_PID = re.compile(r"\b(pid|process id)\s*(is|was|=|:|#)?\s*\d{2,}\b", re.IGNORECASE)
# Paths made for one run: mktemp-style names, pytest/pip scratch dirs, macOS per-user temp.
_TEMP_PATH = re.compile(
    r"(/tmp/(tmp[\w]{6,}|pytest-of-[\w-]+|pip-[\w-]+|[\w.-]*\d{5,}[\w.-]*)"
    r"|/var/folders/[\w/.-]+|AppData\\Local\\Temp\\[\w.-]+|/private/var/tmp/[\w.-]+)"
)
_COMMAND_OUTPUT = re.compile(
    r"^\s*(\$ |> |# |PS [A-Z]:\\|[\w.-]+@[\w.-]+:.*[$#] |\+ |npm (ERR|WARN)|\s*\d+ passed|\s*[-=]{8,})"
)
_LESSON_WORDS = re.compile(
    r"\b(because|so that|must|never|always|should|instead|avoid|use|fix|fixed by|the cause|caused by|to prevent|"
    r"make sure|remember|requires?|don't|do not|works? only|breaks? when|fails? when|the trick|workaround)\b",
    re.IGNORECASE,
)


def _text(data: dict) -> str:
    return "\n".join(str(data.get(k) or "") for k in ("title", "content", "summary", "useful_for"))


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def timestamped_log(text: str) -> str | None:
    lines = _lines(text)
    stamped = sum(1 for line in lines if _TIMESTAMP_LINE.match(line))
    if stamped >= 3 and stamped >= len(lines) / 2:
        return "It reads as a timestamped log (most lines start with a time); store what was learned, not the log."
    return None


def session_narration(text: str) -> str | None:
    if _NARRATION.search(text) or len(_FIRST_PERSON_LOG.findall(text)) >= 2:
        return 'It narrates a session ("today I ran…"); state the lasting lesson in the present tense instead.'
    return None


def raw_stack_trace(text: str) -> str | None:
    lines = _lines(text)
    trace = sum(1 for line in lines if _TRACE_LINE.match(line))
    if trace >= 2 and not _LESSON_WORDS.search(
        " ".join(line for line in lines if not _TRACE_LINE.match(line))
    ):
        return "It is a raw stack trace without a lesson; say what causes the error and how to avoid or fix it."
    return None


def transient_state(text: str) -> str | None:
    if _PID.search(text):
        return (
            "It records a process id, which is only true for one run; store what holds across runs."
        )
    if _TEMP_PATH.search(text):
        return "It records a temporary path, which will not exist later; describe the lasting fact instead."
    return None


def mostly_command_output(text: str) -> str | None:
    lines = _lines(text)
    if len(lines) < 5:
        return None
    output = sum(1 for line in lines if _COMMAND_OUTPUT.match(line))
    if output / len(lines) >= 0.5:
        return (
            "It is mostly command output; keep the one line that matters and say what it teaches."
        )
    return None


RULES: list[Callable[[str], str | None]] = [
    timestamped_log,
    session_narration,
    raw_stack_trace,
    transient_state,
    mostly_command_output,
]


def guard_reasons(data: dict) -> list[str]:
    """Every reason the payload is not a learning (empty when it is one)."""
    text = _text(data)
    return [reason for rule in RULES if (reason := rule(text))]


def check_learning(data: dict) -> None:
    reasons = guard_reasons(data)
    if reasons:
        raise Refused(
            "This is not a learning: " + reasons[0],
            code="not_a_learning",
            fields={"content": " ".join(reasons)},
            extra={"reasons": reasons},
        )
