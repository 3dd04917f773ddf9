"""Dense (queries x ranks) relevance arrays that every ranking metric is computed from.

Two builders fill the same RankedLabels: one from Query objects (readers, tests) and one from
flat numpy rows (the store feeds it straight from DuckDB). Query selection follows trec_eval:
run queries without qrels are skipped; judged queries absent from the run are skipped unless
``complete`` (trec_eval -c), and then score 0 on every measure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rageval_core.errors import UsageError
from rageval_core.model import Query


@dataclass(frozen=True, eq=False)
class RankedLabels:
    """Relevance labels of every selected query's ranking, as dense numpy arrays.

    labels[q, r] is the qrels label of the document at rank r+1 of query q: 0 when that document
    is unjudged, when the list is shorter than r+1, and for negative labels (trec_eval reads a
    negative label as "in the pool but not judged": never relevant, gain 0).
    ideal[q, :] holds every judged label of query q (retrieved or not), sorted descending,
    negatives clipped to 0 and padded with 0: the best possible ranking, for nDCG's ideal DCG.
    n_rel counts the judged documents with label >= rel_level. Labels are int32 or float64 as
    read; binary labels built from a mask (ranked_labels_from_relevant) are int8.
    judged[q, r] tells what the qrels say of the document at rank r+1 (the measures that read
    unjudged documents apart from non-relevant ones: Bpref, Judged@k, judged_only): JUDGED (a
    label >= 0), POOLED (a negative label: in the qrels, judged by nobody, as trec_eval reads
    it) or NOT_IN_QRELS (also past the end of the list); None when the builder did not know.
    n_judged counts the query's qrels lines with a label >= 0 (retrieved or not); None likewise.
    eq=False keeps identity hashing, so derived arrays can be cached per instance.
    """

    query_ids: tuple[str, ...]
    labels: NDArray[np.integer[Any]] | NDArray[np.float64]  # (n_queries, depth)
    n_ret: NDArray[np.int64]  # (n_queries,) length of each ranked list
    n_rel: NDArray[np.int64]  # (n_queries,) judged docs with label >= rel_level
    ideal: NDArray[np.integer[Any]] | NDArray[np.float64]  # (n_queries, max judged per query)
    rel_level: int = 1
    judged: NDArray[np.int8] | None = None  # (n_queries, depth): JUDGED, POOLED or NOT_IN_QRELS
    n_judged: NDArray[np.int64] | None = None  # (n_queries,) qrels lines with a label >= 0

    def __post_init__(self) -> None:
        n = len(self.query_ids)
        if self.labels.ndim != 2 or self.ideal.ndim != 2:
            raise ValueError("labels and ideal must be 2-D (queries x ranks)")
        if self.labels.shape[0] != n or self.ideal.shape[0] != n:
            raise ValueError("labels and ideal need one row per query id")
        if self.n_ret.shape != (n,) or self.n_rel.shape != (n,):
            raise ValueError("n_ret and n_rel need one value per query id")
        if self.judged is not None and self.judged.shape != self.labels.shape:
            raise ValueError("judged must have the labels' shape")
        if self.n_judged is not None and self.n_judged.shape != (n,):
            raise ValueError("n_judged needs one value per query id")
        check_rel_level(self.rel_level)

    def judgements(self, measure: str) -> tuple[NDArray[np.int8], NDArray[np.int64]]:
        """(judged, n_judged), or a UsageError naming the measure when they are not known."""
        if self.judged is None or self.n_judged is None:
            raise UsageError(
                f"{measure} needs to know which documents are judged: these labels do not say"
            )
        return self.judged, self.n_judged

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def depth(self) -> int:
        """The longest ranked list (the labels' width)."""
        return int(self.labels.shape[1])


#: values of RankedLabels.judged
NOT_IN_QRELS, POOLED, JUDGED = 0, -1, 1


@dataclass(frozen=True, slots=True)
class QuerySelection:
    """Which queries trec_eval's rules left out (or, with complete, scored as empty rankings)."""

    n_skipped_no_qrels: int  # run queries without any qrels: never scored
    n_missing_from_run: int  # judged queries absent from the run: scored 0 only when complete
    complete: bool


def count_dtype(limit: int) -> type[np.signedinteger[Any]]:
    """The smallest signed integer type that holds every count 0..limit (fast to add up)."""
    for dtype in (np.int8, np.int16, np.int32):
        if limit <= np.iinfo(dtype).max:
            return dtype
    return np.int64


def check_rel_level(rel_level: int) -> None:
    """Reject relevance levels below 1: unjudged documents carry label 0 in the arrays."""
    if isinstance(rel_level, bool) or not isinstance(rel_level, (int, np.integer)) or rel_level < 1:
        raise UsageError(f"relevance level must be an integer >= 1, got {rel_level!r}")


def ranked_labels_from_queries(
    queries: Iterable[Query], rel_level: int = 1, complete: bool = False
) -> tuple[RankedLabels, QuerySelection]:
    """Select queries as trec_eval does and build their RankedLabels (query order is kept).

    Query.retrieved is already in rank order. A document repeated within one ranking counts
    only at its first rank (later copies get label 0), so recall can never exceed 1; the TREC
    reader rejects such runs outright, as trec_eval does.
    """
    check_rel_level(rel_level)
    query_ids: list[str] = []
    seen_ids: set[str] = set()
    ret_query: list[int] = []
    ret_label: list[float] = []
    ret_rank: list[int] = []
    ret_judged: list[int] = []
    judged_query: list[int] = []
    judged_label: list[float] = []
    skipped = missing = 0
    for q in queries:
        if q.relevance is None:
            skipped += 1
            continue
        retrieved = q.retrieved
        if retrieved is None:
            missing += 1
            if not complete:
                continue
            retrieved = ()
        if q.query_id in seen_ids:
            raise UsageError(f"query id {q.query_id!r} appears twice")
        seen_ids.add(q.query_id)
        index = len(query_ids)
        query_ids.append(q.query_id)
        relevance = q.relevance
        docs_seen: set[str] = set()
        for rank, chunk in enumerate(retrieved, start=1):
            repeated = chunk.doc_id in docs_seen
            docs_seen.add(chunk.doc_id)
            ret_query.append(index)
            ret_rank.append(rank)
            label = None if repeated else relevance.get(chunk.doc_id)
            ret_label.append(0 if label is None else label)
            ret_judged.append(NOT_IN_QRELS if label is None else JUDGED if label >= 0 else POOLED)
        judged_query.extend([index] * len(relevance))
        judged_label.extend(relevance.values())
    # int32 labels unless a grade is fractional (0.3): integer labels compute as trec_eval's
    fractional = any(type(label) is not int for label in judged_label)
    label_type = np.float64 if fractional else np.int32
    arrays = ranked_labels_from_rows(
        query_ids,
        np.asarray(ret_query, dtype=np.int64),
        np.asarray(ret_rank, dtype=np.int64),
        np.asarray(ret_label, dtype=label_type),
        np.asarray(judged_query, dtype=np.int64),
        np.asarray(judged_label, dtype=label_type),
        rel_level=rel_level,
        ret_judged=np.asarray(ret_judged, dtype=np.int8),
    )
    return arrays, QuerySelection(skipped, missing, complete)


def ranked_labels_from_rows(
    query_ids: Sequence[str],
    ret_query: ArrayLike,
    ret_rank: ArrayLike,
    ret_label: ArrayLike,
    judged_query: ArrayLike,
    judged_label: ArrayLike,
    rel_level: int = 1,
    ret_judged: ArrayLike | None = None,
) -> RankedLabels:
    """Build RankedLabels from flat rows, e.g. straight from a DuckDB result.

    Retrieved rows: ret_query (index into query_ids), ret_rank (1-based, unique per query) and
    ret_label (0 or any value for unjudged); rows may be given only for judged documents plus
    the last rank of each list, since n_ret is the highest rank seen. Judged rows: judged_query
    and judged_label, one per qrels line of the selected queries. Negative labels become 0.
    ret_judged (JUDGED, POOLED or NOT_IN_QRELS per retrieved row) fills RankedLabels.judged;
    without it judged stays None.
    """
    check_rel_level(rel_level)
    n = len(query_ids)
    rq = np.asarray(ret_query, dtype=np.int64)
    rr = np.asarray(ret_rank, dtype=np.int64)
    rl = np.asarray(ret_label)
    jq = np.asarray(judged_query, dtype=np.int64)
    jl = np.asarray(judged_label)
    if not (rq.shape == rr.shape == rl.shape) or rq.ndim != 1:
        raise ValueError("ret_query, ret_rank and ret_label must be 1-D and equally long")
    if jq.shape != jl.shape or jq.ndim != 1:
        raise ValueError("judged_query and judged_label must be 1-D and equally long")
    if rq.size and (rq.min() < 0 or rq.max() >= n):
        raise ValueError("ret_query holds an index outside query_ids")
    if jq.size and (jq.min() < 0 or jq.max() >= n):
        raise ValueError("judged_query holds an index outside query_ids")
    if rr.size and rr.min() < 1:
        raise ValueError("ranks are 1-based")
    dtype = np.float64 if np.issubdtype(np.result_type(rl, jl), np.floating) else np.int32

    n_ret = np.zeros(n, dtype=np.int64)
    np.maximum.at(n_ret, rq, rr)
    depth = int(n_ret.max()) if n else 0
    labels = np.zeros((n, depth), dtype=dtype)
    labels[rq, rr - 1] = np.maximum(rl, 0)

    counts = np.bincount(jq, minlength=n) if n else np.zeros(0, dtype=np.int64)
    width = int(counts.max()) if counts.size else 0
    ideal = np.zeros((n, width), dtype=dtype)
    if jq.size:
        gains = np.maximum(jl, 0)
        starts = np.cumsum(counts) - counts
        rows, ordered = _by_query_then_gain(jq, gains, counts)
        ideal[rows, np.arange(rows.size) - starts[rows]] = ordered
    n_rel = np.bincount(jq, weights=(jl >= rel_level), minlength=n).astype(np.int64)
    judged = None
    if ret_judged is not None:
        rj = np.asarray(ret_judged, dtype=np.int8)
        if rj.shape != rq.shape:
            raise ValueError("ret_judged needs one value per retrieved row")
        judged = np.zeros((n, depth), dtype=np.int8)
        judged[rq, rr - 1] = rj
    return RankedLabels(
        query_ids=tuple(query_ids),
        labels=labels,
        n_ret=n_ret,
        n_rel=n_rel,
        ideal=ideal,
        rel_level=int(rel_level),
        judged=judged,
        n_judged=np.bincount(jq, weights=(jl >= 0), minlength=n).astype(np.int64),
    )


def _by_query_then_gain(
    query: NDArray[np.int64], gains: NDArray[Any], counts: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[Any]]:
    """(query, gain) pairs ordered by query, then gain descending; counts = pairs per query.

    Integer gains are sorted as one int64 key, query * span - gain (span above every gain): a
    plain sort, faster than the two-key lexsort that float gains (or too wide a key) take."""
    span = int(gains.max()) + 1 if np.issubdtype(gains.dtype, np.integer) else 0
    if span > 0 and int(query.max()) < (1 << 62) // span:
        key = query * span - gains
        key.sort()
        rows = np.repeat(np.arange(counts.size), counts)
        key -= rows * span
        return rows, (-key).astype(gains.dtype)
    order = np.lexsort((-gains, query))
    return query[order], gains[order]


def ranked_labels_from_relevant(
    query_ids: Sequence[str],
    relevant: NDArray[np.bool_],
    n_ret: NDArray[np.int64],
    n_rel: NDArray[np.int64] | None = None,
) -> RankedLabels:
    """Binary RankedLabels (label 1 = relevant) from a rank-major mask, relevant[rank-1, query].

    n_rel defaults to the relevant documents in the mask: every relevant document was
    retrieved, as when the qrels are derived from the run itself; ideal rows are then n_rel
    1s (capped at the mask's depth). Every retrieved document counts as judged (the mask
    judged it), so n_judged = n_ret. labels and ideal are (queries x ranks) views of
    rank-major arrays, the layout in which the ranking metrics read one rank at a time.
    """
    relevant = np.ascontiguousarray(relevant, dtype=np.bool_)
    if relevant.ndim != 2 or relevant.shape[1] != len(query_ids):
        raise ValueError("relevant must be (ranks x queries), one column per query id")
    depth = relevant.shape[0]
    small = count_dtype(depth)
    if n_rel is None:
        n_rel = relevant.sum(axis=0, dtype=small).astype(np.int64)
    capped = np.minimum(n_rel, depth).astype(small)
    ideal = np.empty(relevant.shape, dtype=np.int8)
    np.less(np.arange(depth, dtype=small)[:, None], capped[None, :], out=ideal, casting="unsafe")
    n_ret = np.asarray(n_ret, dtype=np.int64)
    return RankedLabels(
        query_ids=tuple(query_ids),
        labels=relevant.astype(np.int8).T,
        n_ret=n_ret,
        n_rel=np.asarray(n_rel, dtype=np.int64),
        ideal=ideal.T,
        rel_level=1,
        judged=(np.arange(depth)[None, :] < n_ret[:, None]).astype(np.int8),
        n_judged=n_ret,
    )


def judged_only(arrays: RankedLabels) -> RankedLabels:
    """arrays with every document that is not judged (label >= 0) removed from each ranking,
    the ones below moving up (trec_eval -J). The qrels side (n_rel, ideal) is unchanged."""
    judged, _ = arrays.judgements("judged-only evaluation")
    keep = judged == JUDGED  # False past the end of a list too
    n_ret = keep.sum(axis=1).astype(np.int64)
    if np.array_equal(n_ret, arrays.n_ret):
        return arrays  # every retrieved document is judged
    order = np.argsort(~keep, axis=1, kind="stable")  # kept ranks first, in their order
    depth = int(n_ret.max()) if n_ret.size else 0
    order = order[:, :depth]
    inside = np.arange(depth)[None, :] < n_ret[:, None]
    labels = np.where(inside, np.take_along_axis(arrays.labels, order, axis=1), 0)
    return dataclasses.replace(
        arrays,
        labels=labels.astype(arrays.labels.dtype, copy=False),
        n_ret=n_ret,
        judged=np.where(inside, JUDGED, NOT_IN_QRELS).astype(np.int8),
    )
