"""Clause structure for the local extractor: which name a relation phrase really joins.

A reader that pairs the two names around a phrase is misled by the commonest shapes of
English prose. These helpers read those shapes from words alone (no parser, no model), for
any domain:

- **relative clauses**: in "the Cue Sheet that the Lighting Crew owns is signed off by the
  DSM" the Lighting Crew is the subject of *owns* only; *is signed off by* belongs to the Cue
  Sheet, and *owns* takes the Cue Sheet as its object (``relative_head``). The same with no
  "that" ("the ticketing system the Box Office runs replaced …") and with a subject relative
  ("the riggers, who need …": ``antecedent_of``);
- **parentheticals**: "The DSM, who is part of Stage Management, owns the Prompt Book" —
  the verb after the closing comma belongs to the name before the opening one
  (``parenthetical_head``; also "X, unlike Y, …", "X, next to Y, …", "X, not Y, …",
  "X, run by Y, …");
- **where a noun phrase ends**: a name followed by a verb ("…, and the Get-Out follows …")
  starts a new clause and is no item of the list before it (``ends_noun_phrase``,
  ``verb_follows``); a name followed by "'s" is a possessor ("Wardrobe's booth"), and a name
  after a preposition ("the key to the Paint Frame") modifies another noun.
"""

from __future__ import annotations

import re

from graph.ingest.extract.mentions import Mention

WORD = re.compile(r"[^\W_][\w'’./&-]*", re.UNICODE)
DETERMINERS = {"the", "a", "an", "its", "their", "our", "his", "her", "my", "your"}
LEADING = DETERMINERS | {"each", "every", "any", "all", "both", "either", "this", "these"}
# Adverbs that may stand between a subject and its verb without being a verb themselves.
ADVERBS = {
    "also", "still", "now", "itself", "themselves", "both", "all", "always", "usually",
    "normally", "often", "only", "already", "jointly", "currently", "alone", "each", "too",
    "then", "first", "later", "typically", "generally",
}  # fmt: skip
AUXILIARIES = {
    "is", "are", "was", "were", "be", "been", "being", "has", "have", "had", "does", "do",
    "did", "can", "could", "must", "should", "shall", "will", "would", "may", "might",
    "cannot", "wo",
}  # fmt: skip
PREPOSITIONS = {
    "to", "of", "for", "from", "with", "on", "in", "at", "by", "about", "into", "onto", "under",
    "over", "near", "behind", "without", "within", "across", "through", "via", "per", "like",
    "unlike", "beside", "between", "among", "during", "above", "below", "around", "inside",
    "outside", "beneath", "beyond", "upon", "against", "toward", "towards",
}  # fmt: skip
# Words that open a parenthetical after a name and a comma ("X, who …,", "X, unlike Y,").
PARENTHETICAL_OPENERS = {
    "who", "whom", "whose", "which", "where", "unlike", "like", "together", "along",
    "alongside", "not", "including", "except", "besides", "next", "plus", "apart",
}  # fmt: skip
IRREGULAR_PARTICIPLES = {
    "run", "kept", "held", "led", "made", "built", "done", "set", "put", "read", "sent", "paid",
    "bought", "brought", "taught", "told", "written", "given", "known", "shown", "drawn", "met",
}  # fmt: skip
RELATIVE_PRONOUNS = {"that", "which", "whom", "who"}
PRONOUNS = {"it", "they", "we", "he", "she", "you", "i", "one", "someone", "everyone"}
# What may follow a noun phrase that ends there: a list item must be followed by one of these
# (or punctuation, or the end), else it is the subject of a new clause ("…, and the Rigging
# Crew keeps …") or a modifier of another noun ("the MCR phone tree").
NP_FOLLOWERS = PREPOSITIONS | {
    "and", "or", "nor", "as", "before", "after", "until", "when", "while", "where", "which",
    "who", "whose", "since", "because", "so", "but", "then", "each", "every", "too", "only",
    "both", "alike", "once", "unless", "if", "whenever", "together", "that", "whom", "respectively",
}  # fmt: skip
# Adjectives that complete "needs X clear" / "requires X ready" (a small clause), not nouns.
PREDICATIVE = {
    "clear", "free", "open", "ready", "available", "empty", "clean", "closed", "locked",
    "staffed", "up", "down", "online", "offline", "running", "intact", "dry", "safe", "live",
    "unlocked", "idle", "present", "on", "off",
}  # fmt: skip
# Nouns that classify the name before them rather than name another thing: "the Subtitle
# Service team" is the Subtitle Service, "the Work Order numbers" cite the Work Order.
CLASSIFIERS = {
    "team", "teams", "department", "group", "crew", "staff", "unit", "office", "number",
    "numbers", "id", "ids", "reference", "references", "record", "records",
}  # fmt: skip
# People of a group: "the Control Room operators", "the Ops Team night shift" act for it.
MEMBERS = {
    "operators", "operator", "staff", "members", "engineers", "clerks", "users", "supervisors",
    "shift", "shifts", "technicians", "officers", "workers", "crews", "personnel", "desk",
}  # fmt: skip
# Words that close a clause's object: a subordinator or a focus adverb ("owned by X even
# though …", "needs X whereas …").
SUBORDINATORS = {"even", "though", "although", "whereas", "than", "except", "via", "unless"}
NOT_ADVERBS = {
    "weekly", "monthly", "yearly", "hourly", "nightly", "quarterly", "fortnightly", "early",
    "friendly", "family", "holly", "rally", "belly", "jelly", "bully",
}  # fmt: skip
# Verbs of a clause's start or end: "… before Truck Loading starts".
ASPECTUAL = {"starts", "begins", "finishes", "ends", "closes", "opens", "completes", "resumes"}
# Opening words of a discourse parenthetical: "X, by contrast, belongs to …".
DISCOURSE = {
    "by", "in", "for", "however", "though", "therefore", "meanwhile", "moreover", "instead",
    "likewise", "of", "at", "as", "since", "after", "during", "on", "thus", "indeed",
}  # fmt: skip
POSSESSIVE = re.compile(r"^\s*['’]s?\b")


