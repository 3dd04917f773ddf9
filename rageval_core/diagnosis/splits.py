"""split_across_chunks: a missed gold span cut once at a word boundary into two parts (each at
least split_min_chars long) whose parts two different top-k chunks cover.

The one reason that reads texts: only the spans the arrays leave undecided (not covered, not
refused by the numbers guard, not covered below k) are checked, each part scored against the
query's top-k chunks with the run's own scorer, normalisation and numbers guard, so "covered"
means what it means for a whole span. The parts' scores are kept on the RunData per (scorer,
normalisation, minimum length) and (span, chunk): a new k or threshold scores only the pairs it
has not met yet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from rageval_core.diagnosis.reasons import Bools, EvidenceArrays, Ints, SplitCheck
from rageval_core.evaluation.report import Settings
from rageval_core.matching.scorers import score_pairs
from rageval_core.matching.numbers import missing_numbers
from rageval_core.rundata import RunData, memo
from rageval_core.store import Store
from rageval_core.store.diagnosis import split_texts

_BLANKS = re.compile(r"\s+")


def cuts(text: str, min_chars: int) -> list[tuple[str, str]]:
    """Every (first part, second part) of text cut at one run of blanks between words, each
    part (without its blanks at the cut) at least min_chars characters long."""
    out = []
    for blank in _BLANKS.finditer(text):
        left, right = text[: blank.start()].strip(), text[blank.end() :].strip()
        if left and right and len(left) >= min_chars and len(right) >= min_chars:
            out.append((left, right))
    return out


@dataclass
class _Parts:
    """The kept part scores of one run at one (scorer, normalisation, minimum length)."""

    spans: dict[tuple[int, int], list[tuple[str, str]]] = field(default_factory=dict)
    chunks: dict[tuple[int, int], str | None] = field(default_factory=dict)
    #: (qidx, eidx, 1-based original rank) -> (cuts, 2) scores of (first part, second part),
    #: NaN where not scored yet (a second part is scored only where a first part is covered)
    scores: dict[tuple[int, int, int], NDArray[np.float32]] = field(default_factory=dict)
    #: (qidx, eidx, rank, cut, side) -> the part's numbers are all in the chunk
    numbers_ok: dict[tuple[int, int, int, int, int], bool] = field(default_factory=dict)


def split_check(
    store: Store, data: RunData, arrays: EvidenceArrays, settings: Settings
) -> SplitCheck:
    """The split check of evidence_reasons for one run at settings s."""
    key = ("split_parts", settings.scorer_key, settings.split_min_chars)
    parts: _Parts = memo(data, key, _Parts)

    def check(q: Ints, e: Ints) -> tuple[Bools, Ints, Ints, Ints]:
        _read(store, data, parts, q, e, settings.split_min_chars)
        top = _top_chunks(arrays, parts, q, settings.k)
        _score(parts, q, e, top, settings, side=0)  # every first part, then the second parts only
        firsts: list[Bools] = [
            np.asarray(_hits(parts, qi, ei, ranks, settings)[:, :, 0].any(axis=0), dtype=bool)
            for qi, ei, ranks in zip(q.tolist(), e.tolist(), top, strict=True)
        ]
        _score(
            parts, q, e, top, settings, side=1, wanted=firsts
        )  # at cuts whose first part is covered
        return _decide(parts, q, e, top, settings)

    return check


def _read(store: Store, data: RunData, parts: _Parts, q: Ints, e: Ints, min_chars: int) -> None:
    """The texts of the candidates' queries not read before."""
    new = sorted(
        {qi for qi, ei in zip(q.tolist(), e.tolist(), strict=True) if (qi, ei) not in parts.spans}
    )
    if not new:
        return
    span_rows, chunk_rows = split_texts(store, data.run.run_id, new)
    for qi, ei, text in span_rows:
        parts.spans[(int(qi), int(ei))] = cuts(text or "", min_chars)
    for qi in new:  # the spans added in rageval follow the run's own (RunData.added)
        added = data.added.get(qi, ())
        first = int(data.n_spans[qi]) - len(added)
        for j, span in enumerate(added):
            parts.spans[(qi, first + j)] = cuts(span.text, min_chars)
    for qi, rank, text in chunk_rows:
        parts.chunks[(int(qi), int(rank))] = text


def _top_chunks(
    arrays: EvidenceArrays, parts: _Parts, q: Ints, k: int
) -> list[list[tuple[int, int]]]:
    """Per candidate: its query's top-k chunks with text, as (rank after a cut, original rank)."""
    out = []
    for qi in q.tolist():
        top = []
        for r in range(min(k, int(arrays.n_ret[qi]))):
            original = (r if arrays.order is None else int(arrays.order[qi, r])) + 1
            if parts.chunks.get((qi, original)) is not None:
                top.append((r + 1, original))
        out.append(top)
    return out


