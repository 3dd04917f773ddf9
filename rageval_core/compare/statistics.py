"""The paired statistics of a comparison: t-test, effect size, sign-flip test, bootstrap, Holm.

numpy only: the t distribution's CDF is the regularised incomplete beta, written out here
(Numerical Recipes' continued fraction) and tested against scipy in tests/core/compare/test_compare.py.
Resampling runs in row blocks of at most _BLOCK_CELLS cells, so memory stays bounded whatever
the number of queries. A Draws keeps the random blocks of a (number of pairs, seed) for the next
test on as many pairs: the dashboard's k move tests again only the metrics it changed, on the
draws the first test made (the same numbers the seed gives, so the p-values do not move).
"""

from __future__ import annotations

import contextlib
import math
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rageval_core.errors import UsageError
from rageval_core.settings.stat_defaults import (
    DEFAULT_ALPHA,
    DEFAULT_BOOTSTRAP,
    DEFAULT_PERMUTATIONS,
    DEFAULT_SEED,
)

Floats = NDArray[np.float64]

#: cells of one resampling block (rows x queries): bounds memory whatever the run size
_BLOCK_CELLS = 2_000_000
#: cells (one byte each) a Draws keeps in all: 10,000 pairs' 2,000 resamples and 10,000 sign
#: flips are 32.5 M; draws past it are made again each time, block by block
_DRAWS_CELLS = 100_000_000

_CF_MAX_ITER = 100_000
_CF_EPS = 1e-16
_CF_TINY = 1e-300


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b), evaluated by the modified Lentz method (NR 6.4)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _CF_TINY else _CF_TINY)
    h = d
    for m in range(1, _CF_MAX_ITER + 1):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _CF_TINY else _CF_TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _CF_TINY else _CF_TINY
            step = d * c
            h *= step
        if abs(step - 1.0) < _CF_EPS:
            return h
    raise ArithmeticError(f"incomplete beta did not converge for a={a}, b={b}, x={x}")


def _betainc(a: float, b: float, x: float, xc: float) -> float:
    """I_x(a, b) given x and xc = 1 - x computed without cancellation by the caller."""
    if x <= 0.0:
        return 0.0
    if xc <= 0.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(xc)
    )
    front = math.exp(log_front)
    # The fraction converges fast on this side of the mean; the other side uses the symmetry
    # I_x(a, b) = 1 - I_{1-x}(b, a).
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, xc) / b


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b), a, b > 0, 0 <= x <= 1."""
    if not (a > 0 and b > 0) or not 0.0 <= x <= 1.0:
        raise ValueError(f"betainc needs a, b > 0 and 0 <= x <= 1, got a={a}, b={b}, x={x}")
    return _betainc(float(a), float(b), float(x), 1.0 - float(x))


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom: I_{df/(df+t^2)}(df/2, 1/2)."""
    if math.isnan(t) or not df > 0:
        return math.nan
    if math.isinf(t):
        return 0.0
    t2 = t * t
    if math.isinf(t2):
        return 0.0
    denom = df + t2
    return min(1.0, _betainc(df / 2.0, 0.5, df / denom, t2 / denom))


@dataclass(frozen=True, slots=True)
class TTest:
    """A paired t-test: t = mean(d) / (sd(d) / sqrt(n)), df = n - 1, two-sided p."""

    t: float
    df: int
    p: float


def paired_t_test(d: Floats) -> TTest:
    """Paired t-test on the differences d (NaN when n < 2; sd = 0: p = 1 if mean 0, else 0)."""
    d = np.asarray(d, dtype=np.float64)
    n = int(d.size)
    if n < 2:
        return TTest(math.nan, max(n - 1, 0), math.nan)
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        # Every pair moved by the same amount: no variance to test against. By definition,
        # no change (t = 0, p = 1) or a certain one (t = +-inf, p = 0).
        return (
            TTest(0.0, n - 1, 1.0)
            if mean == 0.0
            else TTest(math.copysign(math.inf, mean), n - 1, 0.0)
        )
    t = mean / (sd / math.sqrt(n))
    return TTest(t, n - 1, t_two_sided_p(t, n - 1))


