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
    assert list(pages) == [title for title, _ in bs.PAGES]
    for title, page in pages.items():
        assert positive(page["first_s"]) and page["settled_s"] >= page["first_s"], title
        for slider in ("k", "threshold"):
            moves = page[slider]
            assert moves is not None, (title, slider)  # every page has the sidebar's sliders
            assert len(moves["rerun_s"]) == len(moves["settled_s"]) == 1
            assert positive(moves["rerun_s"][0])
            assert moves["settled_s"][0] >= moves["rerun_s"][0] - 1e-9
    text = result.text()
    for title, _ in bs.PAGES:
        assert title in text
    assert result.data["met_compare_first"] == (pages["Compare"]["first_s"] < 1.5)
    # a rescoring change (one with repeats=1): the progress bar was seen, after the click
    progress = result.data["rescoring_progress_s"]
    assert len(progress) == 1 and positive(progress[0])
    assert result.data["met_progress"] == (progress[0] <= bs.TARGET_PROGRESS_S)
    headline = report.headline([result]).markdown()
    assert f"browser, {N:,} queries x 3 runs: Compare's first render (deltas)" in headline
    assert "slowest page's median slider move" in headline
    assert "progress bar after a rescoring change" in headline


def test_compare_speed_scenario_reports_the_core_parts(tmp_path: Path) -> None:
    result = compare_speed.run(tmp_path, n_queries=N, repeats=1, page=False)
    ms = result.data["ms"]
    for part in ("deltas first (resample=False)", "full metric tests", "k move: deltas"):
        assert positive(ms[part]), part
    assert "deltas first" in result.text()
