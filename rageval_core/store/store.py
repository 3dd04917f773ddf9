"""The Store: one DuckDB file holding every imported run, its queries, chunks and gold."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

import duckdb

from rageval_core.columns import ColumnBatch, UseQueries
from rageval_core.errors import (
    NotFoundError,
    Problem,
    ProblemLog,
    StoreError,
    UsageError,
)
from rageval_core.model import ParsedRun, Query, RunInfo
from rageval_core.store import damage, journal, locking
from rageval_core.store.rows import ContentHasher, batches_from_queries, build_queries, prefetch
from rageval_core.store.schema import (
    ALL_TABLES,
    DERIVED_TABLES,
    QUERY_TABLES,
    first_row,
    migrate,
    rollback_quietly,
)

DEFAULT_PATH = Path(".rageval") / "rageval.duckdb"
ENV_VAR = "RAGEVAL_DB"
#: Queries per insert batch, and a cap on rows per batch so long rankings do not blow memory.
BATCH_QUERIES = 5_000
MAX_BATCH_ROWS = 250_000
#: DuckDB's memory cap while a file-backed store imports (see _import_settings)
IMPORT_MEMORY_LIMIT = "512MB"

_RUN_COLUMNS = (
    "run_id, name, content_hash, format, sources, created_at, description, imported_at, settings, "
    "price_prompt_per_1k, price_completion_per_1k, n_queries, n_chunks, max_depth"
)
#: The runs columns that describe content, not provenance (run_id, sources, imported_at differ
#: between two stores holding the same run).
_RUN_CONTENT_COLUMNS = (
    "name, content_hash, created_at, description, settings, "
    "price_prompt_per_1k, price_completion_per_1k, n_queries, n_chunks, max_depth"
)
#: Per batch of qidx, one SELECT per child table; each row starts with qidx (see build_queries).
_CHILD_SELECTS = {
    "chunks": "SELECT qidx, doc_id, text, score, metadata FROM chunks "
    "WHERE run_id = ? AND qidx >= ? AND qidx < ? ORDER BY qidx, rank",
    "evidence": "SELECT qidx, text FROM evidence "
    "WHERE run_id = ? AND qidx >= ? AND qidx < ? ORDER BY qidx, eidx",
    "qrels": "SELECT qidx, doc_id, rel FROM qrels "
    "WHERE run_id = ? AND qidx >= ? AND qidx < ? ORDER BY qidx, pos",
    "latency": "SELECT qidx, stage, ms FROM latency "
    "WHERE run_id = ? AND qidx >= ? AND qidx < ? ORDER BY qidx, pos",
    "tokens": "SELECT qidx, kind, n FROM tokens "
    "WHERE run_id = ? AND qidx >= ? AND qidx < ? ORDER BY qidx, pos",
    "tags": "SELECT qidx, key, value FROM tags "
    "WHERE run_id = ? AND qidx >= ? AND qidx < ? ORDER BY qidx, pos",
    "labels": "SELECT qidx, name, label FROM labels "
    "WHERE run_id = ? AND qidx >= ? AND qidx < ? ORDER BY qidx, pos",
}
_QUERY_SELECT = (
    "SELECT qidx, query_id, query, in_run, has_qrels, answer, reference_answer, judge FROM queries "
    "WHERE run_id = ? AND qidx >= ? AND qidx < ? ORDER BY qidx"
)


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One stored run: its facts as imported plus flags computed from its rows when read."""

    run_id: int
    name: str
    content_hash: str
    format: str
    sources: tuple[str, ...]
    created_at: str | None
    description: str | None
    imported_at: str  # ISO 8601, UTC
    settings: dict[str, Any]
    price_prompt_per_1k: float | None
    price_completion_per_1k: float | None
    n_queries: int
    n_chunks: int
    max_depth: int
    has_qrels: bool = False
    has_evidence: bool = False
    has_latency: bool = False
    has_tokens: bool = False
    has_answers: bool = False
    tag_keys: tuple[str, ...] = field(default=())

    @property
    def info(self) -> RunInfo:
        """The run facts as a RunInfo (what a native export's header record carries)."""
        return RunInfo(
            name=self.name,
            created_at=self.created_at,
            description=self.description,
            settings=dict(self.settings),
            price_prompt_per_1k=self.price_prompt_per_1k,
            price_completion_per_1k=self.price_completion_per_1k,
        )


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What import_run did: the run (new, or the identical one already stored) and any warnings."""

    run: RunRecord
    created: bool
    warnings: list[Problem]


RunRef = str | int | RunRecord


def default_path() -> str:
    """RAGEVAL_DB when set, else .rageval/rageval.duckdb under the working directory."""
    return os.environ.get(ENV_VAR) or str(DEFAULT_PATH)


class Store:
    """Owns one DuckDB connection; every method works on its own cursor (safe across threads)."""

    def __init__(self, path: str | Path | None = None, wait_s: float | None = None) -> None:
        """Open (creating and migrating) the store; wait_s bounds the wait for another process.

        Another process holding the file is waited for with backoff (locking.connect; None:
        $RAGEVAL_BUSY_WAIT_S or 10 s), then StoreBusyError. Work of a process that died inside
        an import or scoring is marked interrupted here (Store.interrupted()).
        """
        target = str(path) if path is not None else default_path()
        if target != ":memory:":
            _check_folder(target)
        self.path = target
        if target != ":memory:":
            damage.check_header(target)
        try:
            self._con: duckdb.DuckDBPyConnection | None = locking.connect(target, wait_s)
        except duckdb.Error as e:
            raise damage.open_error(target, e) from e
        except (OSError, ValueError) as e:  # a NUL in the path, a name too long ...
            raise StoreError(f"cannot open the store {target}: {e}") from e
        try:
            migrate(self._con, target)
            journal.sweep(self._con)
            self._wal_bytes = damage.wal_bytes(target)
        except duckdb.Error as e:
            self.close()
            if damage.is_corrupt_error(e):
                raise damage.corrupt_error(target, e, readable=False) from e
            raise StoreError(f"cannot update the schema of the store {target}: {e}") from e
        except BaseException:
            self.close()
            raise

    # -- connection ---------------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        try:
            if exc_type is None:
                self._checkpoint()
        finally:
            self.close()

    def _checkpoint(self) -> None:
        """Write what this process changed into the file now, so damage is said, not hidden.

        DuckDB does it on close too, but silently: in a damaged file a write (an import) stays in
        the write-ahead log, and every later open replays it. Only when this process wrote (the
        log grew): a store damaged before stays readable, so what still reads can be exported.
        """
        if self._con is None or damage.wal_bytes(self.path) == getattr(self, "_wal_bytes", None):
            return
        try:
            self._con.execute("CHECKPOINT")
        except duckdb.Error as e:
            if damage.is_corrupt_error(e):
                raise damage.corrupt_error(
                    self.path,
                    e,
                    what=f"DuckDB could not write this command's changes into the file ({e}); "
                    f"they are kept in its write-ahead log {self.path}.wal, read at each open",
                    changed=True,
                ) from e
            # another thread's transaction still open: the close's own checkpoint will do

    def __repr__(self) -> str:
        return f"Store({self.path!r})"

    def close(self) -> None:
        """Close the connection (idempotent); the file's lock is released."""
        if self._con is not None:
            self._con.close()
            self._con = None

    def interrupted(self) -> list[journal.Interruption]:
        """Imports and scorings whose process died before they finished, not yet acknowledged."""
        return journal.interrupted(self)

    def acknowledge_interrupted(self, entries: list[journal.Interruption]) -> None:
        """Stop listing these interruptions (once the user has been told)."""
        journal.acknowledge(self, entries)

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The underlying connection (for read-only SQL in later steps; prefer cursor())."""
        if self._con is None:
            raise StoreError(f"the store {self.path} is closed")
        return self._con

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A new cursor: DuckDB connections are not thread-safe, cursors are independent."""
        try:
            return self.connection.cursor()
        except duckdb.Error as e:
            raise self._error(e) from e

    def _error(self, e: duckdb.Error) -> StoreError:
        return (
            damage.corrupt_error(self.path, e)
            if damage.is_corrupt_error(e)
            else StoreError(f"the store {self.path}: {e}")
        )

    @contextmanager
    def _cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        cur = self.cursor()
        try:
            yield cur
        except duckdb.Error as e:
            raise self._error(e) from e
        finally:
            cur.close()

    # -- import -------------------------------------------------------------------------------

    @journal.recorded("import", journal.describe_import)
    def import_run(
        self,
        parsed: ParsedRun,
        log: ProblemLog,
        name: str | None = None,
        progress: Callable[[int, int | None], None] | None = None,
    ) -> ImportResult:
        """Store parsed in one transaction; identical content already stored is returned as is.

        The query stream is consumed once, in batches; once it ends, errors in log raise
        InputError and nothing is written. An explicit name must be free; otherwise the run's
        own name (or its file's stem) gets "-2", "-3" ... when taken.
        """
        if name is not None and not name.strip():
            raise UsageError("a run name must not be empty")
        hasher = ContentHasher(parsed.info)
        with self._cursor() as cur:
            cur.begin()
            open_txn = True
            try:
                # From a sequence, so an id is never reused after a delete (caches key on it).
                run_id = int(cur.execute("SELECT nextval('run_id_seq')").fetchall()[0][0])
                n_queries, n_chunks, max_depth = _insert_rows(cur, run_id, parsed, hasher, progress)
                log.raise_if_errors()

                digest = hasher.hexdigest()
                same = first_row(
                    cur.execute(
                        "SELECT run_id FROM runs WHERE content_hash = ?", [digest]
                    ).fetchall()
                )
                if same is not None:
                    cur.rollback()
                    open_txn = False
                    return ImportResult(self._record(cur, int(same[0])), False, log.warnings)

                taken = {r[0] for r in cur.execute("SELECT name FROM runs").fetchall()}
                run_name = _choose_name(name, parsed, taken)
                info = parsed.info
                cur.execute(
                    f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        run_id,
                        run_name,
                        digest,
                        parsed.format,
                        json.dumps(list(parsed.sources), ensure_ascii=False),
                        info.created_at,
                        info.description,
                        datetime.now(UTC).isoformat(timespec="microseconds"),
                        json.dumps(dict(info.settings), ensure_ascii=False),
                        info.price_prompt_per_1k,
                        info.price_completion_per_1k,
                        n_queries,
                        n_chunks,
                        max_depth,
                    ],
                )
                cur.commit()
                open_txn = False
            finally:
                # Any failure, the reader's InputError included, leaves the store as it was.
                if open_txn:
                    rollback_quietly(cur)
            return ImportResult(self._record(cur, run_id), True, log.warnings)

    # -- reading ------------------------------------------------------------------------------

    def runs(self) -> list[RunRecord]:
        """Every stored run, oldest import first."""
        with self._cursor() as cur:
            return _records(cur, None)

    def run(self, ref: RunRef) -> RunRecord:
        """One run by name or id (NotFoundError lists the known names)."""
        with self._cursor() as cur:
            return self._record(cur, self._resolve(cur, ref))

    def iter_queries(self, ref: RunRef, batch_size: int = BATCH_QUERIES) -> Iterator[Query]:
        """The run's queries as Query objects in file order, read in batches of batch_size."""
        with self._cursor() as cur:
            run_id = self._resolve(cur, ref)
        return self._stream_queries(run_id, batch_size)

    def _stream_queries(self, run_id: int, batch_size: int) -> Iterator[Query]:
        with self._cursor() as cur:
            # One read transaction: a concurrent delete cannot leave us with half a run.
            cur.begin()
            try:
                row = first_row(
                    cur.execute("SELECT n_queries FROM runs WHERE run_id = ?", [run_id]).fetchall()
                )
                n_queries = int(row[0]) if row else 0
                for lo in range(0, n_queries, batch_size):
                    params = [run_id, lo, lo + batch_size]
                    query_rows = cur.execute(_QUERY_SELECT, params).fetchall()
                    children = {
                        table: cur.execute(sql, params).fetchall()
                        for table, sql in _CHILD_SELECTS.items()
                    }
                    yield from build_queries(query_rows, children)
            finally:
                rollback_quietly(cur)

    def table_rows(self, ref: RunRef) -> dict[str, list[tuple[Any, ...]]]:
        """Every table's rows for the run, without run_id, sorted; "runs" keeps content columns.

        Provenance (format, sources, imported_at) is left out of "runs", so two stores holding
        the same content compare equal, whatever format it first came in.
        """
        with self._cursor() as cur:
            run_id = self._resolve(cur, ref)
            out = {
                "runs": cur.execute(
                    f"SELECT {_RUN_CONTENT_COLUMNS} FROM runs WHERE run_id = ?", [run_id]
                ).fetchall()
            }
            for table in QUERY_TABLES:
                out[table] = cur.execute(
                    f"SELECT * EXCLUDE (run_id) FROM {table} WHERE run_id = ? ORDER BY ALL",
                    [run_id],
                ).fetchall()
            return out

    def table_counts(self) -> dict[str, int]:
        """Row count of every table the store owns, all runs together."""
        with self._cursor() as cur:
            out = {}
            for table in ALL_TABLES:
                row = first_row(cur.execute(f"SELECT count(*) FROM {table}").fetchall())
                out[table] = int(row[0]) if row else 0
            return out

    # -- changes ------------------------------------------------------------------------------

    def rename(self, ref: RunRef, new_name: str) -> RunRecord:
        """Give a run a new name (UsageError if another run has it); returns the updated run."""
        if not new_name.strip():
            raise UsageError("a run name must not be empty")
        with self._cursor() as cur:
            run_id = self._resolve(cur, ref)
            other = first_row(
                cur.execute(
                    "SELECT run_id FROM runs WHERE name = ? AND run_id <> ?", [new_name, run_id]
                ).fetchall()
            )
            if other is not None:
                raise UsageError(f"a run named {new_name!r} already exists; pick another name")
            cur.execute("UPDATE runs SET name = ? WHERE run_id = ?", [new_name, run_id])
            return self._record(cur, run_id)

    def delete(self, ref: RunRef) -> RunRecord:
        """Remove a run and all its rows in one transaction; returns what was deleted."""
        with self._cursor() as cur:
            run_id = self._resolve(cur, ref)
            record = self._record(cur, run_id)
            cur.begin()
            try:
                for table in (*QUERY_TABLES, *DERIVED_TABLES, "runs"):
                    cur.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
                cur.commit()
            except BaseException:
                rollback_quietly(cur)
                raise
            return record

    # -- helpers ------------------------------------------------------------------------------

    def _resolve(self, cur: duckdb.DuckDBPyConnection, ref: RunRef) -> int:
        """The run_id for a name, an id, or a digit string that is not some run's name."""
        if isinstance(ref, RunRecord):
            ref = ref.run_id
        row = None
        if isinstance(ref, int):
            row = first_row(
                cur.execute("SELECT run_id FROM runs WHERE run_id = ?", [ref]).fetchall()
            )
        else:
            row = first_row(cur.execute("SELECT run_id FROM runs WHERE name = ?", [ref]).fetchall())
            if row is None and ref.strip().isdigit():
                row = first_row(
                    cur.execute(
                        "SELECT run_id FROM runs WHERE run_id = ?", [int(ref.strip())]
                    ).fetchall()
                )
        if row is not None:
            return int(row[0])
        names = [
            r[0]
            for r in cur.execute("SELECT name FROM runs ORDER BY imported_at, run_id").fetchall()
        ]
        if not names:
            raise NotFoundError(f"no run {ref!r}: the store {self.path} has no runs yet")
        shown = ", ".join(names[:20]) + (
            f" ... and {len(names) - 20} more" if len(names) > 20 else ""
        )
        raise NotFoundError(f"no run {ref!r} in the store {self.path}; known runs: {shown}")

    def _record(self, cur: duckdb.DuckDBPyConnection, run_id: int) -> RunRecord:
        records = _records(cur, run_id)
        if not records:
            raise NotFoundError(f"no run with id {run_id} in the store {self.path}")
        return records[0]


