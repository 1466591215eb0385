"""Real data: the Debian package index (``apt-cache dumpavail``) as a bank.

Packages become entries (key ``deb:<name>``, kind ``package``); Depends and Pre-Depends become
``depends_on`` (transitive), Replaces ``supersedes``, Conflicts and Breaks ``conflicts_with``,
the Maintainer ``owned_by`` a person or team entry (``maint:<email>``), the Section ``part_of``
a container entry (``section:<name>``), and Provides aliases of every providing package (a
virtual package that several packages provide is an ambiguous name: resolve lists them all).

A dependency clause "a | b" becomes one edge to its first resolvable alternative: a package of
the import, or a virtual package provided by one (its preferred provider: best priority, then
name); the
evidence keeps the whole clause and the version constraints. The lines are the bulk format of
API.md and load through ``kb.services.bulk.import_bank``: all or nothing, and a re-import
changes nothing.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from graph.resolution.aliases import normalize
from kb.models import Bank

PRIORITY_RANK = {"required": 0, "important": 1, "standard": 2, "optional": 3, "extra": 4}
CONTENT_LIMIT = 1500
DEPENDS_FIELDS = ("Pre-Depends", "Depends")
TEAM_HINT = re.compile(r"team|maintainers|group|project|packagers|developers|@lists\.", re.I)
_MAINTAINER = re.compile(r"^\s*(?P<name>.*?)\s*<(?P<email>[^>]+)>\s*$")
_ALTERNATIVE = re.compile(
    r"^\s*(?P<name>[^\s(\[<:]+)(?::(?P<arch>[\w-]+))?\s*(?:\((?P<op><<|<=|=|>=|>>|<|>)\s*(?P<version>[^)]+?)\s*\))?"
)

# --- the index --------------------------------------------------------------------------------


def read_dumpavail() -> str:
    """The package index of this machine's apt sources (``apt-cache dumpavail``)."""
    done = subprocess.run(
        ["apt-cache", "dumpavail"], capture_output=True, text=True, check=True, timeout=300
    )
    return done.stdout


def parse_stanzas(text: str) -> Iterator[dict[str, str]]:
    """RFC 822-style stanzas: ``Field: value`` with indented continuation lines."""
    stanza: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        if not line.strip():
            if stanza:
                yield stanza
            stanza, last = {}, None
        elif line[0] in " \t":
            if last is not None:
                stanza[last] += "\n" + line[1:]
        else:
            name, _, value = line.partition(":")
            last = name.strip()
            stanza[last] = value.strip()
    if stanza:
        yield stanza


def _order(ch: str) -> int:
    if ch == "~":
        return -1
    if ch.isdigit():
        return 0
    if ch.isalpha():
        return ord(ch)
    return ord(ch) + 256


def _compare_part(a: str, b: str) -> int:
    """dpkg's comparison of an upstream version or revision: alternating non-digit and digit runs."""
    i = j = 0
    while i < len(a) or j < len(b):
        first_diff = 0
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _order(a[i]) if i < len(a) else 0
            bc = _order(b[j]) if j < len(b) else 0
            if ac != bc:
                return ac - bc
            i += 1
            j += 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        while i < len(a) and a[i].isdigit() and j < len(b) and b[j].isdigit():
            if not first_diff:
                first_diff = ord(a[i]) - ord(b[j])
            i += 1
            j += 1
        if i < len(a) and a[i].isdigit():
            return 1
        if j < len(b) and b[j].isdigit():
            return -1
        if first_diff:
            return first_diff
    return 0


def compare_versions(a: str, b: str) -> int:
    """Debian version order (epoch, upstream, revision): negative, zero or positive."""

    def split(v: str) -> tuple[int, str, str]:
        epoch, _, rest = v.rpartition(":") if ":" in v else ("0", "", v)
        upstream, _, revision = rest.rpartition("-") if "-" in rest else (rest, "", "")
        return int(epoch or 0), upstream, revision

    ea, ua, ra = split(a)
    eb, ub, rb = split(b)
    if ea != eb:
        return ea - eb
    return _compare_part(ua, ub) or _compare_part(ra, rb)


@dataclass
class Alternative:
    name: str
    arch: str | None
    constraint: str | None