def effect_size(d: Floats) -> float:
    """Cohen's d_z = mean(d) / sd(d) (sd with n - 1); NaN when n < 2, 0 or +-inf when sd = 0."""
    d = np.asarray(d, dtype=np.float64)
    if d.size < 2:
        return math.nan
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if sd == 0.0:
        return 0.0 if mean == 0.0 else math.copysign(math.inf, mean)
    return mean / sd


def _row_blocks(n_rows: int, n_cols: int) -> Iterator[int]:
    """Sizes of the row blocks that cover n_rows with at most _BLOCK_CELLS cells each."""
    block = max(1, min(n_rows, _BLOCK_CELLS // max(n_cols, 1)))
    for start in range(0, n_rows, block):
        yield min(block, n_rows - start)


def flip_blocks(n_bytes: int, n_permutations: int, seed: int) -> Iterator[NDArray[np.uint8]]:
    """The random sign flips of a permutation test: (n_bytes, rows) blocks of random bytes, a
    bit per query, from numpy's Generator(seed) (the same blocks for every caller)."""
    rng = np.random.default_rng(seed)
    for size in _row_blocks(n_permutations, n_bytes):
        yield rng.integers(0, 256, size=(size, n_bytes), dtype=np.uint8).T.copy()


def count_blocks(n: int, n_resamples: int, seed: int) -> Iterator[NDArray[np.integer]]:
    """The bootstrap resamples of n items: (rows, n) blocks of how often each item is drawn, from
    numpy's Generator(seed) integers (the same blocks for every caller), in the narrowest
    unsigned type that holds them (a mean multiplies them as float64)."""
    rng = np.random.default_rng(seed)
    for size in _row_blocks(n_resamples, n):
        idx = rng.integers(0, n, size=(size, n))
        flat = (idx + (np.arange(size) * n)[:, None]).ravel()
        counts = np.bincount(flat, minlength=size * n).reshape(size, n)
        yield counts.astype(np.min_scalar_type(int(counts.max(initial=0))))


class Draws:
    """The random blocks of the tests made so far, kept for the next test on as many pairs.

    One draw per (kind, number of pairs or bytes, number of rows, seed) serves every metric and
    candidate: a test reads the same blocks the seed gives it (flip_blocks, count_blocks), so a
    kept draw changes no number. At most _DRAWS_CELLS cells are kept, the oldest let go first;
    thread-safe (the dashboard tests in a thread while its page reads).
    """

    def __init__(self, max_cells: int = _DRAWS_CELLS) -> None:
        self._max = max_cells
        self._kept: OrderedDict[tuple[str, int, int, int], list[NDArray[np.integer]]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def flips(self, n_bytes: int, n_permutations: int, seed: int) -> Iterable[NDArray[np.uint8]]:
        return self._get(("flips", n_bytes, n_permutations, seed), flip_blocks)  # type: ignore[return-value]

    def counts(self, n: int, n_resamples: int, seed: int) -> Iterable[NDArray[np.integer]]:
        return self._get(("counts", n, n_resamples, seed), count_blocks)

    def _get(
        self,
        key: tuple[str, int, int, int],
        make: Callable[[int, int, int], Iterator[NDArray[np.integer]]],
    ) -> Iterable[NDArray[np.integer]]:
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        _, width, rows, seed = key
        if width * rows > self._max:  # too large to keep: drawn block by block, as it is used
            return make(width, rows, seed)
        blocks = list(make(width, rows, seed))
        with self._lock:
            self._kept[key] = blocks
            while sum(b.size for kept in self._kept.values() for b in kept) > self._max:
                self._kept.popitem(last=False)
        return blocks


def permutation_test(
    d: Floats,
    n_permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = DEFAULT_SEED,
    exact: bool | None = None,
) -> float:
    """Two-sided paired randomisation test of mean(d) = 0 by random sign flips of d.

    Monte Carlo: p = (#{|mean*| >= |mean|} + 1) / (n_permutations + 1), the flips drawn from
    numpy's Generator(seed). exact=None enumerates all 2^n flips instead when 2^n <=
    n_permutations (exact=True forces it, False forbids it): p = #{|mean*| >= |mean|} / 2^n.
    NaN when n < 2.
    """
    d = np.asarray(d, dtype=np.float64)
    return float(permutation_tests(d[:, None], n_permutations, seed, exact)[0])


def permutation_tests(
    d: Floats,
    n_permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = DEFAULT_SEED,
    exact: bool | None = None,
    draws: Draws | None = None,
) -> Floats:
    """permutation_test of every column of d (n, m), all on the same sign flips.

    One draw of the flips serves every column, so m tests cost one random matrix and one
    gather of m-wide rows, and each column's p equals permutation_test(d[:, j]) with that seed
    (a column's sums never mix with another's). A column with a non-finite value gets NaN.
    draws: where the flips are kept for the next call (drawn afresh without it).
    """
    d = np.asarray(d, dtype=np.float64)
    n, m = d.shape
    out = np.full(m, np.nan)
    ok = np.isfinite(d).all(axis=0)
    if n < 2 or not ok.any():
        return out
    x = d[:, ok]
    observed = np.abs(x.sum(axis=0))
    # sums of the same values in another order differ by rounding: ties must stay ties
    tol = 1e-10 * np.abs(x).sum(axis=0)
    if exact is None:
        exact = n <= 30 and 2**n <= n_permutations
    if exact:
        if n > 24:
            raise ValueError(f"exact enumeration of 2^{n} sign flips is too large")
        hits = np.zeros(x.shape[1], dtype=np.int64)
        total = 2**n
        start = 0
        for size in _row_blocks(total, n):
            codes = np.arange(start, start + size, dtype=np.int64)
            signs = 1.0 - 2.0 * ((codes[:, None] >> np.arange(n)) & 1)
            hits += np.count_nonzero(np.abs(signs @ x) >= observed - tol, axis=0)
            start += size
        out[ok] = hits / total
        return out
    if n_permutations < 1:
        raise UsageError(f"the number of permutations must be >= 1, got {n_permutations}")
    # One random byte flips 8 queries at once: a table per byte position holds the sum of d
    # over every subset of its 8 queries, so a permutation costs n/8 lookups, not n products.
    # Flipping the subset F turns sum(d) into sum(d) - 2 sum_F(d). The table's rows hold every
    # column, so one lookup serves all of them.
    n_bytes = -(-n // 8)
    padded = np.zeros((n_bytes * 8, x.shape[1]))
    padded[:n] = x
    bit_of = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.float64)  # (256, 8)
    table = np.einsum("vk,bkm->bvm", bit_of, padded.reshape(n_bytes, 8, -1))  # (bytes, 256, m)
    total = x.sum(axis=0)
    hits = np.zeros(x.shape[1], dtype=np.int64)
    blocks = (
        flip_blocks(n_bytes, n_permutations, seed)
        if draws is None
        else draws.flips(n_bytes, n_permutations, seed)
    )
    for flips in blocks:
        size = flips.shape[1]
        # byte position by byte position: each lookup reads a (256, m) table that stays in
        # cache, faster than one gather over all positions at once (docs/benchmarks.md)
        flipped = np.zeros((size, x.shape[1]))
        for pos in range(n_bytes):
            flipped += table[pos][flips[pos]]
        hits += np.count_nonzero(np.abs(total - 2.0 * flipped) >= observed - tol, axis=0)
    out[ok] = (hits + 1) / (n_permutations + 1)
    return out


def resampled(
    n: int,
    n_resamples: int,
    seed: int,
    statistic: Callable[[Floats], Floats],
    draws: Draws | None = None,
) -> Floats:
    """statistic(counts) for n_resamples bootstrap resamples of n items, stacked.

    counts (rows, n) says how often each item is drawn in each resample (float64, so a mean
    is one matrix product for any number of columns). The draws are count_blocks(n,
    n_resamples, seed), the same for every caller; draws keeps them for the next call.
    """
    blocks = (
        count_blocks(n, n_resamples, seed) if draws is None else draws.counts(n, n_resamples, seed)
    )
    return np.concatenate([statistic(b.astype(np.float64)) for b in blocks], axis=0)


def percentile_interval(samples: Floats, level: float) -> tuple[Floats, Floats]:
    """Percentile interval of each column (NaN samples, e.g. an empty weight, left out)."""
    tail = 100.0 * (1.0 - level) / 2.0
    with np.errstate(all="ignore"), _quiet_nan():
        lo, hi = np.nanpercentile(samples, [tail, 100.0 - tail], axis=0)
    return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)


@contextlib.contextmanager
def _quiet_nan() -> Iterator[None]:
    """Silence numpy's all-NaN warnings: an all-NaN column is an undefined interval, not news."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def bootstrap_ci(
    baseline: Floats,
    candidate: Floats,
    weights_baseline: Floats | None = None,
    weights_candidate: Floats | None = None,
    *,
    n_resamples: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval of (weighted) mean(candidate) - mean(baseline) over pairs.

    Queries are resampled with replacement as pairs; each resample's difference is recomputed
    (a ratio of sums when weighted). NaN when there are fewer than 2 pairs.
    """
    b = np.asarray(baseline, dtype=np.float64)[:, None]
    c = np.asarray(candidate, dtype=np.float64)[:, None]
    wb = None if weights_baseline is None else np.asarray(weights_baseline, dtype=np.float64)
    wc = None if weights_candidate is None else np.asarray(weights_candidate, dtype=np.float64)
    lo, hi = bootstrap_cis(
        b,
        c,
        None if wb is None and wc is None else np.ones_like(b) if wb is None else wb[:, None],
        None if wb is None and wc is None else np.ones_like(c) if wc is None else wc[:, None],
        n_resamples=n_resamples,
        seed=seed,
        level=level,
    )
    return float(lo[0]), float(hi[0])


def bootstrap_cis(
    baseline: Floats,
    candidate: Floats,
    weights_baseline: Floats | None = None,
    weights_candidate: Floats | None = None,
    *,
    n_resamples: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
    draws: Draws | None = None,
) -> tuple[Floats, Floats]:
    """bootstrap_ci of every column of (n, m) arrays, all on the same resamples.

    Each resample's means are one matrix product of its counts with the columns, so m
    intervals cost one draw and one product per block. Weights: both given or neither.
    A column's interval does not depend on the others beside it: the product is always a
    matrix one (BLAS's matrix-vector product of a lone column sums in another order).
    """
    b = np.asarray(baseline, dtype=np.float64)
    c = np.asarray(candidate, dtype=np.float64)
    n, m = b.shape
    if n < 2:
        return np.full(m, np.nan), np.full(m, np.nan)
    if n_resamples < 1:
        raise UsageError(f"the number of bootstrap resamples must be >= 1, got {n_resamples}")
    if weights_baseline is None or weights_candidate is None:
        d = np.concatenate([c - b, np.zeros((n, 1))], axis=1) if m == 1 else c - b

        def diff(counts: Floats) -> Floats:
            return (counts @ d / n)[:, :m]  # type: ignore[no-any-return]
    else:
        wb, wc = weights_baseline, weights_candidate
        stacked = np.concatenate([wc * c, wc, wb * b, wb], axis=1)

        def diff(counts: Floats) -> Floats:
            s = counts @ stacked
            with np.errstate(invalid="ignore", divide="ignore"):
                return s[:, :m] / s[:, m : 2 * m] - s[:, 2 * m : 3 * m] / s[:, 3 * m :]  # type: ignore[no-any-return]

    return percentile_interval(resampled(n, n_resamples, seed, diff, draws), level)


def holm(p_values: Sequence[float] | Floats) -> Floats:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1); NaN stays NaN."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = valid.size
    if m == 0:
        return out
    order = valid[np.argsort(p[valid], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out


@dataclass(frozen=True, slots=True)
class StatOptions:
    """How the tests are run: permutations, bootstrap resamples, seed, alpha (CI = 1 - alpha)."""

    n_permutations: int = DEFAULT_PERMUTATIONS
    n_bootstrap: int = DEFAULT_BOOTSTRAP
    seed: int = DEFAULT_SEED
    alpha: float = DEFAULT_ALPHA

    def check(self) -> None:
        if self.n_permutations < 1:
            raise UsageError(f"--permutations must be >= 1, got {self.n_permutations}")
        if self.n_bootstrap < 1:
            raise UsageError(f"--bootstrap must be >= 1, got {self.n_bootstrap}")
        if not 0.0 < self.alpha < 1.0:
            raise UsageError(f"--alpha must be between 0 and 1 (exclusive), got {self.alpha}")

    @property
    def level(self) -> float:
        return 1.0 - self.alpha


def p_text(p: float) -> str:
    """A p-value as printed: 4 decimals, or 2 significant digits below 0.001; "-" for NaN."""
    if math.isnan(p):
        return "-"
    return f"{p:.1e}" if p < 0.001 else f"{p:.4f}"