def words(text: str) -> list[str]:
    """Lower-cased words; a contracted negation is its own word ("doesn't" → does, n't)."""
    out = []
    for w in WORD.findall(text):
        w = w.lower().strip(".").replace("’", "'")
        if w.endswith("n't") and len(w) > 3:
            out.extend((w[:-3], "n't"))
        else:
            out.append(w)
    return out


def next_word(sentence: str, pos: int) -> tuple[str, int] | None:
    """The word starting after ``pos`` (only white space between), lower-cased, and where."""
    m = re.compile(r"\s*([^\W_][\w'’-]*)").match(sentence, pos)
    return (m.group(1).lower(), m.start(1)) if m else None


def possessor(sentence: str, end: int) -> bool:
    """The name ending at ``end`` is followed by "'s": it owns the noun after it."""
    return bool(POSSESSIVE.match(sentence[end : end + 3]))


def after_preposition(sentence: str, start: int, lo: int) -> bool:
    """A preposition stands before the name at ``start`` (determiners skipped, from ``lo``):
    "the key to the Paint Frame" — the name modifies another noun, it is no subject."""
    ws = words(sentence[lo:start])
    while ws and ws[-1] in LEADING:
        ws.pop()
    return bool(ws) and ws[-1] in PREPOSITIONS


def ends_noun_phrase(sentence: str, end: int) -> bool:
    """The noun phrase ending at ``end`` ends there: punctuation, the end, or a word that may
    follow a noun phrase (a conjunction, a preposition), not a verb or another noun."""
    rest = sentence[end:].lstrip()
    if not rest or rest[0] in ",.;:()!?[]":
        return True
    nxt = next_word(sentence, end)
    return nxt is not None and nxt[0] in NP_FOLLOWERS


