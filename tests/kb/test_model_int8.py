"""The int8 query variant of the model (KB_ONNX_QUERY_INT8, on by default): made from the
float export at set-up, idempotently; it serves query texts only (stored vectors stay the float model's); off,
or missing, queries use the float model. Its recipe (kb/services/onnx_int8.py): every dense
MatMul split into a float part (the outlier input channels, reordered first) and an int8
DynamicQuantizeMatMul part; texts under MIN_INT8_PIECES word pieces take the float model."""

from __future__ import annotations

import logging
import shutil

import numpy as np
import pytest

from kb.services import embedding
from kb.services.embedding import MiniLMEmbedder, embed_query, warm_up
from kb.services.onnx_int8 import FLOAT_CHANNELS, MIN_INT8_PIECES
from kb.services.onnx_minilm import (
    INT8_MODEL_NAME,
    MODEL_NAME,
    STAMP_NAME,
    default_model_dir,
    export_model,
    int8_is_current,
    load_onnx_minilm,
    quantize_model,
)

pytestmark = pytest.mark.model

QUESTIONS = [
    "How do I rotate the staging database credentials without downtime?",
    "ERR_TLS_CERT_ALTNAME_INVALID when the payments webhook calls the reports service",
    "which team owns the settlement connector and who is on call this week",
    "libssl3 provides the TLS implementation used by curl, wget and python3.11",
    "Ärger mit Umlauten, 日本語のテキスト, emoji 🚀 and café",
    "x",  # the fewest word pieces were the furthest from the float vector: the float model's
    "",
]
# Longer texts, all embedded by the int8 graph itself: descriptions, identifiers, prose past the
# 256-piece window.
LONGER = [
    "Playwright login fixture: clear cookies before reading lk_csrf on staging-eu",
    "service:settlement-connector depends_on service:ledger",
    "decision: we keep one Redis per region because cross-region latency broke the locks",
    "The nightly export retries three times, then pages the on-call engineer. " * 40,
    "GNU C library: shared libraries, including the dynamic linker and the standard C library",
    "cross-platform build system generator for C and C++ projects with many generators",
    "Where is the runbook for failing over the primary Postgres cluster in eu-west-1?",
] + [
    f"Entry {i}: the {i % 5}th recipe for deploying the billing service to region {i}"
    for i in range(12)
]


@pytest.fixture(scope="module")
def int8_dir(tmp_path_factory):
    """A model folder holding the set-up's float export (linked) and its int8 variant."""
    source, _ = export_model(default_model_dir())  # a no-op when set-up already exported it
    folder = tmp_path_factory.mktemp("models")
    (folder / MODEL_NAME).symlink_to(source)
    shutil.copy(source.parent / STAMP_NAME, folder / STAMP_NAME)
    path, made = quantize_model(folder)
    assert made and path == folder / INT8_MODEL_NAME
    return folder


def _cosines(a, b) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_int8_serves_queries_only_when_opted_in(settings, int8_dir):
    settings.KB_ONNX_MODEL_DIR = str(int8_dir)
    settings.KB_ONNX_QUERY_INT8 = False
    plain = MiniLMEmbedder(runtime="onnx")
    floats = np.asarray(plain.embed(QUESTIONS))
    assert np.allclose([plain.embed_query_text(q) for q in QUESTIONS], floats, atol=1e-6)

    settings.KB_ONNX_QUERY_INT8 = True
    opted = MiniLMEmbedder(runtime="onnx")
    quantised = [opted.embed_query_text(q) for q in QUESTIONS]
    cosines = _cosines(quantised, floats)
    # within the 0.999 per text the float runtimes are held to (the first, per-tensor recipe
    # measured 0.983 on the empty string) ...
    assert cosines.min() >= 0.999, cosines
    assert cosines[:5].max() < 0.99999  # ... but another model's, not the float one
    assert np.allclose(np.linalg.norm(quantised, axis=1), 1.0, atol=1e-4)
    # the texts a bank stores vectors of are still embedded by the float model
    assert np.allclose(opted.embed(QUESTIONS), floats, atol=1e-6)
    assert np.allclose(embed_query(QUESTIONS[0], opted), quantised[0], atol=1e-6)


def test_a_web_process_warms_both_models_before_its_first_query(settings, int8_dir):
    """gunicorn's post_worker_init calls ``warm_up``: the int8 query model, a session of its
    own, loaded on a process's first query before (0.3-0.6 s on that request)."""
    settings.KB_ONNX_MODEL_DIR = str(int8_dir)
    settings.KB_ONNX_QUERY_INT8 = True
    embedder = MiniLMEmbedder(runtime="onnx")
    assert embedder._model is None and embedder._query_model is None
    embedding._QUERY_CACHE.clear()
    warm_up(embedder)
    assert embedder.runtime == "onnx" and embedder._query_model  # both loaded
    assert not embedding._QUERY_CACHE  # nothing cached: "warm up" stays a new question


