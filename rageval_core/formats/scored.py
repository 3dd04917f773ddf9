"""What the ecosystem readers share: score maps {qid: {doc_id: number}}, qrels in any of the three
shapes (TREC, BEIR's TSV, ranx's JSON), and the join of a run with its qrels into queries.

A run is ordered as trec_eval and pytrec_eval order it (score descending, ties by doc id
descending), so every reader built on this evaluates as pytrec_eval does on the same dicts.
Judged queries absent from the run follow with retrieved=None, as the TREC reader does.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rageval_core.errors import ProblemLog
from rageval_core.formats.base import (
    display_path,
    finite_number,
    first_line,
    open_input,
    unreadable,
)
from rageval_core.formats.fields import Judgements as Judgements
from rageval_core.formats.jsonarray import Truncated, describe, iter_object, read_text
from rageval_core.model import Chunk, Query

#: BEIR's qrels header (qrels/<split>.tsv), as GenericDataLoader skips it
BEIR_QRELS_HEADER = ("query-id", "corpus-id", "score")
_REL_MIN, _REL_MAX = -(2**31), 2**31 - 1  # the store keeps 32-bit labels


@dataclass(slots=True)
class Scores:
    """qid -> {doc_id: score or label}, each query with the line where it starts."""

    file: str
    docs: dict[str, dict[str, float]] = field(default_factory=dict)
    first_line: dict[str, int] = field(default_factory=dict)


def is_score_map(top: object) -> bool:
    """True for a (possibly partial) {qid: {doc_id: number}} object as peek_first sees it: every
    value an object (empty ones too), and the first number in sight a number."""
    if not isinstance(top, Mapping) or not top:
        return False
    inners = [v for v in top.values() if not isinstance(v, Truncated)]
    if not inners or not all(isinstance(v, Mapping) for v in inners):
        return False
    for inner in inners:
        for value in inner.values():
            if isinstance(value, Truncated):
                continue
            return isinstance(value, (int, float)) and not isinstance(value, bool)
    return True


def all_integers(top: Mapping[str, object]) -> bool:
    """True when every score the (partial) map shows is an integer: ranx's qrels, not a run."""
    for inner in top.values():
        if not isinstance(inner, Mapping):
            return False
        for value in inner.values():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue  # a value the head cut off
            if not isinstance(value, int):
                return False
    return True


def read_score_map(path: Path, log: ProblemLog, *, labels: bool) -> Scores | None:
    """A {qid: {doc_id: number}} JSON file (a BEIR results file, ranx's Run.save / Qrels.save).

    labels: the numbers are relevance labels (integers), else finite scores. Problems are
    reported at the line where the query's object starts, at field "<qid>.<doc_id>".
    """
    file = display_path(path)
    text = read_text(path, file, log)
    if text is None:
        return None
    out = Scores(file)
    for line, qid, docs, _ in iter_object(text, file, log):
        if not qid.strip():
            log.error(file, line, "qid", "expected a non-empty query id")
            continue
        if qid in out.docs:
            log.error(file, line, qid, f"duplicate query (first on line {out.first_line[qid]})")
            continue
        if not isinstance(docs, Mapping):
            log.error(
                file, line, qid, f"expected an object {{doc_id: number}}, got {describe(docs)}"
            )
            continue
        scores: dict[str, float] = {}
        for doc_id, value in docs.items():
            where = f"{qid}.{doc_id}"
            number = _label(value) if labels else finite_number(value)
            if not doc_id.strip():
                log.error(file, line, where, "expected a non-empty document id")
            elif number is None:
                want = (
                    f"an integer label from {_REL_MIN} to {_REL_MAX}"
                    if labels
                    else "a finite number"
                )
                log.error(file, line, where, f"expected {want}, got {describe(value)}")
            else:
                scores[doc_id] = number
        out.docs[qid] = scores
        out.first_line[qid] = line
    if not out.docs and not log.errors:
        log.error(file, 0, "file", "no queries (expected {qid: {doc_id: number}})")
    return out