@dataclass
class Package:
    name: str
    version: str
    fields: dict[str, str]
    relations: dict[str, list[list[Alternative]]] = field(default_factory=dict)
    raw_clauses: dict[str, list[str]] = field(default_factory=dict)

    @property
    def priority_rank(self) -> int:
        return PRIORITY_RANK.get(self.fields.get("Priority", ""), 5)


def parse_relation(value: str) -> tuple[list[list[Alternative]], list[str]]:
    """``a (>= 1) | b, c:any`` → or-groups of alternatives, and each clause's text."""
    groups, clauses = [], []
    for clause in value.replace("\n", " ").split(","):
        clause = clause.strip()
        if not clause:
            continue
        alternatives = []
        for alt in clause.split("|"):
            match = _ALTERNATIVE.match(alt)
            if match:
                constraint = f"{match['op']} {match['version'].strip()}" if match["op"] else None
                alternatives.append(Alternative(match["name"], match["arch"], constraint))
        if alternatives:
            groups.append(alternatives)
            clauses.append(clause)
    return groups, clauses


RELATION_FIELDS = ("Pre-Depends", "Depends", "Replaces", "Conflicts", "Breaks", "Provides")


def parse_index(text: str) -> dict[str, Package]:
    """Packages by name, in index order; of several versions of a name the highest wins."""
    packages: dict[str, Package] = {}
    for stanza in parse_stanzas(text):
        name = stanza.get("Package")
        version = stanza.get("Version", "")
        if not name:
            continue
        seen = packages.get(name)
        if seen is not None and compare_versions(version, seen.version) <= 0:
            continue
        package = Package(name, version, stanza)
        for field_name in RELATION_FIELDS:
            if stanza.get(field_name):
                groups, clauses = parse_relation(stanza[field_name])
                package.relations[field_name] = groups
                package.raw_clauses[field_name] = clauses
        packages[name] = package
    return packages


class Resolver:
    """Resolves a dependency alternative to a package of ``names``: the package itself, or for a
    virtual package its provider (best priority, then name)."""

    def __init__(self, packages: dict[str, Package], names: Iterable[str]):
        self.names = set(names)
        providers: dict[str, list[Package]] = {}
        for name in self.names:
            for group in packages[name].relations.get("Provides", []):
                virtual = group[0].name
                if virtual not in self.names:
                    providers.setdefault(virtual, []).append(packages[name])
        self.providers = {
            virtual: [p.name for p in sorted(found, key=lambda p: (p.priority_rank, p.name))]
            for virtual, found in providers.items()
        }

    def resolve(self, name: str) -> str | None:
        if name in self.names:
            return name
        found = self.providers.get(name)
        return found[0] if found else None

    def first(self, group: list[Alternative]) -> tuple[str, Alternative] | None:
        for alt in group:
            target = self.resolve(alt.name)
            if target is not None:
                return target, alt
        return None


def dependency_closure(packages: dict[str, Package], roots: Iterable[str]) -> list[str]:
    """``roots`` and everything they need through Depends/Pre-Depends (first resolvable
    alternative of each clause), in discovery order. Unknown roots are ignored."""
    resolver = Resolver(packages, packages)
    order = [r for r in dict.fromkeys(roots) if r in packages]
    seen = set(order)
    queue = list(order)
    while queue:
        package = packages[queue.pop(0)]
        for field_name in DEPENDS_FIELDS:
            for group in package.relations.get(field_name, []):
                found = resolver.first(group)
                if found and found[0] not in seen:
                    seen.add(found[0])
                    order.append(found[0])
                    queue.append(found[0])
    return order


# --- to bulk lines --------------------------------------------------------------------------


def _description(package: Package) -> tuple[str, str]:
    text = package.fields.get("Description", "")
    synopsis, _, body = text.partition("\n")
    lines = []
    for line in body.splitlines():
        line = line.strip()
        lines.append("" if line == "." else line)
    content = "\n".join(lines).strip()
    return synopsis.strip()[:500], content[:CONTENT_LIMIT]


def _maintainer(value: str) -> tuple[str, str] | None:
    match = _MAINTAINER.match(value or "")
    if not match:
        return None
    email = match["email"].strip().lower()
    return (match["name"].strip().strip('"') or email), email


