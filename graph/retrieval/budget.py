"""Economy of a query answer (issue 16 item 3): every text field bounded, and a token budget
the whole response honours.

Tokens are counted by the project's one counter (:mod:`graph.retrieval.tokens`, injectable)
over the characters of the JSON as the REST API sends it (compact separators, no ASCII
escaping, U+2028/U+2029 escaped); the MCP server sends the same text.

The budget is met by a ladder of cuts, each applied from the last result up and stopping as
soon as the body fits, ordered so that what an agent can read again in one call (content,
steps: ``GET .../entries?ids=``) goes before what it could not find again (the ids and
relations of the pointers):

1. result content to a short head (then the content of expanded pointers);
2. pointer texts over 160 characters shortened, a summary that repeats the title emptied;
3. result content and steps entirely, pointers' expanded content and steps;
4. the results' ``useful_for``, long summaries shortened;
5. pointer summaries emptied (the title says what it is), notes and titles shortened;
6. pointer notes and titles to a few words, notes of links emptied;
7. pointers moved, one at a time, from ``related`` / ``neighbors`` / ``links`` to the
   result's ``compact_pointers`` (``"<id> <relation> <in|out> <folded|neighbor|link>"``);
8. results' summaries emptied, titles shortened.

Only when ids alone do not fit does anything leave the answer: whole results from the last
while the results would not fit even without pointers (``stats.results_cut``; their pointers
count as dropped), then compact pointers from the last result up
(``stats.dropped_pointers``), and last of all the echoed query. Every cut text ends with a marker; a result whose content or steps were cut, and a
pointer whose expanded content or steps were, says ``truncated: true``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring

from graph.retrieval.tokens import DEFAULT_COUNTER, TokenCounter

MARKER = " …[truncated]"  # ends content (and any text cut to its hard limit)
ELLIPSIS = "…"  # ends a short text (note, title, summary) shortened to fit a budget
MIN_BUDGET_TOKENS = 200
UNBOUNDED = 200_000  # the largest budget a request may ask (callers that pack on their own)
DEFAULT_BUDGET_PER_RESULT = 250  # tokens: the default answer of 8 results fits 2,000
DEFAULT_BUDGET_FLOOR = 800  # tokens: the least a default budget allows (limits of 1–3)
CONTENT_FLOOR = 280  # characters of content kept before content goes entirely
FIELD_LIMITS = {"title": 300, "summary": 400, "useful_for": 400, "note": 400, "content": 20_000}
POINTER_LISTS = ("related", "neighbors", "links")
COMPACT = "compact_pointers"


# One encoder for every rendering (json.dumps builds a new one per call when given options).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# ``JSONEncoder.encode`` makes a new C encoder (``c_make_encoder``) on every call, a visible
# share of rendering one pointer or hop line; this one is made once, with the arguments
# ``_ENCODER.iterencode`` passes it (no circular-reference bookkeeping: a body is a tree).
_C_ENCODE = (
    c_make_encoder(None, _ENCODER.default, encode_basestring, None, ":", ",", False, False, True)
    if c_make_encoder is not None
    else None
)


def render(body: object) -> str:
    """The JSON text an agent receives (the REST renderer's and the MCP server's)."""
    if _C_ENCODE is None or type(body) is str:
        return _ENCODER.encode(body)
    return "".join(_C_ENCODE(body, 0))


def _sent_chars(text: str) -> int:
    """Characters of rendered JSON ``text`` as sent (U+2028/U+2029 go as ``\\u2028``)."""
    if text.isascii():  # a flag of the string, no scan: most texts, and every id and note head
        return len(text)
    return len(text) + 5 * (text.count("\u2028") + text.count("\u2029"))


def _text_chars(value: str) -> int:
    """:func:`_chars` of a string (the ladder's texts: no type test)."""
    return _sent_chars(encode_basestring(value))


def _chars(value: object) -> int:
    if type(value) is str:
        return _text_chars(value)
    if type(value) is bool:  # the ladder's ``truncated`` (the encoder's whole path otherwise)
        return 4 if value else 5
    return _sent_chars(render(value))


def char_count(value: object) -> int:
    """Characters of ``value`` as an agent receives it (rendered JSON)."""
    return _chars(value)


def estimate_tokens(body: object, counter: TokenCounter = DEFAULT_COUNTER) -> int:
    """Tokens of a JSON body as an agent receives it."""
    return counter.tokens_of_chars(_chars(body))


def cut(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[: max(0, limit - len(MARKER))].rstrip() + MARKER, True


def clip(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, cut at a word where one is near, ending in
    an ellipsis; "" when ``limit`` leaves no room for a word. A cut text is always a head of
    ``text`` and the ellipsis (:func:`_texts` counts its size change from that)."""
    if len(text) <= limit:
        return text
    if limit < 8:
        return ""
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space >= limit * 2 // 3:
        head = head[:space]
    return head.rstrip(" ,;:.-") + ELLIPSIS


def bound_fields(item: dict) -> None:
    """Cap every text field of a result or pointer; cut content sets ``truncated``."""
    _bound_texts(item)
    for sub in POINTER_LISTS:
        for pointer in item.get(sub) or ():
            if "related" in pointer or "neighbors" in pointer or "links" in pointer:
                bound_fields(pointer)
            else:  # a pointer holds no pointers: its texts alone
                _bound_texts(pointer)


def _bound_texts(item: dict) -> None:
    for name, limit in _FIELD_LIMITS:
        value = item.get(name)
        if isinstance(value, str) and len(value) > limit:  # else cut() keeps it as it is
            item[name], was_cut = cut(value, limit)
            if was_cut and name == "content":
                item["truncated"] = True


_FIELD_LIMITS = tuple(FIELD_LIMITS.items())


# --- the ladder: each rung cuts one result (and its pointers) in place ---------------------
# A rung returns how many characters of the rendered body its edits changed, computed from
# the edited values alone (:func:`_put`, :func:`_remove`), so the ladder never re-renders a
# result to learn its new size (tests/graph/test_answer_budget.py checks every delta).


def _key_chars(key: str) -> int:
    return len(key) + 4  # ,"key":  (keys are ASCII; a holder always has other keys)


def _put(holder: dict, key: str, value: object) -> int:
    """``holder[key] = value``; the change in rendered characters."""
    if key in holder:
        old = holder[key]
        if type(old) is type(value) and old == value:
            return 0
        holder[key] = value
        if type(value) is str and type(old) is str:
            return _text_chars(value) - _text_chars(old)
        return _chars(value) - _chars(old)
    holder[key] = value
    return _key_chars(key) + _chars(value)


def _remove(holder: dict, key: str) -> tuple[object, int]:
    """``holder.pop(key, None)`` and the change in rendered characters."""
    if key not in holder:
        return None, 0
    value = holder.pop(key)
    return value, -(_key_chars(key) + _chars(value))


def _pointers(item: dict) -> list[dict]:
    return [*item.get("related", ()), *item.get("neighbors", ())]


def _shorten(holder: dict, keep: int, excess: int) -> int:
    """Cut ``holder``'s content towards ``keep`` characters, no more than ``excess`` asks."""
    content = holder.get("content")
    if not content:
        return 0
    text = content[: -len(MARKER)] if content.endswith(MARKER) else content
    if len(text) <= keep and not (keep == 0 and text):
        return 0
    new_len = max(keep, len(text) - max(excess, 0) - len(MARKER))
    delta = _put(holder, "content", text[:new_len].rstrip() + MARKER if new_len > 0 else "")
    return delta + _put(holder, "truncated", True)


def _content_head(item: dict, excess: int, _report: dict) -> int:
    delta = _shorten(item, CONTENT_FLOOR, excess)
    for pointer in reversed(_pointers(item)):
        delta += _shorten(pointer, CONTENT_FLOOR, excess)
    return delta


def _texts(holders: list[dict], limits: dict[str, int]) -> int:
    delta = 0
    for name, limit in limits.items():  # each field is cut on its own: any order gives the same
        long = [(h, v) for h in holders if isinstance(v := h.get(name), str) and len(v) > limit]
        for holder, value in long:
            # what _put does, without its checks: the key is there and the text changes
            holder[name] = short = clip(value, limit)
            # ``short`` is a head of ``value`` and an ellipsis (or ""); JSON escapes character
            # by character, so the change is the ellipsis less what was cut: one text rendered
            delta += 3 - _text_chars(value[len(short) - 1 :]) if short else 2 - _text_chars(value)
    return delta


def _pointer_texts(item: dict, _excess: int, _report: dict) -> int:
    pointers = _pointers(item)
    delta = _texts(pointers, {"summary": 160, "title": 160})
    for pointer in pointers:
        summary = pointer.get("summary")
        if summary and summary == pointer.get("title"):
            delta += _put(pointer, "summary", "")  # the title already says it
    return delta


def _content_off(item: dict, _excess: int, _report: dict) -> int:
    """Results' content and steps go; pointers' steps go; an expanded pointer keeps the head
    of its content (the request asked for it) until :func:`_expanded_off`."""
    delta = _shorten(item, 0, 1 << 30)
    if item.get("steps"):
        delta += _put(item, "steps", []) + _put(item, "truncated", True)
    for pointer in _pointers(item):
        steps, removed = _remove(pointer, "steps")
        delta += removed
        if steps:
            delta += _put(pointer, "truncated", True)
    return delta


def _terse_result(item: dict, _excess: int, _report: dict) -> int:
    return _put(item, "useful_for", "") + _texts([item], {"summary": 160})


def _terse_pointers(item: dict, _excess: int, _report: dict) -> int:
    pointers = _pointers(item)
    delta = sum(_put(pointer, "summary", "") for pointer in pointers)
    return delta + _texts(pointers, {"title": 80})


def _bare_result(item: dict, _excess: int, _report: dict) -> int:
    return _put(item, "summary", "") + _texts([item], {"title": 60})


def _short_notes(item: dict, _excess: int, _report: dict) -> int:
    """Notes go last: first to 160 characters (100 for hop lines and links)."""
    delta = _texts(_pointers(item), {"note": 160})
    return delta + _texts([*item.get("links", ()), *item.get("hops", ())], {"note": 100})


def _bare_pointers(item: dict, _excess: int, _report: dict) -> int:
    delta = _texts(_pointers(item), {"note": 64, "title": 48})
    return delta + _texts([*item.get("links", ()), *item.get("hops", ())], {"note": 48})


NOTE_WORDS = 6  # a compact pointer keeps this many words of its note


def note_head(note: str) -> str:
    words = note.split()
    head = " ".join(words[:NOTE_WORDS])
    return clip(head, 48) + (ELLIPSIS if len(words) > NOTE_WORDS and len(head) <= 48 else "")


def compact_form(pointer: dict, kind: str) -> str:
    """``"<id> <relation> <in|out> <kind>"``, then ``": "`` and the note's first words."""
    short = f"{pointer['id']} {pointer['relation']} {pointer['direction']} {kind}"
    note = note_head(pointer.get("note") or "")
    return f"{short}: {note}" if note else short


def _move_to_compact(item: dict, sub: str, excess: int, report: dict, expanded: bool) -> int:
    """Move pointers of ``sub``, last first, into ``compact_pointers`` until ``excess`` is
    saved; expanded pointers (they carry ``content``) only when ``expanded``."""
    saved = delta = 0
    items = item.get(sub) or []
    index = len(items) - 1
    while index >= 0 and saved < excess:
        if "content" in items[index] and not expanded:
            index -= 1
            continue
        pointer = items.pop(index)
        index -= 1
        kind = "link" if sub == "links" else pointer.get("kind", sub)
        short = compact_form(pointer, kind)
        if COMPACT not in item:
            delta += _put(item, COMPACT, [])
        compact = item[COMPACT]
        pointer_chars, short_chars = _chars(pointer), _chars(short)
        # a list loses an element and its comma (none when it was alone), the other gains
        delta += short_chars + (1 if compact else 0) - pointer_chars - (1 if items else 0)
        compact.insert(0, short)
        saved += pointer_chars - short_chars
        report["pointers_compacted"] += 1
    return delta


def _compact_links(item: dict, excess: int, report: dict) -> int:
    return _move_to_compact(item, "links", excess, report, expanded=True)


def _compact(item: dict, excess: int, report: dict) -> int:
    """Move pointers, last first (expanded ones kept), into ``compact_pointers``."""
    delta = _move_to_compact(item, "neighbors", excess, report, expanded=False)
    return delta + _move_to_compact(item, "related", excess + delta, report, expanded=False)


def _expanded_off(item: dict, excess: int, report: dict) -> int:
    """Last of the texts: expanded pointers' content, then those pointers compacted too."""
    delta = sum(_shorten(pointer, 0, 1 << 30) for pointer in _pointers(item))
    for sub in ("neighbors", "related"):
        delta += _move_to_compact(item, sub, excess + delta, report, expanded=True)
    return delta


def _trim_hops(keep: int) -> Callable[[dict, int, dict], int]:
    def trim_hops(item: dict, excess: int, report: dict) -> int:
        """Hop lines go from the last, whole (a kept line keeps its note), down to ``keep``."""
        hops = item.get("hops")
        if not hops:
            return 0
        delta = 0
        while len(hops) > keep and -delta < excess:
            hop = hops.pop()
            delta -= _chars(hop) + (1 if hops else 0)
            report["hops_cut"] = report.get("hops_cut", 0) + 1
        if not hops:
            delta += _remove(item, "hops")[1]
        return delta

    trim_hops.__name__ = f"trim_hops_to_{keep}"
    return trim_hops


RUNGS: list[Callable[[dict, int, dict], int]] = [
    _content_head,
    _pointer_texts,
    _content_off,
    _terse_result,
    _terse_pointers,
    _bare_result,
    _short_notes,
    _bare_pointers,
    _trim_hops(3),
    _compact_links,
    _compact,
    _trim_hops(0),
    _expanded_off,
]


def pointer_count(item: dict) -> int:
    return sum(len(item.get(sub) or ()) for sub in (*POINTER_LISTS, COMPACT))


def fit_budget(body: dict, budget: int, counter: TokenCounter = DEFAULT_COUNTER) -> dict:
    """Cut ``body`` in place until it fits ``budget`` tokens (the ladder above). Returns the
    figures for ``stats``."""
    return fit_budget_sized(body, budget, counter)[0]


def fit_budget_sized(
    body: dict, budget: int, counter: TokenCounter = DEFAULT_COUNTER
) -> tuple[dict, int]:
    """:func:`fit_budget`, also returning the rendered size of the fitted body in characters.
    The body is rendered once, before the ladder: the rungs report their own size changes,
    so the size after them is known without rendering it again (only when ids alone do not
    fit is it rendered more)."""
    report = {
        "contents_cut": 0,
        "results_cut": 0,
        "pointers_compacted": 0,
        "dropped_pointers": 0,
        "hops_cut": 0,
    }
    results = body["results"]
    limit = counter.chars_of_tokens(budget)
    size = _chars(body)
    bodies = [(item.get("content"), item.get("steps")) for item in results]
    for rung in RUNGS:
        for index in range(len(results) - 1, -1, -1):
            if size <= limit:
                break
            size += rung(results[index], size - limit, report)
    report["contents_cut"] = sum(
        1
        for item, was in zip(results, bodies, strict=True)
        if (item["content"], item["steps"]) != was
    )
    if size > limit:
        _drop_ids(body, limit, report)
        size = _fit_query(body, limit)
    return report, size


def settle_tokens(
    body: dict, stats: dict, counter: TokenCounter = DEFAULT_COUNTER, *, size: int | None = None
) -> None:
    """Set ``stats["tokens"]`` to the tokens of ``body`` including that figure itself, with
    one rendering (none when the caller knows the body's ``size`` in characters): only the
    figure's digits change between the candidates."""
    figure = stats["tokens"]
    chars = (_chars(body) if size is None else size) - len(str(figure))
    for _ in range(8):
        tokens = counter.tokens_of_chars(chars + len(str(figure)))
        if tokens == figure:
            break
        figure = tokens
    stats["tokens"] = figure


def _drop_ids(body: dict, limit: int, report: dict) -> None:
    """Ids alone do not fit. Whole results go from the last while the results would not fit
    even without any compact pointer; then compact pointers go from the last result up."""
    results = body["results"]
    size = _chars(body)
    compact = sum(_chars(item.get(COMPACT) or []) - 2 for item in results)
    while results and size - compact > limit:
        item = results.pop()
        size = _chars(body)
        compact -= _chars(item.get(COMPACT) or []) - 2
        report["dropped_pointers"] += pointer_count(item)
        report["results_cut"] += 1
    for item in reversed(results):
        short = item.get(COMPACT)
        while short and size > limit:
            before = _chars(short)
            short.pop()
            size -= before - _chars(short)
            report["dropped_pointers"] += 1
        if short == []:
            del item[COMPACT]
            size -= len(f',"{COMPACT}":[]')


def _fit_query(body: dict, limit: int) -> int:
    """Last resort (no result left, a very long question): shorten the echoed query. Returns
    the body's size in characters."""
    for _ in range(8):
        size = _chars(body)
        if size <= limit:
            return size
        body["query"] = clip(body["query"], max(0, len(body["query"]) - (size - limit) - 1))
    return _chars(body)
