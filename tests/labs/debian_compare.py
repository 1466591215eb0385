"""Our answers about the Debian import against apt's own (``apt-cache depends/rdepends``):
used by ``bench/debian.py`` and ``tests/graph/test_debian.py``, never by the product."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable

from graph.edges.links import current_q
from graph.models import Edge
from kb.models import Bank


def graph_dependencies(bank: Bank, names: Iterable[str]) -> dict[str, set[str]]:
    """Each package's direct dependencies in the bank: the current ``depends_on`` edges out of
    ``deb:<name>`` (virtual dependencies already point at their provider)."""
    keys = [f"deb:{n}" for n in names]
    found: dict[str, set[str]] = {n: set() for n in names}
    rows = (
        Edge.objects.filter(bank=bank, type__name="depends_on", from_entry__key__in=keys)
        .filter(current_q())
        .values_list("from_entry__key", "to_entry__key")
    )
    for source, target in rows:
        found[source.removeprefix("deb:")].add(target.removeprefix("deb:"))
    return found


def graph_reverse_dependencies(bank: Bank, names: Iterable[str]) -> dict[str, set[str]]:
    """Each package's direct reverse dependencies in the bank (``depends_on`` edges in)."""
    keys = [f"deb:{n}" for n in names]
    found: dict[str, set[str]] = {n: set() for n in names}
    rows = (
        Edge.objects.filter(bank=bank, type__name="depends_on", to_entry__key__in=keys)
        .filter(current_q())
        .values_list("to_entry__key", "from_entry__key")
    )
    for target, source in rows:
        found[target.removeprefix("deb:")].add(source.removeprefix("deb:"))
    return found


def traverse_dependencies(
    bank: Bank, name: str, direction: str = "out", max_expansions: int = 100_000
) -> set[str]:
    """The same answer through the traversal service: ``depends_on`` one hop from
    ``deb:<name>`` (``out``: what it needs; ``in``: what needs it)."""
    from graph.traversal.walk import Limits, Step, traverse
    from kb.services.entries import find_entry

    start = find_entry(bank, f"deb:{name}")
    result = traverse(
        bank,
        start,
        [Step(("depends_on",), direction)],
        Limits(max_expansions=max_expansions, max_paths=1, max_evidence_tokens=0),
    )
    if result.truncated and "max_expansions" in result.limits_hit:
        raise RuntimeError(f"The traversal from {name} was cut at {max_expansions} expansions.")
    return {
        result.nodes[pk].key.removeprefix("deb:")
        for pk, depth in result.depth.items()
        if depth == 1 and result.nodes[pk].key
    }


def _strip_arch(name: str) -> str:
    return name.split(":", 1)[0]


def _apt(command: str, names: list[str]) -> str:
    flags = [
        "--no-recommends",
        "--no-suggests",
        "--no-conflicts",
        "--no-breaks",
        "--no-replaces",
        "--no-enhances",
    ]
    done = subprocess.run(
        ["apt-cache", command, *flags, *names],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return done.stdout


def apt_dependency_groups(names: list[str]) -> dict[str, list[list[tuple[str, bool, list[str]]]]]:
    """``apt-cache depends`` for each package: its Depends/PreDepends or-groups, each a list of
    (name, is_virtual, providers)."""
    out: dict[str, list[list[tuple[str, bool, list[str]]]]] = {}
    current: list[list[tuple[str, bool, list[str]]]] | None = None
    group: list[tuple[str, bool, list[str]]] = []
    last: tuple[str, bool, list[str]] | None = None
    for line in _apt("depends", names).splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            current = out.setdefault(line.strip(), [])
            group, last = [], None
            continue
        if line.startswith("    ") and last is not None:
            last[2].append(line.strip())
            continue
        stripped = line.strip()
        continues = stripped.startswith("|")
        kind, _, target = stripped.lstrip("|").partition(":")
        if kind not in ("Depends", "PreDepends") or current is None:
            continue
        target = target.strip()
        virtual = target.startswith("<") and target.endswith(">")
        last = (target.strip("<>"), virtual, [])
        group.append(last)
        if not continues:
            current.append(group)
            group = []
    return out


def apt_expected_dependencies(
    groups: list[list[tuple[str, bool, list[str]]]], slice_names: set[str]
) -> list[set[str]]:
    """apt's answer restricted to the slice: per or-group, the packages of the slice that its
    first satisfiable alternative names (itself, or for a virtual package its providers)."""
    expected = []
    for group in groups:
        for name, _virtual, providers in group:
            real = _strip_arch(name)
            if real in slice_names:
                expected.append({real})
                break
            candidates = {_strip_arch(p) for p in providers} & slice_names
            if candidates:
                expected.append(candidates)
                break
    return expected


def dependencies_agree(ours: set[str], expected: list[set[str]]) -> bool:
    """Our direct dependencies answer apt's: each or-group is met by one of ours, and each of
    ours meets some or-group."""
    return all(group & ours for group in expected) and all(
        any(dep in group for group in expected) for dep in ours
    )


def apt_reverse_dependencies(names: list[str]) -> dict[str, set[str]]:
    """``apt-cache rdepends`` (Depends/PreDepends only) for each name."""
    out: dict[str, set[str]] = {}
    current = None
    for line in _apt("rdepends", names).splitlines():
        if not line.strip() or line.strip() == "Reverse Depends:":
            continue
        if not line.startswith(" "):
            current = out.setdefault(line.strip().strip("<>"), set())
            continue
        if current is not None:
            current.add(_strip_arch(line.strip().lstrip("|")))
    return out