def test_the_int8_variant_is_made_once_per_float_export(int8_dir):
    mtime = (int8_dir / INT8_MODEL_NAME).stat().st_mtime_ns
    path, made = quantize_model(int8_dir)
    assert not made and int8_is_current(int8_dir)
    assert path.stat().st_mtime_ns == mtime


def test_an_int8_variant_of_another_export_is_not_current(int8_dir, tmp_path):
    for name in (MODEL_NAME, INT8_MODEL_NAME, INT8_MODEL_NAME + ".stamp.json"):
        (tmp_path / name).symlink_to(int8_dir / name)
    (tmp_path / STAMP_NAME).write_text('{"weights_sha256": "other"}')
    assert not int8_is_current(tmp_path)


def test_opted_in_without_the_variant_uses_the_float_model_with_a_log_line(
    settings, int8_dir, tmp_path, caplog
):
    (tmp_path / MODEL_NAME).symlink_to(int8_dir / MODEL_NAME)
    shutil.copy(int8_dir / STAMP_NAME, tmp_path / STAMP_NAME)
    settings.KB_ONNX_MODEL_DIR = str(tmp_path)
    settings.KB_ONNX_QUERY_INT8 = True
    embedder = MiniLMEmbedder(runtime="onnx")
    with caplog.at_level(logging.WARNING, logger="kb.services.onnx_minilm"):
        vector = embedder.embed_query_text(QUESTIONS[0])
    assert embedder.runtime == "onnx"
    assert np.allclose(vector, embedder.embed(QUESTIONS[:1])[0], atol=1e-6)
    assert any("no current int8 variant" in r.getMessage() for r in caplog.records)


def _int8_model(folder):
    return load_onnx_minilm(folder, threads=1, batch_size=8, int8=True)


def test_every_projection_is_split_into_a_float_and_an_int8_part(int8_dir):
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(int8_dir / INT8_MODEL_NAME)).graph
    weights = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    ops = [n.op_type for n in graph.node]
    # 18 dense layers and 6 QKV projections; Q, K and V cut apart for MultiHeadAttention
    assert ops.count("DynamicQuantizeMatMul") == 24 and ops.count("Split") == 30
    assert ops.count("MultiHeadAttention") == 6
    assert "Attention" not in ops and "MatMulNBits" not in ops
    floats = sorted(weights[n.input[1]].shape for n in graph.node if n.op_type == "MatMul")
    assert floats == [(32, 384)] * 6 + [(32, 1152)] * 6 + [(32, 1536)] * 6 + [(64, 384)] * 6
    assert FLOAT_CHANNELS == {384: 32, 1536: 64}
    for node in (n for n in graph.node if n.op_type == "DynamicQuantizeMatMul"):
        w, scale = weights[node.input[1]], weights[node.input[2]]
        assert w.dtype == np.int8 and w.shape[0] in (352, 1472)
        assert scale.shape == (w.shape[1],)  # a scale per output column
        assert np.abs(w).max() == 127
    # the channel order is folded into the weights: one Gather, on the sentence embedding
    assert [n.output[0] for n in graph.node if n.op_type == "Gather"] == ["sentence_embedding"]


def test_longer_texts_are_within_0999_of_the_float_model(settings, int8_dir):
    settings.KB_ONNX_MODEL_DIR = str(int8_dir)
    floats = np.asarray(MiniLMEmbedder(runtime="onnx").embed(LONGER))
    model = _int8_model(int8_dir)
    quantised = np.concatenate([model.encode([t]) for t in LONGER])
    cosines = _cosines(quantised, floats)
    assert cosines.min() >= 0.999, cosines
    assert cosines.max() < 0.99999
    assert np.allclose(model.encode(LONGER), quantised, atol=1e-6)  # a batch: one text a run


def test_short_texts_take_the_float_model(settings, int8_dir):
    settings.KB_ONNX_MODEL_DIR = str(int8_dir)
    texts = ["", "x", "billing", "staging db", "who owns billing", "who owns the billing job?"]
    lengths = [len(x) for x in _int8_model(int8_dir).tokenizer.encode_batch(texts)]
    assert lengths == [2, 3, 3, 4, 5, 8] and MIN_INT8_PIECES == 6
    floats = np.asarray(MiniLMEmbedder(runtime="onnx").embed(texts))
    model = _int8_model(int8_dir)
    single = np.concatenate([model.encode([t]) for t in texts])
    assert np.allclose(single[:5], floats[:5], atol=1e-6)
    assert not np.allclose(single[5], floats[5], atol=1e-4)  # 6 pieces or more: int8
    assert _cosines(single[5:], floats[5:]).min() >= 0.999
    assert np.allclose(model.encode(texts), single, atol=1e-5)  # a batch routes them alike
