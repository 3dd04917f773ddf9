"""QA-pair test sets {qa_pair_id, question, answer, context, source_document} joined with results.

The pairs file is the companion: a JSON array or JSON Lines. The retrieval results are the
primary file: an array (or JSON Lines) of {qa_pair_id | question, results | documents |
retrieved | contexts | retrieved_chunks: [documents], answer?, latency_ms?, retrieval_time_ms?,
tokens?}, or an object mapping
qa_pair_id -> list of documents. A document is {id, text, score?, metadata?, ...}; its other
keys go to the chunk's metadata. Both files are loaded whole: the join needs every pair.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval_core.errors import ProblemLog
from rageval_core.formats.base import (
    HEADER_KEY,
    display_path,
    finite_number,
    merge_info,
    read_sidecar,
)
from rageval_core.formats.jsonarray import (
    EXTRA_KEYS,
    TRUNCATED,
    Extras,
    KeyWarner,
    describe,
    id_text,
    iter_object,
    iter_records,
    layout_of,
    parse_chunk,
    parse_extras,
    peek_first,
    read_text,
    tag_text,
)
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo

FORMAT = "qa_pairs"
PRIMARY = "retrieval"
COMPANION = "pairs"
COMPANION_REQUIRED = True

#: retrieved_chunks and retrieval_time_ms: EggAI's RetrievalResult, as its tests save it
DOC_KEYS = ("results", "documents", "retrieved", "contexts", "retrieved_chunks")
_TIME_KEY = "retrieval_time_ms"
_PAIR_KEYS = ("qa_pair_id", "question", "answer", "context", "source_document")
_TEXT_KEYS = ("text", "content")


# -- sniffing ----------------------------------------------------------------------------------


def sniff(path: Path, head: bytes) -> str | None:
    """PRIMARY for retrieval results, COMPANION for a QA-pair set, None when not this format."""
    top = peek_first(head)
    if isinstance(top, list):
        items = [x for x in top if x is not TRUNCATED]
        return _sniff_record(items[0]) if items and isinstance(items[0], Mapping) else None
    if not isinstance(top, Mapping):
        return None
    role = _sniff_record(top)
    if role is not None:
        return role
    values = [v for v in top.values() if v is not TRUNCATED]
    if values and all(isinstance(v, list) for v in values):  # qa_pair_id -> documents
        for docs in values:
            if docs:
                return PRIMARY if _is_qa_doc(docs[0]) else None
    return None


def _sniff_record(record: Mapping[str, Any]) -> str | None:
    if HEADER_KEY in record or ("query_id" in record and "retrieved" in record):
        return None  # native
    if "query" in record or "retrieved_docs" in record or "user_input" in record:
        return None  # tatrag / ragas
    if "qa_pair_id" not in record and "question" not in record:
        return None
    for key in DOC_KEYS:
        docs = record.get(key)
        if isinstance(docs, list):
            if not docs or _is_qa_doc(docs[0]):
                return PRIMARY
            # tatrag never claims an entry keyed by qa_pair_id, whatever its documents hold
            return PRIMARY if "qa_pair_id" in record and isinstance(docs[0], Mapping) else None
    if "question" in record and ("qa_pair_id" in record or "context" in record):
        return COMPANION
    return None


def _is_qa_doc(doc: Any) -> bool:
    return isinstance(doc, Mapping) and "id" in doc and "content" not in doc


# -- reading -----------------------------------------------------------------------------------


@dataclass
class _Pair:
    line: int
    query_id: str
    question: str
    evidence: tuple[str, ...]
    reference_answer: str | None
    tags: dict[str, str]
    valid: bool = True


@dataclass
class _Hit:
    line: int
    chunks: tuple[Chunk, ...]
    extras: Extras


def read(primary: Path, companion: Path | None, log: ProblemLog) -> ParsedRun:
    """Join the retrieval results (primary) with the QA pairs (companion) into queries."""
    pfile = display_path(primary)
    info = merge_info(RunInfo(), read_sidecar(primary, log))
    if companion is None:
        log.error(pfile, 0, COMPANION, "QA-pair retrieval results need their QA-pair file")
        return ParsedRun(info, [], FORMAT, (pfile,))
    cfile = display_path(companion)
    pairs = _read_pairs(companion, cfile, log)
    if pairs is None:
        return ParsedRun(info, [], FORMAT, (pfile, cfile))
    hits = _Joiner(pairs, pfile, cfile, log).read(primary)
    queries = []
    for pair in pairs:
        if not pair.valid:
            continue
        hit = hits.get(pair.query_id)
        if hit is None:
            log.warn(
                cfile,
                pair.line,
                "qa_pair_id",
                f"no retrieval results for {pair.query_id}; scored as an empty ranking",
            )
            hit = _Hit(0, (), Extras())
        queries.append(
            Query(
                query_id=pair.query_id,
                retrieved=hit.chunks,
                query=pair.question,
                evidence=pair.evidence,
                answer=hit.extras.answer,
                reference_answer=pair.reference_answer,
                latency_ms=hit.extras.latency_ms,
                tokens=hit.extras.tokens,
                tags=pair.tags,
                line=hit.line,
            )
        )
    return ParsedRun(info, queries, FORMAT, (pfile, cfile))


def _read_pairs(path: Path, file: str, log: ProblemLog) -> list[_Pair] | None:
    text = read_text(path, file, log)
    if text is None:
        return None
    pairs: list[_Pair] = []
    seen: dict[str, int] = {}
    keys = KeyWarner(file, log)
    for line, entry in iter_records(text, file, log):
        pair = _parse_pair(entry, line, file, log, keys)
        if pair.valid and pair.query_id in seen:
            log.error(
                file,
                line,
                "qa_pair_id",
                f'duplicate "{pair.query_id}" (first on line {seen[pair.query_id]})',
            )
            pair.valid = False
        if pair.valid:
            seen[pair.query_id] = line
        pairs.append(pair)
    return pairs


def _parse_pair(entry: Any, line: int, file: str, log: ProblemLog, keys: KeyWarner) -> _Pair:
    broken = _Pair(line, "", "", (), None, {}, valid=False)
    if not isinstance(entry, Mapping):
        log.error(file, line, "entry", f"expected an object, got {describe(entry)}")
        return broken
    ok = True
    query_id = id_text(entry.get("qa_pair_id"))
    if query_id is None:
        problem = (
            "required"
            if entry.get("qa_pair_id") is None
            else (f"expected a non-empty string or an integer, got {describe(entry['qa_pair_id'])}")
        )
        log.error(file, line, "qa_pair_id", problem)
        ok = False
    question = entry.get("question")
    if not isinstance(question, str) or not question.strip():
        problem = (
            "required"
            if question is None
            else (f"expected a non-empty string, got {describe(question)}")
        )
        log.error(file, line, "question", problem)
        ok = False
    answer = entry.get("answer")
    if answer is not None and not isinstance(answer, str):
        log.error(file, line, "answer", f"expected a string, got {describe(answer)}")
        ok = False
    context = entry.get("context")
    spans: list[Any] = [] if context is None else [context] if isinstance(context, str) else context
    if not isinstance(spans, list) or not all(isinstance(s, str) and s.strip() for s in spans):
        log.error(
            file,
            line,
            "context",
            f"expected a non-empty string or an array of them, got {describe(context)}",
        )
        ok = False
        spans = []
    tags: dict[str, str] = {}
    if entry.get("source_document") is not None:
        source = tag_text(entry["source_document"])
        if source is None:
            log.error(
                file,
                line,
                "source_document",
                f"expected a string, got {describe(entry['source_document'])}",
            )
            ok = False
        else:
            tags["source_document"] = source
    for key in entry:
        if key not in _PAIR_KEYS:
            keys.unknown(line, key)
    if not ok:  # keep what is known, so a result list for it is not reported again
        broken.query_id = query_id or ""
        broken.question = question if isinstance(question, str) else ""
        return broken
    assert isinstance(question, str)  # ok is False otherwise
    return _Pair(line, query_id or "", question, tuple(spans), answer, tags)


class _Joiner:
    """Reads the retrieval results and matches each entry to a pair (by qa_pair_id or question)."""

    def __init__(self, pairs: list[_Pair], file: str, cfile: str, log: ProblemLog) -> None:
        self.file = file
        self.cfile = cfile
        self.log = log
        self.keys = KeyWarner(file, log)
        self.pairs = {p.query_id: p for p in reversed(pairs) if p.query_id}  # first one wins
        self.by_question: dict[str, list[_Pair]] = {}
        for p in pairs:
            if p.question.strip():
                self.by_question.setdefault(p.question.strip(), []).append(p)
        self.hits: dict[str, _Hit] = {}

    def read(self, path: Path) -> dict[str, _Hit]:
        text = read_text(path, self.file, self.log)
        if text is None:
            return self.hits
        if layout_of(text) == "object":  # qa_pair_id -> documents
            members = list(iter_object(text, self.file, self.log))
            record = {key: value for _, key, value, _ in members}
            keyed = "qa_pair_id" in record or "question" in record
            if keyed and any(k in record for k in DOC_KEYS):
                self._entry(record, members[0][0])  # one entry alone (JSON Lines of one line)
                return self.hits
            for line, key, docs, _ in members:
                chunks = self._chunks(docs, "documents", line)
                pair = self._by_id(key, line, "qa_pair_id")
                if pair is not None and chunks is not None:
                    self._add(pair, _Hit(line, chunks, Extras()), line)
            return self.hits
        for line, entry in iter_records(text, self.file, self.log):
            self._entry(entry, line)
        return self.hits

    def _entry(self, entry: Any, line: int) -> None:
        if not isinstance(entry, Mapping):
            self.log.error(self.file, line, "entry", f"expected an object, got {describe(entry)}")
            return
        present = [k for k in DOC_KEYS if k in entry]
        if not present:
            self.log.error(self.file, line, "results", f"required (one of {', '.join(DOC_KEYS)})")
            return
        if len(present) > 1:
            self.log.error(
                self.file,
                line,
                present[1],
                f"more than one list of documents ({', '.join(present)})",
            )
            return
        chunks = self._chunks(entry[present[0]], present[0], line)
        extras = parse_extras(entry, line, self.file, self.log)
        if extras is not None and entry.get(_TIME_KEY) is not None:
            extras = self._retrieval_time(entry[_TIME_KEY], extras, line)
        if entry.get("qa_pair_id") is not None:
            pair = self._by_id(entry["qa_pair_id"], line, "qa_pair_id")
        elif entry.get("question") is not None:
            pair = self._by_question(entry["question"], line)
        else:
            self.log.error(self.file, line, "qa_pair_id", "required (or question)")
            pair = None
        for key in entry:
            if key not in (*DOC_KEYS, *EXTRA_KEYS, _TIME_KEY, "qa_pair_id", "question"):
                self.keys.unknown(line, key)
        if pair is not None and chunks is not None and extras is not None:
            self._add(pair, _Hit(line, chunks, extras), line)

    def _retrieval_time(self, value: Any, extras: Extras, line: int) -> Extras | None:
        """retrieval_time_ms as the latency stage "retrieval" (latency_ms's own stages win)."""
        ms = finite_number(value)
        if ms is None or ms < 0:
            self.log.error(
                self.file, line, _TIME_KEY, f"expected a number >= 0, got {describe(value)}"
            )
            return None
        extras.latency_ms = {"retrieval": ms, **extras.latency_ms}
        return extras

    def _chunks(self, docs: Any, where: str, line: int) -> tuple[Chunk, ...] | None:
        if not isinstance(docs, list):
            self.log.error(self.file, line, where, f"expected an array, got {describe(docs)}")
            return None
        chunks = [
            parse_chunk(doc, f"{where}[{rank}]", line, self.file, self.log, _TEXT_KEYS)
            for rank, doc in enumerate(docs)
        ]
        return None if None in chunks else tuple(c for c in chunks if c is not None)

    def _by_id(self, value: Any, line: int, key: str) -> _Pair | None:
        query_id = id_text(value)
        if query_id is None:
            self.log.error(
                self.file,
                line,
                key,
                f"expected a non-empty string or an integer, got {describe(value)}",
            )
            return None
        pair = self.pairs.get(query_id)
        if pair is None:
            self.log.error(self.file, line, key, f'"{query_id}" matches no pair in {self.cfile}')
        return pair

    def _by_question(self, value: Any, line: int) -> _Pair | None:
        if not isinstance(value, str):
            self.log.error(self.file, line, "question", f"expected a string, got {describe(value)}")
            return None
        found = self.by_question.get(value.strip(), [])
        shown = value if len(value) <= 60 else value[:57] + "..."
        if not found:
            self.log.error(
                self.file, line, "question", f'"{shown}" matches no pair in {self.cfile}'
            )
            return None
        if len(found) > 1:
            lines = ", ".join(str(p.line) for p in found)
            self.log.error(
                self.file,
                line,
                "question",
                f'"{shown}" matches several pairs (lines {lines} of {self.cfile}); give qa_pair_id',
            )
            return None
        return found[0]

    def _add(self, pair: _Pair, hit: _Hit, line: int) -> None:
        if not pair.valid:
            return  # already reported in the pairs file
        if pair.query_id in self.hits:
            self.log.error(
                self.file,
                line,
                "qa_pair_id",
                f'second result list for "{pair.query_id}" '
                f"(first on line {self.hits[pair.query_id].line})",
            )
            return
        self.hits[pair.query_id] = hit
