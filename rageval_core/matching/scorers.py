"""Evidence matching: text normalisation with offset maps, fuzzy scorers, pairwise scores + spans.

A retrieved chunk covers a gold evidence span when, after normalisation, the span is a
substring of the chunk (score 1.0) or its similarity score reaches a threshold. This module
only produces the scores (and where in the ORIGINAL chunk text the best window lies, for
highlighting); thresholds and cut-offs are applied later by rageval_core.metrics.evidence on
the cached scores. The scorers by meaning (semantic, hybrid) live in semantic.py behind the
same interface (open_pair_scorer). The process pool that scores large batches lives in
matching_pool.py; normalisation (and the offset maps back to the original text) in
normalise.py, whose public names are re-exported here.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from rapidfuzz import fuzz, process
from rapidfuzz.distance import Levenshtein

from rageval_core.errors import UsageError
from rageval_core.matching.pool import PairPool, Windows, no_pairs
from rageval_core.matching.normalise import (
    BLOCK_CHARS,
    NORMALISATION_VERSION,
    Normalisation,
    _normalise_texts,
    normalise,
    normalise_many,
    to_original,
)
from rageval_core.matching.keys import ScorerKey
from rageval_core.matching.pair_scores import ClosedOnExit, PairScores

__all__ = [
    "NORMALISATION_VERSION",
    "SCORERS",
    "Normalisation",
    "PairScorer",
    "PairScores",
    "Scorer",
    "get_scorer",
    "normalise",
    "normalise_many",
    "open_pair_scorer",
    "score_one",
    "score_pairs",
    "to_original",
]

# --- scorers -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scorer:
    """A similarity of (evidence, chunk) in [0, 1], computed on normalised texts.

    pair(evidence, chunk) is the plain per-pair definition (without the substring rule);
    cdist is the rapidfuzz scorer process.cpdist runs multi-threaded (None: Python per pair),
    with scale the factor that brings its result to [0, 1].
    """

    name: str
    description: str
    aligns: bool
    pair: Callable[[str, str], float]
    cdist: Callable[..., Any] | None = None
    scale: float = 1.0


def _partial(evidence: str, chunk: str) -> float:
    return fuzz.partial_ratio(evidence, chunk) / 100.0


def _ratio(evidence: str, chunk: str) -> float:
    return fuzz.ratio(evidence, chunk) / 100.0


def _token_set(evidence: str, chunk: str) -> float:
    return fuzz.token_set_ratio(evidence, chunk) / 100.0


def _levenshtein(evidence: str, chunk: str) -> float:
    return float(Levenshtein.normalized_similarity(evidence, chunk))


def _difflib(evidence: str, chunk: str) -> float:
    # Exactly the call teams' scripts make (autojunk on, evidence first): reproducible numbers.
    return difflib.SequenceMatcher(None, evidence, chunk).ratio()


def _no_model(evidence: str, chunk: str) -> float:
    """The cross-encoder without a model: it has no value of its own."""
    raise UsageError("--scorer cross-encoder needs a model: --cross-encoder PATH")


class _ScorerRegistry(dict[str, Scorer]):
    """name -> Scorer; an unknown name raises UsageError listing the known ones."""

    def __missing__(self, key: str) -> Scorer:
        # a kept-scores key such as "semantic:wordllama"; an unknown name: UsageError
        return self[ScorerKey.parse(key).scorer]


SCORERS: Mapping[str, Scorer] = _ScorerRegistry(
    {
        "partial": Scorer(
            "partial",
            "best-aligned window of the chunk (rapidfuzz partial_ratio / 100)",
            aligns=True,
            pair=_partial,
            cdist=fuzz.partial_ratio,
            scale=0.01,
        ),
        "ratio": Scorer(
            "ratio",
            "Indel similarity of the whole strings (rapidfuzz ratio / 100)",
            aligns=False,
            pair=_ratio,
            cdist=fuzz.ratio,
            scale=0.01,
        ),
        "token_set": Scorer(
            "token_set",
            "rapidfuzz token_set_ratio / 100",
            aligns=False,
            pair=_token_set,
            cdist=fuzz.token_set_ratio,
            scale=0.01,
        ),
        "levenshtein": Scorer(
            "levenshtein",
            "1 - normalised Levenshtein distance (RAGAS non-LLM context recall)",
            aligns=False,
            pair=_levenshtein,
            cdist=Levenshtein.normalized_similarity,
        ),
        "difflib": Scorer(
            "difflib",
            "difflib.SequenceMatcher(None, evidence, chunk).ratio(), as scripts do",
            aligns=False,
            pair=_difflib,
        ),
        "semantic": Scorer(
            "semantic",
            "best cosine of the span and the chunk's 1-3 sentence windows (--embedder)",
            aligns=True,
            pair=lambda evidence, chunk: _one_semantic("semantic", evidence, chunk),
        ),
        "hybrid": Scorer(
            "hybrid",
            "partial where the span is found almost verbatim (>= 0.9), semantic otherwise",
            aligns=True,
            pair=lambda evidence, chunk: _one_semantic("hybrid", evidence, chunk),
        ),
        "cross-encoder": Scorer(
            "cross-encoder",
            "sigmoid of a local cross-encoder's logit for (span, chunk) (--cross-encoder PATH)",
            aligns=False,
            pair=_no_model,
        ),
    }
)


def _one_semantic(scorer: str, evidence: str, chunk: str) -> float:
    """A semantic scorer's value for one pair, with the default embedder."""
    return float(score_pairs([evidence], [chunk], [0], [0], scorer=scorer, workers=1).score[0])


