"""Real data: a slice of this machine's Debian package index, imported and checked against apt.

The slice is the Depends/Pre-Depends closure of a few packages from ``apt-cache dumpavail``
(about 60 packages). Our answers (the traversal service and a direct query of current
``depends_on`` edges) are compared with ``apt-cache depends`` / ``apt-cache rdepends``.
"""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.test import override_settings

from graph.ingest import debian
from graph.models import Alias, Edge
from graph.resolution.aliases import resolve
from kb.models import Bank, Entry, Operation
from tests.labs import debian_compare

# One worker runs the module, so the slice is imported once (see ``deb_slice``).
pytestmark = [pytest.mark.django_db, pytest.mark.xdist_group("debian")]

# Small closures that still exercise an or-group ("dpkg | install-info" in readline-common),
# virtual packages resolved through Provides (the librust-*-dev crates), a multi-arch
# qualifier and Pre-Depends; gawk and mawk both provide the virtual package awk.
ROOTS = ["jq", "curl", "less", "gawk", "mawk", "sed", "librust-bincode-dev", "librust-fst-dev"]


@pytest.fixture(scope="module")
def index() -> dict[str, debian.Package]:
    packages = debian.parse_index(debian.read_dumpavail())
    assert len(packages) > 1000, "apt-cache dumpavail is empty: run apt-get update once."
    return packages


@pytest.fixture(scope="module")
def deb_slice(index, django_db_setup, django_db_blocker):
    """The slice, imported once for the module (the import is the slow part) and removed after."""
    with django_db_blocker.unblock(), override_settings(KB_EMBEDDER="hashing"):
        bank = Bank.objects.create(slug="deb", name="Debian slice")
        result = debian.import_debian(bank, index=index, roots=ROOTS, closure=True)
    yield bank, result
    with django_db_blocker.unblock():
        Edge.objects.filter(bank=bank).delete()
        Alias.objects.filter(bank=bank).delete()
        Entry.objects.filter(bank=bank).delete()
        Operation.objects.filter(bank=bank).delete()
        bank.delete()


@pytest.fixture
def deb_bank(deb_slice, db):
    return deb_slice


def test_parse_relation_keeps_alternatives_constraints_and_arch():
    groups, clauses = debian.parse_relation(
        "libc6 (>= 2.34), dpkg (>= 1.15.4) | install-info, python3:any, awk"
    )
    assert [[a.name for a in g] for g in groups] == [
        ["libc6"],
        ["dpkg", "install-info"],
        ["python3"],
        ["awk"],
    ]
    assert groups[0][0].constraint == ">= 2.34" and groups[2][0].arch == "any"
    assert clauses[1] == "dpkg (>= 1.15.4) | install-info"


def test_version_order_is_debians():
    assert debian.compare_versions("1.0-1", "1.0-2") < 0
    assert debian.compare_versions("1:0.9", "2.0") > 0  # the epoch wins
    assert debian.compare_versions("1.0~rc1", "1.0") < 0  # tilde sorts before anything
    assert debian.compare_versions("2.10", "2.9") > 0
    assert debian.compare_versions("1.0", "1.0") == 0


def test_multiple_versions_keep_the_highest():
    text = (
        "Package: foo\nVersion: 1.0-1\nDepends: old\n\n"
        "Package: foo\nVersion: 1.2-1\nDepends: new\n\n"
        "Package: foo\nVersion: 1.1-1\nDepends: middle\n"
    )
    packages = debian.parse_index(text)
    assert packages["foo"].version == "1.2-1"
    assert packages["foo"].relations["Depends"][0][0].name == "new"


def test_slice_imports_with_vocabulary_aliases_and_evidence(deb_bank, index):
    bank, result = deb_bank
    names = result["packages"]
    assert 40 <= len(names) <= 90
    assert set(ROOTS) <= set(names)
    assert Entry.objects.filter(bank=bank, kind__name="package").count() == len(names)
    jq = Entry.objects.get(bank=bank, key="deb:jq")
    assert jq.summary and jq.metadata["version"] == index["jq"].version
    # Maintainer → owned_by a person/team entry; Section → part_of a container.
    owned = Edge.objects.get(bank=bank, from_entry=jq, type__name="owned_by")
    assert owned.to_entry.key.startswith("maint:")
    assert owned.to_entry.kind.name in ("person", "team")
    section = Edge.objects.get(bank=bank, from_entry=jq, type__name="part_of").to_entry
    assert section.key == f"section:{index['jq'].fields['Section']}"
    assert section.kind.container
    # The or-group keeps its whole clause; the constraint is evidence, not part of the edge.
    readline = Edge.objects.get(
        bank=bank, from_entry__key="deb:readline-common", to_entry__key="deb:dpkg"
    )
    assert any("|" in clause for clause in readline.evidence["clauses"])
    assert readline.type.transitive
    # Virtual packages: the Depends went to the provider; Provides became its alias.
    via = Edge.objects.filter(bank=bank, type__name="depends_on", evidence__has_key="via")
    assert via.exists()
    edge = via.select_related("to_entry").first()
    assert Alias.objects.filter(bank=bank, entry=edge.to_entry, surface=edge.evidence["via"])


