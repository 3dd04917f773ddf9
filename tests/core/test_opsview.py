"""Per-query ops arrays and ECDF points (rageval_core.latency.per_query)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.metrics import latency_cost as ops
from rageval_core.errors import ProblemLog
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.latency.per_query import (
    ecdf,
    latency_by_tag,
    long_to_columns,
    query_ops,
    scatter_points,
)
from rageval_core.rundata import load_run_data
from rageval_core.store import Store


def test_long_to_columns_puts_each_row_at_its_query_and_orders_keys() -> None:
    cols = long_to_columns(
        [0, 2, 2, 1],
        ["zeta", "total", "retrieval", "total"],
        [1.0, 2.0, 3.0, 4.0],
        n=4,
        first=("total", "retrieval"),
    )
    assert list(cols) == ["total", "retrieval", "zeta"]
    np.testing.assert_array_equal(cols["total"], [np.nan, 4.0, 2.0, np.nan])
    np.testing.assert_array_equal(cols["retrieval"], [np.nan, np.nan, 3.0, np.nan])
    np.testing.assert_array_equal(cols["zeta"], [1.0, np.nan, np.nan, np.nan])
    assert long_to_columns([], [], [], n=3) == {}
    with pytest.raises(ValueError):
        long_to_columns([0], ["a", "b"], [1.0], n=1)


def test_ecdf_small_case_by_hand() -> None:
    x, y = ecdf([3.0, 1.0, np.nan, 2.0, 2.0])
    # four finite values: F(1) = 1/4, F(2) = 3/4 (both ties), F(3) = 1
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(y, [0.25, 0.75, 1.0])
    ex, ey = ecdf([np.nan])
    assert ex.size == ey.size == 0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1, max_size=300),
    st.integers(min_value=2, max_value=50),
)
def test_ecdf_points_are_the_share_of_values_at_or_below(
    values: list[float], max_points: int
) -> None:
    v = np.asarray(values)
    x, y = ecdf(v, max_points=max_points)
    assert x.size <= max_points
    assert np.all(np.diff(x) > 0) and np.all(np.diff(y) > 0)
    # independent definition: F(x) = share of values <= x
    np.testing.assert_allclose(y, [(v <= xi).mean() for xi in x])
    assert x[0] == v.min() and x[-1] == v.max() and y[-1] == 1.0


def test_scatter_points_keeps_queries_with_both_values() -> None:
    nan = np.nan
    pts = scatter_points(
        total_ms=[10.0, nan, 30.0, 40.0],
        metric=[0.5, 1.0, nan, 0.0],
        groups=np.array(["a", "b", None, None], dtype=object),
        query_ids=np.array(["q1", "q2", "q3", "q4"], dtype=object),
    )
    np.testing.assert_array_equal(pts.x_ms, [10.0, 40.0])
    np.testing.assert_array_equal(pts.y, [0.5, 0.0])
    assert pts.group.tolist() == ["a", ops.NO_TAG]
    assert pts.query_id.tolist() == ["q1", "q4"]
    assert pts.n_dropped == 2
    no_groups = scatter_points([1.0], [1.0], None, ["q"])
    assert no_groups.group.tolist() == [""]
    with pytest.raises(ValueError):
        scatter_points([1.0, 2.0], [1.0], None, ["q"])


def _run() -> ParsedRun:
    queries = [
        Query(
            query_id="a",
            query="?",
            retrieved=(Chunk("d1", "t"),),
            latency_ms={"retrieval": 3.0, "total": 40.0},
            tokens={"prompt": 1000, "completion": 10},
        ),
        Query(
            query_id="b",
            query="?",
            retrieved=(Chunk("d1", "t"),),
            latency_ms={"retrieval": 5.0, "generation": 20.0},
            tokens={"prompt": 2000},
        ),
        Query(query_id="c", query="?", retrieved=(Chunk("d1", "t"),)),
    ]
    info = RunInfo(name="r", price_prompt_per_1k=0.5, price_completion_per_1k=2.0)
    return ParsedRun(info, iter(queries), "native", ("mem",))


def test_query_ops_of_a_stored_run() -> None:
    with Store(":memory:") as store:
        store.import_run(_run(), ProblemLog())
        q = query_ops(load_run_data(store, "r"))
    assert q.query_ids.tolist() == ["a", "b", "c"]
    # pipeline order: as the records list them, total last; b's total is derived (5 + 20)
    assert list(q.stages) == ["retrieval", "generation", "total"]
    np.testing.assert_array_equal(q.total_ms, [40.0, 25.0, np.nan])
    np.testing.assert_array_equal(q.stages["total"], [40.0, 25.0, np.nan])
    assert q.n_total_derived == 1
    np.testing.assert_array_equal(q.tokens["prompt"], [1000.0, 2000.0, np.nan])
    np.testing.assert_array_equal(q.tokens["completion"], [10.0, np.nan, np.nan])
    # a: 1000/1000*0.5 + 10/1000*2 = 0.52; b: 2000/1000*0.5 = 1.0; c: no tokens
    np.testing.assert_allclose(q.cost_usd, [0.52, 1.0, np.nan])
    assert q.price_missing == () and q.has_latency and q.has_tokens


def test_latency_by_tag_equals_the_reports_breakdown() -> None:
    from rageval_core.evaluation.evaluate import evaluate

    with Store(":memory:") as store:
        queries = [
            Query(
                query_id=f"q{i}",
                query="?",
                retrieved=(Chunk("d1", "t"),),
                relevance={"d1": 1},
                latency_ms={"retrieval": float(i), "total": 10.0 * i + (i % 3)},
                tags={"kind": "odd" if i % 2 else "even"} if i < 9 else {},
            )
            for i in range(11)
        ]
        store.import_run(
            ParsedRun(RunInfo(name="t"), iter(queries), "native", ("mem",)), ProblemLog()
        )
        data = load_run_data(store, "t")
        by = evaluate(data, ["RR"], store=store, by="kind").by
        groups = latency_by_tag(data, "kind")
    assert by is not None
    assert groups == {g: v["latency_ms"] for g, v in by["groups"].items()}
    assert list(groups) == ["even", "odd", ops.NO_TAG]
    # and by hand: the even queries below 9 are 0, 2, 4, 6, 8
    even = np.array([10.0 * i + (i % 3) for i in (0, 2, 4, 6, 8)])
    assert groups["even"]["total"]["p90"] == np.percentile(even, 90)
    assert groups[ops.NO_TAG]["total"]["count"] == 2
