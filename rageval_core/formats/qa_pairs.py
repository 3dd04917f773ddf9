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
from pathlib import Path
from typing import Any

from rageval_core.errors import ProblemLog
from rageval_core.formats.base import MAX_MEASURE, finite_number, too_large
from rageval_core.formats.joined import (
    EntryReader,
    Gold,
    Hit,
    is_native_record,
    read_gold_questions,
    read_joined,
    shorten,
    sniff_doc_lists,
)
from rageval_core.formats.jsonarray import (
    EXTRA_KEYS,
    TRUNCATED,
    KeyWarner,
    Extras,
    describe,
    id_text,
    iter_object,
    iter_records,
    layout_of,
    parse_extras,
    peek_first,
    read_text,
    tag_text,
    value_problem,
)
from rageval_core.model import ParsedRun

FORMAT = "qa_pairs"
PRIMARY = "retrieval"
COMPANION = "pairs"
COMPANION_REQUIRED = True

#: retrieved_chunks and retrieval_time_ms: EggAI's RetrievalResult, as its tests save it
DOC_KEYS = ("results", "documents", "retrieved", "contexts", "retrieved_chunks")
_TIME_KEY = "retrieval_time_ms"
_PAIR_KEYS = ("qa_pair_id", "question", "answer", "context", "source_document")
_TEXT_KEYS = ("text", "content")
_RESULT_KEYS = (*DOC_KEYS, *EXTRA_KEYS, _TIME_KEY, "qa_pair_id", "question")


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
    # qa_pair_id -> documents
    return sniff_doc_lists(list(top.values()), _is_qa_doc, PRIMARY, empty=None)


def _sniff_record(record: Mapping[str, Any]) -> str | None:
    if is_native_record(record):
        return None
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


def read(primary: Path, companion: Path | None, log: ProblemLog) -> ParsedRun:
    """Join the retrieval results (primary) with the QA pairs (companion) into queries."""
    return read_joined(
        primary,
        companion,
        log,
        format=FORMAT,
        role=COMPANION,
        needs="QA-pair retrieval results need their QA-pair file",
        parse=_parse_pair,
        id_field="qa_pair_id",
        join=_join,
        field="qa_pair_id",
        output="results",
    )


def read_questions(companion: Path, parts: Mapping[str, Path], log: ProblemLog) -> ParsedRun:
    """The QA-pair file alone: its questions with their gold, nothing retrieved."""
    return read_gold_questions(
        companion, log, format=FORMAT, parse=_parse_pair, id_field="qa_pair_id"
    )


def _join(
    pairs: list[Gold], path: Path, file: str, cfile: str, log: ProblemLog
) -> list[Hit | None]:
    hits = _Joiner(pairs, file, cfile, log).read(path)
    return [hits.get(pair.query_id) for pair in pairs]


def _parse_pair(
    entry: Any, index: int, line: int, file: str, log: ProblemLog, keys: KeyWarner
) -> Gold:
    broken = Gold(line, "", "", (), None, {}, valid=False)
    if not isinstance(entry, Mapping):
        log.error(file, line, "entry", f"expected an object, got {describe(entry)}")
        return broken
    ok = True
    query_id = id_text(entry.get("qa_pair_id"))
    if query_id is None:
        problem = value_problem(entry.get("qa_pair_id"), "a non-empty string or an integer")
        log.error(file, line, "qa_pair_id", problem)
        ok = False
    question = entry.get("question")
    if not isinstance(question, str) or not question.strip():
        log.error(file, line, "question", value_problem(question, "a non-empty string"))
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
            keys.unknown(line, key, _PAIR_KEYS)
    if not ok:  # keep what is known, so a result list for it is not reported again
        broken.query_id = query_id or ""
        broken.query = question if isinstance(question, str) else ""
        return broken
    assert isinstance(question, str)  # ok is False otherwise
    return Gold(line, query_id or "", question, tuple(spans), answer, tags)


class _Joiner(EntryReader):
    """Reads the retrieval results and matches each entry to a pair (by qa_pair_id or question)."""

    def __init__(self, pairs: list[Gold], file: str, cfile: str, log: ProblemLog) -> None:
        super().__init__(file, log, _TEXT_KEYS)
        self.cfile = cfile
        self.pairs = {p.query_id: p for p in reversed(pairs) if p.query_id}  # first one wins
        self.by_question: dict[str, list[Gold]] = {}
        for p in pairs:
            if p.query.strip():
                self.by_question.setdefault(p.query.strip(), []).append(p)
        self.hits: dict[str, Hit] = {}

    def read(self, path: Path) -> dict[str, Hit]:
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
                chunks = self.chunks(docs, "documents", line)
                pair = self._by_id(key, line, "qa_pair_id")
                if pair is not None and chunks is not None:
                    self._add(pair, Hit(line, chunks), line)
            return self.hits
        for line, entry in iter_records(text, self.file, self.log):
            self._entry(entry, line)
        return self.hits

    def _entry(self, entry: Any, line: int) -> None:
        if not isinstance(entry, Mapping):
            self.log.error(self.file, line, "entry", f"expected an object, got {describe(entry)}")
            return
        docs_key = self.docs_key(entry, line, DOC_KEYS, "results")
        if docs_key is None:
            return
        chunks = self.chunks(entry[docs_key], docs_key, line)
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
            if key not in _RESULT_KEYS:
                self.keys.unknown(line, key, _RESULT_KEYS)
        if pair is not None and chunks is not None and extras is not None:
            self._add(pair, Hit(line, chunks, extras), line)

    def _retrieval_time(self, value: Any, extras: Extras, line: int) -> Extras | None:
        """retrieval_time_ms as the latency stage "retrieval" (latency_ms's own stages win)."""
        ms = finite_number(value)
        if ms is None or ms < 0 or ms > MAX_MEASURE:
            problem = (
                too_large(ms)
                if ms is not None and ms > 0
                else f"expected a number >= 0, got {describe(value)}"
            )
            self.log.error(self.file, line, _TIME_KEY, problem)
            return None
        extras.latency_ms = {"retrieval": ms, **extras.latency_ms}
        return extras

    def _by_id(self, value: Any, line: int, key: str) -> Gold | None:
        query_id = self.query_id(value, line, key)
        if query_id is None:
            return None
        pair = self.pairs.get(query_id)
        if pair is None:
            self.log.error(self.file, line, key, f'"{query_id}" matches no pair in {self.cfile}')
        return pair

    def _by_question(self, value: Any, line: int) -> Gold | None:
        if not isinstance(value, str):
            self.log.error(self.file, line, "question", f"expected a string, got {describe(value)}")
            return None
        found = self.by_question.get(value.strip(), [])
        shown = shorten(value)
        if not found:
            self.log.error(self.file, line, "question", f"{shown} matches no pair in {self.cfile}")
            return None
        if len(found) > 1:
            lines = ", ".join(str(p.line) for p in found)
            self.log.error(
                self.file,
                line,
                "question",
                f"{shown} matches several pairs (lines {lines} of {self.cfile}); give qa_pair_id",
            )
            return None
        return found[0]

    def _add(self, pair: Gold, hit: Hit, line: int) -> None:
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
