"""The Debian package index as a bank: import time, then our answers against apt's.

1. Import: ``apt-cache dumpavail`` (~64k packages) → JSON Lines (API.md bulk format) →
   ``kb.services.bulk.import_bank`` into bank ``bench-debian`` (``--bank``): first the
   vocabulary, entries and aliases, then the edges in imports of ``--chunk`` lines with
   ``ANALYZE`` between them. One import of all 400k edges is quadratic today: the per-edge
   "already believed?" lookup in ``graph.ingest.lines.EdgeLines.apply`` filters by
   bank, and for a bank the planner has no statistics for yet it scans the bank's edges.
   A bank that already holds the index is reused (``--reimport`` forces a new import, which
   must then change nothing). Entries are embedded after the import as the app always does;
   this benchmark uses the test-only hashing embedder unless ``--real-embedder``, because it
   measures the graph, not retrieval.
2. Agreement: for a random sample of packages (``--sample``, seed ``--seed``), the direct
   dependencies the graph answers (the traversal service, and a direct query of current
   ``depends_on`` edges) against ``apt-cache depends --no-recommends --no-suggests``: a
   package agrees when each of apt's or-groups is met by one of our edges and each of our
   edges meets one of apt's or-groups (a virtual package is met by any provider). Reverse
   dependencies are checked against ``apt-cache rdepends`` the same way (ours must include
   every dependent apt can satisfy only with the package, and nothing apt does not list).

    .venv/bin/python bench/debian.py [--bank bench-debian] [--sample 200] [--seed 7]
        [--reimport] [--real-embedder] [--chunk 25000]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def reverse_agreement(bank, sample: list[str], ours: dict, slice_names: set) -> tuple[int, list]:
    """Reverse dependencies of a sample of packages that have dependents, against
    ``apt-cache rdepends``: (targets that agree, targets)."""
    from tests.labs import debian_compare

    rsample = [n for n in sample if ours[n]][:50]
    targets = sorted({d for n in rsample for d in ours[n]})[:50]
    rdeps = debian_compare.apt_reverse_dependencies(targets)
    ours_in = debian_compare.graph_reverse_dependencies(bank, targets)
    dependents = {p for t_ in targets for p in rdeps.get(t_, set()) | ours_in[t_]}
    forward_all = debian_compare.apt_dependency_groups(sorted(dependents & slice_names))
    reverse_ok = 0
    for target in targets:
        # Dependents apt can satisfy only with ``target`` must be ours; ours must be listed by
        # apt-cache rdepends or depend on a virtual package apt names ``target`` a provider of
        # (rdepends does not follow Provides).
        certain = {
            p
            for p, groups in forward_all.items()
            if {target} in debian_compare.apt_expected_dependencies(groups, slice_names)
        }
        via_virtual = {
            p
            for p, groups in forward_all.items()
            for group in groups
            for _, virtual, providers in group
            if virtual and target in providers
        }
        possible = rdeps.get(target, set()) | via_virtual
        if certain <= ours_in[target] <= possible:
            reverse_ok += 1
    return reverse_ok, targets


def agreement_rows(bank, packages: dict, sample_size: int, seed: int) -> list[tuple[str, str]]:
    """Our dependencies and reverse dependencies against ``apt-cache`` for a random sample."""
    from graph.models import Edge
    from tests.labs import debian_compare

    rows: list[tuple[str, str]] = []
    names = sorted(packages)
    rng = random.Random(seed)
    sample = rng.sample(names, min(sample_size, len(names)))
    slice_names = set(names)
    t = time.perf_counter()
    apt = debian_compare.apt_dependency_groups(sample)
    apt_s = time.perf_counter() - t
    t = time.perf_counter()
    ours = debian_compare.graph_dependencies(bank, sample)
    orm_s = time.perf_counter() - t
    traverse_ms, agree_orm, agree_traverse, same = [], 0, 0, 0
    disagreements = []
    for name in sample:
        expected = debian_compare.apt_expected_dependencies(apt.get(name, []), slice_names)
        t = time.perf_counter()
        walked = debian_compare.traverse_dependencies(bank, name)
        traverse_ms.append((time.perf_counter() - t) * 1000)
        if debian_compare.dependencies_agree(ours[name], expected):
            agree_orm += 1
        elif len(disagreements) < 5:
            disagreements.append((name, sorted(ours[name]), [sorted(g) for g in expected]))
        agree_traverse += debian_compare.dependencies_agree(walked, expected)
        same += walked == ours[name]

    reverse_ok, targets = reverse_agreement(bank, sample, ours, slice_names)
    n = len(sample)
    rows += [
        (
            "current edges in the bank",
            f"{Edge.objects.filter(bank=bank, invalidated_at__isnull=True).count()}",
        ),
        ("sample", f"{n} packages (seed {seed})"),
        ("apt-cache depends (whole sample)", f"{apt_s * 1000:.0f} ms"),
        ("ORM query (whole sample)", f"{orm_s * 1000:.0f} ms"),
        ("agreement, ORM vs apt", f"{agree_orm}/{n} = {agree_orm / n:.1%}"),
        ("agreement, traverse vs apt", f"{agree_traverse}/{n} = {agree_traverse / n:.1%}"),
        ("traverse == ORM", f"{same}/{n}"),
        (
            "traverse latency (1 hop out)",
            f"median {statistics.median(traverse_ms):.1f} ms, "
            f"p95 {sorted(traverse_ms)[int(0.95 * (n - 1))]:.1f} ms, max {max(traverse_ms):.1f} ms",
        ),
        ("reverse dependencies agree", f"{reverse_ok}/{len(targets)}"),
    ]
    for name, ours_, theirs in disagreements:
        rows.append((f"  disagree {name}", f"ours {ours_} apt {theirs}"))
    return rows


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bank", default="bench-debian")
    parser.add_argument("--sample", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--reimport", action="store_true")
    parser.add_argument("--real-embedder", action="store_true")
    parser.add_argument("--chunk", type=int, default=25_000, help="Edge lines per import.")
    return parser.parse_args()


def read_index():
    """The package index, parsed and converted to import lines; (packages, built lines)."""
    from graph.ingest import debian

    started = time.perf_counter()
    text = debian.read_dumpavail()
    read_s = time.perf_counter() - started
    t = time.perf_counter()
    packages = debian.parse_index(text)
    parse_s = time.perf_counter() - t
    t = time.perf_counter()
    built = debian.build_lines(packages)
    lines = built.text()
    build_s = time.perf_counter() - t
    print(
        f"index: {len(packages)} packages; read {read_s:.1f}s, parse {parse_s:.1f}s, "
        f"convert {build_s:.1f}s → {len(built.lines)} lines ({len(lines) / 1e6:.0f} MB): "
        + ", ".join(f"{k} {v}" for k, v in built.counts.items())
    )
    return packages, built


def bar_progress(bars: dict):
    from tqdm import tqdm

    def progress(phase: str, done: int, total: int) -> None:
        bar = bars.get(phase) or bars.setdefault(
            phase, tqdm(total=total, desc=phase, unit="line", leave=False)
        )
        bar.update(done - bar.n)

    return progress


def import_chunks(bank, built, chunk_size: int) -> list[tuple[str, str]]:
    """Entries, aliases and vocabulary first, then the edges in chunks with ANALYZE in
    between: a single 400k-edge import is quadratic today (see the module docstring)."""
    import json

    from django.db import connection

    from kb.services.bulk import import_bank

    bars: dict = {}
    progress = bar_progress(bars)
    head = [line for line in built.lines if line["type"] != "edge"]
    edge_lines = [line for line in built.lines if line["type"] == "edge"]
    chunks = [head] + [
        edge_lines[i : i + chunk_size] for i in range(0, len(edge_lines), chunk_size)
    ]
    totals: dict[str, int] = {}
    t = time.perf_counter()
    for number, chunk in enumerate(chunks):
        text_chunk = "\n".join(json.dumps(line, ensure_ascii=False) for line in chunk)
        c = time.perf_counter()
        result = import_bank(
            bank, text_chunk, reason=f"bench: Debian index {number}", progress=progress
        )
        for key, value in result.items():
            if isinstance(value, int) and key not in ("operation", "lines"):
                totals[key] = totals.get(key, 0) + value
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE kb_entry; ANALYZE graph_edge; ANALYZE graph_alias")
        print(f"  chunk {number}: {len(chunk)} lines in {time.perf_counter() - c:.1f}s", flush=True)
    for bar in bars.values():
        bar.close()
    import_s = time.perf_counter() - t
    rows = [
        (f"import ({len(chunks)} imports: validate + write + embed)", f"{import_s:.1f} s"),
        (
            "  created",
            f"{totals.get('created', 0)} entries, {totals.get('edges_created', 0)} edges, "
            f"{totals.get('aliases_created', 0)} aliases",
        ),
    ]
    if totals.get("edges_created"):
        rows.append(("  per edge", f"{import_s / totals['edges_created'] * 1000:.2f} ms"))
    return rows


def main() -> None:
    args = parse_args()
    if not args.real_embedder:
        os.environ["KB_EMBEDDER"] = "hashing"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from kb.models import Entry
    from kb.services.banks import ensure_bank

    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    packages, built = read_index()
    bank, _ = ensure_bank(args.bank)
    have = Entry.objects.filter(bank=bank, kind__name="package").count()
    if have != len(packages) or args.reimport:
        rows = import_chunks(bank, built, args.chunk)
    else:
        rows = [("import", f"reused bank {bank.slug} ({have} packages)")]
    rows += agreement_rows(bank, packages, args.sample, args.seed)
    width = max(len(k) for k, _ in rows)
    print()
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
