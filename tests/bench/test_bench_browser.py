"""bench.browser_speed and bench.compare_speed at a tiny size: they run end to end and report
every page. Timings are never asserted, only their shape."""

from __future__ import annotations

import math
from pathlib import Path

from bench import browser_speed as bs
from bench import compare_speed, report

N = 60


def positive(x: float) -> bool:
    return math.isfinite(x) and x > 0


def test_browser_speed_times_every_page(tmp_path: Path) -> None:
    result = bs.run(tmp_path, n_queries=N, repeats=1)
    pages = result.data["pages"]
    assert list(pages) == [title for title, _, _ in bs.PAGES]
    assert [t for t in pages if t.startswith("Compare: ")] == [
        f"Compare: {tab}" for tab in bs.COMPARE_TABS
    ]
    for title, page in pages.items():
        assert positive(page["first_s"]), title
        for slider in ("k", "threshold"):
            moves = page[slider]
            assert moves is not None and len(moves) == 1, (title, slider)
            # settled: at least the quiet time after the keydown's last change is not counted,
            # but the move cannot end before its script run did
            (timer,) = page[f"{slider}_detail"]
            assert timer["t0"] <= timer["start"] <= timer["end"] <= timer["t1"], (title, slider)
            assert moves[0] == (timer["t1"] - timer["t0"]) / 1000
    assert len(result.data["bare_s"]) == 1 and positive(result.data["bare_s"][0])
    text = result.text()
    for title in pages:
        assert title in text
    assert "bare page (floor)" in text and "k / bare" in text
    assert result.data["met_compare_first"] == (result.data["compare_first_s"] < 1.5)
    # a rescoring change (one with repeats=1): the progress bar was seen, after the click
    progress = result.data["rescoring_progress_s"]
    assert len(progress) == 1 and positive(progress[0])
    assert result.data["met_progress"] == (progress[0] <= bs.TARGET_PROGRESS_S)
    # the large scenario: one run of LARGE_FACTOR x N queries, every view
    large = result.data["large"]
    assert large["n_queries"] == N * bs.LARGE_FACTOR
    # one run: every view but Compare's tabs (nothing to pair)
    assert list(large["pages"]) == [t for t in pages if not t.startswith("Compare")]
    assert f"One run of {N * bs.LARGE_FACTOR:,} queries" in text
    headline = report.headline([result]).markdown()
    assert f"browser, {N:,} queries x 3 runs: Compare's first render (deltas)" in headline
    assert "slowest page's median slider move (keydown to settled)" in headline
    assert f"browser, one run of {N * bs.LARGE_FACTOR:,} queries" in headline
    assert "progress bar after a rescoring change" in headline


def test_padded_runs_have_twenty_chunks_and_gold_spans(tmp_path: Path) -> None:
    import json

    (path,) = bs.write_runs(tmp_path, 5, ("bm25",))
    queries = [json.loads(x) for x in path.read_text().splitlines()[1:]]
    assert len(queries) == 5
    for q in queries:
        chunks = q["retrieved"]
        assert len(chunks) == bs.CHUNKS
        assert len({c["doc_id"] for c in chunks}) == bs.CHUNKS
        scores = [c["score"] for c in chunks]
        assert scores == sorted(scores, reverse=True)
    assert any(q.get("evidence") for q in queries)


def test_compare_speed_scenario_reports_the_core_parts(tmp_path: Path) -> None:
    result = compare_speed.run(tmp_path, n_queries=N, repeats=1, page=False)
    ms = result.data["ms"]
    for part in ("deltas first (resample=False)", "full metric tests", "k move: deltas"):
        assert positive(ms[part]), part
    assert "deltas first" in result.text()
