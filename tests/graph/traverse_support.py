"""The hand-built graphs the traversal tests walk (test_traverse, test_traverse_api)."""

from __future__ import annotations

from graph.edges.links import link
from graph.models import Edge, EdgeType
from graph.traversal.walk import Step
from kb.models import Bank, Entry
from kb.services.entries import clean_entry_data, create_entry


class Graph:
    """Entries by title and edges between them, written through the services."""

    def __init__(self, bank: Bank):
        self.bank = bank
        self.by_title: dict[str, Entry] = {}

    def add(self, *titles: str, kind: str = "fact") -> list[Entry]:
        for title in titles:
            data = {"title": title, "content": f"About {title}.", "kind": kind}
            data["lifetime"] = {"durable": True}
            self.by_title[title] = create_entry(self.bank, clean_entry_data(self.bank, data))
        return [self.by_title[t] for t in titles]

    def __getitem__(self, title: str) -> Entry:
        return self.by_title[title]

    def link(self, a: str, b: str, relation: str = "see_also", **fields) -> Edge:
        for title in (a, b):
            if title not in self.by_title:
                self.add(title)
        payload = {"from": self[a].short_id, "to": self[b].short_id, "relation": relation}
        return link(self.bank, {**payload, **fields})

    def titles(self, result, path) -> list[str]:
        nodes, _ = path
        return [result.nodes[pk].title for pk in nodes]

    def path_titles(self, result) -> list[list[str]]:
        return [self.titles(result, path) for path in result.paths]


def define(bank: Bank, *names: str) -> None:
    """Bank-defined relations (depends_on, governed_by, requires_approval_from, …)."""
    for name in names:
        EdgeType.objects.create(bank=bank, name=name, inverse=f"{name}_of")


SIGN_OFF = [
    Step(("depends_on",), "in"),
    Step(("owned_by",), "out"),
    Step(("governed_by",), "out"),
    Step(("requires",), "out"),
]
