"""The context bundle (API.md "Context bundle", ``003_*`` context injection): what an agent
should know before it starts a task, as prompt-ready Markdown within a token budget.

It packs, in this order: live claims on the task's subjects (so nobody duplicates work), open
workflow findings that name the bundle's entries, the fold results for the task with their
pointers' one-line notes (the fold query with its lexical arm on, since a task names files,
error strings and flags as often as ideas), and entries anchored to the files and symbols being edited (those
already shown as results are not repeated). Each block is added whole if it fits; a result
that does not fit with its content is tried again without it; anything left out sets
``truncated``. Tokens are counted by the project's one counter (``graph.retrieval.tokens``,
injectable, over the running length of the joined text), so ``tokens`` never exceeds
``budget_tokens``. The same bank state gives the same text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from graph.retrieval.budget import UNBOUNDED
from graph.retrieval.query import QueryParams, run_query
from graph.retrieval.tokens import DEFAULT_COUNTER, TokenCounter
from kb.errors import InvalidInput
from kb.models import Bank, Claim, Entry
from kb.services.claims import live_claims
from kb.services.recall import recall_anchors

DEFAULT_BUDGET = 1500
MIN_BUDGET = 32
MAX_BUDGET = 100_000
DEFAULT_LIMIT = 6
CONTENT_CHARS = 700
MAX_TASK = 2000
JOIN = "\n\n"  # between blocks

# Open workflow findings naming any of the given short ids, contributed by the workflows app
# (graph never imports workflows): each provider answers ``[FindingLine, ...]``.
FindingProvider = Callable[[Bank, list[str]], list["FindingLine"]]
_finding_providers: list[FindingProvider] = []


def register_finding_provider(provider: FindingProvider) -> None:
    """Add a source of open findings to every bundle (idempotent)."""
    if provider not in _finding_providers:
        _finding_providers.append(provider)


@dataclass(frozen=True)
class FindingLine:
    """An open workflow finding as the bundle shows it."""

    id: int
    rule: str
    entries: tuple[str, ...]
    message: str
    process: str


@dataclass
class ContextBundle:
    text: str
    tokens: int
    entries: list[str] = field(default_factory=list)
    truncated: bool = False

    def as_dict(self) -> dict:
        return {
            "text": self.text,
            "tokens": self.tokens,
            "entries": list(self.entries),
            "truncated": self.truncated,
        }


@dataclass
class ContextRequest:
    task: str
    files: list[str]
    symbols: list[str]
    budget_tokens: int
    limit: int


def _strings(value, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"{name} must be a list of strings.", fields={name: "List of strings."})
    if len(value) > 200:
        raise InvalidInput(f"At most 200 {name}.", fields={name: "Too many."})
    return [v.strip() for v in value if v.strip()]


def _int(value, name: str, default: int, low: int, high: int) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidInput(
            f"{name} must be a whole number from {low} to {high}.",
            fields={name: f"Between {low} and {high}."},
        )
    return value


def clean_context_request(body: dict) -> ContextRequest:
    """The request body checked field by field (400 ``invalid_input`` naming the field)."""
    unknown = sorted(set(body) - {"task", "files", "symbols", "budget_tokens", "limit"})
    if unknown:
        raise InvalidInput(
            f"Unknown fields: {', '.join(unknown)}.", fields=dict.fromkeys(unknown, "Unknown.")
        )
    task = body.get("task") or ""
    if not isinstance(task, str) or len(task) > MAX_TASK or "\x00" in task:
        raise InvalidInput(
            f"task must be text of at most {MAX_TASK} characters.", fields={"task": "Invalid."}
        )
    request = ContextRequest(
        task=task.strip(),
        files=_strings(body.get("files"), "files"),
        symbols=_strings(body.get("symbols"), "symbols"),
        budget_tokens=_int(
            body.get("budget_tokens"), "budget_tokens", DEFAULT_BUDGET, MIN_BUDGET, MAX_BUDGET
        ),
        limit=_int(body.get("limit"), "limit", DEFAULT_LIMIT, 1, 20),
    )
    if not (request.task or request.files or request.symbols):
        raise InvalidInput(
            "Give a task, files or symbols to build the context for.",
            fields={"task": "Required without files or symbols."},
        )
    return request


def _one_line(text: str, limit: int = 240) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _pointer_line(pointer: dict) -> str:
    arrow = "→" if pointer["direction"] == "out" else "←"
    note = _one_line(pointer.get("note") or "", 200)
    summary = _one_line(pointer.get("summary") or pointer.get("title") or "", 160)
    line = f"  - {pointer['relation']} {arrow} [{pointer['id']}] {summary}"
    return line + (f" — how it pertains: {note}" if note else "")


def _entry_block(
    head: str, entry: dict, pointers: list[dict], extra: str = "", *, with_content: bool
) -> str:
    lines = [f"### [{entry['id']}] {_one_line(entry['title'], 200)} ({entry['kind']})"]
    if head:
        lines.append(head)
    if entry.get("status") and entry["status"] != "live":
        lines.append(f"Status: {entry['status']}")
    if entry.get("summary"):
        lines.append(_one_line(entry["summary"], 400))
    if entry.get("useful_for"):
        lines.append(f"Use when: {_one_line(entry['useful_for'], 300)}")
    if extra:
        lines.append(extra)
    if with_content and entry.get("content"):
        content = entry["content"].strip()
        if len(content) > CONTENT_CHARS:
            content = content[:CONTENT_CHARS].rstrip() + " …[cut]"
        lines.append(content)
    if entry.get("steps"):
        lines.extend(
            f"{i}. {_one_line(str(step), 200)}" for i, step in enumerate(entry["steps"], 1)
        )
    if pointers:
        lines.append("Related:")
        lines.extend(_pointer_line(p) for p in pointers)
    return "\n".join(lines)


def _claim_line(claim: Claim) -> str:
    note = f" — {_one_line(claim.note, 160)}" if claim.note else ""
    return (
        f"- `{_one_line(claim.subject, 160)}` is claimed by {claim.holder} since "
        f"{claim.since.isoformat(timespec='seconds')} until "
        f"{claim.expires_at.isoformat(timespec='seconds')}{note}"
    )


def _finding_line(finding: FindingLine) -> str:
    ids = ", ".join(finding.entries)
    return (
        f"- {finding.rule} in process “{_one_line(finding.process, 80)}” on [{ids}]: "
        f"{_one_line(finding.message, 240)}"
    )


class _Packer:
    """Adds blocks in order while the joined text stays within the budget. It keeps the text's
    running length (blocks and the blank lines joining them), so the count is exact."""

    def __init__(self, budget: int, counter: TokenCounter):
        self.budget = budget
        self.counter = counter
        self.blocks: list[str] = []
        self.chars = 0
        self.truncated = False

    def _fits(self, block: str) -> bool:
        extra = len(block) + (len(JOIN) if self.blocks else 0)
        return self.counter.tokens_of_chars(self.chars + extra) <= self.budget

    def _push(self, block: str) -> None:
        self.chars += len(block) + (len(JOIN) if self.blocks else 0)
        self.blocks.append(block)

    def _pop(self) -> None:
        block = self.blocks.pop()
        self.chars -= len(block) + (len(JOIN) if self.blocks else 0)

    def add(self, *variants: str) -> bool:
        """Add the first variant that fits; a shortened variant counts as truncation."""
        for i, text in enumerate(variants):
            if self._fits(text):
                self._push(text)
                self.truncated = self.truncated or i > 0
                return True
        self.truncated = True
        return False

    def add_section(self, heading: str, items: list[tuple[str, ...]], keys: list) -> list:
        """A heading and its items; the heading only if at least one item fits. Returns the
        keys of the items that fit."""
        if not items:
            return []
        if not self._fits(heading):
            self.truncated = True
            return []
        self._push(heading)
        fitted = [key for key, variants in zip(keys, items, strict=True) if self.add(*variants)]
        if not fitted:
            self._pop()
        return fitted


def build_context(
    bank: Bank, body: dict, *, actor: str = "", counter: TokenCounter = DEFAULT_COUNTER
) -> ContextBundle:
    """The context bundle for ``body`` (API.md fields: task, files, symbols, budget_tokens)."""
    request = clean_context_request(body)
    found = _gather(bank, request, actor)
    packer = _Packer(request.budget_tokens, counter)
    title = f"# Knowledge Bank context (bank `{bank.slug}`)"
    if request.task:
        title += f"\nTask: {_one_line(request.task, 400)}"
    if request.files or request.symbols:
        title += "\nEditing: " + ", ".join(f"`{x}`" for x in request.files + request.symbols)
    packer.add(title)
    packer.add_section(
        "## Work already claimed (coordinate before starting)",
        [(_claim_line(c),) for c in found.claims],
        [c.pk for c in found.claims],
    )
    packer.add_section(
        "## Open workflow findings on these entries",
        [(_finding_line(f),) for f in found.findings],
        [f.id for f in found.findings],
    )
    included = packer.add_section(
        "## Knowledge for this task (best match first)",
        [
            (
                _entry_block("", r, r["related"] + r["neighbors"], with_content=True),
                _entry_block("", r, r["related"] + r["neighbors"], with_content=False),
                _entry_block("", r, [], with_content=False),
            )
            for r in found.results
        ],
        [r["id"] for r in found.results],
    )
    included += packer.add_section(
        "## Anchored to the files and symbols being edited",
        [_anchored_blocks(hit) for hit in found.anchored],
        [hit.entry.short_id for hit in found.anchored],
    )
    text = JOIN.join(packer.blocks)
    tokens = counter.count(text)
    while tokens > request.budget_tokens and packer.blocks:  # a safety net; sums are exact
        packer.blocks.pop()
        packer.truncated = True
        text = JOIN.join(packer.blocks)
        tokens = counter.count(text)
    return ContextBundle(text=text, tokens=tokens, entries=included, truncated=packer.truncated)


@dataclass
class _Found:
    """What a bundle may show, before packing."""

    results: list[dict]
    anchored: list
    claims: list[Claim]
    findings: list[FindingLine]


def _gather(bank: Bank, request: ContextRequest, actor: str) -> _Found:
    """The fold results for the task, the anchored entries not already among them, the live
    claims on the bundle's subjects and the open findings naming its entries."""
    results: list[dict] = []
    if request.task:
        # The bundle packs to its own budget: the answer comes whole (no content cut, no
        # pointers compacted by the query's default budget).
        params = QueryParams(
            query=request.task, limit=request.limit, lexical=True, budget_tokens=UNBOUNDED
        )
        results = run_query(bank, params, actor=actor)["results"]
    anchored = []
    if request.files or request.symbols:
        anchored = recall_anchors(bank, request.files, request.symbols, limit=request.limit)
    result_ids = [r["id"] for r in results]
    anchored = [hit for hit in anchored if hit.entry.short_id not in result_ids]
    bundle_ids = result_ids + [hit.entry.short_id for hit in anchored]
    entries = list(Entry.objects.filter(bank=bank, short_id__in=bundle_ids).order_by("short_id"))
    subjects = request.files + request.symbols + ([request.task] if request.task else [])
    claims = live_claims(bank, entries=entries, subjects=subjects)
    findings: list[FindingLine] = []
    for provider in _finding_providers:
        findings.extend(provider(bank, bundle_ids))
    findings.sort(key=lambda f: f.id)
    return _Found(results, anchored, claims, findings)


def _anchored_blocks(hit) -> tuple[str, str]:
    """An anchored entry's block with its content, then without."""
    entry = {
        "id": hit.entry.short_id,
        "title": hit.entry.title,
        "kind": hit.entry.kind.name,
        "status": hit.entry.status,
        "summary": hit.entry.summary,
        "useful_for": hit.entry.useful_for,
        "content": hit.entry.content,
        "steps": hit.entry.steps,
    }
    where = "Anchored to: " + ", ".join(f"`{x}`" for x in hit.files + hit.symbols)
    return (
        _entry_block("", entry, [], where, with_content=True),
        _entry_block("", entry, [], where, with_content=False),
    )
