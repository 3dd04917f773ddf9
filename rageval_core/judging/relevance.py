"""LLM relevance labels (`rageval judge RUN --metrics relevance`, issue 31): which top-k chunks
are graded and how their grades are kept.

A chunk is graded when nobody has labelled its document for its query: no imported qrel of the
run and no grade by people or adjudication (store/ground_truth.py). Each such chunk is one
request with the RELEVANCE prompt (UMBRELA, judging/prompts.py); a document with several chunks
in the top k keeps the highest of their grades (a document is as relevant as its best passage).
The grades are kept with ground_truth.set_grades under source `llm:MODEL`, annotator MODEL,
replacing that model's earlier grades of the same documents, beside the people's.
"""

from __future__ import annotations

from collections.abc import Iterable

from rageval_core.model import Query
from rageval_core.store import Store
from rageval_core.store import ground_truth as gt
from rageval_core.store.store import RunRef

#: the grade sources that make a document judged (the LLM grades only what these leave open)
HUMAN_SOURCES = (gt.PEOPLE, gt.ADJUDICATED)


def source_of(model: str) -> str:
    """The label source an LLM's grades are kept under: llm:MODEL."""
    return f"{gt.LLM_PREFIX}{model}"


def labelled_by_people(store: Store, ref: RunRef) -> set[tuple[str, str]]:
    """(query_id, doc_id) a person graded or adjudicated, over the run's queries."""
    from rageval_core.store.judgements import query_ids

    qids = query_ids(store, store.run(ref).run_id)
    return {(r.query_id, r.doc_id) for r in gt.grade_rows(store, qids, HUMAN_SOURCES)}


def unjudged_chunks(
    query: Query, depth: int, labelled: set[tuple[str, str]]
) -> list[tuple[str, str]]:
    """(doc_id, text) of the query's top `depth` chunks with text whose document has no imported
    qrel and no person's grade, in rank order."""
    judged = set(query.relevance or {})
    return [
        (c.doc_id, c.text)
        for c in (query.retrieved or ())[:depth]
        if c.text is not None
        and c.doc_id not in judged
        and (query.query_id, c.doc_id) not in labelled
    ]


def keep_grades(store: Store, model: str, graded: Iterable[tuple[str, str, int]]) -> int:
    """Keep each document's highest grade under llm:MODEL (one transaction); how many documents."""
    best: dict[tuple[str, str], int] = {}
    for query_id, doc_id, grade in graded:
        best[(query_id, doc_id)] = max(grade, best.get((query_id, doc_id), grade))
    rows = [(q, d, g) for (q, d), g in sorted(best.items())]
    if rows:
        gt.set_grades(store, rows, annotator=model, source=source_of(model))
    return len(rows)