def _insert_rows(
    cur: duckdb.DuckDBPyConnection,
    run_id: int,
    parsed: ParsedRun,
    hasher: ContentHasher,
    progress: Callable[[int, int | None], None] | None,
) -> tuple[int, int, int]:
    """Insert the run's rows from the reader's column batches when it offers them, else its queries.

    Returns (queries, chunks, longest ranking). Every route gives the same rows and content hash.
    """
    expected = parsed.expected_queries
    with _import_settings(cur):
        columns = parsed.columns
        while columns is not None:
            try:
                return _insert_batches(cur, run_id, columns, hasher, progress, expected)
            except UseQueries as e:
                # The fast route met something only a slower one judges exactly (a problem, or
                # a rare shape): drop its rows, this transaction's own, and try the next route.
                for table in QUERY_TABLES:
                    cur.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
                hasher.reset()
                columns = e.instead
        batches = batches_from_queries(parsed.queries, BATCH_QUERIES, MAX_BATCH_ROWS)
        return _insert_batches(cur, run_id, batches, hasher, progress, expected)


@contextmanager
def _import_settings(cur: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """DuckDB settings for a file-backed store's import: less cache, cheaper string compression.

    - memory_limit IMPORT_MEMORY_LIMIT: DuckDB keeps the blocks a long insert writes cached up
      to its limit (80% of RAM by default), so a multi-GB run would grow the process by as much;
      capped, they are evicted (they are on disk already).
    - force_compression 'zstd' (strings only; numbers keep their own methods): DuckDB's default
      for strings, dictionary + FSST, costs a third of a large import's CPU time; zstd writes
      files as small on chunk texts (docs/benchmarks.md) at much less CPU.
    An in-memory store (which compresses nothing and cannot evict) and settings someone chose
    by hand are left alone; RESET gives the defaults back exactly.
    """
    path = first_row(
        cur.execute(
            "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchall()
    )
    if path is None or path[0] is None:
        yield
        return
    changed = []
    with duckdb.connect(":memory:") as fresh:
        for name, value in (("memory_limit", IMPORT_MEMORY_LIMIT), ("force_compression", "zstd")):
            query = f"SELECT current_setting('{name}')"
            before = first_row(cur.execute(query).fetchall())
            if before is None or before != first_row(fresh.execute(query).fetchall()):
                continue  # set by hand: theirs
            if name == "memory_limit" and _bytes(str(before[0])) <= _bytes(value):
                continue  # a small machine's default is lower already
            try:
                cur.execute(f"SET {name} = '{value}'")
            except duckdb.Error:
                continue  # an older DuckDB without zstd for strings: keep its default
            changed.append(name)
    try:
        yield
    finally:
        for name in changed:
            with suppress(duckdb.Error):
                cur.execute(f"RESET {name}")


_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?) ?([KMGT]?i?B)")
_UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
}