def _section(package: Package) -> str | None:
    section = package.fields.get("Section", "").strip()
    return section or None


@dataclass
class DebianLines:
    """The bulk lines of a set of packages and how many of each were produced."""

    lines: list[dict]
    counts: dict[str, int]

    def text(self) -> str:
        return "\n".join(json.dumps(line, ensure_ascii=False) for line in self.lines) + "\n"


HEADER_LINES = (
    {
        "type": "kind",
        "name": "package",
        "weight": 0,
        "structural": True,
        "description": "A Debian package.",
    },
    {
        "type": "relation",
        "name": "depends_on",
        "inverse": "dependency_of",
        "fold_role": None,
        "transitive": True,
        "workflow_role": None,
        "neighbor_priority": 30,
        "description": "Needs the target installed (Depends, Pre-Depends).",
    },
)
OTHER_RELATIONS = (
    ("Replaces", "supersedes"),
    ("Conflicts", "conflicts_with"),
    ("Breaks", "conflicts_with"),
)


def _entry_line(name: str, package: Package) -> dict:
    summary, content = _description(package)
    meta = {
        k.lower().replace("-", "_"): package.fields[k]
        for k in ("Version", "Architecture", "Priority", "Source", "Homepage", "Multi-Arch")
        if package.fields.get(k)
    }
    if package.fields.get("Installed-Size", "").isdigit():
        meta["installed_size_kb"] = int(package.fields["Installed-Size"])
    section = _section(package)
    return {
        "type": "entry",
        "key": f"deb:{name}",
        "title": name,
        "summary": summary,
        "content": content,
        "kind": "package",
        "systems": [section] if section else [],
        "metadata": meta,
    }


class _Lines:
    """What :func:`build_lines` collects, package by package."""

    def __init__(self, resolver: Resolver):
        self.resolver = resolver
        self.maintainers: dict[str, str] = {}
        self.sections: set[str] = set()
        self.edges: dict[tuple[str, str, str], dict] = {}
        self.entries: list[dict] = []

    def edge(self, source: str, target: str, relation: str, field_name: str, clause: str, alt):
        if source == target:
            return
        edge = self.edges.get((source, target, relation))
        if edge is None:
            edge = self.edges[(source, target, relation)] = {
                "type": "edge",
                "from": source,
                "to": target,
                "relation": relation,
                "source": "import",
                "evidence": {"fields": [], "clauses": []},
            }
        evidence = edge["evidence"]
        if field_name not in evidence["fields"]:
            evidence["fields"].append(field_name)
        if clause not in evidence["clauses"]:
            evidence["clauses"].append(clause)
        if alt is not None and alt.constraint:
            evidence.setdefault("constraints", [])
            if alt.constraint not in evidence["constraints"]:
                evidence["constraints"].append(alt.constraint)
        if alt is not None and alt.name != target.removeprefix("deb:"):
            evidence["via"] = alt.name  # a virtual package, resolved to its provider

    def package(self, name: str, package: Package) -> None:
        entry = _entry_line(name, package)
        self.entries.append(entry)
        key = entry["key"]
        for field_name in DEPENDS_FIELDS:
            groups = package.relations.get(field_name, [])
            for group, clause in zip(groups, package.raw_clauses.get(field_name, []), strict=True):
                found = self.resolver.first(group)
                if found:
                    self.edge(key, f"deb:{found[0]}", "depends_on", field_name, clause, found[1])
        for field_name, relation in OTHER_RELATIONS:
            groups = package.relations.get(field_name, [])
            for group, clause in zip(groups, package.raw_clauses.get(field_name, []), strict=True):
                for alt in group:  # real packages only: a virtual name means "any provider"
                    if alt.name in self.resolver.names:
                        self.edge(key, f"deb:{alt.name}", relation, field_name, clause, alt)
        maintainer = _maintainer(package.fields.get("Maintainer", ""))
        if maintainer:
            display, email = maintainer
            self.maintainers.setdefault(email, display)
            raw = package.fields["Maintainer"]
            self.edge(key, f"maint:{email}", "owned_by", "Maintainer", raw, None)
        section = entry["systems"][0] if entry["systems"] else None
        if section:
            self.sections.add(section)
            self.edge(key, f"section:{section}", "part_of", "Section", section, None)

    def aliases(self) -> list[dict]:
        """A virtual package names every package that provides it: one alias line per (form,
        provider) pair, so resolving the virtual name answers ``ambiguous`` with every
        provider (a dependency edge still goes to the preferred one, see ``Resolver``)."""
        lines, pairs = [], set()
        for virtual, providers in sorted(self.resolver.providers.items()):
            form = normalize(virtual)
            for provider in providers:
                if form and (form, provider) not in pairs:
                    pairs.add((form, provider))
                    lines.append(
                        {
                            "type": "alias",
                            "entry": f"deb:{provider}",
                            "alias": virtual,
                            "source": "import",
                        }
                    )
        return lines

    def owner_lines(self) -> list[dict]:
        """The maintainers' and the sections' entries."""
        lines = [
            {
                "type": "entry",
                "key": f"maint:{email}",
                "title": display[:300],
                "summary": f"Maintains Debian packages ({email}).",
                "kind": "team" if TEAM_HINT.search(f"{display} {email}") else "person",
                "metadata": {"email": email},
            }
            for email, display in sorted(self.maintainers.items())
        ]
        lines += [
            {
                "type": "entry",
                "key": f"section:{section}",
                "title": f"Debian section {section}",
                "summary": f"The packages of the Debian archive section {section}.",
                "kind": "container",
            }
            for section in sorted(self.sections)
        ]
        return lines


