"""What one comparison leaves for the next on the same runs, so a settings move redoes little.

A k move changes the @k metrics' per-query values and nothing else; a threshold move, the
evidence metrics'. A CompareMemo keeps every paired test by a digest of the values it was
computed on (and the runs' alignment, and the random draws of statistics.Draws), so the next
comparison recomputes only the tests whose values changed, on the same draws: the numbers equal
a comparison from scratch (tests/core/compare/test_memo.py). The dashboard keeps one per
process; compare() without one makes its own, which still shares the draws between its tests.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

import numpy as np

from rageval_core.compare.statistics import Draws

#: entries kept (tests, intervals, alignments), the oldest let go first: a test is ~1 kB, and
#: a move adds two per (candidate, metric) it changed
MAX_ENTRIES = 10_000


def digest(*arrays: np.ndarray | None) -> bytes:
    """A digest of the arrays' values, shapes and types (None counts as a value of its own)."""
    h = hashlib.sha1(usedforsecurity=False)
    for a in arrays:
        if a is None:
            h.update(b"\x00none")
            continue
        a = np.ascontiguousarray(a)
        h.update(f"\x00{a.dtype.str}{a.shape}".encode())
        h.update(a.data)
    return h.digest()


class CompareMemo:
    """Paired tests and alignments by what they were computed from, and the random draws.

    Thread-safe: the dashboard's page reads it while a thread adds the p-values. Bounded: at
    most max_entries results and statistics.Draws' cells of draws.
    """

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.draws = Draws()
        self._max = max_entries
        self._found: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            found = self._found.get(key)
            if found is not None:
                self._found.move_to_end(key)
            return found

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._found[key] = value
            self._found.move_to_end(key)
            while len(self._found) > self._max:
                self._found.popitem(last=False)

    def __len__(self) -> int:
        return len(self._found)