def _bytes(size: str) -> float:
    """'18.8 GiB' -> bytes (inf for a spelling not known here: a default is then taken as large)."""
    match = _SIZE.fullmatch(size.strip())
    if match is None or match.group(2) not in _UNITS:
        return float("inf") if size.strip() else 0.0
    return float(match.group(1)) * _UNITS[match.group(2)]


def _insert_batches(
    cur: duckdb.DuckDBPyConnection,
    run_id: int,
    batches: Iterable[ColumnBatch],
    hasher: ContentHasher,
    progress: Callable[[int, int | None], None] | None,
    expected: int | None = None,
) -> tuple[int, int, int]:
    """Insert column batches; progress(queries so far, expected queries or None) after each."""
    n_queries = n_chunks = max_depth = 0

    def hashed(batches: Iterable[ColumnBatch]) -> Iterator[ColumnBatch]:
        for batch in batches:
            hasher.add(batch)
            yield batch

    # The reader parses (and hashes) the next batch in a worker thread while DuckDB inserts
    # this one: on 2 cores the two halves overlap.
    for batch in prefetch(hashed(batches)):
        _insert_batch(cur, run_id, batch)
        n_queries += batch.n_queries
        n_chunks += batch.n_chunks
        max_depth = max(max_depth, batch.max_depth)
        if progress is not None:
            progress(n_queries, expected)
    return n_queries, n_chunks, max_depth


