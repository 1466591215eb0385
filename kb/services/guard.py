"""The learning guard: refuse session logs and transient state, accept real learnings.

Hard rules for shapes that are never a learning, then a classifier (rules' signals plus the
local embedding model) for narration and transient state. Each rule looks at the text an agent
wants to store and either passes or names the problem in one sentence. ``check_learning``
raises ``Refused`` (422 ``not_a_learning``) with the reasons; :func:`guard_reasons` returns
them for tests and tools.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from kb.errors import Refused
from kb.services.guard_model import CLASSIFIED_CHARS, Verdict, judge

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
    """Refuse a narrated session, quoting the words of the text that narrate it (never words
    the text does not contain)."""
    found = _NARRATION.search(text)
    if found is None:
        log_lines = list(_FIRST_PERSON_LOG.finditer(text))
        found = log_lines[0] if len(log_lines) >= 2 else None
    if found is None:
        return None
    quote = _short(found.group(0).strip().splitlines()[0].strip(), 60)
    return (
        f'It narrates a session ("{quote}"); state the lasting lesson in the present tense instead.'
    )


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


# --- transient state and session narration, in any tense and wording --------------------------
#
# The hard rules above refuse shapes that are never a learning (a log, a trace, a pid). Anything
# else is judged by the classifier of kb.services.guard_model: a logistic regression over the
# text's MiniLM embedding and the linguistic signals of kb.services.guard_signals (a moment, a
# state under way, a report of what was done, a plan, progress, against wording that states a
# rule). A refusal quotes the signals that fired and the labelled reports the text is closest to.


def transient_narration(text: str) -> str | None:
    """Refuse a text the classifier judges a session report or a transient state."""
    return narration_reason(judge(text))


def narration_reason(verdict: Verdict) -> str | None:
    """The refusal of a classifier verdict, quoting its signals and nearest examples."""
    if not verdict.refused:
        return None
    why = "; ".join(verdict.signals) or "its wording as a whole, like the examples below"
    reason = (
        "It reads as a session report or transient state, not a lasting lesson "
        f"(score {verdict.probability:.2f} >= {verdict.threshold}): {why}."
    )
    if verdict.nearest:
        examples = "; ".join(f'"{_short(t)}" ({s})' for t, s in verdict.nearest)
        reason += f" It is closest to these labelled session reports: {examples}."
    return (
        reason + " Store what will still hold next month (a rule, a cause, a recipe), or nothing."
    )


def _short(text: str, limit: int = 90) -> str:
    """``text`` cut to ``limit`` characters at a word (no marker: a quote stays verbatim)."""
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0].rstrip()


# A text that says the same thing over and over (one sentence pasted many times, a span looped
# by a runaway generator) is not a learning, and it would crowd out real ones in retrieval.
# Measured on word 6-grams: in prose nearly every 6-gram is distinct; a text whose distinct share
# is below REPEAT_DISTINCT_SHARE says each thing about four times or more. Set on the tuning
# files (guard_labelled/heldout/extra) and reported on guard_blind.jsonl (README, "Entry limits").
REPEAT_GRAM = 6
REPEAT_MIN_WORDS = 60
REPEAT_DISTINCT_SHARE = 0.25


def repeated_text(text: str) -> str | None:
    """Refuse a text that repeats itself, quoting the span it repeats (verbatim)."""
    words = text.split()
    if len(words) < REPEAT_MIN_WORDS:
        return None
    grams = [
        tuple(w.casefold() for w in words[i : i + REPEAT_GRAM])
        for i in range(len(words) - REPEAT_GRAM + 1)
    ]
    if len(set(grams)) / len(grams) >= REPEAT_DISTINCT_SHARE:
        return None
    gram, count = Counter(grams).most_common(1)[0]
    start = grams.index(gram)
    pattern = r"\s+".join(re.escape(w) for w in words[start : start + REPEAT_GRAM])
    found = re.search(pattern, text)
    quote = found.group(0) if found else " ".join(words[start : start + REPEAT_GRAM])
    return (
        f'It repeats itself: the same words ("{quote}") recur {count} times in '
        f"{len(words)} words. State the lesson once."
    )


HARD_RULES: list[Callable[[str], str | None]] = [
    repeated_text,
    timestamped_log,
    session_narration,
    raw_stack_trace,
    transient_state,
    mostly_command_output,
]


def _statement(data: dict, text: str) -> str:
    return str(data.get("content") or "").strip() or text


def embedded_text(data: dict) -> str:
    """The text the classifier embeds for ``data`` (when no hard rule refuses it), so a write
    can put it in its one forward pass."""
    return _statement(data, _text(data))[:CLASSIFIED_CHARS]


def rule_reasons(data: dict) -> list[str]:
    """The hard rules' reasons: shapes that are never a learning (no model needed)."""
    text = _text(data)
    return [reason for rule in HARD_RULES if (reason := rule(text))]


def classifier_reasons(data: dict) -> list[str]:
    """The classifier's reason, if it refuses (it reads the text's embedding)."""
    # The classifier was trained on statements: it judges the content, and a refusal stands
    # only if the whole entry (title, summary, useful_for around it) reads as a report too.
    text = _text(data)
    statement = _statement(data, text)
    reason = transient_narration(statement)
    if reason and statement != text.strip() and transient_narration(text) is None:
        reason = None
    return [reason] if reason else []


def guard_reasons(data: dict) -> list[str]:
    """Every reason the payload is not a learning (empty when it is one); the classifier embeds
    only when no hard rule refused."""
    return rule_reasons(data) or classifier_reasons(data)


def check_learning(data: dict, *, rules: bool = True, classifier: bool = True) -> None:
    """Refuse (422 ``not_a_learning``) a payload that is not a learning. A write that overlaps
    the model with its own work checks the ``rules`` first and the ``classifier`` once the
    vector is there: the same reasons as both at once (the classifier runs only when no rule
    refused)."""
    reasons = (rule_reasons(data) if rules else []) or (
        classifier_reasons(data) if classifier else []
    )
    if reasons:
        raise Refused(
            "This is not a learning: " + reasons[0],
            code="not_a_learning",
            fields={"content": " ".join(reasons)},
            extra={"reasons": reasons},
        )
