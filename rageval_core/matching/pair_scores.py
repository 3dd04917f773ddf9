"""The scores of (evidence, chunk) pairs, as every scorer returns them (lexical or semantic), and
what every pair scorer is: a context manager that closes its pool on exit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True, slots=True)
class PairScores:
    """Scores of (evidence, chunk) pairs with the best window in the original chunk text.

    start/end index the ORIGINAL chunk text ([start, end)): from the first to the last original
    character behind the aligned window (a space at the window's edges left out), so removed
    whitespace or punctuation inside it is included. -1 when there is no window (the scorer
    does not align, the score is 0, or min_align_score skipped the alignment).
    """

    score: NDArray[np.float32]  # (n_pairs,)
    start: NDArray[np.int32]  # (n_pairs,)
    end: NDArray[np.int32]  # (n_pairs,)

    def __len__(self) -> int:
        return int(self.score.size)


class ClosedOnExit:
    """A pair scorer as a context manager: close() (its pool, its lexical pass) on exit."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError
