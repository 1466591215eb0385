"""The flow diagram: laid out by Graphviz dot, valid XML, labels inside their own shapes and
clear of every other shape, holes linked to their findings, long flows kept narrow."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from workflows.services.diagram import render_diagram
from workflows.services.reports import ensure_report, report_findings
from workflows.services.subgraph import load_process_graph

pytestmark = pytest.mark.django_db
SVG = "{http://www.w3.org/2000/svg}"


def _draw(f):
    findings = report_findings(ensure_report(f.bank, f.process))
    graph = load_process_graph(f.bank, f.process)
    return render_diagram(graph, findings, link_base="/p/"), findings


def _boxes(root) -> dict[str, tuple[float, float, float, float]]:
    """Each node's shape bounding box (x0, y0, x1, y1), by its id."""
    boxes = {}
    for g in root.iter(f"{SVG}g"):
        if "node" not in (g.get("class") or "").split():
            continue
        xs, ys = [], []
        for shape in [*g.iter(f"{SVG}polygon"), *g.iter(f"{SVG}path"), *g.iter(f"{SVG}ellipse")]:
            coords = shape.get("points") or shape.get("d") or ""
            numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", coords)]
            xs += numbers[0::2]
            ys += numbers[1::2]
        if xs:
            boxes[g.get("id")] = (min(xs), min(ys), max(xs), max(ys))
    return boxes


def _texts(root):
    for g in root.iter(f"{SVG}g"):
        if "node" in (g.get("class") or "").split():
            for text in g.iter(f"{SVG}text"):
                size = float(text.get("font-size") or 11)
                width = 0.5 * size * len(text.text or "")  # about half an em per character
                x = float(text.get("x"))
                if text.get("text-anchor") == "middle":
                    x -= width / 2
                elif text.get("text-anchor") == "end":
                    x -= width
                yield g.get("id"), x, x + width, float(text.get("y")), size, text.text or ""


def test_flow_svg_is_valid_xml_and_labels_sit_inside_their_own_shapes(holey_flow):
    diagram, findings = _draw(holey_flow)
    svg = str(diagram.svg)
    root = ET.fromstring(svg)  # raises on invalid XML (e.g. an attribute written twice)
    assert root.tag == f"{SVG}svg" and "flow" in root.get("class").split()
    assert (
        "xlink" not in svg
        and "<!DOCTYPE" not in svg
        and "http://" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
    )
    boxes = _boxes(root)
    assert len(boxes) >= 4
    for node_id, left, right, y, size, text in _texts(root):
        x0, y0, x1, y1 = boxes[node_id]
        middle = (left + right) / 2
        assert x0 <= middle <= x1 and y0 <= y <= y1, (node_id, text)
        for other, (a0, b0, a1, b1) in boxes.items():
            if other == node_id:
                continue
            overlaps = left < a1 and right > a0 and y - size * 0.8 < b1 and y > b0
            assert not overlaps, (text, node_id, other)
    # Every open finding's entry is a hole linking to a finding of the table.
    links = [a.get("href") for a in root.iter(f"{SVG}a") if "hole" in (a.get("class") or "")]
    assert links and all(re.fullmatch(r"/p/#finding-\d+", href) for href in links)
    assert {int(h.rsplit("-", 1)[1]) for h in links} <= {f.pk for f in findings}


def test_flow_svg_has_no_duplicate_attributes(healthy):
    diagram, _ = _draw(healthy)
    svg = str(diagram.svg)
    ET.fromstring(svg)
    for tag in re.findall(r"<[a-zA-Z][^>]*>", svg):
        names = re.findall(r'\s([a-zA-Z_:][\w:.-]*)="', tag)
        assert len(names) == len(set(names)), tag


def test_a_long_process_stays_narrow(flow):
    f = flow("Thirty steps")
    steps = [f.step(f"Step number {i}", start=(i == 0)) for i in range(30)]
    f.chain(*steps)
    diagram, _ = _draw(f)
    ET.fromstring(str(diagram.svg))
    assert diagram.width < 1200, diagram.width  # top to bottom, not 30 columns wide
    assert diagram.height > diagram.width


@pytest.fixture
def holey_flow(flow):
    f = flow("Order to cash")
    start = f.step("Receive order", start=True)
    ok = f.decision("Credit ok?")
    ship = f.step("Ship goods & <invoice>", owner=None)
    f.chain(start, ok, ship)
    f.link(ship, f.artifact("Signed rate agreement"), "requires")
    return f