def get_scorer(name: str) -> Scorer:
    """The scorer registered under `name`; UsageError for an unknown name."""
    return SCORERS[name]


# --- pairwise scoring --------------------------------------------------------------------


def _resolve_workers(workers: int) -> int:
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 0:
        raise UsageError(f"workers must be an integer >= 0 (0 = every CPU), got {workers!r}")
    return int(workers) or (os.cpu_count() or 1)


def _pair_indices(values: ArrayLike, n_texts: int, what: str) -> NDArray[np.int64]:
    arr = np.asarray(values)
    if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise UsageError(f"{what} must be a 1-D integer array")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (arr.min() < 0 or arr.max() >= n_texts):
        raise UsageError(f"{what} holds an index outside 0..{n_texts - 1}")
    return arr


def _unique_texts(texts: Sequence[str], what: str) -> tuple[list[str], NDArray[np.int64]]:
    """Distinct texts (first-seen order) and, per input text, its index among them."""
    _check_str(texts, what)
    index = {text: i for i, text in enumerate(dict.fromkeys(texts))}
    ids = np.fromiter(map(index.__getitem__, texts), dtype=np.int64, count=len(texts))
    return list(index), ids


def _check_str(texts: Sequence[object], what: str) -> None:
    """UsageError naming the first text that is not a str (checked by type, in bulk)."""
    if all(issubclass(kind, str) for kind in set(map(type, texts))):
        return
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise UsageError(f"{what}[{i}] is {type(text).__name__}, expected str")


def _run_batch(kind: str, evidence: list[str], chunks: list[str]) -> Windows:
    """Python-level scoring of one batch of pairs (a PairPool runs it in a worker or in-process).

    kind "align": partial_ratio_alignment of each pair, with its window in the normalised
    chunk less a space at either edge, (-1, -1) for a zero score or no window left;
    "find_align": the same, but 1.0 and the evidence's place for an exact substring (the
    evidence not empty); any other kind: that scorer's pair function, no window.
    """
    n = len(evidence)
    starts = np.full(n, -1, dtype=np.int64)
    ends = np.full(n, -1, dtype=np.int64)
    if kind not in ("align", "find_align"):
        pair = SCORERS[kind].pair
        return np.fromiter(map(pair, evidence, chunks), dtype=np.float64, count=n), starts, ends
    align = fuzz.partial_ratio_alignment
    find = kind == "find_align"
    scores = [0.0] * n
    first_of: list[int] = []
    end_of: list[int] = []
    at: list[int] = []
    for i, (e, c) in enumerate(zip(evidence, chunks, strict=True)):
        if find:
            pos = c.find(e)
            if pos >= 0:  # the evidence's edges are never spaces: nothing to trim
                scores[i] = 1.0
                at.append(i)
                first_of.append(pos)
                end_of.append(pos + len(e))
                continue
        a = align(e, c)
        if a is None or a.score <= 0.0:  # None only with a score_cutoff, which is not given
            continue
        scores[i] = a.score / 100.0
        first, last = a.dest_start, a.dest_end - 1
        if last < first:
            continue
        first += c[first] == " "
        last -= c[last] == " "
        if last >= first:
            at.append(i)
            first_of.append(first)
            end_of.append(last + 1)
    starts[at] = first_of
    ends[at] = end_of
    return np.asarray(scores, dtype=np.float64), starts, ends