def _label(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if _REL_MIN <= value <= _REL_MAX else None


def read_qrels(path: Path, log: ProblemLog) -> Judgements | None:
    """Qrels in any of the three shapes: ranx's JSON, BEIR's TSV (with its header), TREC's."""
    file = display_path(path)
    try:
        with open_input(path) as fh:
            head = fh.read(4096).decode("utf-8", errors="replace").lstrip("\ufeff").lstrip()
    except OSError as e:  # a FIFO, a device or a folder too, by name (a FIFO would block)
        log.error(file, 0, "file", unreadable(e))
        return None
    if head.startswith("{"):
        scores = read_score_map(path, log, labels=True)
        if scores is None:
            return None
        out = Judgements(file, first_line=scores.first_line)
        out.labels = {q: {d: int(r) for d, r in docs.items()} for q, docs in scores.docs.items()}
        return out
    if is_beir_qrels_header(first_line(head)):
        return _read_beir_qrels(path, file, log)
    import rageval_core.formats.trec as trec  # trec's own reader: its checks and messages

    read = trec._read_qrels(path, log)
    return Judgements(read.file, read.labels, read.first_line)


def is_beir_qrels_header(line: str) -> bool:
    return tuple(cell.strip() for cell in line.split("\t")) == BEIR_QRELS_HEADER


def _read_beir_qrels(path: Path, file: str, log: ProblemLog) -> Judgements | None:
    """BEIR's qrels/<split>.tsv: a header, then query-id, corpus-id, score (tab separated)."""
    out = Judgements(file)
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            rows = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
            next(rows, None)
            for row in rows:
                number = rows.line_num
                if not row or not "".join(row).strip():
                    continue
                if len(row) != 3:
                    log.error(
                        file,
                        number,
                        "columns",
                        f"expected 3 columns ({', '.join(BEIR_QRELS_HEADER)}), got {len(row)}",
                    )
                    continue
                qid, doc_id, score = (cell.strip() for cell in row)
                try:
                    rel = int(score)
                except ValueError:
                    rel = None
                if rel is None or not _REL_MIN <= rel <= _REL_MAX:
                    log.error(file, number, "score", f"expected an integer label, got {score!r}")
                    continue
                if not qid or not doc_id:
                    field_name = "query-id" if not qid else "corpus-id"
                    log.error(file, number, field_name, "expected a non-empty id")
                    continue
                first = out.add(qid, doc_id, rel, number)
                if first is not None:
                    log.error(
                        file,
                        number,
                        "corpus-id",
                        f"duplicate judgement of {doc_id!r} for query {qid!r} (first on line {first})",
                    )
    except (OSError, UnicodeDecodeError) as e:
        from rageval_core.formats.base import unreadable

        log.error(file, 0, "file", unreadable(e))
        return None
    except csv.Error as e:
        log.error(file, 0, "csv", str(e))
        return None
    if not out.lines and not log.errors:
        log.error(file, 0, "qrels", "no judgement lines")
    return out


def ranked(docs: Mapping[str, float]) -> list[tuple[str, float]]:
    """(doc_id, score) in trec_eval's order: score descending, ties by doc id descending."""
    return [(d, s) for s, d in sorted(((s + 0.0, d) for d, s in docs.items()), reverse=True)]


def scored_queries(
    run: Scores,
    qrels: Judgements | None,
    log: ProblemLog,
    *,
    texts: Mapping[str, str] | None = None,
    questions: Mapping[str, str] | None = None,
) -> Iterator[Query]:
    """The run's queries with their judgements, then the judged queries the run lacks.

    texts: doc_id -> chunk text; questions: qid -> query text (both optional).
    """
    from rageval_core.formats.trec import warn_missing

    judged = qrels.labels if qrels is not None else {}
    missing = [q for q in judged if q not in run.docs]
    if missing and qrels is not None:
        warn_missing(log, qrels.file, qrels.first_line[missing[0]], missing)
    texts = texts or {}
    questions = questions or {}
    for qid, docs in run.docs.items():
        yield Query(
            query_id=qid,
            retrieved=tuple(Chunk(doc_id=d, text=texts.get(d), score=s) for d, s in ranked(docs)),
            query=questions.get(qid),
            relevance=judged.get(qid),
            line=run.first_line[qid],
        )
    assert qrels is not None or not missing
    for qid in missing:
        assert qrels is not None
        yield Query(
            query_id=qid,
            retrieved=None,
            query=questions.get(qid),
            relevance=judged[qid],
            line=qrels.first_line[qid],
        )
