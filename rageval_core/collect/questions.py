"""The questions `rageval collect` sends: read by rageval's own readers from any file that has
query texts, with the gold each one carries (evidence, qrels, reference answer, tags)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from rageval_core.errors import InputError, Problem, ProblemLog
from rageval_core.model import Query


def gold_only(q: Query) -> Query:
    """q without what a retriever (or a generator, or a judge) made: the question and its gold."""
    return dataclasses.replace(
        q, retrieved=(), answer=None, latency_ms={}, tokens={}, judge={}, labels={}
    )


def read_questions(paths: Sequence[Path], fmt: str | None = None) -> list[Query]:
    """Every query of the files, gold kept, retrieval dropped; InputError (file:line: field:
    problem) for unreadable files, a query without text, or a query id given twice."""
    from rageval_core.formats.detect import read_inputs

    log = ProblemLog()
    runs = read_inputs(list(paths), fmt, log, questions=True)
    log.raise_if_errors()
    out: list[Query] = []
    seen: dict[str, str] = {}
    problems: list[Problem] = []
    for run in runs:
        source = run.sources[-1] if len(run.sources) > 1 else run.sources[0]
        for q in run.queries:
            where = f"{q.query_id!r}"
            if q.query is None or not q.query.strip():
                problems.append(
                    Problem(source, q.line, "query", f"{where} has no question text to send")
                )
            elif q.query_id in seen:
                problems.append(
                    Problem(source, q.line, "query_id", f"{where} is also in {seen[q.query_id]}")
                )
            else:
                seen[q.query_id] = source
                out.append(gold_only(q))
        log.raise_if_errors()
    if problems:
        raise InputError(problems[: log.cap], max(0, len(problems) - log.cap))
    if not out:
        raise InputError(
            [Problem(", ".join(str(p) for p in paths), 0, "file", "no questions found")]
        )
    return out
