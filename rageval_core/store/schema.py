"""The store's tables as numbered migrations, applied in order and recorded in schema_version."""

from __future__ import annotations

from contextlib import suppress
from datetime import UTC, datetime
from typing import Any

import duckdb

from rageval_core.errors import StoreError

#: (version, statements). Append new migrations; never edit one that has shipped.
MIGRATIONS: list[tuple[int, tuple[str, ...]]] = [
    (
        1,
        (
            "CREATE SEQUENCE run_id_seq START 1",
            # Provenance (sources, imported_at) is kept apart from content: content_hash covers
            # the queries plus the run facts except the name, so renaming never changes it.
            """CREATE TABLE runs (
                run_id BIGINT PRIMARY KEY,
                name VARCHAR NOT NULL UNIQUE,
                content_hash VARCHAR NOT NULL UNIQUE,
                format VARCHAR NOT NULL,
                sources VARCHAR NOT NULL,
                created_at VARCHAR,
                description VARCHAR,
                imported_at VARCHAR NOT NULL,
                settings VARCHAR NOT NULL,
                price_prompt_per_1k DOUBLE,
                price_completion_per_1k DOUBLE,
                n_queries BIGINT NOT NULL,
                n_chunks BIGINT NOT NULL,
                max_depth INTEGER NOT NULL
            )""",
            # No keys or indexes on the per-query tables: rows arrive in (run_id, qidx) order, so
            # DuckDB's zone maps already prune by run and qidx range, and indexes would slow bulk
            # inserts of millions of chunks.
            """CREATE TABLE queries (
                run_id BIGINT NOT NULL,
                qidx INTEGER NOT NULL,
                query_id VARCHAR NOT NULL,
                query VARCHAR,
                in_run BOOLEAN NOT NULL,
                has_qrels BOOLEAN NOT NULL,
                answer VARCHAR,
                reference_answer VARCHAR,
                judge VARCHAR
            )""",
            """CREATE TABLE chunks (
                run_id BIGINT NOT NULL,
                qidx INTEGER NOT NULL,
                rank INTEGER NOT NULL,
                doc_id VARCHAR NOT NULL,
                text VARCHAR,
                score DOUBLE,
                metadata VARCHAR
            )""",
            """CREATE TABLE evidence (
                run_id BIGINT NOT NULL,
                qidx INTEGER NOT NULL,
                eidx INTEGER NOT NULL,
                text VARCHAR NOT NULL
            )""",
            # pos keeps each mapping's key order so a loaded Query equals the imported one.
            """CREATE TABLE qrels (
                run_id BIGINT NOT NULL,
                qidx INTEGER NOT NULL,
                pos INTEGER NOT NULL,
                doc_id VARCHAR NOT NULL,
                rel INTEGER NOT NULL
            )""",
            """CREATE TABLE latency (
                run_id BIGINT NOT NULL,
                qidx INTEGER NOT NULL,
                pos INTEGER NOT NULL,
                stage VARCHAR NOT NULL,
                ms DOUBLE NOT NULL
            )""",
            """CREATE TABLE tokens (
                run_id BIGINT NOT NULL,
                qidx INTEGER NOT NULL,
                pos INTEGER NOT NULL,
                kind VARCHAR NOT NULL,
                n BIGINT NOT NULL
            )""",
            """CREATE TABLE tags (
                run_id BIGINT NOT NULL,
                qidx INTEGER NOT NULL,
                pos INTEGER NOT NULL,
                key VARCHAR NOT NULL,
                value VARCHAR NOT NULL
            )""",
        ),
    ),
    (
        2,
        (
            # Evidence x chunk scores, computed once per (run, scorer, normalisation) and reused
            # for every k, threshold and score cut-off (rageval_core.store.scores).
            """CREATE TABLE scorings (
                run_id BIGINT NOT NULL,
                scorer VARCHAR NOT NULL,
                norm VARCHAR NOT NULL,
                n_pairs BIGINT NOT NULL,
                seconds DOUBLE NOT NULL,
                scored_at VARCHAR NOT NULL
            )""",
            """CREATE TABLE pair_scores (
                run_id BIGINT NOT NULL,
                scorer VARCHAR NOT NULL,
                norm VARCHAR NOT NULL,
                qidx INTEGER NOT NULL,
                rank INTEGER NOT NULL,
                eidx INTEGER NOT NULL,
                score FLOAT NOT NULL,
                span_start INTEGER NOT NULL,
                span_end INTEGER NOT NULL
            )""",
        ),
    ),
    (
        3,
        (
            # A person's verdict on one (gold span, chunk) pair: does the chunk contain the span?
            # Keyed like pair_scores, so each label meets the score it was given against
            # (rageval_core.evaluation.tuning). Not recomputable, but deleted with its run.
            """CREATE TABLE pair_labels (
                run_id BIGINT NOT NULL,
                qidx INTEGER NOT NULL,
                rank INTEGER NOT NULL,
                eidx INTEGER NOT NULL,
                scorer VARCHAR NOT NULL,
                norm VARCHAR NOT NULL,
                label BOOLEAN NOT NULL,
                labelled_at VARCHAR NOT NULL
            )""",
        ),
    ),
    (
        4,
        (
            # One row per import or scoring, committed before the work's own transaction and
            # marked done after it, so a process killed inside the work is noticed at the next
            # open (rageval_core.store.journal). Not a run's data: never counted or exported.
            "CREATE SEQUENCE journal_id_seq START 1",
            """CREATE TABLE journal (
                id BIGINT NOT NULL,
                kind VARCHAR NOT NULL,
                source VARCHAR NOT NULL,
                key VARCHAR,
                started_at VARCHAR NOT NULL,
                pid INTEGER NOT NULL,
                host VARCHAR NOT NULL,
                proc_start VARCHAR,
                status VARCHAR NOT NULL,
                finished_at VARCHAR,
                detail VARCHAR
            )""",
        ),
    ),
    (
        5,
        (
            # Answer metrics (metrics/generation.py) of every query with an answer, one row per
            # (query, metric), computed once per run (after the import's scoring, or at the
            # first evaluation) and read back by evaluate: they read texts only, so no setting
            # changes them, and scoring them is the slow part of a first view. value NULL: the
            # query is not scored on that metric (e.g. no reference answer).
            """CREATE TABLE answer_scores (
                run_id BIGINT NOT NULL,
                metric VARCHAR NOT NULL,
                qidx INTEGER NOT NULL,
                value DOUBLE
            )""",
        ),
    ),
    (
        6,
        (
            # Human labels a run file carries per query (the native `labels` object: name ->
            # label), kept like tags; pos keeps the object's key order.
            """CREATE TABLE labels (
                run_id BIGINT NOT NULL,
                qidx INTEGER NOT NULL,
                pos INTEGER NOT NULL,
                name VARCHAR NOT NULL,
                label VARCHAR NOT NULL
            )""",
            # Labels a person gives in the dashboard (over the imported ones, name by name).
            """CREATE TABLE human_labels (
                run_id BIGINT NOT NULL,
                qidx INTEGER NOT NULL,
                name VARCHAR NOT NULL,
                label VARCHAR NOT NULL,
                labelled_at VARCHAR NOT NULL
            )""",
            # One LLM judge's pass over a run (rageval_core.judging): its endpoint's host (never
            # the key or the full URL), model, prompt versions and ledger.
            "CREATE SEQUENCE judge_id_seq START 1",
            """CREATE TABLE judge_sets (
                judge_id BIGINT NOT NULL,
                run_id BIGINT NOT NULL,
                name VARCHAR NOT NULL,
                model VARCHAR NOT NULL,
                base_host VARCHAR NOT NULL,
                prompts VARCHAR NOT NULL,
                repeats INTEGER NOT NULL,
                created_at VARCHAR NOT NULL,
                status VARCHAR NOT NULL,
                requests BIGINT NOT NULL,
                cache_hits BIGINT NOT NULL,
                judge_errors BIGINT NOT NULL,
                prompt_tokens BIGINT NOT NULL,
                completion_tokens BIGINT NOT NULL,
                cost_usd DOUBLE NOT NULL
            )""",
            # One judged (query, prompt, repeat): the validated verdict as JSON, or the error
            # (a judge error is never a score). Tokens and cost are the reply's own.
            """CREATE TABLE judge_results (
                judge_id BIGINT NOT NULL,
                run_id BIGINT NOT NULL,
                qidx INTEGER NOT NULL,
                prompt VARCHAR NOT NULL,
                rep INTEGER NOT NULL,
                verdict VARCHAR,
                error VARCHAR,
                prompt_tokens BIGINT NOT NULL,
                completion_tokens BIGINT NOT NULL,
                cost_usd DOUBLE NOT NULL,
                cached BOOLEAN NOT NULL
            )""",
            # Valid judge replies by sha256 of the canonical request (model, messages,
            # parameters; never the key). Store-wide: the same request from another run hits.
            """CREATE TABLE judge_cache (
                key VARCHAR PRIMARY KEY,
                model VARCHAR NOT NULL,
                content VARCHAR NOT NULL,
                prompt_tokens BIGINT NOT NULL,
                completion_tokens BIGINT NOT NULL,
                cached_at VARCHAR NOT NULL
            )""",
        ),
    ),
    (
        7,
        (
            # Text vectors of the semantic scorers, by (embedder, hash of the text): a rescoring
            # (another normalisation, another run with the same texts) embeds nothing twice
            # (rageval_core.store.embeddings). Not a run's data: shared by every run, kept
            # when a run is deleted. vector: raw token sums for wordllama, unit rows otherwise.
            """CREATE TABLE embeddings (
                embedder VARCHAR NOT NULL,
                text_hash VARCHAR NOT NULL,
                vector FLOAT[] NOT NULL,
                PRIMARY KEY (embedder, text_hash)
            )""",
        ),
    ),
    (
        8,
        (
            # A person's note on one query of a run (rageval_core.store.runfacts): written in
            # the drilldown, deleted with the run, one note per (run, query).
            """CREATE TABLE query_notes (
                run_id BIGINT NOT NULL,
                query_id VARCHAR NOT NULL,
                note VARCHAR NOT NULL,
                noted_at VARCHAR NOT NULL,
                PRIMARY KEY (run_id, query_id)
            )""",
        ),
    ),
    (
        9,
        (
            # Relevance labels may be real grades (0.3, from a native file or decimal TREC
            # qrels); integer labels are kept exactly (every 32-bit integer is a double) and
            # hash as before (rows.ContentHasher).
            "ALTER TABLE qrels ALTER rel TYPE DOUBLE",
        ),
    ),
    (
        10,
        (
            # Relevance grades made in rageval (rageval_core.store.ground_truth): by people in
            # the dashboard or `attach --labels`, adjudicated, or by an LLM judge. Keyed by
            # (query_id, doc_id) like a qrels file, not by run: every run of the store with that
            # query id sees them, and renaming, re-importing or deleting a run, or attaching its
            # qrels, loses none. source: 'people', 'adjudicated' or 'llm:MODEL'; annotator: the
            # person (or the model) who gave the grade. Never mixed with a run's imported qrels.
            """CREATE TABLE relevance_labels (
                query_id VARCHAR NOT NULL,
                doc_id VARCHAR NOT NULL,
                source VARCHAR NOT NULL,
                annotator VARCHAR NOT NULL,
                grade DOUBLE NOT NULL,
                labelled_at VARCHAR NOT NULL,
                PRIMARY KEY (query_id, doc_id, source, annotator)
            )""",
            # Gold evidence spans a person marked inside a chunk, keyed like relevance_labels;
            # doc_id: the document the span was marked in (NULL when added without one).
            """CREATE TABLE added_evidence (
                query_id VARCHAR NOT NULL,
                text VARCHAR NOT NULL,
                doc_id VARCHAR,
                annotator VARCHAR NOT NULL,
                added_at VARCHAR NOT NULL,
                PRIMARY KEY (query_id, text)
            )""",
        ),
    ),
]

