"""Compare two to five runs on their shared queries, and gate a deploy on the comparison.

The first run is the baseline; every other run is a candidate compared with it, query by query.
For each metric: the runs' means, the paired difference with a bootstrap confidence interval,
p-values of a paired t-test and a paired randomisation (sign-flip) test, Holm-corrected across
all (candidate, metric) tests, Cohen's d_z, and wins/ties/losses. Latency and cost changes per
stage, the same metric comparison inside every value of a tag, and trends over runs' created_at.

numpy only: the t distribution's CDF is the regularised incomplete beta, written out here
(Numerical Recipes' continued fraction) and tested against scipy in tests/core/test_compare.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from rageval_core import ops
from rageval_core.errors import RagevalError, UsageError
from rageval_core.evaluate import (
    Report,
    Settings,
    answer_inputs,
    coverage,
    default_metrics,
    evaluate,
    evidence_labels,
    id_labels,
    open_file_in_scratch_store,
    ops_summary,
    query_costs,
    resolve_relevance,
)
from rageval_core.metrics import registry
from rageval_core.terminal import text_table
from rageval_core.rundata import RunData, load_run_data
from rageval_core.store import Store

Floats = NDArray[np.float64]
Source = RunData | str | Path

DEFAULT_PERMUTATIONS = 10_000
DEFAULT_BOOTSTRAP = 2_000
DEFAULT_SEED = 0
DEFAULT_ALPHA = 0.05
DEFAULT_WORST = 10
MIN_RUNS, MAX_RUNS = 2, 5
#: query ids listed per run in the alignment (the count is always exact)
MAX_IDS_SHOWN = 20
#: measures where a smaller value is better (every other measure: larger is better)
def higher_is_better(metric: str) -> bool:
    """The registry's direction of a metric (BestRank and HallucinationRate: lower is better)."""
    return registry.parse(metric).spec.higher_is_better
#: latency statistics a comparison reports and a gate rule may name
LATENCY_STATS = ("mean", "p50", "p90", "p95", "p99")
#: cells of one resampling block (rows x queries): bounds memory whatever the run size
_BLOCK_CELLS = 2_000_000
#: |per-query difference| at or below this is a tie
_TIE = 1e-12
_NOTE_SMALL = "n < 2"


