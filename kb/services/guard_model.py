"""The learning guard's classifier: a logistic regression over the text's MiniLM embedding and
the linguistic signals of :mod:`kb.services.guard_signals`.

The weights live in ``guard_model.npz`` beside this file, trained by ``bench/guard.py --train``
on the labelled sets in ``bench/data`` (``TRAINING_FILES``). The file also keeps the embeddings
and texts of the labelled session reports, so a refusal can name the examples it is closest to.
When the local model cannot be loaded the guard falls back to a second regression over the
signals alone (trained on the same sets), so a write never fails on the guard.

Training is Newton's method on an L2-regularised logistic loss: deterministic, no randomness.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from kb.services.guard_signals import FEATURES, signals

logger = logging.getLogger(__name__)

MODEL_PATH = Path(__file__).with_name("guard_model.npz")
TRAINING_FILES = ("guard_labelled.jsonl", "guard_heldout.jsonl", "guard_extra.jsonl")
# Regularisation of the embedding dimensions and of the signals, and the refusal threshold on
# the predicted probability; chosen by cross-validation across the training files.
LAMBDA_EMBEDDING = 0.1
LAMBDA_SIGNALS = 0.1
THRESHOLD = 0.6
THRESHOLD_SIGNALS_ONLY = 0.7
THRESHOLD_UNSIGNALLED = 0.8
NEAREST = 2
# The classifier reads the opening of a text: MiniLM sees 256 word pieces (about 1,200
# characters) and the signals cost ~20 µs a character, so a 2 MB entry is judged in
# milliseconds, not seconds. The hard rules still read the whole text.
CLASSIFIED_CHARS = 2000
NEAREST_MIN_SIMILARITY = 0.3


def fit(x: np.ndarray, y: np.ndarray, lambdas: np.ndarray, iterations: int = 100) -> np.ndarray:
    """Weights (the last one the bias) of an L2-regularised logistic regression."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    reg = np.diag(np.r_[lambdas, 0.0])
    w = np.zeros(d + 1)
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        gradient = xb.T @ (p - y) + reg @ w
        hessian = (xb * (p * (1 - p))[:, None]).T @ xb + reg
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w


def probability(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(x @ w[:-1] + w[-1])))


def feature_matrix(texts: list[str]) -> np.ndarray:
    return np.array([signals(text)[0] for text in texts], dtype=np.float64)


def lambdas(with_embedding: bool, dimension: int = 384) -> np.ndarray:
    signal_part = np.full(len(FEATURES), LAMBDA_SIGNALS)
    if not with_embedding:
        return signal_part
    return np.r_[np.full(dimension, LAMBDA_EMBEDDING), signal_part]


def data_hash(rows: list[dict]) -> str:
    payload = json.dumps([[r["text"], r["label"]] for r in rows], ensure_ascii=False)
    return hashlib.sha256((payload + "|" + ",".join(FEATURES)).encode()).hexdigest()


def train(rows: list[dict], vectors: np.ndarray) -> dict[str, np.ndarray]:
    """The arrays of a model file, trained on ``rows`` (``text``, ``label``) and their vectors."""
    texts = [row["text"] for row in rows]
    y = np.array([row["label"] == "refuse" for row in rows], dtype=np.float64)
    features = feature_matrix(texts)
    refuse = y == 1
    return {
        "w_full": fit(np.hstack([vectors, features]), y, lambdas(True, vectors.shape[1])),
        "w_signals": fit(features, y, lambdas(False)),
        "reference_vectors": vectors[refuse].astype(np.float16),
        "reference_texts": np.array([t for t, r in zip(texts, refuse, strict=True) if r]),
        "features": np.array(FEATURES),
        "data_hash": np.array(data_hash(rows)),
    }


@dataclass
class Model:
    w_full: np.ndarray
    w_signals: np.ndarray
    reference_vectors: np.ndarray
    reference_texts: list[str]
    data_hash: str

    @classmethod
    def of(cls, data) -> Model:
        """The model of the arrays :func:`train` returns (or a loaded model file)."""
        if [str(name) for name in data["features"]] != FEATURES:
            raise ValueError("The guard model was trained on other signals; retrain it.")
        return cls(
            w_full=data["w_full"],
            w_signals=data["w_signals"],
            reference_vectors=data["reference_vectors"].astype(np.float32),
            reference_texts=[str(t) for t in data["reference_texts"]],
            data_hash=str(data["data_hash"]),
        )

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> Model:
        with np.load(path, allow_pickle=False) as data:
            return cls.of(data)


