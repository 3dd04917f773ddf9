"""Threshold tuning: best scores, flip shares, borderline pairs, labels, agreement, suggestion."""

from __future__ import annotations

import math

from pathlib import Path

import numpy as np
import scipy.stats
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.evaluation import tuning
from rageval_core.errors import ProblemLog, UsageError
from rageval_core.evaluation.report import Settings
from rageval_core.matching.scorers import Normalisation
from rageval_core.metrics import evidence as ev
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.rundata import load_run_data
from rageval_core.store import Store
from rageval_core.store.scores import ensure_scored

NAN = np.nan
NORM = Normalisation()


# --- best scores and flips ------------------------------------------------------------------


def tensor() -> tuple[np.ndarray, list[int], list[int]]:
    """q0: 2 spans, 3 chunks; q1: 1 span, 1 chunk; q2: 1 span, nothing retrieved; q3: no spans."""
    s = np.full((4, 3, 2), NAN, dtype=np.float32)
    s[0] = [[0.2, 0.9], [0.75, 0.1], [0.95, 0.0]]
    s[1, 0, 0] = 0.68
    s[3, :2, :] = 0.99  # no gold spans: never counted
    return s, [2, 1, 1, 0], [3, 1, 0, 2]


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        (2, [0.75, 0.9, 0.68, -np.inf]),
        (None, [0.95, 0.9, 0.68, -np.inf]),
        (1, [0.2, 0.9, 0.68, -np.inf]),
    ],
)
def test_span_best_scores_hand_computed(k: int | None, expected: list[float]) -> None:
    s, n_spans, n_ret = tensor()
    want = np.asarray(expected, dtype=np.float32)
    from_tensor = tuning.span_best_scores(s, k=k, n_spans=n_spans)
    from_cov = tuning.span_best_scores(ev.prepare_coverage(s, n_spans, n_ret), k=k)
    np.testing.assert_array_equal(from_tensor, want)
    np.testing.assert_array_equal(from_cov, want)


def test_span_best_scores_bad_k() -> None:
    with pytest.raises(UsageError):
        tuning.span_best_scores(tensor()[0], k=0)


def test_flip_share_hand_computed() -> None:
    best = [0.66, 0.7, 0.72, 0.749, 0.75, 0.6, 0.65, -np.inf, 1.0]
    flip = tuning.flip_share(best, 0.7, 0.05)
    # covered at 0.70: 0.7 (equal covers), 0.72, 0.749, 0.75, 1.0
    assert flip.covered == 5 and flip.n_spans == 9
    assert flip.lost == 3  # 0.7, 0.72, 0.749 fall below 0.75; 0.75 itself stays
    assert flip.gained == 2  # 0.66 and 0.65 (equal covers); not 0.6, never -inf
    assert flip.share == pytest.approx(5 / 9)
    assert np.isnan(tuning.flip_share([], 0.7).share)
    with pytest.raises(UsageError):
        tuning.flip_share(best, 0.7, -0.1)


def test_flip_counts_agree_with_the_metrics_sweep() -> None:
    """lost/gained are differences of EvidenceRecall at t, t+d and t-d (threshold_sweep)."""
    rng = np.random.default_rng(7)
    s = rng.random((300, 6, 3)).astype(np.float32)
    n_spans = rng.integers(0, 4, 300)
    n_ret = rng.integers(0, 7, 300)
    cov = ev.prepare_coverage(s, n_spans, n_ret)
    for k in (1, 3, 6):
        best = tuning.span_best_scores(cov, k=k)
        assert best.size == int(n_spans.sum())
        for t in (0.3, 0.7, 0.9):
            sweep = ev.threshold_sweep(cov, [t - 0.05, t, t + 0.05], k=k)["EvidenceRecall"]
            covered = np.rint(sweep * best.size).astype(int)
            flip = tuning.flip_share(best, t, 0.05)
            assert flip.covered == covered[1]
            assert flip.lost == covered[1] - covered[2]
            assert flip.gained == covered[0] - covered[1]


# --- a tiny stored run with hand-made pair scores -------------------------------------------


