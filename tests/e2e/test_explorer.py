"""End to end in headless Chromium: a curator opens the graph explorer of the demo engineering
bank, checks the drawing against the API, asks a question and sees exactly the fold answer lit,
clicks an entry, switches between 3D and 2D, and sees an entry's neighbourhood on its admin
page. Screenshots (checked for content, not blankness) go to $KB_ARTIFACTS or /tmp/kb-explorer.
"""

from __future__ import annotations

import base64
import os
import time
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import connections

from kb.models import Bank, Entry
from kb.services.bulk import import_bank

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
NO_NETWORK = [
    "--no-sandbox",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Software WebGL (SwiftShader) so the 3D path runs headless; the no-GPU launch tests the fallback.
WEBGL = ["--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]
NO_WEBGL = ["--disable-gpu", "--disable-webgl", "--disable-3d-apis"]
DEMO = Path(__file__).resolve().parents[2] / "kb" / "demo"
ARTIFACTS = Path(os.environ.get("KB_ARTIFACTS", "/tmp/kb-explorer"))
QUESTION = "billing database postgres"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("browser"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def _launch(extra_args):
    from playwright.sync_api import sync_playwright

    manager = sync_playwright().start()
    browser = manager.chromium.launch(
        executable_path=CHROMIUM, args=NO_NETWORK + extra_args, headless=True
    )
    return manager, browser


@pytest.fixture
def demo_bank(hashing_embedder, monkeypatch):
    # No vectors are written: pgserver's pgvector build runs AVX-512 code in vector_norm (every
    # cosine HNSW insert) and dies with SIGILL on CPUs without it. The fold query then ranks
    # through its lexical arm, which is still the whole fold (groups, pointers, neighbours).
    from kb import tasks

    monkeypatch.setattr(tasks.embed_entries_task, "delay", lambda *args, **kwargs: None)
    bank = Bank.objects.create(slug="eng", name="Larkspur Freight engineering", kind="engineering")
    for name in ("engineering.jsonl", "engineering_edges.jsonl"):
        import_bank(bank, (DEMO / name).read_text(encoding="utf-8"), reason="demo data")
    User.objects.create_superuser("curator", password="pw-curator-123")
    return bank


def _login(page, base: str, next_url: str) -> None:
    page.goto(f"{base}/admin/login/?next={next_url}")
    page.fill("#id_username", "curator")
    page.fill("#id_password", "pw-curator-123")
    page.click("input[type=submit]")


PIXEL_STATS = """async (b64) => {
  const img = new Image();
  img.src = 'data:image/png;base64,' + b64;
  await img.decode();
  const canvas = document.createElement('canvas');
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  const ctx = canvas.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
  let n = 0, sum = 0, sq = 0; const colours = new Set();
  for (let i = 0; i < data.length; i += 4 * 7) {
    const grey = 0.299 * data[i] + 0.587 * data[i + 1] + 0.114 * data[i + 2];
    n += 1; sum += grey; sq += grey * grey;
    colours.add((data[i] >> 3) << 10 | (data[i + 1] >> 3) << 5 | (data[i + 2] >> 3));
  }
  const mean = sum / n;
  return {stddev: Math.sqrt(Math.max(0, sq / n - mean * mean)), colours: colours.size};
}"""


def _not_blank(page, path: Path, png: bytes, min_stddev: float = 4.0) -> None:
    """Save the screenshot and check it has content: pixel variance and distinct colours
    (decoded by the browser's own canvas, so no imaging library is needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)
    stats = page.evaluate(PIXEL_STATS, base64.b64encode(png).decode())
    assert stats["stddev"] > min_stddev and stats["colours"] > 20, (path, stats)


def _poll(page, expression: str, seconds: float = 30.0) -> None:
    """Wait until ``expression`` is true. (Playwright's wait_for_function evaluates a string
    with eval, which the site's strict CSP forbids; page.evaluate goes through DevTools.)"""
    deadline = time.monotonic() + seconds
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        page.wait_for_timeout(200)


def _stage_png(page) -> bytes:
    return page.locator("#kbx-stage").screenshot()


def _explore(page, base: str, bank: Bank, label: str) -> dict:
    """The shared journey; returns the page state at the end."""
    _login(page, base, f"/explorer/{bank.slug}/")
    page.wait_for_selector("body[data-ready='true']", timeout=30_000)
    api = page.evaluate(
        "fetch('/api/v1/banks/eng/graph?include_backfill=true').then(r => r.json())"
    )
    state = page.evaluate("window.kbExplorer.state()")
    assert state["total"] == len(api["nodes"]) == Entry.objects.filter(bank=bank).count()
    assert sorted(state["nodes"]) == sorted(n["id"] for n in api["nodes"])
    # Note-less backfill edges are hidden by default; every other edge is drawn.
    hidden = [
        x
        for x in api["links"]
        if x["source"].endswith(("backfill", "header_parse")) and not x["has_note"]
    ]
    assert len(state["links"]) == len(api["links"]) - len(hidden)
    page.wait_for_timeout(1200)
    _not_blank(page, ARTIFACTS / f"{label}-whole.png", _stage_png(page))

    # Ask: the lit ids are exactly the fold answer's results, pointers and neighbours.
    with page.expect_response(lambda r: r.url.endswith("/api/v1/banks/eng/query")) as answer:
        lit = page.evaluate(f"window.kbExplorer.query({QUESTION!r}, {{lexical: true}})")
    fold = answer.value.json()
    expected = {r["id"] for r in fold["results"]}
    for r in fold["results"]:
        expected |= {i["id"] for i in r["related"]} | {i["id"] for i in r["neighbors"]}
    assert len(fold["results"]) > 0
    assert set(lit) == expected
    state = page.evaluate("window.kbExplorer.state()")
    assert set(state["highlighted"]) == expected
    # Lit edges are the drawn edges between lit entries.
    between = {x["id"] for x in state["links"] if x["from"] in expected and x["to"] in expected}
    assert set(state["litLinks"]) == between
    panel = page.locator("#kbx-panel-body")
    assert panel.locator("li.kbx-result").count() == len(fold["results"])
    assert fold["results"][0]["title"] in panel.inner_text()
    page.wait_for_timeout(1500)
    _not_blank(page, ARTIFACTS / f"{label}-answer.png", page.screenshot())

    # Search-as-you-type, then click a result in the panel: the entry with its edges.
    target = fold["results"][0]
    page.fill("#kbx-search", target["title"][:12])
    page.wait_for_selector(f'#kbx-search-results li[data-id="{target["id"]}"]')
    page.locator(f'#kbx-search-results li[data-id="{target["id"]}"]').dispatch_event("mousedown")
    page.wait_for_selector(f'article.kbx-entry[data-id="{target["id"]}"]')
    entry_panel = page.locator("article.kbx-entry")
    assert target["title"] in entry_panel.inner_text()
    admin_href = entry_panel.locator("a.kbx-button").get_attribute("href")
    assert admin_href.endswith(f"/explorer/eng/entry/{target['id']}/admin/")
    assert page.evaluate("window.kbExplorer.state().selected") == target["id"]
    return state


def _click_a_node(page, mode: str) -> None:
    """Click the centre of the canvas after flying to a node, and expect the entry panel."""
    node = page.evaluate("window.kbExplorer.state().highlighted[0]")
    page.evaluate(f"window.kbExplorer.select({node!r})")
    page.wait_for_timeout(1200)  # the camera flies to it: it is now under the centre
    box = page.locator("#kbx-stage").bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector("article.kbx-entry")


def test_explorer_in_3d_with_software_webgl(live_server, demo_bank):
    manager, browser = _launch(WEBGL)
    try:
        page = browser.new_page(viewport={"width": 1500, "height": 950})
        webgl = (
            page.evaluate("!!document.createElement('canvas').getContext('webgl')")
            if page.goto("about:blank") is None
            else True
        )
        if not webgl:
            pytest.fail("SwiftShader WebGL did not start in this Chromium: the 3D path is untested")
        state = _explore(page, live_server.url, demo_bank, "3d")
        assert page.evaluate("window.kbExplorer.state().mode") == "3d"
        assert state["webgl"] is True
        # Switch to 2D and back: same nodes, same answer lit.
        page.click("#kbx-mode-2d")
        after = page.evaluate("window.kbExplorer.state()")
        assert after["mode"] == "2d" and after["highlighted"] == state["highlighted"]
        page.wait_for_timeout(1000)
        _not_blank(page, ARTIFACTS / "3d-then-2d.png", _stage_png(page))
        page.click("#kbx-mode-3d")
        assert page.evaluate("window.kbExplorer.state().mode") == "3d"
    finally:
        browser.close()
        manager.stop()
        connections.close_all()


def test_explorer_falls_back_to_2d_without_webgl(live_server, demo_bank):
    manager, browser = _launch(NO_WEBGL)
    try:
        page = browser.new_page(viewport={"width": 1500, "height": 950})
        _explore(page, live_server.url, demo_bank, "2d")
        state = page.evaluate("window.kbExplorer.state()")
        assert state["mode"] == "2d" and state["webgl"] is False
        assert page.locator("#kbx-mode-3d").is_disabled()
        assert page.locator("#kbx-banner").is_visible()
        _click_a_node(page, "2d")
        # The toggle shows the note-less backfill edges again.
        before = len(state["links"])
        page.uncheck("#kbx-hide-backfill")
        assert len(page.evaluate("window.kbExplorer.state().links")) >= before
    finally:
        browser.close()
        manager.stop()
        connections.close_all()


def test_entry_admin_page_shows_its_neighbourhood(live_server, demo_bank):
    hub = max(
        Entry.objects.filter(bank=demo_bank),
        key=lambda e: e.edges_out.count() + e.edges_in.count(),
    )
    manager, browser = _launch(NO_WEBGL)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        _login(page, live_server.url, f"/admin/kb/entry/{hub.pk}/change/")
        image = page.locator("img.kb-neighbourhood")
        image.wait_for()
        _poll(page, "document.querySelector('img.kb-neighbourhood').naturalWidth > 0")
        image.scroll_into_view_if_needed()
        _not_blank(page, ARTIFACTS / "neighbourhood.png", image.screenshot())
        link = page.locator("a", has_text="Open in the graph explorer")
        assert link.get_attribute("href") == f"/explorer/eng/#{hub.short_id}"
        link.click()
        page.wait_for_selector("body[data-ready='true']", timeout=30_000)
        _poll(page, "Boolean(window.kbExplorer.state().selected)")
        assert page.evaluate("window.kbExplorer.state().selected") == hub.short_id
    finally:
        browser.close()
        manager.stop()
        connections.close_all()