def mention_ending_at(mentions: list[Mention], end: int) -> Mention | None:
    for m in mentions:
        if m.end == end:
            return m
    return None


def _strip_back(sentence: str, pos: int, mentions: list[Mention]) -> tuple[int, bool]:
    """Move ``pos`` back over white space, determiners and a possessor ("the Lighting Crew's").
    Returns the new position and whether a determiner was passed."""
    passed_det = False
    while True:
        text = sentence[:pos].rstrip()
        m = re.search(r"['’]s?$", text)
        owner = mention_ending_at(mentions, m.start()) if m else None
        if owner is not None:
            pos = owner.start
            continue
        w = re.search(r"([^\W_][\w'’-]*)$", text)
        if w and w.group(1).lower() in DETERMINERS:
            pos, passed_det = w.start(1), True
            continue
        return len(text), passed_det


def relative_head(sentence: str, name: Mention, mentions: list[Mention]):
    """Whether the name is the subject of a relative clause, and the name that clause
    modifies. "the risk assessment that the Get-In requires" → (True, risk assessment);
    "Every tray that SSD processes" → (True, None); "the ticketing system the Box Office runs"
    (no "that") → (True, ticketing system); otherwise (False, None)."""
    pos, passed_det = _strip_back(sentence, name.start, mentions)
    w = re.search(r"([^\W_]+)$", sentence[:pos])
    if w and w.group(1).lower() in RELATIVE_PRONOUNS - {"who"}:
        before = sentence[: w.start(1)].rstrip().rstrip(",").rstrip()
        return True, mention_ending_at(mentions, len(before))
    if passed_det:  # "the ticketing system the Box Office runs": no "that", no comma
        head = mention_ending_at(mentions, pos)
        if head is not None:
            return True, head
    return False, None


def antecedent_of(sentence: str, pronoun_start: int, mentions: list[Mention]) -> Mention | None:
    """The name a subject relative pronoun ("X, who needs …", "X which follows …") stands
    for: the name right before it, a comma allowed."""
    before = sentence[:pronoun_start].rstrip().rstrip(",").rstrip()
    return mention_ending_at(mentions, len(before))


def parenthetical_head(
    sentence: str, comma: int, mentions: list[Mention], clause_start_of
) -> Mention | None:
    """The name a verb after a closing comma belongs to, when a parenthetical opened by a
    comma after that name stands between ("The DSM, who …, owns"; "X, unlike Y and Z, needs").
    ``comma`` is the closing comma; the name must begin its own clause."""
    for c in reversed([i for i, ch in enumerate(sentence[:comma]) if ch == ","]):
        if re.search(r"[;:]", sentence[c:comma]):
            return None
        nxt = next_word(sentence, c + 1)
        opener = nxt is not None and (nxt[0] in PARENTHETICAL_OPENERS or participle(nxt[0]))
        if nxt is None or not (opener or nxt[0] in DISCOURSE):
            continue
        head = mention_ending_at(mentions, len(sentence[:c].rstrip()))
        if head is None:
            # "X, built in 1974, upgraded twice, is …": a run of parentheticals
            if not any(c < m.start < comma for m in mentions) and not _has_verb_lead(sentence, c):
                continue
            return None
        lead = words(sentence[clause_start_of(head.start) : head.start])
        return head if all(w in LEADING for w in lead) else None
    return None


def _has_verb_lead(sentence: str, comma: int) -> bool:
    """The text before ``comma`` back to the previous comma (or the start) reads as a clause
    with its own subject: it has a word that is neither a participle nor a small word."""
    lo = sentence.rfind(",", 0, comma) + 1
    ws = words(sentence[lo:comma])
    return not ws or not (participle(ws[0]) or ws[0] in DISCOURSE)