def _blocks(lengths: NDArray[np.int64], limit: int) -> Iterator[tuple[int, int]]:
    """Consecutive [lo, hi) ranges of texts whose total length stays near `limit`."""
    if int(lengths.sum()) <= limit:  # the usual case: one block, no loop over the texts
        if lengths.size:
            yield 0, int(lengths.size)
        return
    lo, total = 0, 0
    for i, length in enumerate(lengths.tolist()):
        if total and total + length > limit:
            yield lo, i
            lo, total = i, 0
        total += length
    if lo < len(lengths):
        yield lo, len(lengths)


class PairScorer(ClosedOnExit):
    """score_pairs for a stream of blocks, with one process pool for all of them.

    submit() prepares a block (distinct texts and pairs, normalisation), hands its pairs to
    the pool and returns at once with a function that waits for the PairScores: the caller
    reads the next block while the pool works. Results are exactly score_pairs'. Use as a
    context manager (the pool is closed on exit).
    """

    def __init__(
        self,
        scorer: ScorerKey | str = "partial",
        norm: Normalisation | None = None,
        workers: int = 0,
        min_align_score: float = 0.0,
        fuzzy: bool = True,
    ) -> None:
        """fuzzy=False: exact substrings only (1.0 and their window), every other pair 0 with
        no window (the semantic scorer's lexical pass; min_align_score must be above 0)."""
        key = ScorerKey.parse(scorer, norm)
        if key.by_meaning or key.model is not None:
            raise UsageError(f"{key.stored}: a scorer by meaning is opened with open_pair_scorer")
        self.spec = SCORERS[key.scorer]
        self.fuzzy = fuzzy
        self.norm = key.norm
        self.workers = _resolve_workers(workers)
        if not (isinstance(min_align_score, (int, float)) and math.isfinite(min_align_score)):
            raise UsageError(f"min_align_score must be a finite number, got {min_align_score!r}")
        self.min_align_score = float(min_align_score)
        self._pool = PairPool(self.workers, _run_batch)

    def close(self) -> None:
        """Stop the pool (pending blocks are cancelled)."""
        self._pool.close()

    def submit(
        self,
        evidence: Sequence[str],
        chunks: Sequence[str],
        pair_ev: ArrayLike,
        pair_ch: ArrayLike,
    ) -> Callable[[], PairScores]:
        """Start scoring the pairs (evidence[pair_ev[i]], chunks[pair_ch[i]]) as score_pairs would."""
        ev_texts, ev_ids = _unique_texts(evidence, "evidence")
        ch_texts, ch_ids = _unique_texts(chunks, "chunks")
        pe = _pair_indices(pair_ev, len(evidence), "pair_ev")
        pc = _pair_indices(pair_ch, len(chunks), "pair_ch")
        if pe.shape != pc.shape:
            raise UsageError(f"pair_ev and pair_ch differ in length ({pe.size} vs {pc.size})")

        # Distinct (evidence, chunk) pairs, ordered by chunk so chunk blocks are contiguous.
        width = max(len(ev_texts), 1)
        ukey, inverse = np.unique(ch_ids[pc] * width + ev_ids[pe], return_inverse=True)
        u_ev = ukey % width
        u_ch = ukey // width
        out: Windows = (
            np.zeros(ukey.size, dtype=np.float64),
            np.full(ukey.size, -1, dtype=np.int64),
            np.full(ukey.size, -1, dtype=np.int64),
        )
        ev_norm, _ = _normalise_texts(ev_texts, self.norm)
        ch_len = np.fromiter(map(len, ch_texts), dtype=np.int64, count=len(ch_texts))
        bounds = np.searchsorted(u_ch, np.arange(len(ch_texts) + 1))  # pairs of each chunk
        waiting: list[Callable[[], None]] = []
        for lo, hi in _blocks(ch_len, BLOCK_CHARS):
            p_lo, p_hi = int(bounds[lo]), int(bounds[hi])
            if p_lo == p_hi:
                continue
            waiting.append(
                self._start_block(
                    ev_norm, ch_texts, u_ev[p_lo:p_hi], u_ch[p_lo:p_hi], slice(p_lo, p_hi), out
                )
            )
            if len(waiting) > 1:  # at most two blocks' texts held at once
                waiting.pop(0)()

        def result() -> PairScores:
            for finish in waiting:
                finish()
            waiting.clear()
            score, start, end = out
            return PairScores(
                score=score[inverse].astype(np.float32),
                start=start[inverse].astype(np.int32),
                end=end[inverse].astype(np.int32),
            )

        return result

    def _start_block(
        self,
        ev_norm: list[str],
        ch_texts: list[str],
        e_ids: NDArray[np.int64],
        c_ids: NDArray[np.int64],
        rows: slice,
        out: Windows,
    ) -> Callable[[], None]:
        """Score the pairs of one block of chunks; the returned function writes them to out."""
        used = np.unique(c_ids)  # only chunks that appear in some pair
        ch_norm, ch_maps = _normalise_texts([ch_texts[c] for c in used.tolist()], self.norm)
        cj = np.searchsorted(used, c_ids)  # index into this block's chunks
        # An evidence text that normalises to nothing scores 0 (it is in every chunk).
        real = np.fromiter(map(bool, ev_norm), dtype=np.bool_, count=len(ev_norm))[e_ids]
        sc = np.zeros(cj.size, dtype=np.float64)
        ns = np.full(cj.size, -1, dtype=np.int64)
        ne = np.full(cj.size, -1, dtype=np.int64)
        if self.spec.aligns and self.min_align_score <= 0.0:
            # Every pair needs its window: the pool's jobs try the exact substring and else
            # partial_ratio_alignment (score and window in one call), pair by pair.
            todo = np.flatnonzero(real)
            collect = self._pool.map_pairs("find_align", ev_norm, ch_norm, e_ids[todo], cj[todo])
        else:
            # Exact substring first: str.find is far cheaper than any fuzzy scorer.
            pos = np.fromiter(
                (
                    ch_norm[c].find(ev_norm[e]) if ok else -2
                    for e, c, ok in zip(e_ids.tolist(), cj.tolist(), real.tolist(), strict=True)
                ),
                dtype=np.int64,
                count=cj.size,
            )
            hit = np.flatnonzero(pos >= 0)
            sc[hit], ns[hit] = 1.0, pos[hit]
            ne[hit] = pos[hit] + np.fromiter(
                (len(ev_norm[e]) for e in e_ids[hit].tolist()), dtype=np.int64, count=hit.size
            )
            todo = np.flatnonzero(pos == -1)  # not a substring, evidence not empty
            collect = self._score_fuzzy(ev_norm, ch_norm, e_ids[todo], cj[todo])

        def finish() -> None:
            if todo.size:
                sc[todo], ns[todo], ne[todo] = collect()
            # Windows are in normalised text, already without an edge space (a substring's
            # edges are the evidence's, never a space); nothing to show for a zero score.
            ok = (ns >= 0) & (sc > 0.0)
            arrays = [j for j, m in enumerate(ch_maps) if not isinstance(m, int)]
            shift = np.zeros(len(ch_maps), dtype=np.int64)
            if len(arrays) < len(ch_maps):
                shift[:] = [m if isinstance(m, int) else 0 for m in ch_maps]
            start = np.where(ok, ns + shift[cj], -1)
            end = np.where(ok, ne + shift[cj], -1)
            if arrays:  # chunks whose offset map is not a plain shift
                lens = np.fromiter(
                    (ch_maps[j].size for j in arrays),  # type: ignore[union-attr]
                    dtype=np.int64,
                    count=len(arrays),
                )
                base = np.full(len(ch_maps), -1, dtype=np.int64)
                base[arrays] = np.cumsum(lens) - lens
                flat_map = np.concatenate([ch_maps[j] for j in arrays])  # type: ignore[misc]
                at = base[cj]
                sel = np.flatnonzero(ok & (at >= 0))
                start[sel] = flat_map[at[sel] + ns[sel]]
                end[sel] = flat_map[at[sel] + ne[sel] - 1] + 1
            out[0][rows], out[1][rows], out[2][rows] = sc, start, end

        return finish

    def _score_fuzzy(
        self, ev_norm: list[str], ch_norm: list[str], pe: NDArray[np.int64], pc: NDArray[np.int64]
    ) -> Callable[[], Windows]:
        """Scores (and normalised-text windows) of pairs that are not exact substrings."""
        spec = self.spec
        if pe.size == 0:
            return no_pairs
        if not self.fuzzy:
            n = int(pe.size)
            none = (np.zeros(n), np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64))
            return lambda: none
        if spec.cdist is None:
            return self._pool.map_pairs(spec.name, ev_norm, ch_norm, pe, pc)
        # rapidfuzz releases the GIL inside cpdist only: the C++ scorers run on every core.
        raw = process.cpdist(
            [ev_norm[i] for i in pe.tolist()],
            [ch_norm[j] for j in pc.tolist()],
            scorer=spec.cdist,
            workers=self.workers,
            dtype=np.float64,
        )
        scores = np.asarray(raw, dtype=np.float64) * spec.scale
        starts = np.full(pe.size, -1, dtype=np.int64)
        ends = np.full(pe.size, -1, dtype=np.int64)
        if spec.aligns:
            todo = np.flatnonzero(scores >= self.min_align_score)
            _, starts[todo], ends[todo] = self._pool.map_pairs(
                "align", ev_norm, ch_norm, pe[todo], pc[todo]
            )()
        return lambda: (scores, starts, ends)


