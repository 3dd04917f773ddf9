"""Ranking metrics as trec_eval computes them, vectorised over all queries (docs/metrics.md).

Every function takes a RankedLabels and returns one float64 value per query. A relevant
document is one whose label is >= rel (default: the arrays' rel_level). Ranks past the end of
a list count as non-relevant, as in trec_eval. Zero denominators give 0, as in trec_eval,
except where a docstring says otherwise. Prefix sums are computed once per (arrays, rel) and
cached, so asking for many cut-offs costs one column lookup each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np
from numpy.typing import NDArray

from rageval_core.errors import UsageError
from rageval_core.metrics.arrays import RankedLabels, check_rel_level
from rageval_core.metrics.registry import Aggregate, MeasureSpec, Param, register

Floats = NDArray[np.float64]

#: AQWV's default cost of a false alarm relative to a miss (IARPA MATERIAL).
AQWV_BETA = 40.0


@dataclass(frozen=True, eq=False)
class _Binary:
    """Prefix sums of one binary relevance view (label >= rel) of a RankedLabels."""

    rel_cum: NDArray[np.int64]  # (n, depth+1): relevant documents within the top k, k = 0..depth
    prec_cum: Floats  # (n, depth+1): sum of precision at each relevant rank <= k
    first_rel: NDArray[np.int64]  # (n,): rank of the first relevant document, 0 if none
    n_rel: NDArray[np.int64]  # (n,)


@dataclass(frozen=True, eq=False)
class _Graded:
    """Prefix sums of discounted gains: the run's DCG and the ideal DCG at every depth."""

    dcg_cum: Floats  # (n, depth+1)
    idcg_cum: Floats  # (n, ideal width+1)


_CACHE: WeakKeyDictionary[RankedLabels, dict[Any, Any]] = WeakKeyDictionary()


def _cached(arrays: RankedLabels, key: Any, make: Callable[[], Any]) -> Any:
    store = _CACHE.setdefault(arrays, {})
    if key not in store:
        store[key] = make()
    return store[key]


def _binary(arrays: RankedLabels, rel: int | None) -> _Binary:
    level = arrays.rel_level if rel is None else rel
    check_rel_level(level)
    return _cached(arrays, ("binary", level), lambda: _make_binary(arrays, level))  # type: ignore[no-any-return]


def _make_binary(arrays: RankedLabels, level: int) -> _Binary:
    n, depth = arrays.labels.shape
    rel = arrays.labels >= level
    rel_cum = np.zeros((n, depth + 1), dtype=np.int64)
    np.cumsum(rel, axis=1, out=rel_cum[:, 1:])
    ranks = np.arange(1, depth + 1, dtype=np.float64)
    prec_cum = np.zeros((n, depth + 1), dtype=np.float64)
    np.cumsum(np.where(rel, rel_cum[:, 1:] / ranks, 0.0), axis=1, out=prec_cum[:, 1:])
    first_rel = np.zeros(n, dtype=np.int64)
    if depth:  # argmax refuses zero-width rows (every list empty)
        first_rel = np.where(rel.any(axis=1), rel.argmax(axis=1) + 1, 0).astype(np.int64)
    if level == arrays.rel_level:
        n_rel = arrays.n_rel
    else:  # the ideal row holds every judged label, so any level can be counted from it
        n_rel = (arrays.ideal >= level).sum(axis=1).astype(np.int64)
    return _Binary(rel_cum, prec_cum, first_rel, n_rel)


def _graded(arrays: RankedLabels) -> _Graded:
    return _cached(arrays, "graded", lambda: _make_graded(arrays))  # type: ignore[no-any-return]


def _discounted_cumsum(gains: NDArray[Any]) -> Floats:
    n, width = gains.shape
    discount = np.log2(np.arange(2, width + 2, dtype=np.float64))
    out = np.zeros((n, width + 1), dtype=np.float64)
    np.cumsum(gains.astype(np.float64) / discount, axis=1, out=out[:, 1:])
    return out


def _make_graded(arrays: RankedLabels) -> _Graded:
    return _Graded(_discounted_cumsum(arrays.labels), _discounted_cumsum(arrays.ideal))