def members_follow(sentence: str, end: int) -> bool:
    """The name ending at ``end`` is followed by its people ("the Ops Team night shift",
    "Control Room operators"): up to two lower-case words, the last naming members."""
    rest = re.match(r"((?:\s+[a-z][\w-]*){1,2})", sentence[end:])
    if not rest:
        return False
    ws = rest.group(1).split()
    for n in (1, 2):
        if len(ws) >= n and ws[n - 1] in MEMBERS and all(w.isalpha() for w in ws[:n]):
            return True
    return False


def modifies_next_noun(sentence: str, end: int, limit: int) -> bool:
    """The name ending at ``end`` is followed, before ``limit``, by a lower-case word that
    can only continue its noun phrase ("the Parts Catalogue updates are …"): not an adverb,
    a preposition ("the Fly Floor above it is …") or a pronoun ("the sheet they use is …")."""
    nxt = next_word(sentence, end)
    if nxt is None or nxt[1] >= limit:
        return False
    word = sentence[nxt[1] : nxt[1] + len(nxt[0])]
    if not word[:1].islower() or members_follow(sentence, end):
        return False
    return nxt[0] not in ADVERBS | PREPOSITIONS | PRONOUNS | RELATIVE_PRONOUNS


def object_ends(sentence: str, end: int) -> bool:
    """An object name ending at ``end`` is the whole object: its noun phrase ends there, or a
    predicative word follows ("needs the dock clear", "requires the form signed by …")."""
    if ends_noun_phrase(sentence, end):
        return True
    nxt = next_word(sentence, end)
    if nxt is None:
        return False
    if nxt[0] in PREDICATIVE | CLASSIFIERS | ADVERBS or participle(nxt[0]):
        return True
    return closes_object(sentence, nxt) or members_follow(sentence, end)


def manner_adverb(word: str) -> bool:
    """An "-ly" adverb ("remotely", "jointly"), not an "-ly" noun or adjective ("supply",
    "assembly", "the monthly report")."""
    if len(word) < 6 or not word.endswith("ly") or word.endswith(("ply", "bly", "ily")):
        return word.endswith("ily") and len(word) > 6  # "easily", "readily", not "daily"
    return word not in NOT_ADVERBS


def closes_object(sentence: str, nxt: tuple[str, int]) -> bool:
    """The word after an object closes it: a manner adverb ("watches X remotely"), a
    subordinator ("X even though …"), or the verb of a small clause ("relies on X being
    restocked", "depends on X capturing the number")."""
    word, at = nxt
    if word in SUBORDINATORS or manner_adverb(word):
        return True
    if re.match(r"(\w+)\s+to\s+\1\b", sentence[at:], re.I):
        return True  # "owns X end to end", "runs X day to day": an adverbial
    if small_clause_follows(sentence, at - 1) or word in ASPECTUAL:
        return True  # "before X starts": the object is the subject of a temporal clause
    if word.endswith("ing") and len(word) > 5:
        after = next_word(sentence, at + len(word))
        return after is not None and (after[0] in LEADING or participle(after[0]))
    return False


def participle(word: str) -> bool:
    """A past participle opening a reduced relative clause ("X, updated weekly, …")."""
    return word.endswith("ed") or word in IRREGULAR_PARTICIPLES


def det_count(text: str) -> int:
    return sum(1 for w in words(text) if w in DETERMINERS)


def object_pronoun(text: str) -> bool:
    """ "it" as an object stands for the entry the text is about ("…, and the crew maintains
    it")."""
    return text.lower() == "it"


def pronoun_object_ends(sentence: str, end: int) -> bool:
    """ "it" right after the phrase ending at ``end`` is its whole object."""
    m = re.match(r"\s*it\b", sentence[end:], re.I)
    return bool(m) and (
        ends_noun_phrase(sentence, end + m.end()) or object_ends(sentence, end + m.end())
    )


def stranded(sentence: str, phrase, nxt: tuple[str, int]) -> bool:
    """A preposition right after a relative clause's verb phrase that already ends in one, or
    a second preposition: the clause's object is its antecedent ("which X relies on for …")."""
    return nxt[0] in PREPOSITIONS and nxt[0] not in {"of", "to"}


