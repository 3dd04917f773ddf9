"""Two stages: a reranked run against its first stage (a retriever), per gold item over the
queries both runs hold (by query id).

Evidence mode, per gold span (by its index in the query): covered anywhere in the first
stage's list (reachable), in its top k, and in the reranked run's top k. Ids mode, per document
the reranked run's qrels label relevant: its rank in each list.

lost_at_retrieval: not in the first stage's list at all; lost_at_rerank: in it, not in the
reranked top k; promoted_by_rerank: below k in the first stage, in the reranked top k; kept: in
both top k. An item in the reranked top k but in no first-stage list is none of these: counted
apart (added), it says the two runs are not two stages of one pipeline. ceiling: reachable /
all; delivered: reachable and in the reranked top k / reachable.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from rageval_core.diagnosis.model import STAGE_KINDS, Stages
from rageval_core.diagnosis.reasons import EvidenceArrays, Ints
from rageval_core.evaluate import Settings
from rageval_core.rundata import RunData
from rageval_core.formats.options import GROUP_KEY, STAGE_KEY, STAGES
from rageval_core.store import RunRecord, Store
from rageval_core.store.diagnosis import relevant_ranks

#: the rank of an item a list does not hold
ABSENT = np.iinfo(np.int64).max


def first_cover_rank(arrays: EvidenceArrays, threshold: float) -> Ints:
    """(n, spans) 1-based rank of the first chunk covering each span, ABSENT when none."""
    hits = arrays.hits(threshold)
    found = hits.any(axis=1)
    return np.where(found, hits.argmax(axis=1) + 1, ABSENT).astype(np.int64)  # type: ignore[no-any-return]


def evidence_stages(
    reranked: tuple[RunData, EvidenceArrays],
    first: tuple[RunData, EvidenceArrays],
    s: Settings,
) -> Stages:
    (data, arrays), (data1, arrays1) = reranked, first
    rank = first_cover_rank(arrays, s.threshold)
    rank1 = first_cover_rank(arrays1, s.threshold)
    where = {str(qid): i for i, qid in enumerate(data1.query_ids)}
    rows = np.flatnonzero(data.n_spans > 0)
    rows1 = np.asarray([where.get(str(data.query_ids[q]), -1) for q in rows], dtype=np.int64)
    rows, rows1 = rows[rows1 >= 0], rows1[rows1 >= 0]
    width = min(rank.shape[1], rank1.shape[1])
    spans = np.minimum(data.n_spans[rows], data1.n_spans[rows1])
    exists = np.arange(width)[None, :] < spans[:, None]
    return _stages(data1.run.name, rank[rows, :width][exists], rank1[rows1, :width][exists], s.k)


def ids_stages(
    store: Store, reranked: RunData, first: RunData, first_store: Store, s: Settings
) -> Stages:
    ranks = relevant_ranks(store, reranked.run.run_id, s.rel_level)
    ranks1 = {
        (qid, doc): rank
        for qid, doc, rank in relevant_ranks(first_store, first.run.run_id, s.rel_level)
    }
    shared = {str(q) for q in first.query_ids}
    kept = [(r, ranks1.get((qid, doc))) for qid, doc, r in ranks if str(qid) in shared]
    rank = np.asarray([ABSENT if r is None else r for r, _ in kept], dtype=np.int64)
    rank1 = np.asarray([ABSENT if r is None else r for _, r in kept], dtype=np.int64)
    return _stages(first.run.name, rank, rank1, s.k)


def _stages(first_stage: str, rank: Ints, rank1: Ints, k: int) -> Stages:
    reachable = rank1 != ABSENT
    top1 = rank1 <= k
    top = rank <= k
    kinds: dict[str, NDArray[np.bool_]] = {
        "lost_at_retrieval": ~reachable & ~top,
        "lost_at_rerank": reachable & ~top,
        "promoted_by_rerank": reachable & ~top1 & top,
        "kept": top & top1,
    }
    counts = {kind: int(np.count_nonzero(kinds[kind])) for kind in STAGE_KINDS}
    added = int(np.count_nonzero(top & ~reachable))
    total, n_reachable = int(rank.size), int(np.count_nonzero(reachable))
    delivered = int(np.count_nonzero(reachable & top))
    return Stages(
        first_stage,
        counts,
        ceiling=n_reachable / total if total else float("nan"),
        delivered=delivered / n_reachable if n_reachable else float("nan"),
        reranked=int(np.count_nonzero(top)) / total if total else float("nan"),
        added=added,
    )


def trace_first_stage(store: Store, run: RunRecord) -> RunRecord | None:
    """The retriever stage stored beside a reranker stage of the same OpenInference export
    (NAME and NAME@reranker share their trace group); None for any other run."""
    group = run.settings.get(GROUP_KEY)
    if run.settings.get(STAGE_KEY) != STAGES[1] or group is None:
        return None
    return next(
        (
            r
            for r in store.runs()
            if r.settings.get(GROUP_KEY) == group and r.settings.get(STAGE_KEY) == STAGES[0]
        ),
        None,
    )