def _insert_batch(cur: duckdb.DuckDBPyConnection, run_id: int, batch: ColumnBatch) -> None:
    """Bulk insert Arrow tables by DuckDB's replacement scan (executemany is ~1000x slower).

    Not cur.register(): a registered table stays referenced until the transaction ends, so a
    large import would hold every batch in memory at once.
    """
    for table, rageval_batch in batch.tables.items():  # noqa: B007 (read by name in the SQL)
        cur.execute(f"INSERT INTO {table} SELECT ?, * FROM rageval_batch", [run_id])


def _choose_name(name: str | None, parsed: ParsedRun, taken: set[str]) -> str:
    if name is not None:
        if name in taken:
            raise UsageError(
                f"a run named {name!r} already exists; pick another name, or rename or delete that run"
            )
        return name
    base = parsed.info.name or (Path(parsed.sources[0]).stem if parsed.sources else "") or "run"
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def _records(cur: duckdb.DuckDBPyConnection, run_id: int | None) -> list[RunRecord]:
    """RunRecords for one run (run_id) or all; the has_* flags are cheap aggregate queries."""
    where = "WHERE run_id = ?" if run_id is not None else ""
    params = [run_id] if run_id is not None else []
    rows = cur.execute(
        f"SELECT {_RUN_COLUMNS} FROM runs {where} ORDER BY imported_at, run_id", params
    ).fetchall()
    if not rows:
        return []
    flags: dict[int, tuple[bool, bool]] = {
        r[0]: (bool(r[1]), bool(r[2]))
        for r in cur.execute(
            "SELECT run_id, bool_or(has_qrels), bool_or(answer IS NOT NULL) "
            f"FROM queries {where} GROUP BY run_id",
            params,
        ).fetchall()
    }
    present = {
        table: {
            r[0]
            for r in cur.execute(f"SELECT DISTINCT run_id FROM {table} {where}", params).fetchall()
        }
        for table in ("evidence", "latency", "tokens")
    }
    tag_keys: dict[int, list[str]] = {}
    for rid, key in cur.execute(
        f"SELECT DISTINCT run_id, key FROM tags {where} ORDER BY run_id, key", params
    ).fetchall():
        tag_keys.setdefault(rid, []).append(key)
    out = []
    for row in rows:
        rid = int(row[0])
        has_qrels, has_answers = flags.get(rid, (False, False))
        out.append(
            RunRecord(
                run_id=rid,
                name=row[1],
                content_hash=row[2],
                format=row[3],
                sources=tuple(json.loads(row[4])),
                created_at=row[5],
                description=row[6],
                imported_at=row[7],
                settings=json.loads(row[8]),
                price_prompt_per_1k=row[9],
                price_completion_per_1k=row[10],
                n_queries=int(row[11]),
                n_chunks=int(row[12]),
                max_depth=int(row[13]),
                has_qrels=has_qrels,
                has_evidence=rid in present["evidence"],
                has_latency=rid in present["latency"],
                has_tokens=rid in present["tokens"],
                has_answers=has_answers,
                tag_keys=tuple(tag_keys.get(rid, ())),
            )
        )
    return out


def _check_folder(path: str) -> None:
    """The store's folder must exist (a .rageval/ folder, the default's, is made); a clear
    StoreError if not: a mistyped --db must not leave folders behind."""
    if "\x00" in path:  # DuckDB would cut the name there and open another file
        raise StoreError(f"cannot open the store {path!r}: the path holds a NUL character")
    folder = Path(path).parent
    try:
        if folder.name == DEFAULT_PATH.parent.name and not folder.exists():
            folder.mkdir(parents=True, exist_ok=True)
        elif not folder.is_dir():
            what = "is not a folder" if folder.exists() else "does not exist"
            raise StoreError(
                f"cannot open the store {path}: its folder {folder} {what} "
                "(create it first, or give another --db / RAGEVAL_DB)"
            )
        if Path(path).is_dir():
            raise StoreError(f"cannot open the store {path}: it is a folder, not a store file")
    except (OSError, ValueError) as e:  # unreadable, a NUL in the name, a name too long ...
        raise StoreError(f"cannot open the store {path}: {e}") from e
