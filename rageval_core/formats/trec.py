"""The TREC formats: a run file (``qid Q0 docno rank score tag``) with an optional qrels file.

Read as trec_eval reads them (docs/formats.md, "TREC run and qrels"):
- Each query's documents are ordered by score descending, ties by docno descending (string
  comparison); the rank column is ignored, as trec_eval ignores it.
- Queries keep the order of their first line in the run. Judged queries absent from the run
  follow, with retrieved=None (scored only with --complete) and a warning naming them.
- A document twice in one query of the run is an error (trec_eval refuses such runs).
The run is read whole: documents must be grouped per query and re-sorted before the first
query can be emitted. Query objects are then built lazily, one at a time.

Two routes, one result. A clean file (one row per line, single-space or tab separated, no
comments or blank lines, no problem at all) is read by DuckDB's CSV reader and checked in
bulk (column counts, numbers, duplicates, tags); it is sorted and joined in SQL and handed to
the store as column batches (ParsedRun.columns), or to metrics as arrays (read_arrays). Any
other file is read line by line in Python, which reports every problem at its exact line.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import numpy as np
import pyarrow as pa

from rageval_core.columns import BATCH_SCHEMAS, ColumnBatch
from rageval_core.errors import ProblemLog
from rageval_core.formats.base import (
    GZIP_ERRORS,
    display_path,
    is_gzip,
    merge_info,
    open_bytes,
    read_sidecar,
    unreadable,
)

# the sniffer, the format's names and the number patterns live with the numpy route
from rageval_core.formats.trec_columns import (  # noqa: F401 (FORMAT ... sniff: this reader's)
    _INTEGER,
    _NUMBER,
    COMPANION,
    FORMAT,
    PRIMARY,
    _is_number,
    ranks_within,
    sniff,
)
from rageval_core.formats.fields import Judgements, label_problem
from rageval_core.metrics.arrays import (
    QuerySelection,
    RankedLabels,
    check_rel_level,
    ranked_labels_from_queries,
    ranked_labels_from_rows,
)
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo, label_value

COMPANION_REQUIRED = False

RUN_COLUMNS = "qid Q0 docno rank score tag"
QRELS_COLUMNS = "qid iter docno rel"
#: at most this many missing query ids are named in the warning
_NAMED_MAX = 20


def read(primary: Path, companion: Path | None, log: ProblemLog) -> ParsedRun:
    """Read a TREC run (and its qrels when given) into a ParsedRun; problems go to log."""
    staged = _Staged.load(primary, companion)
    if staged is not None:
        return staged.parsed(log)
    run = _read_run(primary, log)
    qrels = _read_qrels(companion, log) if companion is not None else None
    sources = (display_path(primary),) + (() if companion is None else (display_path(companion),))
    missing: list[str] = []
    if qrels is not None:
        missing = [qid for qid in qrels.labels if qid not in run.docs]
        if missing:
            warn_missing(log, qrels.file, qrels.first_line[missing[0]], missing)
    info = merge_info(RunInfo(name=run.tag), read_sidecar(primary, log))
    return ParsedRun(
        info=info, queries=_queries(run, qrels, missing), format=FORMAT, sources=sources
    )


def read_arrays(
    run: Path,
    qrels: Path | None,
    log: ProblemLog,
    rel_level: int = 1,
    complete: bool = False,
) -> tuple[RankedLabels, QuerySelection]:
    """The files straight to ranking arrays (no Query objects); InputError when they have errors.

    The same arrays and selection as ranked_labels_from_queries(read(run, qrels).queries);
    warnings (judged queries missing from the run, a mixed run tag) stay in log.
    """
    check_rel_level(rel_level)
    staged = _Staged.load(run, qrels)
    if staged is None:
        parsed = read(run, qrels, log)
        log.raise_if_errors()
        arrays = ranked_labels_from_queries(parsed.queries, rel_level, complete)
        log.raise_if_errors()
        return arrays
    staged.warn(log)
    return staged.ranked_labels(rel_level, complete)


def warn_missing(log: ProblemLog, file: str, line: int, missing: list[str]) -> None:
    named = ", ".join(repr(q) for q in missing[:_NAMED_MAX])
    more = f" and {len(missing) - _NAMED_MAX} more" if len(missing) > _NAMED_MAX else ""
    log.warn(
        file,
        line,
        "qid",
        f"{len(missing)} judged {'query is' if len(missing) == 1 else 'queries are'} "
        f"not in the run: {named}{more} "
        "(they score only with --complete, as with trec_eval -c)",
    )


# --- the bulk route: DuckDB's CSV reader, checks and sorting in SQL ------------------------------

#: characters Python's str.split() splits on besides the separator: a field holding one would be
#: cut differently by the line reader (RE2 syntax)
_SPACE_CHARS = (
    r"[\t\n\x{0b}\x{0c}\r\x{1c}-\x{1f} \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}"
    r"\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
)
#: SQL true (or NULL) for a score text the line reader would refuse: only C-float characters,
#: then DuckDB's own cast (which alone also takes "1_0", "+-1", " 1", "inf") must give a finite
#: number; together equal to _NUMBER + float() (tests/core/formats/test_columnar_import.py)
_SCORE_BAD_SQL = (
    "{field} GLOB '*[!0-9.eE+-]*' OR contains({field}, '+-') "
    "OR NOT isfinite(TRY_CAST({field} AS DOUBLE))"
)
#: queries per column batch handed to the store (progress; the tables are sliced, not copied)
_BATCH_QUERIES = 5_000


class _Staged:
    """A clean run (and qrels) loaded into a private in-memory DuckDB and checked in bulk.

    Clean means the line reader would read it without a single problem or warning, other than
    the warning for judged queries missing from the run; and every line holds one row, so row
    i is line i + 1. load() returns None for anything else.
    """

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        run: Path,
        qrels: Path | None,
        tag: str,
        missing: list[tuple[str, int]],
    ) -> None:
        self.con = con
        self.run_file = display_path(run)
        self.qrels_file = display_path(qrels) if qrels is not None else None
        self.sources = (self.run_file,) + (() if self.qrels_file is None else (self.qrels_file,))
        self.primary = run
        self.tag = tag
        self.missing = missing  # (qid, first qrels line), in qrels order
        self._tables: dict[str, pa.Table] | None = None
        self._lines: list[int] = []  # each query's first line (Query.line), by qidx

    @classmethod
    def load(cls, run: Path, qrels: Path | None) -> _Staged | None:
        run_layout = _layout(run)
        qrels_layout = _layout(qrels) if qrels is not None else None
        if run_layout is None or (qrels is not None and qrels_layout is None):
            return None
        if len(run_layout.first) < 6:
            return None
        con = duckdb.connect(":memory:")
        try:
            # rows the line reader would report or read differently are left out, so they
            # show as missing lines
            con.execute(
                "CREATE TABLE run AS SELECT c0 AS qid, c2 AS docno, "
                "TRY_CAST(c4 AS DOUBLE) AS score "
                f"FROM {_csv_source(6, run_layout)} WHERE NOT coalesce("
                "c0 IS NULL OR c1 IS NULL OR c2 IS NULL OR c3 IS NULL OR c4 IS NULL "
                " OR c5 IS NULL OR starts_with(c0, '#') OR c5 <> ? "
                f" OR {_SCORE_BAD_SQL.format(field='c4')} "
                f" {_unicode_spaces(run_layout, 6)}, true)",
                [str(run), run_layout.delim, run_layout.first[5]],
            )
            # a hash collision can only send a clean file the slow way, never the reverse
            counts = _first(
                con.execute(
                    "SELECT count(*), false, count(*) <> count(DISTINCT hash(qid, docno)) FROM run"
                ).fetchall()
            )
            n_lines = run_layout.n_lines
            if counts is None or counts[0] != n_lines or n_lines == 0 or counts[1] or counts[2]:
                con.close()
                return None
            con.execute(
                "CREATE TABLE qmap AS SELECT qid, (row_number() OVER (ORDER BY first) - 1)::INTEGER "
                "AS qidx, first + 1 AS line, true AS in_run, false AS has_qrels "
                "FROM (SELECT qid, min(rowid) AS first FROM run GROUP BY qid)"
            )
            missing: list[tuple[str, int]] = []
            if qrels is not None and qrels_layout is not None:
                missing_or_none = cls._load_qrels(con, qrels, qrels_layout)
                if missing_or_none is None:
                    con.close()
                    return None
                missing = missing_or_none
        except duckdb.Error:
            # the CSV reader refused a line (column count, UTF-8 ...): the line reader says why
            con.close()
            return None
        except BaseException:
            con.close()
            raise
        return cls(con, run, qrels, run_layout.first[5], missing)

    @staticmethod
    def _load_qrels(
        con: duckdb.DuckDBPyConnection, qrels: Path, layout: _Layout
    ) -> list[tuple[str, int]] | None:
        if len(layout.first) != 4:
            return None
        con.execute(
            "CREATE TABLE qrels AS SELECT c0 AS qid, c2 AS docno, TRY_CAST(c3 AS INTEGER) AS rel "
            f"FROM {_csv_source(4, layout)} WHERE NOT coalesce("
            "c0 IS NULL OR c1 IS NULL OR c2 IS NULL OR c3 IS NULL OR starts_with(c0, '#') "
            " OR NOT regexp_full_match(c3, ?) OR TRY_CAST(c3 AS INTEGER) IS NULL "
            f" {_unicode_spaces(layout, 4)}, true)",
            [str(qrels), layout.delim, _INTEGER.pattern[1:-1]],
        )
        counts = _first(
            con.execute(
                "SELECT count(*), false, count(*) <> count(DISTINCT hash(qid, docno)) FROM qrels"
            ).fetchall()
        )
        if (
            counts is None
            or counts[0] != layout.n_lines
            or layout.n_lines == 0
            or counts[1]
            or counts[2]
        ):
            return None
        con.execute("UPDATE qmap SET has_qrels = true WHERE qid IN (SELECT qid FROM qrels)")
        con.execute(
            "INSERT INTO qmap SELECT qid, (n + row_number() OVER (ORDER BY line) - 1)::INTEGER, "
            "line, false, true FROM (SELECT qid, min(rowid) + 1 AS line FROM qrels "
            "WHERE qid NOT IN (SELECT qid FROM qmap) GROUP BY qid), "
            "(SELECT count(*) AS n FROM qmap)"
        )
        missing = [
            (str(qid), int(line))
            for qid, line in con.execute(
                "SELECT qid, line FROM qmap WHERE NOT in_run ORDER BY qidx"
            ).fetchall()
        ]
        return missing

    def query_ids(self) -> list[str]:
        """Every query id in store order (the run's in file order, then judged-only ones)."""
        return [
            str(r[0]) for r in self.con.execute("SELECT qid FROM qmap ORDER BY qidx").fetchall()
        ]

    def warn(self, log: ProblemLog) -> None:
        """The one warning a clean pair of files can carry: judged queries absent from the run."""
        if self.missing and self.qrels_file is not None:
            warn_missing(log, self.qrels_file, self.missing[0][1], [q for q, _ in self.missing])

    def parsed(self, log: ProblemLog) -> ParsedRun:
        self.warn(log)
        info = merge_info(RunInfo(name=self.tag), read_sidecar(self.primary, log))
        return ParsedRun(info, self._queries(), FORMAT, self.sources, self._batches())

    def tables(self) -> dict[str, pa.Table]:
        """queries, chunks and qrels rows as the store keeps them (sorted as trec_eval sorts)."""
        if self._tables is None:
            self._lines = [
                int(r[0])
                for r in self.con.execute("SELECT line FROM qmap ORDER BY qidx").fetchall()
            ]
            has_qrels = _first(
                self.con.execute(
                    "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'qrels'"
                ).fetchall()
            )
            out = {
                "queries": _arrow(
                    self.con,
                    (
                        "SELECT qidx, qid AS query_id, NULL AS query, in_run, has_qrels, NULL AS answer, "
                        "NULL AS reference_answer, NULL AS judge FROM qmap ORDER BY qidx"
                    ),
                ),
                # trec_eval's order: score descending, ties by docno descending; + 0.0 makes
                # -0.0 and 0.0 tie, as they do in Python
                "chunks": _with_ranks(
                    _arrow(
                        self.con,
                        (
                            "SELECT m.qidx, r.docno AS doc_id, NULL AS text, r.score, NULL AS metadata "
                            "FROM run r JOIN qmap m USING (qid) "
                            "ORDER BY m.qidx, r.score + 0.0 DESC, r.docno DESC"
                        ),
                    )
                ),
            }
            if has_qrels is not None and has_qrels[0]:
                out["qrels"] = _arrow(
                    self.con,
                    (
                        "SELECT m.qidx, (row_number() OVER (PARTITION BY m.qidx ORDER BY j.rowid) - 1)"
                        "::INTEGER AS pos, j.docno AS doc_id, j.rel FROM qrels j JOIN qmap m USING (qid) "
                        "ORDER BY m.qidx, pos"
                    ),
                )
            self._tables = {
                name: table.rename_columns(BATCH_SCHEMAS[name].names).cast(BATCH_SCHEMAS[name])
                for name, table in out.items()
            }
            self.con.close()  # everything needed is in the Arrow tables now
        return self._tables

    def _batches(self) -> Iterator[ColumnBatch]:
        tables = self.tables()
        n = tables["queries"].num_rows
        cuts = {
            name: np.searchsorted(
                table.column("qidx").to_numpy(), np.arange(0, n + 1, _BATCH_QUERIES)
            )
            for name, table in tables.items()
        }
        for i, lo in enumerate(range(0, n, _BATCH_QUERIES)):
            hi = min(lo + _BATCH_QUERIES, n)
            sliced = {}
            for name, table in tables.items():
                start = int(cuts[name][i])
                stop = int(cuts[name][i + 1]) if i + 1 < len(cuts[name]) else table.num_rows
                if stop > start:
                    sliced[name] = table.slice(start, stop - start)
            yield ColumnBatch(hi - lo, sliced)

    def _queries(self) -> Iterator[Query]:
        tables = self.tables()
        q = tables["queries"].to_pydict()
        chunks = tables["chunks"]
        c_qidx = chunks.column("qidx").to_numpy()
        docs = chunks.column("doc_id").to_pylist()
        scores = chunks.column("score").to_pylist()
        c_cut = np.searchsorted(c_qidx, np.arange(len(q["qidx"]) + 1))
        judged: dict[int, dict[str, float]] = {}
        if "qrels" in tables:
            qrels = tables["qrels"].to_pydict()
            for qidx, doc, rel in zip(qrels["qidx"], qrels["doc_id"], qrels["rel"], strict=True):
                judged.setdefault(qidx, {})[doc] = label_value(rel)
        lines = self._lines
        for qidx, qid, in_run in zip(q["qidx"], q["query_id"], q["in_run"], strict=True):
            lo, hi = int(c_cut[qidx]), int(c_cut[qidx + 1])
            yield Query(
                query_id=qid,
                retrieved=tuple(
                    [
                        Chunk(doc_id=d, score=sc)
                        for d, sc in zip(docs[lo:hi], scores[lo:hi], strict=True)
                    ]
                )
                if in_run
                else None,
                relevance=judged.get(qidx),
                line=lines[qidx],
            )

    def ranked_labels(self, rel_level: int, complete: bool) -> tuple[RankedLabels, QuerySelection]:
        """trec_eval's selection and labels, computed in SQL (no Query objects)."""
        con = self.con
        has_qrels = _first(
            con.execute(
                "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'qrels'"
            ).fetchall()
        )
        if not (has_qrels and has_qrels[0]):
            con.execute("CREATE TABLE qrels (qid VARCHAR, docno VARCHAR, rel INTEGER)")
        counts = _first(
            con.execute(
                "SELECT count(*) FILTER (WHERE NOT has_qrels), count(*) FILTER (WHERE NOT in_run) FROM qmap"
            ).fetchall()
        )
        skipped, missing = (int(counts[0]), int(counts[1])) if counts else (0, 0)
        con.execute(
            "CREATE OR REPLACE TEMP TABLE sel AS SELECT qid, (row_number() OVER (ORDER BY qidx) - 1)"
            "::BIGINT AS i FROM qmap WHERE has_qrels AND (in_run OR ?)",
            [complete],
        )
        ids = [str(r[0]) for r in con.execute("SELECT qid FROM sel ORDER BY i").fetchall()]
        ret = con.execute(
            "SELECT s.i, coalesce(j.rel, 0) AS label, "
            "(CASE WHEN j.rel IS NULL THEN 0 WHEN j.rel >= 0 THEN 1 ELSE -1 END)::TINYINT AS seen "
            "FROM run r JOIN sel s USING (qid) "
            "LEFT JOIN qrels j ON j.qid = r.qid AND j.docno = r.docno "
            "ORDER BY s.i, r.score + 0.0 DESC, r.docno DESC"
        ).fetchnumpy()
        judged = con.execute("SELECT s.i, j.rel FROM qrels j JOIN sel s USING (qid)").fetchnumpy()
        ret_query = np.asarray(ret["i"], dtype=np.int64)
        arrays = ranked_labels_from_rows(
            ids,
            ret_query,
            ranks_within(ret_query),
            np.asarray(ret["label"], dtype=np.int32),
            np.asarray(judged["i"], dtype=np.int64),
            np.asarray(judged["rel"], dtype=np.int32),
            rel_level=rel_level,
            ret_judged=np.asarray(ret["seen"], dtype=np.int8),
        )
        return arrays, QuerySelection(skipped, missing, complete)


def _with_ranks(chunks: pa.Table) -> pa.Table:
    """The chunk rows (sorted in rank order within each qidx) with their rank column added."""
    rank = ranks_within(chunks.column("qidx").to_numpy().astype(np.int64))
    return chunks.add_column(1, "rank", pa.array(rank.astype(np.int32)))


def _arrow(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    """A query's rows as an Arrow table (DuckDB 2 renamed fetch_arrow_table to to_arrow_table)."""
    relation = con.sql(sql)
    fetch = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
    table: pa.Table = fetch()
    return table


def _first(rows: list[tuple[Any, ...]]) -> tuple[Any, ...] | None:
    return rows[0] if rows else None


def _unicode_spaces(layout: _Layout, n_columns: int) -> str:
    """The SQL test for Unicode spaces inside a field (only a non-ASCII file can hold one)."""
    if layout.ascii:
        return ""
    # a constant pattern of our own (no user value), so it can be part of the SQL text
    fields = ", ".join(f"c{i}" for i in range(n_columns))
    return f"OR regexp_matches(concat({fields}), '{_SPACE_CHARS}')"


def _csv_source(n_columns: int, layout: _Layout) -> str:
    """DuckDB's CSV reader over one file (path and delimiter as its two parameters)."""
    columns = ", ".join(f"'c{i}': 'VARCHAR'" for i in range(n_columns))
    # by the file's bytes, not its name (DuckDB's own guess goes by a .gz suffix)
    compression = "gzip" if layout.gzip else "none"
    return (
        f"read_csv(?, delim = ?, header = false, quote = '', escape = '', columns = {{{columns}}}, "
        f"compression = '{compression}', "
        "auto_detect = false, strict_mode = true, null_padding = false)"
    )


class _Layout(NamedTuple):
    delim: str  # " " or "\t"
    first: list[str]  # tokens of the first line
    n_lines: int
    ascii: bool  # False: fields must be searched for Unicode spaces in SQL
    gzip: bool  # the file is gzip-compressed


#: ASCII bytes Python's str.split() splits on, besides " ", "\t", "\n" and a "\r" before "\n"
_ASCII_SPACES = (b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\x1f")


def _layout(path: Path) -> _Layout | None:
    """How the file is laid out, or None when it is not fit for the bulk route.

    One pass over the bytes (memchr speed): lines are counted (the CSV reader skips empty lines
    silently, and row i must be line i + 1), and separators the CSV reader would not split on
    are looked for.
    """
    try:
        return _scan(path)
    except GZIP_ERRORS:  # a corrupt .gz: the line reader says where
        return None


def _scan(path: Path) -> _Layout | None:
    """_layout's pass over the file."""
    compressed = is_gzip(path)
    with open_bytes(path) as fh:
        head = fh.readline()
        if head.startswith(b"\xef\xbb\xbf"):
            return None  # the line reader keeps a BOM as part of the first qid
        try:
            text = head.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError:
            return None
        delim = "\t" if "\t" in text and " " not in text else " "
        other = (b"\t" if delim == " " else b" ", *_ASCII_SPACES)
        n_lines, is_ascii, last = 0, True, b""
        chunk = head
        while chunk:
            if not chunk.endswith(b"\n"):
                chunk += fh.readline()  # whole lines, so a "\r\n" is never cut in two
            n_lines += chunk.count(b"\n")
            is_ascii = is_ascii and chunk.isascii()
            if any(space in chunk for space in other):
                return None
            if b"\r" in chunk and chunk.count(b"\r") != chunk.count(b"\r\n"):
                return None
            last = chunk
            chunk = fh.read(1 << 24)
    if last and not last.endswith(b"\n"):
        n_lines += 1
    return _Layout(delim, text.split(), n_lines, is_ascii, compressed)


@dataclass(slots=True)
class _Run:
    file: str
    docs: dict[str, list[tuple[float, str]]] = field(default_factory=dict)  # qid -> (score, docno)
    first_line: dict[str, int] = field(default_factory=dict)
    tag: str | None = None


def _queries(run: _Run, qrels: Judgements | None, missing: list[str]) -> Iterator[Query]:
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
    number = 0
    try:
        with open_bytes(path) as fh:
            for number, raw in enumerate(fh, start=1):
                if log.full:
                    return
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    log.error(
                        file, number, "line", f"not valid UTF-8 ({e.reason} at byte {e.start})"
                    )
                    continue
                tokens = line.split()
                if tokens and not tokens[0].startswith("#"):
                    yield number, tokens
    except GZIP_ERRORS as e:  # a .gz file that stops decompressing: where it stopped
        log.error(file, number + 1, "file", unreadable(e))


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


def _read_qrels(path: Path, log: ProblemLog) -> Judgements:
    qrels = Judgements(display_path(path))
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
        # an integer (trec_eval's labels) or a decimal grade such as 0.3, kept as given
        if _INTEGER.match(rel_text):
            label: float = int(rel_text)
        elif _is_number(rel_text):
            label = float(rel_text)
        else:
            log.error(qrels.file, number, "rel", f"expected a number, got {rel_text!r}")
            continue
        problem = label_problem(label)
        if problem is not None:
            log.error(qrels.file, number, "rel", problem)
            continue
        first = qrels.add(qid, docno, label, number)
        if first is not None:
            log.error(
                qrels.file,
                number,
                "docno",
                f"duplicate judgement of {docno!r} for query {qid!r} (first on line "
                f"{first}); trec_eval rejects such qrels",
            )
    if not qrels.lines and not log.errors:
        log.error(qrels.file, 0, "qrels", f"no judgement lines ({QRELS_COLUMNS})")
    return qrels
