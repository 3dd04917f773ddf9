"""Latency percentiles, tokens, cost, breakdowns: hand cases, numpy and statistics cross-checks."""

from __future__ import annotations

import json
import math
import statistics

import duckdb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.metrics import latency_cost as ops

STAT_KEYS = ["count", "mean", "p50", "p90", "p95", "p99"]


def _strict_json(obj: object) -> str:
    return json.dumps(obj, allow_nan=False)


def _assert_plain(obj: object) -> None:
    """Only dict/list/str/int/float/None/bool of Python's own types (no numpy scalars)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            assert type(k) is str
            _assert_plain(v)
    elif isinstance(obj, list):
        for v in obj:
            _assert_plain(v)
    else:
        assert obj is None or type(obj) in (str, int, float, bool), type(obj)


# --- latency ---------------------------------------------------------------------------------


def test_latency_hand_computed() -> None:
    # [1, 2, 3, 4]: virtual index (n-1)p = 3p; p90 -> 2.7 -> 3 + 0.7 * (4 - 3) = 3.7
    out = ops.latency_summary(["retrieval"] * 4, [4.0, 1.0, 3.0, 2.0])
    assert list(out) == ["retrieval"]
    r = out["retrieval"]
    assert list(r) == STAT_KEYS
    assert r["count"] == 4
    assert r["mean"] == pytest.approx(2.5)
    assert r["p50"] == pytest.approx(2.5)
    assert r["p90"] == pytest.approx(3.7)
    assert r["p95"] == pytest.approx(3.85)
    assert r["p99"] == pytest.approx(3.97)


def test_latency_single_value_and_stage_order() -> None:
    # stages as the rows first hold them, not alphabetically; a given order comes first
    stages = ["zeta", "generation", "alpha", "total", "rerank", "retrieval"]
    out = ops.latency_summary(stages, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert list(out) == stages
    assert out["zeta"] == {"count": 1, "mean": 1.0, "p50": 1.0, "p90": 1.0, "p95": 1.0, "p99": 1.0}
    ordered = ops.latency_summary(stages, [1.0] * 6, order=("retrieval", "rerank"))
    assert list(ordered) == ["retrieval", "rerank", "zeta", "generation", "alpha", "total"]


def test_pipeline_order_merges_each_records_order() -> None:
    # q0: embed, search, generate; q1 adds a rerank between search and generate; q2 records
    # a total first (it goes last) and has no embed
    q = [0, 0, 0, 1, 1, 1, 1, 2, 2, 2]
    stage = ["embed", "search", "generate"]
    stage += ["embed", "search", "rerank", "generate", "total", "search", "generate"]
    assert ops.pipeline_order(q, stage) == ("embed", "search", "rerank", "generate", "total")
    # not alphabetical, and not the first query's order alone
    assert ops.pipeline_order([0, 0, 1, 1], ["b", "a", "a", "c"]) == ("b", "a", "c")
    # two records disagreeing (a cycle) fall back to the order first seen
    assert ops.pipeline_order([0, 0, 1, 1], ["x", "y", "y", "x"]) == ("x", "y")
    assert ops.pipeline_order([], []) == ()
    assert ops.pipeline_order([0], ["total"]) == ("total",)


def test_derive_total_sums_top_level_stages_of_queries_without_one() -> None:
    q = [0, 0, 0, 1, 1, 2, 2, 2, 2]
    stage = ["embed", "search", "generate", "search", "total"]
    stage += ["retrieval", "retrieval.embed", "retrieval.search", "generate"]
    ms = [2.0, 30.0, 400.0, 20.0, 500.0, 50.0, 10.0, 35.0, 300.0]
    rq, rs, rms, derived = ops.derive_total(q, stage, ms)
    # the input rows unchanged, then one derived total per query without a recorded one
    assert rq.tolist() == [*q, 0, 2] and rs.tolist() == [*stage, "total", "total"]
    assert rms[:9].tolist() == ms
    # q0: 2 + 30 + 400; q1 keeps its recorded 500 (not 20); q2: retrieval.* are parts of
    # retrieval, counted once: 50 + 300
    assert rms[9:].tolist() == [432.0, 350.0]
    assert derived.tolist() == [False] * 9 + [True, True]
    # a dotted stage whose parent is not recorded is top-level
    _, _, alone, _ = ops.derive_total([0, 0], ["retrieval.embed", "generate"], [4.0, 6.0])
    assert alone[-1] == 10.0
    empty = ops.derive_total([], [], [])
    assert all(a.size == 0 for a in empty)


def test_latency_summary_counts_derived_totals() -> None:
    q, stage, ms, derived = ops.derive_total(
        [0, 0, 1, 1, 2],
        ["retrieval", "generation", "retrieval", "total", "retrieval"],
        [10.0, 90.0, 5.0, 50.0, 7.0],
    )
    out = ops.latency_summary(stage, ms, order=ops.pipeline_order(q, stage), derived=derived)
    assert list(out) == ["retrieval", "generation", "total"]
    # totals: 100 (derived), 50 (recorded), 7 (derived)
    assert out["total"]["count"] == 3 and out["total"]["derived"] == 2
    assert out["total"]["p50"] == 50.0 and out["total"]["mean"] == pytest.approx(157 / 3)
    assert "derived" not in out["retrieval"]
    recorded = ops.latency_summary(["total"], [3.0], derived=[False])
    assert recorded["total"]["derived"] == 0
    grouped = ops.latency_summary(stage, ms, ["a", "a", "b", "b", "b", "a", "b"], derived=derived)
    assert grouped["a"]["total"]["derived"] == 1 and grouped["b"]["total"]["derived"] == 1
    _strict_json(out)


def test_latency_drops_missing_and_counts_queries_with_the_stage() -> None:
    stage = np.array(["total", "total", "total", "rerank"], dtype=object)
    ms = np.array([10.0, np.nan, 30.0, 5.0])
    out = ops.latency_summary(stage, ms)
    assert out["total"]["count"] == 2
    assert out["total"]["mean"] == 20.0
    assert out["rerank"]["count"] == 1


def test_latency_matches_numpy_exactly_and_statistics() -> None:
    rng = np.random.default_rng(7)
    n = 5000
    names = np.array(["total", "retrieval", "rerank", "generation", "embed"])
    stage = names[rng.integers(0, names.size, n)]
    ms = rng.lognormal(3.0, 1.0, n)
    out = ops.latency_summary(stage, ms)
    for name in names:
        x = ms[stage == name]
        r = out[str(name)]
        assert r["count"] == x.size
        assert r["mean"] == pytest.approx(float(np.mean(x)), rel=1e-12)
        for p in (50, 90, 95, 99):
            # same virtual index and lerp as numpy: equal, not merely close
            assert r[f"p{p}"] == float(np.percentile(x, p))
        cuts = statistics.quantiles(x.tolist(), n=100, method="inclusive")
        for p in (50, 90, 95, 99):
            assert r[f"p{p}"] == pytest.approx(cuts[p - 1], rel=1e-12)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["total", "retrieval", "x"]),
            st.sampled_from(["g1", "g2", None]),
            st.floats(0, 1e6, allow_nan=False),
        ),
        max_size=60,
    )
)
def test_latency_groups_match_numpy_per_segment(rows: list[tuple[str, str | None, float]]) -> None:
    stage = np.array([r[0] for r in rows], dtype=object)
    groups = np.array([r[1] for r in rows], dtype=object)
    ms = np.array([r[2] for r in rows], dtype=float)
    out = ops.latency_summary(stage, ms, groups)
    expected_groups = sorted({g for g in groups if g is not None})
    if any(g is None for g in groups):
        expected_groups.append(ops.NO_TAG)
    assert list(out) == expected_groups
    for g, per_stage in out.items():
        gmask = np.array([(x if x is not None else ops.NO_TAG) == g for x in groups], dtype=bool)
        for s, r in per_stage.items():
            x = ms[gmask & (stage == s)]
            assert r["count"] == x.size > 0
            for p in (50, 90, 95, 99):
                assert r[f"p{p}"] == float(np.percentile(x, p))
    assert sum(r["count"] for per in out.values() for r in per.values()) == len(rows)
    _strict_json(out)


def test_latency_from_duckdb_masked_columns() -> None:
    con = duckdb.connect(":memory:")
    cols = con.execute(
        "SELECT * FROM (VALUES ('total', 10.0, 'a'), ('total', 20.0, NULL), "
        "('retrieval', NULL, 'a'), ('retrieval', 4.0, 'a')) t(stage, ms, tag)"
    ).fetchnumpy()
    out = ops.latency_summary(cols["stage"], cols["ms"], cols["tag"])
    assert out == {
        "a": {
            "total": {"count": 1, "mean": 10.0, "p50": 10.0, "p90": 10.0, "p95": 10.0, "p99": 10.0},
            "retrieval": {"count": 1, "mean": 4.0, "p50": 4.0, "p90": 4.0, "p95": 4.0, "p99": 4.0},
        },
        ops.NO_TAG: {
            "total": {"count": 1, "mean": 20.0, "p50": 20.0, "p90": 20.0, "p95": 20.0, "p99": 20.0},
        },
    }


def test_latency_empty_and_json() -> None:
    assert ops.latency_summary([], []) == {}
    assert ops.latency_summary(["total"], [np.nan]) == {}
    assert ops.latency_summary([], [], []) == {}
    out = ops.latency_summary(np.array(["total", "total"]), np.array([1, 2], dtype=np.int64))
    _assert_plain(out)
    _strict_json(out)


def test_latency_length_mismatch() -> None:
    with pytest.raises(ValueError):
        ops.latency_summary(["total"], [1.0, 2.0])


# --- tokens and cost --------------------------------------------------------------------------


def test_token_summary() -> None:
    kind = ["completion", "prompt", "prompt", "total", "cached"]
    n = [5, 10, 20, 35, 7]
    out = ops.token_summary(kind, n)
    assert list(out) == ["prompt", "completion", "total", "cached"]
    assert out["prompt"] == {"count": 2, "mean": 15.0, "total": 30.0}
    assert out["completion"] == {"count": 1, "mean": 5.0, "total": 5.0}
    _assert_plain(out)
    assert ops.token_summary([], []) == {}
    by = ops.token_summary(kind, n, ["a", "b", "a", None, "b"])
    assert by["a"]["prompt"] == {"count": 1, "mean": 20.0, "total": 20.0}
    assert list(by) == ["a", "b", ops.NO_TAG]


def test_cost_two_prices() -> None:
    # 1000 prompt @ 0.5/1k + 100 completion @ 1.5/1k = 0.5 + 0.15
    c = ops.cost_per_query([1000, 2000], [100, 0], 0.5, 1.5)
    np.testing.assert_allclose(c.cost_usd, [0.65, 1.0])
    assert c.price_missing == ()
    s = ops.cost_summary(c)
    assert s["total"] == pytest.approx(1.65)
    assert s["per_query"] == pytest.approx(0.825)
    assert s["n_queries_with_tokens"] == 2
    _assert_plain(s)


def test_cost_one_price_passed_twice() -> None:
    c = ops.cost_per_query([1000, 500], [500, 250], 0.002, 0.002)
    np.testing.assert_allclose(c.cost_usd, [0.003, 0.0015])
    assert ops.cost_summary(c)["total"] == pytest.approx(0.0045)


def test_cost_missing_tokens_and_missing_price() -> None:
    c = ops.cost_per_query([1000, None, np.nan, 300], [100, 50, np.nan, None], 1.0, 2.0)
    # a missing count adds nothing; a query with neither count has no cost at all
    np.testing.assert_allclose(c.cost_usd, [1.2, 0.1, np.nan, 0.3])
    assert c.has_tokens.tolist() == [True, True, False, True]
    s = ops.cost_summary(c)
    assert s["n_queries_with_tokens"] == 3
    assert s["total"] == pytest.approx(1.6)
    assert s["per_query"] == pytest.approx(1.6 / 3)

    c = ops.cost_per_query([1000, 500], [100, 0], 1.0, None)
    assert math.isnan(c.cost_usd[0])
    assert c.cost_usd[1] == pytest.approx(0.5)  # no completion tokens: no price needed
    assert c.price_missing == ("completion",)
    s = ops.cost_summary(c)
    assert s == {
        "total": None,
        "per_query": None,
        "n_queries_with_tokens": 2,
        "price_missing": ["completion"],
    }
    _strict_json(s)

    c = ops.cost_per_query([1000], [0], None, None)
    assert c.price_missing == ("prompt",)


def test_cost_empty() -> None:
    c = ops.cost_per_query([], [], 1.0, 1.0)
    assert c.cost_usd.size == 0
    assert ops.cost_summary(c) == {
        "total": None,
        "per_query": None,
        "n_queries_with_tokens": 0,
        "price_missing": [],
    }
    with pytest.raises(ValueError):
        ops.cost_per_query([1], [1, 2], 1.0, 1.0)


# --- breakdown --------------------------------------------------------------------------------


def test_breakdown_counts_and_means() -> None:
    groups = np.array(["easy", "hard", None, "easy", "hard", np.nan], dtype=object)
    values = {
        "recall": np.array([1.0, 0.0, 0.5, 0.0, np.nan, 1.0]),
        "ndcg": [0.2, 0.4, 0.6, 0.8, 1.0, np.nan],
    }
    out = ops.breakdown(values, groups)
    assert list(out) == ["easy", "hard", ops.NO_TAG]
    assert out["easy"] == {"recall": 0.5, "ndcg": pytest.approx(0.5), "n": 2}
    # the NaN recall is not scored: mean over the one scored query, n still counts both
    assert out["hard"] == {"recall": 0.0, "ndcg": pytest.approx(0.7), "n": 2}
    assert out[ops.NO_TAG] == {"recall": 0.75, "ndcg": pytest.approx(0.6), "n": 2}
    assert sum(g["n"] for g in out.values()) == 6
    _assert_plain(out)


def test_breakdown_all_unscored_is_none_and_edges() -> None:
    out = ops.breakdown({"em": [np.nan, 1.0]}, ["a", "b"])
    assert out == {"a": {"em": None, "n": 1}, "b": {"em": 1.0, "n": 1}}
    _strict_json(out)
    assert ops.breakdown({"em": []}, []) == {}
    assert ops.breakdown({}, ["a", "a"]) == {"a": {"n": 2}}
    with pytest.raises(ValueError):
        ops.breakdown({"n": [1.0]}, ["a"])
    with pytest.raises(ValueError):
        ops.breakdown({"em": [1.0]}, ["a", "b"])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["x", "y", "z", None]), st.one_of(st.none(), st.floats(0, 1))),
        max_size=40,
    )
)
def test_breakdown_matches_python_grouping(rows: list[tuple[str | None, float | None]]) -> None:
    groups = np.array([g for g, _ in rows], dtype=object)
    vals = np.array([np.nan if v is None else v for _, v in rows], dtype=float)
    out = ops.breakdown({"m": vals}, groups)
    expected: dict[str, list[float]] = {}
    for g, v in rows:
        expected.setdefault(ops.NO_TAG if g is None else g, []).append(v)
    assert set(out) == set(expected)
    for g, vs in expected.items():
        assert out[g]["n"] == len(vs)
        scored = [v for v in vs if v is not None]
        if scored:
            assert out[g]["m"] == pytest.approx(sum(scored) / len(scored))
        else:
            assert out[g]["m"] is None


def test_to_json_value() -> None:
    obj = {"a": np.float64(np.nan), "b": [np.int64(3), np.float32(0.5)], "c": np.bool_(True)}
    assert ops.to_json_value(obj) == {"a": None, "b": [3, 0.5], "c": True}
    _assert_plain(ops.to_json_value(obj))


def test_latencies_print_at_about_three_significant_digits() -> None:
    assert [ops.format_ms(x) for x in (1534.04, 534.04, 12.345, 2.764, 0.4881, 0.0123)] == [
        "1534.0",
        "534.0",
        "12.3",
        "2.76",
        "0.488",
        "0.012",
    ]
    assert ops.format_ms(None) == ops.format_ms(float("nan")) == "-"
    # a column of them: the decimals its smallest value needs (0 and NaN shown as they are)
    assert ops.ms_decimals_of([592.3, 0.121, 0.0, np.nan]) == 3
    assert ops.ms_decimals_of([592.3, 1.9]) == 2
    assert ops.ms_decimals_of([592.3, 12.0]) == ops.ms_decimals_of([]) == 1
    assert ops.stage_label("total", {"count": 4, "derived": 4}) == "total (derived)"
    assert ops.stage_label("total", {"count": 4, "derived": 1}) == "total (1 derived)"
    assert ops.stage_label("total", {"count": 4, "derived": 0}) == "total"
    assert ops.stage_label("rerank", {"count": 4}) == "rerank"
