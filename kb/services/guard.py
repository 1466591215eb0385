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


# --- transient state and session narration, in any tense and wording --------------------------
#
# Hard rules above refuse shapes that are never a learning (a log, a trace, a pid). Narration
# and transient state are judged by weighted signals: each matched signal adds its weight,
# wording that states a lasting rule (because, must, never, when X then Y, ...) takes some back,
# and a text scoring ``NARRATION_THRESHOLD`` or more is refused, naming every signal it matched.

# Words that place a statement in one moment rather than state what holds.
_DEICTIC = re.compile(
    r"\b(right now|just now|currently|at the moment|at present|as of now|for now|as we speak|"
    r"so far|yet|this (morning|afternoon|evening|shift|week|sprint)|tonight|today|yesterday|"
    r"tomorrow|earlier today|later today|until further notice|for the rest of the day|"
    r"back to normal|again now|now(?=\s*[.,;!]|\s*$))\b",
    re.IGNORECASE,
)
_DEICTIC_LASTING = re.compile(r"\b(as of (19|20)\d\d|for now on|so far as)\b", re.IGNORECASE)
# A state or an activity that is under way.
_UNDER_WAY = re.compile(
    r"\b(in progress|under way|underway|ongoing|is (still )?(running|pending|down|up again|back up|"
    r"out of service|closed|being \w+ed)|are (still )?(running|pending|down|being \w+ed)|"
    r"still (running|pending|failing|broken|down|waiting|need|missing|open)|waiting (for|on)|"
    r"pending|ETA|halfway|half way|\d{1,3} ?% (done|complete|completed|through)|"
    r"(are|is|am) (now |currently )?(queueing|backing up|backed up|short|out of|behind|late)|"
    r"running \d+ minutes (late|behind)|(not|isn't|is not) working|no luck)\b",
    re.IGNORECASE,
)
# A report of what was just done: a sentence that opens with a past-tense verb of doing, or
# "I/we" doing it.
_DONE_VERBS = (
    r"ran|re-ran|reran|tried|started|restarted|rebooted|opened|checked|deployed|merged|pushed|"
    r"finished|completed|kicked off|triggered|rolled back|reviewed|called|spoke|sent|loaded|"
    r"dispatched|shipped|picked|updated|posted|fixed|spent|rescheduled|reassigned|unloaded|"
    r"looked|went|had|did|got|saw|noticed|found|collected|emailed|reconciled|closed|cleared|"
    r"upgraded|installed|rebuilt|reindexed|moved|booked|counted|triaged|checked in"
)
_REPORT_OPENING = re.compile(
    rf"(^|[.!;:\n]\s*)(just |then |first |finally |also )?({_DONE_VERBS})\b", re.IGNORECASE
)
_DONE_ANYWHERE = re.compile(rf"\b({_DONE_VERBS})\b", re.IGNORECASE)
_FIRST_PERSON_DONE = re.compile(
    rf"\b(i|we|i've|we've|i have|we have|i just|we just)\s+(just |then |also |finally )?"
    rf"({_DONE_VERBS}|been)\b",
    re.IGNORECASE,
)
# Plans and progress of one piece of work.
_PROGRESS = re.compile(
    r"\b(next,? (i|we)('ll| will)|(i|we)('ll| will) (now |then )?(try|check|look|follow up|report|"
    r"rerun|update|do|call|send)|(i'm|i am|we're|we are) (now |currently |still )?(working|going|"
    r"trying|looking|chasing|covering|using|waiting)|let me|will report back|wip\b|todo:|"
    r"step \d+ of \d+|do not merge yet|a new record|no errors|looks good|seems fine|works again|"
    r"all (\d+ )?(tests )?(green|pass|passed)|all counts matched|"
    r"(tests?|build|pipeline|ci|job|deploy(ment)?|run|canary)( #?\d+)? "
    r"(passed|failed|succeeded|went green|is green|is red|started)|\bwent (green|red|smoothly|well))",
    re.IGNORECASE,
)
# A time of day or a run's own numbering ("build #4512") pins the text to one occurrence.
_CLOCK = re.compile(
    r"\b(at |by |since |until )?\d{1,2}[:.]\d{2}(:\d{2})?\s*(am|pm|utc|z)?\b|\b\d{1,2} ?(am|pm)\b|#\d{3,}",
    re.IGNORECASE,
)
_SCHEDULE = re.compile(
    r"\b(every|each|daily|nightly|weekly|before|after|by|until|from|between|no later than|"
    r"at least|cut-?off|opens?|closes?|runs?|leaves?|arrives?|must|need|needs)\b",
    re.IGNORECASE,
)
# Wording that states a lasting rule, a cause or a recipe: modal and causal markers, and
# sentences that open with an instruction.
_LASTING = re.compile(
    r"\b(because|so that|must|never|always|otherwise|unless|requires?|required|needs?|"
    r"cannot|can't|don't|do not|avoid|to prevent|instead|means|caused by|comes? from|the fix|"
    r"workaround|per the|policy|whenever|every time|each time)\b|\b(if|when) [^,.;]{3,60},",
    re.IGNORECASE,
)
_INSTRUCTION = re.compile(
    r"(^|[.!;:\n]\s*)(run|use|set|send|book|split|pin|keep|store|schedule|install|recycle|"
    r"close|search|add|check that|make sure|rotate|start|stop|call)\s",
    re.IGNORECASE,
)

NARRATION_THRESHOLD = 2.0
_SIGNALS: list[tuple[str, float, re.Pattern, str]] = [
    ("moment", 2.0, _DEICTIC, "it is anchored to one moment"),
    ("under_way", 2.0, _UNDER_WAY, "it reports a state that is under way"),
    ("report", 2.0, _REPORT_OPENING, "it reports what was just done"),
    ("first_person", 2.0, _FIRST_PERSON_DONE, "it narrates what I/we did"),
    ("progress", 2.0, _PROGRESS, "it reports progress or the next step of one piece of work"),
]


def _quote(match: re.Match) -> str:
    return match.group(0).strip(" .;:\n")


def narration_signals(text: str) -> tuple[float, list[str]]:
    """The transient-state score of ``text`` and the signals that made it, each with the words
    it matched."""
    score, why = 0.0, []
    for _name, weight, pattern, label in _SIGNALS:
        found = pattern.search(text)
        if found is None or (pattern is _DEICTIC and _DEICTIC_LASTING.search(text)):
            continue
        score += weight
        why.append(f'{label} ("{_quote(found)}")')
    clock = _CLOCK.search(text)
    if clock is not None and not _SCHEDULE.search(text):
        score += 1.0
        why.append(f'it records the time of one occurrence ("{_quote(clock)}")')
        if _DONE_ANYWHERE.search(text):
            score += 1.0  # something was done at that time: an event, not a rule

    lasting = len(_LASTING.findall(text)) + len(_INSTRUCTION.findall(text))
    score -= min(lasting, 2) * 1.0
    return score, why


_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")


def _transient_share(text: str) -> float:
    """The share of sentences that carry a transient signal of their own."""
    sentences = [part for part in _SENTENCE.split(text) if len(part.split()) >= 3]
    if len(sentences) < 3:
        return 1.0  # a short text is judged whole
    flagged = sum(
        1
        for sentence in sentences
        if any(pattern.search(sentence) for _n, _w, pattern, _l in _SIGNALS)
    )
    return flagged / len(sentences)


def transient_narration(text: str) -> str | None:
    """Refuse a text whose transient signals outweigh its lasting wording — unless it is a
    longer entry where such sentences are a minority (an incident told as context for a rule)."""
    score, why = narration_signals(text)
    if score >= NARRATION_THRESHOLD and _transient_share(text) >= 0.5:
        return (
            "It reads as a session report or transient state, not a lasting lesson: "
            + "; ".join(why)
            + ". Store what will still hold next month (a rule, a cause, a recipe), or nothing."
        )
    return None


RULES: list[Callable[[str], str | None]] = [
    timestamped_log,
    session_narration,
    raw_stack_trace,
    transient_state,
    mostly_command_output,
    transient_narration,
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
