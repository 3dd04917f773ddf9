"""A run whose every text field is hostile HTML/Markdown runs no script on any page.

tests/data/xss/hostile.jsonl puts <script>, <img onerror>, javascript: links (HTML and
Markdown) into the run name, query ids and texts, chunk texts, doc ids, evidence, answers, tag
keys and values and a latency stage. Each page (and the drilldown of each query) must leave
window.__xss undefined, open no dialog, put no javascript: link or on* handler in the DOM, and
show the text "<script>" as text.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

import pytest

from tests.e2e.harness import wait_idle

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
    assert found == {"xss": "undefined", "js_links": 0, "handlers": 0, "scripts": 0, "imgs_x": 0}, where
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
def test_pages_show_hostile_text_as_text(hostile_url: str, page: Any, dialogs: list[str],
                                         path: str) -> None:
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
def test_drilldown_of_hostile_queries(hostile_url: str, page: Any, dialogs: list[str],
                                      qid: str) -> None:
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


def test_latency_scatter_hover_shows_the_id_as_text(hostile_url: str, page: Any,
                                                    dialogs: list[str]) -> None:
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


#: a port where nothing listens: an image or link built from user text would point here
BEACON = "http://127.0.0.1:9"


def test_line_ending_tricks_make_no_request_to_another_address(tmp_path: Any, page: Any,
                                                                dialogs: list[str]) -> None:
    """Issue 13: `"\\r\\r![x](http://...)"` in a query, chunk, answer, reference or evidence (and a
    run name with line breaks) rendered a remote image. Every page and the drilldown of a run
    full of such text, in both runs' Compare: no request leaves the app's own origin."""
    import json

    from tests.e2e.conftest import import_runs, serve

    payload = "{brk}{brk}![x](" + BEACON + "/{where}.png) [l](" + BEACON + "/{where}) <img src=" + BEACON + "/{where}-tag.png>"
    breaks = ["\r", "\n", "\r\n", "\u2028", "\x85", "\v"]
    files = []
    for r, name in enumerate(("cr\rrun", "nl\nrun")):
        lines = [json.dumps({"rageval_run": {"name": name + payload.format(brk="\r", where=f"name{r}")}})]
        for i, brk in enumerate(breaks):
            at = lambda where, brk=brk, i=i, r=r: payload.format(brk=brk, where=f"{where}{r}{i}")  # noqa: E731
            lines.append(json.dumps({
                "query_id": f"q{i}", "query": "How much?" + at("query"),
                "retrieved": [{"doc_id": f"d{i}", "text": "The premium is 5 dollars." + at("chunk"), "score": 1.0},
                              {"doc_id": "x", "text": "other" + at("chunk2"), "score": 0.5}],
                "relevant_ids": [f"d{i}"] if r == 0 else ["x"],
                "evidence": ["The premium is 5 dollars." + at("evidence")],
                "answer": "5 dollars" + at("answer"), "reference_answer": "5 dollars" + at("reference"),
                "tags": {"kind": "t" + at("tag")}, "latency_ms": {"total": 10.0 + i},
            }))
        path = tmp_path / f"run{r}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        files.append(path)
    db = tmp_path / "store.duckdb"
    import_runs(db, files)
    elsewhere: list[str] = []
    with serve(db) as url:
        page.on("request", lambda req: elsewhere.append(req.url) if not req.url.startswith(url) else None)
        for path in [*PAGES, "compare", *(f"queries?q=q{i}" for i in range(len(breaks)))]:
            visit(page, f"{url}/{path}")
            time.sleep(0.3)  # images would be requested as the page draws
            assert page.locator("[data-testid='stException']").count() == 0, path
            found = page.locator(f"img[src^='{BEACON}'], a[href^='{BEACON}']")
            assert found.count() == 0, (path, found.first.evaluate("e => e.parentElement.outerHTML"))
    assert elsewhere == [], elsewhere
    assert dialogs == []
