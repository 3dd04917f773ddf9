"""Each missed gold item's reason, numpy over the kept arrays and pair scores (no rescoring).

Evidence mode: a gold span not covered in the top k gets the first reason that holds, in the
order of EVIDENCE_REASONS. Only split_across_chunks reads texts (splits.py), and only for the
spans the arrays leave undecided. Ids mode: a query without a relevant document in its top k is
relevant_below_k or not_retrieved.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rageval_core.diagnosis.model import (
    EVIDENCE_REASONS,
    IDS_REASONS,
    NO_GOLD,
    PASSING,
    Floats,
    Ints,
    Missed,
)
from rageval_core.evaluation.evaluate import id_labels
from rageval_core.evaluation.report import Settings
from rageval_core.metrics.arrays import NOT_IN_QRELS
from rageval_core.metrics.evidence import apply_score_cut
from rageval_core.rundata import RunData, evidence_tensor, memo, numbers_guard
from rageval_core.store import Store

Bools = NDArray[np.bool_]
#: (candidate rows, candidate span indexes) -> (is split, first rank, second rank, extra chars)
SplitCheck = Callable[[Ints, Ints], tuple[Bools, Ints, Ints, Ints]]
_NUMBERS, _BELOW, _SPLIT, _NEAR, _NONE = range(len(EVIDENCE_REASONS))


@dataclass(frozen=True, eq=False)
class EvidenceArrays:
    """A run's pair scores as the metrics read them at one (scorer, normalisation, cut, guard).

    raw[q, r, s]: the kept score of span s against the chunk at rank r+1 (after a score cut;
    NaN: no such chunk or span); scores: the same with the numbers guard applied (a refused pair
    scores 0), as coverage() reads them; refused: where the guard refuses (None: guard off).
    """

    raw: NDArray[np.float32]
    scores: NDArray[np.float32]
    refused: Bools | None
    n_ret: Ints
    n_spans: Ints
    order: Ints | None  # (n, depth) original 0-based rank of the chunk now at rank r+1

    @property
    def span_exists(self) -> Bools:
        return np.arange(self.raw.shape[2])[None, :] < self.n_spans[:, None]  # type: ignore[no-any-return]

    def hits(self, threshold: float, guarded: bool = True) -> Bools:
        """(n, depth, spans) where a chunk covers a span at threshold (float32, as coverage)."""
        values = self.scores if guarded else self.raw
        with np.errstate(invalid="ignore"):
            return values >= np.float32(threshold)  # type: ignore[no-any-return]

    def passing(self, hits: Bools, k: int) -> Bools:
        """(n,) queries whose every gold span is covered in the top k (FullCoverage@k = 1)."""
        covered = hits[:, : min(k, hits.shape[1])].any(axis=1)
        return (self.n_spans > 0) & (covered | ~self.span_exists).all(axis=1)  # type: ignore[no-any-return]


def evidence_arrays(store: Store, data: RunData, settings: Settings) -> EvidenceArrays:
    """The arrays every evidence reason reads (cached on data per what they depend on)."""

    def make() -> EvidenceArrays:
        raw = evidence_tensor(store, data, settings.scorer_key)
        guard = numbers_guard(store, data) if settings.numbers_must_match else None
        n_ret, order = data.n_ret, None
        if settings.score_threshold is not None:
            raw, n_ret, order = apply_score_cut(
                raw, n_ret, data.chunk_score, settings.score_threshold
            )
            if guard is not None:
                guard = np.take_along_axis(guard, order[:, :, None], axis=1)
        refused = None if guard is None else ~guard & ~np.isnan(raw)
        scores = raw if refused is None else np.where(refused, np.float32(0.0), raw)
        return EvidenceArrays(raw, scores, refused, n_ret, data.n_spans, order)

    key = (
        "diagnosis",
        settings.scorer_key,
        settings.score_threshold,
        settings.numbers_must_match,
    )
    return memo(data, key, make)  # type: ignore[no-any-return]


def near_miss_threshold(settings: Settings) -> float:
    """The threshold a near miss reaches: threshold - band, at least 0 (rounded to 6 places, so
    the what-if's "threshold 0.6" is the value evaluate is given)."""
    return max(0.0, round(settings.threshold - settings.near_miss_band, 6))


def evidence_reasons(
    arrays: EvidenceArrays, settings: Settings, split_check: SplitCheck | None
) -> tuple[NDArray[np.object_], Missed]:
    """(status per query, the missed spans) at s.k and s.threshold; split_check None: no span
    is checked for a split (they fall through to near_miss or not_retrieved)."""
    n, depth, _ = arrays.raw.shape
    k = min(settings.k, depth)
    exists = arrays.span_exists
    hits = arrays.hits(settings.threshold)
    covered = hits[:, :k].any(axis=1)
    q, e = np.nonzero(exists & ~covered)  # the missed spans
    m = q.size
    reason = np.full(m, _NONE, dtype=np.int64)
    rank = np.zeros(m, dtype=np.int64)
    rank2 = np.zeros(m, dtype=np.int64)
    extra = np.zeros(m, dtype=np.int64)
    open_ = np.ones(m, dtype=bool)

    if arrays.refused is not None:  # 1. a top-k chunk reaches the threshold, the guard refuses
        with np.errstate(invalid="ignore"):
            refused = (arrays.raw[q, :k, e] >= np.float32(settings.threshold)) & arrays.refused[
                q, :k, e
            ]
        found = refused.any(axis=1)
        if k:
            reason[found], rank[found] = _NUMBERS, refused.argmax(axis=1)[found] + 1
        open_ &= ~found
    below = hits[q, k:, e]  # 2. a chunk below k covers it
    found = open_ & below.any(axis=1)
    if below.shape[1]:
        reason[found], rank[found] = _BELOW, below.argmax(axis=1)[found] + k + 1
    open_ &= ~found
    candidates = np.flatnonzero(open_ & (np.minimum(arrays.n_ret[q], k) >= 2))
    if split_check is not None and candidates.size:  # 3. two top-k chunks hold its two parts
        split, first, second, chars = split_check(q[candidates], e[candidates])
        rows = candidates[split]
        reason[rows], rank[rows], rank2[rows], extra[rows] = (
            _SPLIT,
            first[split],
            second[split],
            chars[split],
        )
        open_[rows] = False
    best = _best_in_top(arrays.scores, q, e, k)  # 4. a top-k chunk within the band
    with np.errstate(invalid="ignore"):
        near = open_ & (best >= np.float32(near_miss_threshold(settings)))
    reason[near] = _NEAR
    score = np.where(reason >= _NEAR, best, np.nan)
    raw = score if arrays.refused is None else _best_in_top(arrays.raw, q, e, k)
    raw_score = np.where(reason >= _NEAR, raw, np.nan)

    status = np.full(n, PASSING, dtype=object)
    status[arrays.n_spans == 0] = NO_GOLD
    status[q] = _primary(q, reason, n, EVIDENCE_REASONS)[q]
    return status, Missed(
        q.astype(np.int64), e.astype(np.int64), reason, rank, rank2, score, extra, raw_score
    )


def _best_in_top(scores: NDArray[np.float32], q: Ints, e: Ints, k: int) -> Floats:
    """Each (query, span)'s best score among the top k chunks (NaN without a chunk)."""
    if k == 0 or q.size == 0:
        return np.full(q.size, np.nan)
    top = scores[q, :k, e]
    with np.errstate(invalid="ignore"):
        best = np.fmax.reduce(top, axis=1)
    return best.astype(np.float64)  # type: ignore[no-any-return]


def _primary(q: Ints, reason: Ints, n: int, names: tuple[str, ...]) -> NDArray[np.object_]:
    """(n,) each query's most frequent reason among its items (ties: the earlier reason)."""
    counts = np.zeros((n, len(names)), dtype=np.int64)
    np.add.at(counts, (q, reason), 1)
    return np.asarray(names, dtype=object)[counts.argmax(axis=1)]  # type: ignore[no-any-return]


@dataclass(frozen=True, eq=False)
class IdsArrays:
    """Ids-mode relevance of the queries trec_eval scores: relevant[i, r] at rank r+1."""

    rows: Ints  # their row numbers in the run
    relevant: Bools
    n_rel: Ints
    unjudged: Bools  # (m, depth) a retrieved document the qrels do not hold

    def passing(self, k: int) -> Bools:
        return (self.n_rel > 0) & self.relevant[:, :k].any(axis=1)  # type: ignore[no-any-return]


def ids_arrays(data: RunData, settings: Settings) -> IdsArrays:
    labels, rows = id_labels(data, settings)
    relevant = labels.labels >= settings.rel_level
    inside = np.arange(labels.labels.shape[1])[None, :] < labels.n_ret[:, None]
    judged = labels.judged
    unjudged = (
        inside & (judged == NOT_IN_QRELS) if judged is not None else inside & (labels.labels == 0)
    )
    return IdsArrays(rows, relevant & inside, labels.n_rel, unjudged)


def ids_reasons(
    arrays: IdsArrays, n: int, settings: Settings
) -> tuple[NDArray[np.object_], Missed, Ints]:
    """(status per query, one missed row per failing query, unjudged documents in the top k)."""
    k = min(settings.k, arrays.relevant.shape[1])
    failing = (arrays.n_rel > 0) & ~arrays.relevant[:, :k].any(axis=1)
    rows = np.flatnonzero(failing)
    below = arrays.relevant[rows, k:]
    found = below.any(axis=1)
    reason = np.where(found, 0, 1).astype(np.int64)
    first = below.argmax(axis=1) if below.shape[1] else np.zeros(rows.size, dtype=np.int64)
    rank = np.where(found, first + k + 1, 0).astype(np.int64)
    q = arrays.rows[rows]
    status = np.full(n, NO_GOLD, dtype=object)
    status[arrays.rows[arrays.n_rel > 0]] = PASSING
    status[q] = np.asarray(IDS_REASONS, dtype=object)[reason]
    unjudged = np.zeros(n, dtype=np.int64)
    unjudged[arrays.rows] = arrays.unjudged[:, :k].sum(axis=1)
    zeros = np.zeros(q.size, dtype=np.int64)
    nothing = np.full(q.size, np.nan)
    missed = Missed(q, zeros - 1, reason, rank, zeros, nothing, zeros.copy(), nothing.copy())
    return status, missed, unjudged
