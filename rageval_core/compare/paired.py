"""One metric, one candidate against the baseline: the paired test and its batched form.

paired_tests computes the cheap part of every test (means, t-test, effect size, wins) one by
one and the resampling (bootstrap intervals, randomisation p-values) in one batch per number of
pairs, on one draw reused by every (candidate, metric): statistics.py does the maths. A
CompareMemo (memo.py) keeps both parts by a digest of the values tested, so a comparison after
a settings move recomputes only the tests whose values moved.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rageval_core.metrics import latency_cost as ops
from rageval_core.compare.memo import CompareMemo, digest
from rageval_core.compare.statistics import (
    Floats,
    StatOptions,
    bootstrap_cis,
    effect_size,
    holm,
    paired_t_test,
    permutation_tests,
)
from rageval_core.metrics.registry import higher_is_better, verdict

#: |per-query difference| at or below this is a tie
_TIE = 1e-12
#: why a test with fewer than two pairs has no p-value
NOTE_SMALL = "n < 2"


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
    #: the pair's shared queries each run scores; n counts those both score, and only those
    #: enter the means and the tests (the others are said apart, never averaged in)
    n_baseline_scored: int = 0
    n_candidate_scored: int = 0

    @property
    def improvement(self) -> float:
        """diff in the metric's good direction: > 0 means the candidate is better."""
        return self.diff if self.higher_is_better else -self.diff

    def significant(self, alpha: float) -> bool:
        return bool(self.p_perm_holm < alpha)

    def verdict(self, alpha: float) -> str:
        """IMPROVED, REGRESSED (significant, in the metric's direction) or ""."""
        return verdict(self.metric, self.diff, self.significant(alpha))

    @property
    def unpaired(self) -> bool:
        """Whether either run scores shared queries the other does not (left out of n)."""
        return max(self.n_baseline_scored, self.n_candidate_scored) > self.n

    def to_json(self, alpha: float) -> dict[str, Any]:
        return ops.to_json_value(
            {  # type: ignore[no-any-return]
                "n": self.n,
                "n_scored": {
                    "baseline": self.n_baseline_scored,
                    "candidate": self.n_candidate_scored,
                },
                "baseline_mean": self.baseline_mean,
                "candidate_mean": self.candidate_mean,
                "diff": self.diff,
                "ci": [self.ci_low, self.ci_high],
                "t": self.t,
                "df": self.df,
                "p_t": self.p_t,
                "p_perm": self.p_perm,
                "p_t_holm": self.p_t_holm,
                "p_perm_holm": self.p_perm_holm,
                "significant": self.significant(alpha),
                "verdict": self.verdict(alpha) or None,
                "effect_size": self.effect_size,
                "wins": self.wins,
                "ties": self.ties,
                "losses": self.losses,
                "note": self.note,
            }
        )


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
    return paired_tests([(metric, candidate, base, cand, w_base, w_cand)], options)[0]


#: one paired test's input: metric, candidate, aligned baseline and candidate values, weights
TestInput = tuple[str, str, Floats, Floats, Floats | None, Floats | None]


@dataclass(frozen=True)
class _Pairs:
    """One test's pairs: values and weights where both runs score, and the tested contributions."""

    b: Floats
    c: Floats
    wb: Floats
    wc: Floats
    d: Floats
    weighted: bool
    n_base_scored: int  # of the shared queries given, those each run scores
    n_cand_scored: int


def _pairs(base: Floats, cand: Floats, w_base: Floats | None, w_cand: Floats | None) -> _Pairs:
    base_scored, cand_scored = ~np.isnan(base), ~np.isnan(cand)
    paired = base_scored & cand_scored
    b, c = base[paired], cand[paired]
    wb = np.ones(b.size) if w_base is None else w_base[paired]
    wc = np.ones(c.size) if w_cand is None else w_cand[paired]
    n = int(b.size)
    weighted = w_base is not None or w_cand is not None
    if weighted and n:
        # Per-query contributions whose plain mean is the weighted difference of means, so the
        # tests of a pooled metric test the pooled difference.
        with np.errstate(invalid="ignore", divide="ignore"):
            d = n * (wc * c / wc.sum() - wb * b / wb.sum())
    else:
        d = c - b
    return _Pairs(b, c, wb, wc, d, weighted, int(base_scored.sum()), int(cand_scored.sum()))


