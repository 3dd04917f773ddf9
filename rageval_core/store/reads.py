"""What the core asks of one stored run's rows, answered as Arrow tables or plain rows.

The store's SQL lives here and in its siblings, so no module outside store/ writes any: callers
name the question (the arrays of a run, one query's rows, a list of pairs' texts) and get data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from rageval_core.matching.keys import ScorerKey
from rageval_core.store.store import Store

Row = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class RunTables:
    """One run's numeric rows (no texts) as Arrow tables: what rundata.RunData is built from."""

    queries: pa.Table  # query_id, in_run, has_qrels; in qidx order
    chunks: pa.Table  # qidx, rank, score
    labels: pa.Table  # qidx, rank, rel: judged chunks only, at their document's first rank
    qrels: pa.Table  # qidx, rel: one row per qrels line
    spans: pa.Table  # qidx, n: gold evidence spans of each query that has any
    tags: pa.Table  # qidx, key, value
    latency: pa.Table  # qidx, stage, ms
    tokens: pa.Table  # qidx, kind, n


def run_tables(store: Store, run_id: int) -> RunTables:
    """The run's numeric rows, each table as DuckDB hands it over (Arrow: no Python object per row).

    Only the queries come sorted; every other table comes in storage order, which the caller
    indexes by qidx and rank (a sort would cost more than it saves).
    """
    with store._cursor() as cur:

        def fetch(sql: str) -> pa.Table:
            return cur.sql(sql, params=[run_id]).to_arrow_table()  # type: ignore[union-attr]

        q = fetch("SELECT query_id, in_run, has_qrels FROM queries WHERE run_id = ? ORDER BY qidx")
        ch = fetch("SELECT qidx, rank, score FROM chunks WHERE run_id = ?")
        # The label of a chunk is its document's qrels label, at the document's first rank only
        # (a repeated document cannot be found twice): as trec_eval's -c/duplicate handling.
        # Only judged chunks come back (the join); every other chunk is labelled 0.
        lab = cur.sql(
            """SELECT c.qidx, c.rank, r.rel FROM chunks c JOIN qrels r
                 ON r.qidx = c.qidx AND r.doc_id = c.doc_id
               WHERE c.run_id = ? AND r.run_id = ?
               QUALIFY row_number() OVER (PARTITION BY c.qidx, c.doc_id ORDER BY c.rank) = 1""",
            params=[run_id, run_id],
        ).to_arrow_table()  # type: ignore[union-attr]
        judged = fetch("SELECT qidx, rel FROM qrels WHERE run_id = ?")
        spans = fetch("SELECT qidx, count(*) AS n FROM evidence WHERE run_id = ? GROUP BY qidx")
        tags = fetch("SELECT qidx, key, value FROM tags WHERE run_id = ?")
        # in each record's order: the stages' pipeline order (ops.pipeline_order) comes from it
        lat = fetch("SELECT qidx, stage, ms FROM latency WHERE run_id = ? ORDER BY qidx, pos")
        tok = fetch("SELECT qidx, kind, n FROM tokens WHERE run_id = ?")
    return RunTables(q, ch, lab, judged, spans, tags, lat, tok)


#: rageval_core.matching.numbers.NUMBER for DuckDB's RE2, and numbers.canonical as SQL on a token t
#: (tests hold the two equal)
NUMBER_PATTERN = r"[0-9]+(?:[.,][0-9]+)*"
_CANONICAL_SQL = (
    r"regexp_replace(regexp_replace(regexp_replace(replace(t, ',', ''), '(\.[0-9]*?)0+$', '\1'),"
    r" '\.$', ''), '^0+([0-9])', '\1')"
)
_NUMBERS_SQL = f"""
WITH spans AS (
    SELECT qidx, eidx, nums FROM (
        SELECT qidx, eidx, list_distinct(list_transform(
                   regexp_extract_all(text, '{NUMBER_PATTERN}'), lambda t: {_CANONICAL_SQL})) AS nums
        FROM evidence WHERE run_id = ?)
    WHERE len(nums) > 0
), chunk_numbers AS (
    SELECT qidx, rank, list_transform(
               regexp_extract_all(coalesce(text, ''), '{NUMBER_PATTERN}'), lambda t: {_CANONICAL_SQL}
           ) AS nums
    FROM chunks WHERE run_id = ? AND qidx IN (SELECT qidx FROM spans)
)
SELECT s.qidx, c.rank, s.eidx FROM spans s JOIN chunk_numbers c ON c.qidx = s.qidx
WHERE NOT list_has_all(c.nums, s.nums)
"""