def make_run(name: str = "tiny") -> ParsedRun:
    queries = [
        Query(
            query_id="a",
            query="greek letters",
            retrieved=(
                Chunk("d1", "alpha beta gamma delta", 0.2),
                Chunk("d2", "one two three four five", 0.5),
                Chunk("d3", "xyz", 0.9),
            ),
            evidence=("beta gamma", "two three"),
        ),
        Query(
            query_id="b",
            query="greeting",
            retrieved=(Chunk("e1", "hello world", 0.8),),
            evidence=("hello",),
        ),
        Query(query_id="c", query="no gold", retrieved=(Chunk("f1", "nothing", 0.1),)),
    ]
    # the description differs per name: the same content twice would be one run
    return ParsedRun(RunInfo(name=name, description=name), queries, "native", (f"{name}.jsonl",))


#: (qidx, rank, eidx) -> (score, span_start, span_end), written over the scorer's own values
SCORES = {
    (0, 1, 0): (0.72, 6, 16),
    (0, 1, 1): (0.30, -1, -1),
    (0, 2, 0): (0.65, 0, 3),
    (0, 2, 1): (0.70, 4, 13),
    (0, 3, 0): (0.78, 0, 3),
    (0, 3, 1): (0.61, -1, -1),
    (1, 1, 0): (0.67, 0, 5),
}


def store_with_scores(path: str = ":memory:", name: str = "tiny") -> Store:
    store = Store(path)
    store.import_run(make_run(name), ProblemLog())
    run = store.run(name)
    ensure_scored(store, run.run_id, "partial", NORM)
    with store._cursor() as cur:
        assert cur.execute(
            "SELECT count(*) FROM pair_scores WHERE run_id = ?", [run.run_id]
        ).fetchall()[0][0] == len(SCORES)
        for (q, r, e), (score, start, end) in SCORES.items():
            cur.execute(
                "UPDATE pair_scores SET score = ?, span_start = ?, span_end = ? "
                "WHERE run_id = ? AND qidx = ? AND rank = ? AND eidx = ?",
                [score, start, end, run.run_id, q, r, e],
            )
    return store


def keys(pairs: list[tuning.BorderlinePair]) -> list[tuple[int, int, int]]:
    return [p.key for p in pairs]


def test_borderline_pairs_order_band_k_and_limit() -> None:
    store = store_with_scores()
    data = load_run_data(store, "tiny")
    at = Settings(threshold=0.7, k=10)
    pairs = tuning.borderline_pairs(store, data, at, band=0.1)
    # distances: 0.00, 0.02, 0.03, 0.05, 0.08, 0.09; the 0.30 pair lies outside the band
    assert keys(pairs) == [(0, 2, 1), (0, 1, 0), (1, 1, 0), (0, 2, 0), (0, 3, 0), (0, 3, 1)]
    assert [round(p.distance, 4) for p in pairs] == [0.0, 0.02, 0.03, 0.05, 0.08, 0.09]
    assert [round(p.score, 4) for p in pairs] == [0.7, 0.72, 0.67, 0.65, 0.78, 0.61]
    assert keys(tuning.borderline_pairs(store, data, Settings(threshold=0.7, k=2), band=0.1)) == [
        (0, 2, 1),
        (0, 1, 0),
        (1, 1, 0),
        (0, 2, 0),
    ]
    assert keys(tuning.borderline_pairs(store, data, at, band=0.04)) == [
        (0, 2, 1),
        (0, 1, 0),
        (1, 1, 0),
    ]
    assert keys(tuning.borderline_pairs(store, data, at, band=0.1, limit=2)) == [
        (0, 2, 1),
        (0, 1, 0),
    ]
    first = pairs[0]
    assert (first.query_id, first.doc_id, first.query) == ("a", "d2", "greek letters")
    assert first.evidence == "two three" and first.cut_rank == first.rank == 2


def test_borderline_pairs_skip_a_pair_without_a_kept_score_row() -> None:
    """A pair with no kept score row (a chunk without text) is left out and the next closest
    fetched in its place, however small the limit."""
    store = store_with_scores()
    data = load_run_data(store, "tiny")
    with store._cursor() as cur:  # the closest pair, (0, 2, 1) at distance 0, loses its row
        cur.execute(
            "DELETE FROM pair_scores WHERE run_id = ? AND qidx = 0 AND rank = 2 AND eidx = 1",
            [data.run.run_id],
        )
    at = Settings(threshold=0.7, k=10)
    for limit in (1, 2, 5):
        got = keys(tuning.borderline_pairs(store, data, at, band=0.1, limit=limit))
        assert got == [(0, 1, 0), (1, 1, 0), (0, 2, 0), (0, 3, 0), (0, 3, 1)][:limit]


