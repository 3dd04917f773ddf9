"""Latency and cost of candidates against the baseline over paired queries: each stage's mean
and percentiles, cost per query and in total, with bootstrap intervals of the change."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from rageval_core.metrics import latency_cost as ops
from rageval_core.metrics import registry
from rageval_core.compare.statistics import StatOptions, _row_blocks, percentile_interval
from rageval_core.rundata import RunData
from rageval_core.latency.run_summary import query_costs
from rageval_core.store import Store

if TYPE_CHECKING:
    from rageval_core.compare.comparison import Alignment

Floats = NDArray[np.float64]

LATENCY_STATS = ("mean", "p50", "p90", "p95", "p99")
#: OpsChange.status: the stage is in both runs, only in the candidate, only in the baseline
BOTH, ADDED, REMOVED = "both", "added", "removed"


class Change:
    """A statistic's change from the baseline to the candidate's value (`after`), and that
    change in percent of the baseline (NaN when the baseline is 0)."""

    baseline: float

    @property
    def after(self) -> float:
        raise NotImplementedError

    @property
    def change(self) -> float:
        return self.after - self.baseline

    @property
    def change_pct(self) -> float:
        return 100.0 * self.change / self.baseline if self.baseline else math.nan


@dataclass(frozen=True)
class OpsChange(Change):
    """One statistic (latency of a stage, or cost) of baseline and candidate over paired queries."""

    target: str  # "latency.total.p95", "cost.per_query", "cost.total"
    candidate: str
    n: int
    baseline: float
    candidate_value: float
    ci_low: float  # bootstrap interval of the change, over resampled paired queries
    ci_high: float
    #: a latency stage recorded by both runs, or only by the candidate ("added": 0 ms in the
    #: baseline, so its whole cost is the change) or only by the baseline ("removed")
    status: str = BOTH

    @property
    def stage(self) -> str:
        """The latency stage, "rerank (added)" when only one of the runs records it."""
        stage = self.target.split(".")[1]
        return stage if self.status == BOTH else f"{stage} ({self.status})"

    @property
    def after(self) -> float:
        return self.candidate_value

    @property
    def verdict(self) -> str:
        """IMPROVED or REGRESSED when the interval of the change excludes 0, read in the
        target's direction (registry.higher_is_better: latency and cost are better lower)."""
        excludes_zero = bool(self.ci_low > 0 or self.ci_high < 0)
        return registry.verdict(self.target, self.change, excludes_zero)

    def to_json(self) -> dict[str, Any]:
        return ops.to_json_value(
            {  # type: ignore[no-any-return]
                "n": self.n,
                "baseline": self.baseline,
                "candidate": self.candidate_value,
                "change": self.change,
                "change_pct": self.change_pct,
                "ci": [self.ci_low, self.ci_high],
                "verdict": self.verdict or None,
            }
        )


#: numpy's "linear" percentiles (q / 100) of the latency statistics after the mean
_LATENCY_QUANTILES = (0.5, 0.9, 0.95, 0.99)


def _latency_stats(x: Floats) -> Floats:
    """(rows, n) -> (rows, 5): mean, p50, p90, p95, p99 of each row (numpy's linear percentile)."""
    pct = np.percentile(x, [100 * q for q in _LATENCY_QUANTILES], axis=1).T
    return np.concatenate([x.mean(axis=1)[:, None], pct], axis=1)


def _cost_stats(x: Floats) -> Floats:
    return np.stack([x.mean(axis=1), x.sum(axis=1)], axis=1)


@dataclass(frozen=True)
class _Target:
    """One compared quantity of one pair: its name, statistics and paired values."""

    target: str  # "latency.total" or "cost"
    names: tuple[str, ...]  # its statistics: LATENCY_STATS or ("per_query", "total")
    candidate: str
    b: Floats  # the baseline's values where both runs hold one
    c: Floats
    status: str = BOTH


