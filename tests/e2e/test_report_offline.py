"""The HTML report in a real browser with the network off: it renders, logs no console message
and no page error, makes no request beyond its own file, runs no script, and shows the numbers
`rageval evaluate --json` gives (read from the rendered page, not from the file's text)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli import rageval
from tests.paths import REPO

pytestmark = pytest.mark.e2e

SAMPLES = [REPO / "sample_runs" / f"{n}.jsonl" for n in ("bm25", "tfidf_char")]
HOSTILE = REPO / "tests" / "data" / "xss" / "hostile.jsonl"

#: what the rendered page holds: metric cells (run, metric, exact value), charts, scripts
READ = """() => ({
  cells: Array.from(document.querySelectorAll('td[data-metric]')).map(
      td => [td.dataset.run, td.dataset.metric, td.dataset.value, td.textContent]),
  charts: document.querySelectorAll('svg.chart').length,
  points: document.querySelectorAll('svg.chart circle').length,
  scripts: document.querySelectorAll('script').length,
  xss: typeof window.__xss,
  headings: Array.from(document.querySelectorAll('h2')).map(h => h.textContent),
})"""


def open_offline(browser: Any, path: Path) -> tuple[dict[str, Any], list[str], list[str]]:
    """Open path with the network off; (what READ found, console messages and errors, requests)."""
    ctx = browser.new_context(offline=True, viewport={"width": 1300, "height": 900})
    try:
        page = ctx.new_page()
        messages: list[str] = []
        requests: list[str] = []
        page.on("console", lambda m: messages.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: messages.append(f"pageerror: {e}"))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(path.as_uri(), wait_until="load")
        page.wait_for_timeout(500)  # anything late (a lazy fetch) would show up by now
        found = page.evaluate(READ)
    finally:
        ctx.close()
    return found, messages, [u for u in requests if u != path.as_uri()]


def test_report_opens_offline_with_evaluates_numbers(browser: Any, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    assert rageval("import", *map(str, SAMPLES), db=db).returncode == 0
    out = tmp_path / "report.html"
    made = rageval("report", "bm25", "tfidf_char", "--out", str(out), db=db)
    assert made.returncode == 0, made.stderr

    found, messages, requests = open_offline(browser, out)
    assert messages == []
    assert requests == []
    assert found["scripts"] == 0
    assert {"Metrics", "Comparison", "Curves over k", "Latency, tokens and cost"} <= set(
        found["headings"]
    )
    assert found["charts"] >= 8 and found["points"] > 100
    for i, run in enumerate(("bm25", "tfidf_char")):
        expected = json.loads(rageval("evaluate", run, "--json", db=db).stdout)["metrics"]
        shown = {m: (v, text) for r, m, v, text in found["cells"] if r == str(i)}
        assert set(shown) == set(expected)
        for name, value in expected.items():
            exact, text = shown[name]
            assert float(exact) == value, (run, name)
            assert text == f"{value:.4f}", (run, name)  # what the reader sees, rounded


def test_hostile_report_runs_nothing(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "hostile.html"
    assert rageval("report", str(HOSTILE), "--out", str(out)).returncode == 0
    found, messages, requests = open_offline(browser, out)
    assert messages == [] and requests == []
    assert found["xss"] == "undefined" and found["scripts"] == 0


#: as the browser draws it: each comparison row's metric, diff cell's colour and verdict text;
#: each chart's frame and the boxes of its markers and lines; the y tick labels
DRAWN = """() => ({
  rows: Array.from(document.querySelectorAll('table.comparison tbody tr')).map(tr => {
    const td = tr.querySelectorAll('td');
    return [td[0].textContent, getComputedStyle(td[5]).color, td[6].textContent];
  }),
  charts: Array.from(document.querySelectorAll('svg.chart')).map(svg => {
    const frame = svg.querySelector('rect.plot').getBoundingClientRect();
    const marks = Array.from(svg.querySelectorAll('circle, polyline')).map(el => {
      const b = el.getBoundingClientRect();
      return [b.left, b.top, b.right, b.bottom];
    });
    const ticks = Array.from(svg.querySelectorAll('text.tick[text-anchor="end"]'))
      .map(t => t.textContent);
    return [[frame.left, frame.top, frame.right, frame.bottom], marks, ticks];
  }),
})"""
GREEN, RED = "rgb(10, 110, 49)", "rgb(179, 38, 30)"


def test_report_colours_follow_each_metrics_direction(browser: Any, tmp_path: Path) -> None:
    """The issue's case as a reader sees it: hybrid_rerank's significant fall of
    ContextRelevance (higher is better) in red, its significant fall of BestRank (lower is
    better) in green, an insignificant change in neither; the charts' lines inside their plots
    and their ticks round."""
    db = tmp_path / "s.duckdb"
    runs = [REPO / "sample_runs" / f"{n}.jsonl" for n in ("bm25", "hybrid_rerank")]
    assert rageval("import", *map(str, runs), db=db).returncode == 0
    out = tmp_path / "report.html"
    metrics = ("--metrics", "ContextRelevance BestRank TokenF1 nDCG@10")
    fast = ("--permutations", "2000", "--bootstrap", "200")
    made = rageval("report", "bm25", "hybrid_rerank", *metrics, *fast, "--out", str(out), db=db)
    assert made.returncode == 0, made.stderr
    ctx = browser.new_context(offline=True, viewport={"width": 1300, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(out.as_uri(), wait_until="load")
        drawn = page.evaluate(DRAWN)
    finally:
        ctx.close()
    colour = {name.split(" (")[0]: (c, word) for name, c, word in drawn["rows"]}
    assert colour["ContextRelevance"] == (RED, "regressed")
    assert colour["BestRank"] == (GREEN, "improved")
    assert colour["nDCG@10"] == (GREEN, "improved")
    neutral, word = colour["TokenF1"]
    assert neutral not in (GREEN, RED) and word == ""
    assert drawn["charts"]
    for (left, top, right, bottom), marks, ticks in drawn["charts"]:
        assert marks
        for x0, y0, x1, y1 in marks:
            assert left < x0 and x1 < right and top < y0 and y1 < bottom
        values = [float(t) for t in ticks]
        steps = {round(b - a, 9) for a, b in itertools.pairwise(values)}
        assert len(steps) == 1 and all(round(v / min(steps), 9).is_integer() for v in values)
