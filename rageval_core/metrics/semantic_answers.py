"""Answer metrics by meaning: AnswerSimilarity, ContextRelevance, BestContextRelevance and
CrossEncoderSimilarity.

The cosine of embedding vectors from the default offline embedder (wordllama, from its packaged
files: rageval_core.matching.embedders), clipped at 0 as the semantic scorer's are:
- AnswerSimilarity: answer vs reference answer (the best of several references), the source
  document's SBERT similarity with a static embedder;
- ContextRelevance: query vs each retrieved chunk that has text, the mean; BestContextRelevance:
  the best of them.
NaN (not scored) where an input is missing, and for every query when the embedder is not
installed (pip install 'rageval[semantic]'): the lexical answer metrics never depend on it.

CrossEncoderSimilarity reads the answer and a reference answer together with a local cross-encoder
(`--cross-encoder PATH`, matching.onnx_models): its own family ("cross_encoder", input
CrossEncoderScores), scored per model when evaluate is given one (evaluation/cross_answers.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rageval_core.matching.embedders import DEFAULT_EMBEDDER, Embedder
from rageval_core.matching.keys import get_embedder
from rageval_core.errors import UsageError
from rageval_core.metrics.registry import KINDS, MeasureSpec, register

NAN = math.nan
NAMES = ("AnswerSimilarity", "ContextRelevance", "BestContextRelevance")


def _embedder() -> Embedder | None:
    """The default embedder, or None when it is not installed (the metrics are then NaN)."""
    try:
        return get_embedder(DEFAULT_EMBEDDER)
    except UsageError:
        return None


def _references(reference: str | Sequence[str] | None) -> list[str]:
    if reference is None:
        return []
    return [reference] if isinstance(reference, str) else [r for r in reference if r is not None]


def semantic_answer_scores(
    answers: Sequence[str | None],
    references: Sequence[str | Sequence[str] | None],
    queries: Sequence[str | None],
    chunk_texts: Sequence[Sequence[str | None] | None],
) -> dict[str, NDArray[np.float64]]:
    """The three metrics per query (parallel sequences, as generation_scores takes them).

    Every distinct text is embedded once, in one batch.
    """
    n = len(answers)
    out = {name: np.full(n, NAN) for name in NAMES}
    embedder = _embedder()
    if embedder is None or n == 0:
        return out
    texts: dict[str, int] = {}

    def at(text: str) -> int:
        return texts.setdefault(text, len(texts))

    sim_pairs: list[tuple[int, int, int]] = []  # (query row, answer text, reference text)
    rel_pairs: list[tuple[int, int, int]] = []  # (query row, query text, chunk text)
    for i in range(n):
        answer = answers[i]
        if answer is None:
            continue  # no answer: every answer metric is "not scored"
        for ref in _references(references[i]):
            sim_pairs.append((i, at(answer), at(ref)))
        query, chunks = queries[i], chunk_texts[i]
        if query is not None and chunks is not None:
            for chunk in chunks:
                if chunk is not None:
                    rel_pairs.append((i, at(query), at(chunk)))
    if not texts:
        return out
    vectors = embedder.embed(list(texts))
    for name, pairs, reduce in (
        ("AnswerSimilarity", sim_pairs, np.fmax),
        ("ContextRelevance", rel_pairs, None),
        ("BestContextRelevance", rel_pairs, np.fmax),
    ):
        if not pairs:
            continue
        rows, a, b = (np.asarray(col, dtype=np.int64) for col in zip(*pairs, strict=True))
        cos = np.clip(np.einsum("ij,ij->i", vectors[a], vectors[b], dtype=np.float64), 0.0, 1.0)
        col = out[name]
        if reduce is None:  # the mean over the query's chunks
            sums = np.bincount(rows, weights=cos, minlength=n)
            counts = np.bincount(rows, minlength=n)
            has = counts > 0
            col[has] = sums[has] / counts[has]
        else:
            best = np.full(n, -np.inf)
            np.maximum.at(best, rows, cos)
            has = np.isfinite(best)
            col[has] = best[has]
    return out


def answer_similarity(answer: str | None, reference: str | Sequence[str] | None) -> float:
    """AnswerSimilarity of one query (NaN: no answer, no reference or no embedder)."""
    out = semantic_answer_scores([answer], [reference], [None], [None])
    return float(out["AnswerSimilarity"][0])


def context_relevance(
    answer: str | None, query_chunks: tuple[str | None, Sequence[str | None] | None]
) -> float:
    """ContextRelevance of one answered query (NaN: no answer, query, chunk text or embedder)."""
    query, chunks = query_chunks
    return float(semantic_answer_scores([answer], [None], [query], [chunks])["ContextRelevance"][0])


def best_context_relevance(
    answer: str | None, query_chunks: tuple[str | None, Sequence[str | None] | None]
) -> float:
    """BestContextRelevance of one answered query (NaN likewise)."""
    query, chunks = query_chunks
    out = semantic_answer_scores([answer], [None], [query], [chunks])
    return float(out["BestContextRelevance"][0])


def cross_encoder_similarity(
    answers: Sequence[str | None],
    references: Sequence[str | Sequence[str] | None],
    model_path: str,
) -> NDArray[np.float64]:
    """CrossEncoderSimilarity per query: the best over the reference answers of the cross-encoder
    at model_path's relevance of (answer, reference), in (0, 1) (matching.onnx_models: the
    sigmoid of its logit). NaN: no answer, no reference. UsageError: the model cannot be loaded.
    Each distinct pair is run once."""
    from rageval_core.matching.onnx_models import get_cross_encoder

    n = len(answers)
    out = np.full(n, NAN)
    rows: list[int] = []
    pairs: list[tuple[str, str]] = []
    for i in range(n):
        answer = answers[i]
        if answer is None:
            continue
        for ref in _references(references[i]):
            rows.append(i)
            pairs.append((answer, ref))
    if not pairs:
        return out
    distinct = list(dict.fromkeys(pairs))
    at = {p: j for j, p in enumerate(distinct)}
    values = get_cross_encoder(model_path).score(distinct)[[at[p] for p in pairs]]
    best = np.full(n, -np.inf)
    np.maximum.at(best, np.asarray(rows, dtype=np.int64), values)
    has = np.isfinite(best)
    out[has] = best[has]
    return out


#: the answer metric by a cross-encoder (family "cross_encoder")
CROSS_ENCODER_SIMILARITY = "CrossEncoderSimilarity"


@dataclass(frozen=True, slots=True)
class CrossEncoderScores:
    """CrossEncoderSimilarity of the answered queries (one value each, NaN: not scored)."""

    values: NDArray[np.float64]


def _kept_values(data: CrossEncoderScores, cutoff: int | None, params: Mapping[str, Any]) -> Any:
    return data.values.copy()


register(
    MeasureSpec(
        name=CROSS_ENCODER_SIMILARITY,
        family="cross_encoder",
        needs_cutoff=False,
        allows_cutoff=False,
        fn=_kept_values,
        description="cross-encoder relevance of answer and reference (--cross-encoder PATH)",
        range=(0.0, 1.0),
        input=CrossEncoderScores,
        higher_is_better=True,
        kind_of=KINDS["semantic"],
    )
)
