"""Agreement between annotators (numpy only): Cohen's kappa (unweighted, linear or quadratic
weights), Krippendorff's alpha (nominal, ordinal or interval; any number of annotators, missing
values allowed) with a percentile bootstrap interval over items, and the confusion matrix of two
annotators. docs/metrics.md ("Agreement between annotators") has the formulas and edge cases.

A figure that cannot be computed is an Estimate with value None and the reason, never 0 and never
an exception: no items, fewer than two, one category only (chance explains every agreement).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

Weights = Literal["linear", "quadratic"] | None
Level = Literal["nominal", "ordinal", "interval"]
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval")

#: the reasons a figure is withheld, said the same everywhere
NO_ITEMS = "no item was labelled by both"
ONE_ITEM = "only one item was labelled by both (n < 2)"
ONE_CATEGORY = "one category only: every grade given is the same, so chance explains all agreement"
NO_PAIRS = "no item was labelled by two annotators"
FEWER_RATERS = "fewer than two annotators"


@dataclass(frozen=True, slots=True)
class Estimate:
    """A statistic's value, or None with the reason it is withheld."""

    value: float | None
    reason: str | None = None


def categories_of(*labels: ArrayLike) -> NDArray[np.float64]:
    """The sorted distinct values given (NaN, a missing label, left out)."""
    values = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in labels])
    return np.unique(values[~np.isnan(values)])


