"""The HTTP extractor: any OpenAI-compatible chat-completions endpoint (settings: URL, model, key).

The prompt follows ``004_*`` 12.3: only the bank's relations (with their descriptions and
phrases), "do not infer", "do not normalise", and a verbatim supporting span for each
relationship. A second *gleaning* pass (``003_*``) shows the model its own first answer and
asks only for what it missed; both passes are merged, deduplicated by (from, type, to,
span).

Failure handling, so that nothing is half-written: timeouts, connection errors and 5xx are
retried with exponential backoff, 429 answers wait for ``Retry-After`` (capped), malformed
answers (no JSON, wrong shape) are asked again — all within ``KB_EXTRACT_LLM_ATTEMPTS``
attempts per call. When a call still fails, the whole entry fails (:class:`ExtractorError`,
or :class:`RateLimited`), the run queues nothing from it and keeps it for the next run.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from graph.ingest.extract.base import ExtractorError, RateLimited, Statement, Vocabulary
from kb.models import Entry

FIRST_PRIOR, GLEAN_PRIOR = 0.8, 0.7
MAX_DOCUMENT_CHARS = 12000
FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.I)

SYSTEM = """You extract relationships between named things from one document of a knowledge bank.
Use ONLY these relationship types (name: meaning; phrases that state it):
{relations}
Rules:
- Emit a relationship only if the document states it. Do not infer.
- Use each name exactly as written in the document. Do not normalise: do not expand
  abbreviations, change case, or correct spelling.
- For each relationship, quote the span that supports it verbatim, character for character,
  from the document (the title or the text).
- "from" is the subject of the stated relation and "to" its object; "X is owned by Y" gives
  from X, type owned_by, to Y.