def build_lines(packages: dict[str, Package], names: Iterable[str] | None = None) -> DebianLines:
    """JSON Lines objects (API.md bulk format) for ``names`` (default: every package). Edges
    join packages of the set only; a clause with no resolvable alternative makes no edge."""
    names = list(names if names is not None else packages)
    collected = _Lines(Resolver(packages, names))
    for name in names:
        collected.package(name, packages[name])
    aliases = collected.aliases()
    edges = collected.edges
    lines = [*(dict(line) for line in HEADER_LINES), *collected.owner_lines()]
    lines += [*collected.entries, *aliases]
    lines.extend(edges.values())
    relation_counts: dict[str, int] = {}
    for _source, _target, relation in edges:
        relation_counts[relation] = relation_counts.get(relation, 0) + 1
    counts = {
        "packages": len(collected.entries),
        "maintainers": len(collected.maintainers),
        "sections": len(collected.sections),
        "aliases": len(aliases),
        "edges": len(edges),
        **{f"edges_{k}": v for k, v in sorted(relation_counts.items())},
    }
    return DebianLines(lines, counts)


def select_packages(
    packages: dict[str, Package],
    *,
    limit: int | None = None,
    roots: Iterable[str] | None = None,
    closure: bool = False,
) -> list[str]:
    """Which packages to import: ``roots`` (with their dependency closure when ``closure``) or
    every package, cut to the first ``limit``."""
    if roots is not None:
        roots = list(roots)
        names = (
            dependency_closure(packages, roots)
            if closure
            else [r for r in dict.fromkeys(roots) if r in packages]
        )
    else:
        names = list(packages)
    return names[:limit] if limit else names


def import_debian(
    bank: Bank,
    *,
    text: str | None = None,
    index: dict[str, Package] | None = None,
    limit: int | None = None,
    roots: Iterable[str] | None = None,
    closure: bool = False,
    actor: str | None = None,
    progress=None,
) -> dict:
    """Import (a slice of) the package index into ``bank`` in one operation; returns the bulk
    import's counts plus what the conversion produced. The index is ``index`` (parsed), else
    ``text`` (a dumpavail text), else this machine's ``apt-cache dumpavail``."""
    from kb.services.bulk import import_bank

    packages = index if index is not None else parse_index(text or read_dumpavail())
    names = select_packages(packages, limit=limit, roots=roots, closure=closure)
    built = build_lines(packages, names)
    result = import_bank(
        bank,
        built.text(),
        actor=actor,
        reason="import of the Debian package index",
        progress=progress,
    )
    return {**result, "converted": built.counts, "packages": names}


# --- answers to compare with apt --------------------------------------------------------------