def score_pairs(
    evidence: Sequence[str],
    chunks: Sequence[str],
    pair_ev: ArrayLike,
    pair_ch: ArrayLike,
    scorer: ScorerKey | str = "partial",
    norm: Normalisation | None = None,
    workers: int = 0,
    min_align_score: float = 0.0,
) -> PairScores:
    """Score each pair (evidence[pair_ev[i]], chunks[pair_ch[i]]) and locate its best window.

    Score 1.0 (with the substring's window) when the normalised evidence is a substring of the
    normalised chunk, whatever the scorer; otherwise the scorer's value in [0, 1]. An evidence
    text that normalises to nothing scores 0 everywhere (it would be a substring of anything).
    Each distinct text is normalised once and each distinct (evidence, chunk) pair scored once.
    workers: processes/threads to use, 0 = os.cpu_count(). min_align_score: windows of the
    `partial` scorer are computed only for pairs scoring at least this (0.0 = every pair).
    scorer: a ScorerKey, or a key string read with norm (None: the default normalisation).
    """
    key = ScorerKey.parse(scorer, norm)
    with open_pair_scorer(key, workers, min_align_score) as pairs:
        return pairs.submit(evidence, chunks, pair_ev, pair_ch)()  # type: ignore[no-any-return]


def open_pair_scorer(
    key: ScorerKey, workers: int = 0, min_align_score: float = 0.0, cache: Any = None
) -> Any:
    """A PairScorer, or for a scorer by meaning ("semantic", "hybrid:wordllama" ...) a
    semantic.SemanticPairScorer (same interface) whose vectors go through cache, or for the
    cross-encoder a cross_encoder.CrossEncoderPairScorer (its exact pass: partial's substrings)."""
    if key.model is not None:
        from rageval_core.matching.cross_encoder import CrossEncoderPairScorer

        exact = PairScorer(ScorerKey("partial", None, key.norm), None, workers, 1.0, False)
        return CrossEncoderPairScorer(key.model, exact=exact)
    if key.by_meaning:
        from rageval_core.matching.semantic import SemanticPairScorer, lexical_pass

        lexical = PairScorer(
            ScorerKey("partial", None, key.norm), None, workers, *lexical_pass(key)
        )
        return SemanticPairScorer(key, cache, lexical=lexical)
    return PairScorer(key, None, workers, min_align_score)


def score_one(
    evidence: str,
    chunk: str,
    scorer: ScorerKey | str = "partial",
    norm: Normalisation | None = None,
) -> tuple[float, int, int]:
    """(score, start, end) of one pair, as score_pairs computes it (for a UI's single look-up)."""
    result = score_pairs([evidence], [chunk], [0], [0], scorer=scorer, norm=norm, workers=1)
    return float(result.score[0]), int(result.start[0]), int(result.end[0])
