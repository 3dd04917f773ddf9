"""Opening a store file that another process may hold: bounded retries with backoff.

DuckDB lets one process open a database file at a time (read-only opens fail too while a writer
holds it). A `rageval import` and the dashboard therefore take turns: each opens the file only
while it works, and whoever finds it taken waits, retrying with backoff, up to a bound.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

from rageval_core.errors import StoreError

#: how long an open waits for another process to let go of the file, unless told otherwise
DEFAULT_WAIT_S = 10.0
WAIT_ENV = "RAGEVAL_BUSY_WAIT_S"
#: first pause between tries, and the longest one (the pause doubles, with jitter)
FIRST_PAUSE_S = 0.05
MAX_PAUSE_S = 0.5
#: a process waiting for the file leaves FILE.wait-PID-THREAD beside it while it waits
WAIT_SUFFIX = ".wait-"


class StoreBusyError(StoreError):
    """The store file is held by another process, and stayed held for the whole wait."""

    def __init__(self, path: str, holder: str, waited_s: float) -> None:
        self.path = path
        self.holder = holder  # e.g. " (PID 1234)" or ""
        self.waited_s = waited_s
        super().__init__(
            f"the store {path} is busy: it is in use by another process{holder} (an import, a "
            f"scoring or the dashboard at work); waited {waited_s:.1f} s. Nothing was changed: "
            f"try again when it has finished, or wait longer with {WAIT_ENV}=SECONDS"
        )


def wait_s() -> float:
    """The wait bound: $RAGEVAL_BUSY_WAIT_S when set to a number >= 0, else DEFAULT_WAIT_S."""
    raw = os.environ.get(WAIT_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_WAIT_S
    except ValueError:
        return DEFAULT_WAIT_S
    return value if value >= 0 else DEFAULT_WAIT_S


def is_lock_error(e: BaseException) -> bool:
    """True when DuckDB refused an open because another process holds the file."""
    text = str(e).lower()
    return "lock" in text and ("conflicting" in text or "could not set lock" in text)


def connect(
    path: str,
    wait: float | None = None,
    on_wait: Callable[[float], None] | None = None,
) -> duckdb.DuckDBPyConnection:
    """duckdb.connect(path), retried with backoff while another process holds the file.

    wait: seconds to keep trying (None: wait_s()); on_wait(waited_s) is called before each pause,
    so a caller can say it is waiting. StoreBusyError once the wait is over; any other failure
    to open is raised at once. While it waits, a marker file beside the store tells a
    LeasedStore (the dashboard) to let go of the file at once rather than after its idle time.
    """
    limit = wait_s() if wait is None else wait
    started = time.monotonic()
    pause = FIRST_PAUSE_S
    marker: Path | None = None
    try:
        while True:
            try:
                return duckdb.connect(path)
            except duckdb.Error as e:
                if not is_lock_error(e):
                    raise
                waited = time.monotonic() - started
                if waited >= limit:
                    pid = re.search(r"PID (\d+)", str(e))
                    holder = f" (PID {pid.group(1)})" if pid else ""
                    raise StoreBusyError(path, holder, waited) from e
                if marker is None:
                    marker = _announce(path)
                if on_wait is not None:
                    on_wait(waited)
                # jitter: two waiters that met once do not keep meeting
                time.sleep(min(pause * random.uniform(0.5, 1.0), max(limit - waited, 0.0)))
                pause = min(pause * 2, MAX_PAUSE_S)
    finally:
        if marker is not None:
            marker.unlink(missing_ok=True)


def _marker_prefix(path: str) -> Path:
    return Path(path).with_name(Path(path).name + WAIT_SUFFIX)


def _announce(path: str) -> Path | None:
    """Leave a marker saying this process waits for the file (a LeasedStore lets go for it)."""
    marker = Path(f"{_marker_prefix(path)}{os.getpid()}-{threading.get_ident()}")
    try:
        marker.touch()
    except OSError:
        return None  # a read-only folder: waiting still works, only without priority
    return marker


def waiters(path: str) -> list[int]:
    """Pids of other live processes waiting to open path (stale markers are removed)."""
    prefix = _marker_prefix(path)
    try:
        names = [p for p in prefix.parent.iterdir() if p.name.startswith(prefix.name)]
    except OSError:
        return []
    found = []
    for marker in names:
        pid_text = marker.name[len(prefix.name) :].split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            marker.unlink(missing_ok=True)  # its process died while waiting
            continue
        except PermissionError:
            pass
        found.append(int(pid_text))
    return found
