"""What keeps the pages fast on large runs: tables sent a page at a time, figures binned or
thinned before plotting, and the runs list read again only when the store changed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from bench.dashboard_speed import write_big_run
from rageval_dashboard import keys
from rageval_dashboard.jobs import busy
from rageval_dashboard.components.figures import latency as fo
from rageval_core.evaluation import drilldown as dd
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.evaluation.report import Settings
from rageval_core.latency.per_query import ScatterPoints
from rageval_core.rundata import load_run_data
from rageval_core.store import Store
from tests.cli import import_files

REPO = Path(__file__).resolve().parents[2]
N_BIG = 1_250  # more than one page of the Queries table


def cli_import(db: Path, *files: Path) -> None:
    import_files(db, *files)


@pytest.fixture(scope="module")
def big_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("big")
    run = folder / "big.jsonl"
    write_big_run(run, N_BIG)
    db = folder / "big.duckdb"
    cli_import(db, run)
    return db


# --- tables a page at a time ----------------------------------------------------------------


def test_queries_table_pages_through_every_matching_row(
    make_app: Callable[..., AppTest], big_db: Path
) -> None:
    at = make_app("queries.py", db=big_db)
    assert not at.exception, [e.value for e in at.exception]
    with Store(big_db) as store:
        data = load_run_data(store, f"big{N_BIG}")
        table = dd.query_table(
            evaluate(data, store=store, settings=Settings(relevance="ids")),
            data,
            dd.query_texts(store, data),
        )
    order = dd.sort_rows(table, np.ones(table.n_queries, dtype=bool))  # worst first, as shown
    rows = keys.QUERIES_PAGE_ROWS
    first = list(at.dataframe[0].value["query_id"])
    assert first == [str(q) for q in table.query_ids[order[:rows]]]
    assert any(f"rows 1-{rows:,} shown" in c.value for c in at.caption)
    at.number_input(key=keys.QUERIES_PAGE).set_value(2).run()
    assert not at.exception
    second = list(at.dataframe[0].value["query_id"])
    assert second == [str(q) for q in table.query_ids[order[rows : 2 * rows]]]
    assert not set(first) & set(second)
    # the last page holds the rest: worst first lists every query with gold (those without
    # are left out, and counted)
    n_listed = N_BIG - int(table.no_gold.sum())
    n_pages = -(-n_listed // rows)
    at.number_input(key=keys.QUERIES_PAGE).set_value(n_pages).run()
    assert not at.exception
    last = list(at.dataframe[0].value["query_id"])
    assert last == [str(q) for q in table.query_ids[order[(n_pages - 1) * rows :]]]
    assert (n_pages - 1) * rows + len(last) == n_listed
    # a filter that leaves fewer pages: the page number follows (the last page of the
    # matching rows), and every row shown matches
    at.toggle(key=keys.QUERIES_FAILING).set_value(True).run()
    assert not at.exception
    failing = table.failing
    in_order = [str(table.query_ids[i]) for i in order if failing[i]]
    n_failing_pages = max(1, -(-int(failing.sum()) // rows))
    assert 0 < int(failing.sum()) < n_listed
    shown = list(at.dataframe[0].value["query_id"])
    assert shown == in_order[(n_failing_pages - 1) * rows :]


def test_latency_per_query_table_is_paged(make_app: Callable[..., AppTest], big_db: Path) -> None:
    at = make_app("latency.py", db=big_db)
    assert not at.exception, [e.value for e in at.exception]
    frames = [
        d.value for d in at.dataframe if list(d.value.columns[:2]) == ["query_id", "total_ms"]
    ]
    assert len(frames) == 1 and len(frames[0]) == keys.LATENCY_PAGE_ROWS
    at.number_input(key=keys.LATENCY_PAGE).set_value(2).run()
    frames = [
        d.value for d in at.dataframe if list(d.value.columns[:2]) == ["query_id", "total_ms"]
    ]
    with Store(big_db) as store:
        ids = load_run_data(store, f"big{N_BIG}").query_ids
    assert list(frames[0]["query_id"]) == [str(q) for q in ids[keys.LATENCY_PAGE_ROWS :]]


# --- figures binned or thinned ----------------------------------------------------------------


def points(n: int, seed: int = 0) -> ScatterPoints:
    rng = np.random.default_rng(seed)
    return ScatterPoints(
        x_ms=rng.gamma(2.0, 50.0, n),
        y=rng.random(n),
        group=np.where(rng.random(n) < 0.3, "a", "b"),
        query_id=np.array([f"q{i}" for i in range(n)]),
        n_dropped=0,
    )


def test_scatter_draws_a_thinned_cloud_with_its_extremes() -> None:
    p = points(20_000)
    keep = fo.thinned(p, 500)
    assert keep.size <= 500 and np.all(np.diff(keep) > 0)
    assert p.x_ms.argmin() in keep and p.x_ms.argmax() in keep  # fastest and slowest kept
    # evenly spaced in latency order: the drawn quartiles follow the whole run's
    assert np.quantile(p.x_ms[keep], 0.5) == pytest.approx(np.quantile(p.x_ms, 0.5), rel=0.05)
    fig = fo.latency_quality_scatter(p, "nDCG@10", "kind", max_points=500)
    drawn = sum(len(t.x) for t in fig.data)
    assert drawn == keep.size and "500 of 20,000 queries drawn" in fig.layout.title.text
    assert {t.name for t in fig.data} == {"a", "b"}
    small = fo.latency_quality_scatter(points(50), "RR", None)
    assert sum(len(t.x) for t in small.data) == 50 and "drawn" not in small.layout.title.text


def test_histograms_are_binned_before_plotting() -> None:
    rng = np.random.default_rng(1)
    cost = rng.random(50_000) / 100
    cost[::7] = np.nan
    fig = fo.cost_histogram(cost)
    (bars,) = fig.data
    assert len(bars.y) == fo.HISTOGRAM_BINS and int(np.sum(bars.y)) == int(np.isfinite(cost).sum())
    stages = {"retrieve": rng.gamma(2.0, 10.0, 30_000), "generate": rng.gamma(2.0, 300.0, 30_000)}
    for log_x in (False, True):
        fig = fo.stage_distribution(stages, log_x=log_x, kind="histogram")
        assert [int(np.sum(t.y)) for t in fig.data] == [30_000, 30_000]
        assert len(fig.data[0].x) == fo.HISTOGRAM_BINS  # both stages on the same edges
        np.testing.assert_array_equal(fig.data[0].x, fig.data[1].x)
    assert fo.cost_histogram(np.array([np.nan])).data[0].y.sum() == 0  # nothing known: empty


# --- the runs list --------------------------------------------------------------------------


def test_a_run_imported_elsewhere_appears_without_a_restart(
    make_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    db = tmp_path / "two.duckdb"
    cli_import(db, REPO / "sample_runs" / "bm25.jsonl")
    at = make_app(db=db)
    assert at.sidebar.selectbox(key=keys.RUN).options == ["bm25"]
    at.run()  # nothing changed: the listing is reused (no store call needed)
    assert at.sidebar.selectbox(key=keys.RUN).options == ["bm25"]
    cli_import(db, REPO / "sample_runs" / "tfidf_char.jsonl")  # another process writes
    at.run()
    assert not at.exception
    assert sorted(at.sidebar.selectbox(key=keys.RUN).options) == ["bm25", "tfidf_char"]


def test_a_store_held_by_another_process_is_told_apart(tmp_path: Path) -> None:
    db = tmp_path / "held.duckdb"
    with Store(db):  # this process holding it is not "elsewhere"
        assert not busy.held_elsewhere(str(db))
    assert not busy.held_elsewhere(str(db))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys; c = duckdb.connect(sys.argv[1]); "
            "print('holding', flush=True); sys.stdin.readline()",
            str(db),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        assert busy.held_elsewhere(str(db))
    finally:
        holder.communicate("\n", timeout=30)
    assert not busy.held_elsewhere(str(db))
