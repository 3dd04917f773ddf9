"""The TREC formats: a run file (``qid Q0 docno rank score tag``) with an optional qrels file.

Read as trec_eval reads them (docs/formats.md, "TREC run and qrels"):
- Each query's documents are ordered by score descending, ties by docno descending (string
  comparison); the rank column is ignored, as trec_eval ignores it.
- Queries keep the order of their first line in the run. Judged queries absent from the run
  follow, with retrieved=None (scored only with --complete) and a warning naming them.
- A document twice in one query of the run is an error (trec_eval refuses such runs).
The run is read whole: documents must be grouped per query and re-sorted before the first
query can be emitted. Query objects are then built lazily, one at a time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rageval_core.errors import ProblemLog
from rageval_core.formats.base import display_path, merge_info, read_sidecar
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo

FORMAT = "trec"
PRIMARY = "run"
COMPANION: str | None = "qrels"
COMPANION_REQUIRED = False

RUN_COLUMNS = "qid Q0 docno rank score tag"
QRELS_COLUMNS = "qid iter docno rel"
_ITER_TOKENS = {"Q0", "q0", "0"}
# C-style decimal numbers only: Python's float() would also take "1_0", "nan" and "inf"
_NUMBER = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")
_INTEGER = re.compile(r"^[+-]?[0-9]+$")
#: at most this many missing query ids are named in the warning
_NAMED_MAX = 20


def sniff(path: Path, head: bytes) -> str | None:
    """'run' or 'qrels' when the first content line looks like one, else None."""
    if b"\x00" in head:
        return None
    text = head.decode("utf-8", errors="replace")
    for line in text.splitlines():
        tokens = line.split()
        if not tokens or tokens[0].startswith("#"):
            continue
        if (
            len(tokens) >= 6
            and tokens[1] in _ITER_TOKENS
            and _is_number(tokens[3])
            and _is_number(tokens[4])
        ):
            return PRIMARY
        if len(tokens) == 4 and _INTEGER.match(tokens[3]):
            return COMPANION
        return None
    return None


def read(primary: Path, companion: Path | None, log: ProblemLog) -> ParsedRun:
    """Read a TREC run (and its qrels when given) into a ParsedRun; problems go to log."""
    run = _read_run(primary, log)
    qrels = _read_qrels(companion, log) if companion is not None else None
    sources = (display_path(primary),) + (() if companion is None else (display_path(companion),))
    missing: list[str] = []
    if qrels is not None:
        missing = [qid for qid in qrels.labels if qid not in run.docs]
        if missing:
            named = ", ".join(repr(q) for q in missing[:_NAMED_MAX])
            more = f" and {len(missing) - _NAMED_MAX} more" if len(missing) > _NAMED_MAX else ""
            log.warn(
                qrels.file,
                qrels.first_line[missing[0]],
                "qid",
                f"{len(missing)} judged {'query is' if len(missing) == 1 else 'queries are'} "
                f"not in the run: {named}{more} "
                "(they score only with --complete, as with trec_eval -c)",
            )
    info = merge_info(RunInfo(name=run.tag), read_sidecar(primary, log))
    return ParsedRun(
        info=info, queries=_queries(run, qrels, missing), format=FORMAT, sources=sources
    )


@dataclass(slots=True)
class _Run:
    file: str
    docs: dict[str, list[tuple[float, str]]] = field(default_factory=dict)  # qid -> (score, docno)
    first_line: dict[str, int] = field(default_factory=dict)
    tag: str | None = None


@dataclass(slots=True)
class _Qrels:
    file: str
    labels: dict[str, dict[str, int]] = field(default_factory=dict)
    first_line: dict[str, int] = field(default_factory=dict)


def _queries(run: _Run, qrels: _Qrels | None, missing: list[str]) -> Iterator[Query]:
    judged = qrels.labels if qrels is not None else {}
    for qid, docs in run.docs.items():
        # trec_eval's order: score descending, ties by docno descending
        docs.sort(reverse=True)
        yield Query(
            query_id=qid,
            retrieved=tuple([Chunk(doc_id=docno, score=score) for score, docno in docs]),
            relevance=judged.get(qid),
            line=run.first_line[qid],
        )
    for qid in missing:
        assert qrels is not None
        yield Query(query_id=qid, retrieved=None, relevance=judged[qid], line=qrels.first_line[qid])


def _lines(path: Path, file: str, log: ProblemLog) -> Iterator[tuple[int, list[str]]]:
    """(line number, tokens) of each content line; blank and '#' comment lines are skipped."""
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if log.full:
                return
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                log.error(file, number, "line", f"not valid UTF-8 ({e.reason} at byte {e.start})")
                continue
            tokens = line.split()
            if tokens and not tokens[0].startswith("#"):
                yield number, tokens


def _read_run(path: Path, log: ProblemLog) -> _Run:
    run = _Run(display_path(path))
    seen: dict[str, dict[str, int]] = {}  # qid -> docno -> line, for duplicate checks
    tag_line = 0
    tag_agrees = True
    for number, tokens in _lines(path, run.file, log):
        if len(tokens) < 6:
            log.error(
                run.file,
                number,
                "columns",
                f"expected 6 columns ({RUN_COLUMNS}), got {len(tokens)}",
            )
            continue
        qid, docno, score_text, tag = tokens[0], tokens[2], tokens[4], tokens[5]
        if not _is_number(score_text):
            log.error(run.file, number, "score", f"expected a finite number, got {score_text!r}")
            continue
        score = float(score_text)
        if math.isinf(score):  # e.g. 1e999 overflows
            log.error(run.file, number, "score", f"expected a finite number, got {score_text!r}")
            continue
        if tag_line == 0:
            run.tag, tag_line = tag, number
        elif tag_agrees and tag != run.tag:
            tag_agrees = False
            log.warn(
                run.file,
                number,
                "tag",
                f"run tag {tag!r} differs from {run.tag!r} (line {tag_line}); the run is "
                "left unnamed",
            )
        docnos = seen.get(qid)
        if docnos is None:
            docnos = seen[qid] = {}
            run.docs[qid] = []
            run.first_line[qid] = number
        first = docnos.get(docno)
        if first is not None:
            log.error(
                run.file,
                number,
                "docno",
                f"duplicate document {docno!r} for query {qid!r} (first on line {first}); "
                "trec_eval rejects such runs",
            )
            continue
        docnos[docno] = number
        run.docs[qid].append((score, docno))
    if not tag_agrees:
        run.tag = None
    if tag_line == 0 and not log.errors:
        log.error(run.file, 0, "run", f"no result lines ({RUN_COLUMNS})")
    return run


def _read_qrels(path: Path, log: ProblemLog) -> _Qrels:
    qrels = _Qrels(display_path(path))
    lines: dict[tuple[str, str], int] = {}
    for number, tokens in _lines(path, qrels.file, log):
        if len(tokens) != 4:
            log.error(
                qrels.file,
                number,
                "columns",
                f"expected 4 columns ({QRELS_COLUMNS}), got {len(tokens)}",
            )
            continue
        qid, docno, rel_text = tokens[0], tokens[2], tokens[3]
        if not _INTEGER.match(rel_text):
            log.error(qrels.file, number, "rel", f"expected an integer, got {rel_text!r}")
            continue
        first = lines.get((qid, docno))
        if first is not None:
            log.error(
                qrels.file,
                number,
                "docno",
                f"duplicate judgement of {docno!r} for query {qid!r} (first on line "
                f"{first}); trec_eval rejects such qrels",
            )
            continue
        lines[(qid, docno)] = number
        if qid not in qrels.labels:
            qrels.labels[qid] = {}
            qrels.first_line[qid] = number
        qrels.labels[qid][docno] = int(rel_text)
    if not lines and not log.errors:
        log.error(qrels.file, 0, "qrels", f"no judgement lines ({QRELS_COLUMNS})")
    return qrels


def _is_number(text: str) -> bool:
    return _NUMBER.match(text) is not None