def numbers_missing_pairs(store: Store, run_id: int) -> pa.Table:
    """(qidx, rank, eidx) of every pair whose gold span holds a number its chunk does not
    (rageval_core.matching.numbers: the "numbers must match" guard), computed by DuckDB over the run."""
    with store._cursor() as cur:
        return cur.sql(_NUMBERS_SQL, params=[run_id, run_id]).to_arrow_table()  # type: ignore[union-attr,no-any-return]


def canonical_numbers_sql(store: Store, tokens: list[str]) -> list[str]:
    """numbers.canonical of each token, as the SQL of numbers_missing_pairs computes it (tests)."""
    with store._cursor() as cur:
        rows = cur.execute(
            f"SELECT {_CANONICAL_SQL} FROM (SELECT unnest(?::VARCHAR[]) AS t, "
            "generate_subscripts(?::VARCHAR[], 1) AS i) ORDER BY i",
            [tokens, tokens],
        ).fetchall()
    return [r[0] for r in rows]


def numbers_in_sql(store: Store, text: str) -> list[str]:
    """The number tokens of text as DuckDB's RE2 finds them (tests)."""
    with store._cursor() as cur:
        row = cur.execute(f"SELECT regexp_extract_all(?, '{NUMBER_PATTERN}')", [text]).fetchall()
    return list(row[0][0])


#: every stored text of a run a search looks in, with the query it belongs to
_TEXT_SEARCH_SQL = """
SELECT qidx FROM queries WHERE run_id = ? AND (
    query ILIKE ? ESCAPE '\\' OR answer ILIKE ? ESCAPE '\\' OR reference_answer ILIKE ? ESCAPE '\\')
UNION SELECT qidx FROM chunks WHERE run_id = ? AND text ILIKE ? ESCAPE '\\'
UNION SELECT qidx FROM evidence WHERE run_id = ? AND text ILIKE ? ESCAPE '\\'
"""


def text_search(store: Store, run_id: int, needle: str) -> list[int]:
    """qidx of every query whose text, answer, reference answer, a chunk or a gold span holds
    needle (case-insensitive, plain text: % and _ match themselves)."""
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    pattern = f"%{escaped}%"
    with store._cursor() as cur:
        rows = cur.execute(
            _TEXT_SEARCH_SQL, [run_id, pattern, pattern, pattern, run_id, pattern, run_id, pattern]
        ).fetchall()
    return sorted(int(r[0]) for r in rows)


def shared_query_counts(store: Store, run_id: int) -> dict[int, int]:
    """{run_id: how many of its query ids run_id also holds}, for every stored run (0 included)."""
    with store._cursor() as cur:
        rows = cur.execute(
            "SELECT r.run_id, count(b.query_id) FROM runs r "
            "LEFT JOIN queries q ON q.run_id = r.run_id "
            "LEFT JOIN (SELECT DISTINCT query_id FROM queries WHERE run_id = ?) b "
            "ON b.query_id = q.query_id GROUP BY r.run_id",
            [run_id],
        ).fetchall()
    return {int(r): int(n) for r, n in rows}


def query_texts(store: Store, run_id: int) -> list[str | None]:
    """The query texts of the run in qidx order (None where a query has none)."""
    with store._cursor() as cur:
        rows = cur.execute(
            "SELECT query FROM queries WHERE run_id = ? ORDER BY qidx", [run_id]
        ).fetchall()
    return [r[0] for r in rows]


def top_doc_ids(store: Store, run_id: int, k: int) -> list[tuple[int, str, int, str]]:
    """(qidx, query_id, rank, doc_id) of every chunk the run ranks 1..k (ranks as retrieved),
    by query and rank: the labelling queue's candidates."""
    with store._cursor() as cur:
        rows = cur.execute(
            "SELECT c.qidx, q.query_id, c.rank, c.doc_id FROM chunks c "
            "JOIN queries q ON q.run_id = c.run_id AND q.qidx = c.qidx "
            "WHERE c.run_id = ? AND c.rank <= ? ORDER BY c.qidx, c.rank",
            [run_id, k],
        ).fetchall()
    return [(int(i), str(q), int(r), str(d)) for i, q, r, d in rows]


