"""The labelling queue: the top-k chunks no imported qrels judge, across queries, in the order a
label changes the metrics most (docs/labelling.md).

Order: with several runs (Compare's), the documents on which they differ first (in the top k of
one run and not of another: a label there moves their difference); then higher ranks first (a
label at rank 1 weighs more in nDCG, RR and AP than one at rank 10); then the query's order in
the first run, then the runs' order. A document retrieved twice for one query (by two runs, or
at two ranks) is one item, at its best rank. order_queue is pure; queue() reads the candidates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rageval_core.metrics.arrays import JUDGED
from rageval_core.rundata import RunData
from rageval_core.store import Store
from rageval_core.store.reads import top_doc_ids

#: (qidx, query_id, rank, doc_id) of one run's top-k chunk, as store.reads.top_doc_ids gives it
Candidate = tuple[int, str, int, str]


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One (query, document) to label: the run and rank it is shown from, and whether the
    chosen runs differ on it (it is in the top k of some of them only)."""

    run_id: int
    qidx: int
    query_id: str
    rank: int
    doc_id: str
    differs: bool


def order_queue(
    runs: Sequence[tuple[int, Sequence[Candidate]]],
    judged: Iterable[tuple[str, str]] = (),
) -> list[QueueItem]:
    """The queue over runs [(run_id, candidates)]: every (query_id, doc_id) not in judged, once,
    differing documents first, then by rank, query order (the first run's), run order."""
    skip = set(judged)
    tops: list[dict[str, set[str]]] = []
    for _, cands in runs:
        top: dict[str, set[str]] = {}
        for _, qid, _, doc in cands:
            top.setdefault(qid, set()).add(doc)
        tops.append(top)
    query_pos: dict[str, int] = {}
    for _, cands in runs:
        for _, qid, _, _ in cands:
            query_pos.setdefault(qid, len(query_pos))
    several = len(runs) > 1
    # plain tuples sorted, items made for the kept ones only: 100,000 candidates at 10,000
    # queries (a dataclass per candidate before the sort tripled the time)
    rows: list[tuple[int, int, int, int, int, str, str, int]] = []
    for r, (run_id, cands) in enumerate(runs):
        for qidx, qid, rank, doc in cands:
            if (qid, doc) in skip:
                continue
            differs = several and any(doc not in top.get(qid, ()) for top in tops)
            rows.append((0 if differs else 1, rank, query_pos[qid], r, qidx, qid, doc, run_id))
    rows.sort()
    seen: set[tuple[str, str]] = set()
    out: list[QueueItem] = []
    for same, rank, _, _, qidx, qid, doc, run_id in rows:
        if (qid, doc) not in seen:
            seen.add((qid, doc))
            out.append(QueueItem(run_id, qidx, qid, rank, doc, same == 0))
    return out


def imported_judged(data: RunData, candidates: Sequence[Candidate]) -> set[tuple[str, str]]:
    """The (query_id, doc_id) of candidates the run's own qrels judge (a label >= 0)."""
    if data.judged is None:
        return set()
    depth = data.judged.shape[1]
    return {
        (qid, doc)
        for qidx, qid, rank, doc in candidates
        if rank <= depth and data.judged[qidx, rank - 1] == JUDGED
    }


def imported_label(data: RunData, qidx: int, rank: int) -> float | None:
    """The run's own qrels label of the chunk at (1-based, as retrieved) rank of qidx; None when
    those qrels do not judge it (whatever the labels setting counts instead)."""
    if data.judged is None or not 0 < rank <= data.judged.shape[1]:
        return None
    if data.judged[qidx, rank - 1] != JUDGED:
        return None
    return float(data.labels[qidx, rank - 1])


def queue(store: Store, datas: Sequence[RunData], k: int) -> list[QueueItem]:
    """The queue of the top k of datas (the sidebar's run first, then Compare's others)."""
    runs: list[tuple[int, Sequence[Candidate]]] = []
    judged: set[tuple[str, str]] = set()
    for data in datas:
        cands = top_doc_ids(store, data.run.run_id, k)
        runs.append((data.run.run_id, cands))
        judged |= imported_judged(data, cands)
    return order_queue(runs, judged)


def positions(items: Sequence[QueueItem]) -> dict[tuple[str, str], int]:
    """(query_id, doc_id) -> its place in the queue: progress() then counts the labelled pairs
    (few) instead of walking the queue (a hundred thousand items at 10,000 queries)."""
    return {(item.query_id, item.doc_id): i for i, item in enumerate(items)}


def progress(
    items: Sequence[QueueItem],
    labelled: Iterable[tuple[str, str]],
    where: Mapping[tuple[str, str], int] | None = None,
) -> tuple[int, int]:
    """(labelled, to go) of the queue's items, labelled: the (query_id, doc_id) with a grade;
    where: positions(items), when the caller keeps it."""
    found = positions(items) if where is None else where
    n = sum(pair in found for pair in set(labelled))
    return n, len(items) - n


def first_to_go(items: Sequence[QueueItem], labelled: Iterable[tuple[str, str]]) -> int:
    """The position of the first item without a grade (len(items) when every one has one)."""
    done = set(labelled)
    for i, item in enumerate(items):
        if (item.query_id, item.doc_id) not in done:
            return i
    return len(items)
