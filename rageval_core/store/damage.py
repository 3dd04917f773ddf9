"""A store file DuckDB cannot read: how it is told, and what the user can do about it."""

from __future__ import annotations

import os
import re
import shlex

import duckdb

from rageval_core.errors import StoreCorruptError, StoreError
from rageval_core.store import locking

#: what DuckDB says of a file it cannot read as a database: a bad block or header, a file cut
#: short (a block past its end)
CORRUPT_SIGNS = (
    "corrupt database file",
    "not a valid duckdb database file",
    "checksum",
    "could not read enough bytes",
)
#: a store that opened: the failed command's own work is rolled back (a journal row may say it
#: was tried)
NOTHING_STORED = " Nothing of this command was stored."
#: bytes 8-11 of every DuckDB database file (after the header block's checksum)
DUCKDB_MAGIC = b"DUCK"


def is_corrupt_error(e: BaseException) -> bool:
    text = str(e).lower()
    return any(sign in text for sign in CORRUPT_SIGNS)


def check_header(path: str) -> None:
    """A file that is there but not a DuckDB database is refused before DuckDB opens it: DuckDB
    would read an SQLite file through an extension it downloads first (a network request).
    Fewer than 12 bytes (empty, or being created by another process) are left to DuckDB."""
    try:
        with open(path, "rb") as f:
            head = f.read(12)
    except (OSError, ValueError):
        return  # a new store; a folder is _check_folder's; unreadable: DuckDB's open says why
    if len(head) == 12 and head[8:12] != DUCKDB_MAGIC:
        raise corrupt_error(
            path,
            None,
            readable=False,
            what=f"it is not a DuckDB database file (it begins {head!r}: is --db or "
            "RAGEVAL_DB the right file?)",
        )


def wal_bytes(path: str) -> int | None:
    """The size of the store's write-ahead log (None: there is none, or an in-memory store)."""
    try:
        return os.path.getsize(path + ".wal") if path != ":memory:" else None
    except (OSError, ValueError):
        return None


def is_empty(path: str) -> bool:
    try:
        return os.path.getsize(path) == 0
    except (OSError, ValueError):
        return False


def corrupt_error(
    path: str,
    e: BaseException | None,
    *,
    readable: bool = True,
    what: str | None = None,
    changed: bool = False,
) -> StoreCorruptError:
    """The store is damaged: what is wrong and, on the lines after, how to recover.

    readable: the store opened and only a later read failed, so some runs may still read whole
    and can be exported first; otherwise nothing can be read from it. changed: the command's
    own changes were kept (in the write-ahead log).
    """
    said = what or f"DuckDB cannot read it ({e})"
    q = shlex.quote(path)
    aside = f"mv {q} {shlex.quote(path + '.corrupt')}"
    if os.path.exists(path + ".wal"):  # a new store must not replay the old one's log
        aside += f" && mv {shlex.quote(path + '.wal')} {shlex.quote(path + '.corrupt.wal')}"
    steps = [f"move the file aside: {aside}"]
    again = (
        "your run files (and those exports)"
        if readable
        else "your run files (or native exports, `rageval export RUN --to FILE`, made before or "
        "from a backup copy of the store)"
    )
    steps.append(f"import {again} into a new store: rageval --db {q} import FILE ...")
    if readable:
        steps.insert(
            0,
            f"save what still reads: `rageval --db {q} runs` lists the runs, `rageval --db {q} "
            "export RUN --to RUN.jsonl` writes each run that reads whole to a native file",
        )
    lines = [
        f"the store {path} is corrupt (damaged): {said}."
        + ("" if changed else NOTHING_STORED if readable else " Nothing was changed."),
        "To recover:",
        *(f"  {n}. {step}" for n, step in enumerate(steps, start=1)),
        "The crash journal is kept inside the store, so it cannot rebuild it; judge verdicts and "
        "pair labels (not in a native export) live only in the store: restore them from a backup "
        "copy of the file if you have one.",
    ]
    return StoreCorruptError("\n".join(lines))


def open_error(path: str, e: duckdb.Error) -> StoreError:
    text = str(e)
    if is_corrupt_error(e):
        empty = "it is empty (0 bytes)" if is_empty(path) else None
        return corrupt_error(path, e, readable=False, what=empty)
    if locking.is_lock_error(e):
        pid = re.search(r"PID (\d+)", text)
        who = f" (PID {pid.group(1)})" if pid else ""
        return StoreError(
            f"the store {path} is in use by another process{who}: DuckDB allows one writer at a "
            f"time; close the other rageval (dashboard or CLI) or use another store "
            f"(RAGEVAL_DB or --db)"
        )
    return StoreError(f"cannot open the store {path}: {e}")
