"""A run whose every text field is hostile HTML/Markdown runs no script on any page.

tests/data/xss/hostile.jsonl puts <script>, <img onerror>, javascript: links (HTML and
Markdown) into the run name, query ids and texts, chunk texts, doc ids, evidence, answers, tag
keys and values and a latency stage. Each page (and the drilldown of each query) must leave
window.__xss undefined, open no dialog, put no javascript: link or on* handler in the DOM, and
show the text "<script>" as text.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import quote

import pytest

from rageval_dashboard import keys
from tests.e2e.harness import open_tab, wait_idle

pytestmark = pytest.mark.e2e

SCRIPT = "<script>window.__xss=1</script>"
EVIDENCE = 'The premium is <img src=x onerror="window.__xss=1"> 500 dollars a month <script>window.__xss=1</script>.'
PAGES = ["", "queries", "threshold", "latency", "runs"]
QUERIES = ["xss-1", '<img src=x onerror="window.__xss=1">', "xss-3"]

#: nodes that only exist if user text became markup
INJECTED = """() => ({
  xss: typeof window.__xss,
  js_links: Array.from(document.querySelectorAll('a[href], [*|href]')).filter(
      a => /^\\s*javascript:/i.test(a.getAttribute('href') || a.getAttribute('xlink:href') || '')).length,
  handlers: Array.from(document.querySelectorAll('*')).filter(
      e => Array.from(e.attributes).some(a => /^on/i.test(a.name))).length,
  scripts: Array.from(document.querySelectorAll('script')).filter(
      s => (s.textContent || '').includes('__xss')).length,
  imgs_x: document.querySelectorAll('img[src="x"]').length,
})"""


def assert_inert(page: Any, dialogs: list[str], where: str) -> None:
    found = page.evaluate(INJECTED)
    assert found == {"xss": "undefined", "js_links": 0, "handlers": 0, "scripts": 0, "imgs_x": 0}, (
        where
    )
    assert dialogs == [], f"{where}: a dialog opened: {dialogs}"
    assert page.locator("[data-testid='stException']").count() == 0, where


def visit(page: Any, url: str) -> None:
    page.goto(url)
    wait_idle(page)


@pytest.fixture()
def dialogs(page: Any) -> list[str]:
    opened: list[str] = []

    def record(dialog: Any) -> None:
        opened.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    return opened


@pytest.mark.parametrize("path", PAGES)
def test_pages_show_hostile_text_as_text(
    hostile_url: str, page: Any, dialogs: list[str], path: str
) -> None:
    visit(page, f"{hostile_url}/{path}")
    assert_inert(page, dialogs, path or "overview")
    # the run name is shown as typed in the sidebar's run picker on every page ...
    run = page.locator("[data-testid='stSidebar']").get_by_role("combobox", name="Run")
    assert run.is_visible() and run.input_value() == SCRIPT
    # ... and the page's own user text too: as text nodes, or as cells of a (canvas) grid
    assert shows_text(page, "<script>"), f"{path or 'overview'}: no <script> shown as text"


def shows_text(page: Any, text: str, timeout_s: float = 10.0, grids: bool = True) -> bool:
    """text is visible in a text node, or (grids) in a cell of a dataframe (drawn on a canvas).

    A grid fills its cells (kept in the DOM for assistive tech) after it has drawn: poll.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        if any(node.is_visible() for node in page.get_by_text(text, exact=False).all()):
            return True
        frames = page.locator("[data-testid='stDataFrame']").all() if grids else []
        if any(text in (g.text_content() or "") for g in frames):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)


@pytest.mark.parametrize("qid", QUERIES)
def test_drilldown_of_hostile_queries(
    hostile_url: str, page: Any, dialogs: list[str], qid: str
) -> None:
    visit(page, f"{hostile_url}/queries?q={quote(qid)}")
    assert_inert(page, dialogs, f"drilldown {qid}")
    assert shows_text(page, f"Query {qid}", grids=False)
    assert shows_text(page, "<script>")
    if qid == "xss-1":
        # the query text, with its tags, is shown as typed
        assert shows_text(page, f"{SCRIPT} How much is the premium?", grids=False)
        # the gold span is found verbatim in the first chunk: the mark holds it as text
        marks = page.locator(".rageval-chunk mark.rageval-hit:not(.weak)").all_text_contents()
        assert EVIDENCE in marks


def test_latency_scatter_hover_shows_the_id_as_text(
    hostile_url: str, page: Any, dialogs: list[str]
) -> None:
    visit(page, f"{hostile_url}/latency")
    # the legend of the scatter (coloured by a hostile tag) draws tag values as SVG text
    legends = page.locator("[data-testid='stPlotlyChart'] .legendtext").all_text_contents()
    assert SCRIPT in legends
    # the scatter's points carry the query ids; hovering each shows its id as text
    chart = page.locator("[data-testid='stPlotlyChart']").nth(3)
    points = chart.locator(".scatterlayer .point")
    assert points.count() == len(QUERIES)
    label = chart.locator(".hoverlayer .hovertext")
    seen = []
    for i in range(points.count()):
        page.mouse.move(1, 1)  # away first, so the label read next is this point's own
        label.first.wait_for(state="detached")
        points.nth(i).hover(force=True)
        label.first.wait_for()
        seen.append(" ".join(label.all_text_contents()))
    assert sorted(q for q in QUERIES if any(q in h for h in seen)) == sorted(QUERIES)
    assert_inert(page, dialogs, "latency hover")