@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=60),  # distances with many ties
    st.integers(1, 70),
    st.randoms(use_true_random=False),
)
@settings(max_examples=200, deadline=None)
def test_closest_first_is_a_prefix_of_the_whole_order(
    distances: list[int], n: int, rand: object
) -> None:
    size = len(distances)
    d = np.asarray(distances, dtype=np.float64) / 10
    q = np.asarray([rand.randrange(5) for _ in range(size)])  # type: ignore[attr-defined]
    r = np.asarray([rand.randrange(3) for _ in range(size)])  # type: ignore[attr-defined]
    e = np.arange(size)[::-1]
    whole = np.lexsort((e, r, q, d))
    got = tuning._closest_first(d, q, r, e, n)
    assert got.size >= min(n, size)
    assert got.tolist() == whole[: got.size].tolist()


def test_borderline_windows_come_from_the_original_text() -> None:
    store = store_with_scores()
    data = load_run_data(store, "tiny")
    pairs = {
        p.key: p
        for p in tuning.borderline_pairs(
            store, data, Settings(threshold=0.7), band=0.1, context_chars=3
        )
    }
    p = pairs[(0, 1, 0)]  # "alpha beta gamma delta"[6:16]
    assert (p.before, p.window, p.after) == ("ha ", "beta gamma", " de")
    assert p.clipped_before and p.clipped_after
    p = pairs[(1, 1, 0)]  # "hello world"[0:5]
    assert (p.before, p.window, p.after) == ("", "hello", " wo")
    assert not p.clipped_before and p.clipped_after
    p = pairs[(0, 3, 1)]  # no window located: the chunk's head, nothing marked
    assert (p.before, p.window, p.after) == ("", "", "xyz")


def test_borderline_pairs_follow_the_score_cut() -> None:
    """Retriever scores d1 0.2, d2 0.5, d3 0.9: a cut at 0.4 makes d2 rank 1 and d3 rank 2."""
    store = store_with_scores()
    data = load_run_data(store, "tiny")
    cut = Settings(threshold=0.7, k=1, score_threshold=0.4)
    pairs = tuning.borderline_pairs(store, data, cut, band=0.1)
    assert keys(pairs) == [(0, 2, 1), (1, 1, 0), (0, 2, 0)]
    assert [p.cut_rank for p in pairs] == [1, 1, 1]
    cut2 = Settings(threshold=0.7, k=2, score_threshold=0.4)
    assert keys(tuning.borderline_pairs(store, data, cut2, band=0.1)) == [
        (0, 2, 1),
        (1, 1, 0),
        (0, 2, 0),
        (0, 3, 0),
        (0, 3, 1),
    ]


def test_borderline_bad_arguments() -> None:
    store = store_with_scores()
    data = load_run_data(store, "tiny")
    with pytest.raises(UsageError):
        tuning.borderline_pairs(store, data, Settings(), band=-0.1)
    with pytest.raises(UsageError):
        tuning.borderline_pairs(store, data, Settings(), limit=0)


# --- labels -----------------------------------------------------------------------------------