@lru_cache(maxsize=1)
def model() -> Model:
    return Model.load()


_embedder = None
_embedder_lock = threading.RLock()
_embedder_failed = False


def _embed(text: str) -> np.ndarray | None:
    """The MiniLM vector of ``text``, or None when the local model cannot be loaded."""
    global _embedder, _embedder_failed
    if _embedder_failed:
        return None
    from kb.services.embedding import (
        EmbedderError,
        HashingEmbedder,
        MiniLMEmbedder,
        get_embedder,
        remembered_vector,
    )

    try:
        configured = get_embedder()
    except EmbedderError:
        configured = None  # a misconfigured remote embedder: the guard still has MiniLM
    if isinstance(configured, HashingEmbedder):
        return None  # the unit-test-only embedder: no model is loaded, signals judge alone
    remembered = remembered_vector(MiniLMEmbedder.name, text)  # the write's one forward pass
    if remembered is not None:
        return np.asarray(remembered, dtype=np.float64)
    try:
        if _embedder is None:
            with _embedder_lock:
                if _embedder is None:
                    from kb.services.embedding import MiniLMEmbedder

                    _embedder = (
                        configured if isinstance(configured, MiniLMEmbedder) else MiniLMEmbedder()
                    )
        with _embedder_lock:
            return np.asarray(_one_thread(_embedder.embed, text), dtype=np.float64)
    except Exception:  # noqa: BLE001 - the guard must never fail a write; it degrades instead
        logger.exception("The guard could not embed with MiniLM; it judges by its signals alone.")
        _embedder_failed = _embedder is None  # a model that never loaded is not retried
        return None


def _one_thread(embed, text: str) -> list[float]:
    """Embed one short text on one intra-op thread: on a busy 2-core box torch's thread pool
    spins against other processes and one sentence took 0.5 s on two threads, 45 ms on one.
    The process-wide setting is restored at once (callers hold ``_embedder_lock``)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return embed([text])[0]
    finally:
        torch.set_num_threads(previous)


@dataclass
class Verdict:
    probability: float
    threshold: float
    signals: list[str] = field(default_factory=list)
    nearest: list[tuple[str, float]] = field(default_factory=list)
    with_embedding: bool = True
    explained: bool = True

    @property
    def refused(self) -> bool:
        return self.probability >= self.threshold and self.explained


def judge(
    text: str,
    vector: np.ndarray | None = None,
    *,
    use_embedding: bool = True,
    with_model: Model | None = None,
) -> Verdict:
    """The classifier's verdict on ``text``; ``vector`` skips embedding when already known,
    ``with_model`` replaces the shipped model (cross-validation)."""
    m = with_model if with_model is not None else model()
    text = text[:CLASSIFIED_CHARS]
    features, quoted = signals(text)
    features = np.asarray(features, dtype=np.float64)
    if vector is None and use_embedding:
        vector = _embed(text)
    if vector is None:
        p = float(probability(m.w_signals, features))
        verdict = Verdict(p, THRESHOLD_SIGNALS_ONLY, [q for _n, q in quoted], with_embedding=False)
        verdict.explained = bool(verdict.signals)
        return verdict
    p = float(probability(m.w_full, np.r_[vector, features]))
    verdict = Verdict(p, THRESHOLD, [q for _n, q in quoted])
    similarity = m.reference_vectors @ vector.astype(np.float32)
    best = np.argsort(-similarity, kind="stable")[:NEAREST]
    nearest = [(m.reference_texts[i], round(float(similarity[i]), 2)) for i in best]
    # A refusal needs a reason to give: a signal that fired, or labelled reports that are
    # alike (cosine >= 0.3) and a score >= 0.8. The embedding alone at 0.6 refused terse
    # descriptions ("How a release reaches production.").
    verdict.nearest = [pair for pair in nearest if pair[1] >= NEAREST_MIN_SIMILARITY]
    if not verdict.signals:
        # Without a signal to quote, only alike examples and a higher score can refuse.
        verdict.threshold = THRESHOLD_UNSIGNALLED
        verdict.explained = bool(verdict.nearest)
    return verdict
