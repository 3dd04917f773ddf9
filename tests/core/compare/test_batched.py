"""The batched resampling (one draw for every metric) against loop re-implementations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rageval_core.compare import StatOptions, compare, compare_ops
from rageval_core.compare.statistics import bootstrap_cis, permutation_tests
from tests.core.compare.test_compare import make_run, store_with

FAST = StatOptions(n_permutations=999, n_bootstrap=300)


def _loop_permutation_p(d: np.ndarray, n_permutations: int, seed: int) -> float:
    """The sign-flip test written out plainly: the same random bytes, one flip per bit."""
    n = d.size
    n_bytes = -(-n // 8)
    rng = np.random.default_rng(seed)
    flips = rng.integers(0, 256, size=(n_permutations, n_bytes), dtype=np.uint8)
    bits = np.unpackbits(flips, axis=1, bitorder="little")[:, :n]
    sums = ((1.0 - 2.0 * bits) * d).sum(axis=1)
    tol = 1e-10 * np.abs(d).sum()
    hits = np.count_nonzero(np.abs(sums) >= abs(d.sum()) - tol)
    return (hits + 1) / (n_permutations + 1)


def _loop_bootstrap(b: np.ndarray, c: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """The bootstrap written out plainly: the same index rows, each resample's mean difference."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, b.size, size=(n_resamples, b.size))
    return np.array([(c[row] - b[row]).mean() for row in idx])


def test_permutation_tests_match_a_plain_loop_per_column() -> None:
    rng = np.random.default_rng(7)
    for n in (37, 200):  # below the block size: the draws are one block, as in the loop
        d = rng.normal(0.05, 0.3, (n, 4))
        d[:, 3] = 0.0  # every flip ties: p = 1
        got = permutation_tests(d, 999, 3)
        for j in range(4):
            assert got[j] == pytest.approx(_loop_permutation_p(d[:, j], 999, 3), abs=1e-15)
        assert got[3] == 1.0
    d[0, 1] = np.nan
    assert math.isnan(permutation_tests(d, 999, 3)[1])


def test_bootstrap_cis_match_a_plain_loop_per_column() -> None:
    rng = np.random.default_rng(8)
    b = rng.random((150, 3))
    c = np.clip(b + rng.normal(0.03, 0.2, b.shape), 0, 1)
    lo, hi = bootstrap_cis(b, c, n_resamples=400, seed=5, level=0.9)
    for j in range(3):
        samples = _loop_bootstrap(b[:, j], c[:, j], 400, 5)
        ref = np.percentile(samples, [5.0, 95.0])
        assert [lo[j], hi[j]] == pytest.approx(ref.tolist(), abs=1e-12)


def _runs() -> tuple:
    ranks_b = {f"q{i}": (i % 4) + 1 for i in range(30)}
    ranks_c = {f"q{i}": ((i + 1) % 3) + 1 for i in range(30)}
    lat_b = {q: 100.0 + i for i, q in enumerate(ranks_b)}
    lat_c = {q: 120.0 + 2 * i for i, q in enumerate(ranks_b)}
    return make_run("b", ranks_b, latency=lat_b), make_run("c", ranks_c, latency=lat_c)


def test_resample_false_keeps_the_cheap_numbers_and_leaves_the_rest_nan() -> None:
    with store_with(*_runs()) as store:
        full = compare(["b", "c"], ["RR", "P@3"], store=store, options=FAST)
        quick = compare(["b", "c"], ["RR", "P@3"], store=store, options=FAST, resample=False)
    for t, q in zip(full.tests, quick.tests, strict=True):
        assert (q.diff, q.t, q.p_t, q.wins, q.losses) == (t.diff, t.t, t.p_t, t.wins, t.losses)
        assert math.isnan(q.p_perm) and math.isnan(q.ci_low) and math.isnan(q.p_perm_holm)
        assert not math.isnan(t.p_perm) and t.ci_low <= t.diff <= t.ci_high
    lat = quick.ops_change("c", "latency.total.mean")
    assert lat is not None and lat.change == pytest.approx(34.5) and math.isnan(lat.ci_low)


def test_compare_ops_is_the_latency_part_of_compare() -> None:
    with store_with(*_runs()) as store:
        full = compare(["b", "c"], ["RR"], store=store, options=FAST)
        without = compare(["b", "c"], ["RR"], store=store, options=FAST, with_ops=False)
        latency, cost, note = compare_ops(["b", "c"], store=store, options=FAST)
    assert without.latency == [] and without.tests == full.tests
    assert latency == full.latency and cost == full.cost and note == full.cost_note
    assert latency and all(ch.ci_low > 0 for ch in latency if ch.target.endswith("mean"))
