"""The cross-encoder scorer: a gold span and a chunk read together by a local ONNX model.

A cross-encoder (MS-MARCO MiniLM and its kin) reads the span as the query and the whole chunk
as the passage in one input, and its relevance logit becomes a score in (0, 1) by the sigmoid
(onnx_models.relevance). A span found verbatim in the chunk (after normalisation) scores 1.0 with
that window, as with every scorer; other pairs have no window (a cross-encoder scores the whole
chunk: nothing to highlight). Each distinct (span, chunk) pair is run once per block; the scores
are kept in the store's pair_scores under the scorer's key like every scorer's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

from rageval_core.matching.onnx_models import get_cross_encoder
from rageval_core.matching.pair_scores import PairScores


class ExactPass(Protocol):
    """The partial scorer's PairScorer in its exact-substring mode (scorers.PairScorer)."""

    def submit(
        self, evidence: Sequence[str], chunks: Sequence[str], pair_ev: ArrayLike, pair_ch: ArrayLike
    ) -> Callable[[], PairScores]: ...

    def close(self) -> None: ...


class CrossEncoderPairScorer:
    """matching.PairScorer's interface (submit, close, a context manager) for a cross-encoder."""

    def __init__(self, model_path: str, *, exact: ExactPass) -> None:
        self.model = get_cross_encoder(model_path)
        self._exact = exact

    def __enter__(self) -> CrossEncoderPairScorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._exact.close()

    def submit(
        self, evidence: Sequence[str], chunks: Sequence[str], pair_ev: ArrayLike, pair_ch: ArrayLike
    ) -> Callable[[], PairScores]:
        exact = self._exact.submit(evidence, chunks, pair_ev, pair_ch)  # checks the inputs
        pe = np.asarray(pair_ev, dtype=np.int64)
        pc = np.asarray(pair_ch, dtype=np.int64)

        def result() -> PairScores:
            lex = exact()
            score = lex.score.astype(np.float64)
            todo = np.flatnonzero(score < 1.0)
            if todo.size:
                # each distinct (span, chunk) pair once
                keys, at = np.unique(
                    np.stack([pe[todo], pc[todo]], axis=1), axis=0, return_inverse=True
                )
                pairs = [(evidence[int(e)], chunks[int(c)]) for e, c in keys.tolist()]
                score[todo] = self.model.score(pairs)[at.reshape(-1)]
            return PairScores(score=score.astype(np.float32), start=lex.start, end=lex.end)

        return result
