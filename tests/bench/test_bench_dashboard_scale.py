"""bench.dashboard_scale at a tiny size: it imports, measures in chromium and in AppTest, and
reports every page against the targets. Timings are never asserted, only their shape."""

from __future__ import annotations

import math
from pathlib import Path

from bench import dashboard_scale as ds
from bench import report
from rageval_core.store import Store

N = 200
MOVES = 1  # one k and one threshold move per page: the shape is what is checked


def finite_positive(values: list[float]) -> bool:
    return all(math.isfinite(v) and v > 0 for v in values)


def test_dashboard_scale_measures_every_page(tmp_path: Path) -> None:
    result = ds.run(
        tmp_path, n_queries=N, moves=MOVES, browser=True, baseline=False, keep_files=True
    )
    (point,) = result.data["points"]
    assert point["n_queries"] == N and point["import_s"] > 0 and point["bytes"] > 0
    # the import kept the run with its answer metrics (the first render only reads them)
    with Store(tmp_path / f"dashboard_{N}.duckdb") as store:
        (run,) = store.runs()
        assert run.n_queries == N and run.has_answers
        counts = store.table_counts()
        assert counts["answer_scores"] > 0 and counts["pair_scores"] > 0
    browser = point["browser"]  # chromium is installed by `make test` (scripts/ensure-chromium)
    assert browser is not None, "\n".join(result.notes)
    for measured in (browser, point["apptest"]):
        assert measured["first_s"] > 0
        assert [t for t, *_ in ds.PAGES] == list(measured["pages"])
        for page in measured["pages"].values():
            assert len(page["k_s"]) == len(page["threshold_s"]) == MOVES
            assert finite_positive(page["k_s"] + page["threshold_s"])
    assert browser["first_cold_browser_s"] > 0 and browser["server_start_s"] > 0
    assert "load_run_data" in point["core"] and "evaluate (default metrics)" in point["core"]
    assert finite_positive(list(point["core"].values()))
    # the report: every page judged against the target, the verdicts consistent with the data
    text = result.text()
    for title, *_ in ds.PAGES:
        assert title in text
    assert result.data["measured_in"] == "browser"
    assert result.data["met_first"] == (browser["first_s"] < ds.TARGET_FIRST_S)
    slowest = result.data["slowest_move_s"]
    assert set(slowest) == {t for t, *_ in ds.PAGES}
    assert result.data["met_moves"] == all(v < ds.TARGET_MOVE_S for v in slowest.values())
    assert ("met" in text or "MISSED" in text) and "Load average" in text
    headline = report.headline([result]).markdown()
    assert f"dashboard, {N:,} queries: Overview's first render (browser)" in headline
    assert "slowest page's median slider move (browser, " in headline
