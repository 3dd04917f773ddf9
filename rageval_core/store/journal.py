"""A journal of imports and scorings, so a process killed in the middle of one is noticed.

An import or a scoring is one DuckDB transaction: a process killed inside it leaves nothing of
it in the store. What it does leave is its journal row, committed on its own *before* the work
starts and marked done after the work commits. The next Store open finds rows still "running"
whose process is gone, marks them "interrupted", and Store.interrupted() lists them until
someone (the CLI, the dashboard's Runs page) has said so and acknowledged them.
"""

from __future__ import annotations

import functools
import json
import os
import socket
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

import duckdb

from rageval_core.errors import StoreError

Kind = str  # "import" | "scoring"
RUNNING, DONE, FAILED, INTERRUPTED, ACKNOWLEDGED = (
    "running",
    "done",
    "failed",
    "interrupted",
    "acknowledged",
)
#: finished rows kept (older ones are pruned when a store is opened)
KEEP_FINISHED = 1000

F = TypeVar("F", bound=Callable[..., Any])


class Cursors(Protocol):
    """What the journal needs of a Store: a cursor of its own per call (Store._cursor).

    A protocol, not the Store itself: the Store imports this module, and not the other way.
    """

    def _cursor(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]: ...


@dataclass(frozen=True, slots=True)
class Interruption:
    """An import or scoring whose process died before it finished."""

    id: int
    kind: Kind
    source: str
    started_at: str
    pid: int

    @property
    def message(self) -> str:
        """What the CLI and the dashboard say about it."""
        when = f"started at {self.started_at} (process {self.pid})"
        if self.kind == "scoring":
            return (
                f"a scoring of {self.source} {when} was interrupted before it finished; none "
                f"of its scores were kept (they are computed again when needed)"
            )
        return (
            f"an import of {self.source} {when} was interrupted before it finished; nothing "
            f"of it was stored (import the file again)"
        )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _process_start(pid: int) -> str | None:
    """The start time of process pid (clock ticks since boot, Linux), None when unknown.

    Kept with the pid so a pid the system has since given to another process is not taken for
    the importer still at work.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after the last ")"
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def _alive(pid: int, started: str | None) -> bool:
    """True while process pid runs (a zombie, or a pid reused by another process, is gone)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: it exists
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (not Linux): trust kill()
    if stat[stat.rfind(")") + 2 :].startswith("Z"):
        return False  # killed, not yet reaped by its parent
    return started is None or _process_start(pid) == started


def begin(store: Cursors, kind: Kind, source: str, key: str | None = None) -> int:
    """Commit a "running" row for work about to start; returns its id for finish().

    key: what identifies the work's result in the store (an import's sources as stored in
    runs.sources), so a process killed between the work's commit and finish() is not reported
    as interrupted.
    """
    pid = os.getpid()
    with store._cursor() as cur:
        rows = cur.execute(
            "INSERT INTO journal (id, kind, source, key, started_at, pid, host, proc_start, status) "
            "VALUES (nextval('journal_id_seq'), ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            [kind, source, key, _now(), pid, socket.gethostname(), _process_start(pid), RUNNING],
        ).fetchall()
    return int(rows[0][0])


def finish(store: Cursors, entry: int, status: str, detail: str | None = None) -> None:
    """Mark a journal row done or failed (a failure to do so never hides the work's own error)."""
    with suppress(StoreError, duckdb.Error), store._cursor() as cur:
        cur.execute(
            "UPDATE journal SET status = ?, finished_at = ?, detail = ? WHERE id = ?",
            [status, _now(), detail, entry],
        )


def finish_in(cur: duckdb.DuckDBPyConnection, entry: int) -> None:
    """Mark a row done inside the work's own transaction (it then commits with the work)."""
    cur.execute(
        "UPDATE journal SET status = ?, finished_at = ? WHERE id = ?", [DONE, _now(), entry]
    )


def recorded(kind: Kind, describe: Callable[..., tuple[str, str | None]]) -> Callable[[F], F]:
    """Decorate a Store method: a journal row around every call (describe(*args) -> source, key)."""

    def wrap(method: F) -> F:
        @functools.wraps(method)
        def call(store: Cursors, *args: Any, **kwargs: Any) -> Any:
            source, key = describe(*args, **kwargs)
            entry = begin(store, kind, source, key)
            try:
                result = method(store, *args, **kwargs)
            except BaseException as e:
                finish(store, entry, FAILED, type(e).__name__)
                raise
            finish(store, entry, DONE)
            return result

        return call  # type: ignore[return-value]

    return wrap


def describe_import(parsed: Any, *args: Any, **kwargs: Any) -> tuple[str, str | None]:
    """An import_run call's journal source (its files) and key (runs.sources as stored)."""
    sources = list(parsed.sources)
    return (", ".join(sources) or f"a {parsed.format} run", json.dumps(sources, ensure_ascii=False))


def sweep(con: duckdb.DuckDBPyConnection) -> int:
    """Mark "running" rows of this host whose process is gone as interrupted; returns how many.

    An import whose run is stored (killed after its commit, before finish()) is marked done.
    """
    host = socket.gethostname()
    rows = con.execute(
        "SELECT id, kind, key, started_at, pid, proc_start FROM journal "
        "WHERE status = ? AND host = ? ORDER BY id",
        [RUNNING, host],
    ).fetchall()
    n = 0
    for entry, kind, key, started_at, pid, proc_start in rows:
        if _alive(int(pid), proc_start):
            continue
        status = INTERRUPTED
        if kind == "import" and key is not None:
            stored = con.execute(
                "SELECT count(*) FROM runs WHERE sources = ? AND imported_at >= ?",
                [key, started_at],
            ).fetchall()
            status = DONE if stored[0][0] else INTERRUPTED
        con.execute(
            "UPDATE journal SET status = ?, finished_at = ? WHERE id = ? AND status = ?",
            [status, _now(), entry, RUNNING],
        )
        n += status == INTERRUPTED
    con.execute(
        "DELETE FROM journal WHERE status IN (?, ?, ?) AND id <= "
        "(SELECT coalesce(max(id), 0) FROM journal) - ?",
        [DONE, FAILED, ACKNOWLEDGED, KEEP_FINISHED],
    )
    return n


def interrupted(store: Cursors) -> list[Interruption]:
    """Interrupted work not yet acknowledged, oldest first."""
    with store._cursor() as cur:
        rows = cur.execute(
            "SELECT id, kind, source, started_at, pid FROM journal WHERE status = ? ORDER BY id",
            [INTERRUPTED],
        ).fetchall()
    return [Interruption(int(r[0]), r[1], r[2], r[3], int(r[4])) for r in rows]


def acknowledge(store: Cursors, entries: Sequence[Interruption]) -> None:
    """Mark interruptions as told to the user: they are not listed again."""
    if not entries:
        return
    with store._cursor() as cur:
        cur.executemany(
            "UPDATE journal SET status = ? WHERE id = ? AND status = ?",
            [[ACKNOWLEDGED, e.id, INTERRUPTED] for e in entries],
        )


def entries(store: Cursors) -> list[tuple[Any, ...]]:
    """Every journal row (id, kind, source, status), oldest first: for tests and diagnosis."""
    with store._cursor() as cur:
        return cur.execute("SELECT id, kind, source, status FROM journal ORDER BY id").fetchall()