def _resampling(
    pairs: Sequence[_Pairs], options: StatOptions, memo: CompareMemo
) -> tuple[Floats, Floats, Floats]:
    """(CI low, CI high, randomisation p) of every test, the tests with the same number of
    pairs sharing one draw of resamples and sign flips (the same draws a test alone would get
    from the seed, so batching changes no number)."""
    m = len(pairs)
    lo, hi, p = np.full(m, np.nan), np.full(m, np.nan), np.full(m, np.nan)
    by_n: dict[int, list[int]] = {}
    for i, x in enumerate(pairs):
        by_n.setdefault(int(x.b.size), []).append(i)
    for n, group in by_n.items():
        if n < 2:
            continue
        p[group] = permutation_tests(
            np.stack([pairs[i].d for i in group], axis=1),
            options.n_permutations,
            options.seed,
            draws=memo.draws,
        )
        for weighted in (False, True):
            part = [i for i in group if pairs[i].weighted == weighted]
            if not part:
                continue

            def cols(attr: str, part: list[int] = part) -> Floats:
                return np.stack([getattr(pairs[i], attr) for i in part], axis=1)

            lo[part], hi[part] = bootstrap_cis(
                cols("b"),
                cols("c"),
                cols("wb") if weighted else None,
                cols("wc") if weighted else None,
                n_resamples=options.n_bootstrap,
                seed=options.seed,
                level=options.level,
                draws=memo.draws,
            )
    return lo, hi, p


def paired_tests(
    inputs: Sequence[TestInput],
    options: StatOptions,
    resample: bool = True,
    memo: CompareMemo | None = None,
) -> list[PairedTest]:
    """paired_test of every input, the bootstrap and randomisation tests batched over all of
    them; resample=False leaves the CI and the randomisation p NaN (the cheap part only).

    memo: the tests computed before (a test on the same values is taken from it, the others
    are added to it); without one, every test is computed.
    """
    memo = memo if memo is not None else CompareMemo()
    pairs = [_pairs(base, cand, wb, wc) for _, _, base, cand, wb, wc in inputs]
    keys = [digest(x.b, x.c, x.wb, x.wc, np.array(x.weighted)) for x in pairs]
    out = []
    for (metric, candidate, *_), x, key in zip(inputs, pairs, keys, strict=True):
        found = memo.get(("test", metric, candidate, key))
        if found is None:
            found = _cheap_test(metric, candidate, x)
            memo.put(("test", metric, candidate, key), found)
        # the unpaired counts are not in the digest of the paired values: set them here
        out.append(
            dataclasses.replace(
                found, n_baseline_scored=x.n_base_scored, n_candidate_scored=x.n_cand_scored
            )
        )
    if not resample:
        return out
    o = options
    rkeys = [("resampled", key, o.n_permutations, o.n_bootstrap, o.seed, o.level) for key in keys]
    resampled: list[tuple[float, float, float] | None] = [memo.get(rkey) for rkey in rkeys]
    todo = [i for i, r in enumerate(resampled) if r is None]
    lo, hi, p = _resampling([pairs[i] for i in todo], options, memo)
    for j, i in enumerate(todo):
        resampled[i] = (float(lo[j]), float(hi[j]), float(p[j]))
        memo.put(rkeys[i], resampled[i])
    for i, r in enumerate(resampled):
        ci_low, ci_high, p_perm = r if r is not None else (math.nan, math.nan, math.nan)
        out[i] = dataclasses.replace(out[i], ci_low=ci_low, ci_high=ci_high, p_perm=p_perm)
    return out


def _cheap_test(metric: str, candidate: str, x: _Pairs) -> PairedTest:
    """The test without its resampling: the CI and the randomisation p NaN."""
    higher = higher_is_better(metric)
    n = int(x.b.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_b = float(np.dot(x.b, x.wb) / x.wb.sum()) if n else math.nan
        mean_c = float(np.dot(x.c, x.wc) / x.wc.sum()) if n else math.nan
    raw = (x.c - x.b) * (1.0 if higher else -1.0)
    tt = paired_t_test(x.d)
    return PairedTest(
        metric=metric,
        candidate=candidate,
        n=n,
        baseline_mean=mean_b,
        candidate_mean=mean_c,
        diff=mean_c - mean_b,
        ci_low=math.nan,
        ci_high=math.nan,
        t=tt.t,
        df=tt.df,
        p_t=tt.p,
        p_perm=math.nan,
        effect_size=effect_size(x.d),
        wins=int(np.count_nonzero(raw > _TIE)),
        ties=int(np.count_nonzero(np.abs(raw) <= _TIE)),
        losses=int(np.count_nonzero(raw < -_TIE)),
        higher_is_better=higher,
        note=NOTE_SMALL if n < 2 else "",
    )


def _with_holm(tests: list[PairedTest]) -> list[PairedTest]:
    """The tests with Holm-adjusted p-values over this family of tests."""
    p_t = holm([t.p_t for t in tests])
    p_perm = holm([t.p_perm for t in tests])
    return [
        dataclasses.replace(t, p_t_holm=float(a), p_perm_holm=float(b))
        for t, a, b in zip(tests, p_t, p_perm, strict=True)
    ]
