"""Evidence-coverage metrics over cached match scores (queries x ranks x gold spans).

Input: scores[q, r, s], the match score (rageval_core.matching.scorers.score_pairs) of gold evidence
span s of query q against the chunk at rank r+1, NaN where the chunk or the span does not
exist; n_spans[q] and n_ret[q] say how many exist. A chunk covers a span when its score is
>= the threshold (compared in float32, the scores' precision, so a threshold equal to a score
covers). Everything is vectorised over queries and over every cut-off k = 1..depth at once:
prepare_coverage() takes the running maximum along the ranks once, after which changing k or
the threshold is a comparison on cached arrays.

Queries without gold spans are excluded from every evidence metric (Coverage.n_excluded
counts them). Cut-offs beyond the deepest list give the value at the deepest list.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rageval_core.errors import UsageError
from rageval_core.metrics.registry import MeasureSpec, Param, register
from rageval_core.settings.schema import DEFAULTS

Floats = NDArray[np.float64]

#: Default coverage threshold (the settings schema's); every function takes another one.
DEFAULT_THRESHOLD: float = DEFAULTS["threshold"]


@dataclass(frozen=True, eq=False)
class Coverage:
    """Cached running maxima of one run's evidence scores, for queries with gold spans.

    The cached arrays are rank-major (queries last): a cut-off selects contiguous rows, and
    per-span planes are compared and added without strided reductions.
    best[s, r, q]: best score of span s among ranks 1..r+1 (-inf: no chunk yet; NaN: the span
    does not exist). context[r, q]: ContextCoverage at k = r+1 (threshold-free, computed once).
    chunk_max[r, q]: the chunk at rank r+1's best score over the spans (-inf: no chunk).
    lead[r, q]: best score of any span among ranks 1..r+1 (-inf: none) and lead_rank[r, q] the
    1-based rank of the chunk holding it (the higher-ranked one on ties; 0 when none).
    rows[q] is the query's row in the arrays given to prepare_coverage; order[q, r] (after a
    score cut) the 0-based original rank of the chunk now at rank r+1.
    eq=False keeps identity hashing, so results can be cached per instance.
    """

    rows: NDArray[np.int64]  # (n,)
    n_excluded: int
    n_spans: NDArray[np.int64]  # (n,)
    n_ret: NDArray[np.int64]  # (n,) after the score cut
    best: NDArray[np.float32]  # (max spans, depth, n)
    context: NDArray[np.float64]  # (depth, n)
    chunk_max: NDArray[np.float32]  # (depth, n)
    lead: NDArray[np.float32]  # (depth, n)
    lead_rank: NDArray[np.int32]  # (depth, n)
    threshold: float = DEFAULT_THRESHOLD
    order: NDArray[np.int64] | None = None  # (n, depth), only with a score cut

    @property
    def n_queries(self) -> int:
        """Queries that have gold spans (the ones every metric is computed over)."""
        return int(self.rows.size)

    @property
    def depth(self) -> int:
        return int(self.best.shape[1])

    def with_threshold(self, threshold: float) -> Coverage:
        """The same cache with another default threshold (nothing is recomputed)."""
        return dataclasses.replace(self, threshold=_check_threshold(threshold))


def _check_threshold(threshold: float) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.floating)):
        raise UsageError(f"threshold must be a number, got {threshold!r}")
    if not math.isfinite(threshold):
        raise UsageError(f"threshold must be finite, got {threshold!r}")
    return float(threshold)


def _t32(cov: Coverage, threshold: float | None) -> np.float32:
    # float32 like the scores: a score of exactly 0.7 is stored as float32(0.7) < 0.7.
    return np.float32(cov.threshold if threshold is None else _check_threshold(threshold))


def _counts(values: ArrayLike, n: int, what: str, upper: int) -> NDArray[np.int64]:
    arr = np.asarray(values)
    if arr.shape != (n,) or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise UsageError(f"{what} must be {n} integers (one per query)")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (arr.min() < 0 or arr.max() > upper):
        raise UsageError(f"{what} must lie in 0..{upper}")
    return arr


def apply_score_cut(
    scores: ArrayLike,
    n_ret: ArrayLike,
    retriever_scores: ArrayLike,
    score_cut: float,
) -> tuple[NDArray[np.float32], NDArray[np.int64], NDArray[np.int64]]:
    """Drop chunks whose retriever score is below score_cut and close the gaps.

    Surviving chunks keep their order and move up (a dropped chunk at rank 2 moves rank 3 to
    2). A chunk without a retriever score (NaN) is kept: the cut drops only what it can
    compare. Returns (scores, n_ret, order); order[q, r] is the 0-based original rank of the
    chunk now at rank r+1 (meaningful for r < n_ret[q]).
    """
    s = np.asarray(scores, dtype=np.float32)
    if s.ndim != 3:
        raise UsageError("scores must be 3-D (queries x ranks x spans)")
    nq, depth, _ = s.shape
    ret = _counts(n_ret, nq, "n_ret", depth)
    rs = np.asarray(retriever_scores, dtype=np.float64)
    if rs.shape != (nq, depth):
        raise UsageError(f"retriever_scores must have shape {(nq, depth)}, got {rs.shape}")
    cut = _check_threshold(score_cut)
    ranks = np.arange(depth)
    exists = ranks < ret[:, None]
    with np.errstate(invalid="ignore"):
        keep = exists & ~(rs < cut)
    order = np.argsort(~keep, axis=1, kind="stable")  # kept ranks first, in rank order
    out = np.take_along_axis(s, order[:, :, None], axis=1)
    new_ret = keep.sum(axis=1).astype(np.int64)
    out[ranks[None, :] >= new_ret[:, None]] = np.nan
    return out, new_ret, order


def prepare_coverage(
    scores: ArrayLike,
    n_spans: ArrayLike,
    n_ret: ArrayLike,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    retriever_scores: ArrayLike | None = None,
    score_cut: float | None = None,
) -> Coverage:
    """Select the queries with gold spans and cache the running maxima every metric reads.

    Scores outside n_ret/n_spans are ignored (treated as padding whatever they hold); a NaN
    inside them (a chunk that could not be scored) never covers. With score_cut, chunks whose
    retriever score is below it are dropped first (apply_score_cut).
    """
    s = np.asarray(scores, dtype=np.float32)
    if s.ndim != 3:
        raise UsageError("scores must be 3-D (queries x ranks x spans)")
    nq, depth, width = s.shape
    spans = _counts(n_spans, nq, "n_spans", width)
    ret = _counts(n_ret, nq, "n_ret", depth)
    order = None
    if score_cut is not None:
        if retriever_scores is None:
            raise UsageError("score_cut needs the retriever scores")
        s, ret, order = apply_score_cut(s, ret, retriever_scores, score_cut)

    rows = np.flatnonzero(spans > 0).astype(np.int64)
    spans, ret = spans[rows], ret[rows]
    s = s[rows]  # a copy: the caller's array is never written
    if order is not None:
        order = order[rows]
    if depth == 0:  # nothing retrieved anywhere: one empty rank keeps the shapes usable
        s = np.full((rows.size, 1, width), np.nan, dtype=np.float32)
        ret = np.zeros_like(ret)
    span_exists = np.arange(width)[None, :] < spans[:, None]  # (n, S)
    chunk_exists = np.arange(s.shape[1])[None, :] < ret[:, None]  # (n, depth)
    s[~chunk_exists] = np.nan
    s[~np.broadcast_to(span_exists[:, None, :], s.shape)] = np.nan

    planes = np.ascontiguousarray(s.transpose(2, 1, 0))  # (S, depth, n)
    best = np.fmax.accumulate(planes, axis=1)  # NaN until the first scored chunk
    best[np.isnan(best) & span_exists.T[:, None, :]] = -np.inf
    context = np.zeros(best.shape[1:], dtype=np.float64)
    for plane in best:  # uncovered (-inf) and missing (NaN) spans add 0
        context += np.where(plane > 0, plane, np.float32(0.0))
    context /= np.maximum(spans, 1)[None, :]
    chunk_max = (
        np.fmax.reduce(planes, axis=0)
        if width
        else np.full(planes.shape[1:], np.nan, dtype=np.float32)
    )
    chunk_max = np.where(np.isnan(chunk_max), np.float32(-np.inf), chunk_max)
    lead = np.maximum.accumulate(chunk_max, axis=0)
    previous = np.concatenate(
        (np.full((1, lead.shape[1]), -np.inf, dtype=np.float32), lead[:-1]), axis=0
    )
    rank = np.arange(1, lead.shape[0] + 1, dtype=np.int32)[:, None]
    lead_rank = np.maximum.accumulate(np.where(chunk_max > previous, rank, 0), axis=0)
    return Coverage(
        rows=rows,
        n_excluded=int(nq - rows.size),
        n_spans=spans,
        n_ret=ret,
        best=best.astype(np.float32, copy=False),
        context=context,
        chunk_max=chunk_max.astype(np.float32, copy=False),
        lead=lead.astype(np.float32, copy=False),
        lead_rank=lead_rank.astype(np.int32, copy=False),
        threshold=_check_threshold(threshold),
        order=order,
    )


def _columns(cov: Coverage, ks: Sequence[int] | None) -> NDArray[np.int64] | slice:
    """Depth-axis index of each cut-off (k beyond the deepest list reads the deepest list)."""
    if ks is None:
        return slice(None)
    arr = np.asarray(ks)
    if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise UsageError("cut-offs must be a list of integers")
    if arr.size and arr.min() < 1:
        raise UsageError(f"cut-offs must be >= 1, got {arr.min()}")
    return np.minimum(arr.astype(np.int64), cov.depth) - 1


def evidence_recall(
    cov: Coverage, threshold: float | None = None, ks: Sequence[int] | None = None
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Per query: (gold spans covered in the top k, gold spans); k = ks or 1..depth (columns).

    Run value: pool_recall(covered, total) = sum(covered) / sum(total) (micro).
    """
    t = _t32(cov, threshold)
    cols = _columns(cov, ks)
    n_cols = cov.depth if isinstance(cols, slice) else cols.size
    covered = np.zeros((n_cols, cov.n_queries), dtype=np.int64)
    for plane in cov.best:  # one contiguous (depth, n) plane per span slot
        covered += plane[cols] >= t
    return covered.T, cov.n_spans


