"""How many times any process on this machine opens a file: Linux inotify's IN_OPEN events.

The Spark engine's workers are JVMs and Python workers of their own: a counter inside rageval
would not see them, the kernel does. `with FileOpens(path) as opens: ...; opens.count`.

inotify merges an event into the previous one when both are the same and the first is unread:
two opens one after the other would count as one. Reads and closes are watched too, so an open
follows a close and stands alone; two opens at the same instant by two readers can still merge,
so the count is a floor (exact for one reader at a time: one split of one file).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
from pathlib import Path
from types import TracebackType

IN_ACCESS = 0x00000001
IN_CLOSE = 0x00000008 | 0x00000010  # after a write, after a read
IN_OPEN = 0x00000020
IN_NONBLOCK = 0o4000
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)


class FileOpens:
    """Counts the opens of one file between __enter__ and the last read of the events."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.count = 0
        self._fd = -1
        self._libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)

    def __enter__(self) -> FileOpens:
        self._fd = self._libc.inotify_init1(IN_NONBLOCK)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        if (
            self._libc.inotify_add_watch(
                self._fd, os.fsencode(self.path), IN_OPEN | IN_ACCESS | IN_CLOSE
            )
            < 0
        ):
            os.close(self._fd)
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {self.path}")
        return self

    def drain(self) -> int:
        """Read the events queued so far; the count of opens up to now."""
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return self.count
            offset = 0
            while offset < len(data):
                _wd, mask, _cookie, size = _EVENT.unpack_from(data, offset)
                self.count += bool(mask & IN_OPEN)
                offset += _EVENT.size + size

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.drain()
        os.close(self._fd)
