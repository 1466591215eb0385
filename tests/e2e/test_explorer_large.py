"""End to end in headless Chromium at 1366×768: the explorer of a bank too large to draw whole
(a generated clustered bank of 3,000 entries with a forced low threshold) opens on its
community overview, drills into a community (truncated, and saying so where the graph is) and
into a query's neighbourhood, labels the lit and selected entries in 3D and in 2D without
overlap or clipping, shows titles (not ids) in the answer panel, logs no console error, and
fits the window. Screenshots go to $KB_ARTIFACTS or /tmp/kb-explorer.
"""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import User
from django.db import connections

from graph.models import Community, CommunityMembership
from kb.models import Bank, Entry
from tests.e2e.scale_seed import seed_large_bank
from tests.e2e.test_explorer import (
    ARTIFACTS,
    NO_WEBGL,
    WEBGL,
    _launch,
    _login,
    _not_blank,
    _poll,
    _stage_png,
)
from tests.explorer.large_bank import MARKER, build_large_bank

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("browser"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

N = 3000
DRILL_MAX = 80
VIEWPORT = {"width": 1366, "height": 768}


@pytest.fixture
def large_bank(hashing_embedder, settings):
    settings.KB_EXPLORER_OVERVIEW_MIN = 1000  # forced low: 3,000 entries count as large
    settings.KB_EXPLORER_DRILL_MAX = DRILL_MAX
    bank = build_large_bank("big", N, hashing_embedder)
    User.objects.create_superuser("curator", password="pw-curator-123")
    return bank


def _labels_fit(page, kinds: set[str]) -> list[dict]:
    """The visible labels: at least one of ``kinds``, none overlapping, all inside the stage."""
    labels = page.evaluate("window.kbExplorer.state().labels")
    box = page.locator("#kbx-stage").bounding_box()
    assert {label["kind"] for label in labels} & kinds, labels
    for i, a in enumerate(labels):
        assert a["x"] >= 0 and a["y"] >= 0, a
        assert a["x"] + a["w"] <= box["width"] + 0.5 and a["y"] + a["h"] <= box["height"] + 0.5, a
        for b in labels[i + 1 :]:
            apart = (
                a["x"] + a["w"] <= b["x"] + 0.5
                or b["x"] + b["w"] <= a["x"] + 0.5
                or a["y"] + a["h"] <= b["y"] + 0.5
                or b["y"] + b["h"] <= a["y"] + 0.5
            )
            assert apart, (a, b)
    return labels


def _fits_window(page) -> None:
    size = page.evaluate(
        "({w: document.documentElement.scrollWidth, h: document.documentElement.scrollHeight})"
    )
    assert size["w"] <= VIEWPORT["width"] and size["h"] <= VIEWPORT["height"], size
    for selector in ("#kbx-stage", "#kbx-panel", ".kbx-side"):
        box = page.locator(selector).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= VIEWPORT["width"] + 0.5, selector
        assert box["y"] + box["height"] <= VIEWPORT["height"] + 0.5, selector


def _console_errors(page) -> list[str]:
    errors: list[str] = []
    # The login page's /favicon.ico 404 is the site's, not the explorer's.
    page.on(
        "console",
        lambda m: (
            errors.append(f"{m.text} at {m.location.get('url')}")
            if m.type == "error" and not m.location.get("url", "").endswith("/favicon.ico")
            else None
        ),
    )
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def _overview(page, bank) -> list[Community]:
    """The overview: one node per community, labelled with its count."""
    communities = list(Community.objects.filter(bank=bank).order_by("-size", "id"))
    state = page.evaluate("window.kbExplorer.state()")
    assert state["large"] is True and state["view"]["level"] == "communities"
    assert state["mode"] == "3d"
    assert sorted(state["nodes"]) == sorted(f"community:{c.pk}" for c in communities)
    page.wait_for_timeout(1000)
    labels = _labels_fit(page, {"community"})
    assert any(f"{communities[0].size:,}" in label["text"] for label in labels)
    assert "3,000 entries" in page.locator("#kbx-where").inner_text()
    _fits_window(page)
    _not_blank(page, ARTIFACTS / "large-overview-3d.png", _stage_png(page))
    return communities


def _open_community(page, biggest: Community, cap: int) -> None:
    """Drill into a community through the search box: truncated, and the notice sits on the
    stage, inside the window."""
    page.fill("#kbx-search", biggest.label[:14])
    page.locator(f'#kbx-search-results li[data-id="community:{biggest.pk}"]').dispatch_event(
        "mousedown"
    )
    _poll(page, "document.body.dataset.view === 'community'")
    state = page.evaluate("window.kbExplorer.state()")
    central = set(
        CommunityMembership.objects.filter(community=biggest)
        .order_by("-centrality", "entry_id")
        .values_list("entry__short_id", flat=True)[:cap]
    )
    assert set(state["nodes"]) == central and state["truncated"] is True
    notice = page.locator("#kbx-notice")
    assert notice.is_visible() and f"of its {biggest.size:,}" in notice.inner_text()
    stage, box = page.locator("#kbx-stage").bounding_box(), notice.bounding_box()
    assert stage["x"] <= box["x"] and box["x"] + box["width"] <= stage["x"] + stage["width"]
    assert stage["y"] <= box["y"] and box["y"] + box["height"] <= VIEWPORT["height"]


def _answer(page, bank) -> dict:
    """A query opens the answer's neighbourhood, lit and labelled; the panel shows titles."""
    with page.expect_response(lambda r: r.url.endswith(f"/api/v1/banks/{bank.slug}/query")) as resp:
        lit = page.evaluate(f"window.kbExplorer.query('{MARKER} marker', {{lexical: true}})")
    fold = resp.value.json()
    assert fold["results"], fold
    expected = {r["id"] for r in fold["results"]}
    for r in fold["results"]:
        expected |= {i["id"] for i in r["related"]} | {i["id"] for i in r["neighbors"]}
    state = page.evaluate("window.kbExplorer.state()")
    assert state["view"]["level"] == "around" and set(lit) == expected
    assert expected <= set(state["nodes"])
    page.wait_for_timeout(1200)
    _labels_fit(page, {"lit"})
    links = page.locator("#kbx-panel-body a.kbx-go")
    assert links.count() > 0
    for i in range(links.count()):
        link = links.nth(i)
        assert link.inner_text() != link.get_attribute("data-id")
    titles = dict(Entry.objects.filter(bank=bank).values_list("short_id", "title"))
    panel = page.locator("#kbx-panel-body").inner_text()
    for entry_id in expected:
        assert titles[entry_id] in panel
    _not_blank(page, ARTIFACTS / "large-answer-3d.png", page.screenshot())
    return fold


def _selected_labels(page, target: str) -> None:
    """Selecting a result marks it with its own label, in 3D and in 2D."""
    page.evaluate(f"window.kbExplorer.select({target!r})")
    page.wait_for_selector(f'article.kbx-entry[data-id="{target}"]')
    page.wait_for_timeout(1200)
    labels = _labels_fit(page, {"selected"})
    assert [label["id"] for label in labels if label["kind"] == "selected"] == [target]
    _not_blank(page, ARTIFACTS / "large-selected-3d.png", page.screenshot())
    page.click("#kbx-mode-2d")
    page.evaluate(f"window.kbExplorer.select({target!r})")
    page.wait_for_selector(f'article.kbx-entry[data-id="{target}"]')
    page.wait_for_timeout(1200)
    labels = _labels_fit(page, {"selected", "lit"})
    assert any(label["kind"] == "selected" for label in labels)
    _not_blank(page, ARTIFACTS / "large-selected-2d.png", page.screenshot())


def test_large_bank_overview_drill_downs_and_labels(live_server, large_bank):
    manager, browser = _launch(WEBGL)
    try:
        page = browser.new_page(viewport=VIEWPORT)
        errors = _console_errors(page)
        _login(page, live_server.url, "/explorer/big/")
        page.wait_for_selector("body[data-ready='true']", timeout=60_000)
        communities = _overview(page, large_bank)
        _open_community(page, communities[0], DRILL_MAX)
        page.wait_for_timeout(800)
        _not_blank(page, ARTIFACTS / "large-community-3d.png", _stage_png(page))
        fold = _answer(page, large_bank)
        _selected_labels(page, fold["results"][0]["id"])
        # Back to the overview, in 2D.
        page.click("#kbx-back")
        _poll(page, "document.body.dataset.view === 'communities'")
        page.wait_for_timeout(800)
        _labels_fit(page, {"community"})
        _fits_window(page)
        _not_blank(page, ARTIFACTS / "large-overview-2d.png", page.screenshot())
        assert errors == []
    finally:
        browser.close()
        manager.stop()
        connections.close_all()


def _timed(page, action, done: str) -> float:
    started = time.perf_counter()
    action()
    _poll(page, done)
    return time.perf_counter() - started


def test_debian_size_bank_opens_fast_and_finds_any_entry(live_server):
    """65,000 entries (set-wise seed, ``scale_seed``): the overview, the largest community
    (12,000 entries, 1,000 drawn, the layout cached after the first visit), and an entry
    that is not drawn found by the bank's own search and opened in its neighbourhood."""
    bank = Bank.objects.create(slug="debian-size", name="Debian-size packages")
    seeded = seed_large_bank(bank)
    User.objects.create_superuser("curator", password="pw-curator-123")
    manager, browser = _launch(NO_WEBGL)
    try:
        page = browser.new_page(viewport=VIEWPORT)
        errors = _console_errors(page)
        _login(page, live_server.url, f"/explorer/{bank.slug}/")
        page.wait_for_selector("body[data-ready='true']", timeout=120_000)
        state = page.evaluate("window.kbExplorer.state()")
        assert state["view"]["level"] == "communities"
        assert len(state["nodes"]) == seeded["clusters"]
        _fits_window(page)
        page.screenshot(path=str(ARTIFACTS / "debian-size-overview.png"))
        biggest = Community.objects.filter(bank=bank).order_by("-size", "id").first()
        first = _timed(
            page,
            lambda: page.evaluate(
                f"window.kbExplorer.open({{level: 'community', community: {biggest.pk}}})"
            ),
            "document.body.dataset.view === 'community'",
        )
        state = page.evaluate("window.kbExplorer.state()")
        assert len(state["nodes"]) == 1000 and state["truncated"] is True
        assert "of its 12,000" in page.locator("#kbx-notice").inner_text()
        _fits_window(page)
        page.screenshot(path=str(ARTIFACTS / "debian-size-community.png"))
        page.click("#kbx-back")
        _poll(page, "document.body.dataset.view === 'communities'")
        again = _timed(
            page,
            lambda: page.evaluate(
                f"window.kbExplorer.open({{level: 'community', community: {biggest.pk}}})"
            ),
            "document.body.dataset.view === 'community'",
        )
        print(f"largest community drawn in {first:.1f} s, again (cached layout) in {again:.1f} s")
        # An entry far from anything drawn: found by the bank's search, opened around it.
        target = Entry.objects.filter(bank=bank, title__startswith="web-pkg-").order_by("pk").last()
        assert target.short_id not in page.evaluate("window.kbExplorer.state().nodes")
        page.fill("#kbx-search", target.title)
        hit = page.locator(f'#kbx-search-results li[data-id="{target.short_id}"]')
        hit.wait_for(timeout=30_000)
        assert hit.get_attribute("data-remote") == "true" and "not drawn" in hit.inner_text()
        hit.dispatch_event("mousedown")
        _poll(page, "document.body.dataset.view === 'around'")
        page.wait_for_selector(f'article.kbx-entry[data-id="{target.short_id}"]')
        assert target.short_id in page.evaluate("window.kbExplorer.state().nodes")
        _fits_window(page)
        page.screenshot(path=str(ARTIFACTS / "debian-size-found.png"))
        assert errors == []
    finally:
        browser.close()
        manager.stop()
        connections.close_all()