def pool_recall(covered: NDArray[np.int64], total: NDArray[np.int64]) -> Floats:
    """EvidenceRecall@k of a run: all covered spans / all gold spans (NaN without spans)."""
    denominator = int(total.sum())
    if denominator == 0:
        return np.full(covered.shape[1:], np.nan)
    return covered.sum(axis=0) / denominator


def per_query_coverage(
    cov: Coverage, threshold: float | None = None, ks: Sequence[int] | None = None
) -> Floats:
    """Share of the query's gold spans covered in the top k (run value: the mean, macro)."""
    covered, total = evidence_recall(cov, threshold, ks)
    return covered / total[:, None]


def full_coverage(
    cov: Coverage, threshold: float | None = None, ks: Sequence[int] | None = None
) -> Floats:
    """1.0 when every gold span of the query is covered in the top k, else 0.0."""
    covered, total = evidence_recall(cov, threshold, ks)
    return (covered == total[:, None]).astype(np.float64)


def context_coverage(cov: Coverage, ks: Sequence[int] | None = None) -> Floats:
    """Mean over the query's gold spans of the best score in the top k (0 when none retrieved).

    Threshold-free. Run value: the mean of the query means (every query weighs the same).
    """
    return cov.context[_columns(cov, ks)].T


def best_rank(
    cov: Coverage, threshold: float | None = None, ks: Sequence[int] | None = None
) -> Floats:
    """Rank of the best-matching chunk in the top k when its score reaches the threshold.

    The best-matching chunk has the highest score for any gold span (the higher-ranked one on
    ties); NaN when no chunk in the top k reaches the threshold. Run value: the mean over the
    queries where one is found (mean_found).
    """
    cols = _columns(cov, ks)
    t = _t32(cov, threshold)
    found = cov.lead[cols] >= t
    return np.where(found, cov.lead_rank[cols].astype(np.float64), np.nan).T


