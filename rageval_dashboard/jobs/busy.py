"""Another process holds the store: how the app tells, and what a page says while it waits.

`rageval import` may write to the store while the dashboard is open (docs/reliability.md); the
pages then wait with a message, never a traceback.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import streamlit as st

from rageval_core.store import StoreBusyError

#: how long the start of a page waits, saying so, for another process to let go of the store
BUSY_GATE_S = 60.0
#: each try of that wait (the message is refreshed between tries)
BUSY_STEP_S = 1.0
#: how long a store call in the middle of a page waits before the page stops with a message
BUSY_DEEP_S = 120.0
BUSY_WAITING = (
    "The store is busy: an import (or another rageval process) is writing to it; "
    "retrying ... ({waited:.0f} s so far). Nothing is lost: this page loads as soon "
    "as the store is free."
)
BUSY_GAVE_UP = (
    "The store is still busy: an import (or another rageval process) has held it for "
    "{waited:.0f} s. Nothing is lost: use **Try again** (or reload the page) once it "
    "has finished."
)

F = TypeVar("F", bound=Callable[..., Any])


def calm(fn: F) -> F:
    """A store still busy after BUSY_DEEP_S stops the page with a message, never a traceback."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except StoreBusyError as e:
            st.warning(BUSY_GAVE_UP.format(waited=e.waited_s))
            st.button("Try again", key="app.busy_retry_deep")
            st.stop()

    return call  # type: ignore[return-value]


def signature(path: str) -> tuple[Any, ...]:
    """(mtime, size) of the store file and its write-ahead log: any committed write changes it."""
    out: list[Any] = []
    for name in (path, path + ".wal"):
        try:
            found = os.stat(name)
        except OSError:
            out.append(None)
        else:
            out.append((found.st_mtime_ns, found.st_size))
    return tuple(out)


def held_elsewhere(path: str) -> bool:
    """Whether another process holds the store file's lock (DuckDB's, listed in /proc/locks).

    True when that cannot be told (no /proc/locks): the caller then takes the careful path.
    """
    try:
        inode = os.stat(path).st_ino
        lines = Path("/proc/locks").read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return True
    me = os.getpid()
    for line in lines:  # "1: POSIX  ADVISORY  WRITE 12634 fe:00:2149620 0 EOF"
        fields = line.split()
        for i, field in enumerate(fields[1:], start=1):
            if field.count(":") == 2:
                pid, ino = fields[i - 1], field.rsplit(":", 1)[1]
                if pid.isdigit() and ino.isdigit() and int(ino) == inode and int(pid) != me:
                    return True
                break
    return False
