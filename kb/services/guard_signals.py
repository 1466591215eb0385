"""Linguistic signals of the learning guard: what marks a text as a session report or a
transient state, and what marks it as a lasting lesson.

Each signal is a regular expression with a name and a sentence the refusal can quote. The
guard's classifier (:mod:`kb.services.guard_model`) weighs them together with the text's
MiniLM embedding; :func:`signals` returns which fired and the words they matched, so every
refusal can say why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_I = re.IGNORECASE

# Words that place a statement in one moment rather than state what holds.
_MOMENT = re.compile(
    r"\b(right now|just now|currently|at the moment|at present|as of now|for now|as we speak|"
    r"so far|this (morning|afternoon|evening|shift|week|weekend|sprint|quarter)|tonight|today|"
    r"yesterday|tomorrow|overnight|earlier today|later today|until further notice|"
    r"for the rest of the day|back to normal|again now|over the weekend|last night|"
    r"(this|next|last|on|by|since|until|before) (monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday)|in (two|three|four|five|six|\d+) (days|hours|minutes)|"
    r"now(?=\s*[.,;!]|\s*$))\b",
    _I,
)
_WEEKDAY = re.compile(r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", _I)
_LASTING_TIME = re.compile(
    r"\b(as of (19|20)\d\d|from now on|so far as|every|each|mondays|tuesdays|wednesdays|"
    r"thursdays|fridays|saturdays|sundays|weekly|daily|nightly)\b",
    _I,
)
# A state or an activity that is under way.
_UNDER_WAY = re.compile(
    r"\b(in progress|under way|underway|ongoing|still [a-z]+ing|still (pending|down|broken|"
    r"open|stuck|unknown|missing|there|out|with|red|failing|waiting)|waiting (for|on)|pending|"
    r"ETA|halfway|half way|half done|on the way|\d{1,3} ?% (done|complete|completed|through|"
    r"entered|finished)|(is|are|am|'s|'re) (now |currently |still )?(queueing|backing up|"
    r"backed up|short|out of|behind|late|offline|online|down|stuck|jammed|overloaded|broken|"
    r"stalled|blocked|red|green|flat|climbing|dropping|holding|sitting|bouncing|"
    r"being [a-z]+ed)|running (\d+ minutes )?(late|behind|low)|(not|isn't|is not|aren't) "
    r"(working|loading|responding)|no luck|again(?=\s*[.,;!]|\s*$)|[a-z]+ing along)\b",
    _I,
)
# A present-progressive state of some named thing ("the replica is lagging", "pumps are
# returning 502s"), outside a condition.
_PROGRESSIVE = re.compile(
    r"(^|[.;:!\n]\s*)[^.;:!\n]{0,60}?\b(is|are|'s|'re) (now |currently |still |just )?"
    r"(?!being\b|going to\b|using\b|according\b|during\b|nothing\b|something\b|anything\b|"
    r"everything\b|thing\b|string\b|king\b|ring\b|bring\b|spring\b|setting\b|ceiling\b|"
    r"morning\b|evening\b|building\b|missing\b|pending\b|working\b|recurring\b|"
    r"interesting\b|misleading\b|confusing\b|boring\b|encouraging\b)([a-z]+ing)\b",
    _I,
)
_HEADLINE_ING = re.compile(
    r"^\s*(the |our |a )?([A-Za-z0-9][\w'./-]*\s+){1,5}?(?!during\b|according\b|using\b|"
    r"including\b|regarding\b|following\b|nothing\b|something\b|anything\b|everything\b|"
    r"string\b|setting\b|settings\b|morning\b|evening\b|building\b|pending\b)"
    r"([a-z]+ing)\b(?! (is|are|was|were|can|must|should|will|needs?)\b)",
)
# A report of what was just done.
_DONE_VERBS = (
    r"ran|re-ran|reran|tried|started|restarted|rebooted|opened|checked|deployed|merged|pushed|"
    r"finished|completed|kicked off|triggered|rolled back|reviewed|called|spoke|sent|loaded|"
    r"dispatched|shipped|picked|updated|posted|fixed|spent|rescheduled|reassigned|unloaded|"
    r"looked|went|had|did|got|saw|noticed|found|collected|emailed|reconciled|closed|cleared|"
    r"upgraded|installed|rebuilt|reindexed|moved|booked|counted|triaged|checked in|filed|"
    r"escalated|replaced|rotated|revoked|blocked|returned|marked|discharged|submitted|signed|"
    r"approved|released|disabled|enabled|promoted|tagged|logged|chased|drafted|wrapped up|"
    r"handed|resolved|raised|requested|received|scheduled|confirmed|switched|removed|added|"
    r"created|deleted|applied|tested|verified|cancelled|canceled|paid|processed|shut down"
)
_REPORT_OPENING = re.compile(
    rf"(^|[.!;:\n]\s*)(just |then |first |finally |also |already )?({_DONE_VERBS})\b", _I
)
_FIRST_PERSON_DONE = re.compile(
    rf"\b(i|we|i've|we've|i have|we have|i just|we just)\s+(just |then |also |finally |"
    rf"already )?({_DONE_VERBS}|been)\b",
    _I,
)
# An event of one occurrence in the passive or with a verb of arrival ("was released at",
# "went out", "came in at 4.7%", "has been submitted").
_ONE_EVENT = re.compile(
    r"\b((was|were|has been|have been|got|had been) (just |finally |already )?[a-z]+(ed|en|t)\b"
    r"|went (out|live|down|well|smoothly|green|red|through)|came (in|back|out) (at|fine|clean|"
    r"with)|came back\b|arrived\b|landed\b|wrapped up\b|kicked off\b|(fired|tripped|failed|"
    r"passed|crashed|dipped|spiked|jumped|dropped|recovered|fell|rose) (at|to|for|on|and|"
    r"overnight|again|this|with|within)\b)",
    _I,
)
# Plans and progress of one piece of work.
_PLAN = re.compile(
    r"(\bnext( step| up| on [^:]{1,40})?\s*:|\bnext,? (i|we)('ll| will)|\b(i|we)('ll| will| "
    r"am going to| are going to)\b|\b(i'm|i am|we're|we are) going to\b|^\s*will [a-z]+\b|"
    r"\bwill be [a-z]+(ed|en|t) (once|after|as soon as|by|on|tomorrow|tonight|later|next)\b"
    r"|\bshould have (it|them|this) by\b|\bwill (report|update|follow up|send|check) (back|"
    r"once|when|later|tomorrow)|\blet me\b|\bwip\b|\btodo:)",
    _I | re.MULTILINE,
)
_PROGRESS = re.compile(
    r"\b(\d[\d,.]* (of|out of) \d[\d,.]*\b(?! (the|our|every|each)\b)|(?<![\w/.])\d+/\d+ (done|complete|completed|passed|"
    r"failed|green|finished|migrated|processed|ready|healthy|up|left|checked)|(at|epoch|step|"
    r"batch|shard|page|phase) \d+/\d+(?![\w/.])|day \d+ of \d+|step \d+ of \d+|to go\b|remaining\b|so far\b|target \d|"
    r"(i'm|i am|we're|we are) (now |currently |still )?(working|trying|looking|chasing|"
    r"covering|waiting|reviewing|drafting|screening|switching|investigating)|investigating\b|"
    r"a new record|no errors|no criticals|looks? (good|fine|off)|seems (fine|ok)|works again|"
    r"all (\d+ )?(tests )?(green|pass|passed)|all counts matched|(tests?|build|pipeline|ci|job|"
    r"deploy(ment)?|run|canary|scan|check)( #?\d+)? (passed|failed|succeeded|went green|"
    r"is green|is red|started|completed))",
    _I,
)
_CLOCK = re.compile(
    r"\b(at |by |since |until )?\d{1,2}[:.]\d{2}(:\d{2})?\s*(am|pm|utc|z|cet|est|pst)?\b|"
    r"\b\d{1,2} ?(am|pm)\b|#\d{3,}",
    _I,
)
_SCHEDULE = re.compile(
    r"\b(every|each|daily|nightly|weekly|before|after|by|until|from|between|no later than|"
    r"at least|cut-?off|opens?|closes?|runs?|leaves?|arrives?|must|need|needs|starts?|ends?)\b",
    _I,
)
# Wording that states a lasting rule, a cause or a recipe.
_LASTING = re.compile(
    r"\b(because|so that|must|never|always|otherwise|unless|requires?|required|needs?|should|"
    r"cannot|don't|do not|does not|doesn't|avoid|to prevent|instead|means|caused by|"
    r"comes? from|the fix|workaround|per the|policy|whenever|every time|each time|usually|"
    r"typically|typical|mostly|only|any|every|each|all|expects?|counts? as|treated as|applies|apply|"
    r"is limited|are limited|at most|at least|up to|within|if|when|unless|since \d{4}|"
    r"learned|lesson|rule|in general|by default|point to|points to|leads? to|"
    r"(in|from|since|after|before) ((early|late|mid) )?(january|february|march|april|may|june|"
    r"july|august|september|october|november|december )?(19|20)\d\d)\b",
    _I,
)
_INSTRUCTION = re.compile(
    r"(^|[.!;:\n]\s*)(run|use|set|send|book|split|pin|keep|store|schedule|install|recycle|"
    r"close|search|add|check|make sure|rotate|start|stop|call|ask|pass|wrap|convert|export|"
    r"reject|correct|compare|treat|give|put|prefer|wait|apply|open|do not|don't|never|always)\s",
    _I,
)
# A generic subject: a statement about a kind of thing, not one instance.
_GENERIC = re.compile(
    r"\b(are|is|do|does|has|have|take|takes|need|needs|expire|expires|run|runs|work|works|"
    r"fail|fails|break|breaks|mean|means|lose|loses|drop|drops|reject|rejects|return|returns|"
    r"omit|omits|skip|skips|get|gets|stay|stays)\b",
    _I,
)
_PAST = re.compile(r"\b([a-z]{3,}ed|ran|went|came|got|sent|spent|took|made|left|saw|found)\b", _I)
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'll|we|we're|we've|we'll|my|our)\b", _I)


@dataclass(frozen=True)
class Signal:
    name: str
    label: str
    transient: bool  # True: a mark of narration or state; False: a mark of a lasting lesson


SIGNALS: list[tuple[Signal, re.Pattern]] = [
    (Signal("moment", "it is anchored to one moment", True), _MOMENT),
    (Signal("under_way", "it reports a state that is under way", True), _UNDER_WAY),
    (Signal("progressive", "it describes what something is doing now", True), _PROGRESSIVE),
    (Signal("headline", "it reads as a status line", True), _HEADLINE_ING),
    (Signal("report", "it reports what was just done", True), _REPORT_OPENING),
    (Signal("first_person", "it narrates what I/we did", True), _FIRST_PERSON_DONE),
    (Signal("one_event", "it reports one event", True), _ONE_EVENT),
    (Signal("plan", "it states the next step of one piece of work", True), _PLAN),
    (Signal("progress", "it reports progress or a result of one run", True), _PROGRESS),
    (Signal("lasting", "it states a rule, a cause or a condition", False), _LASTING),
    (Signal("instruction", "it gives an instruction", False), _INSTRUCTION),
]
FEATURES = [signal.name for signal, _ in SIGNALS] + [
    "clock",
    "weekday",
    "no_lasting",
    "lasting_many",
    "generic_verb",
    "past_share",
    "first_person_any",
    "length",
]


def _quote(match: re.Match) -> str:
    return match.group(0).strip(" .;:,\n")


def signals(text: str) -> tuple[list[float], list[tuple[str, str]]]:
    """The feature vector of ``text`` (in ``FEATURES`` order) and, for every transient signal
    that fired, its label and the words it matched."""
    values: dict[str, float] = {}
    quoted: list[tuple[str, str]] = []
    lasting_time = _LASTING_TIME.search(text) is not None
    for signal, pattern in SIGNALS:
        found = pattern.search(text)
        if signal.name == "moment" and lasting_time:
            found = None
        values[signal.name] = 1.0 if found else 0.0
        if found and signal.transient:
            quoted.append((signal.name, f'{signal.label} ("{_quote(found)}")'))
    lasting = len(_LASTING.findall(text)) + len(_INSTRUCTION.findall(text))
    clock = _CLOCK.search(text)
    values["clock"] = 1.0 if clock is not None and not _SCHEDULE.search(text) else 0.0
    if values["clock"]:
        quoted.append(("clock", f'it records the time of one occurrence ("{_quote(clock)}")'))
    values["weekday"] = 1.0 if _WEEKDAY.search(text) and not lasting_time else 0.0
    values["no_lasting"] = 1.0 if lasting == 0 else 0.0
    values["lasting_many"] = min(lasting, 4) / 4.0
    values["generic_verb"] = 1.0 if _GENERIC.search(text) else 0.0
    words = max(len(text.split()), 1)
    values["past_share"] = min(len(_PAST.findall(text)) / words * 5.0, 1.0)
    values["first_person_any"] = 1.0 if _FIRST_PERSON.search(text) else 0.0
    values["length"] = min(words / 40.0, 1.0)
    return [values[name] for name in FEATURES], quoted
