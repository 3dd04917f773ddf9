"""The agreement statistics (rageval_core.metrics.agreement) against their references:
scikit-learn's cohen_kappa_score (unweighted, linear, quadratic) and the krippendorff package's
alpha (ordinal, nominal, interval), on seeded random label sets; and the withheld cases."""

from __future__ import annotations

import numpy as np
import pytest
import krippendorff
from sklearn.metrics import cohen_kappa_score

from rageval_core.metrics import agreement as ag

SCALE = [0.0, 1.0, 2.0, 3.0]


def _pair(rng: np.random.Generator, n: int, agree: float) -> tuple[np.ndarray, np.ndarray]:
    a = rng.integers(0, 4, n).astype(float)
    noise = rng.integers(-1, 2, n)
    b = np.where(rng.random(n) < agree, a, np.clip(a + noise, 0, 3))
    return a, b


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_equals_scikit_learn_on_random_label_sets(weights: ag.Weights) -> None:
    rng = np.random.default_rng(31)
    checked = 0
    for trial in range(200):
        n = int(rng.integers(2, 60))
        a, b = _pair(rng, n, float(rng.random()))
        if len(set(a) | set(b)) < 2:
            continue
        ref = cohen_kappa_score(a, b, weights=weights, labels=SCALE)
        got = ag.cohen_kappa(a, b, weights=weights, categories=SCALE)
        if np.isnan(ref):
            assert got.value is None and got.reason == ag.ONE_CATEGORY
            continue
        assert got.value == pytest.approx(ref, abs=1e-12), (trial, a, b)
        checked += 1
        # without a scale, the categories given (scikit-learn's default labels); equal when
        # the values given are 0..m (positions are values then)
        if weights is None or set(a) | set(b) == set(range(int(max(a.max(), b.max())) + 1)):
            plain = ag.cohen_kappa(a, b, weights=weights)
            assert plain.value == pytest.approx(cohen_kappa_score(a, b, weights=weights), abs=1e-12)
    assert checked > 150


@pytest.mark.parametrize("level", ["ordinal", "nominal", "interval"])
def test_krippendorff_alpha_equals_the_krippendorff_package_with_missing_values(level: str) -> None:
    rng = np.random.default_rng(7)
    checked = 0
    for trial in range(150):
        raters = int(rng.integers(2, 6))
        items = int(rng.integers(2, 40))
        truth = rng.integers(0, 4, items).astype(float)
        data = np.clip(truth[None, :] + rng.integers(-1, 2, (raters, items)), 0, 3).astype(float)
        data[rng.random(data.shape) < rng.random() * 0.6] = np.nan
        got = ag.krippendorff_alpha(data, level)  # type: ignore[arg-type]
        pairable = (~np.isnan(data)).sum(axis=0) >= 2
        values = set(data[:, pairable][~np.isnan(data[:, pairable])])
        if not pairable.any() or len(values) < 2:
            assert got.value is None and got.reason in (ag.NO_PAIRS, ag.ONE_CATEGORY)
            continue
        ref = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert got.value == pytest.approx(ref, abs=1e-10), (trial, data)
        checked += 1
    assert checked > 100


def test_krippendorffs_own_example() -> None:
    data = [
        [np.nan, np.nan, np.nan, np.nan, np.nan, 3, 4, 1, 2, 1, 1, 3, 3, np.nan, 3],
        [1, np.nan, 2, 1, 3, 3, 4, 3, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan],
        [np.nan, np.nan, 2, 1, 3, 4, 4, np.nan, 2, 1, 1, 3, 3, np.nan, 4],
    ]
    assert ag.krippendorff_alpha(data, "nominal").value == pytest.approx(0.691358, abs=1e-6)
    assert ag.krippendorff_alpha(data, "interval").value == pytest.approx(0.810845, abs=1e-6)


def test_withheld_figures_say_why_and_never_crash() -> None:
    nan = np.nan
    assert ag.cohen_kappa([], []).reason == ag.NO_ITEMS
    assert ag.cohen_kappa([1, nan], [nan, 2]).reason == ag.NO_ITEMS  # no overlap
    assert ag.cohen_kappa([1], [2]).reason == ag.ONE_ITEM
    assert ag.cohen_kappa([2, 2, 2], [2, 2, 2]).reason == ag.ONE_CATEGORY
    assert ag.cohen_kappa([2, 2, 2], [2, 2, 2], weights="quadratic").value is None
    assert ag.krippendorff_alpha([[1, 2, 3]]).reason == ag.FEWER_RATERS
    assert ag.krippendorff_alpha([[1, nan], [nan, 2]]).reason == ag.NO_PAIRS
    assert ag.krippendorff_alpha([[1, 1, nan], [1, 1, 3]]).reason == ag.ONE_CATEGORY
    assert ag.alpha_interval([[1, 1], [1, 1]]).bounds is None
    # the honest negative: annotators at odds get a negative kappa, not a withheld one
    assert ag.cohen_kappa([0, 1, 0, 1], [1, 0, 1, 0]).value == pytest.approx(-1.0)


def test_alpha_interval_is_seeded_holds_the_point_and_narrows_with_items() -> None:
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 4, 400).astype(float)
    data = np.clip(
        truth[None, :] + rng.integers(-1, 2, (3, 400)) * (rng.random((3, 400)) < 0.3), 0, 3
    )
    point = ag.krippendorff_alpha(data).value
    wide = ag.alpha_interval(data[:, :40], resamples=500, seed=1)
    narrow = ag.alpha_interval(data, resamples=500, seed=1)
    assert narrow == ag.alpha_interval(data, resamples=500, seed=1)  # same seed, same interval
    assert narrow != ag.alpha_interval(data, resamples=500, seed=2)
    assert narrow.bounds is not None and wide.bounds is not None
    assert narrow.bounds[0] <= point <= narrow.bounds[1]
    assert narrow.bounds[1] - narrow.bounds[0] < wide.bounds[1] - wide.bounds[0]
    # every resample computed by the same formula as the point: one resample of all items once
    assert ag.alpha_interval(data, resamples=1000).resamples == 1000


def test_confusion_matrix_and_per_grade_precision() -> None:
    c = ag.confusion_matrix([0, 1, 2, 2, np.nan], [0, 2, 2, 1, 1], SCALE)
    assert c.tolist() == [[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 1, 0], [0, 0, 0, 0]]
    p = ag.per_grade_precision(c, SCALE)
    assert [e.value for e in p] == [1.0, 0.0, 0.5, None]
    with pytest.raises(ValueError):
        ag.confusion_matrix([0, 5], [0, 1], SCALE)