LATEST_VERSION = MIGRATIONS[-1][0]

#: Tables holding one run's per-query rows, in the order a Query is rebuilt from them.
QUERY_TABLES = ("queries", "chunks", "evidence", "qrels", "latency", "tokens", "tags", "labels")
#: Tables derived from a run's rows (recomputable, deleted with the run), and the labels a
#: person gave its pairs (not recomputable, but meaningless without the run).
DERIVED_TABLES = (
    "scorings",
    "pair_scores",
    "pair_labels",
    "answer_scores",
    "human_labels",
    "judge_sets",
    "judge_results",
    "query_notes",
)
#: Every table the store owns (for counts and deletes).
#: Tables of the whole store, not of one run: kept when a run is deleted.
STORE_TABLES = ("judge_cache", "relevance_labels", "added_evidence")
ALL_TABLES = ("schema_version", "runs", *QUERY_TABLES, *DERIVED_TABLES, *STORE_TABLES)


def first_row(rows: list[tuple[Any, ...]]) -> tuple[Any, ...] | None:
    """The first of rows fetched in full (DuckDB 2 keeps a half-read result open; fetchone would)."""
    return rows[0] if rows else None


def rollback_quietly(con: duckdb.DuckDBPyConnection) -> None:
    """Roll back if a transaction is open; a failing rollback must not hide the first error
    (Ctrl-C inside a statement makes DuckDB end the transaction itself)."""
    with suppress(duckdb.Error):
        con.rollback()


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    """The highest migration applied to this database (0 for a new one)."""
    row = first_row(con.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchall())
    return int(row[0]) if row else 0


def migrate(con: duckdb.DuckDBPyConnection, path: str) -> int:
    """Apply every pending migration, each in its own transaction; returns the schema version."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at VARCHAR NOT NULL)"
    )
    version = current_version(con)
    if version > LATEST_VERSION:
        raise StoreError(
            f"the store {path} has schema version {version}, newer than this rageval knows "
            f"({LATEST_VERSION}); upgrade rageval or use another store"
        )
    for number, statements in MIGRATIONS:
        if number <= version:
            continue
        con.begin()
        try:
            for sql in statements:
                con.execute(sql)
            con.execute(
                "INSERT INTO schema_version VALUES (?, ?)",
                [number, datetime.now(UTC).isoformat(timespec="seconds")],
            )
            con.commit()
        except BaseException:
            rollback_quietly(con)
            raise
        version = number
    return version