def confusion_matrix(
    a: ArrayLike, b: ArrayLike, categories: ArrayLike | None = None
) -> NDArray[np.int64]:
    """counts[i, j]: the items a labelled categories[i] and b categories[j] (items either left
    unlabelled, NaN, are not counted). categories: default the values either gave, sorted."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"two annotators' labels differ in length: {x.size} and {y.size}")
    both = ~np.isnan(x) & ~np.isnan(y)
    cats = categories_of(x[both], y[both]) if categories is None else np.asarray(categories, float)
    k = cats.size
    i = np.searchsorted(cats, x[both])
    j = np.searchsorted(cats, y[both])
    if ((i >= k) | (j >= k)).any() or not (
        np.array_equal(cats[np.minimum(i, k - 1)], x[both])
        and np.array_equal(cats[np.minimum(j, k - 1)], y[both])
    ):
        raise ValueError("a label is not one of the categories given")
    return np.bincount(i * k + j, minlength=k * k).reshape(k, k).astype(np.int64)


def _weights(categories: NDArray[np.float64], weights: Weights) -> NDArray[np.float64]:
    """Disagreement weights by the categories' distance (their values, not their positions: an
    unused grade between two others still counts as a step)."""
    diff = np.abs(categories[:, None] - categories[None, :])
    if weights is None:
        return (diff > 0).astype(np.float64)
    if weights == "linear":
        return diff
    if weights == "quadratic":
        return diff**2
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', not {weights!r}")


def kappa_from_confusion(
    confusion: ArrayLike, categories: ArrayLike | None = None, weights: Weights = None
) -> Estimate:
    """Cohen's kappa of a confusion matrix: 1 - sum(w * O) / sum(w * E), O the observed shares,
    E = outer(row shares, column shares) what two annotators with these label frequencies reach by
    chance, w the disagreement weights (0 on the diagonal; 1 off it, |i - j| or (i - j)^2 by the
    categories' values). Unweighted this is (p_o - p_e) / (1 - p_e)."""
    o = np.asarray(confusion, dtype=np.float64)
    n = float(o.sum())
    if n == 0:
        return Estimate(None, NO_ITEMS)
    if n < 2:
        return Estimate(None, ONE_ITEM)
    cats = np.arange(o.shape[0], dtype=np.float64) if categories is None else np.asarray(categories)
    w = _weights(np.asarray(cats, dtype=np.float64), weights)
    o = o / n
    e = np.outer(o.sum(axis=1), o.sum(axis=0))
    expected = float((w * e).sum())
    if expected <= 0.0:
        return Estimate(None, ONE_CATEGORY)
    return Estimate(1.0 - float((w * o).sum()) / expected)


def cohen_kappa(
    a: ArrayLike, b: ArrayLike, weights: Weights = None, categories: ArrayLike | None = None
) -> Estimate:
    """Cohen's kappa of two annotators over the items both labelled (NaN: not labelled).
    categories: default the values either gave; scikit-learn's cohen_kappa_score(labels=...)."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    both = ~np.isnan(x) & ~np.isnan(y)
    cats = categories_of(x[both], y[both]) if categories is None else np.asarray(categories, float)
    return kappa_from_confusion(confusion_matrix(x, y, cats), cats, weights)


def _unit_counts(data: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(counts[unit, value]: how many annotators gave that value to that unit, the values)."""
    values = categories_of(data)
    units = data.shape[1]
    given = ~np.isnan(data)
    u = np.broadcast_to(np.arange(units), data.shape)[given]
    v = np.searchsorted(values, data[given])
    counts = np.bincount(u * values.size + v, minlength=units * values.size)
    return counts.reshape(units, values.size).astype(np.float64), values


def _unit_coincidences(counts: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each pairable unit's coincidences (units x values x values): (c c^T - diag c) / (m_u - 1);
    a unit with fewer than two values adds nothing."""
    m = counts.sum(axis=1)
    pairable = counts[m >= 2]
    scale = 1.0 / (pairable.sum(axis=1) - 1.0)
    outer = pairable[:, :, None] * pairable[:, None, :]
    idx = np.arange(counts.shape[1])
    outer[:, idx, idx] -= pairable
    return outer * scale[:, None, None]


def _alpha_from_coincidences(
    o: NDArray[np.float64], values: NDArray[np.float64], level: str
) -> NDArray[np.float64]:
    """alpha = 1 - D_o / D_e for coincidence matrices o (... x V x V), NaN where D_e = 0.
    D_o = sum o_ck d_ck / n; D_e = sum n_c n_k d_ck / (n (n - 1)); n_c = sum_k o_ck."""
    n_v = o.sum(axis=-1)
    n = n_v.sum(axis=-1)
    if level == "nominal":
        d = np.broadcast_to((values[:, None] != values[None, :]).astype(float), o.shape)
    elif level == "interval":
        d = np.broadcast_to((values[:, None] - values[None, :]) ** 2, o.shape)
    elif level == "ordinal":
        # d_ck = (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2 over the values' order
        cum = np.concatenate([np.zeros((*n_v.shape[:-1], 1)), np.cumsum(n_v, axis=-1)], axis=-1)
        lo = np.minimum.outer(np.arange(values.size), np.arange(values.size))
        hi = np.maximum.outer(np.arange(values.size), np.arange(values.size))
        between = cum[..., hi + 1] - cum[..., lo]
        d = (between - (n_v[..., :, None] + n_v[..., None, :]) / 2.0) ** 2
    else:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")
    e = (n_v[..., :, None] * n_v[..., None, :]) - np.eye(values.size) * n_v[..., None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        e = e / (n - 1.0)[..., None, None]
        observed = (o * d).sum(axis=(-2, -1))
        expected = (e * d).sum(axis=(-2, -1))
        out = 1.0 - observed / expected
    return np.where(expected > 0, out, np.nan)


def _as_reliability(data: ArrayLike) -> NDArray[np.float64]:
    arr = np.asarray(data, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError("reliability data must be annotators x items")
    return arr


def krippendorff_alpha(data: ArrayLike, level: Level = "ordinal") -> Estimate:
    """Krippendorff's alpha of reliability data (annotators x items, NaN: not labelled):
    1 - D_o / D_e over the coincidence matrix of the pairable values (items labelled by two or
    more), with the level's distance (nominal: c != k; interval: (c - k)^2; ordinal: the squared
    count of values from c to k less half the two ends, Krippendorff 2011)."""
    arr = _as_reliability(data)
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")
    if arr.shape[0] < 2:
        return Estimate(None, FEWER_RATERS)
    counts, values = _unit_counts(arr)
    if not (counts.sum(axis=1) >= 2).any():
        return Estimate(None, NO_PAIRS)
    o = _unit_coincidences(counts).sum(axis=0)
    if np.count_nonzero(o.sum(axis=0)) < 2:
        return Estimate(None, ONE_CATEGORY)
    return Estimate(float(_alpha_from_coincidences(o, values, level)))


@dataclass(frozen=True, slots=True)
class Interval:
    """A percentile bootstrap interval, or None with the reason; `undefined`: resamples in which
    the statistic could not be computed (one category only), left out of the percentiles."""

    bounds: tuple[float, float] | None
    resamples: int
    undefined: int = 0
    reason: str | None = None


def alpha_interval(
    data: ArrayLike,
    level: Level = "ordinal",
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """A percentile bootstrap interval of Krippendorff's alpha: the items labelled by two or more
    annotators are resampled with replacement (numpy's default_rng(seed): the same data and seed
    give the same interval), alpha computed on each resample, the (1 - confidence) / 2 and
    (1 + confidence) / 2 percentiles of those taken."""
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    point = krippendorff_alpha(data, level)
    if point.value is None:
        return Interval(None, resamples, 0, point.reason)
    counts, values = _unit_counts(_as_reliability(data))
    per_unit = _unit_coincidences(counts).reshape(-1, values.size * values.size)
    units = per_unit.shape[0]
    rng = np.random.default_rng(seed)
    chunk = max(1, 2_000_000 // max(units, 1))
    alphas: list[NDArray[np.float64]] = []
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        picks = rng.integers(0, units, size=(b, units), dtype=np.int32)  # b * units < 2**31
        picks += (np.arange(b, dtype=np.int32) * units)[:, None]
        weights = np.bincount(picks.ravel(), minlength=b * units).reshape(b, units).astype(float)
        o = (weights @ per_unit).reshape(b, values.size, values.size)
        alphas.append(_alpha_from_coincidences(o, values, level))
    every = np.concatenate(alphas)
    defined = every[~np.isnan(every)]
    undefined = int(every.size - defined.size)
    if defined.size == 0:
        return Interval(None, resamples, undefined, ONE_CATEGORY + " in every resample")
    tail = (1.0 - confidence) / 2.0 * 100.0
    lo, hi = np.percentile(defined, [tail, 100.0 - tail])
    return Interval((float(lo), float(hi)), resamples, undefined)


def per_grade_precision(confusion: ArrayLike, categories: Sequence[float]) -> list[Estimate]:
    """For each category j of the second annotator (columns: e.g. an LLM), the share of the items
    it gave j that the first (rows: people) gave j too; None where it gave j to no item."""
    c = np.asarray(confusion, dtype=np.float64)
    out = []
    for j in range(len(categories)):
        given = float(c[:, j].sum())
        out.append(
            Estimate(None, "never given") if given == 0 else Estimate(float(c[j, j]) / given)
        )
    return out