def test_labels_upsert_clear_and_validate() -> None:
    store = store_with_scores()
    tuning.set_label(store, "tiny", 0, 1, 0, "partial", NORM, True)
    tuning.set_label(store, "tiny", 1, 1, 0, "partial", NORM.key, False)
    tuning.set_label(store, "tiny", 0, 1, 0, "partial", NORM, False)  # replaces, not adds
    got = tuning.labels(store, "tiny", "partial", NORM)
    assert got.n == 2 and got.n_match == 0 and got.n_no_match == 2
    assert got.lookup() == {(0, 1, 0): False, (1, 1, 0): False}
    np.testing.assert_allclose(got.score, [0.72, 0.67], rtol=1e-6)
    assert list(got.query_id) == ["a", "b"] and list(got.doc_id) == ["d1", "e1"]
    assert list(got.evidence) == ["beta gamma", "hello"]
    tuning.set_label(store, "tiny", 1, 1, 0, "partial", NORM, None)
    assert tuning.labels(store, "tiny", "partial", NORM).lookup() == {(0, 1, 0): False}
    # another scorer's labels are kept apart
    assert tuning.labels(store, "tiny", "ratio", NORM).n == 0
    with pytest.raises(UsageError):  # no such pair
        tuning.set_label(store, "tiny", 0, 9, 0, "partial", NORM, True)
    with pytest.raises(UsageError):  # not scored with this scorer
        tuning.set_label(store, "tiny", 0, 1, 0, "ratio", NORM, True)
    with pytest.raises(UsageError):
        tuning.set_label(store, "tiny", 0, 1, 0, "partial", NORM, "yes")  # type: ignore[arg-type]
    assert store.table_counts()["pair_labels"] == 1


def test_labels_survive_reopening_and_are_deleted_with_the_run(tmp_path: Path) -> None:
    path = str(tmp_path / "labels.duckdb")
    store = store_with_scores(path, "one")
    store.import_run(make_run("two"), ProblemLog())
    ensure_scored(store, "two", "partial", NORM)
    tuning.set_label(store, "one", 0, 1, 0, "partial", NORM, True)
    tuning.set_label(store, "one", 0, 2, 1, "partial", NORM, False)
    tuning.set_label(store, "two", 1, 1, 0, "partial", NORM, True)
    store.close()

    with Store(path) as reopened:
        assert tuning.labels(reopened, "one", "partial", NORM).lookup() == {
            (0, 1, 0): True,
            (0, 2, 1): False,
        }
        reopened.delete("one")
        assert reopened.table_counts()["pair_labels"] == 1  # run two's label only
        assert tuning.labels(reopened, "two", "partial", NORM).lookup() == {(1, 1, 0): True}
        with reopened._cursor() as cur:
            left = cur.execute("SELECT DISTINCT run_id FROM pair_labels").fetchall()
        assert left == [(reopened.run("two").run_id,)]


# --- agreement and suggestion -----------------------------------------------------------------

LABELS = [True, True, True, False, False, False]
LABEL_SCORES = [0.9, 0.8, 0.6, 0.7, 0.5, 0.3]


def test_agreement_curve_hand_computed() -> None:
    ts = [0.0, 0.55, 0.65, 0.75, 0.85, 0.95]
    a = tuning.agreement_curve(LABELS, LABEL_SCORES, ts)
    assert a.tp.tolist() == [3, 3, 2, 2, 1, 0]
    assert a.fp.tolist() == [3, 1, 1, 0, 0, 0]
    assert a.fn.tolist() == [0, 0, 1, 1, 2, 3]
    assert a.tn.tolist() == [0, 2, 2, 3, 3, 3]
    np.testing.assert_allclose(a.accuracy, [3 / 6, 5 / 6, 4 / 6, 5 / 6, 4 / 6, 3 / 6])
    np.testing.assert_allclose(a.precision, [0.5, 0.75, 2 / 3, 1.0, 1.0, NAN])
    np.testing.assert_allclose(a.recall, [1.0, 1.0, 2 / 3, 2 / 3, 1 / 3, 0.0])
    np.testing.assert_allclose(a.f1, [6 / 9, 6 / 7, 4 / 6, 4 / 5, 2 / 4, 0.0])