- When the document states no relationship, return an empty list.
Answer with JSON only, no prose:
{{"relationships": [{{"from": "<name>", "type": "<type>", "to": "<name>", "evidence": "<quoted span>"}}]}}"""

GLEAN = """Some relationships stated in the document may have been missed in your last answer.
Return ONLY relationships of the allowed types that the document states and that are not in
your previous answer, in the same JSON format; return {"relationships": []} if none were missed.
Do not infer. Do not normalise. Quote each supporting span verbatim."""


@dataclass
class LLMConfig:
    url: str
    model: str
    key: str = ""
    timeout: float = 30.0
    attempts: int = 4
    backoff: float = 1.0  # seconds; doubles per attempt
    max_wait: float = 30.0  # cap on one wait, Retry-After included
    json_mode: bool = True
    gleaning: bool = True

    @classmethod
    def from_settings(cls) -> LLMConfig:
        url = settings.KB_EXTRACT_LLM_URL
        if not url:
            raise ExtractorError(
                "The llm extractor needs KB_EXTRACT_LLM_URL (an OpenAI-compatible endpoint).",
                code="extractor_not_configured",
            )
        return cls(
            url=url,
            model=settings.KB_EXTRACT_LLM_MODEL,
            key=settings.KB_EXTRACT_LLM_KEY or settings.KB_OPENAI_API_KEY,
            timeout=settings.KB_EXTRACT_LLM_TIMEOUT,
            attempts=max(1, settings.KB_EXTRACT_LLM_ATTEMPTS),
            backoff=settings.KB_EXTRACT_LLM_BACKOFF,
            max_wait=settings.KB_EXTRACT_LLM_MAX_WAIT,
            json_mode=settings.KB_EXTRACT_LLM_JSON_MODE,
            gleaning=settings.KB_EXTRACT_LLM_GLEANING,
        )

    @property
    def endpoint(self) -> str:
        url = self.url.rstrip("/")
        return url if url.endswith("/chat/completions") else f"{url}/chat/completions"


class _Malformed(Exception):
    pass


class _Retryable(Exception):
    def __init__(self, message: str, wait: float | None = None, rate_limited: bool = False):
        super().__init__(message)
        self.wait, self.rate_limited = wait, rate_limited


def relation_lines(vocabulary: Vocabulary) -> str:
    lines = []
    for rel in sorted(vocabulary.relations.values(), key=lambda r: r.name):
        said = ", ".join([*rel.phrases, *(f"{p} (reversed)" for p in rel.inverse_phrases)])
        lines.append(f"- {rel.name}: {rel.description or rel.name}" + (f"; {said}" if said else ""))
    return "\n".join(lines)


def document(entry: Entry) -> str:
    content = (entry.content or "")[:MAX_DOCUMENT_CHARS]
    return f"Title: {entry.title}\n\n{content}"


def parse_answer(body: dict) -> list[dict]:
    """The relationships of one chat-completions answer; :class:`_Malformed` if unusable."""
    try:
        content = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise _Malformed("no choices[0].message.content") from exc
    if not isinstance(content, str):
        raise _Malformed("content is not text")
    try:
        data = json.loads(FENCE.sub("", content))
    except json.JSONDecodeError as exc:
        raise _Malformed(f"content is not JSON: {exc.msg}") from exc
    items = data.get("relationships") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise _Malformed("no relationships list")
    return [item for item in items if isinstance(item, dict)]


class LLMExtractor:
    """Two passes over an OpenAI-compatible chat endpoint: see the module docstring."""

    name = "llm"

    def __init__(
        self, config: LLMConfig | None = None, *, sleep: Callable[[float], None] = time.sleep
    ):
        self.config = config or LLMConfig.from_settings()
        self.sleep = sleep
        self.calls = 0  # HTTP requests made (for measurement)

    def extract(self, entry: Entry, vocabulary: Vocabulary) -> list[Statement]:
        messages = [
            {"role": "system", "content": SYSTEM.format(relations=relation_lines(vocabulary))},
            {"role": "user", "content": document(entry)},
        ]
        first, raw = self._ask(messages)
        found = self._statements(first, FIRST_PRIOR, "llm:first")
        if self.config.gleaning:
            messages += [
                {"role": "assistant", "content": raw},
                {"role": "user", "content": GLEAN},
            ]
            more, _ = self._ask(messages)
            found += self._statements(more, GLEAN_PRIOR, "llm:glean")
        unique, seen = [], set()
        for st in found:
            key = (st.from_text.strip().lower(), st.relation, st.to_text.strip().lower(), st.span)
            if key not in seen:
                seen.add(key)
                unique.append(st)
        return unique

    @staticmethod
    def _statements(items: list[dict], prior: float, basis: str) -> list[Statement]:
        out = []
        for item in items:
            values = [item.get(k) for k in ("from", "type", "to", "evidence")]
            if all(isinstance(v, str) and v.strip() for v in values):
                a, rel, b, span = values
                out.append(Statement(span.strip(), rel.strip(), a, b, prior, basis=basis))
        return out

    def _ask(self, messages: list[dict]) -> tuple[list[dict], str]:
        """One chat call with retries; returns (relationships, the raw answer text)."""
        cfg = self.config
        payload = {"model": cfg.model, "messages": messages, "temperature": 0}
        if cfg.json_mode:
            payload["response_format"] = {"type": "json_object"}
        last: Exception | None = None
        rate_limited = False
        for attempt in range(cfg.attempts):
            if attempt:
                wait = cfg.backoff * (2 ** (attempt - 1))
                if isinstance(last, _Retryable) and last.wait is not None:
                    wait = last.wait
                self.sleep(min(max(wait, 0.0), cfg.max_wait))
            try:
                body = self._post(payload)
                items = parse_answer(body)
                return items, body["choices"][0]["message"]["content"]
            except _Retryable as exc:
                last, rate_limited = exc, exc.rate_limited
            except _Malformed as exc:
                last, rate_limited = exc, False
        message = f"The extraction endpoint failed after {cfg.attempts} attempts: {last}."
        if rate_limited:
            raise RateLimited(message)
        raise ExtractorError(message)

    def _post(self, payload: dict) -> dict:
        cfg = self.config
        headers = {"Content-Type": "application/json"}
        if cfg.key:
            headers["Authorization"] = f"Bearer {cfg.key}"
        request = urllib.request.Request(
            cfg.endpoint, data=json.dumps(payload).encode(), headers=headers, method="POST"
        )
        self.calls += 1
        try:
            with urllib.request.urlopen(request, timeout=cfg.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 429:
                raise _Retryable("429 rate limited", _retry_after(exc), rate_limited=True) from exc
            if exc.code >= 500:
                raise _Retryable(f"HTTP {exc.code}") from exc
            raise ExtractorError(
                f"The extraction endpoint refused the request (HTTP {exc.code})."
            ) from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise _Retryable(f"no answer ({exc})") from exc
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _Malformed("the response body is not JSON") from exc
        if not isinstance(body, dict):
            raise _Malformed("the response body is not an object")
        return body


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    value = exc.headers.get("Retry-After") if exc.headers else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
