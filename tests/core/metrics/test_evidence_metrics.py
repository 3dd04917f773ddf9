"""Evidence-coverage metrics: hand-computed cases, a loop-per-query reference, properties."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from rageval_core.errors import UsageError
from rageval_core.metrics import aggregate, compute, parse
from rageval_core.metrics import evidence as ev
from rageval_core.metrics.registry import weights_of

NAN = np.nan


def tiny() -> tuple[np.ndarray, list[int], list[int]]:
    """Four queries, depth 3, up to 3 gold spans (NaN = padding).

    q0: 2 spans, 3 chunks; span 0 scores exactly 0.7 at rank 2 (threshold 0.7 covers it).
    q1: no gold spans (excluded), 2 chunks.
    q2: 1 span, nothing retrieved.
    q3: 3 spans, 2 chunks (fewer than k = 3); span B is split over both chunks (0.6, 0.65)
        and so is covered by neither at 0.7.
    """
    s = np.full((4, 3, 3), NAN, dtype=np.float32)
    s[0, :, :2] = [[0.2, 0.9], [0.7, 0.1], [0.5, 0.5]]
    s[1, :2, :] = 0.99  # no spans: must not count anywhere, whatever the scores say
    s[3, :2, :] = [[0.8, 0.6, 0.0], [0.3, 0.65, 0.95]]
    return s, [2, 0, 1, 3], [3, 2, 0, 2]


def test_hand_computed_values() -> None:
    cov = ev.prepare_coverage(*tiny(), threshold=0.7)
    assert cov.n_queries == 3 and cov.n_excluded == 1
    assert cov.rows.tolist() == [0, 2, 3]
    covered, total = ev.evidence_recall(cov)
    assert covered.tolist() == [[1, 2, 2], [0, 0, 0], [1, 2, 2]]
    assert total.tolist() == [2, 1, 3]
    assert ev.pool_recall(covered, total) == pytest.approx([2 / 6, 4 / 6, 4 / 6])
    pqc = ev.per_query_coverage(cov)
    np.testing.assert_allclose(pqc, [[1 / 2, 1, 1], [0, 0, 0], [1 / 3, 2 / 3, 2 / 3]])
    assert ev.full_coverage(cov).tolist() == [[0, 1, 1], [0, 0, 0], [0, 0, 0]]
    ctx = ev.context_coverage(cov)
    assert ctx[:, 0] == pytest.approx([(0.2 + 0.9) / 2, 0.0, (0.8 + 0.6 + 0.0) / 3], abs=1e-6)
    assert ctx[:, 2] == pytest.approx([(0.7 + 0.9) / 2, 0.0, (0.8 + 0.65 + 0.95) / 3], abs=1e-6)
    ranks = ev.best_rank(cov)
    assert ranks[0].tolist() == [1, 1, 1]  # 0.9 at rank 1 stays the best
    assert np.isnan(ranks[1]).all()  # nothing retrieved
    assert ranks[2].tolist() == [1, 2, 2]  # 0.8 at rank 1, then 0.95 at rank 2

    summary = ev.summarise(cov, ks=(1, 2, 5))
    v = summary.values
    assert (summary.n_queries, summary.n_excluded, summary.threshold) == (3, 1, 0.7)
    assert v["EvidenceRecall@1"] == pytest.approx(2 / 6)
    assert v["EvidenceRecall@5"] == pytest.approx(4 / 6)  # k beyond every list
    assert v["PerQueryCoverage@1"] == pytest.approx((1 / 2 + 0 + 1 / 3) / 3)
    assert v["PerQueryCoverage@2"] == pytest.approx((1 + 0 + 2 / 3) / 3)
    assert v["FullCoverageRate@1"] == 0.0
    assert v["FullCoverageRate@2"] == pytest.approx(1 / 3)
    assert v["ContextCoverage"] == pytest.approx((0.8 + 0.0 + 0.8) / 3, abs=1e-6)
    assert v["BestRank@1"] == 1.0
    assert v["BestRank"] == pytest.approx(1.5)  # mean over the two queries where found


def test_threshold_equal_to_a_score_covers() -> None:
    cov = ev.prepare_coverage(*tiny())
    covered, _ = ev.evidence_recall(cov, threshold=0.65)
    assert covered[2].tolist() == [1, 3, 3]  # B at exactly 0.65 counts at rank 2
    covered, _ = ev.evidence_recall(cov, threshold=0.6500001)
    assert covered[2].tolist() == [1, 2, 2]
    assert ev.covers(tiny()[0], 0.65)[3].tolist() == [True, True, False]


def test_split_span_is_not_covered_by_its_halves() -> None:
    cov = ev.prepare_coverage(*tiny())
    assert ev.full_coverage(cov, 0.7)[2].tolist() == [0, 0, 0]
    assert ev.full_coverage(cov, 0.0)[2].tolist() == [1, 1, 1]  # everything covers at 0


def test_nothing_retrieved_and_no_spans_at_all() -> None:
    s = np.zeros((2, 0, 2), dtype=np.float32)
    cov = ev.prepare_coverage(s, [2, 1], [0, 0])
    assert cov.depth == 1 and cov.n_queries == 2
    assert ev.summarise(cov, ks=(1, 10)).values["EvidenceRecall@10"] == 0.0
    assert ev.summarise(cov, ks=(1,)).values["ContextCoverage"] == 0.0
    assert math.isnan(ev.summarise(cov, ks=(1,)).values["BestRank"])

    none = ev.prepare_coverage(np.full((3, 4, 2), 0.9, np.float32), [0, 0, 0], [4, 4, 4])
    assert none.n_queries == 0 and none.n_excluded == 3
    values = ev.summarise(none, ks=(1, 3)).values
    assert all(math.isnan(x) for x in values.values())
    sweep = ev.threshold_sweep(none, [0.5, 0.7])
    assert all(np.isnan(x).all() for x in sweep.values())


def test_padding_is_ignored_whatever_it_holds_and_input_is_not_written() -> None:
    s, spans, ret = tiny()
    noisy = s.copy()
    noisy[0, :, 2] = 1.0  # span slot 2 of q0 does not exist
    noisy[3, 2, :] = 1.0  # rank 3 of q3 does not exist
    before = noisy.copy()
    a = ev.summarise(ev.prepare_coverage(s, spans, ret), ks=(1, 2, 3)).values
    b = ev.summarise(ev.prepare_coverage(noisy, spans, ret), ks=(1, 2, 3)).values
    assert a == pytest.approx(b, nan_ok=True)
    assert np.array_equal(noisy, before, equal_nan=True)


def test_best_rank_ties_go_to_the_higher_rank() -> None:
    s = np.array([[[0.8], [0.8], [0.9], [0.9]]], dtype=np.float32)
    cov = ev.prepare_coverage(s, [1], [4])
    assert ev.best_rank(cov, 0.7).tolist() == [[1, 1, 3, 3]]
    assert np.isnan(ev.best_rank(cov, 0.95)).all()


def test_covers_labels() -> None:
    s, spans, ret = tiny()
    raw = ev.covers(s, 0.7)
    assert raw.tolist() == [
        [True, True, False],
        [True, True, False],  # raw tensor: q1's padding-free scores still count here
        [False, False, False],
        [True, True, False],
    ]
    assert ev.covers(s, 0.7, k=1)[:, 1:].sum() == 0
    cov = ev.prepare_coverage(s, spans, ret)
    assert ev.covers(cov, 0.7).tolist() == [raw[0].tolist(), raw[2].tolist(), raw[3].tolist()]
    assert ev.covers(cov).shape == (3, 3)


def test_score_cut_compacts_ranks() -> None:
    s = np.array([[[0.1], [0.9], [0.8], [0.75]]], dtype=np.float32)
    retriever = np.array([[0.9, 0.2, 0.8, np.nan]])  # rank 2 below the cut; rank 4 has no score
    cut, n_ret, order = ev.apply_score_cut(s, [4], retriever, 0.5)
    assert n_ret.tolist() == [3]
    assert order[0, :3].tolist() == [0, 2, 3]
    assert cut[0, :, 0].tolist()[:3] == pytest.approx([0.1, 0.8, 0.75])
    assert np.isnan(cut[0, 3, 0])
    cov = ev.prepare_coverage(s, [1], [4], retriever_scores=retriever, score_cut=0.5)
    np.testing.assert_array_equal(ev.best_rank(cov, 0.7)[0], [NAN, 2, 2, 2])
    assert ev.evidence_recall(cov, 0.7)[0][0].tolist() == [0, 1, 1, 1]
    assert cov.order is not None and cov.order[0, :3].tolist() == [0, 2, 3]
    no_cut = ev.prepare_coverage(s, [1], [4])
    np.testing.assert_array_equal(ev.best_rank(no_cut, 0.7)[0], [NAN, 2, 2, 2])
    assert ev.evidence_recall(no_cut, 0.7)[0][0].tolist() == [0, 1, 1, 1]
    # Without the cut the 0.75 chunk sits at rank 4; with it, at rank 3.
    assert ev.covers(no_cut, 0.7)[0].tolist() == [False, True, True, True]
    assert ev.covers(cov, 0.7)[0].tolist() == [False, True, True, False]


def test_bad_input_is_a_usage_error() -> None:
    s, spans, ret = tiny()
    with pytest.raises(UsageError, match="3-D"):
        ev.prepare_coverage(s[0], spans, ret)
    with pytest.raises(UsageError, match="n_spans"):
        ev.prepare_coverage(s, [4, 0, 1, 3], ret)
    with pytest.raises(UsageError, match="n_ret"):
        ev.prepare_coverage(s, spans, [1, 2])
    with pytest.raises(UsageError, match="retriever scores"):
        ev.prepare_coverage(s, spans, ret, score_cut=0.5)
    with pytest.raises(UsageError, match="shape"):
        ev.prepare_coverage(s, spans, ret, retriever_scores=np.zeros((4, 2)), score_cut=0.5)
    cov = ev.prepare_coverage(s, spans, ret)
    with pytest.raises(UsageError, match=">= 1"):
        ev.evidence_recall(cov, ks=[0])
    with pytest.raises(UsageError, match="finite"):
        ev.per_query_coverage(cov, threshold=float("nan"))
    with pytest.raises(UsageError):
        ev.threshold_sweep(cov, [[0.5]])


# --- registry --------------------------------------------------------------------------------


def test_registered_measures_agree_with_the_summary() -> None:
    cov = ev.prepare_coverage(*tiny())
    names = [
        "EvidenceRecall@2",
        "PerQueryCoverage@1",
        "FullCoverageRate@2",
        "ContextCoverage",
        "BestRank",
        "BestRank@1",
        "PerQueryCoverage(threshold=0.65)@2",
    ]
    per_query = compute(names, cov)
    summary = ev.summarise(cov, ks=(1, 2)).values

    def run_value(name: str, rows: slice | list[int] = slice(None)) -> float:
        weights = weights_of(name, cov)
        return aggregate(name, per_query[name][rows], None if weights is None else weights[rows])

    for name in names[:-1]:
        assert run_value(name) == pytest.approx(summary[name]), name
    assert per_query["PerQueryCoverage(threshold=0.65)@2"].tolist() == pytest.approx([1, 0, 1])
    assert np.isnan(per_query["BestRank"][1])  # nothing retrieved: left out of the mean
    # EvidenceRecall pools spans within any subset of queries (weights = span counts).
    covered, total = ev.evidence_recall(cov, ks=[2])
    subset = [0, 2]
    assert run_value("EvidenceRecall@2", subset) == pytest.approx(
        ev.pool_recall(covered[subset], total[subset])[0]
    )
    assert str(parse("EvidenceRecall(threshold=0.5)@10")) == "EvidenceRecall(threshold=0.5)@10"
    with pytest.raises(UsageError):
        parse("ContextCoverage(threshold=0.5)")  # threshold-free


# --- reference implementation: one Python loop per query, per span, per rank ---------------


def reference(
    scores: np.ndarray, n_spans: np.ndarray, n_ret: np.ndarray, t: float, k: int
) -> dict[str, float]:
    t32 = np.float32(t)
    covered_all = total_all = 0
    pqc, full, ctx, ranks = [], [], [], []
    for q in range(scores.shape[0]):
        m = int(n_spans[q])
        if m == 0:
            continue
        top = min(k, int(n_ret[q]))
        covered = 0
        best_scores = []
        for s in range(m):
            column = [scores[q, r, s] for r in range(top) if not np.isnan(scores[q, r, s])]
            covered += any(x >= t32 for x in column)
            best_scores.append(max(column, default=0.0))
        covered_all += covered
        total_all += m
        pqc.append(covered / m)
        full.append(float(covered == m))
        ctx.append(sum(float(x) for x in best_scores) / m)
        best, where = -math.inf, 0
        for r in range(top):
            row = [scores[q, r, s] for s in range(m) if not np.isnan(scores[q, r, s])]
            if row and max(row) > best:
                best, where = max(row), r + 1
        if best >= t32:
            ranks.append(where)
    mean = lambda xs: sum(xs) / len(xs) if xs else math.nan  # noqa: E731
    return {
        "EvidenceRecall": covered_all / total_all if total_all else math.nan,
        "PerQueryCoverage": mean(pqc),
        "FullCoverageRate": mean(full),
        "ContextCoverage": mean(ctx),
        "BestRank": mean(ranks),
    }


@st.composite
def runs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    nq = draw(st.integers(1, 6))
    depth = draw(st.integers(1, 5))
    width = draw(st.integers(1, 3))
    grid = st.sampled_from([0.0, 0.3, 0.5, 0.65, 0.7, 0.9, 1.0, float("nan")])
    scores = draw(arrays(np.float32, (nq, depth, width), elements=grid))
    n_spans = np.array(draw(st.lists(st.integers(0, width), min_size=nq, max_size=nq)))
    n_ret = np.array(draw(st.lists(st.integers(0, depth), min_size=nq, max_size=nq)))
    return scores, n_spans, n_ret


THRESHOLDS = st.sampled_from([0.0, 0.3, 0.5, 0.6, 0.65, 0.7, 0.9, 1.0])


@settings(max_examples=300, deadline=None)
@given(runs(), THRESHOLDS, st.integers(1, 6))
def test_vectorised_metrics_equal_the_loop_reference(run, t: float, k: int) -> None:  # type: ignore[no-untyped-def]
    scores, n_spans, n_ret = run
    cov = ev.prepare_coverage(scores, n_spans, n_ret, threshold=t)
    values = ev.summarise(cov, ks=(k,)).values
    expected = reference(scores, n_spans, n_ret, t, k)
    for name, want in expected.items():
        assert values[f"{name}@{k}"] == pytest.approx(want, abs=1e-6, nan_ok=True), name
    sweep = ev.threshold_sweep(cov, [t, 0.0, 1.0], k=k)
    for name in ("EvidenceRecall", "PerQueryCoverage", "FullCoverageRate", "BestRank"):
        assert sweep[name][0] == pytest.approx(expected[name], abs=1e-9, nan_ok=True), name
    assert cov.n_excluded == int((n_spans == 0).sum())


@settings(max_examples=200, deadline=None)
@given(runs(), st.lists(THRESHOLDS, min_size=2, max_size=5, unique=True))
def test_recall_monotone_in_k_and_threshold(run, thresholds: list[float]) -> None:  # type: ignore[no-untyped-def]
    cov = ev.prepare_coverage(*run)
    thresholds = sorted(thresholds)
    by_t = []
    for t in thresholds:
        covered, total = ev.evidence_recall(cov, t)
        per_query = ev.per_query_coverage(cov, t)
        recall = ev.pool_recall(covered, total)
        # non-decreasing in k, per query and pooled; every value in [0, 1]
        assert np.all(np.diff(covered, axis=1) >= 0)
        assert np.all(np.diff(per_query, axis=1) >= 0)
        if not np.isnan(recall).any():
            assert np.all(np.diff(recall) >= 0)
            assert np.all((recall >= 0) & (recall <= 1))
        by_t.append(covered)
    for low, high in itertools.pairwise(by_t):
        assert np.all(high <= low)  # non-increasing in the threshold
    sweep = ev.threshold_sweep(cov, thresholds)
    for name in ("EvidenceRecall", "PerQueryCoverage", "FullCoverageRate"):
        finite = sweep[name][~np.isnan(sweep[name])]
        assert np.all(np.diff(finite) <= 1e-12)


def test_sweep_matches_summaries_on_a_larger_random_run() -> None:
    rng = np.random.default_rng(3)
    scores = rng.random((500, 8, 3)).astype(np.float32)
    n_spans = rng.integers(0, 4, 500)
    n_ret = rng.integers(0, 9, 500)
    cov = ev.prepare_coverage(scores, n_spans, n_ret)
    thresholds = np.linspace(0, 1, 21)
    sweep = ev.threshold_sweep(cov, thresholds, k=5)
    for i, t in enumerate(thresholds):
        v = ev.summarise(cov, ks=(5,), threshold=float(t)).values
        for name in ("EvidenceRecall", "PerQueryCoverage", "FullCoverageRate", "BestRank"):
            assert sweep[name][i] == pytest.approx(v[f"{name}@5"], nan_ok=True), (name, t)