class _Ranks:
    """Order statistics of bootstrap resamples of one array x, read from a histogram.

    A resample's value of rank k (0-based, in sorted order) is x's sorted value of rank j, the
    first j for which more than k draws have a rank <= j. Only the ranks near the k a percentile
    needs matter: each rank within a margin of them is a bin of its own and each run of ranks
    between them one bin, so a resample costs one histogram of a few thousand bins, not a sort.
    The margin (6 sqrt(n) ranks, where the count of draws up to a rank varies by at most
    sqrt(n) / 2 per standard deviation) is left only by far-off resamples, which are sorted.
    """

    #: the margin around each needed rank, in units of sqrt(n)
    MARGIN = 6.0

    def __init__(self, x: Floats, ks: Sequence[int]) -> None:
        n = x.size
        self.x = x
        order = np.argsort(x, kind="stable")
        self.sorted = x[order]
        margin = int(self.MARGIN * math.sqrt(n)) + 2
        near = np.zeros(n, dtype=bool)
        for k in ks:
            near[max(0, k - margin) : min(n, k + margin + 2)] = True
        starts = near.copy()  # a bin starts at every near rank and after one
        starts[0] = True
        starts[1:] |= near[:-1]
        bin_of_rank = np.cumsum(starts) - 1
        self.n_bins = int(bin_of_rank[-1]) + 1
        self.first_rank = np.flatnonzero(starts)
        self.single = near[self.first_rank]  # the bin holds one rank only
        rank_of = np.empty(n, dtype=np.intp)
        rank_of[order] = np.arange(n)
        self.bin_of_query = bin_of_rank[rank_of]

    def at(self, idx: NDArray[np.intp], ks: Sequence[int]) -> dict[int, Floats]:
        """{k: the value of rank k of each row of idx (a resample: indices into x)}."""
        rows, n = idx.shape
        nb = self.n_bins
        codes = self.bin_of_query[idx]
        codes += (np.arange(rows, dtype=np.intp) * nb)[:, None]
        cum = np.bincount(codes.ravel(), minlength=rows * nb).reshape(rows, nb)
        np.cumsum(cum, axis=1, out=cum)
        # rows are monotone and at most n: offset apart, one searchsorted finds every row's bin
        shift = np.arange(rows, dtype=np.intp) * (n + 1)
        cum += shift[:, None]
        flat = cum.ravel()
        base = np.arange(rows, dtype=np.intp) * nb
        out = {}
        for k in ks:
            b = np.searchsorted(flat, shift + k, side="right") - base
            values = self.sorted[self.first_rank[b]]
            far = np.flatnonzero(~self.single[b])
            for r in far.tolist():
                values[r] = np.partition(self.x[idx[r]], k)[k]
            out[k] = values
        return out


def _percentile_ranks(n: int) -> list[tuple[int, int, float]]:
    """(rank below, rank above, weight) of each latency percentile, as numpy's linear method."""
    out = []
    for q in _LATENCY_QUANTILES:
        virtual = n * q + (1 + q * (1 - 1 - 1)) - 1  # numpy's _compute_virtual_index
        prev = math.floor(virtual)
        out.append((min(max(prev, 0), n - 1), min(prev + 1, n - 1), virtual - prev))
    return out


def _lerp(a: Floats, b: Floats, gamma: float) -> Floats:
    """numpy's _lerp for one weight: a + (b - a) gamma, from b's side when gamma >= 0.5."""
    diff = b - a
    return b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma  # type: ignore[no-any-return]


def _resampled_changes(
    group: Sequence[_Target], options: StatOptions
) -> list[tuple[Floats, Floats]]:
    """(CI low, CI high) of every statistic of each target in group (same number of pairs): one
    draw of resamples for all of them (from the seed: a target alone gets the same rows).

    Each distinct array of values (the baseline's stage is the same for every candidate that
    holds the same queries) is read once per resample: its mean or sum by one matrix product
    of the draw counts with every array, its percentiles from _Ranks."""
    n = group[0].b.size
    pct = _percentile_ranks(n)
    ks = sorted({k for lo, hi, _ in pct for k in (lo, hi)})
    sides: list[Floats] = []
    ranks: dict[int, _Ranks] = {}
    where: list[tuple[int, int]] = []  # per target: (its baseline side, its candidate side)

    def side(x: Floats, latency: bool) -> int:
        for i, seen in enumerate(sides):
            if seen is x or np.array_equal(seen, x):
                if latency and i not in ranks:
                    ranks[i] = _Ranks(x, ks)
                return i
        sides.append(x)
        if latency:
            ranks[len(sides) - 1] = _Ranks(x, ks)
        return len(sides) - 1

    for t in group:
        latency = t.names == LATENCY_STATS
        where.append((side(t.b, latency), side(t.c, latency)))
    values = np.stack(sides, axis=1)  # (n, sides)
    parts: list[list[Floats]] = [[] for _ in group]
    rng = np.random.default_rng(options.seed)
    for size in _row_blocks(options.n_bootstrap, n):
        idx = rng.integers(0, n, size=(size, n))
        flat = (idx + (np.arange(size) * n)[:, None]).ravel()
        counts = np.bincount(flat, minlength=size * n).reshape(size, n).astype(np.float64)
        totals = counts @ values  # (size, sides)
        stats: dict[int, Floats] = {}
        for i in range(len(sides)):
            if i in ranks:
                at = ranks[i].at(idx, ks)
                stats[i] = np.stack(
                    [totals[:, i] / n, *(_lerp(at[lo], at[hi], g) for lo, hi, g in pct)], axis=1
                )
            else:
                stats[i] = np.stack([totals[:, i] / n, totals[:, i]], axis=1)
        for j, (ib, ic) in enumerate(where):
            parts[j].append(stats[ic] - stats[ib])
    return [percentile_interval(np.concatenate(p, axis=0), options.level) for p in parts]


