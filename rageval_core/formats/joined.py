"""What the two-file formats (qa_pairs, tatrag) share: a companion set of expected answers, read
in file order, joined with the primary file's retrieval entries into queries.

Each format keeps its own keys, sniffing and join rule (qa_pairs by id or question, tatrag also
by index); the companion entries, the hits, the checks of one entry's documents and the final
join into Query objects are the same and live here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval_core.errors import ProblemLog
from rageval_core.formats.base import HEADER_KEY, display_path, merge_info, read_sidecar
from rageval_core.formats.jsonarray import (
    TRUNCATED,
    Extras,
    KeyWarner,
    describe,
    id_text,
    iter_records,
    parse_chunk,
    read_text,
)
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo


@dataclass
class Gold:
    """One entry of the companion set: a QA pair or a TAT-RAG gold query."""

    line: int
    query_id: str
    query: str
    evidence: tuple[str, ...]
    reference_answer: str | None
    tags: dict[str, str]
    relevance: dict[str, int] | None = None
    #: False when the entry has errors: it keeps its place (a join by index must not shift)
    #: and what is known of it (so its retrieval is not reported a second time as matching
    #: nothing).
    valid: bool = True


@dataclass
class Hit:
    """One retrieval entry matched to a companion entry."""

    line: int
    chunks: tuple[Chunk, ...]
    extras: Extras = field(default_factory=Extras)


#: parse(entry, index, line, file, log, keys) -> the companion entry (invalid when it has errors)
ParseGold = Callable[[Any, int, int, str, ProblemLog, KeyWarner], Gold]
#: join(golds, primary, primary's display name, companion's display name, log) -> the hit of
#: each companion entry, in their order (None: no retrieval entry matched it)
Join = Callable[[list[Gold], Path, str, str, ProblemLog], list["Hit | None"]]


def read_joined(
    primary: Path,
    companion: Path | None,
    log: ProblemLog,
    *,
    format: str,
    role: str,
    needs: str,
    parse: ParseGold,
    id_field: str,
    join: Join,
    field: str,
    output: str,
) -> ParsedRun:
    """Read the companion set, join the primary file's entries to it and make the queries.

    role, needs: the field and message of the error when the companion is missing; id_field: the companion's id key; field,
    output: where and what to warn about for an entry nothing matched (see joined_queries).
    """
    pfile = display_path(primary)
    info = merge_info(RunInfo(), read_sidecar(primary, log))
    if companion is None:
        log.error(pfile, 0, role, needs)
        return ParsedRun(info, [], format, (pfile,))
    cfile = display_path(companion)
    golds = read_golds(companion, cfile, log, parse, id_field)
    if golds is None:
        return ParsedRun(info, [], format, (pfile, cfile))
    hits = join(golds, primary, pfile, cfile, log)
    queries = joined_queries(golds, hits, cfile, log, field, output)
    return ParsedRun(info, queries, format, (pfile, cfile))


def read_gold_questions(
    companion: Path, log: ProblemLog, *, format: str, parse: ParseGold, id_field: str
) -> ParsedRun:
    """The companion set alone as questions with their gold, nothing retrieved (what
    `rageval collect` sends): a QA-pair file or a TAT-RAG golden set without its results."""
    cfile = display_path(companion)
    golds = read_golds(companion, cfile, log, parse, id_field) or []
    queries = [_query(g, g.line) for g in golds if g.valid]
    return ParsedRun(RunInfo(), queries, format, (cfile,))


def _query(gold: Gold, line: int, **found: Any) -> Query:
    """The query of a companion entry, with what its retrieval entry found (if any)."""
    return Query(
        query_id=gold.query_id,
        query=gold.query,
        relevance=gold.relevance,
        evidence=gold.evidence,
        reference_answer=gold.reference_answer,
        tags=gold.tags,
        line=line,
        **found,
    )


def read_golds(
    path: Path, file: str, log: ProblemLog, parse: ParseGold, id_field: str
) -> list[Gold] | None:
    """The companion set in file order (entries with errors included, marked invalid).

    An id given twice is an error on the second entry (id_field names the key in messages).
    """
    text = read_text(path, file, log)
    if text is None:
        return None
    golds: list[Gold] = []
    seen: dict[str, int] = {}
    keys = KeyWarner(file, log)
    for index, (line, entry) in enumerate(iter_records(text, file, log)):
        gold = parse(entry, index, line, file, log, keys)
        if gold.valid and gold.query_id in seen:
            log.error(
                file,
                line,
                id_field,
                f'duplicate "{gold.query_id}" (first on line {seen[gold.query_id]})',
            )
            gold.valid = False
        if gold.valid:
            seen[gold.query_id] = line
        golds.append(gold)
    return golds


def joined_queries(
    golds: Sequence[Gold],
    hits: Sequence[Hit | None],
    cfile: str,
    log: ProblemLog,
    field: str,
    output: str,
) -> list[Query]:
    """One query per valid companion entry, with its hit (hits[i] belongs to golds[i]).

    An entry without a hit is warned about (at field, naming the retrieval `output`) and scored
    as an empty ranking.
    """
    queries = []
    for gold, hit in zip(golds, hits, strict=True):
        if not gold.valid:
            continue
        if hit is None:
            log.warn(
                cfile,
                gold.line,
                field,
                f"no retrieval {output} for {gold.query_id}; scored as an empty ranking",
            )
            hit = Hit(0, ())
        queries.append(
            _query(
                gold,
                hit.line,
                retrieved=hit.chunks,
                answer=hit.extras.answer,
                latency_ms=hit.extras.latency_ms,
                tokens=hit.extras.tokens,
            )
        )
    return queries


def is_native_record(record: Mapping[str, Any]) -> bool:
    """Whether a record is rageval's own (its header, or query_id beside retrieved): never
    claimed by a joined format."""
    return HEADER_KEY in record or ("query_id" in record and "retrieved" in record)


def sniff_doc_lists(
    values: Sequence[Any], is_doc: Callable[[Any], bool], primary: str, empty: str | None
) -> str | None:
    """The role of a file that holds lists of documents (an id -> its documents): primary when
    the first document of the first list with one is the format's (is_doc), None when it is
    not or when the values are not all lists, `empty` when every list is empty."""
    values = [v for v in values if v is not TRUNCATED]
    if not values or not all(isinstance(v, list) for v in values):
        return None
    for docs in values:
        if docs:
            return primary if is_doc(docs[0]) else None
    return empty


def shorten(text: str, limit: int = 60) -> str:
    """text in double quotes, cut to limit characters (with "...") for a message."""
    shown = text if len(text) <= limit else text[: limit - 3] + "..."
    return f'"{shown}"'


class EntryReader:
    """The checks of one retrieval entry that both formats make, reporting to file."""

    def __init__(self, file: str, log: ProblemLog, text_keys: tuple[str, ...]) -> None:
        self.file = file
        self.log = log
        self.keys = KeyWarner(file, log)
        self.text_keys = text_keys

    def docs_key(
        self, entry: Mapping[str, Any], line: int, doc_keys: tuple[str, ...], field: str
    ) -> str | None:
        """The one key of entry that holds its documents; None (reported at field) when none
        or several do."""
        present = [k for k in doc_keys if k in entry]
        if not present:
            self.log.error(self.file, line, field, f"required (one of {', '.join(doc_keys)})")
            return None
        if len(present) > 1:
            self.log.error(
                self.file,
                line,
                present[1],
                f"more than one list of documents ({', '.join(present)})",
            )
            return None
        return present[0]

    def chunks(self, docs: Any, where: str, line: int) -> tuple[Chunk, ...] | None:
        """The documents as chunks in rank order; None when any is invalid (each reported)."""
        if not isinstance(docs, list):
            self.log.error(self.file, line, where, f"expected an array, got {describe(docs)}")
            return None
        chunks = [
            parse_chunk(doc, f"{where}[{rank}]", line, self.file, self.log, self.text_keys)
            for rank, doc in enumerate(docs)
        ]
        return None if None in chunks else tuple(c for c in chunks if c is not None)

    def query_id(self, value: Any, line: int, key: str) -> str | None:
        """value as a query id; None (reported at key) when it is not one."""
        query_id = id_text(value)
        if query_id is None:
            self.log.error(
                self.file,
                line,
                key,
                f"expected a non-empty string or an integer, got {describe(value)}",
            )
        return query_id