#: images and links the page holds that point outside the app's own origin (data: and blob:
#: URLs are the page's own); SVG <image> too (plotly draws layout images with it)
OFF_ORIGIN = """() => {
  const off = u => {
    try { const x = new URL(u, location.href);
          return !['data:', 'blob:'].includes(x.protocol) && x.origin !== location.origin; }
    catch (e) { return true; }
  };
  const src = e => e.getAttribute('src') || e.getAttribute('srcset') || e.getAttribute('href')
                   || e.getAttribute('xlink:href');
  return {
    images: Array.from(document.querySelectorAll('img, image, source, picture, video, audio'))
                 .map(src).filter(u => u && off(u)),
    links: Array.from(document.querySelectorAll('a[href], [*|href]:not(image)'))
                .map(e => e.getAttribute('href') || e.getAttribute('xlink:href')).filter(off),
  };
}"""


@pytest.fixture()
def requested(page: Any) -> list[str]:
    """Every URL the page requests from now on (documents, scripts, images, fonts, fetches)."""
    urls: list[str] = []
    page.on("request", lambda req: urls.append(req.url))
    return urls


def elsewhere(urls: list[str], app_url: str) -> list[str]:
    """The URLs whose origin is not the app's (data: URLs are no request)."""
    return [
        u
        for u in urls
        if not u.startswith(f"{app_url}/") and u != app_url and not u.startswith("data:")
    ]


def assert_stays_home(page: Any, requested: list[str], app_url: str, where: str) -> None:
    """No image, link or request points outside the app's origin."""
    time.sleep(0.3)  # images would be requested as the page draws
    assert page.locator("[data-testid='stException']").count() == 0, where
    assert page.evaluate(OFF_ORIGIN) == {"images": [], "links": []}, where
    assert elsewhere(requested, app_url) == [], where


def test_hostile_run_requests_nothing_elsewhere(
    hostile_url: str, page: Any, dialogs: list[str], requested: list[str]
) -> None:
    for path in [*PAGES, "compare", *(f"queries?q={quote(q)}" for q in QUERIES)]:
        visit(page, f"{hostile_url}/{path}")
        assert_stays_home(page, requested, hostile_url, path)
    assert dialogs == []


RUNS = ["cr\r![x](http://127.0.0.1:9/name-a.png)", "nl\n![x](http://127.0.0.1:9/name-b.png)"]


def test_line_ending_tricks_make_no_request_to_another_address(
    breaks_url: str, page: Any, dialogs: list[str], requested: list[str]
) -> None:
    """Issue 13: `"\\r\\r![x](http://...)"` in a query, chunk, answer, reference or evidence (and
    a run name with line breaks) rendered a remote image. tests/data/xss/breaks_*.jsonl put
    such payloads, behind every line-break form, in every field of two runs whose names hold a
    CR and an LF: every page of each, their Compare (with a query opened side by side) and the
    drilldown of every query of the first make zero requests outside the app's own origin, and
    hold no image or link pointing outside it. (The second run's queries carry the same fields
    behind the same line breaks, so its drilldowns would render nothing new; its name, which
    differs, is on every page and in Compare.)"""
    from tests.e2e.conftest import BREAKS

    visits = 0
    for run, data in zip(RUNS, BREAKS, strict=True):
        ids = [
            json.loads(line)["query_id"]
            for line in data.read_text(encoding="utf-8").splitlines()[1:]
        ]
        drilldowns = ids if run == RUNS[0] else []
        # every Compare tab: only the open one runs
        tabs = [f"compare?{keys.COMPARE_SECTION}={quote(t)}" for t in keys.COMPARE_SECTIONS]
        for path in [*PAGES, *tabs, *(f"queries?q={quote(q)}" for q in drilldowns)]:
            sep = "&" if "?" in path else "?"
            visit(page, f"{breaks_url}/{path}{sep}run={quote(run)}")
            assert_stays_home(page, requested, breaks_url, f"{path} of {run!r}")
            visits += 1
    # Compare of the first run (the sidebar's, so the baseline) with the second: open a regressed query
    visit(page, f"{breaks_url}/compare?run={quote(RUNS[0])}")
    open_tab(page, "Per query")
    picker = page.get_by_role("combobox", name="Open a regressed query")
    picker.click()
    picker.press("ArrowDown")  # opens the list
    page.get_by_role("option").nth(1).click()
    wait_idle(page)
    detail = page.locator(".st-key-compare-detail-candidate")
    detail.wait_for()
    assert detail.locator(".rageval-chunk").count() >= 1
    assert_stays_home(page, requested, breaks_url, "compare side by side")
    # the run names are shown as written (a line break drawn as one), not as an image
    assert page.locator(".st-key-compare-detail-baseline").inner_text().startswith("cr\n![x](http")
    assert detail.inner_text().startswith("nl\n![x](http")
    assert (
        visits == 2 * (len(PAGES) + len(tabs)) + 11 and len(requested) > visits
    )  # the pages did load
    assert dialogs == []
