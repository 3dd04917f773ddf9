"""Ranking sums are exact: every metric equals a plain per-query loop in trec_eval's order.

metrics/ranking.py adds counts rank after rank (a row loop for many short lists, numpy's
cumsum for few long ones) and float sums through bincount over the relevant cells. Both must
give the very floats trec_eval's loop gives (same terms, same order of additions), so these
tests compare with == against a Python loop over each ranking, on shapes that take each path.
"""

from __future__ import annotations

import gc
import itertools
import weakref

import numpy as np
import pytest

from rageval_core.evaluation.evaluate import coverage, evaluate, evidence_labels
from rageval_core.evaluation.report import Settings
from rageval_core.metrics import RankedLabels, compute, ranked_labels_from_rows, ranking
from rageval_core.metrics.arrays import ranked_labels_from_relevant
from rageval_core.metrics.evidence import Coverage, covers
from rageval_core.rundata import RunData
from rageval_core.store import Store


def random_labels(seed: int, n: int, depth: int, grades: int, floats: bool = False) -> RankedLabels:
    """Random rankings and qrels: short and empty lists, unjudged and -1 labels, extra judged."""
    rng = np.random.default_rng(seed)
    n_ret = rng.integers(0, depth + 1, n)
    ret_query = np.repeat(np.arange(n), n_ret)
    ret_rank = np.concatenate([np.arange(1, m + 1) for m in n_ret] or [np.zeros(0, np.int64)])
    ret_label = np.where(
        rng.random(ret_query.size) < 0.4, rng.integers(0, grades + 1, ret_query.size), 0
    )
    n_judged = rng.integers(0, depth + 5, n)
    judged_query = np.repeat(np.arange(n), n_judged)
    judged_label = rng.integers(-1, grades + 1, judged_query.size)
    dtype = np.float64 if floats else np.int32
    return ranked_labels_from_rows(
        [f"q{i}" for i in range(n)],
        ret_query,
        ret_rank,
        ret_label.astype(dtype),
        judged_query,
        judged_label.astype(dtype),
    )


# (queries, depth): many short lists take the rank-row loop, few long ones numpy's cumsum
SHAPES = {"wide": (600, 12), "narrow": (6, 150), "middle": (120, 30)}


def discount(width: int) -> list[float]:
    # the discount's definition; the sums below are what is under test
    return [float(d) for d in np.log2(np.arange(2, width + 2, dtype=np.float64))]


def reference(a: RankedLabels, k: int | None, level: int) -> dict[str, list[float]]:
    """Per query, trec_eval's loop: walk the ranking once, add each term in rank order."""
    out: dict[str, list[float]] = {m: [] for m in ("P", "R", "Hit", "RR", "AP", "nDCG", "Rprec")}
    d_run, d_ideal = discount(a.depth), discount(a.ideal.shape[1])
    for q in range(a.n_queries):
        labels = [float(x) for x in a.labels[q]]
        ideal = [float(x) for x in a.ideal[q]]
        n_rel = int((a.ideal[q] >= level).sum())
        top = a.depth if k is None else min(k, a.depth)
        found, prec, dcg, first = 0, 0.0, 0.0, 0
        for r in range(top):
            if labels[r] >= level:
                found += 1
                prec += found / (r + 1)
                first = first or r + 1
            if labels[r] != 0:
                dcg += labels[r] / d_run[r]
        idcg = 0.0
        for r in range(len(ideal) if k is None else min(k, len(ideal))):
            if ideal[r] != 0:
                idcg += ideal[r] / d_ideal[r]
        r_found = sum(1 for x in labels[:n_rel] if x >= level)
        out["P"].append(found / (k or 1))
        out["R"].append(found / n_rel if n_rel else 0.0)
        out["Hit"].append(1.0 if found else 0.0)
        out["RR"].append(1.0 / first if first else 0.0)
        out["AP"].append(prec / n_rel if n_rel else 0.0)
        out["nDCG"].append(dcg / idcg if idcg else 0.0)
        out["Rprec"].append(r_found / n_rel if n_rel else 0.0)
    return out


def ours(a: RankedLabels, k: int | None, level: int) -> dict[str, list[float]]:
    p = f"(rel={level})" if level != 1 else ""
    names = {"RR": f"RR{p}", "AP": f"AP{p}", "nDCG": "nDCG", "Rprec": f"Rprec{p}"}
    if k is not None:
        names = {m: f"{name}@{k}" for m, name in names.items() if m != "Rprec"}
        names |= {"P": f"P{p}@{k}", "R": f"R{p}@{k}", "Hit": f"Hit{p}@{k}", "Rprec": f"Rprec{p}"}
    values = compute(list(names.values()), a)
    return {m: values[str(name)].tolist() for m, name in names.items()}


@pytest.mark.parametrize(
    ("shape", "grades", "floats"),
    [
        ("wide", 1, False),
        ("wide", 3, False),
        ("narrow", 1, False),
        ("narrow", 3, False),
        ("middle", 3, False),
        ("wide", 3, True),
        ("narrow", 3, True),
    ],
)
def test_every_value_equals_the_loop_exactly(shape: str, grades: int, floats: bool) -> None:
    n, depth = SHAPES[shape]
    a = random_labels(7 * depth + grades, n, depth, grades, floats)
    for k, level in itertools.product((1, 3, 10, depth, depth + 7, None), (1, 2)):
        got, want = ours(a, k, level), reference(a, k, level)
        for m, values in want.items():
            if k is None and m in ("P", "R", "Hit"):
                continue  # these need a cut-off
            assert got[m] == values, (shape, k, level, m)  # exact: same floats, same order


