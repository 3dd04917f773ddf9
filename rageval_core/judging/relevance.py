"""LLM relevance labels (`rageval judge RUN --metrics relevance`, issue 31): which top-k chunks
are graded and how their grades are kept.

A chunk is graded when its document has no label for its query under the `labels` setting
(default `imported`: the run's own qrels; `imported,people` leaves the people's grades alone
too; evaluation/labels.py resolves it, the command passes the labelled set). Each such chunk is one
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


def source_of(model: str) -> str:
    """The label source an LLM's grades are kept under: llm:MODEL."""
    return f"{gt.LLM_PREFIX}{model}"


def unjudged_chunks(
    query: Query, depth: int, labelled: set[tuple[str, str]] | None = None
) -> list[tuple[str, str]]:
    """(doc_id, text) of the query's top `depth` chunks with text whose document has no label, in
    rank order. labelled: the (query_id, doc_id) labelled under the `labels` setting
    (evaluation/labels.py's resolution); None: its default, the run's imported qrels (a 0 too)."""
    judged = set(query.relevance or {}) if labelled is None else None
    return [
        (c.doc_id, c.text)
        for c in (query.retrieved or ())[:depth]
        if c.text is not None
        and (
            c.doc_id not in judged
            if judged is not None
            else (query.query_id, c.doc_id) not in (labelled or set())
        )
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
