"""The labelling queue's order and progress (rageval_core.evaluation.label_queue), by hand."""

from __future__ import annotations

from rageval_core.evaluation.label_queue import (
    first_to_go,
    imported_label,
    order_queue,
    progress,
    queue,
)
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.errors import ProblemLog
from rageval_core.store import Store

A = [(0, "q1", 1, "a"), (0, "q1", 2, "b"), (0, "q1", 3, "c"), (1, "q2", 1, "d"), (1, "q2", 2, "e")]


def pairs(items: list) -> list[tuple[str, str]]:
    return [(i.query_id, i.doc_id) for i in items]


def test_higher_ranks_first_across_queries_and_judged_left_out() -> None:
    items = order_queue([(7, A)], judged={("q1", "b")})
    # rank 1 of every query (in the run's query order), then rank 2 ..., q1's b judged
    assert pairs(items) == [("q1", "a"), ("q2", "d"), ("q2", "e"), ("q1", "c")]
    assert [i.rank for i in items] == [1, 1, 2, 3]
    assert all(i.run_id == 7 and not i.differs for i in items)


def test_documents_the_runs_differ_on_come_first_once_each() -> None:
    other = [(0, "q1", 1, "c"), (0, "q1", 2, "a"), (0, "q1", 3, "x"), (3, "q2", 1, "d")]
    items = order_queue([(1, A), (2, other)])
    # differing: b (A only), x (other only), e (A only); shared: a, c, d (each once, best rank)
    assert pairs(items) == [
        ("q1", "b"),
        ("q2", "e"),
        ("q1", "x"),
        ("q1", "a"),
        ("q1", "c"),
        ("q2", "d"),
    ]
    assert [i.differs for i in items] == [True, True, True, False, False, False]
    by_pair = {(i.query_id, i.doc_id): i for i in items}
    assert (by_pair["q1", "c"].run_id, by_pair["q1", "c"].rank) == (2, 1)  # its best rank
    assert by_pair["q1", "x"].qidx == 0 and by_pair["q2", "d"].run_id == 1


def test_progress_and_first_to_go() -> None:
    items = order_queue([(7, A)])
    done = {("q1", "a"), ("q2", "d"), ("q9", "z")}  # a grade outside the queue does not count
    assert progress(items, done) == (2, 3)
    assert first_to_go(items, done) == 2
    assert first_to_go(items, pairs(items)) == len(items)


def run_with_qrels() -> ParsedRun:
    def q(qid: str, docs: list[str], rel: dict[str, float]) -> Query:
        return Query(
            query_id=qid,
            query=f"text {qid}",
            retrieved=tuple(Chunk(doc_id=d, text=f"chunk {d}") for d in docs),
            relevance=rel,
        )

    return ParsedRun(
        RunInfo(name="r"),
        [q("q1", ["a", "b", "c"], {"b": 1}), q("q2", ["d", "e"], {})],
        "native",
        ("r.jsonl",),
    )


def test_queue_leaves_out_what_the_imported_qrels_judge() -> None:
    from rageval_core.rundata import load_run_data

    with Store(":memory:") as store:
        store.import_run(run_with_qrels(), ProblemLog())
        data = load_run_data(store, "r")
        items = queue(store, [data], k=2)
    # top 2: q1 a, b (b judged: left out), q2 d, e
    assert pairs(items) == [("q1", "a"), ("q2", "d"), ("q2", "e")]


def test_imported_label_is_the_runs_own_qrels_only() -> None:
    from rageval_core.rundata import load_run_data

    with Store(":memory:") as store:
        store.import_run(run_with_qrels(), ProblemLog())
        data = load_run_data(store, "r")
    assert imported_label(data, 0, 2) == 1.0  # q1's b
    assert imported_label(data, 0, 1) is None  # q1's a: not in the qrels
    assert imported_label(data, 1, 1) is None  # q2: judged, nothing relevant, d not listed
    assert imported_label(data, 0, 9) is None  # past the list