def _changes(targets: Sequence[_Target], options: StatOptions, resample: bool) -> list[OpsChange]:
    """Every target's statistics and their bootstrap intervals, the targets with the same number
    of pairs resampled together (latency stages and cost of every candidate on one draw)."""
    # sums beyond a float (only in a store written before import bounded latencies and prices)
    # give no value rather than a numpy warning on stderr
    with np.errstate(over="ignore", invalid="ignore"):
        return _changes_of(targets, options, resample)


def _changes_of(
    targets: Sequence[_Target], options: StatOptions, resample: bool
) -> list[OpsChange]:
    intervals: dict[int, tuple[Floats, Floats]] = {}
    if resample:
        by_n: dict[int, list[int]] = {}
        for i, t in enumerate(targets):
            by_n.setdefault(int(t.b.size), []).append(i)
        for n, group in by_n.items():
            if n >= 2:
                found = _resampled_changes([targets[i] for i in group], options)
                intervals.update(zip(group, found, strict=True))
    out = []
    for i, t in enumerate(targets):
        stats = _latency_stats if t.names == LATENCY_STATS else _cost_stats
        values_b, values_c = stats(t.b[None, :])[0], stats(t.c[None, :])[0]
        nan = np.full(len(t.names), np.nan)
        lo, hi = intervals.get(i, (nan, nan))
        out += [
            OpsChange(
                f"{t.target}.{name}",
                t.candidate,
                int(t.b.size),
                float(values_b[k]),
                float(values_c[k]),
                float(lo[k]),
                float(hi[k]),
                t.status,
            )
            for k, name in enumerate(t.names)
        ]
    return out


def _target(
    target: str,
    names: tuple[str, ...],
    candidate: str,
    base: Floats,
    cand: Floats,
    status: str = BOTH,
) -> _Target | None:
    paired = np.isfinite(base) & np.isfinite(cand)
    if not paired.any():
        return None
    return _Target(target, names, candidate, base[paired], cand[paired], status)


def stage_columns(data: RunData) -> dict[str, Floats]:
    """stage -> (n,) latency in ms per query, NaN where the stage is not recorded."""
    out: dict[str, Floats] = {}
    for stage in data.latency_stages:
        col = np.full(data.n_queries, np.nan)
        sel = data.latency_stage == stage
        col[data.latency_q[sel]] = data.latency_ms[sel]
        out[stage] = col
    return out


def ops_changes(
    loaded: Sequence[tuple[Store, RunData]],
    labels: Sequence[str],
    alignment: Alignment,
    opts: StatOptions,
    resample: bool = True,
) -> tuple[list[OpsChange], list[OpsChange], str]:
    """Latency changes per stage and statistic, and cost per query / total, of each candidate
    on its pair's queries (resample=False: without their bootstrap intervals). loaded and labels
    hold the baseline first; a candidate the alignment left out is not read."""
    index = [0] + [list(labels).index(p.candidate) for p in alignment.pairs]
    stages = {i: stage_columns(loaded[i][1]) for i in index}
    costs = {i: query_costs(loaded[i][1]) for i in index}
    missing = [
        f"{labels[i]} has no price for {', '.join(costs[i].price_missing)} tokens"
        for i in index
        if costs[i].price_missing
    ]
    no_tokens = [labels[i] for i in index if not costs[i].has_tokens.any()]
    note = "; ".join(
        missing + ([f"no token counts in {', '.join(no_tokens)}"] if no_tokens else [])
    )
    latency: list[_Target | None] = []
    cost: list[_Target | None] = []
    for i, p in zip(index[1:], alignment.pairs, strict=True):
        # both pipelines merged: the candidate's own stages where its pipeline has them
        both = [*stages[0], *stages[i]]
        runs = [0] * len(stages[0]) + [1] * len(stages[i])
        for stage in ops.pipeline_order(runs, both):
            base, cand = stages[0].get(stage), stages[i].get(stage)
            status = ADDED if base is None else REMOVED if cand is None else BOTH
            # a stage one run lacks costs it nothing: 0 ms where the other recorded it
            b = np.zeros(p.base_rows.size) if base is None else base[p.base_rows]
            c = np.zeros(p.cand_rows.size) if cand is None else cand[p.cand_rows]
            latency.append(_target(f"latency.{stage}", LATENCY_STATS, p.candidate, b, c, status))
        if not note:
            cost.append(
                _target(
                    "cost",
                    ("per_query", "total"),
                    p.candidate,
                    costs[0].cost_usd[p.base_rows],
                    costs[i].cost_usd[p.cand_rows],
                )
            )
    changes = _changes([t for t in (*latency, *cost) if t is not None], opts, resample)
    return (
        [x for x in changes if x.target.startswith("latency.")],
        [x for x in changes if x.target.startswith("cost.")],
        note,
    )
