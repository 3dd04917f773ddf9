"""TAT-RAG: a golden set (query, answer, source, gold spans or files) joined with retrieval output.

The golden set is the companion file: a JSON array (or JSON Lines) of
{query, answer, source, gold: [{content, type: "TEXT" | "FILE"}]}; the real TAT-RAG
golden_set.json omits type (TEXT is meant) and adds page / para_index, which are ignored.
The retrieval output is the primary file, documents {id, content, score, metadata}, given as
- an array (or JSON Lines) aligned with the golden set by index, each element a list of
  documents or an object {query | question, documents | results | retrieved | retrieved_docs};
- an object mapping query text -> list of documents;
- TAT-RAG's own `evaluate_retrieval.py --save-details` output {"summary", "details": [...]},
  whose documents carry content_preview (the first 200 characters) instead of content.
Both files are loaded whole (the join needs all of the golden set and any retrieval order).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rageval_core.errors import ProblemLog
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
    describe,
    id_text,
    iter_array,
    iter_object,
    iter_records,
    layout_of,
    parse_extras,
    peek_first,
    read_text,
    tag_text,
    value_problem,
)
from rageval_core.model import ParsedRun, Query

FORMAT = "tatrag"
PRIMARY = "retrieval"
COMPANION = "gold"
COMPANION_REQUIRED = True

DOC_KEYS = ("documents", "results", "retrieved", "retrieved_docs")
_QUERY_KEYS = ("query", "question")
#: Where a document's text is: content; content_preview in --save-details output.
_TEXT_KEYS = ("content", "content_preview", "text")
_ID_KEYS = ("query_id", "id")
#: Keys of a retrieval entry that TAT-RAG's scripts write and that add nothing to the model.
_IGNORED_ENTRY_KEYS = {"metrics", "contexts", "model", "ground_truth", "reference"}
#: Keys of a gold item in the real golden_set.json that have no place in the model.
_IGNORED_GOLD_KEYS = {"page", "para_index"}
_GOLD_ENTRY_KEYS = ("query", "answer", "source", "gold", *_ID_KEYS)
_ENTRY_KEYS = (*DOC_KEYS, *_ID_KEYS, *_QUERY_KEYS, *EXTRA_KEYS, *_IGNORED_ENTRY_KEYS)


# -- sniffing ----------------------------------------------------------------------------------


def sniff(path: Path, head: bytes) -> str | None:
    """PRIMARY for retrieval output, COMPANION for a golden set, None when not TAT-RAG."""
    top = peek_first(head)
    if isinstance(top, list):
        items = [x for x in top if x is not TRUNCATED]
        if not items:
            return None
        if isinstance(items[0], Mapping):
            return _sniff_record(items[0])
        return sniff_doc_lists(items, _is_tatrag_doc, PRIMARY, empty=PRIMARY)
    if isinstance(top, Mapping):
        role = _sniff_record(top)
        if role is not None:
            return role
        details = top.get("details")
        if isinstance(details, list) and details and isinstance(details[0], Mapping):
            return PRIMARY if _is_entry(details[0]) else None
        return sniff_doc_lists(list(top.values()), _is_tatrag_doc, PRIMARY, empty=None)
    return None


def _sniff_record(record: Mapping[str, Any]) -> str | None:
    if is_native_record(record):
        return None
    if "query" in record and "gold" in record:
        return COMPANION
    return PRIMARY if _is_entry(record) else None


def _is_entry(record: Mapping[str, Any]) -> bool:
    """A retrieval entry of ours: query text plus documents with content (qa_pairs' have text)."""
    if "qa_pair_id" in record or not any(k in record for k in _QUERY_KEYS):
        return False
    if "retrieved_docs" in record:
        return True
    for key in DOC_KEYS:
        docs = record.get(key)
        if isinstance(docs, list):
            if docs:
                return _is_tatrag_doc(docs[0])
            return "query" in record
    return False


def _is_tatrag_doc(doc: Any) -> bool:
    return (
        isinstance(doc, Mapping)
        and ("content" in doc or "content_preview" in doc)
        and ("text" not in doc)
    )


# -- reading -----------------------------------------------------------------------------------


def read(primary: Path, companion: Path | None, log: ProblemLog) -> ParsedRun:
    """Join the retrieval output (primary) with its golden set (companion) into queries."""
    run = read_joined(
        primary,
        companion,
        log,
        format=FORMAT,
        role=COMPANION,
        needs="TAT-RAG retrieval output needs its golden set file",
        parse=_parse_gold,
        id_field="query_id",
        join=_join,
        field="query",
        output="output",
    )
    _check_file_ids(list(run.queries), run.sources[-1], log)
    return run


def read_questions(companion: Path, parts: Mapping[str, Path], log: ProblemLog) -> ParsedRun:
    """The TAT-RAG golden set alone: its questions with their gold, nothing retrieved."""
    return read_gold_questions(
        companion, log, format=FORMAT, parse=_parse_gold, id_field="query_id"
    )


def _join(
    golds: list[Gold], path: Path, file: str, gfile: str, log: ProblemLog
) -> list[Hit | None]:
    hits = _Joiner(golds, file, gfile, log).read(path)
    return [hits.get(index) for index in range(len(golds))]


def _check_file_ids(queries: list[Query], gfile: str, log: ProblemLog) -> None:
    """Warn when FILE gold can never count: no retrieved document id is any gold file name.

    TAT-RAG's own evaluator matches a FILE by its base name inside metadata (table_path,
    source); rageval scores ids exactly, so the retrieval output must use the file name as id.
    """
    wanted = {doc for q in queries for doc in (q.relevance or {})}
    if not wanted:
        return
    got = {c.doc_id for q in queries for c in q.retrieved or ()}
    if not wanted & got:
        log.warn(
            gfile,
            0,
            "gold",
            "no retrieved document id is a FILE gold name, so id metrics (recall, "
            "nDCG ...) will be 0; give documents the file name as id",
        )


def _parse_gold(
    entry: Any, index: int, line: int, file: str, log: ProblemLog, keys: KeyWarner
) -> Gold:
    broken = Gold(line, f"q{index + 1}", "", (), None, {}, valid=False)
    if not isinstance(entry, Mapping):
        log.error(file, line, "entry", f"expected an object, got {describe(entry)}")
        return broken
    ok = True
    query = entry.get("query")
    if query is None:
        log.error(file, line, "query", "required")
        ok = False
    elif not isinstance(query, str) or not query.strip():
        log.error(file, line, "query", f"expected a non-empty string, got {describe(query)}")
        ok = False
    query_id = f"q{index + 1}"
    for key in _ID_KEYS:
        if entry.get(key) is not None:
            query_id = id_text(entry[key]) or ""
            if not query_id:
                log.error(
                    file,
                    line,
                    key,
                    f"expected a non-empty string or an integer, got {describe(entry[key])}",
                )
                ok = False
            break
    answer = entry.get("answer")
    if answer is not None:
        answer = tag_text(answer)
        if answer is None:
            log.error(file, line, "answer", f"expected a string, got {describe(entry['answer'])}")
            ok = False
    tags: dict[str, str] = {}
    if entry.get("source") is not None:
        source = tag_text(entry["source"])
        if source is None:
            log.error(file, line, "source", f"expected a string, got {describe(entry['source'])}")
            ok = False
        else:
            tags["source"] = source
    evidence: list[str] = []
    files: dict[str, int] = {}
    gold = entry.get("gold")
    if gold is None:
        log.error(file, line, "gold", "required")
        ok = False
    elif not isinstance(gold, list):
        log.error(file, line, "gold", f"expected an array, got {describe(gold)}")
        ok = False
    else:
        for i, item in enumerate(gold):
            where = f"gold[{i}]"
            if not isinstance(item, Mapping):
                log.error(file, line, where, f"expected an object, got {describe(item)}")
                ok = False
                continue
            content = item.get("content")
            if not isinstance(content, str) or not content.strip():
                problem = value_problem(content, "a non-empty string")
                log.error(file, line, f"{where}.content", problem)
                ok = False
                continue
            kind = item.get("type") or "TEXT"  # the real golden set leaves TEXT implicit
            if not isinstance(kind, str) or kind.upper() not in ("TEXT", "FILE"):
                log.error(file, line, f"{where}.type", f'expected "TEXT" or "FILE", got {kind!r}')
                ok = False
                continue
            if kind.upper() == "TEXT":
                evidence.append(content)
            else:
                files[content] = 1  # a file name is a document id
            for key in item:
                if key not in ("content", "type") and key not in _IGNORED_GOLD_KEYS:
                    keys.unknown(line, f"gold[].{key}", ("content", "type"))
    for key in entry:
        if key not in _GOLD_ENTRY_KEYS:
            keys.unknown(line, key, _GOLD_ENTRY_KEYS)
    if not ok:  # keep what is known, so a retrieval entry for it is not reported again
        broken.query_id = query_id or broken.query_id
        broken.query = query if isinstance(query, str) else ""
        return broken
    assert isinstance(query, str)  # ok is False otherwise
    return Gold(line, query_id, query, tuple(evidence), answer, tags, files or None)


class _Joiner(EntryReader):
    """Reads the retrieval output and matches each entry to a gold query (by id, text or index)."""

    def __init__(self, golds: list[Gold], file: str, gfile: str, log: ProblemLog) -> None:
        super().__init__(file, log, _TEXT_KEYS)
        self.golds = golds
        self.gfile = gfile
        self.by_id: dict[str, int] = {}
        self.by_text: dict[str, list[int]] = {}
        for i, g in enumerate(golds):
            self.by_id.setdefault(g.query_id, i)
            if g.query.strip():
                self.by_text.setdefault(g.query.strip(), []).append(i)
        self.hits: dict[int, Hit] = {}

    def read(self, path: Path) -> dict[int, Hit]:
        text = read_text(path, self.file, self.log)
        if text is None:
            return self.hits
        if layout_of(text) != "object":
            for index, (line, entry) in enumerate(iter_records(text, self.file, self.log)):
                self._entry(entry, index, line)
            return self.hits
        members = list(iter_object(text, self.file, self.log))
        record = {key: value for _, key, value, _ in members}
        keyed = any(k in record for k in (*_QUERY_KEYS, *_ID_KEYS))
        if keyed and any(k in record for k in DOC_KEYS):
            self._entry(record, 0, members[0][0])  # one entry alone (JSON Lines of one line)
            return self.hits
        details = [m for m in members if m[1] == "details" and isinstance(m[2], list)]
        if details and all(isinstance(e, Mapping) for e in details[0][2]):
            # evaluate_retrieval.py --save-details: {"summary": {...}, "details": [entries]}
            elements = iter_array(text, self.file, self.log, start=details[0][3], nested=True)
            for index, (line, entry) in enumerate(elements):
                self._entry(entry, index, line)
            return self.hits
        for line, query, docs, _ in members:  # query text -> list of documents
            matched = self._by_text(query, line, "query")
            chunks = self.chunks(docs, "documents", line)
            if matched is not None and chunks is not None:
                self._add(matched, Hit(line, chunks), line)
        return self.hits

    def _entry(self, entry: Any, index: int, line: int) -> None:
        if isinstance(entry, list):  # documents only: aligned with the golden set by index
            chunks = self.chunks(entry, "documents", line)
            matched = self._by_index(index, line)
            if matched is not None and chunks is not None:
                self._add(matched, Hit(line, chunks), line)
            return
        if not isinstance(entry, Mapping):
            self.log.error(
                self.file,
                line,
                "entry",
                f"expected an object or an array of documents, got {describe(entry)}",
            )
            return
        docs_key = self.docs_key(entry, line, DOC_KEYS, "documents")
        if docs_key is None:
            return
        chunks = self.chunks(entry[docs_key], docs_key, line)
        extras = parse_extras(entry, line, self.file, self.log)
        id_key = next((k for k in _ID_KEYS if entry.get(k) is not None), None)
        query_key = next((k for k in _QUERY_KEYS if entry.get(k) is not None), None)
        if id_key is not None:
            matched = self._by_id(entry[id_key], id_key, line)
        elif query_key is not None:
            matched = self._by_text(entry[query_key], line, query_key, index)
        else:
            matched = self._by_index(index, line)
        for key in entry:
            if key not in _ENTRY_KEYS:
                self.keys.unknown(line, key, _ENTRY_KEYS)
        if matched is not None and chunks is not None and extras is not None:
            self._add(matched, Hit(line, chunks, extras), line)

    def _by_id(self, value: Any, key: str, line: int) -> int | None:
        query_id = self.query_id(value, line, key)
        if query_id is None:
            return None
        if query_id not in self.by_id:
            self.log.error(
                self.file, line, key, f'"{query_id}" matches no query in the gold set {self.gfile}'
            )
            return None
        return self.by_id[query_id]

    def _by_text(self, value: Any, line: int, key: str, index: int = -1) -> int | None:
        if not isinstance(value, str):
            self.log.error(self.file, line, key, f"expected a string, got {describe(value)}")
            return None
        found = self.by_text.get(value.strip(), [])
        if not found:
            self.log.error(
                self.file,
                line,
                key,
                f"{shorten(value)} matches no query in the gold set {self.gfile}",
            )
            return None
        if len(found) > 1 and index in found:
            # a question asked twice in the golden set (TAT-RAG's has one): the output is in
            # golden-set order, so its position says which
            lines = ", ".join(str(self.golds[i].line) for i in found)
            self.log.warn(
                self.file,
                line,
                key,
                f"{shorten(value)} matches several gold queries (lines {lines} of {self.gfile}); "
                f"joined by position with the one on line {self.golds[index].line}",
            )
            return index
        if len(found) > 1:
            lines = ", ".join(str(self.golds[i].line) for i in found)
            self.log.error(
                self.file,
                line,
                key,
                f"{shorten(value)} matches several gold queries (lines {lines} of {self.gfile})",
            )
            return None
        return found[0]

    def _by_index(self, index: int, line: int) -> int | None:
        if index >= len(self.golds):
            self.log.error(
                self.file,
                line,
                "documents",
                f"entry {index + 1} has no gold query (the gold set has {len(self.golds)})",
            )
            return None
        return index

    def _add(self, index: int, hit: Hit, line: int) -> None:
        if not self.golds[index].valid:
            return  # its gold entry is already reported
        if index in self.hits:
            self.log.error(
                self.file,
                line,
                "query",
                f"second retrieval for gold query {self.golds[index].query_id} "
                f"(first on line {self.hits[index].line})",
            )
            return
        self.hits[index] = hit
