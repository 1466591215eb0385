"""One write, one forward pass: the texts a write needs vectors for (the guard's statement, the
duplicate check's and the write feedback's content text, the entry's three search dimensions)
are embedded together when the write starts; within it, ``embed_query``, ``embed_entries`` and
the guard read them from this memo instead of running the model again.

In the background (``one_forward_pass(texts, background=True)``) the model runs in a thread of
its own while the write does its database work; the first step that reads a vector waits for
the pass. The model releases the interpreter while it computes, so a learning's statements and
its model pass overlap instead of taking turns.

A pass may run in stages (``one_forward_pass([[a], [b, c], [d]], background=True)``): one model
call per stage, in order, on the one thread; a reader waits only for the stage that holds its
text. A learning embeds its content text first, so the nearest-entries statement (the duplicate
check, the feedback) runs while the model computes the rest (issue 24, fifth round).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kb.services.embedding import Embedder, QueryVector

logger = logging.getLogger(__name__)

Memo = dict[tuple[str, str], "QueryVector"]


class _Stage:
    """One model call of a pass: its texts' vectors, at hand or being computed by a thread."""

    __slots__ = ("_future", "_memo", "texts")

    def __init__(self, texts: frozenset[str], memo: Memo | None = None, future=None):
        self.texts, self._memo, self._future = texts, memo, future

    def vectors(self, timeout: float | None = None) -> Memo:
        """The stage's vectors (waits for the thread when it has not finished)."""
        if self._memo is None:
            self._memo = self._future.result(timeout=timeout)
        return self._memo


class _Pass:
    """The vectors of one write's forward pass, in stages: a reader waits for the stage that
    holds its text, not for the whole pass."""

    __slots__ = ("_embedder", "_stages")

    def __init__(self, embedder_name: str, stages: list[_Stage]):
        self._embedder, self._stages = embedder_name, stages

    def _holding(self, embedder_name: str, text: str) -> _Stage | None:
        if embedder_name != self._embedder:
            return None
        return next((stage for stage in self._stages if text in stage.texts), None)

    def vector(self, embedder_name: str, text: str) -> QueryVector | None:
        """``text``'s vector (None when it is not in the pass or its stage failed), once the
        stage that holds it has run."""
        stage = self._holding(embedder_name, text)
        return stage.vectors().get((embedder_name, text)) if stage is not None else None

    def vectors(self, timeout: float | None = None) -> Memo:
        """Every stage's vectors (waits for the whole pass; ``timeout`` bounds the whole wait,
        not each stage's)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        memo: Memo = {}
        for stage in self._stages:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            memo.update(stage.vectors(left))
        return memo

    def abandon(self) -> None:
        """The write ended: a stage that has not started is not run."""
        for stage in self._stages:
            if stage._future is not None:
                stage._future.cancel()


_WRITE_PASS: ContextVar[_Pass | None] = ContextVar("kb_write_pass", default=None)

# One thread computes the background passes of this process, one at a time (the model session
# serialises its runs anyway); created at the first background pass.
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kb-write-pass")
        return _POOL


def _forget_pool() -> None:
    """In a forked child the parent's thread does not exist: start a pool of its own."""
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def _compute(embedder: Embedder, wanted: list[str]) -> Memo:
    """The memo of ``wanted`` (empty when the embedder fails: each step then embeds or degrades
    on its own, as without a pass)."""
    from kb.services.embedding import EmbedderError, QueryVector

    if not wanted:
        return {}
    try:
        vectors = embedder.embed(wanted)
    except EmbedderError:
        logger.exception("embedding: the write's forward pass failed; steps embed alone")
        return {}
    return {(embedder.name, t): QueryVector(v) for t, v in zip(wanted, vectors, strict=True)}


@contextmanager
def one_forward_pass(
    texts: Iterable[str | Sequence[str]],
    embedder: Embedder | None = None,
    *,
    background: bool = False,
) -> Iterator[_Pass]:
    """Embed ``texts`` in one model call; inside the block their vectors are reused by
    ``embed_query``, ``embed_entries`` and the guard. ``background``: the call runs in a thread
    while the block goes on, and the first reader of a vector waits for it.

    ``texts`` may also be given in stages (each item a sequence of texts, in the order the
    write reads them): one model call per stage, in that order, and a reader waits only for
    the stage holding its text, so the write's first statement that needs a vector starts
    while the model computes the next stage's. A text of an earlier stage is not embedded
    again."""
    from kb.services.embedding import get_embedder

    embedder = embedder or get_embedder()
    items = list(texts)
    if all(isinstance(item, str) for item in items):
        groups = [items]  # a flat list of texts: one stage
    else:
        groups = [[item] if isinstance(item, str) else list(item) for item in items]
    stages: list[list[str]] = []
    seen: set[str] = set()
    for group in groups:
        wanted = [t for t in dict.fromkeys(group) if t and t.strip() and t not in seen]
        seen.update(wanted)
        if wanted:
            stages.append(wanted)
    if background:
        made = [_Stage(frozenset(w), future=_pool().submit(_compute, embedder, w)) for w in stages]
    else:
        made = [_Stage(frozenset(w), memo=_compute(embedder, w)) for w in stages]
    memo = _Pass(embedder.name, made)
    token = _WRITE_PASS.set(memo)
    try:
        yield memo
    finally:
        _WRITE_PASS.reset(token)
        memo.abandon()


def remembered_vector(embedder_name: str, text: str) -> QueryVector | None:
    """``text``'s vector from the current write's forward pass, if it was in it (waits only
    for the stage that holds it)."""
    memo = _WRITE_PASS.get()
    return memo.vector(embedder_name, text) if memo is not None else None


def in_forward_pass(embedder_name: str, texts: Iterable[str]) -> bool:
    """True inside :func:`one_forward_pass` when every non-blank text of ``texts`` is in it
    (waits for the stages that hold them)."""
    memo = _WRITE_PASS.get()
    if memo is None:
        return False
    return all(memo.vector(embedder_name, t) is not None for t in texts if t.strip())


def embed_remembering(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """``embedder.embed(texts)``, taking the texts of the current forward pass from its memo
    (the others in one call; none when all are remembered)."""
    out: list[list[float] | None] = [remembered_vector(embedder.name, t) for t in texts]
    missing = [i for i, vector in enumerate(out) if vector is None]
    if missing:
        for i, vector in zip(missing, embedder.embed([texts[i] for i in missing]), strict=True):
            out[i] = vector
    return out  # type: ignore[return-value]
