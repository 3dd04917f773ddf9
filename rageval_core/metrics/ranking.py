"""Ranking metrics as trec_eval computes them, vectorised over all queries (docs/metrics.md).

Every function takes a RankedLabels and returns one float64 value per query. A relevant
document is one whose label is >= rel (default: the arrays' rel_level). Ranks past the end of
a list count as non-relevant, as in trec_eval. Zero denominators give 0, as in trec_eval,
except where a docstring says otherwise. The sums the metrics divide (PrefixSums) are made
once per (arrays, rel) and cut-off and cached, so a new k costs a lookup or one bincount.
Layout: counts and masks are rank-major (ranks x queries), so a cut-off is one contiguous row
and a running count adds rank rows; float sums (AP, DCG) add only the relevant (nonzero)
cells, rank after rank, so they round exactly as trec_eval's loop over the ranking does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rageval_core.errors import UsageError
from rageval_core.metrics.arrays import (
    JUDGED,
    NOT_IN_QRELS,
    RankedLabels,
    check_rel_level,
    count_dtype,
)
from rageval_core.metrics.registry import Aggregate, MeasureSpec, Param, register

Floats = NDArray[np.float64]

#: AQWV's default cost of a false alarm relative to a miss (IARPA MATERIAL).
AQWV_BETA = 40.0


#: Counts are summed rank after rank when there are at least this many queries per rank (many
#: short lists): numpy's cumsum walks each list separately, which is slow for short lists.
_QUERIES_PER_RANK = 16

Counts = NDArray[np.signedinteger[Any]]


def _running_count(mask: NDArray[np.bool_]) -> Counts:
    """True values within the top k of a rank-major (depth, n) mask: (depth+1, n), row 0 = 0."""
    depth, n = mask.shape
    out = np.empty((depth + 1, n), dtype=count_dtype(depth))
    out[0] = 0
    if n >= _QUERIES_PER_RANK * depth:
        for r in range(depth):
            np.add(out[r], mask[r], out=out[r + 1])
    else:
        np.cumsum(mask, axis=0, dtype=out.dtype, out=out[1:])
    return out


@dataclass(frozen=True, eq=False)
class _Entries:
    """The True cells of a C-contiguous rank-major (ranks, queries) mask, rank after rank."""

    cells: NDArray[np.int64]  # flat index into the mask: rank * n_queries + query
    rank: NDArray[np.int64]  # 0-based
    query: NDArray[np.int64]
    offsets: NDArray[np.int64]  # offsets[k]: how many cells lie within the top k ranks
    n_queries: int

    @classmethod
    def of(cls, mask: NDArray[np.bool_]) -> _Entries:
        depth, n = mask.shape
        cells = np.flatnonzero(mask)  # sorted, so each rank's cells are one run
        offsets = np.searchsorted(cells, np.arange(depth + 1, dtype=np.int64) * n)
        rank = np.repeat(np.arange(depth, dtype=np.int64), np.diff(offsets))
        query = np.multiply(rank, n)
        np.subtract(cells, query, out=query)
        return cls(cells, rank, query, offsets, n)

    def column_sum(self, terms: Floats, k: int) -> Floats:
        """Per query, the terms of its cells within the top k, added rank after rank.

        bincount adds in input order, so each query's terms are added in rank order from 0:
        the same float64 roundings as trec_eval's loop over the ranking. Cells left out hold
        0, which adds nothing.
        """
        m = int(self.offsets[min(k, self.offsets.size - 1)])
        sums = np.bincount(self.query[:m], weights=terms[:m], minlength=self.n_queries)
        return sums.astype(np.float64, copy=False)  # float64 already: weights were given


@lru_cache(maxsize=64)
def _discount(width: int) -> Floats:
    """log2(rank + 1) for ranks 1..width (read-only, shared)."""
    out = np.log2(np.arange(2, width + 2, dtype=np.float64))
    out.flags.writeable = False
    return out


@lru_cache(maxsize=64)
def _ideal_binary_dcg(width: int) -> Floats:
    """Ideal DCG of m relevant documents of gain 1, m = 0..width: running sum of 1/log2(r+1)."""
    out = np.zeros(width + 1, dtype=np.float64)
    np.cumsum(1.0 / _discount(width), out=out[1:])
    out.flags.writeable = False
    return out


def _cut(k: int | None, last: int) -> int:
    return last if k is None else min(k, last)


def _frozen(values: NDArray[Any]) -> NDArray[Any]:
    """Mark a cached array read-only: callers share it, so nobody may write into it."""
    values.flags.writeable = False
    return values


class _Gains:
    """Discounted gains of one RankedLabels per cut-off (independent of the relevance level).

    Holds the label arrays, never the RankedLabels itself: the cache is keyed by it weakly.
    """

    def __init__(self, labels: NDArray[Any], ideal: NDArray[Any]) -> None:
        self.labels = labels
        self.ideal = ideal
        self.depth = int(labels.shape[1])
        self.width = int(ideal.shape[1])
        self._dcg: dict[int, Floats] = {}
        self._idcg: dict[int, Floats] = {}

    @cached_property
    def whole(self) -> bool:
        """Integer labels, none negative: a label != 0 is a label >= 1 (level 1 shares nonzero)."""
        labels = self.labels
        return bool(np.issubdtype(labels.dtype, np.integer) and labels.min(initial=0) >= 0)

    @cached_property
    def nonzero(self) -> NDArray[np.bool_]:
        """(depth, queries), rank-major: the label at rank r+1 is not 0."""
        return _frozen(np.not_equal(self.labels.T, 0, order="C"))

    @cached_property
    def entries(self) -> _Entries:
        return _Entries.of(self.nonzero)

    @cached_property
    def _terms(self) -> Floats:
        """label / log2(rank + 1) per entry, as trec_eval divides them."""
        e = self.entries
        discount = _discount(self.depth)
        if self.whole and self.labels.max(initial=0) <= 1:
            return (1.0 / discount)[e.rank]  # every gain is 1: the same quotients, looked up
        if self.labels.flags.f_contiguous:  # rank-major storage: the cells index it directly
            gains = self.labels.T.reshape(-1)[e.cells]
        else:
            gains = self.labels[e.query, e.rank]
        return gains / discount[e.rank]

    def dcg(self, k: int | None) -> Floats:
        col = _cut(k, self.depth)
        if col not in self._dcg:
            self._dcg[col] = _frozen(self.entries.column_sum(self._terms, col))
        return self._dcg[col]

    @cached_property
    def _binary_ideal(self) -> NDArray[np.int64] | None:
        """Per query, how many 1s its ideal row holds when every value is 0 or 1; else None.

        Ideal rows are sorted (descending) by contract, so a 0/1 row is its 1s, then 0s: its
        ideal DCG at k is a table lookup (the running sum of 1/log2(r+1) up to min(ones, k)).
        """
        ideal = self.ideal
        if not np.issubdtype(ideal.dtype, np.integer):
            return None
        if ideal.min(initial=0) < 0 or ideal.max(initial=0) > 1:
            return None
        return ideal.sum(axis=1, dtype=count_dtype(self.width)).astype(np.int64)

    @cached_property
    def _ideal_terms(self) -> tuple[_Entries, Floats]:
        """Graded ideal rows: their entries and label / log2(rank + 1) per entry."""
        ideal = self.ideal
        entries = _Entries.of(np.not_equal(ideal.T, 0, order="C"))
        return entries, ideal[entries.query, entries.rank] / _discount(self.width)[entries.rank]

    def idcg(self, k: int | None) -> Floats:
        col = _cut(k, self.width)
        if col not in self._idcg:
            ones = self._binary_ideal
            if ones is None:
                entries, terms = self._ideal_terms
                self._idcg[col] = _frozen(entries.column_sum(terms, col))
            else:
                self._idcg[col] = _frozen(_ideal_binary_dcg(self.width)[np.minimum(ones, col)])
        return self._idcg[col]


class PrefixSums:
    """The sums every ranking metric reads, for one RankedLabels at one relevance level.

    Cut-off k means the top k ranks (clipped to the depth; None: the whole list). Each part is
    made on first use and each cut-off's column once, so a new k costs a lookup or one
    bincount. Float sums add a query's terms rank after rank, rounded exactly as trec_eval
    rounds them. A relevant document is one whose label is >= level; dcg and idcg use the
    labels as gains and ignore the level. Get one through prefix_sums(), which caches it per
    (RankedLabels, level), so every metric and curve of the same labels shares it; the arrays
    it returns are shared, so they are read-only.
    """

    def __init__(self, arrays: RankedLabels, level: int, gains: _Gains) -> None:
        # the arrays' fields, not the RankedLabels: the cache is keyed by it weakly
        self.level = level
        self.depth = arrays.depth
        self._labels = arrays.labels
        self._ideal = arrays.ideal
        self._n_rel = arrays.n_rel if level == arrays.rel_level else None
        self._gains = gains
        self._prec: dict[int, Floats] = {}

    @cached_property
    def relevant(self) -> NDArray[np.bool_]:
        """(depth, queries), rank-major: the document at rank r+1 is relevant."""
        if self.level == 1 and self._gains.whole:
            return self._gains.nonzero
        return _frozen(np.greater_equal(self._labels.T, self.level, order="C"))

    @cached_property
    def _rel_cum(self) -> Counts:
        return _frozen(_running_count(self.relevant))

    @property
    def rel_cum(self) -> Counts:
        """(queries, depth+1): relevant documents within the top k, k = 0..depth.

        A view of rank-major storage in the smallest integer dtype holding the depth: convert
        before arithmetic that could exceed it.
        """
        return self._rel_cum.T

    def rel_ret(self, k: int | NDArray[np.integer[Any]] | None) -> Counts:
        """(queries,): relevant documents within the top k (k: one cut-off or one per query)."""
        cum = self._rel_cum
        if isinstance(k, np.ndarray):
            return cum.reshape(-1)[np.minimum(k, self.depth) * cum.shape[1] + np.arange(k.size)]
        return cum[_cut(k, self.depth)]

    @cached_property
    def n_rel(self) -> NDArray[np.int64]:
        """(queries,): judged relevant documents, retrieved or not."""
        if self._n_rel is not None:
            return self._n_rel
        # the ideal row holds every judged label, so any level can be counted from it
        return (self._ideal >= self.level).sum(axis=1).astype(np.int64)

    @cached_property
    def first_rel(self) -> NDArray[np.int64]:
        """(queries,): rank of the first relevant document, 0 if none."""
        cum = self._rel_cum
        # the running count is still 0 at exactly the ranks before the first relevant one
        before = (cum[1:] == 0).sum(axis=0, dtype=cum.dtype)
        return _frozen(np.where(cum[-1] > 0, before.astype(np.int64) + 1, 0))

    @cached_property
    def _hits(self) -> _Entries:
        if self.relevant is self._gains.nonzero:
            return self._gains.entries
        return _Entries.of(self.relevant)

    @cached_property
    def _precision_terms(self) -> Floats:
        """P@r at each relevant rank r, per entry of _hits."""
        hits = self._hits
        cum = self._rel_cum  # (depth+1, n): row r+1 holds a cell at rank r, n entries later
        found = cum.reshape(-1)[cum.shape[1] :][hits.cells]  # relevant within the top r
        terms = hits.rank.astype(np.float64)
        terms += 1.0
        return np.divide(found, terms, out=terms)

    def prec_sum(self, k: int | None) -> Floats:
        """(queries,): sum of P@r over the relevant ranks r <= k (AP's numerator)."""
        col = _cut(k, self.depth)
        if col not in self._prec:
            self._prec[col] = _frozen(self._hits.column_sum(self._precision_terms, col))
        return self._prec[col]

    def dcg(self, k: int | None) -> Floats:
        """(queries,): DCG of the top k, gain = label, discount log2(rank + 1)."""
        return self._gains.dcg(k)

    def idcg(self, k: int | None) -> Floats:
        """(queries,): ideal DCG at cut-off k (None: every judged document)."""
        return self._gains.idcg(k)


_CACHE: WeakKeyDictionary[RankedLabels, dict[Any, Any]] = WeakKeyDictionary()


def prefix_sums(arrays: RankedLabels, rel: int | None = None) -> PrefixSums:
    """The running sums of arrays at relevance level rel (default: arrays.rel_level), cached."""
    level = arrays.rel_level if rel is None else rel
    check_rel_level(level)
    store = _CACHE.setdefault(arrays, {})
    if level not in store:
        if "gains" not in store:
            store["gains"] = _Gains(arrays.labels, arrays.ideal)
        store[level] = PrefixSums(arrays, level, store["gains"])
    return store[level]


def ratio(num: ArrayLike, den: ArrayLike) -> Floats:
    """num / den, and 0 where den is 0 (trec_eval leaves such values at their initial 0)."""
    num, den = np.asarray(num), np.asarray(den)
    out = np.zeros(np.broadcast_shapes(num.shape, den.shape), dtype=np.float64)
    # divide casts integer inputs to float64 a block at a time: no float copies of them
    np.divide(num, den, out=out, where=den != 0)
    return out


def _check_cutoff(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise UsageError(f"cut-off must be an integer >= 1, got {k!r}")
    return int(k)


def rel_ret_at_k(arrays: RankedLabels, k: int | None = None, rel: int | None = None) -> Floats:
    """Relevant documents among the top k (None: among all retrieved)."""
    return prefix_sums(arrays, rel).rel_ret(k).astype(np.float64)


def precision_at_k(arrays: RankedLabels, k: int, rel: int | None = None) -> Floats:
    """P@k = rel_ret@k / k; k is the divisor even when fewer than k were retrieved (trec_eval P_k)."""
    k = _check_cutoff(k)
    values = rel_ret_at_k(arrays, k, rel)
    values /= k
    return values


def recall_at_k(arrays: RankedLabels, k: int, rel: int | None = None) -> Floats:
    """R@k = rel_ret@k / n_rel; 0 when n_rel = 0 (trec_eval recall_k)."""
    b = prefix_sums(arrays, rel)
    return ratio(b.rel_ret(_check_cutoff(k)), b.n_rel)


def f1_at_k(arrays: RankedLabels, k: int, rel: int | None = None) -> Floats:
    """F1@k = 2 P@k R@k / (P@k + R@k) with P@k as above; 0 when both are 0."""
    p = precision_at_k(arrays, k, rel)
    r = recall_at_k(arrays, k, rel)
    return ratio(2.0 * p * r, p + r)


def hit_at_k(arrays: RankedLabels, k: int, rel: int | None = None) -> Floats:
    """Hit@k = 1 when a relevant document is in the top k, else 0 (trec_eval success_k)."""
    return (prefix_sums(arrays, rel).rel_ret(_check_cutoff(k)) > 0).astype(np.float64)


def reciprocal_rank(arrays: RankedLabels, k: int | None = None, rel: int | None = None) -> Floats:
    """RR = 1 / rank of the first relevant document; 0 if none (within the top k). recip_rank."""
    first = prefix_sums(arrays, rel).first_rel
    limit = np.iinfo(np.int64).max if k is None else _check_cutoff(k)
    return ratio((first > 0) & (first <= limit), first)


def average_precision(arrays: RankedLabels, k: int | None = None, rel: int | None = None) -> Floats:
    """AP = sum of P@r over relevant ranks r (<= k) / n_rel; 0 when n_rel = 0 (map, map_cut_k).

    The divisor is every relevant document of the query, retrieved or not, also with a cut-off.
    """
    b = prefix_sums(arrays, rel)
    return ratio(b.prec_sum(None if k is None else _check_cutoff(k)), b.n_rel)


def r_precision(arrays: RankedLabels, rel: int | None = None) -> Floats:
    """Rprec = rel_ret@R / R with R = n_rel; 0 when R = 0 (trec_eval Rprec)."""
    b = prefix_sums(arrays, rel)
    return ratio(b.rel_ret(b.n_rel), b.n_rel)


def ndcg(arrays: RankedLabels, k: int | None = None) -> Floats:
    """nDCG(@k) = DCG / ideal DCG with gain = label and discount log2(rank + 1) (ndcg, ndcg_cut_k).

    The ideal ranking sorts every judged document of the query (retrieved or not) by label;
    negative labels count 0. 0 when the ideal DCG is 0 (no positive label). Not affected by
    the relevance level, as in trec_eval.
    """
    sums = prefix_sums(arrays)
    cut = None if k is None else _check_cutoff(k)
    return ratio(sums.dcg(cut), sums.idcg(cut))


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
    b = prefix_sums(arrays, rel)
    rel_k = b.rel_ret(k).astype(np.float64)
    p_miss = np.where(b.n_rel > 0, 1.0 - ratio(rel_k, b.n_rel), 0.0)
    nonrel_k = np.minimum(arrays.n_ret, k) - rel_k
    if collection_size is None:
        negatives = arrays.n_ret - b.rel_ret(None)
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
    p_fa = ratio(nonrel_k, negatives)
    return np.asarray(1.0 - p_miss - beta * p_fa, dtype=np.float64)


def bpref(arrays: RankedLabels, rel: int | None = None) -> Floats:
    """Bpref = (1/R) sum over retrieved relevant r of (1 - min(n_r, R) / min(N, R)) (trec_eval bpref).

    R = judged relevant documents (n_rel), N = judged non-relevant ones (a label >= 0 and below
    the level), n_r = judged non-relevant documents ranked above r. Unjudged documents (and
    negative labels) are skipped. A term is 1 when n_r = 0 (so min(N, R) = 0 never divides);
    0 when R = 0.
    """
    judged, n_judged = arrays.judgements("Bpref")
    b = prefix_sums(arrays, rel)
    store = _CACHE.setdefault(arrays, {})
    key = ("bpref", b.level)
    if key not in store:
        nonrel = np.logical_and(judged.T == JUDGED, ~b.relevant)  # rank-major, as b.relevant
        above = _running_count(nonrel)  # row r: judged non-relevant within the top r
        hits = b._hits
        n_r = above.reshape(-1)[hits.cells].astype(np.float64)  # row r = cell's rank, same column
        big_r = b.n_rel[hits.query].astype(np.float64)
        big_n = (n_judged - b.n_rel)[hits.query].astype(np.float64)
        terms = np.ones(hits.cells.size, dtype=np.float64)
        some = n_r > 0
        terms[some] = 1.0 - np.minimum(n_r[some], big_r[some]) / np.minimum(
            big_n[some], big_r[some]
        )
        store[key] = _frozen(ratio(hits.column_sum(terms, b.depth), b.n_rel))
    return store[key]  # type: ignore[no-any-return]


def judged_at_k(arrays: RankedLabels, k: int) -> Floats:
    """Judged@k = documents of the top k that are in the qrels / min(k, n_ret); 0 for an empty
    list (ir_measures Judged), so 0 for a judged query absent from the run, which ir_measures
    scores with or without -c (MeasureSpec.every_judged_query). Any label counts as judged,
    negative ones too."""
    k = _check_cutoff(k)
    judged, _ = arrays.judgements("Judged")
    top = judged[:, : min(k, arrays.depth)] != NOT_IN_QRELS
    return ratio(top.sum(axis=1), np.minimum(arrays.n_ret, k))


def set_precision(arrays: RankedLabels, rel: int | None = None) -> Floats:
    """SetP = rel_ret / n_ret over the whole list; 0 for an empty list (trec_eval set_P)."""
    return ratio(rel_ret_at_k(arrays, None, rel), arrays.n_ret)


def set_recall(arrays: RankedLabels, rel: int | None = None) -> Floats:
    """SetR = rel_ret / n_rel over the whole list; 0 when n_rel = 0 (trec_eval set_recall)."""
    return ratio(rel_ret_at_k(arrays, None, rel), prefix_sums(arrays, rel).n_rel)


def set_f1(arrays: RankedLabels, rel: int | None = None) -> Floats:
    """SetF = 2 SetP SetR / (SetP + SetR); 0 when nothing relevant was retrieved (trec_eval set_F)."""
    p = set_precision(arrays, rel)
    r = set_recall(arrays, rel)
    return ratio(2.0 * p * r, p + r)


def num_q(arrays: RankedLabels) -> Floats:
    """1 per scored query (summed: the number of queries, trec_eval num_q)."""
    return np.ones(arrays.n_queries, dtype=np.float64)


def num_ret(arrays: RankedLabels) -> Floats:
    """Documents retrieved (trec_eval num_ret)."""
    return arrays.n_ret.astype(np.float64)


def num_rel(arrays: RankedLabels, rel: int | None = None) -> Floats:
    """Judged relevant documents, retrieved or not (trec_eval num_rel)."""
    return prefix_sums(arrays, rel).n_rel.astype(np.float64)


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
    every_judged_query: bool = False,
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
            every_judged_query=every_judged_query,
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
    "Bpref",
    lambda a, k, p: bpref(a, p["rel"]),
    "binary preference: how often judged relevant documents rank above judged non-relevant ones",
    cutoff="none",
    aliases=("bpref",),
    trec_eval="bpref",
)
_spec(
    "Judged",
    lambda a, k, p: judged_at_k(a, k),  # type: ignore[arg-type]
    "share of the top k that is in the qrels (judged)",
    cutoff="required",
    params={},
    every_judged_query=True,  # ir_measures: 0 for a judged query the run lacks
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
