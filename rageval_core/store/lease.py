"""A Store that holds its file only while it works, so other processes can take their turn.

The dashboard is a long-lived process; a Store kept open for its whole life would lock every
`rageval import` out of the file (DuckDB: one process per file). A LeasedStore opens the file
on first use (waiting, with backoff, while another process holds it), shares that connection
between threads while any of them works, and closes it once nobody has used it for idle_s.
Reopening costs about 50-100 ms (docs/reliability.md), so a burst of calls (one page render)
pays it once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from rageval_core.errors import StoreError
from rageval_core.store.store import Store, default_path

#: seconds without use after which the file is let go
DEFAULT_IDLE_S = 0.25


class LeasedStore(Store):
    """A Store whose connection is opened on demand and closed when idle (thread-safe)."""

    def __init__(self, path: str | Path | None = None, idle_s: float = DEFAULT_IDLE_S,
                 wait_s: float | None = None) -> None:
        """No connection is kept; the first one (made here) creates and migrates the file.

        wait_s bounds each open's wait for another process (None: $RAGEVAL_BUSY_WAIT_S or 10 s).
        """
        # Store.__init__ is not called: it would hold the file from now on
        target = str(path) if path is not None else default_path()
        if target == ":memory:":
            raise StoreError("a leased store needs a file (an in-memory store lives only while open)")
        self.path = target
        self._con: duckdb.DuckDBPyConnection | None = None
        self.idle_s = idle_s
        self.wait_s = wait_s
        self._lock = threading.RLock()
        self._users = 0
        self._timer: threading.Timer | None = None
        #: how many times the file was opened (for measurements and tests)
        self.opens = 0
        with self.hold():
            pass

    def __repr__(self) -> str:
        return f"LeasedStore({self.path!r})"

    @property
    def is_open(self) -> bool:
        """True while this process holds the file."""
        return self._con is not None

    @contextmanager
    def hold(self, wait_s: float | None = None) -> Iterator[None]:
        """Keep the file open for the block (several calls, one open); wait_s as in __init__."""
        self._acquire(self.wait_s if wait_s is None else wait_s)
        try:
            yield
        finally:
            self._release()

    @contextmanager
    def _cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self.hold():
            cur = self.cursor()
            try:
                yield cur
            except duckdb.Error as e:
                raise StoreError(f"the store {self.path}: {e}") from e
            finally:
                cur.close()

    def close(self) -> None:
        """Let go of the file now (a later call opens it again)."""
        with self._lock:
            self._cancel_timer()
            self._close_connection()

    # -- the lease ----------------------------------------------------------------------------

    def _acquire(self, wait_s: float | None) -> None:
        with self._lock:
            self._cancel_timer()
            if self._con is None:
                # Store() waits for the file, migrates, and marks dead imports interrupted.
                opened = Store(self.path, wait_s=wait_s)
                self._con, opened._con = opened._con, None
                self.opens += 1
            self._users += 1

    def _release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._con is not None:
                self._timer = threading.Timer(self.idle_s, self._close_if_idle)
                self._timer.daemon = True
                self._timer.start()

    def _close_if_idle(self) -> None:
        with self._lock:
            if self._users == 0 and self._timer is threading.current_thread():
                self._timer = None
                self._close_connection()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _close_connection(self) -> None:
        if self._con is not None:
            con, self._con = self._con, None
            con.close()