def _at(cum: NDArray[Any], k: int | NDArray[np.int64] | None) -> NDArray[Any]:
    """Column k of a prefix-sum array (k clipped to its depth; None = the whole list)."""
    last = cum.shape[1] - 1
    if k is None:
        return cum[:, last]
    if isinstance(k, np.ndarray):
        return np.take_along_axis(cum, np.minimum(k, last)[:, None], axis=1)[:, 0]
    return cum[:, min(k, last)]


def _ratio(num: NDArray[Any], den: NDArray[Any]) -> Floats:
    """num / den, and 0 where den is 0 (trec_eval leaves such values at their initial 0)."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.zeros(np.broadcast(num, den).shape, dtype=np.float64)
    np.divide(num, den, out=out, where=den != 0)
    return out


def _check_cutoff(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise UsageError(f"cut-off must be an integer >= 1, got {k!r}")
    return int(k)


def rel_ret_at_k(arrays: RankedLabels, k: int | None = None, rel: int | None = None) -> Floats:
    """Relevant documents among the top k (None: among all retrieved)."""
    return _at(_binary(arrays, rel).rel_cum, k).astype(np.float64)


def precision_at_k(arrays: RankedLabels, k: int, rel: int | None = None) -> Floats:
    """P@k = rel_ret@k / k; k is the divisor even when fewer than k were retrieved (trec_eval P_k)."""
    k = _check_cutoff(k)
    return rel_ret_at_k(arrays, k, rel) / k


def recall_at_k(arrays: RankedLabels, k: int, rel: int | None = None) -> Floats:
    """R@k = rel_ret@k / n_rel; 0 when n_rel = 0 (trec_eval recall_k)."""
    b = _binary(arrays, rel)
    return _ratio(_at(b.rel_cum, _check_cutoff(k)), b.n_rel)


def f1_at_k(arrays: RankedLabels, k: int, rel: int | None = None) -> Floats:
    """F1@k = 2 P@k R@k / (P@k + R@k) with P@k as above; 0 when both are 0."""
    p = precision_at_k(arrays, k, rel)
    r = recall_at_k(arrays, k, rel)
    return _ratio(2.0 * p * r, p + r)


def hit_at_k(arrays: RankedLabels, k: int, rel: int | None = None) -> Floats:
    """Hit@k = 1 when a relevant document is in the top k, else 0 (trec_eval success_k)."""
    return (rel_ret_at_k(arrays, _check_cutoff(k), rel) > 0).astype(np.float64)


def reciprocal_rank(arrays: RankedLabels, k: int | None = None, rel: int | None = None) -> Floats:
    """RR = 1 / rank of the first relevant document; 0 if none (within the top k). recip_rank."""
    first = _binary(arrays, rel).first_rel
    limit = np.iinfo(np.int64).max if k is None else _check_cutoff(k)
    return _ratio((first > 0) & (first <= limit), first)


def average_precision(arrays: RankedLabels, k: int | None = None, rel: int | None = None) -> Floats:
    """AP = sum of P@r over relevant ranks r (<= k) / n_rel; 0 when n_rel = 0 (map, map_cut_k).

    The divisor is every relevant document of the query, retrieved or not, also with a cut-off.
    """
    b = _binary(arrays, rel)
    return _ratio(_at(b.prec_cum, None if k is None else _check_cutoff(k)), b.n_rel)


def r_precision(arrays: RankedLabels, rel: int | None = None) -> Floats:
    """Rprec = rel_ret@R / R with R = n_rel; 0 when R = 0 (trec_eval Rprec)."""
    b = _binary(arrays, rel)
    return _ratio(_at(b.rel_cum, b.n_rel), b.n_rel)


def ndcg(arrays: RankedLabels, k: int | None = None) -> Floats:
    """nDCG(@k) = DCG / ideal DCG with gain = label and discount log2(rank + 1) (ndcg, ndcg_cut_k).

    The ideal ranking sorts every judged document of the query (retrieved or not) by label;
    negative labels count 0. 0 when the ideal DCG is 0 (no positive label). Not affected by
    the relevance level, as in trec_eval.
    """
    g = _graded(arrays)
    cut = None if k is None else _check_cutoff(k)
    return _ratio(_at(g.dcg_cum, cut), _at(g.idcg_cum, cut))


def aqwv_at_k(
    arrays: RankedLabels,
    k: int,
    beta: float = AQWV_BETA,
    collection_size: int | None = None,
    rel: int | None = None,
) -> Floats:
    """AQWV@k = 1 - P_miss - beta * P_FA over the top k, taken as the retrieved set.

    P_miss = 1 - rel_ret@k / n_rel (0 when n_rel = 0: nothing to miss).
    P_FA = nonrel_ret@k / (N - n_rel), non-relevant = every retrieved document that is not
    relevant (unjudged included). N = collection_size when given (the MATERIAL definition);
    otherwise N = the query's retrieved list length, i.e. the list is taken as the scored
    candidate set (the reranking variant). P_FA = 0 when N - n_rel is 0.
    """
    k = _check_cutoff(k)
    if not np.isfinite(beta) or beta < 0:
        raise UsageError(f"AQWV: beta must be a finite number >= 0, got {beta!r}")
    b = _binary(arrays, rel)
    rel_k = _at(b.rel_cum, k).astype(np.float64)
    p_miss = np.where(b.n_rel > 0, 1.0 - _ratio(rel_k, b.n_rel), 0.0)
    nonrel_k = np.minimum(arrays.n_ret, k) - rel_k
    if collection_size is None:
        negatives = arrays.n_ret - _at(b.rel_cum, None)
    else:
        if collection_size < 1:
            raise UsageError(f"AQWV: N (collection size) must be >= 1, got {collection_size!r}")
        too_small = b.n_rel >= collection_size
        if too_small.any():
            q = arrays.query_ids[int(np.argmax(too_small))]
            raise UsageError(
                f"AQWV: N={collection_size} is not larger than the relevant documents of query {q!r}"
            )
        negatives = collection_size - b.n_rel
    p_fa = _ratio(nonrel_k, negatives)
    return np.asarray(1.0 - p_miss - beta * p_fa, dtype=np.float64)


def set_precision(arrays: RankedLabels, rel: int | None = None) -> Floats:
    """SetP = rel_ret / n_ret over the whole list; 0 for an empty list (trec_eval set_P)."""
    return _ratio(rel_ret_at_k(arrays, None, rel), arrays.n_ret)


def set_recall(arrays: RankedLabels, rel: int | None = None) -> Floats:
    """SetR = rel_ret / n_rel over the whole list; 0 when n_rel = 0 (trec_eval set_recall)."""
    return _ratio(rel_ret_at_k(arrays, None, rel), _binary(arrays, rel).n_rel)


def set_f1(arrays: RankedLabels, rel: int | None = None) -> Floats:
    """SetF = 2 SetP SetR / (SetP + SetR); 0 when nothing relevant was retrieved (trec_eval set_F)."""
    p = set_precision(arrays, rel)
    r = set_recall(arrays, rel)
    return _ratio(2.0 * p * r, p + r)


def num_q(arrays: RankedLabels) -> Floats:
    """1 per scored query (summed: the number of queries, trec_eval num_q)."""
    return np.ones(arrays.n_queries, dtype=np.float64)


def num_ret(arrays: RankedLabels) -> Floats:
    """Documents retrieved (trec_eval num_ret)."""
    return arrays.n_ret.astype(np.float64)


def num_rel(arrays: RankedLabels, rel: int | None = None) -> Floats:
    """Judged relevant documents, retrieved or not (trec_eval num_rel)."""
    return _binary(arrays, rel).n_rel.astype(np.float64)


def num_rel_ret(arrays: RankedLabels, rel: int | None = None) -> Floats:
    """Relevant documents retrieved (trec_eval num_rel_ret)."""
    return rel_ret_at_k(arrays, None, rel)


# Registration: each spec adapts (arrays, cutoff, params) to one function above.
_UNIT = (0.0, 1.0)
_COUNT = (0.0, None)
_REL = {"rel": Param(int)}


def _spec(
    name: str,
    fn: Callable[[RankedLabels, int | None, Mapping[str, Any]], Floats],
    description: str,
    *,
    cutoff: str,
    value_range: tuple[float | None, float | None] = _UNIT,
    params: Mapping[str, Param] | None = None,
    aliases: tuple[str, ...] = (),
    aggregate: Aggregate = "mean",
    trec_eval: str | None = None,
) -> None:
    register(
        MeasureSpec(
            name=name,
            family="ranking",
            needs_cutoff=cutoff == "required",
            allows_cutoff=cutoff != "none",
            fn=fn,
            description=description,
            range=value_range,
            params=dict(_REL if params is None else params),
            aliases=aliases,
            aggregate=aggregate,
            input=RankedLabels,
            trec_eval=trec_eval,
        )
    )


_spec(
    "P",
    lambda a, k, p: precision_at_k(a, k, p["rel"]),  # type: ignore[arg-type]
    "precision in the top k (divided by k)",
    cutoff="required",
    aliases=("Precision",),
    trec_eval="P_{k}",
)
_spec(
    "R",
    lambda a, k, p: recall_at_k(a, k, p["rel"]),  # type: ignore[arg-type]
    "share of the relevant documents found in the top k",
    cutoff="required",
    aliases=("Recall",),
    trec_eval="recall_{k}",
)
_spec(
    "F1",
    lambda a, k, p: f1_at_k(a, k, p["rel"]),  # type: ignore[arg-type]
    "harmonic mean of P@k and R@k",
    cutoff="required",
)
_spec(
    "Hit",
    lambda a, k, p: hit_at_k(a, k, p["rel"]),  # type: ignore[arg-type]
    "1 when a relevant document is in the top k",
    cutoff="required",
    aliases=("Success",),
    trec_eval="success_{k}",
)
_spec(
    "RR",
    lambda a, k, p: reciprocal_rank(a, k, p["rel"]),
    "1 / rank of the first relevant document",
    cutoff="optional",
    aliases=("MRR",),
    trec_eval="recip_rank",
)
_spec(
    "AP",
    lambda a, k, p: average_precision(a, k, p["rel"]),
    "average precision (divided by all relevant documents)",
    cutoff="optional",
    aliases=("MAP",),
    trec_eval="map / map_cut_{k}",
)
_spec(
    "nDCG",
    lambda a, k, p: ndcg(a, k),
    "normalised DCG, gain = label, ideal from all judged documents",
    cutoff="optional",
    params={},
    aliases=("NDCG",),
    trec_eval="ndcg / ndcg_cut_{k}",
)
_spec(
    "Rprec",
    lambda a, k, p: r_precision(a, p["rel"]),
    "precision in the top R, R = number of relevant documents",
    cutoff="none",
    aliases=("RPrec",),
    trec_eval="Rprec",
)
_spec(
    "AQWV",
    lambda a, k, p: aqwv_at_k(a, k, p["beta"], p["N"], p["rel"]),  # type: ignore[arg-type]
    "1 - P_miss - beta * P_FA over the top k",
    cutoff="required",
    value_range=(None, 1.0),
    params={"beta": Param(float, AQWV_BETA), "N": Param(int), "rel": Param(int)},
)
_spec(
    "SetP",
    lambda a, k, p: set_precision(a, p["rel"]),
    "precision of the whole retrieved list",
    cutoff="none",
    trec_eval="set_P",
)
_spec(
    "SetR",
    lambda a, k, p: set_recall(a, p["rel"]),
    "recall of the whole retrieved list",
    cutoff="none",
    trec_eval="set_recall",
)
_spec(
    "SetF",
    lambda a, k, p: set_f1(a, p["rel"]),
    "F1 of the whole retrieved list",
    cutoff="none",
    trec_eval="set_F",
)
_spec(
    "NumQ",
    lambda a, k, p: num_q(a),
    "number of scored queries",
    cutoff="none",
    value_range=_COUNT,
    params={},
    aggregate="sum",
    trec_eval="num_q",
)
_spec(
    "NumRet",
    lambda a, k, p: num_ret(a),
    "documents retrieved",
    cutoff="none",
    value_range=_COUNT,
    params={},
    aggregate="sum",
    trec_eval="num_ret",
)
_spec(
    "NumRel",
    lambda a, k, p: num_rel(a, p["rel"]),
    "relevant documents judged",
    cutoff="none",
    value_range=_COUNT,
    aggregate="sum",
    trec_eval="num_rel",
)
_spec(
    "NumRelRet",
    lambda a, k, p: num_rel_ret(a, p["rel"]),
    "relevant documents retrieved",
    cutoff="none",
    value_range=_COUNT,
    aggregate="sum",
    trec_eval="num_rel_ret",
)
