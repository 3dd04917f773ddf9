"""Ctrl-C and the last flush of the `rageval` command (rageval_core.cli's main and entry)."""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType
from typing import Any


def interrupted(e: BaseException, sigint: SigintSeen) -> bool:
    """Whether Ctrl-C ended the command: DuckDB turns it into its own errors (InterruptException, a
    failed rollback), maybe before Python's handler ran, and the store may wrap those."""
    seen: set[int] = set()
    cause: BaseException | None = e
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt) or type(cause).__name__ == "InterruptException":
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return sigint.seen


class SigintSeen:
    """Notes that SIGINT arrived (then raises KeyboardInterrupt as Python's own handler does)."""

    def __init__(self) -> None:
        self.seen = False
        self.previous: Any = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._on_sigint)

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.seen = True
        raise KeyboardInterrupt

    def quiet(self) -> None:
        """Ignore SIGINT from now on (until restore)."""
        if self.previous is not None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    def restore(self) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


def silence(stdout: Any) -> None:
    """Point stdout's file descriptor at /dev/null, so the interpreter's last flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test's StringIO)
        pass
