"""Latency and cost of candidates against the baseline over paired queries: each stage's mean
and percentiles, cost per query and in total, with bootstrap intervals of the change."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from rageval_core import ops
from rageval_core.compare.statistics import StatOptions, _row_blocks, percentile_interval
from rageval_core.rundata import RunData
from rageval_core.runops import query_costs
from rageval_core.store import Store

if TYPE_CHECKING:
    from rageval_core.compare.comparison import Alignment

Floats = NDArray[np.float64]

LATENCY_STATS = ("mean", "p50", "p90", "p95", "p99")


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
        return ops.to_json_value(
            {  # type: ignore[no-any-return]
                "n": self.n,
                "baseline": self.baseline,
                "candidate": self.candidate_value,
                "change": self.change,
                "change_pct": self.change_pct,
                "ci": [self.ci_low, self.ci_high],
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


def _counted_stats(
    target: _Target, x: Floats, order: NDArray[np.intp], counts: NDArray[np.int32]
) -> Floats:
    """The target's statistics of every resample (rows of counts: how often each paired query is
    drawn), as _latency_stats / _cost_stats of the resampled values, without gathering them."""
    n = x.size
    total = counts @ x
    if target.names != LATENCY_STATS:
        return np.stack([total / n, total], axis=1)
    xs = x[order]
    # a resample's sorted values are xs repeated by counts: the value of rank r is the first
    # sorted query whose running count exceeds r (one searchsorted over all rows, offset apart)
    cum = np.cumsum(counts[:, order], axis=1, dtype=np.int64)
    rows = counts.shape[0]
    flat = (cum + (np.arange(rows, dtype=np.int64) * (n + 1))[:, None]).ravel()

    def at_rank(r: NDArray[np.int64]) -> Floats:
        pos = np.searchsorted(flat, r + np.arange(rows, dtype=np.int64) * (n + 1), side="right")
        return xs[pos - np.arange(rows) * n]  # type: ignore[no-any-return]

    out = [total / n]
    for q in _LATENCY_QUANTILES:
        # numpy's linear method, step by step as np.percentile computes it
        virtual = n * q + (1 + q * (1 - 1 - 1)) - 1
        prev = math.floor(virtual)
        gamma = virtual - prev
        lo_rank = np.full(rows, min(max(prev, 0), n - 1), dtype=np.int64)
        hi_rank = np.full(rows, min(prev + 1, n - 1), dtype=np.int64)
        a, b = at_rank(lo_rank), at_rank(hi_rank)
        diff = b - a
        out.append(b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma)
    return np.stack(out, axis=1)


def _resampled_changes(
    group: Sequence[_Target], options: StatOptions
) -> list[tuple[Floats, Floats]]:
    """(CI low, CI high) of every statistic of each target in group (same number of pairs): one
    draw of resamples for all of them (from the seed: a target alone gets the same rows)."""
    n = group[0].b.size
    orders = [(np.argsort(t.b, kind="stable"), np.argsort(t.c, kind="stable")) for t in group]
    parts: list[list[Floats]] = [[] for _ in group]
    rng = np.random.default_rng(options.seed)
    for size in _row_blocks(options.n_bootstrap, n):
        idx = rng.integers(0, n, size=(size, n))
        flat = (idx + (np.arange(size) * n)[:, None]).ravel()
        counts = np.bincount(flat, minlength=size * n).reshape(size, n).astype(np.int32)
        for j, (t, (ob, oc)) in enumerate(zip(group, orders, strict=True)):
            parts[j].append(_counted_stats(t, t.c, oc, counts) - _counted_stats(t, t.b, ob, counts))
    return [percentile_interval(np.concatenate(p, axis=0), options.level) for p in parts]


def _changes(targets: Sequence[_Target], options: StatOptions, resample: bool) -> list[OpsChange]:
    """Every target's statistics and their bootstrap intervals, the targets with the same number
    of pairs resampled together (latency stages and cost of every candidate on one draw)."""
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
            )
            for k, name in enumerate(t.names)
        ]
    return out


def _target(
    target: str, names: tuple[str, ...], candidate: str, base: Floats, cand: Floats
) -> _Target | None:
    paired = np.isfinite(base) & np.isfinite(cand)
    if not paired.any():
        return None
    return _Target(target, names, candidate, base[paired], cand[paired])


def stage_columns(data: RunData) -> dict[str, Floats]:
    """stage -> (n,) latency in ms per query, NaN where the stage is not recorded."""
    stages = ops._key_order(set(data.latency_stage.astype(str).tolist()), ops.STAGE_ORDER)
    out: dict[str, Floats] = {}
    for stage in stages:
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
        for stage, col in stages[0].items():
            if stage in stages[i]:
                latency.append(
                    _target(
                        f"latency.{stage}",
                        LATENCY_STATS,
                        p.candidate,
                        col[p.base_rows],
                        stages[i][stage][p.cand_rows],
                    )
                )
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
