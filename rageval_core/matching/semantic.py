"""The semantic and hybrid scorers: a gold span matched to a chunk by meaning, offline.

A chunk's score for a span is the best cosine similarity between the span and the chunk's
sentence windows (one to three consecutive sentences), so a long chunk does not dilute a
one-sentence fact; the window that scored best is kept (its character offsets in the original
chunk text), so the drilldown highlights it as it highlights a fuzzy match. A span found
verbatim in the chunk (after normalisation) scores 1.0 with that window, as with every scorer.

hybrid: the lexical score (rapidfuzz partial, with its window) where the span is found almost
verbatim (partial >= HYBRID_VERBATIM), the semantic score otherwise.

Vectors are computed in batches and cached by text hash (VectorCache: the store's embeddings
table when scoring a stored run), so scoring again with another normalisation, or another run
that shares texts, embeds nothing twice. For an additive embedder (wordllama: a text's vector
is the sum of its tokens' vectors) only each distinct sentence is embedded, and a window's
vector is the sum of its sentences'.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rageval_core.matching.embedders import Embedder, Vectors, text_hash, unit_rows
from rageval_core.matching.keys import ScorerKey, get_embedder
from rageval_core.matching.pair_scores import ClosedOnExit, PairScores

#: hybrid keeps the lexical score from this partial_ratio score up ("found almost verbatim")
HYBRID_VERBATIM = 0.9
#: (pair, window) cosines computed at a time: bounds the gathered vectors (~2 KB each)
PAIR_WINDOWS = 32_768
#: a window holds one to this many consecutive sentences
WINDOW_SENTENCES = 3

# A sentence ends at . ! ? ; or : followed by white space, or at a line break. A full stop
# between digits (3.5) or before a lower-case word (e.g. "approx. five") does not end one.
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+(?=[^a-z])|\n\s*")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) of each sentence of text, white space at either edge left out."""
    out: list[tuple[int, int]] = []
    pos = 0
    for m in [*_SENTENCE_END.finditer(text), None]:
        end = len(text) if m is None else m.start()
        piece = text[pos:end]
        lead = len(piece) - len(piece.lstrip())
        trimmed = piece.strip()
        if trimmed:
            out.append((pos + lead, pos + lead + len(trimmed)))
        if m is not None:
            pos = m.end()
    return out