def test_agreement_equal_score_is_a_match_and_nan_scores_are_left_out() -> None:
    a = tuning.agreement_curve([True, False, True], [0.7, NAN, 0.2], [0.7])
    assert (a.tp[0], a.fp[0], a.fn[0], a.tn[0]) == (1, 0, 1, 0)
    with pytest.raises(UsageError):
        tuning.agreement_curve([True], [0.5, 0.6], [0.5])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.integers(0, 20)), max_size=30),
    st.lists(st.integers(0, 20), min_size=1, max_size=8),
)
def test_agreement_matches_a_loop(pairs: list[tuple[bool, int]], grid: list[int]) -> None:
    y = [p[0] for p in pairs]
    s = [p[1] / 20 for p in pairs]  # ties with the thresholds on purpose
    ts = [g / 20 for g in grid]
    a = tuning.agreement_curve(y, s, ts)
    for i, t in enumerate(ts):
        pred = [np.float32(v) >= np.float32(t) for v in s]
        tp = sum(p and lab for p, lab in zip(pred, y, strict=True))
        fp = sum(p and not lab for p, lab in zip(pred, y, strict=True))
        fn = sum(not p and lab for p, lab in zip(pred, y, strict=True))
        assert (a.tp[i], a.fp[i], a.fn[i]) == (tp, fp, fn)
        f1 = 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else NAN
        assert a.f1[i] == pytest.approx(f1, nan_ok=True)
        tn = len(y) - tp - fp - fn
        pos, neg = tp + fn, fp + tn
        balanced = (tp / pos + tn / neg) / 2 if pos and neg else NAN
        assert a.balanced_accuracy[i] == pytest.approx(balanced, nan_ok=True)
        if y:
            den = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
            mcc = (tp * tn - fp * fn) / den if den else 0.0
            assert a.mcc[i] == pytest.approx(mcc)
        if pos and neg and len(set(pred)) == 2:  # scipy's phi coefficient is MCC
            assert a.mcc[i] == pytest.approx(
                scipy.stats.pearsonr(np.asarray(pred, float), np.asarray(y, float))[0], abs=1e-9
            )


def test_suggestion_hand_computed() -> None:
    # balanced accuracy (TPR + TNR) / 2: (1 + 2/3) / 2 = 5/6 for t in (0.5, 0.6] and
    # (2/3 + 1) / 2 = 5/6 in (0.7, 0.8]; 2/3 in (0.6, 0.7]; 4/6 in (0.3, 0.5]
    got = tuning.suggest_threshold(LABELS, LABEL_SCORES, current=0.7, min_each=3)
    assert got.best == 0.71 and got.balanced_accuracy == pytest.approx(5 / 6)
    # at 0.71 TNR is 1 and TPR 2/3; a resample of the 3 matches holds b ~ Binomial(3, 2/3)
    # agreeing ones, so balanced accuracy is (b/3 + 1)/2: 0.5 with probability 1/27 = 3.7%
    # (above 2.5%: the interval's lower end) and 1 with 8/27: the 95% interval is [0.5, 1]
    assert got.interval == (0.5, 1.0)
    assert got.threshold is None  # 3 labels a kind: 5/6 may still be a coin toss
    assert got.mcc == pytest.approx((2 * 3 - 0 * 1) / math.sqrt(2 * 3 * 4 * 3))
    assert (got.n_labels, got.n_match, got.n_no_match) == (6, 3, 3)
    assert got.accuracy == pytest.approx(5 / 6) and got.f1 == pytest.approx(0.8)
    assert "balanced accuracy 0.833" in got.message
    low = tuning.suggest_threshold(LABELS, LABEL_SCORES, current=0.2, min_each=3)
    assert low.best == 0.51  # the plateau's end closest to 0.2


def test_suggestion_is_not_the_lenient_threshold_f1_would_pick() -> None:
    """Mostly matches: F1 ignores true negatives and peaks at a threshold that lets a labelled
    no-match in; balanced accuracy weighs both kinds of error and does not."""
    y = [True] * 10 + [True, False, False]
    s = [0.9] * 10 + [0.45, 0.5, 0.2]
    curve = tuning.agreement_curve(y, s, tuning.THRESHOLD_GRID)
    f1_best = curve.thresholds[int(np.nanargmax(curve.f1))]
    assert 0.2 < f1_best <= 0.45  # F1 23/24... at 0.21-0.45: the 0.5 no-match counts as a match
    got = tuning.suggest_threshold(y, s, current=0.7, min_each=2)
    assert got.threshold == 0.7  # balanced accuracy (10/11 + 1) / 2 on (0.5, 0.9]: 0.7 is in it
    assert got.balanced_accuracy == pytest.approx((10 / 11 + 1) / 2)