def mean_found(values: Floats) -> Floats:
    """Column means over the non-NaN values (NaN for a column without any), no warnings."""
    ok = ~np.isnan(values)
    count = ok.sum(axis=0)
    total = np.where(ok, values, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def covers(
    scores: ArrayLike | Coverage, threshold: float | None = None, k: int | None = None
) -> NDArray[np.bool_]:
    """Evidence-mode relevance labels: chunk at rank r+1 covers at least one gold span.

    From a raw (queries x ranks x spans) tensor (every query, NaN = padding) or a Coverage
    (its queries only; the rank of a chunk is then its rank after any score cut). Ranks beyond
    k are False. threshold None: the Coverage's threshold, or DEFAULT_THRESHOLD.
    """
    if isinstance(scores, Coverage):
        labels = (scores.chunk_max >= _t32(scores, threshold)).T
    else:
        s = np.asarray(scores, dtype=np.float32)
        if s.ndim != 3:
            raise UsageError("scores must be 3-D (queries x ranks x spans)")
        t = np.float32(DEFAULT_THRESHOLD if threshold is None else _check_threshold(threshold))
        chunk_max = np.fmax.reduce(s, axis=2) if s.shape[2] else np.zeros(s.shape[:2])
        with np.errstate(invalid="ignore"):
            labels = chunk_max >= t
    if k is not None:
        if k < 1:
            raise UsageError(f"cut-off must be >= 1, got {k}")
        labels[:, k:] = False
    return labels


@dataclass(frozen=True, slots=True)
class _Sorted:
    """Sorted per-cut-off values a threshold sweep binary-searches (cached per Coverage, k)."""

    by_width: tuple[tuple[int, NDArray[np.float32]], ...]  # (n_spans, sorted span bests)
    worst: NDArray[np.float32]  # sorted per-query minimum over its spans
    lead: NDArray[np.float32]  # sorted best chunk score
    rank_tail: Floats  # rank_tail[i]: sum of the lead ranks of sorted entries i..end


_SWEEP_CACHE: WeakKeyDictionary[Coverage, dict[int, _Sorted]] = WeakKeyDictionary()


def _sorted_at(cov: Coverage, col: int) -> _Sorted:
    cache = _SWEEP_CACHE.setdefault(cov, {})
    if col not in cache:
        span_best = cov.best[:, col]  # (S, n)
        groups = []
        for width in np.unique(cov.n_spans).tolist():
            rows = cov.n_spans == width
            groups.append((int(width), np.sort(span_best[:width, rows], axis=None)))
        worst = (
            np.sort(np.fmin.reduce(span_best, axis=0))
            if span_best.size
            else np.zeros(cov.n_queries, np.float32)
        )
        lead = cov.lead[col]
        order = np.argsort(lead, kind="stable")
        ranks = cov.lead_rank[col, order].astype(np.float64)
        tail = np.concatenate((np.cumsum(ranks[::-1])[::-1], [0.0]))
        cache[col] = _Sorted(tuple(groups), worst, lead[order], tail)
    return cache[col]


def threshold_sweep(
    cov: Coverage, thresholds: ArrayLike, k: int | None = None
) -> dict[str, Floats]:
    """Every threshold-dependent run value at cut-off k for many thresholds at once.

    Sorts the best score of every span once (cached per Coverage and k), then answers each
    threshold with binary searches: {"EvidenceRecall", "PerQueryCoverage", "FullCoverageRate",
    "BestRank"} -> one value per threshold, as summarise() would give at that threshold.
    """
    ts = np.asarray(thresholds, dtype=np.float64)
    if ts.ndim != 1 or not np.all(np.isfinite(ts)):
        raise UsageError("thresholds must be a 1-D list of finite numbers")
    t32 = ts.astype(np.float32)
    col = cov.depth - 1 if k is None else int(_columns(cov, [k])[0])  # type: ignore[index]
    n = cov.n_queries
    if n == 0:
        nothing = np.full(ts.shape, np.nan)
        return {
            name: nothing.copy()
            for name in ("EvidenceRecall", "PerQueryCoverage", "FullCoverageRate", "BestRank")
        }
    cached = _sorted_at(cov, col)
    spans_hit = np.zeros(ts.shape, dtype=np.float64)
    share_hit = np.zeros(ts.shape, dtype=np.float64)
    for width, values in cached.by_width:  # a span of an m-span query weighs 1/m (macro)
        hit = values.size - np.searchsorted(values, t32, side="left")
        spans_hit += hit
        share_hit += hit / width
    below = np.searchsorted(cached.lead, t32, side="left")
    found = n - below
    with np.errstate(invalid="ignore", divide="ignore"):
        best_rank_mean = np.where(found > 0, cached.rank_tail[below] / np.maximum(found, 1), np.nan)
    return {
        "EvidenceRecall": spans_hit / int(cov.n_spans.sum()),
        "PerQueryCoverage": share_hit / n,
        "FullCoverageRate": (n - np.searchsorted(cached.worst, t32, side="left")) / n,
        "BestRank": best_rank_mean,
    }


@dataclass(frozen=True, slots=True)
class EvidenceSummary:
    """Run-level evidence metrics at one threshold: name ('EvidenceRecall@5') -> value."""

    values: Mapping[str, float]
    threshold: float
    n_queries: int  # queries with gold spans (the ones scored)
    n_excluded: int  # queries without gold spans


def summarise(
    cov: Coverage, ks: Sequence[int] = (1, 3, 5, 10), threshold: float | None = None
) -> EvidenceSummary:
    """Every evidence metric of a run at the cut-offs ks (and over the whole list)."""
    t = cov.threshold if threshold is None else _check_threshold(threshold)
    cut = [int(k) for k in ks]
    covered, total = evidence_recall(cov, t, cut)
    whole = [*cut, cov.depth]  # the threshold-free and rank metrics also over the whole list
    context = _mean(context_coverage(cov, whole))
    ranks = mean_found(best_rank(cov, t, whole))
    columns: dict[str, Floats] = {
        "EvidenceRecall": pool_recall(covered, total),
        "PerQueryCoverage": _mean(covered / total[:, None]),
        "FullCoverageRate": _mean((covered == total[:, None]).astype(np.float64)),
        "ContextCoverage": context[:-1],
        "BestRank": ranks[:-1],
    }
    values: dict[str, float] = {}
    for name, column in columns.items():
        values.update({f"{name}@{k}": float(v) for k, v in zip(cut, column, strict=True)})
    values["ContextCoverage"] = float(context[-1])
    values["BestRank"] = float(ranks[-1])
    return EvidenceSummary(values, t, cov.n_queries, cov.n_excluded)


def _mean(values: Floats) -> Floats:
    if values.shape[0] == 0:
        return np.full(values.shape[1:], np.nan)
    return values.mean(axis=0)


# --- registration ------------------------------------------------------------------------

_PARAMS = {"threshold": Param(float)}  # None: the Coverage's own threshold


def _k(cov: Coverage, cutoff: int | None) -> list[int]:
    return [cov.depth if cutoff is None else cutoff]


def _register(
    name: str,
    fn: Any,
    description: str,
    threshold: bool = True,
    value_range: tuple[float | None, float | None] = (0.0, 1.0),
    weight: Any = None,
    higher_is_better: bool = True,
) -> None:
    register(
        MeasureSpec(
            name=name,
            family="evidence",
            needs_cutoff=False,
            allows_cutoff=True,
            fn=fn,
            description=description,
            range=value_range,
            input=Coverage,
            params=dict(_PARAMS) if threshold else {},
            weight=weight,
            higher_is_better=higher_is_better,
        )
    )


_register(
    "EvidenceRecall",
    lambda c, k, p: per_query_coverage(c, p["threshold"], _k(c, k))[:, 0],
    "gold spans covered in the top k / all gold spans, pooled over queries (micro): the "
    "per-query value is the query's covered share, and the run value weighs each query by its "
    "number of gold spans (so any subset, e.g. one tag value, pools its own spans)",
    weight=lambda c: c.n_spans,
)
_register(
    "PerQueryCoverage",
    lambda c, k, p: per_query_coverage(c, p["threshold"], _k(c, k))[:, 0],
    "share of the query's gold spans covered in the top k, averaged over queries (macro)",
)
_register(
    "FullCoverageRate",
    lambda c, k, p: full_coverage(c, p["threshold"], _k(c, k))[:, 0],
    "share of queries whose every gold span is covered in the top k",
)
_register(
    "ContextCoverage",
    lambda c, k, p: context_coverage(c, _k(c, k))[:, 0],
    "mean over gold spans of the best match score in the top k (threshold-free)",
    threshold=False,
)
_register(
    "BestRank",
    lambda c, k, p: best_rank(c, p["threshold"], _k(c, k))[:, 0],
    "rank of the best-matching chunk when it reaches the threshold; the run value is the mean "
    "over the queries where one is found (NaN = not found, left out)",
    value_range=(1.0, None),
    higher_is_better=False,
)
