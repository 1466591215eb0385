"""The model runtime: the ONNX export of all-MiniLM-L6-v2 gives the PyTorch model's vectors,
the export is idempotent, and a missing export falls back to PyTorch with a log line."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from kb.services.embedding import MiniLMEmbedder
from kb.services.onnx_minilm import (
    MODEL_NAME,
    export_is_current,
    export_model,
    load_onnx_minilm,
)

pytestmark = pytest.mark.model

# A sample across the shapes the bank embeds: questions, titles, identifiers, prose past the
# model's 256-token window, other scripts, a single character and an empty string.
SAMPLE = [
    "How do I rotate the staging database credentials without downtime?",
    "Playwright login fixture: clear cookies before reading lk_csrf on staging-eu",
    "ERR_TLS_CERT_ALTNAME_INVALID when the payments webhook calls the reports service",
    "service:settlement-connector depends_on service:ledger",
    "x",
    "",
    "Ärger mit Umlauten, 日本語のテキスト, emoji 🚀 and café",
    "The nightly export retries three times, then pages the on-call engineer. " * 40,
    "decision: we keep one Redis per region because cross-region latency broke the locks",
    "libssl3 provides the TLS implementation used by curl, wget and python3.11",
] + [
    f"Entry {i}: the {i % 5}th recipe for deploying the billing service to region {i}"
    for i in range(30)
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from kb.services.onnx_minilm import default_model_dir

    path, _ = export_model(default_model_dir())  # a no-op when set-up already exported it
    return path.parent


def test_onnx_vectors_match_pytorch_per_text(settings, exported):
    settings.KB_ONNX_MODEL_DIR = str(exported)
    onnx = MiniLMEmbedder(runtime="onnx")
    torch = MiniLMEmbedder(runtime="torch")
    a = np.asarray(onnx.embed(SAMPLE))
    b = np.asarray(torch.embed(SAMPLE))
    assert onnx.runtime == "onnx" and torch.runtime == "torch"
    assert a.shape == b.shape == (len(SAMPLE), 384)
    cosines = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    worst = int(np.argmin(cosines))
    assert cosines.min() >= 0.999, f"text {worst} {SAMPLE[worst][:40]!r}: {cosines[worst]}"
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-4)


def test_batching_does_not_change_a_vector(settings, exported):
    settings.KB_ONNX_MODEL_DIR = str(exported)
    model = load_onnx_minilm(exported, threads=1, batch_size=7)
    alone = np.stack([model.encode([text])[0] for text in SAMPLE[:12]])
    batched = model.encode(SAMPLE[:12])
    assert np.abs(alone - batched).max() < 1e-4


def test_batches_keep_within_the_budget_and_similar_lengths(exported):
    model = load_onnx_minilm(exported, threads=1, batch_size=32, token_budget=4096)
    lengths = [256] * 40 + [100] * 10 + [10] * 70
    batches = model.batches(lengths)
    assert sorted(int(i) for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        widths = [lengths[i] for i in batch]
        assert len(batch) <= 32 and len(batch) * max(widths) <= 4096
        assert 2 * min(widths) >= max(widths)  # no text padded to more than twice its length
    # A write's four texts: the two paragraphs run together, the two short ones apart.
    assert [sorted(int(i) for i in b) for b in model.batches([70, 50, 12, 15])] == [[0, 1], [2, 3]]


def test_export_is_idempotent(exported):
    stamp_before = (exported / "minilm.onnx.stamp.json").read_text()
    mtime = (exported / MODEL_NAME).stat().st_mtime_ns
    path, exported_now = export_model(exported)
    assert not exported_now and export_is_current(exported)
    assert (exported / MODEL_NAME).stat().st_mtime_ns == mtime
    assert (exported / "minilm.onnx.stamp.json").read_text() == stamp_before


def test_a_stale_stamp_is_not_current(exported, tmp_path):
    (tmp_path / MODEL_NAME).symlink_to(exported / MODEL_NAME)
    (tmp_path / "minilm.onnx.stamp.json").write_text('{"weights_sha256": "other"}')
    assert not export_is_current(tmp_path)


def test_missing_export_falls_back_to_pytorch_with_a_log_line(settings, tmp_path, caplog):
    settings.KB_ONNX_MODEL_DIR = str(tmp_path / "nothing-here")
    embedder = MiniLMEmbedder(runtime="onnx")
    with caplog.at_level(logging.WARNING, logger="kb.services.onnx_minilm"):
        vectors = embedder.embed(["a question about the billing service"])
    assert embedder.runtime == "torch"
    assert len(vectors[0]) == 384
    assert any("no current ONNX export" in r.getMessage() for r in caplog.records)


def test_unknown_runtime_is_a_clear_error(settings):
    from kb.services.embedding import EmbedderError

    with pytest.raises(EmbedderError, match="KB_EMBEDDING_RUNTIME"):
        MiniLMEmbedder(runtime="tensorflow")


def test_the_runtime_setting_chooses_the_embedder(settings):
    from kb.services.embedding import get_embedder

    settings.KB_EMBEDDER = "minilm"
    settings.KB_EMBEDDING_RUNTIME = "torch"
    torch = get_embedder()
    settings.KB_EMBEDDING_RUNTIME = "onnx"
    onnx = get_embedder()
    assert (torch.requested_runtime, onnx.requested_runtime) == ("torch", "onnx")
    assert torch.name == onnx.name  # same vectors, so stored vectors stay valid
