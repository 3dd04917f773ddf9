"""A comparison through a CompareMemo (the dashboard's settings moves) equals one from scratch."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from rageval_core.compare import StatOptions, compare
from rageval_core.compare import paired
from rageval_core.compare.memo import CompareMemo, digest
from rageval_core.compare.statistics import Draws, bootstrap_cis, permutation_tests
from tests.core.compare.test_compare import make_run, store_with

OPTIONS = StatOptions(n_permutations=999, n_bootstrap=300, seed=11)


def _runs() -> tuple[Any, ...]:
    rng = np.random.default_rng(3)
    ids = [f"q{i}" for i in range(60)]

    def ranks(p: list[float]) -> dict[str, int | None]:
        return {q: [1, 2, 3, None][int(rng.choice(4, p=p))] for q in ids}

    base = make_run("base", ranks([0.3, 0.3, 0.2, 0.2]))
    better = make_run("better", ranks([0.5, 0.2, 0.2, 0.1]))
    # a candidate holding 45 of the baseline's queries: its tests draw on another n
    part = make_run("part", dict(list(ranks([0.3, 0.2, 0.3, 0.2]).items())[:45]))
    return base, better, part


def _same(a: Any, b: Any) -> bool:
    """Equal field by field, NaN equal to NaN (a dataclass's == says NaN != NaN)."""
    fields = a.__dataclass_fields__
    return all(
        getattr(a, f) == getattr(b, f)
        or (
            isinstance(getattr(a, f), float)
            and math.isnan(getattr(a, f))
            and math.isnan(getattr(b, f))
        )
        for f in fields
    )


def test_a_k_move_through_the_memo_equals_a_comparison_from_scratch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    computed: list[str] = []
    cheap = paired._cheap_test
    monkeypatch.setattr(paired, "_cheap_test", lambda m, c, x: computed.append(m) or cheap(m, c, x))
    memo = CompareMemo()
    with store_with(*_runs()) as store:
        names = ["base", "better", "part"]
        compare(names, ["RR", "AP", "P@1", "nDCG@1"], store=store, options=OPTIONS, memo=memo)
        assert sorted(computed) == sorted(["RR", "AP", "P@1", "nDCG@1"] * 2)
        computed.clear()
        metrics = ["RR", "AP", "P@2", "nDCG@2"]
        moved = compare(names, metrics, store=store, options=OPTIONS, memo=memo, k=2)
        # RR and AP do not depend on k: only the @k metrics were tested again, per candidate
        assert sorted(computed) == sorted(["P@2", "nDCG@2"] * 2)
        fresh = compare(names, metrics, store=store, options=OPTIONS, k=2)
    assert len(moved.tests) == len(fresh.tests) == 8
    assert {t.n for t in fresh.tests} == {60, 45}
    for a, b in zip(moved.tests, fresh.tests, strict=True):
        assert _same(a, b), (a, b)
        assert not math.isnan(a.p_perm) and a.ci_low <= a.diff <= a.ci_high
    assert moved.to_json() == fresh.to_json()


def test_deltas_first_then_the_tests_reuse_the_cheap_part() -> None:
    memo = CompareMemo()
    with store_with(*_runs()) as store:
        quick = compare(
            ["base", "better"], ["RR"], store=store, options=OPTIONS, memo=memo, resample=False
        )
        full = compare(["base", "better"], ["RR"], store=store, options=OPTIONS, memo=memo)
        fresh = compare(["base", "better"], ["RR"], store=store, options=OPTIONS)
    assert math.isnan(quick.tests[0].p_perm) and not math.isnan(full.tests[0].p_perm)
    assert _same(full.tests[0], fresh.tests[0])


def test_kept_draws_give_the_numbers_of_fresh_ones() -> None:
    rng = np.random.default_rng(4)
    d = rng.normal(0.02, 0.3, (500, 3))
    draws = Draws()
    first = permutation_tests(d, 999, 5, draws=draws)
    # a later call on one column reads the kept flips: the p of a column alone, as fresh
    again = permutation_tests(d[:, 1:2], 999, 5, draws=draws)
    assert again[0] == first[1] == permutation_tests(d[:, 1:2], 999, 5)[0]
    b, c = rng.random((500, 3)), rng.random((500, 3))
    lo, hi = bootstrap_cis(b, c, n_resamples=300, seed=5, draws=draws)
    lo1, hi1 = bootstrap_cis(b[:, 2:], c[:, 2:], n_resamples=300, seed=5, draws=draws)
    assert (lo1[0], hi1[0]) == (lo[2], hi[2])
    assert lo[2] < hi[2]
    small = Draws(max_cells=10)  # too large to keep: drawn again, the same
    assert permutation_tests(d, 999, 5, draws=small).tolist() == first.tolist()


def test_digest_tells_values_shapes_and_none_apart() -> None:
    a = np.arange(4, dtype=np.float64)
    assert digest(a) == digest(a.copy())
    assert digest(a) != digest(a[::-1].copy())
    assert digest(a) != digest(a.reshape(2, 2))
    assert digest(a, None) != digest(a)
    assert digest(a.astype(np.float32)) != digest(a)