def windows(sentences: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """(first sentence, last sentence + 1) of every window of 1..WINDOW_SENTENCES sentences."""
    n = len(sentences)
    return [(i, j) for i in range(n) for j in range(i + 1, min(i + WINDOW_SENTENCES, n) + 1)]


class VectorCache(Protocol):
    """Vectors kept by (embedder, text hash): raw rows for an additive embedder, unit otherwise."""

    def get(self, embedder: str, hashes: Sequence[str]) -> dict[str, NDArray[np.float32]]: ...

    def put(self, embedder: str, hashes: Sequence[str], vectors: Vectors) -> None: ...


class MemoryCache:
    """A VectorCache in a dict (a single score_pairs call, tests)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], NDArray[np.float32]] = {}

    def get(self, embedder: str, hashes: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        return {h: self.kept[embedder, h] for h in hashes if (embedder, h) in self.kept}

    def put(self, embedder: str, hashes: Sequence[str], vectors: Vectors) -> None:
        for h, v in zip(hashes, vectors, strict=True):
            self.kept[embedder, h] = v


def embed_cached(embedder: Embedder, texts: Sequence[str], cache: VectorCache) -> Vectors:
    """Vectors of texts (raw for an additive embedder, else unit), each distinct text embedded
    at most once and only when cache does not hold it; new vectors go into cache."""
    distinct = list(dict.fromkeys(texts))
    hashes = [text_hash(t) for t in distinct]
    found = cache.get(embedder.name, hashes)
    missing = [i for i, h in enumerate(hashes) if h not in found]
    rows = np.zeros((len(distinct), embedder.dim), dtype=np.float32)
    if missing:
        embed = embedder.embed_raw if embedder.additive else embedder.embed
        new = embed([distinct[i] for i in missing])
        rows[missing] = new
        cache.put(embedder.name, [hashes[i] for i in missing], new)
    for i, h in enumerate(hashes):
        if h in found:
            rows[i] = found[h]
    at = {t: i for i, t in enumerate(distinct)}
    return rows[[at[t] for t in texts]] if len(distinct) < len(texts) else rows


def _chunk_windows(
    embedder: Embedder, chunks: Sequence[str], cache: VectorCache
) -> tuple[Vectors, NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Unit vectors of every window of every chunk, the first window of each chunk (n + 1
    bounds), and each window's [start, end) in its chunk's text."""
    spans = [sentence_spans(c) for c in chunks]
    wins = [windows(s) for s in spans]
    counts = np.fromiter(map(len, wins), dtype=np.int64, count=len(wins))
    bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    starts = np.fromiter(
        (s[i][0] for s, w in zip(spans, wins, strict=True) for i, _ in w),
        dtype=np.int64,
        count=int(bounds[-1]),
    )
    ends = np.fromiter(
        (s[j - 1][1] for s, w in zip(spans, wins, strict=True) for _, j in w),
        dtype=np.int64,
        count=int(bounds[-1]),
    )
    if embedder.additive:  # each sentence once; a window is the sum of its sentences
        sentences = [c[a:b] for c, s in zip(chunks, spans, strict=True) for a, b in s]
        raw = embed_cached(embedder, sentences, cache)
        first = np.cumsum([0, *map(len, spans)])[:-1].astype(np.int64)  # each chunk's sentence 0
        chunk_of = np.repeat(np.arange(len(chunks)), counts)
        wi = np.fromiter((i for w in wins for i, _ in w), dtype=np.int64, count=int(bounds[-1]))
        wj = np.fromiter((j for w in wins for _, j in w), dtype=np.int64, count=int(bounds[-1]))
        at = first[chunk_of] + wi
        total = raw[at].copy()
        for extra in range(1, WINDOW_SENTENCES):  # the window's 2nd, 3rd ... sentence, if any
            longer = wj - wi > extra
            total[longer] += raw[at[longer] + extra]
        vectors = unit_rows(total)
    else:
        texts = [
            c[s[i][0] : s[j - 1][1]]
            for c, s, w in zip(chunks, spans, wins, strict=True)
            for i, j in w
        ]
        vectors = embed_cached(embedder, texts, cache)
    return vectors, bounds, starts, ends


def semantic_scores(
    evidence: Sequence[str],
    chunks: Sequence[str],
    pair_ev: NDArray[np.int64],
    pair_ch: NDArray[np.int64],
    embedder: Embedder,
    cache: VectorCache,
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """(best window cosine, window start, window end) of each pair (evidence[pair_ev[i]],
    chunks[pair_ch[i]]); a chunk without a sentence, or an empty span, scores 0 with no window."""
    n = int(pair_ev.size)
    score = np.zeros(n, dtype=np.float64)
    start = np.full(n, -1, dtype=np.int64)
    end = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return score, start, end
    ev_vec = unit_rows(embed_cached(embedder, list(evidence), cache))
    win_vec, bounds, w_start, w_end = _chunk_windows(embedder, list(chunks), cache)
    n_win = np.diff(bounds)[pair_ch]
    # pairs in slices of about PAIR_WINDOWS (pair, window) products: bounded memory
    ends_at = np.searchsorted(
        np.cumsum(n_win), np.arange(PAIR_WINDOWS, int(n_win.sum()), PAIR_WINDOWS)
    )
    for lo, hi in zip([0, *ends_at.tolist()], [*ends_at.tolist(), n], strict=True):
        if hi <= lo:
            continue
        part = slice(lo, hi)
        score[part], start[part], end[part] = _best_windows(
            ev_vec, win_vec, bounds, w_start, w_end, pair_ev[part], pair_ch[part]
        )
    return score, start, end


def _best_windows(
    ev_vec: Vectors,
    win_vec: Vectors,
    bounds: NDArray[np.int64],
    w_start: NDArray[np.int64],
    w_end: NDArray[np.int64],
    pair_ev: NDArray[np.int64],
    pair_ch: NDArray[np.int64],
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """semantic_scores' (score, start, end) of a slice of pairs, from the vectors."""
    n = int(pair_ev.size)
    score = np.zeros(n, dtype=np.float64)
    start = np.full(n, -1, dtype=np.int64)
    end = np.full(n, -1, dtype=np.int64)
    n_win = np.diff(bounds)[pair_ch]
    has = np.flatnonzero(n_win > 0)
    if has.size == 0:
        return score, start, end
    # every (pair, window of its chunk), in pair order: one dot product each
    reps = n_win[has]
    pair_of = np.repeat(has, reps)
    win = np.repeat(bounds[pair_ch[has]], reps) + (
        np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)
    )
    cos = np.einsum("ij,ij->i", ev_vec[pair_ev[pair_of]], win_vec[win], dtype=np.float64)
    first = np.cumsum(reps) - reps
    best_val = np.maximum.reduceat(cos, first)
    # the first window reaching the best value (the shortest at the earliest place)
    best_at = np.flatnonzero(cos >= np.repeat(best_val, reps))
    group = np.repeat(np.arange(has.size), reps)[best_at]
    first_best = best_at[np.concatenate([[True], group[1:] != group[:-1]])]
    score[has] = np.clip(best_val, 0.0, 1.0)
    real = score[has] > 0.0
    start[has[real]] = w_start[win[first_best]][real]
    end[has[real]] = w_end[win[first_best]][real]
    return score, start, end


class LexicalPass(Protocol):
    """The partial scorer's PairScorer (scorers.py) as the semantic scorers use it."""

    def submit(
        self, evidence: Sequence[str], chunks: Sequence[str], pair_ev: ArrayLike, pair_ch: ArrayLike
    ) -> Callable[[], PairScores]: ...

    def close(self) -> None: ...


def lexical_pass(key: ScorerKey) -> tuple[float, bool]:
    """(min_align_score, fuzzy) of the partial PairScorer behind a semantic key: windows aligned
    only where they are kept (>= HYBRID_VERBATIM); hybrid keeps partial's fuzzy scores too."""
    return HYBRID_VERBATIM, key.scorer == "hybrid"


class SemanticPairScorer(ClosedOnExit):
    """matching.PairScorer's interface (submit, close, a context manager) for semantic scorers.

    The lexical pass (substring rule, and hybrid's verbatim matches) is a PairScorer of the
    partial scorer whose windows are aligned only where they are kept (>= HYBRID_VERBATIM).
    """

    def __init__(
        self,
        key: ScorerKey,
        cache: VectorCache | None = None,
        *,
        lexical: LexicalPass,
    ) -> None:
        if key.embedder is None:
            raise ValueError(f"{key.stored} does not score by meaning")
        self.scorer, self.embedder_name = key.scorer, key.embedder
        self.embedder = get_embedder(key.embedder)
        self.cache: VectorCache = cache if cache is not None else MemoryCache()
        # semantic needs the substring rule only; hybrid partial's scores too (the caller,
        # scorers.open_pair_scorer, opens it: lexical_pass says how)
        self._lexical = lexical

    def close(self) -> None:
        self._lexical.close()

    def submit(
        self, evidence: Sequence[str], chunks: Sequence[str], pair_ev: ArrayLike, pair_ch: ArrayLike
    ) -> Callable[[], object]:
        lexical = self._lexical.submit(evidence, chunks, pair_ev, pair_ch)  # checks the inputs
        pe = np.asarray(pair_ev, dtype=np.int64)
        pc = np.asarray(pair_ch, dtype=np.int64)

        def result() -> PairScores:
            lex = lexical()
            keep = lex.score >= (1.0 if self.scorer == "semantic" else HYBRID_VERBATIM)
            todo = np.flatnonzero(~keep)
            score = lex.score.astype(np.float64)
            start = lex.start.astype(np.int64)
            end = lex.end.astype(np.int64)
            if todo.size:
                used_ch, ch_at = np.unique(pc[todo], return_inverse=True)
                used_ev, ev_at = np.unique(pe[todo], return_inverse=True)
                sc, st, en = semantic_scores(
                    [evidence[i] for i in used_ev.tolist()],
                    [chunks[j] for j in used_ch.tolist()],
                    ev_at.astype(np.int64),
                    ch_at.astype(np.int64),
                    self.embedder,
                    self.cache,
                )
                score[todo], start[todo], end[todo] = sc, st, en
            return PairScores(
                score=score.astype(np.float32),
                start=start.astype(np.int32),
                end=end.astype(np.int32),
            )

        return result