def test_every_provider_gets_an_alias_line():
    text = (
        "Package: exim4\nVersion: 1\nPriority: standard\nProvides: mail-transport-agent\n\n"
        "Package: postfix\nVersion: 1\nPriority: optional\nProvides: mail-transport-agent, "
        "Mail-Transport-Agent\n\n"
        "Package: mutt\nVersion: 1\nDepends: mail-transport-agent\n"
    )
    built = debian.build_lines(debian.parse_index(text))
    aliases = [(a["alias"], a["entry"]) for a in built.lines if a["type"] == "alias"]
    # Every (form, provider) pair once, whatever the spelling; the edge goes to the preferred.
    assert aliases == [
        ("Mail-Transport-Agent", "deb:postfix"),
        ("mail-transport-agent", "deb:exim4"),
    ]
    assert built.counts["aliases"] == 2
    edge = next(e for e in built.lines if e["type"] == "edge" and e["from"] == "deb:mutt")
    assert edge["to"] == "deb:exim4" and edge["evidence"]["via"] == "mail-transport-agent"


def test_a_virtual_package_of_several_providers_is_ambiguous(deb_bank):
    bank, result = deb_bank
    providers = {"deb:gawk", "deb:mawk"}
    assert (
        set(Alias.objects.filter(bank=bank, normalized="awk").values_list("entry__key", flat=True))
        == providers
    )
    answer = resolve(bank, "awk")
    assert answer.status == "ambiguous" and answer.matched == "alias"
    assert {c["key"] for c in answer.candidates} == providers
    # The import is still one operation with a history row per alias pair.
    assert Alias.history.filter(bank=bank, normalized="awk", history_type="+").count() == 2


def test_direct_dependencies_agree_with_apt(deb_bank):
    bank, result = deb_bank
    names = result["packages"]
    slice_names = set(names)
    apt = debian_compare.apt_dependency_groups(names)
    ours = debian_compare.graph_dependencies(bank, names)
    disagree = {}
    for name in names:
        expected = debian_compare.apt_expected_dependencies(apt[name], slice_names)
        if not debian_compare.dependencies_agree(ours[name], expected):
            disagree[name] = (sorted(ours[name]), [sorted(g) for g in expected])
    assert disagree == {}
    assert sum(len(deps) for deps in ours.values()) > len(names)  # not vacuously empty
    # The traversal service answers the same as the direct query.
    for name in ("jq", "curl", "gawk", "readline-common", "librust-bincode-dev"):
        assert debian_compare.traverse_dependencies(bank, name) == ours[name]


def test_reverse_dependencies_agree_with_apt(deb_bank):
    bank, result = deb_bank
    names = result["packages"]
    slice_names = set(names)
    sample = [n for n in ("libc6", "zlib1g", "libssl3", "dpkg", "librust-serde-dev") if n in names]
    assert len(sample) >= 4
    ours = debian_compare.graph_reverse_dependencies(bank, sample)
    rdepends = debian_compare.apt_reverse_dependencies(sample)
    forward = debian_compare.apt_dependency_groups(names)
    for name in sample:
        # apt's reverse dependencies by name, plus those that depend on a virtual package
        # apt lists ``name`` as a provider of (apt-cache rdepends does not follow Provides).
        possible = rdepends.get(name, set()) | {
            p
            for p in names
            for group in forward[p]
            for _, virtual, providers in group
            if virtual and name in providers
        }
        # Every dependent whose clause apt can satisfy only with ``name`` must point at it.
        certain = {
            p
            for p in names
            if {name} in debian_compare.apt_expected_dependencies(forward[p], slice_names)
        }
        assert ours[name], name
        assert certain <= ours[name] <= possible & slice_names, name
        assert debian_compare.traverse_dependencies(bank, name, "in") == ours[name]


def test_reimporting_the_slice_changes_nothing(deb_bank, index):
    bank, result = deb_bank
    edges = Edge.objects.filter(bank=bank).count()
    ops = Operation.objects.filter(bank=bank).count()
    again = debian.import_debian(bank, index=index, roots=ROOTS, closure=True)
    assert again["operation"] is None and again["created"] == 0
    assert again.get("edges_created", 0) == 0 and again.get("edges_updated", 0) == 0
    assert Edge.objects.filter(bank=bank).count() == edges
    assert Operation.objects.filter(bank=bank).count() == ops


def _stanza(package: debian.Package) -> str:
    lines = []
    for name, value in package.fields.items():
        first, *rest = value.split("\n")
        lines.append(f"{name}: {first}")
        lines.extend(f" {line}" for line in rest)
    return "\n".join(lines)


def test_command_imports_a_closure_from_a_dumpavail_file(
    db, hashing_embedder, index, deb_bank, tmp_path
):
    _, result = deb_bank
    dump = tmp_path / "dumpavail.txt"
    dump.write_text("\n\n".join(_stanza(index[n]) for n in result["packages"]) + "\n")
    out = io.StringIO()
    call_command(
        "import_debian",
        "deb-cmd",
        "--packages",
        "jq,sed",
        "--closure",
        "--file",
        str(dump),
        stdout=out,
        stderr=io.StringIO(),
    )
    assert "operation #" in out.getvalue()
    bank = Bank.objects.get(slug="deb-cmd")
    expected = debian.select_packages(index, roots=["jq", "sed"], closure=True)
    keys = set(Entry.objects.filter(bank=bank, kind__name="package").values_list("key", flat=True))
    assert keys == {f"deb:{n}" for n in expected}
    assert (
        debian_compare.graph_dependencies(bank, ["jq"])["jq"]
        == debian_compare.graph_dependencies(deb_bank[0], ["jq"])["jq"]
    )