def pairs(sentence: str, end: int, subjects: list, objects: list) -> list:
    """Each subject with each object; with "respectively" in the clause after the phrase and
    as many subjects as objects, the n-th subject with the n-th object."""
    rest = re.split(r"[;:]|,\s*but\b", sentence[end:], maxsplit=1)[0]
    if len(subjects) == len(objects) > 1 and "respectively" in words(rest):
        return list(zip(subjects, objects, strict=True))
    return [(s, o) for o in objects for s in subjects]


DASH_ASIDE = re.compile(r"\s[-–—]\s[^-–—]+?\s[-–—]\s|—[^—]+?—")


def without_dash_asides(sentence: str) -> str:
    """The sentence with asides between paired dashes blanked, offsets kept: "The platform
    - the box nobody dares switch off - has been superseded by …" reads "The platform …
    has been superseded by …" (a negation inside the aside is no negation of the verb)."""
    return DASH_ASIDE.sub(lambda m: " " * len(m.group()), sentence)


def after_members(sentence: str, end: int, limit: int) -> str:
    """The text between ``end`` and ``limit`` without the members noun after the name ending
    at ``end`` ("Control room operators and the …" → " and the …")."""
    if members_follow(sentence, end):
        rest = re.match(r"(?:\s+[a-z][\w-]*){1,2}", sentence[end:limit])
        if rest is not None:
            for n in (1, 2):
                words_ = rest.group().split()[:n]
                if words_ and words_[-1] in MEMBERS:
                    cut = sentence.index(words_[-1], end) + len(words_[-1])
                    return sentence[cut:limit]
    return sentence[end:limit]


def small_clause_follows(sentence: str, end: int) -> bool:
    """ "being" or "having" after the name ending at ``end``: the name is the subject of a
    small clause ("relies on Cooler Room A being restocked"), and the whole object."""
    nxt = next_word(sentence, end)
    return nxt is not None and nxt[0] in {"being", "having"}


def head_of_modifier(sentence: str, name: Mention, earlier: list[Mention], lo: int):
    """The name a prepositional phrase modifies: in "Order Picking for produce relies on …"
    the subject is Order Picking, not produce. Only "<name> <preposition> <name>" at the head
    of the clause counts (determiners allowed)."""
    if not earlier or earlier[-1].start < lo:
        return None
    head = earlier[-1]
    ws = words(sentence[head.end : name.start])
    while ws and ws[-1] in LEADING:
        ws.pop()
    if len(ws) != 1 or ws[0] not in PREPOSITIONS - {"by", "to", "from", "like", "unlike"}:
        return None
    lead = words(sentence[lo : head.start])
    return head if all(w in LEADING for w in lead) else None


def temporal_clause(sentence: str, start: int, name: Mention) -> bool:
    """The object of "after/before/until" is the subject of a clause ("comes after the
    Discharge Summary is signed"): the name is the whole object."""
    if not re.search(r"\b(?:after|before|until)\s*$", sentence[:start], re.I):
        return False
    m = re.match(r"\s+(?:is|are|has\s+been|have\s+been)\s+(\w+)", sentence[name.end :])
    return bool(m) and (participle(m.group(1).lower()) or m.group(1).lower() in PREDICATIVE)


ELLIPTICAL = re.compile(
    r"^\s*(?:and\s+|but\s+)?(?:the\s+)?(?P<name>.+?)\s+(?:does|do)(?:\s+(?:too|so))?\s*[.!]?\s*$",
    re.I,
)


