"""A Store that holds its file only while it works, so other processes can take their turn.

The dashboard is a long-lived process; a Store kept open for its whole life would lock every
`rageval import` out of the file (DuckDB: one process per file). A LeasedStore opens the file
on first use (waiting, with backoff, while another process holds it), shares that connection
between threads while any of them works, and closes it once nobody has used it for idle_s, or
as soon as the calls under way finish when another process is waiting for the file (it leaves
a marker, locking.waiters): new calls then wait until that process has had its turn.
Reopening costs about 50-100 ms (docs/reliability.md), so a burst of calls (one page render)
pays it once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from rageval_core import threads
from rageval_core.errors import StoreError
from rageval_core.store import locking
from rageval_core.store.store import Store, default_path

#: seconds without use after which the file is let go
DEFAULT_IDLE_S = 0.25
#: longest a call waits, before opening the file, for another waiting process to take its turn
YIELD_S = 2.0


class LeasedStore(Store):
    """A Store whose connection is opened on demand and closed when idle (thread-safe)."""

    def __init__(
        self,
        path: str | Path | None = None,
        idle_s: float = DEFAULT_IDLE_S,
        wait_s: float | None = None,
        linger_s: float | None = None,
    ) -> None:
        """No connection is kept; the first one (made here) creates and migrates the file.

        wait_s bounds each open's wait for another process (None: $RAGEVAL_BUSY_WAIT_S or 10 s).
        linger_s: keep an idle connection up to this long while no other process waits for the
        file (looked for every idle_s), so bursts of calls a few seconds apart (a user moving a
        slider) do not each pay the open; None: close after idle_s, as before.
        """
        # Store.__init__ is not called: it would hold the file from now on
        target = str(path) if path is not None else default_path()
        if target == ":memory:":
            raise StoreError(
                "a leased store needs a file (an in-memory store lives only while open)"
            )
        self.path = target
        self._con: duckdb.DuckDBPyConnection | None = None
        self.idle_s = idle_s
        self.wait_s = wait_s
        self.linger_s = idle_s if linger_s is None else max(linger_s, idle_s)
        self._idle_since = 0.0
        self._cond = threading.Condition(threading.RLock())
        self._held = threading.local()  # how many holds the calling thread has open
        self._users = 0
        self._timer: threading.Timer | None = None
        #: how many times the file was opened (for measurements and tests)
        self.opens = 0
        threads.close_at_exit(self)  # the connection is closed before the interpreter ends
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
                raise self._error(e) from e  # a damaged block says so, as Store's does
            finally:
                cur.close()

    def close(self) -> None:
        """Let go of the file now (a later call opens it again)."""
        with self._cond:
            self._cancel_timer()
            self._close_connection()

    # -- the lease ----------------------------------------------------------------------------

    def _acquire(self, wait_s: float | None) -> None:
        limit = locking.wait_s() if wait_s is None else wait_s
        deadline = time.monotonic() + limit
        mine = getattr(self._held, "n", 0)
        with self._cond:
            self._cancel_timer()
            # Another process waits for the file: finish the calls under way, let go, and let it
            # in before opening again (else a busy dashboard could lock an import out for good).
            # A thread already holding the lease never waits for itself.
            # Yielding is bounded (YIELD_S): a waiter that never opens cannot stall us.
            yield_until = min(deadline, time.monotonic() + YIELD_S)
            while mine == 0 and time.monotonic() < yield_until and locking.waiters(self.path):
                if self._con is not None and self._users == 0:
                    self._close_connection()
                self._cond.wait(0.05)
            if self._con is None:
                # Store() waits for the file, migrates, and marks dead imports interrupted.
                opened = Store(self.path, wait_s=max(deadline - time.monotonic(), 0.0))
                self._con, opened._con = opened._con, None
                self.opens += 1
            self._users += 1
        self._held.n = mine + 1

    def _release(self) -> None:
        self._held.n = getattr(self._held, "n", 1) - 1
        with self._cond:
            self._users -= 1
            self._cond.notify_all()
            if self._users == 0 and self._con is not None:
                if locking.waiters(self.path):
                    self._close_connection()
                    return
                self._idle_since = time.monotonic()
                self._arm_timer()

    def _arm_timer(self) -> None:
        self._timer = threading.Timer(self.idle_s, self._close_if_idle)
        self._timer.daemon = True
        threads.track(self._timer, self._timer.cancel)  # never ended at exit inside DuckDB
        self._timer.start()

    def _close_if_idle(self) -> None:
        with self._cond:
            if self._users == 0 and self._timer is threading.current_thread():
                self._timer = None
                idle = time.monotonic() - self._idle_since
                if idle + self.idle_s <= self.linger_s and not locking.waiters(self.path):
                    self._arm_timer()  # nobody waits for the file: keep it a little longer
                    return
                self._close_connection()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _close_connection(self) -> None:
        if self._con is not None:
            con, self._con = self._con, None
            con.close()