def test_suggestion_ties_go_to_the_closest_then_the_lower() -> None:
    y, s = [True, True, False, False], [0.9, 0.7, 0.65, 0.85]
    # balanced accuracy at 0.6: TPR 1, TNR 0 -> 1/2; at 0.8: TPR 1/2, TNR 1/2 -> 1/2: equal
    assert tuning.suggest_threshold(y, s, 0.7, [0.6, 0.8], min_each=1).best == 0.6
    assert tuning.suggest_threshold(y, s, 0.71, [0.6, 0.8], min_each=1).best == 0.8


def test_no_suggestion_with_too_few_labels() -> None:
    y = [True] * 4 + [False] * 10
    s = [0.9] * 4 + [0.1] * 10
    got = tuning.suggest_threshold(y, s, 0.7)
    assert got.threshold is None and np.isnan(got.balanced_accuracy) and np.isnan(got.f1)
    assert "at least 5 labels of each kind" in got.message and "4 match" in got.message
    assert tuning.suggest_threshold([*y, True], [*s, 0.8], 0.7).threshold is not None


#: the issue's case: 14 labels, 7 of each, where the best threshold is no better than a coin
#: toss (every match scores below every no match but one tie; a constant verdict is best)
CHANCE_LABELS = [True] * 7 + [False] * 7
CHANCE_SCORES = [0.55, 0.58, 0.6, 0.62, 0.64, 0.66, 0.7, 0.7, 0.72, 0.74, 0.76, 0.78, 0.8, 0.82]


def test_no_suggestion_at_chance_level() -> None:
    got = tuning.suggest_threshold(CHANCE_LABELS, CHANCE_SCORES, current=0.7)
    # by hand: at any t, TPR + TNR <= 1 (the matches lie below the no matches), so the best
    # balanced accuracy is 1/2: t <= 0.55 (TPR 1, TNR 0) or t > 0.82 (TPR 0, TNR 1); closest
    # to 0.7 is 0.55 (0.15 away; 0.83 is 0.13 away: that one)
    assert got.best == 0.83 and got.balanced_accuracy == 0.5 and got.mcc == 0.0
    assert got.interval == (0.5, 0.5)  # a constant verdict: every resample agrees as much
    assert got.threshold is None
    assert got.message.startswith("no threshold separates these labels better than chance")
    assert "balanced accuracy 0.500" in got.message and "7 match, 7 no match" in got.message


def test_suggestion_when_labels_separate() -> None:
    """The honest positive: 5 of each kind, cleanly apart, gets a suggestion."""
    y = [True] * 5 + [False] * 5
    s = [0.91, 0.86, 0.8, 0.95, 0.99, 0.1, 0.2, 0.3, 0.4, 0.5]
    got = tuning.suggest_threshold(y, s, current=0.7)
    assert got.threshold == 0.7 == got.best and got.interval == (1.0, 1.0)
    # a sixth no match among the matches (0.85): on (0.5, 0.8] TPR 1, TNR 5/6 -> 11/12 (on
    # (0.85, 0.86] TPR 4/5, TNR 1 -> 0.9); resampling the 6 no matches gives 0.5 + b/12 with
    # b ~ Binomial(6, 5/6): P(b <= 3) = 6.2%, P(b <= 2) = 0.9%, so the lower end is 0.75
    y2, s2 = [*y, False], [*s, 0.85]
    got = tuning.suggest_threshold(y2, s2, current=0.7)
    assert got.threshold == 0.7 and got.balanced_accuracy == pytest.approx(11 / 12)
    assert got.interval[0] == pytest.approx(0.75)


def test_interval_matches_an_index_bootstrap() -> None:
    """The binomial shortcut against the textbook bootstrap: resample label positions of each
    kind with replacement and recount (an independent computation; quantiles agree to within
    the resampling noise)."""
    rng = np.random.default_rng(7)
    y = np.asarray([True] * 12 + [False] * 9)
    s = np.where(y, rng.uniform(0.5, 1.0, y.size), rng.uniform(0.3, 0.8, y.size))
    t = 0.65
    pos, neg = s[y] >= np.float32(t), s[~y] < np.float32(t)
    counts = (int(pos.sum()), int((~pos).sum()), int(neg.sum()), int((~neg).sum()))
    lo, hi = tuning.balanced_accuracy_interval(*counts, resamples=20000)
    i = rng.integers(0, pos.size, (20000, pos.size))
    j = rng.integers(0, neg.size, (20000, neg.size))
    ba = (pos[i].mean(axis=1) + neg[j].mean(axis=1)) / 2
    ref = np.quantile(ba, [0.025, 0.975])
    assert lo == pytest.approx(ref[0], abs=0.03) and hi == pytest.approx(ref[1], abs=0.03)
    assert np.isnan(tuning.balanced_accuracy_interval(1, 1, 0, 0)).all()  # no no-match labels