def elliptical_subjects(sentence: str, mentions: list[Mention], facts, done):
    """ "Neither A nor B owns the Dock; the Production Manager does": an independent clause
    that is only "<name> does" repeats the last verb phrase before it, with its objects
    (the negation of the first clause is not repeated). Yields (name, (phrase, objects))."""
    for lo, hi in facts:
        m = ELLIPTICAL.match(sentence[lo:hi])
        if not m or lo == 0:
            continue
        start, end = lo + m.start("name"), lo + m.end("name")
        name = next((n for n in mentions if n.start == start and n.end == end), None)
        before = [(p, objects) for p, objects in done if p.end <= lo and objects]
        if name is not None and before:
            yield name, before[-1]


ITEM_LEAD = re.compile(r"^\s*(?:and\s+|or\s+)?(?:\d+[.)]\s*|[-•*]\s+)?(?:(?:the|a|an)\s+)?", re.I)


def colon_items(sentence: str, start: int, mentions: list[Mention]) -> list[tuple[int, int]]:
    """The names that are whole items of the list after a colon at ``start`` ("owns: A, the
    B estate, 2) C" gives A and C): an item that is no name of the bank is passed over, not
    the end of the list."""
    out = []
    stop = re.search(r"[;.!?](?:\s|$)", sentence[start:])
    hi = start + stop.start() if stop else len(sentence)
    for item in re.finditer(r"(?:(?!,|\s(?:and|or|as\s+well\s+as)\s).)+", sentence[start:hi]):
        at = start + item.start() + ITEM_LEAD.match(item.group()).end()
        m = next((m for m in mentions if m.start == at), None)
        if m is not None and not possessor(sentence, m.end) and object_ends(sentence, m.end):
            out.append((m.start, m.end))
    return out


LABEL_LEAD = re.compile(r"^[\s\-•*]*$")


def label_subjects(sentence: str, start: int, end: int, mentions: list[Mention]):
    """A sentence opened by a participle phrase, its agent and a colon ("Owned by the FSO:
    A, B, C."): the items of the list are the phrase's subjects; none otherwise."""
    if not LABEL_LEAD.match(sentence[:start]):
        return []
    agent = next((m for m in mentions if m.start >= end), None)
    if agent is None or words(sentence[end : agent.start]) not in ([], ["the"], ["a"], ["an"]):
        return []
    if not sentence[agent.end :].lstrip().startswith(":"):
        return []
    return colon_items(sentence, sentence.index(":", agent.end) + 1, mentions)


# A capitalised noun phrase kept as a surface form where no name of the bank stands (the local
# extractor's subjects and objects): name-like words, joined by these, at most this many.
NAME_JOINERS = {"of", "for", "&", "de", "-"}
MAX_NAME_WORDS = 6
NAME_LEADING = {"the", "a", "an", "our", "its", "their", "each", "every", "any", "all", "both"}
MAX_LEADING_WORDS = 3


def _name_like(word: str) -> bool:
    return word[:1].isupper() or word[:1].isdigit() or (len(word) > 1 and word.isupper())


def name_run(text: str, offset: int, *, from_end: bool) -> tuple[int, int] | None:
    """The run of name-like words at the end (or the start) of ``text``: offsets in the
    sentence (``offset`` is where ``text`` starts), or None."""
    words = list(WORD.finditer(text))
    if from_end:
        run = []
        for m in reversed(words):
            w = m.group()
            if _name_like(w) or (run and w.lower() in NAME_JOINERS):
                run.insert(0, m)
            else:
                break
    else:
        i = 0
        while i < len(words) and words[i].group().lower() in NAME_LEADING and i < MAX_LEADING_WORDS:
            i += 1
        run = []
        for m in words[i:]:
            w = m.group()
            if _name_like(w) or (run and w.lower() in NAME_JOINERS):
                run.append(m)
            else:
                break
    while run and run[-1].group().lower() in NAME_JOINERS:
        run.pop()
    while run and run[0].group().lower() in NAME_JOINERS:
        run.pop(0)
    if not run or len(run) > MAX_NAME_WORDS:
        return None
    end = run[-1].end()
    return offset + run[0].start(), offset + end - (1 if text[end - 1] == "." else 0)