def test_empty_and_zero_depth_arrays() -> None:
    for n, depth in ((0, 5), (4, 0), (0, 0)):
        a = random_labels(1, n, depth, 2)
        for k in (1, 5, None):
            got, want = ours(a, k, 1), reference(a, k, 1)
            for m, values in want.items():
                if k is None and m in ("P", "R", "Hit"):
                    continue
                assert got[m] == values, (n, depth, k, m)


def test_prefix_sums_match_their_definition() -> None:
    a = random_labels(3, 300, 15, 3)
    sums = ranking.prefix_sums(a, 2)
    relevant = a.labels >= 2
    expected = np.concatenate(
        [np.zeros((a.n_queries, 1), np.int64), relevant.cumsum(axis=1)], axis=1
    )
    np.testing.assert_array_equal(sums.rel_cum, expected)
    assert sums.rel_cum.shape == (300, 16)
    first = np.where(relevant.any(axis=1), relevant.argmax(axis=1) + 1, 0)
    np.testing.assert_array_equal(sums.first_rel, first)
    np.testing.assert_array_equal(sums.n_rel, (a.ideal >= 2).sum(axis=1))
    assert ranking.prefix_sums(a, 2) is sums  # cached per (labels, level)
    assert ranking.prefix_sums(a) is ranking.prefix_sums(a, 1) is not sums


def test_cache_lets_the_labels_go() -> None:
    # the cache is keyed weakly by the labels: nothing cached may hold them alive
    a = random_labels(5, 50, 8, 2)
    compute(["P@3", "R@3", "RR", "AP", "nDCG@3", "Rprec", "AP(rel=2)"], a)
    assert a in ranking._CACHE
    gone = weakref.ref(a)
    del a
    gc.collect()
    assert gone() is None


# --- evidence mode: binary labels built from a rank-major mask -----------------------------


def test_labels_from_a_mask() -> None:
    relevant = np.array([[True, False, False], [False, False, True], [True, False, True]])
    a = ranked_labels_from_relevant(("a", "b", "c"), relevant, np.array([3, 2, 3]))
    assert a.labels.tolist() == [[1, 0, 1], [0, 0, 0], [0, 1, 1]]
    assert a.n_rel.tolist() == [2, 0, 2] and a.n_ret.tolist() == [3, 2, 3]
    assert a.ideal.tolist() == [[1, 1, 0], [0, 0, 0], [1, 1, 0]]
    relevant[0, 0] = False  # the labels are a copy, not a view of the caller's mask
    assert a.labels[0, 0] == 1
    cut = ranked_labels_from_relevant(
        ("a", "b", "c"), relevant[:1], np.array([1, 1, 1]), n_rel=np.array([2, 0, 5])
    )
    assert cut.n_rel.tolist() == [2, 0, 5] and cut.ideal.tolist() == [[1], [0], [1]]


def same_labels_the_old_way(a: RankedLabels) -> RankedLabels:
    """The same relevance as int32 (queries x ranks) arrays from the rows builder."""
    ret_query = np.repeat(np.arange(a.n_queries), a.n_ret)
    ret_rank = np.concatenate([np.arange(1, m + 1) for m in a.n_ret.tolist()])
    judged_query = np.repeat(np.arange(a.n_queries), a.n_rel)
    return ranked_labels_from_rows(
        list(a.query_ids),
        ret_query,
        ret_rank,
        a.labels[ret_query, ret_rank - 1].astype(np.int32),
        judged_query,
        np.ones(judged_query.size, np.int32),
    )


@pytest.fixture(scope="module")
def scored() -> tuple[Store, RunData]:
    from bench.recompute import make_run_data, make_tensor

    store = Store(":memory:")
    return store, make_run_data(*make_tensor(3000, depth=12, spans=3, seed=4))


def test_evidence_mode_equals_the_rows_builder_exactly(scored: tuple[Store, RunData]) -> None:
    store, data = scored
    names = ["P@5", "R@5", "RR", "AP", "nDCG@5", "Hit@5", "Rprec", "AP@3", "nDCG"]
    for threshold in (0.5, 0.8, 1.0):
        a, _ = evidence_labels(store, data, Settings(threshold=threshold))
        assert a.labels.dtype == np.int8 and set(np.unique(a.labels)) <= {0, 1}
        old = same_labels_the_old_way(a)
        np.testing.assert_array_equal(old.labels, a.labels)
        got, want = compute(names, a), compute(names, old)
        for name in names:
            assert got[name].tolist() == want[name].tolist(), (threshold, name)


def test_a_new_k_reuses_the_labels_and_equals_a_fresh_run(scored: tuple[Store, RunData]) -> None:
    store, data = scored
    first, _ = evidence_labels(store, data, Settings(k=3, threshold=0.7))
    again, _ = evidence_labels(store, data, Settings(k=9, threshold=0.7))
    assert again is first  # same threshold: kept, with its cached sums
    other, _ = evidence_labels(store, data, Settings(k=9, threshold=0.75))
    assert other is not first
    report = evaluate(data, store=store, relevance="evidence", k=9, threshold=0.7)
    fresh = ranked_labels_from_relevant(
        first.query_ids, covers(evidence_cov(store, data)).T, first.n_ret
    )
    values = compute(["P@9", "R@9", "RR", "AP", "nDCG@9", "Hit@9", "Rprec"], fresh)
    rows = report_rows(report.query_ids, fresh.query_ids)
    for name, v in values.items():
        assert report.per_query[name][rows].tolist() == v.tolist(), name


def evidence_cov(store: Store, data: RunData) -> Coverage:
    return coverage(store, data, Settings(threshold=0.7))


def report_rows(all_ids: np.ndarray, ids: tuple[str, ...]) -> np.ndarray:
    where = {q: i for i, q in enumerate(all_ids.tolist())}
    return np.array([where[q] for q in ids], dtype=np.int64)