def _score(
    parts: _Parts,
    q: Ints,
    e: Ints,
    top: list[list[tuple[int, int]]],
    settings: Settings,
    side: int,
    wanted: list[Bools] | None = None,
) -> None:
    """Score one side's parts (0: first, 1: second) of every (candidate span, top-k chunk) pair
    at the cuts wanted (None: every cut), where not scored before (NaN)."""
    texts: list[str] = []
    chunks: list[str] = []
    pair_part: list[int] = []
    pair_chunk: list[int] = []
    cells: list[tuple[tuple[int, int, int], int]] = []  # (pair key, cut) per scored part
    chunk_index: dict[tuple[int, int], int] = {}
    text_index: dict[str, int] = {}
    for row, (qi, ei, ranks) in enumerate(zip(q.tolist(), e.tolist(), top, strict=True)):
        span_cuts = parts.spans.get((qi, ei), [])
        if len(ranks) < 2 or not span_cuts:
            continue
        for _, original in ranks:
            key = (qi, ei, original)
            scores = parts.scores.setdefault(key, np.full((len(span_cuts), 2), np.nan, np.float32))
            todo = np.isnan(scores[:, side])
            if wanted is not None:
                todo &= wanted[row]
            for cut in np.flatnonzero(todo).tolist():
                text = span_cuts[cut][side]
                if text not in text_index:
                    text_index[text] = len(texts)
                    texts.append(text)
                if (qi, original) not in chunk_index:
                    chunk_index[(qi, original)] = len(chunks)
                    chunks.append(parts.chunks[(qi, original)] or "")
                pair_part.append(text_index[text])
                pair_chunk.append(chunk_index[(qi, original)])
                cells.append((key, cut))
    if not cells:
        return
    # in this process: the parts are few, and a pool would cost more to start than they take
    scored = score_pairs(
        texts,
        chunks,
        pair_part,
        pair_chunk,
        scorer=settings.scorer_key,
        workers=1,
    ).score
    for (key, cut), score in zip(cells, scored.tolist(), strict=True):
        parts.scores[key][cut, side] = score


def _covers(parts: _Parts, qi: int, ei: int, original: int, settings: Settings) -> Bools:
    """(cuts, 2) where the chunk covers the first and the second part at s."""
    scores = parts.scores[(qi, ei, original)]
    with np.errstate(invalid="ignore"):  # NaN: not scored, not covered
        hit = scores >= np.float32(settings.threshold)
    if settings.numbers_must_match:
        chunk = parts.chunks[(qi, original)] or ""
        for cut, side in zip(*np.nonzero(hit), strict=True):
            key = (qi, ei, original, int(cut), int(side))
            if key not in parts.numbers_ok:
                part = parts.spans[(qi, ei)][int(cut)][int(side)]
                parts.numbers_ok[key] = not missing_numbers(part, chunk)
            hit[cut, side] = parts.numbers_ok[key]
    return hit  # type: ignore[no-any-return]


def _hits(
    parts: _Parts, qi: int, ei: int, ranks: list[tuple[int, int]], settings: Settings
) -> Bools:
    """(top-k chunks, cuts, 2) where each chunk covers each part (unscored: not covered)."""
    n_cuts = len(parts.spans.get((qi, ei), []))
    if len(ranks) < 2 or not n_cuts:
        return np.zeros((len(ranks), n_cuts, 2), dtype=bool)
    return np.stack([_covers(parts, qi, ei, original, settings) for _, original in ranks])


def _decide(
    parts: _Parts, q: Ints, e: Ints, top: list[list[tuple[int, int]]], settings: Settings
) -> tuple[Bools, Ints, Ints, Ints]:
    """Per candidate: split, the two chunks' ranks, and the shorter part at the most unequal
    cut that works (the characters one chunk would have to keep more)."""
    m = q.size
    split = np.zeros(m, dtype=bool)
    first = np.zeros(m, dtype=np.int64)
    second = np.zeros(m, dtype=np.int64)
    extra = np.zeros(m, dtype=np.int64)
    for row, (qi, ei, ranks) in enumerate(zip(q.tolist(), e.tolist(), top, strict=True)):
        span_cuts = parts.spans.get((qi, ei), [])
        if len(ranks) < 2 or not span_cuts:
            continue
        hits = _hits(parts, qi, ei, ranks, settings)
        best: tuple[int, int, int] | None = None  # (extra chars, first rank, second rank)
        for cut in np.flatnonzero(hits[:, :, 0].any(axis=0) & hits[:, :, 1].any(axis=0)).tolist():
            lefts = np.flatnonzero(hits[:, cut, 0]).tolist()
            rights = np.flatnonzero(hits[:, cut, 1]).tolist()
            pair = next(((a, b) for a in lefts for b in rights if a != b), None)
            chars = min(map(len, span_cuts[cut]))
            if pair is not None and (best is None or chars < best[0]):
                best = (chars, ranks[pair[0]][0], ranks[pair[1]][0])
        if best is not None:
            split[row], extra[row], first[row], second[row] = True, *best
    return split, first, second, extra