@dataclass(frozen=True, slots=True)
class QueryRows:
    """Every row of one query the drilldown shows, each list in its table's order."""

    query: Row  # query_id, query, answer, reference_answer, in_run, has_qrels
    chunks: list[Row]  # rank, doc_id, text, score; by rank
    evidence: list[Row]  # eidx, text; by eidx
    qrels: list[Row]  # doc_id, rel; in file order
    pairs: list[Row]  # rank, eidx, score, span_start, span_end; [] unless asked for


def query_rows(store: Store, run_id: int, qidx: int, key: ScorerKey, pairs: bool) -> QueryRows:
    """One query's rows; pairs: its kept pair scores for the key too (they must be kept)."""
    with store._cursor() as cur:
        q = cur.execute(
            "SELECT query_id, query, answer, reference_answer, in_run, has_qrels FROM queries "
            "WHERE run_id = ? AND qidx = ?",
            [run_id, qidx],
        ).fetchall()[0]
        ch = cur.execute(
            "SELECT rank, doc_id, text, score FROM chunks WHERE run_id = ? AND qidx = ? ORDER BY rank",
            [run_id, qidx],
        ).fetchall()
        ev = cur.execute(
            "SELECT eidx, text FROM evidence WHERE run_id = ? AND qidx = ? ORDER BY eidx",
            [run_id, qidx],
        ).fetchall()
        qrels = cur.execute(
            "SELECT doc_id, rel FROM qrels WHERE run_id = ? AND qidx = ? ORDER BY pos",
            [run_id, qidx],
        ).fetchall()
        scored = (
            cur.execute(
                "SELECT rank, eidx, score, span_start, span_end FROM pair_scores "
                "WHERE run_id = ? AND scorer = ? AND norm = ? AND qidx = ?",
                [run_id, key.stored, key.norm.key, qidx],
            ).fetchall()
            if pairs
            else []
        )
    return QueryRows(q, ch, ev, qrels, scored)


#: The inner join with pair_scores drops a pair that has no kept score row (a chunk without
#: text: 0.0 in the score tensor, never scored). The chunks and evidence of the asked queries
#: are read first, on their own (MATERIALIZED): a scan filtered by a list of queries reads the
#: texts of those queries' row vectors only, where a join probed with the pairs read every
#: chunk's text (the two timed: docs/benchmarks.md, "Figures behind the code").
_PAIR_TEXTS_SQL = """
WITH n AS (SELECT unnest(?::BIGINT[]) AS i, unnest(?::INTEGER[]) AS qidx,
                  unnest(?::INTEGER[]) AS rank, unnest(?::INTEGER[]) AS eidx),
c AS MATERIALIZED (SELECT qidx, rank, doc_id, text FROM chunks
                   WHERE run_id = ? AND qidx IN (SELECT unnest(?::INTEGER[]))),
e AS MATERIALIZED (SELECT qidx, eidx, text FROM evidence
                   WHERE run_id = ? AND qidx IN (SELECT unnest(?::INTEGER[])))
SELECT n.i, q.query_id, q.query, c.doc_id, e.text, c.text, p.span_start, p.span_end
FROM n
JOIN pair_scores p ON p.run_id = ? AND p.scorer = ? AND p.norm = ?
                  AND p.qidx = n.qidx AND p.rank = n.rank AND p.eidx = n.eidx
JOIN queries q ON q.run_id = ? AND q.qidx = n.qidx
JOIN c ON c.qidx = n.qidx AND c.rank = n.rank
JOIN e ON e.qidx = n.qidx AND e.eidx = n.eidx
ORDER BY n.i
"""


def pair_texts(
    store: Store,
    run_id: int,
    key: ScorerKey,
    qidx: list[int],
    rank: list[int],
    eidx: list[int],
) -> list[Row]:
    """The texts of the pairs (qidx[i], rank[i], eidx[i]) (1-based ranks), in the order asked.

    Rows are (i, query_id, query, doc_id, evidence text, chunk text, span_start, span_end); a
    pair without a kept score row for the key (a chunk without text) is left out.
    """
    with store._cursor() as cur:
        return cur.execute(
            _PAIR_TEXTS_SQL,
            [
                list(range(len(qidx))),
                qidx,
                rank,
                eidx,
                run_id,
                qidx,
                run_id,
                qidx,
                run_id,
                key.stored,
                key.norm.key,
                run_id,
            ],
        ).fetchall()