def test_conflicts_are_the_inverted_pairs() -> None:
    i, j = tuning.conflicts(CHANCE_LABELS, CHANCE_SCORES)
    brute = {
        (a, b)
        for a in range(14)
        for b in range(14)
        if CHANCE_LABELS[a] and not CHANCE_LABELS[b] and CHANCE_SCORES[a] <= CHANCE_SCORES[b]
    }
    assert set(zip(i.tolist(), j.tolist(), strict=True)) == brute and len(brute) == 49
    assert (i[0], j[0]) == (0, 13)  # the widest gap first: 0.55 below 0.82
    gaps = np.asarray(CHANCE_SCORES)[j] - np.asarray(CHANCE_SCORES)[i]
    assert np.all(np.diff(gaps) <= 1e-9)
    y, s = [True, True, False], [0.9, 0.8, 0.3]  # separable: none
    assert tuning.conflicts(y, s)[0].size == 0
    assert tuning.conflicts([True, False], [0.5, float("nan")])[0].size == 0


def test_borderline_pairs_leave_out_chunks_without_text() -> None:
    """A chunk without text has no kept score (the tensor reads it as 0.0): never a pair."""
    store = Store(":memory:")
    run = ParsedRun(
        RunInfo(name="notext"),
        [
            Query(
                query_id="a",
                query="q",
                retrieved=(Chunk("d1", None, 0.9), Chunk("d2", "zzzz qqqq", 0.5)),
                evidence=("alpha beta",),
            )
        ],
        "native",
        ("notext.jsonl",),
    )
    store.import_run(run, ProblemLog())
    data = load_run_data(store, "notext")
    pairs = tuning.borderline_pairs(store, data, Settings(threshold=0.0), band=1.0)
    assert keys(pairs) == [(0, 2, 0)]  # d2 only, whatever its score
    assert pairs[0].doc_id == "d2" and pairs[0].cut_rank == 2


def test_tuning_sees_the_scores_the_metrics_see() -> None:
    """With the numbers guard on (the default) a pair stating another figure scores 0 for the
    metrics: it is no borderline pair, and a label on it weighs in at 0, not at its fuzzy score.
    With the guard off both see the fuzzy score again."""
    store = Store(":memory:")
    run = ParsedRun(
        RunInfo(name="mb"),
        [
            Query(
                query_id="a",
                retrieved=(
                    Chunk("near", "The default block size is 32 megabytes (32MB).", 0.9),
                    Chunk("close", "its block size: 128 megabits (128Mb)", 0.5),
                ),
                evidence=("128 megabytes (128MB)",),
            )
        ],
        "native",
        ("mb.jsonl",),
    )
    store.import_run(run, ProblemLog())
    data = load_run_data(store, "mb")
    on, off = Settings(threshold=0.8), Settings(threshold=0.8, numbers_must_match=False)
    near_on = {p.doc_id: p.score for p in tuning.borderline_pairs(store, data, on, band=0.2)}
    near_off = {p.doc_id: p.score for p in tuning.borderline_pairs(store, data, off, band=0.2)}
    assert "near" in near_off and "near" not in near_on  # 0.86 refused: 0 is far from 0.8
    assert near_on.get("close") == near_off.get("close")  # the same figures: untouched
    tuning.set_label(store, "mb", 0, 1, 0, "partial", NORM, False)
    raw = tuning.labels(store, "mb", "partial", NORM)
    assert raw.score.tolist() == [pytest.approx(near_off["near"])]
    assert tuning.as_scored(raw, store, data, on).score.tolist() == [0.0]
    assert tuning.as_scored(raw, store, data, off) is raw