# --- statistics ------------------------------------------------------------------------------

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
        return TTest(0.0, n - 1, 1.0) if mean == 0.0 else TTest(math.copysign(math.inf, mean), n - 1, 0.0)
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
    n = int(d.size)
    if n < 2 or not np.isfinite(d).all():
        return math.nan
    observed = abs(float(d.sum()))
    # sums of the same values in another order differ by rounding: ties must stay ties
    tol = 1e-10 * float(np.abs(d).sum())
    if exact is None:
        exact = n <= 30 and 2**n <= n_permutations
    if exact:
        if n > 24:
            raise ValueError(f"exact enumeration of 2^{n} sign flips is too large")
        hits = 0
        total = 2**n
        start = 0
        for size in _row_blocks(total, n):
            codes = np.arange(start, start + size, dtype=np.int64)
            signs = 1.0 - 2.0 * ((codes[:, None] >> np.arange(n)) & 1)
            hits += int(np.count_nonzero(np.abs(signs @ d) >= observed - tol))
            start += size
        return hits / total
    if n_permutations < 1:
        raise UsageError(f"the number of permutations must be >= 1, got {n_permutations}")
    # One random byte flips 8 queries at once: a table per byte position holds the sum of d
    # over every subset of its 8 queries, so a permutation costs n/8 lookups, not n products.
    # Flipping the subset F turns sum(d) into sum(d) - 2 sum_F(d).
    n_bytes = -(-n // 8)
    padded = np.zeros(n_bytes * 8)
    padded[:n] = d
    bit_of = (np.arange(256)[:, None] >> np.arange(8)) & 1  # (256, 8): bit k of each byte value
    table = (padded.reshape(n_bytes, 8) @ bit_of.T.astype(np.float64)).ravel()  # (n_bytes*256,)
    offsets = np.arange(n_bytes, dtype=np.intp) * 256
    total = float(d.sum())
    rng = np.random.default_rng(seed)
    hits = 0
    for size in _row_blocks(n_permutations, n_bytes):
        flips = rng.integers(0, 256, size=(size, n_bytes), dtype=np.uint8)
        flipped = table[flips + offsets].sum(axis=1)
        hits += int(np.count_nonzero(np.abs(total - 2.0 * flipped) >= observed - tol))
    return (hits + 1) / (n_permutations + 1)


def _resampled(
    n: int, n_resamples: int, seed: int, statistic: Callable[[NDArray[np.intp]], Floats]
) -> Floats:
    """statistic(idx) for n_resamples bootstrap index rows (drawn in blocks), stacked."""
    rng = np.random.default_rng(seed)
    parts = [statistic(rng.integers(0, n, size=(size, n))) for size in _row_blocks(n_resamples, n)]
    return np.concatenate(parts, axis=0)


def _interval(samples: Floats, level: float) -> tuple[Floats, Floats]:
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


def _weighted_means(values: Floats, weights: Floats, idx: NDArray[np.intp]) -> Floats:
    with np.errstate(invalid="ignore", divide="ignore"):
        return (values * weights)[idx].sum(axis=1) / weights[idx].sum(axis=1)  # type: ignore[no-any-return]


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
    b = np.asarray(baseline, dtype=np.float64)
    c = np.asarray(candidate, dtype=np.float64)
    n = int(b.size)
    if n < 2:
        return math.nan, math.nan
    if n_resamples < 1:
        raise UsageError(f"the number of bootstrap resamples must be >= 1, got {n_resamples}")
    wb = np.ones(n) if weights_baseline is None else np.asarray(weights_baseline, dtype=np.float64)
    wc = np.ones(n) if weights_candidate is None else np.asarray(weights_candidate, dtype=np.float64)

    def diff(idx: NDArray[np.intp]) -> Floats:
        if weights_baseline is None and weights_candidate is None:
            return (c - b)[idx].mean(axis=1)[:, None]  # type: ignore[no-any-return]
        return (_weighted_means(c, wc, idx) - _weighted_means(b, wb, idx))[:, None]

    lo, hi = _interval(_resampled(n, n_resamples, seed, diff), level)
    return float(lo[0]), float(hi[0])


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


# --- alignment -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Alignment:
    """The queries every run holds (baseline order) and, per run, the ones it alone holds."""

    runs: tuple[str, ...]
    shared_ids: NDArray[np.object_]
    rows: tuple[NDArray[np.intp], ...]  # per run: its row of each shared query
    n_queries: dict[str, int]
    n_only_in: dict[str, int]
    only_in: dict[str, list[str]]  # up to MAX_IDS_SHOWN ids each

    @property
    def n_shared(self) -> int:
        return int(self.shared_ids.size)

    def to_json(self) -> dict[str, Any]:
        return {
            "n_shared": self.n_shared,
            "n_queries": dict(self.n_queries),
            "not_shared": {
                run: {"n": self.n_only_in[run], "query_ids": self.only_in[run]} for run in self.runs
            },
        }


def align(labels: Sequence[str], query_ids: Sequence[NDArray[np.object_]]) -> Alignment:
    """Align runs by query_id on the queries all of them hold; UsageError when none is shared."""
    ids = [np.asarray(q).astype(str) for q in query_ids]
    shared = ids[0]
    for other in ids[1:]:
        shared = shared[np.isin(shared, other)]
    rows: list[NDArray[np.intp]] = []
    for run_ids in ids:
        order = np.argsort(run_ids, kind="stable")
        rows.append(order[np.searchsorted(run_ids, shared, sorter=order)].astype(np.intp))
    n_only: dict[str, int] = {}
    only: dict[str, list[str]] = {}
    for label, run_ids in zip(labels, ids, strict=True):
        alone = run_ids[~np.isin(run_ids, shared)]
        n_only[label] = int(alone.size)
        only[label] = alone[:MAX_IDS_SHOWN].tolist()
    if shared.size == 0:
        parts = [
            f"{label} ({run_ids.size} queries"
            + (f", e.g. {', '.join(run_ids[:3].tolist())})" if run_ids.size else ")")
            for label, run_ids in zip(labels, ids, strict=True)
        ]
        raise UsageError("the runs share no query_id, nothing to compare: " + "; ".join(parts))
    return Alignment(
        runs=tuple(labels),
        shared_ids=shared.astype(object),
        rows=tuple(rows),
        n_queries={label: int(q.size) for label, q in zip(labels, ids, strict=True)},
        n_only_in=n_only,
        only_in=only,
    )


# --- one paired comparison -------------------------------------------------------------------


@dataclass(frozen=True)
class PairedTest:
    """One metric, one candidate against the baseline, on the queries both score."""

    metric: str
    candidate: str
    n: int  # pairs: shared queries scored (non-NaN) in both runs
    baseline_mean: float  # over the pairs (weighted for a pooled metric)
    candidate_mean: float
    diff: float  # candidate_mean - baseline_mean
    ci_low: float
    ci_high: float
    t: float
    df: int
    p_t: float
    p_perm: float
    effect_size: float  # Cohen's d_z of the per-query contributions
    wins: int  # queries where the candidate is better (in the metric's direction)
    ties: int
    losses: int
    higher_is_better: bool
    p_t_holm: float = math.nan
    p_perm_holm: float = math.nan
    note: str = ""

    @property
    def improvement(self) -> float:
        """diff in the metric's good direction: > 0 means the candidate is better."""
        return self.diff if self.higher_is_better else -self.diff

    def significant(self, alpha: float) -> bool:
        return bool(self.p_perm_holm < alpha)

    def to_json(self, alpha: float) -> dict[str, Any]:
        return ops.to_json_value({  # type: ignore[no-any-return]
            "n": self.n, "baseline_mean": self.baseline_mean, "candidate_mean": self.candidate_mean,
            "diff": self.diff, "ci": [self.ci_low, self.ci_high], "t": self.t, "df": self.df,
            "p_t": self.p_t, "p_perm": self.p_perm, "p_t_holm": self.p_t_holm,
            "p_perm_holm": self.p_perm_holm, "significant": self.significant(alpha),
            "effect_size": self.effect_size, "wins": self.wins, "ties": self.ties,
            "losses": self.losses, "note": self.note,
        })


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


def paired_test(
    metric: str,
    candidate: str,
    base: Floats,
    cand: Floats,
    w_base: Floats | None,
    w_cand: Floats | None,
    options: StatOptions,
) -> PairedTest:
    """Compare one metric's aligned per-query values (NaN = not scored: that pair is left out)."""
    higher = higher_is_better(metric)
    paired = ~np.isnan(base) & ~np.isnan(cand)
    b, c = base[paired], cand[paired]
    wb = np.ones(b.size) if w_base is None else w_base[paired]
    wc = np.ones(c.size) if w_cand is None else w_cand[paired]
    n = int(b.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_b = float(np.dot(b, wb) / wb.sum()) if n else math.nan
        mean_c = float(np.dot(c, wc) / wc.sum()) if n else math.nan
    weighted = w_base is not None or w_cand is not None
    if weighted and n:
        # Per-query contributions whose plain mean is the weighted difference of means, so the
        # tests of a pooled metric test the pooled difference.
        with np.errstate(invalid="ignore", divide="ignore"):
            d = n * (wc * c / wc.sum() - wb * b / wb.sum())
    else:
        d = c - b
    raw = (c - b) * (1.0 if higher else -1.0)
    tt = paired_t_test(d)
    lo, hi = bootstrap_ci(
        b, c, wb if weighted else None, wc if weighted else None,
        n_resamples=options.n_bootstrap, seed=options.seed, level=options.level,
    )
    return PairedTest(
        metric=metric,
        candidate=candidate,
        n=n,
        baseline_mean=mean_b,
        candidate_mean=mean_c,
        diff=mean_c - mean_b,
        ci_low=lo,
        ci_high=hi,
        t=tt.t,
        df=tt.df,
        p_t=tt.p,
        p_perm=permutation_test(d, options.n_permutations, options.seed),
        effect_size=effect_size(d),
        wins=int(np.count_nonzero(raw > _TIE)),
        ties=int(np.count_nonzero(np.abs(raw) <= _TIE)),
        losses=int(np.count_nonzero(raw < -_TIE)),
        higher_is_better=higher,
        note=_NOTE_SMALL if n < 2 else "",
    )


def _with_holm(tests: list[PairedTest]) -> list[PairedTest]:
    """The tests with Holm-adjusted p-values over this family of tests."""
    p_t = holm([t.p_t for t in tests])
    p_perm = holm([t.p_perm for t in tests])
    return [
        dataclasses.replace(t, p_t_holm=float(a), p_perm_holm=float(b))
        for t, a, b in zip(tests, p_t, p_perm, strict=True)
    ]


# --- latency and cost ------------------------------------------------------------------------


@dataclass(frozen=True)
class OpsChange:
    """One statistic (latency of a stage, or cost) of baseline and candidate over paired queries."""

    target: str  # "latency.total.p95", "cost.per_query", "cost.total"
    candidate: str
    n: int
    baseline: float
    candidate_value: float
    ci_low: float  # bootstrap interval of the change, over resampled paired queries
    ci_high: float

    @property
    def change(self) -> float:
        return self.candidate_value - self.baseline

    @property
    def change_pct(self) -> float:
        return 100.0 * self.change / self.baseline if self.baseline else math.nan

    def to_json(self) -> dict[str, Any]:
        return ops.to_json_value({  # type: ignore[no-any-return]
            "n": self.n, "baseline": self.baseline, "candidate": self.candidate_value,
            "change": self.change, "change_pct": self.change_pct, "ci": [self.ci_low, self.ci_high],
        })


def _latency_stats(x: Floats) -> Floats:
    """(rows, n) -> (rows, 5): mean, p50, p90, p95, p99 of each row (numpy's linear percentile)."""
    pct = np.percentile(x, [50, 90, 95, 99], axis=1).T
    return np.concatenate([x.mean(axis=1)[:, None], pct], axis=1)


def _ops_changes(
    target: str,
    names: Sequence[str],
    candidate: str,
    base: Floats,
    cand: Floats,
    statistic: Callable[[Floats], Floats],
    options: StatOptions,
) -> list[OpsChange]:
    paired = np.isfinite(base) & np.isfinite(cand)
    b, c = base[paired], cand[paired]
    n = int(b.size)
    if n == 0:
        return []
    values_b = statistic(b[None, :])[0]
    values_c = statistic(c[None, :])[0]
    if n >= 2:
        samples = _resampled(n, options.n_bootstrap, options.seed,
                             lambda idx: statistic(c[idx]) - statistic(b[idx]))
        lo, hi = _interval(samples, options.level)
    else:
        lo = hi = np.full(len(names), np.nan)
    return [
        OpsChange(f"{target}.{name}", candidate, n, float(values_b[i]), float(values_c[i]),
                  float(lo[i]), float(hi[i]))
        for i, name in enumerate(names)
    ]


def _stage_columns(data: RunData) -> dict[str, Floats]:
    """stage -> (n,) latency in ms per query, NaN where the stage is not recorded."""
    stages = ops._key_order(set(data.latency_stage.astype(str).tolist()), ops.STAGE_ORDER)
    out: dict[str, Floats] = {}
    for stage in stages:
        col = np.full(data.n_queries, np.nan)
        sel = data.latency_stage == stage
        col[data.latency_q[sel]] = data.latency_ms[sel]
        out[stage] = col
    return out


# --- the comparison --------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """Everything compare() found; to_json() gives the documented object."""

    baseline: str
    candidates: tuple[str, ...]
    runs: list[dict[str, Any]]  # name, created_at, n_queries of each run, in the given order
    settings: dict[str, Any]
    relevance: str | None
    options: StatOptions
    alignment: Alignment
    metrics: list[str]
    means: dict[str, dict[str, float]]  # run -> metric -> value over the shared queries
    n_scored: dict[str, dict[str, int]]  # run -> metric -> shared queries it scores
    tests: list[PairedTest]  # one per (candidate, metric), candidate-major; Holm across all
    worst: dict[str, dict[str, list[dict[str, Any]]]]  # candidate -> metric -> regressions
    latency: list[OpsChange]
    cost: list[OpsChange]
    cost_note: str
    stages: dict[str, list[str]]  # run -> latency stages it records (any query)
    by: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    @property
    def n_shared(self) -> int:
        return self.alignment.n_shared

    def test(self, candidate: str, metric: str) -> PairedTest:
        for t in self.tests:
            if t.candidate == candidate and t.metric == metric:
                return t
        raise KeyError((candidate, metric))

    def ops_change(self, candidate: str, target: str) -> OpsChange | None:
        return next((c for c in (*self.latency, *self.cost)
                     if c.candidate == candidate and c.target == target), None)

    def to_json(self) -> dict[str, Any]:
        alpha = self.options.alpha
        metrics = []
        for name in self.metrics:
            metrics.append({
                "metric": name,
                "higher_is_better": higher_is_better(name),
                "means": {run: self.means[run].get(name) for run in self.means},
                "n_scored": {run: self.n_scored[run].get(name) for run in self.n_scored},
                "vs_baseline": {
                    t.candidate: t.to_json(alpha) for t in self.tests if t.metric == name
                },
            })
        latency: dict[str, dict[str, dict[str, Any]]] = {}
        for c in self.latency:
            _, stage, stat = c.target.split(".")
            latency.setdefault(c.candidate, {}).setdefault(stage, {"n": c.n})[stat] = c.to_json()
        cost: dict[str, dict[str, Any]] = {}
        for c in self.cost:
            cost.setdefault(c.candidate, {})[c.target.split(".")[1]] = c.to_json()
        out = {
            "baseline": self.baseline,
            "candidates": list(self.candidates),
            "runs": self.runs,
            "settings": self.settings,
            "statistics": {
                "n_permutations": self.options.n_permutations,
                "n_bootstrap": self.options.n_bootstrap, "seed": self.options.seed,
                "alpha": alpha, "ci_level": self.options.level, "holm_tests": len(self.tests),
            },
            "alignment": self.alignment.to_json(),
            "metrics": metrics,
            "worst": self.worst,
            "latency_ms": latency,
            "cost_usd": cost,
            "cost_note": self.cost_note or None,
            "latency_stages": self.stages,
        }
        if self.by:
            out["by"] = {
                tag: {
                    group: {
                        "n": seg["n"],
                        "metrics": {
                            name: {t.candidate: t.to_json(alpha)
                                   for t in seg["tests"] if t.metric == name}
                            for name in self.metrics
                        },
                    }
                    for group, seg in groups.items()
                }
                for tag, groups in self.by.items()
            }
        return ops.to_json_value(out)  # type: ignore[no-any-return]


@contextlib.contextmanager
def open_runs(
    sources: Sequence[Source], store: Store | None = None
) -> Iterator[list[tuple[Store, RunData]]]:
    """Each source as (its store, its RunData): a RunData or a name/id in store, or a run file.

    A file is read into its own in-memory store; a name with no store given opens the default
    store. Every store opened here is closed on exit.
    """
    with contextlib.ExitStack() as stack:
        out: list[tuple[Store, RunData]] = []
        named = store
        for source in sources:
            if isinstance(source, RunData):
                if store is None:
                    raise UsageError("comparing a RunData needs the store it came from")
                out.append((store, source))
                continue
            path = Path(source)
            if path.is_file():
                scratch = stack.enter_context(open_file_in_scratch_store([path]))
                out.append((scratch, load_run_data(scratch, scratch.runs()[0].run_id)))
                continue
            if named is None:
                named = stack.enter_context(Store())
            try:
                out.append((named, load_run_data(named, str(source))))
            except UsageError as e:
                if path.suffix or len(path.parts) > 1:
                    raise UsageError(f"{source}: no such file, and {e}") from e
                raise
        yield out


def compare(
    runs: Sequence[Source],
    metrics: Sequence[str] | None = None,
    *,
    store: Store | None = None,
    settings: Settings | None = None,
    by: Sequence[str] = (),
    options: StatOptions | None = None,
    n_worst: int = DEFAULT_WORST,
    **overrides: Any,
) -> Comparison:
    """Compare runs[1:] with the baseline runs[0] (2 to 5 runs: RunData, names or files).

    metrics None: the default metrics every run supports (as evaluate() chooses them); an
    empty list: none (latency and cost only).
    settings fields may also be given as keywords: compare(runs, k=5).
    """
    s = dataclasses.replace(settings or Settings(), **overrides)
    s.check()
    opts = options or StatOptions()
    opts.check()
    if not MIN_RUNS <= len(runs) <= MAX_RUNS:
        raise UsageError(f"compare takes {MIN_RUNS} to {MAX_RUNS} runs (a baseline and its "
                         f"candidates), got {len(runs)}")
    if n_worst < 0:
        raise UsageError(f"the number of worst queries must be >= 0, got {n_worst}")
    with open_runs(runs, store) as loaded:
        return _compare(loaded, metrics, s, list(by), opts, n_worst)


def _labels(names: Sequence[str]) -> list[str]:
    """Run names, made unique with #2, #3 ... (the same run may be compared with itself)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


def _choose_metrics(loaded: Sequence[tuple[Store, RunData]], metrics: Sequence[str] | None,
                    s: Settings) -> list[str]:
    if metrics is not None:  # an empty list compares no metric (latency and cost only)
        return [str(m) for m in registry.parse_all(metrics)]
    per_run = [default_metrics(d, s.k, resolve_relevance(d, s)) for _, d in loaded]
    return [m for m in per_run[0] if all(m in other for other in per_run[1:])]


def _weights(store: Store, data: RunData, s: Settings, relevance: str | None,
             name: str) -> Floats | None:
    """Per-query weights of a pooled metric (EvidenceRecall: span counts), NaN where unscored."""
    measure = registry.parse(name)
    family = measure.spec.family
    if measure.spec.weight is None:
        return None
    inp: Any
    if family == "evidence":
        inp = coverage(store, data, s)
        rows = inp.rows
    elif family == "ranking":
        inp, rows = id_labels(data, s) if relevance == "ids" else evidence_labels(store, data, s)
    elif family == "generation":
        inp, rows = answer_inputs(store, data)
    else:
        return None
    w = registry.weights_of(measure, inp)
    full = np.full(data.n_queries, np.nan)
    if w is not None:
        full[rows] = w
    return full


def _compare(
    loaded: list[tuple[Store, RunData]],
    metrics: Sequence[str] | None,
    s: Settings,
    by: list[str],
    opts: StatOptions,
    n_worst: int,
) -> Comparison:
    labels = _labels([d.run.name for _, d in loaded])
    alignment = align(labels, [d.query_ids for _, d in loaded])
    names = _choose_metrics(loaded, metrics, s)
    reports: list[Report | None] = [
        evaluate(d, names, store=st, settings=s) if names else None for st, d in loaded
    ]
    relevance = reports[0].relevance if reports[0] is not None else None
    uses_ranking = any(registry.parse(m).spec.family == "ranking" for m in names)
    modes = {label: r.relevance for label, r in zip(labels, reports, strict=True) if r is not None}
    if uses_ranking and len(set(modes.values())) > 1:
        shown = ", ".join(f"{k}: {v}" for k, v in modes.items())
        raise UsageError(f"the runs judge relevance differently ({shown}); pass --relevance "
                         "evidence (or ids) so ranking metrics mean the same thing in every run")
    # every per-query column restricted to the shared queries, in the baseline's order
    cols: list[dict[str, Floats]] = []
    weights: list[dict[str, Floats | None]] = []
    for (st, d), report, rows in zip(loaded, reports, alignment.rows, strict=True):
        cols.append({m: report.per_query[m][rows] for m in names} if report else {})
        run_w = {m: _weights(st, d, s, report.relevance if report else None, m) for m in names}
        weights.append({m: None if w is None else w[rows] for m, w in run_w.items()})
    means = {
        label: {m: registry.aggregate(m, cols[i][m], weights[i][m]) for m in names}
        for i, label in enumerate(labels)
    }
    n_scored = {
        label: {m: int(np.count_nonzero(~np.isnan(cols[i][m]))) for m in names}
        for i, label in enumerate(labels)
    }

    def family_tests(mask: NDArray[np.bool_] | None) -> list[PairedTest]:
        tests = []
        for i in range(1, len(labels)):
            for m in names:
                def cut(x: Floats | None) -> Floats | None:
                    return x if x is None or mask is None else x[mask]

                tests.append(paired_test(
                    m, labels[i], cut(cols[0][m]), cut(cols[i][m]),  # type: ignore[arg-type]
                    cut(weights[0][m]), cut(weights[i][m]), opts))
        return _with_holm(tests)

    tests = family_tests(None)
    worst = {
        labels[i]: {m: _worst(alignment.shared_ids, cols[0][m], cols[i][m], m, n_worst) for m in names}
        for i in range(1, len(labels))
    }
    latency, cost, cost_note = _ops(loaded, labels, alignment, opts)
    segments: dict[str, dict[str, dict[str, Any]]] = {}
    base = loaded[0][1]
    for tag in by:
        if tag not in base.tags:
            known = ", ".join(sorted(base.tags)) or "none"
            raise UsageError(f"run {labels[0]} has no tag {tag!r} (tags: {known})")
        values = ops._labels(base.tags[tag][alignment.rows[0]])
        segments[tag] = {}
        for group in ops._group_order(set(values.tolist())):
            mask = values == group
            segments[tag][group] = {"n": int(mask.sum()), "tests": family_tests(mask)}
    return Comparison(
        baseline=labels[0],
        candidates=tuple(labels[1:]),
        runs=[{"name": label, "created_at": d.run.created_at, "n_queries": d.n_queries}
              for label, (_, d) in zip(labels, loaded, strict=True)],
        settings=s.to_json(relevance),
        relevance=relevance,
        options=opts,
        alignment=alignment,
        metrics=names,
        means=means,
        n_scored=n_scored,
        tests=tests,
        worst=worst,
        latency=latency,
        cost=cost,
        cost_note=cost_note,
        stages={label: list(_stage_columns(d)) for label, (_, d) in zip(labels, loaded, strict=True)},
        by=segments,
    )


def _worst(ids: NDArray[np.object_], base: Floats, cand: Floats, metric: str,
           n: int) -> list[dict[str, Any]]:
    """The queries that regressed most (in the metric's direction), worst first."""
    sign = 1.0 if higher_is_better(metric) else -1.0
    with np.errstate(invalid="ignore"):
        gain = (cand - base) * sign
    rows = np.flatnonzero(gain < -_TIE)
    rows = rows[np.argsort(gain[rows], kind="stable")][:n]
    return [
        {"query_id": str(ids[r]), "baseline": float(base[r]), "candidate": float(cand[r]),
         "diff": float(cand[r] - base[r])}
        for r in rows.tolist()
    ]


def _cost_stats(x: Floats) -> Floats:
    return np.stack([x.mean(axis=1), x.sum(axis=1)], axis=1)


def _ops(
    loaded: list[tuple[Store, RunData]], labels: list[str], alignment: Alignment, opts: StatOptions
) -> tuple[list[OpsChange], list[OpsChange], str]:
    """Latency changes per stage and statistic, and cost per query / total, per candidate."""
    stages = [_stage_columns(d) for _, d in loaded]
    latency: list[OpsChange] = []
    cost: list[OpsChange] = []
    costs = [query_costs(d) for _, d in loaded]
    missing = [f"{label} has no price for {', '.join(c.price_missing)} tokens"
               for label, c in zip(labels, costs, strict=True) if c.price_missing]
    no_tokens = [label for label, c in zip(labels, costs, strict=True) if not c.has_tokens.any()]
    note = "; ".join(missing + ([f"no token counts in {', '.join(no_tokens)}"] if no_tokens else []))
    base_rows = alignment.rows[0]
    for i in range(1, len(labels)):
        rows = alignment.rows[i]
        for stage, col in stages[0].items():
            if stage in stages[i]:
                latency += _ops_changes(f"latency.{stage}", LATENCY_STATS, labels[i], col[base_rows],
                                        stages[i][stage][rows], _latency_stats, opts)
        if not note:
            cost += _ops_changes("cost", ("per_query", "total"), labels[i],
                                 costs[0].cost_usd[base_rows], costs[i].cost_usd[rows],
                                 _cost_stats, opts)
    return latency, cost, note


# --- the gate --------------------------------------------------------------------------------

RuleKind = Literal["drop", "increase"]
_OPS_TARGET = re.compile(r"^latency\.(?P<stage>[^.=]+)\.(?P<stat>[A-Za-z0-9]+)$|^cost\.(?P<cost>per_query|total)$")


@dataclass(frozen=True, slots=True)
class Rule:
    """One gate rule: how far target may worsen, absolutely or relative to the baseline."""

    text: str  # as given, e.g. "nDCG@10=0.01"
    kind: RuleKind  # drop: a metric may worsen by at most limit; increase: latency/cost may grow
    target: str  # canonical metric name, "latency.<stage>.<stat>", "cost.per_query", "cost.total"
    limit: float
    relative: bool  # limit is a fraction of the baseline's value (given as "5%")

    @property
    def is_metric(self) -> bool:
        return self.kind == "drop"

    def describe(self) -> str:
        verb = "max drop" if self.kind == "drop" else "max increase"
        return f"{self.target} {verb} {_limit_text(self)}"


def _limit_text(rule: Rule) -> str:
    if rule.relative:
        return f"{100 * rule.limit:g}%"
    unit = " ms" if rule.target.startswith("latency.") else (" USD" if rule.target.startswith("cost.") else "")
    return f"{rule.limit:g}{unit}"


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside parentheses (a measure may read "P(rel=2)@5")."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def parse_rules(text: str, kind: RuleKind) -> list[Rule]:
    """Rules from "nDCG@10=0.01,R@10=2%" (drop) or "latency.total.p95=10%,cost.per_query=5%"."""
    flag = "--max-drop" if kind == "drop" else "--max-increase"
    rules = []
    items = _split_top_level(text)
    if not items:
        raise UsageError(f"{flag}: no rule given (expected TARGET=LIMIT, comma-separated)")
    for item in items:
        target, sep, raw = item.rpartition("=")
        target, raw = target.strip(), raw.strip()
        if not sep or not target or not raw:
            example = "nDCG@10=0.01 or nDCG@10=2%" if kind == "drop" else "latency.total.p95=10%"
            raise UsageError(f"{flag} rule {item!r}: expected TARGET=LIMIT, e.g. {example}")
        relative = raw.endswith("%")
        number = raw[:-1] if relative else raw
        if kind == "increase" and not relative and number.endswith("ms"):
            number = number[:-2]
        try:
            limit = float(number)
        except ValueError:
            raise UsageError(f"{flag} rule {item!r}: the limit {raw!r} is not a number "
                             "(an absolute value, or a percentage like 5%)") from None
        if not math.isfinite(limit) or limit < 0:
            raise UsageError(f"{flag} rule {item!r}: the limit must be a finite number >= 0")
        rules.append(Rule(item, kind, _rule_target(item, target, kind, flag),
                          limit / 100.0 if relative else limit, relative))
    return rules


def _rule_target(item: str, target: str, kind: RuleKind, flag: str) -> str:
    ops_target = _OPS_TARGET.match(target)
    looks_ops = target.startswith(("latency.", "cost."))
    if kind == "drop":
        if looks_ops:
            raise UsageError(f"{flag} rule {item!r}: latency and cost limits go in --max-increase")
        try:
            return str(registry.parse(target))
        except UsageError as e:
            raise UsageError(f"{flag} rule {item!r}: {e}") from e
    if ops_target is None:
        hint = ("metric limits go in --max-drop; " if not looks_ops else "")
        raise UsageError(
            f"{flag} rule {item!r}: {hint}expected latency.<stage>.<{'|'.join(LATENCY_STATS)}>, "
            "cost.per_query or cost.total")
    if ops_target["stat"] is not None and ops_target["stat"] not in LATENCY_STATS:
        raise UsageError(f"{flag} rule {item!r}: unknown latency statistic "
                         f"{ops_target['stat']!r} (one of {', '.join(LATENCY_STATS)})")
    return target


@dataclass(frozen=True)
class RuleResult:
    """A rule checked against a comparison."""

    rule: Rule
    baseline: float
    candidate: float
    worsening: float  # how much worse the candidate is (> 0: worse), in the rule's unit
    allowed: float  # the limit in absolute terms
    violated: bool  # worsening > allowed
    significant: bool  # drop: Holm permutation p < alpha; increase: CI of the change above 0
    evidence: str  # the p-value or interval behind `significant`
    passed: bool

    @property
    def change(self) -> float:
        return self.candidate - self.baseline

    @property
    def change_pct(self) -> float:
        return 100.0 * self.change / self.baseline if self.baseline else math.nan

    def describe(self) -> str:
        r = self.rule
        unit = " ms" if r.target.startswith("latency.") else ""
        digits = 6 if r.target.startswith("cost.") else (1 if unit else 4)
        pct = "" if math.isnan(self.change_pct) else f" ({self.change_pct:+.1f}%)"
        text = (f"{'PASS' if self.passed else 'FAIL'}  {r.describe()}: baseline "
                f"{self.baseline:.{digits}f}{unit}, candidate {self.candidate:.{digits}f}{unit}, "
                f"change {self.change:+.{digits}f}{unit}{pct}, allowed "
                f"{'drop' if r.kind == 'drop' else 'increase'} {self.allowed:.{digits}f}{unit}")
        if self.violated and not self.passed:
            return text + f"; {self.evidence}"
        if self.violated:
            return text + f"; over the limit but not significant ({self.evidence})"
        return text

    def to_json(self) -> dict[str, Any]:
        r = self.rule
        return ops.to_json_value({  # type: ignore[no-any-return]
            "rule": r.text, "kind": r.kind, "target": r.target, "limit": r.limit,
            "relative": r.relative, "baseline": self.baseline, "candidate": self.candidate,
            "change": self.change, "change_pct": self.change_pct, "worsening": self.worsening,
            "allowed": self.allowed, "violated": self.violated, "significant": self.significant,
            "evidence": self.evidence, "passed": self.passed,
        })


@dataclass(frozen=True)
class GateResult:
    """Every rule's result; passed when none failed."""

    baseline: str
    candidate: str
    n_shared: int
    significant_only: bool
    alpha: float
    results: list[RuleResult]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def failed(self) -> list[RuleResult]:
        return [r for r in self.results if not r.passed]

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed, "baseline": self.baseline, "candidate": self.candidate,
            "n_shared": self.n_shared, "significant_only": self.significant_only,
            "alpha": self.alpha, "rules": [r.to_json() for r in self.results],
            "failed": [r.rule.text for r in self.failed],
        }


def gate(comparison: Comparison, rules: Sequence[Rule], significant_only: bool = False) -> GateResult:
    """Check rules on a baseline-vs-one-candidate comparison (UsageError: a rule cannot be checked).

    A rule fails when the candidate worsens by more than its limit; with significant_only, only
    when that worsening is also significant at the comparison's alpha.
    """
    if len(comparison.candidates) != 1:
        raise UsageError("a gate compares one candidate with the baseline")
    if not rules:
        raise UsageError("the gate has no rule: give --max-drop and/or --max-increase")
    candidate = comparison.candidates[0]
    alpha = comparison.options.alpha
    results = []
    for rule in rules:
        if rule.is_metric:
            if rule.target not in comparison.metrics:
                raise UsageError(f"rule {rule.text!r}: {rule.target} was not compared")
            t = comparison.test(candidate, rule.target)
            if t.n == 0:
                raise UsageError(f"rule {rule.text!r}: no shared query is scored on {rule.target} "
                                 "in both runs, so the rule cannot be checked")
            base, cand, worse = t.baseline_mean, t.candidate_mean, -t.improvement
            significant = t.significant(alpha)
            evidence = (f"p(Holm) = {_p(t.p_perm_holm)}" if t.n >= 2
                        else f"significance undefined ({_NOTE_SMALL})")
        else:
            c = comparison.ops_change(candidate, rule.target)
            if c is None:
                raise UsageError(f"rule {rule.text!r}: " + _missing_ops(comparison, candidate, rule))
            base, cand, worse = c.baseline, c.candidate_value, c.change
            significant = bool(c.ci_low > 0)
            level = f"{100 * comparison.options.level:g}%"
            evidence = (f"{level} CI of the change [{c.ci_low:+.6g}, {c.ci_high:+.6g}]"
                        if c.n >= 2 else f"significance undefined ({_NOTE_SMALL})")
        allowed = rule.limit * abs(base) if rule.relative else rule.limit
        # a drop of exactly the limit passes, whatever the rounding of the subtraction
        violated = bool(worse > allowed + 1e-12 * max(1.0, abs(base), abs(cand)))
        passed = not violated or (significant_only and not significant)
        results.append(RuleResult(rule, base, cand, worse, allowed, violated, significant,
                                  evidence, passed))
    return GateResult(comparison.baseline, candidate, comparison.n_shared, significant_only,
                      alpha, results)


def _missing_ops(comparison: Comparison, candidate: str, rule: Rule) -> str:
    if rule.target.startswith("cost."):
        return "cost cannot be compared: " + (comparison.cost_note or "no query has a known cost in both runs")
    stage = rule.target.split(".")[1]
    known = "; ".join(f"{run}: {', '.join(comparison.stages[run]) or 'none'}"
                      for run in (comparison.baseline, candidate))
    return f"no latency stage {stage!r} recorded in both runs (stages of {known})"


def metrics_of(rules: Sequence[Rule]) -> list[str]:
    """The metrics the rules name, in order, once each."""
    return list(dict.fromkeys(r.target for r in rules if r.is_metric))


# --- trends ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrendRow:
    """One run in time order: its metric values and p95 latency per stage."""

    run: str
    created_at: str | None
    imported_at: str
    n_queries: int
    metrics: dict[str, float]  # NaN: the run does not support the metric
    latency_p95_ms: dict[str, float | None]

    def to_json(self) -> dict[str, Any]:
        return ops.to_json_value(dataclasses.asdict(self))  # type: ignore[no-any-return]


def _when(text: str | None) -> datetime | None:
    """An ISO 8601 time as an aware datetime (naive = UTC); None when absent or unreadable."""
    if not text:
        return None
    try:
        dt = datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


def trends(
    store: Store, settings: Settings | None = None, metrics: Sequence[str] | None = None
) -> list[TrendRow]:
    """Every stored run ordered by created_at (then imported_at), with metrics and p95 latency.

    Runs without a readable created_at come last, by imported_at. A metric a run cannot be
    scored on is NaN for that run (metrics None: each run's default metrics).
    """
    s = settings or Settings()
    s.check()
    records = store.runs()
    far = datetime.max.replace(tzinfo=UTC)

    def key(r: Any) -> tuple[datetime, datetime, int]:
        return (_when(r.created_at) or far, _when(str(r.imported_at)) or far, r.run_id)

    rows = []
    for record in sorted(records, key=key):
        data = load_run_data(store, record.run_id)
        values, report = _trend_values(store, data, s, metrics)
        latency = report.ops.get("latency_ms", {}) if report else ops_summary(data)["latency_ms"]
        rows.append(TrendRow(
            run=record.name, created_at=record.created_at, imported_at=str(record.imported_at),
            n_queries=record.n_queries, metrics=values,
            latency_p95_ms={stage: st.get("p95") for stage, st in latency.items()},
        ))
    return rows


def _trend_values(store: Store, data: RunData, s: Settings,
                  metrics: Sequence[str] | None) -> tuple[dict[str, float], Report | None]:
    try:
        report = evaluate(data, metrics, store=store, settings=s)
        return dict(report.metrics), report
    except RagevalError:
        if not metrics:
            return {}, None
    values = {}
    for m in registry.parse_all(metrics):
        try:
            values[str(m)] = evaluate(data, [str(m)], store=store, settings=s).metrics[str(m)]
        except UsageError:
            values[str(m)] = math.nan
    return values, None


# --- text output -----------------------------------------------------------------------------


def _f(x: float, digits: int = 4, signed: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "-" if x is None or math.isnan(x) else ("+inf" if x > 0 else "-inf")
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def _p(p: float) -> str:
    if math.isnan(p):
        return "-"
    return f"{p:.1e}" if p < 0.001 else f"{p:.4f}"


def format_comparison(c: Comparison, worst: int = 5) -> str:
    """The comparison as text tables: metrics, latency, cost, regressions, segments."""
    o = c.options
    al = c.alignment
    s = c.settings
    not_shared = [f"{run} {al.n_only_in[run]} ({', '.join(al.only_in[run][:5])}"
                  f"{' ...' if al.n_only_in[run] > 5 else ''})"
                  for run in al.runs if al.n_only_in[run]]
    level = f"{100 * o.level:g}%"
    out = [
        f"baseline {c.baseline}; candidate{'s' if len(c.candidates) > 1 else ''} "
        f"{', '.join(c.candidates)}",
        f"queries: {al.n_shared} shared; not shared: {'; '.join(not_shared) or 'none'}",
        f"settings: relevance={s['relevance']} k={s['k']} threshold={s['threshold']} "
        f"scorer={s['scorer']}",
        f"tests: paired on queries scored in both runs; {o.n_permutations} sign-flip "
        f"permutations, {o.n_bootstrap} bootstrap resamples, seed {o.seed}; Holm over "
        f"{len(c.tests)} tests; * = p(Holm) < {o.alpha:g}",
    ]
    if c.metrics:
        out += ["", _metric_table(c, level)]
    lat = _latency_table(c)
    if lat:
        out += ["", "latency (ms; queries where both runs recorded the stage; change vs "
                f"baseline; * = {level} CI of the change excludes 0)", lat]
    base_stages = set(c.stages[c.baseline])
    alone = [f"{stage} ({run})" for run in c.candidates for stage in c.stages[run]
             if stage not in base_stages]
    alone += [f"{stage} ({c.baseline})" for stage in c.stages[c.baseline]
              if any(stage not in c.stages[run] for run in c.candidates)]
    if alone:
        out.append("stages not compared (not in both runs): " + ", ".join(alone))
    if c.cost:
        rows: list[list[Any]] = []
        first = c.cost[0]
        rows.append([c.baseline, first.n, _f(first.baseline, 6),
                     _f(c.cost[1].baseline, 4) if len(c.cost) > 1 else "-"])
        for cand in c.candidates:
            pq = c.ops_change(cand, "cost.per_query")
            tot = c.ops_change(cand, "cost.total")
            if pq and tot:
                rows.append([cand, pq.n, _ops_cell(pq, 6), _ops_cell(tot, 4)])
        out += ["", "cost (USD; queries with a known cost in both runs)",
                text_table(["run", "n", "per query", "total"], rows)]
    elif c.cost_note:
        out += ["", f"cost: not compared ({c.cost_note})"]
    if c.metrics and worst:
        # nDCG@k (the usual headline) when compared, else the first metric
        headline = f"nDCG@{s['k']}"
        m = headline if headline in c.metrics else c.metrics[0]
        for cand in c.candidates:
            items = c.worst[cand][m][:worst]
            if items:
                rows = [[w["query_id"], _f(w["baseline"]), _f(w["candidate"]), _f(w["diff"], signed=True)]
                        for w in items]
                out += ["", f"most regressed on {m}: {cand} vs {c.baseline}",
                        text_table(["query_id", c.baseline, cand, "diff"], rows)]
    for tag, groups in c.by.items():
        headers = [tag, "n", "candidate", *(f"{m} diff" for m in c.metrics)]
        rows = []
        for group, seg in groups.items():
            for cand in c.candidates:
                cells = []
                for m in c.metrics:
                    t = next(t for t in seg["tests"] if t.candidate == cand and t.metric == m)
                    cells.append(_f(t.diff, signed=True) + ("*" if t.significant(o.alpha) else ""))
                rows.append([group, seg["n"], cand, *cells])
        out += ["", f"by {tag} (Holm within each group)", text_table(headers, rows)]
    return "\n".join(out)


def _metric_table(c: Comparison, level: str) -> str:
    o = c.options
    rows: list[list[Any]] = []
    for m in c.metrics:
        label = m if higher_is_better(m) else f"{m} (lower=better)"
        rows.append([label, c.baseline, c.n_scored[c.baseline][m], _f(c.means[c.baseline][m]),
                     "", "", "", "", "", "", ""])
        for cand in c.candidates:
            t = c.test(cand, m)
            star = "*" if t.significant(o.alpha) else ""
            ci = "-" if math.isnan(t.ci_low) else f"[{_f(t.ci_low, signed=True)}, {_f(t.ci_high, signed=True)}]"
            rows.append(["", cand, t.n, _f(c.means[cand][m]), _f(t.diff, signed=True) + star, ci,
                         _p(t.p_t), _p(t.p_perm), _p(t.p_perm_holm), _f(t.effect_size, 2, signed=True),
                         f"{t.wins}/{t.ties}/{t.losses}"])
    headers = ["metric", "run", "n", "mean", "diff", f"{level} CI", "p(t)", "p(perm)",
               "p(Holm)", "d_z", "W/T/L"]
    return text_table(headers, rows)


def _ops_cell(change: OpsChange, digits: int) -> str:
    pct = "" if math.isnan(change.change_pct) else f" ({change.change_pct:+.1f}%"
    star = "*" if change.ci_low > 0 or change.ci_high < 0 else ""
    return f"{_f(change.candidate_value, digits)}{pct}{star})" if pct else f"{_f(change.candidate_value, digits)}{star}"


def _latency_table(c: Comparison) -> str:
    stats = ("mean", "p50", "p95", "p99")
    rows: list[list[Any]] = []
    stages = list(dict.fromkeys(x.target.split(".")[1] for x in c.latency))
    for stage in stages:
        first = True
        for cand in c.candidates:
            changes = [c.ops_change(cand, f"latency.{stage}.{st}") for st in stats]
            if changes[0] is None:
                continue
            if first:
                rows.append([stage, c.baseline, changes[0].n,
                             *(_f(x.baseline, 1) if x else "-" for x in changes)])
                first = False
            rows.append(["", cand, changes[0].n, *(_ops_cell(x, 1) if x else "-" for x in changes)])
    return text_table(["stage", "run", "n", *stats], rows) if rows else ""


def format_gate(g: GateResult) -> str:
    """One line per rule (PASS/FAIL with the numbers), then the verdict."""
    mode = f"; a rule fails only when significant (alpha {g.alpha:g})" if g.significant_only else ""
    lines = [f"gate: baseline {g.baseline} vs candidate {g.candidate} on {g.n_shared} shared "
             f"queries{mode}"]
    lines += [r.describe() for r in g.results]
    n_failed = len(g.failed)
    lines.append("gate passed: every rule holds" if g.passed else
                 f"gate failed: {n_failed} of {len(g.results)} rule{'s' if len(g.results) > 1 else ''} "
                 f"broken ({', '.join(r.rule.text for r in g.failed)})")
    return "\n".join(lines)
