"""Threshold tuning: best-score histograms, flip shares, borderline pairs and human match labels.

The coverage threshold says when a chunk "contains" a gold span. This module helps choose it:
how the gold spans' best scores sit around the threshold (span_best_scores, flip_share), which
(gold span, chunk) pairs are close calls (borderline_pairs), and, once a person has labelled
some pairs "match" / "no match" (set_label, labels), which threshold agrees best with them
(agreement_curve, suggest_threshold). Scores are compared in float32, as the evidence metrics
compare them (rageval_core.metrics.evidence), so a threshold here means the same thing there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rageval_core.errors import UsageError
from rageval_core.evaluation.report import Settings
from rageval_core.matching.keys import ScorerKey
from rageval_core.matching.normalise import Normalisation
from rageval_core.metrics.evidence import Coverage
from rageval_core.rundata import RunData, evidence_tensor, numbers_guard
from rageval_core.store import Store, reads
from rageval_core.store.labels import pair_label_rows, set_pair_label
from rageval_core.store.store import RunRef

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]

#: The thresholds a suggestion is picked from: the sidebar slider's steps.
THRESHOLD_GRID: Floats = np.round(np.linspace(0.0, 1.0, 101), 2)
#: A suggestion needs at least this many labels of each kind.
MIN_LABELS_EACH = 5


# --- the best score of each gold span -----------------------------------------------------


def span_best_scores(
    source: Coverage | ArrayLike, k: int | None = None, n_spans: ArrayLike | None = None
) -> NDArray[np.float32]:
    """Each gold span's best score over the chunks in the top k (-inf: no chunk in the top k).

    source is a Coverage (its queries, after any score cut) or a raw (queries x ranks x spans)
    tensor with NaN padding; for a tensor, n_spans[q] says which span slots exist (without
    it, a slot exists when any chunk scored it). k None: the whole list. Spans come query by
    query, in their order within the query.
    """
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
        raise UsageError(f"k must be an integer >= 1, got {k!r}")
    if isinstance(source, Coverage):
        if source.n_queries == 0:
            return np.zeros(0, dtype=np.float32)
        col = source.depth - 1 if k is None else min(int(k), source.depth) - 1
        planes = source.best[:, col, :]  # (S, n)
        exists = np.arange(planes.shape[0])[:, None] < source.n_spans[None, :]
        return np.ascontiguousarray(planes.T[exists.T], dtype=np.float32)
    tensor = np.asarray(source, dtype=np.float32)
    if tensor.ndim != 3:
        raise UsageError("scores must be 3-D (queries x ranks x spans)")
    nq, depth, width = tensor.shape
    if n_spans is None:
        exists = ~np.all(np.isnan(tensor), axis=1) if depth else np.zeros((nq, width), bool)
    else:
        spans = np.asarray(n_spans)
        if spans.shape != (nq,) or (spans.size and not np.issubdtype(spans.dtype, np.integer)):
            raise UsageError(f"n_spans must be {nq} integers (one per query)")
        exists = np.arange(width)[None, :] < spans[:, None]
    top = tensor[:, : (depth if k is None else int(k)), :]
    if top.shape[1] == 0:
        best = np.full((nq, width), -np.inf, dtype=np.float32)
    else:
        best = np.fmax.reduce(top, axis=1)  # NaN only where no chunk in the top k scored it
    best = np.where(np.isnan(best), np.float32(-np.inf), best)
    return np.ascontiguousarray(best[exists], dtype=np.float32)


@dataclass(frozen=True, slots=True)
class Flip:
    """How many spans change covered/uncovered state when the threshold moves by +-delta."""

    threshold: float
    delta: float
    n_spans: int
    covered: int  # spans covered at the threshold
    lost: int  # covered now, uncovered at threshold + delta
    gained: int  # uncovered now, covered at threshold - delta

    @property
    def share(self) -> float:
        """(lost + gained) / spans: the share of spans whose state hangs on +-delta (NaN: none)."""
        return (self.lost + self.gained) / self.n_spans if self.n_spans else float("nan")


def flip_share(best: ArrayLike, threshold: float, delta: float = 0.05) -> Flip:
    """Spans whose covered state flips when the threshold moves up or down by delta.

    A span is covered when best >= threshold (float32). Raising the threshold to t + delta
    loses the spans with t <= best < t + delta; lowering it to t - delta gains those with
    t - delta <= best < t. A span with nothing retrieved (-inf) never flips.
    """
    values = np.asarray(best, dtype=np.float32)
    if not (np.isfinite(threshold) and np.isfinite(delta)) or delta < 0:
        raise UsageError(
            f"threshold and delta must be finite, delta >= 0 (got {threshold}, {delta})"
        )
    # round: 0.7 + 0.05 must be the slider's 0.75, not 0.7499999999999999
    t, hi, lo = (np.float32(round(x, 9)) for x in (threshold, threshold + delta, threshold - delta))
    covered = values >= t
    return Flip(
        threshold=float(threshold),
        delta=float(delta),
        n_spans=int(values.size),
        covered=int(np.count_nonzero(covered)),
        lost=int(np.count_nonzero(covered & (values < hi))),
        gained=int(np.count_nonzero(~covered & (values >= lo))),
    )


# --- borderline pairs ---------------------------------------------------------------------

#: characters of chunk text shown on each side of the matched window
CONTEXT_CHARS = 80


@dataclass(frozen=True, slots=True)
class BorderlinePair:
    """A (query, gold span, chunk) pair whose score lies near the threshold."""

    qidx: int
    query_id: str
    query: str | None
    rank: int  # 1-based rank in the run (the key labels are stored under)
    cut_rank: int  # rank after the retriever-score cut (= rank without a cut)
    eidx: int
    doc_id: str
    score: float
    distance: float  # |score - threshold|
    evidence: str
    before: str  # chunk text before the matched window (CONTEXT_CHARS at most)
    window: str  # the matched window in the original chunk text ("" when none was located)
    after: str
    clipped_before: bool  # chunk text was cut off before `before`
    clipped_after: bool

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.qidx, self.rank, self.eidx)


def borderline_pairs(
    store: Store,
    data: RunData,
    settings: Settings,
    band: float = 0.1,
    limit: int = 200,
    context_chars: int = CONTEXT_CHARS,
) -> list[BorderlinePair]:
    """Pairs in the top k whose score is within +-band of the threshold, closest first.

    Every kept (gold span, chunk) pair counts, not only each span's best. Ranks and k follow
    the retriever-score cut of settings, as the metrics do. Ties: by query, rank, span.
    The pairs are chosen in numpy from the run's kept score tensor (cached per run, so a
    slider move reads no scores from the store); only the chosen pairs' texts are fetched.
    """
    if not (np.isfinite(band) and band >= 0):
        raise UsageError(f"band must be a number >= 0, got {band!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise UsageError(f"limit must be an integer >= 1, got {limit!r}")
    settings.check()
    scores = evidence_tensor(store, data, settings.scorer_key)  # (n, depth, spans)
    if settings.numbers_must_match:  # a refused pair scores 0, as the metrics see it
        scores = np.where(numbers_guard(store, data), scores, np.float32(0.0))
    depth = scores.shape[1] if scores.ndim == 3 else 0
    in_list = np.arange(depth)[None, :] < data.n_ret[:, None]
    cut = settings.score_threshold
    kept = in_list if cut is None else in_list & ~(data.chunk_score[:, :depth] < cut)  # NaN kept
    cut_rank = np.cumsum(kept, axis=1)
    # float32 like the kept scores, so a score equal to the threshold is at distance 0; the
    # distance itself in float64, as the SQL it replaces computed it
    t = float(np.float32(settings.threshold))
    with np.errstate(invalid="ignore"):
        distance = np.abs(scores.astype(np.float64) - t)
        near = (distance <= float(band)) & (kept & (cut_rank <= settings.k))[:, :, None]
    q, r, e = np.nonzero(near)
    d = distance[q, r, e]
    rid = data.run.run_id
    out: list[BorderlinePair] = []
    # a candidate without a kept score row (no chunk text) is dropped by the join: then the
    # next ones are fetched (a chunk without text is rare: one fetch of limit pairs is usual)
    step = limit
    order = _closest_first(d, q, r, e, step)
    for lo in range(0, d.size, step):
        if order.size < min(lo + step, d.size):  # past the closest few (rare): all in order
            order = np.lexsort((e, r, q, d))
        chosen = order[lo : lo + step]
        rows = reads.pair_texts(
            store,
            rid,
            settings.scorer_key,
            q[chosen].tolist(),
            (r[chosen] + 1).tolist(),
            e[chosen].tolist(),
        )
        for i, query_id, query, doc_id, evidence, text, start, end in rows:
            j = chosen[i]  # i: the position in closest-first order
            before, window, after, clip_b, clip_a = _window(text or "", start, end, context_chars)
            out.append(
                BorderlinePair(
                    qidx=int(q[j]),
                    query_id=query_id,
                    query=query,
                    rank=int(r[j]) + 1,
                    cut_rank=int(cut_rank[q[j], r[j]]),
                    eidx=int(e[j]),
                    doc_id=doc_id,
                    score=float(scores[q[j], r[j], e[j]]),
                    distance=float(d[j]),
                    evidence=evidence,
                    before=before,
                    window=window,
                    after=after,
                    clipped_before=clip_b,
                    clipped_after=clip_a,
                )
            )
            if len(out) == limit:
                return out
    return out


def _closest_first(
    d: np.ndarray, q: np.ndarray, r: np.ndarray, e: np.ndarray, n: int
) -> np.ndarray:
    """The first n or more positions of the order by (d, q, r, e): every position whose d is
    at most the n-th smallest, sorted. A prefix of the whole order (d comes first in it), found
    without sorting every candidate (a wide band on a large run holds hundreds of thousands)."""
    if d.size <= n:
        return np.lexsort((e, r, q, d))
    kth = np.partition(d, n - 1)[n - 1]
    sel = np.flatnonzero(d <= kth)
    return sel[np.lexsort((e[sel], r[sel], q[sel], d[sel]))]


def _window(text: str, start: int, end: int, context: int) -> tuple[str, str, str, bool, bool]:
    """(before, window, after, clipped before, clipped after) around text[start:end]."""
    if not (0 <= start <= end <= len(text)):  # no window located: show the chunk's head
        head = text[: 2 * context]
        return "", "", head, False, len(text) > len(head)
    lo, hi = max(0, start - context), min(len(text), end + context)
    return text[lo:start], text[start:end], text[end:hi], lo > 0, hi < len(text)


# --- labels -------------------------------------------------------------------------------


def set_label(
    store: Store,
    run: RunRef,
    qidx: int,
    rank: int,
    eidx: int,
    scorer: ScorerKey | str,
    norm: Normalisation | str | None,
    label: bool | None,
) -> None:
    """Store a person's verdict on one scored pair (True: match); None removes it.

    Replaces any earlier label of the pair (delete + insert in one transaction). scorer: a
    ScorerKey (norm None), or a key string read with norm (a Normalisation or its key).
    """
    key = ScorerKey.parse(scorer, norm)
    if label is not None and not isinstance(label, (bool, np.bool_)):
        raise UsageError(f"label must be True, False or None, got {label!r}")
    record = store.run(run)
    if not set_pair_label(store, record.run_id, key, int(qidx), int(rank), int(eidx), label):
        raise UsageError(
            f"run {record.name} has no scored pair (query {qidx}, rank {rank}, span {eidx}) "
            f"for scorer {key.stored} ({key.norm.key})"
        )


@dataclass(frozen=True, eq=False)
class Labels:
    """The labelled pairs of one (run, scorer, normalisation), with their scores."""

    qidx: Ints
    rank: Ints
    eidx: Ints
    label: NDArray[np.bool_]  # True: match
    score: NDArray[np.float32]  # the pair's kept score
    query_id: NDArray[np.object_]
    doc_id: NDArray[np.object_]
    evidence: NDArray[np.object_]
    labelled_at: NDArray[np.object_]

    @property
    def n(self) -> int:
        return int(self.label.size)

    @property
    def n_match(self) -> int:
        return int(np.count_nonzero(self.label))

    @property
    def n_no_match(self) -> int:
        return self.n - self.n_match

    def lookup(self) -> dict[tuple[int, int, int], bool]:
        """(qidx, rank, eidx) -> label."""
        return {
            (int(q), int(r), int(e)): bool(v)
            for q, r, e, v in zip(self.qidx, self.rank, self.eidx, self.label, strict=True)
        }


def labels(
    store: Store, run: RunRef, scorer: ScorerKey | str, norm: Normalisation | str | None = None
) -> Labels:
    """Every label of the run for this scorer and normalisation, by query, rank and span
    (scorer: a ScorerKey, or a key string read with norm)."""
    key = ScorerKey.parse(scorer, norm)
    rid = store.run(run).run_id
    res = pair_label_rows(store, rid, key)
    cols = list(zip(*res, strict=True)) if res else [()] * 9
    return Labels(
        qidx=np.asarray(cols[0], dtype=np.int64),
        rank=np.asarray(cols[1], dtype=np.int64),
        eidx=np.asarray(cols[2], dtype=np.int64),
        label=np.asarray(cols[3], dtype=bool),
        score=np.asarray(cols[4], dtype=np.float32),
        query_id=np.asarray(cols[5], dtype=object),
        doc_id=np.asarray(cols[6], dtype=object),
        evidence=np.asarray(cols[7], dtype=object),
        labelled_at=np.asarray(cols[8], dtype=object),
    )


def as_scored(labels: Labels, store: Store, data: RunData, settings: Settings) -> Labels:
    """labels with the scores the metrics use at settings: with the numbers guard on, a pair
    whose span holds a number the chunk lacks scores 0 (no threshold makes it cover)."""
    if not settings.numbers_must_match or labels.n == 0:
        return labels
    ok = numbers_guard(store, data)[labels.qidx, labels.rank - 1, labels.eidx]
    return replace(labels, score=np.where(ok, labels.score, np.float32(0.0)))


# --- agreement with the labels ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Agreement:
    """How well "score >= threshold" agrees with the labels, one value per threshold.

    precision = tp / (tp + fp) (NaN when nothing is predicted a match); recall = tp / labelled
    matches (NaN without any); F1 = 2 tp / (2 tp + fp + fn) (NaN when that is 0/0);
    accuracy = (tp + tn) / labels (NaN without labels); balanced accuracy = (TPR + TNR) / 2
    (NaN without labels of both kinds); MCC = (tp tn - fp fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn)),
    0 when a factor of the root is 0 (a constant prediction says nothing), NaN without labels.
    """

    thresholds: Floats
    accuracy: Floats
    precision: Floats
    recall: Floats
    f1: Floats
    balanced_accuracy: Floats
    mcc: Floats
    tp: Ints
    fp: Ints
    fn: Ints
    tn: Ints


def _ratio(num: ArrayLike, den: ArrayLike) -> Floats:
    n, d = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(d > 0, n / np.where(d > 0, d, 1.0), np.nan)


def agreement_curve(labels: ArrayLike, scores: ArrayLike, thresholds: ArrayLike) -> Agreement:
    """Accuracy, precision, recall and F1 of "score >= t is a match" against the labels, per t.

    Pairs whose score is NaN are left out. Sorted scores and binary search: no loop over t.
    """
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float32)
    ts = np.asarray(thresholds, dtype=np.float64)
    if y.shape != s.shape or y.ndim != 1:
        raise UsageError("labels and scores must be two lists of the same length")
    if ts.ndim != 1 or not np.all(np.isfinite(ts)):
        raise UsageError("thresholds must be a 1-D list of finite numbers")
    ok = ~np.isnan(s)
    y, s = y[ok], s[ok]
    t32 = ts.astype(np.float32)
    pos, neg = np.sort(s[y]), np.sort(s[~y])
    tp = (pos.size - np.searchsorted(pos, t32, side="left")).astype(np.int64)
    fp = (neg.size - np.searchsorted(neg, t32, side="left")).astype(np.int64)
    fn = pos.size - tp
    tn = neg.size - fp
    balanced = (
        _ratio(tp, np.full(ts.shape, pos.size)) + _ratio(tn, np.full(ts.shape, neg.size))
    ) / 2
    ftp, ffp, ffn, ftn = (x.astype(np.float64) for x in (tp, fp, fn, tn))
    root = np.sqrt((ftp + ffp) * (ftp + ffn) * (ftn + ffp) * (ftn + ffn))
    mcc = np.where(root > 0, (ftp * ftn - ffp * ffn) / np.where(root > 0, root, 1.0), 0.0)
    if y.size == 0:
        mcc = np.full(ts.shape, np.nan)
    return Agreement(
        thresholds=ts,
        accuracy=_ratio(tp + tn, np.full(ts.shape, y.size)),
        precision=_ratio(tp, tp + fp),
        recall=_ratio(tp, np.full(ts.shape, pos.size)),
        f1=_ratio(2 * tp, 2 * tp + fp + fn),
        balanced_accuracy=balanced,
        mcc=mcc,
        tp=tp,
        fp=fp,
        fn=fn,
        tn=tn,
    )


@dataclass(frozen=True, slots=True)
class Suggestion:
    """The threshold that agrees best with the labels, when it beats chance with confidence.

    best is the threshold of highest balanced accuracy (None with too few labels); threshold is
    best when the lower end of its bootstrap interval is above 0.5 (chance), else None: then no
    threshold separates the labels, and the page says so instead of suggesting one.
    """

    threshold: float | None
    balanced_accuracy: float  # at best (NaN when none): what is maximised
    mcc: float
    f1: float
    accuracy: float
    n_labels: int
    n_match: int
    n_no_match: int
    message: str
    best: float | None = None
    interval: tuple[float, float] = (float("nan"), float("nan"))  # of balanced accuracy at best


#: the bootstrap interval a suggestion's balanced accuracy must clear 0.5 with
CONFIDENCE = 0.95
RESAMPLES = 2000


def balanced_accuracy_interval(
    tp: int,
    fn: int,
    tn: int,
    fp: int,
    confidence: float = CONFIDENCE,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """The percentile bootstrap interval of the balanced accuracy of a yes/no verdict against
    yes/no labels, from its four counts (a threshold against match labels; the judge
    calibration's coverage against the judge).

    Matches and no-matches are resampled apart (each kind keeps its count, so TPR and TNR are
    always defined). Resampling n labels of which a share p agree with the verdict draws
    Binomial(n, p) agreeing ones, so each resample is two binomial draws, not n index draws.
    Fixed seed: the page and a test get the same interval for the same labels.
    NaN without labels of both kinds.
    """
    n_pos, n_neg = tp + fn, tn + fp
    if n_pos == 0 or n_neg == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    tpr = rng.binomial(n_pos, tp / n_pos, resamples) / n_pos
    tnr = rng.binomial(n_neg, tn / n_neg, resamples) / n_neg
    alpha = 1.0 - confidence
    lo, hi = np.quantile((tpr + tnr) / 2, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def conflicts(labels: ArrayLike, scores: ArrayLike) -> tuple[Ints, Ints]:
    """The pairs of labels no threshold can put on their right sides: a match scoring at or
    below a no match. (i, j): positions in labels of the match and the no match, the widest
    gap first (then by i, j). Pairs whose score is NaN are left out."""
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float32)
    ok = ~np.isnan(s)
    pos, neg = np.flatnonzero(y & ok), np.flatnonzero(~y & ok)
    gap = s[neg][None, :].astype(np.float64) - s[pos][:, None]  # (matches, no matches)
    a, b = np.nonzero(gap >= 0)
    order = np.lexsort((neg[b], pos[a], -gap[a, b]))
    return pos[a][order].astype(np.int64), neg[b][order].astype(np.int64)


def suggest_threshold(
    labels: ArrayLike,
    scores: ArrayLike,
    current: float,
    thresholds: ArrayLike | None = None,
    min_each: int = MIN_LABELS_EACH,
    confidence: float = CONFIDENCE,
) -> Suggestion:
    """The threshold with the best balanced accuracy against the labels (ties: the one closest
    to current), suggested only when it is better than chance with confidence.

    Balanced accuracy, not F1: F1 ignores the true negatives, so it stays flat over every
    threshold below the lowest labelled match and rewards a low, lenient threshold when the
    labels are mostly matches; balanced accuracy weighs a missed match and a false match alike
    whatever the mix of labels (MCC is reported beside it). Equally close on both sides: the
    lower one. thresholds None: 0.00, 0.01, ... 1.00 (the slider's steps).

    The rule: at least min_each labels of each kind, and the lower end of the bootstrap
    interval (balanced_accuracy_interval, at confidence) of the best threshold's balanced
    accuracy above 0.5, the value of a coin toss or a constant verdict. Otherwise threshold is
    None and best, the interval and the message say why. The interval is taken at the threshold
    the labels chose, so it leans optimistic on few labels: the rule is a floor, not a proof.
    """
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float32)
    ts = np.sort(np.asarray(THRESHOLD_GRID if thresholds is None else thresholds, dtype=np.float64))
    curve = agreement_curve(y, s, ts)
    kept = y[~np.isnan(s)] if s.shape == y.shape else y
    n_match = int(np.count_nonzero(kept))
    n_no = int(kept.size - n_match)
    counts = f"{kept.size} labels ({n_match} match, {n_no} no match)"
    if n_match < min_each or n_no < min_each:
        nan = float("nan")
        return Suggestion(
            None,
            nan,
            nan,
            nan,
            nan,
            int(kept.size),
            n_match,
            n_no,
            f"no suggestion yet: it needs at least {min_each} labels of each kind "
            f"(have {n_match} match, {n_no} no match)",
        )
    balanced = np.round(
        np.where(np.isnan(curve.balanced_accuracy), -1.0, curve.balanced_accuracy), 12
    )
    best = np.flatnonzero(balanced == balanced.max())
    distance = np.round(np.abs(ts[best] - current), 9)  # 0.65 and 0.75 are equally far from 0.7
    pick = int(best[np.argmin(distance)])  # argmin takes the first: the lower threshold
    lo, hi = balanced_accuracy_interval(
        int(curve.tp[pick]),
        int(curve.fn[pick]),
        int(curve.tn[pick]),
        int(curve.fp[pick]),
        confidence,
    )
    ba, mcc = float(curve.balanced_accuracy[pick]), float(curve.mcc[pick])
    facts = (
        f"balanced accuracy {ba:.3f} ({confidence:.0%} interval {lo:.3f}-{hi:.3f}), "
        f"MCC {mcc:.3f}, on {counts}"
    )
    beats_chance = lo > 0.5
    return Suggestion(
        threshold=float(ts[pick]) if beats_chance else None,
        balanced_accuracy=ba,
        mcc=mcc,
        f1=float(curve.f1[pick]),
        accuracy=float(curve.accuracy[pick]),
        n_labels=int(kept.size),
        n_match=n_match,
        n_no_match=n_no,
        message=facts
        if beats_chance
        else (
            f"no threshold separates these labels better than chance with confidence: the best, "
            f"{ts[pick]:.2f}, has {facts}; its interval reaches 0.5, a coin toss"
        ),
        best=float(ts[pick]),
        interval=(lo, hi),
    )
