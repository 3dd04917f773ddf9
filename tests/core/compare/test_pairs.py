"""Each candidate is paired with the baseline on the queries the two of them hold.

The reference is the two-run comparison: a candidate's numbers in a comparison of several runs
must be the numbers of that candidate compared with the baseline alone (only Holm's correction,
which spans every test of one comparison, differs).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from rageval_core.compare import compare
from rageval_core.outputs.compare_text import format_comparison
from rageval_core.compare import comparison as cmp
from rageval_core.compare.comparison import MAX_IDS_SHOWN, pair_queries
from rageval_core.compare.latency_change import LATENCY_STATS
from rageval_core.compare.statistics import holm
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.rundata import load_run_data
from tests.core.compare.test_compare import FAST, make_run, store_with

METRICS = ["RR", "P@1", "nDCG@3"]
BASE_RANKS = {f"q{i}": [1, 2, 3, None][i % 4] for i in range(12)}
# B holds 3 of the baseline's queries (and one of its own); C holds 10 (and one of its own)
B_RANKS = {"q0": 2, "q1": 1, "q2": 1, "b-only": 1}
C_RANKS = {**{f"q{i}": [1, 1, 2, 3, None][i % 5] for i in range(2, 12)}, "c-only": 2}


def _latency(ranks: dict[str, int | None], scale: float) -> dict[str, float]:
    return {q: scale * (10 + 3 * i) for i, q in enumerate(ranks)}


def _kinds(ranks: dict[str, int | None]) -> dict[str, str]:
    return {q: "even" if i % 2 == 0 else "odd" for i, q in enumerate(ranks)}


@pytest.fixture(scope="module")
def store():  # type: ignore[no-untyped-def]
    runs = [
        make_run("base", BASE_RANKS, latency=_latency(BASE_RANKS, 1.0), tags=_kinds(BASE_RANKS)),
        make_run("B", B_RANKS, latency=_latency(B_RANKS, 1.5)),
        make_run("C", C_RANKS, latency=_latency(C_RANKS, 0.7)),
        make_run("Z", {"z1": 1, "z2": 2}),
    ]
    with store_with(*runs) as s:
        yield s


SAME = (
    "n",
    "baseline_mean",
    "candidate_mean",
    "diff",
    "ci_low",
    "ci_high",
    "t",
    "df",
    "p_t",
    "p_perm",
    "effect_size",
    "wins",
    "ties",
    "losses",
    "note",
)


def _same(a: object, b: object) -> None:
    for name in SAME:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, float) and math.isnan(x):
            assert math.isnan(y), name
        elif not isinstance(x, float):
            assert x == y, name
        else:
            assert x == pytest.approx(y, rel=1e-12, abs=1e-15), name


def test_each_candidate_is_compared_on_its_own_pair(store) -> None:  # type: ignore[no-untyped-def]
    both = compare(["base", "B", "C"], METRICS, store=store, options=FAST, by=["kind"])
    alone = {
        name: compare(["base", name], METRICS, store=store, options=FAST, by=["kind"])
        for name in ("B", "C")
    }
    assert both.alignment.pair("B").n_shared == 3 and both.alignment.pair("C").n_shared == 10
    assert both.alignment.pair("B").n_baseline_only == 9
    assert both.alignment.pair("B").candidate_only == ["b-only"]
    assert both.alignment.pair("C").n_baseline_only == 2
    for name, ref in alone.items():
        assert ref.alignment.pair(name).n_shared == both.alignment.pair(name).n_shared
        for m in METRICS:
            _same(both.test(name, m), ref.test(name, m))
            assert both.means[name][m] == pytest.approx(ref.means[name][m])
            assert both.worst[name][m] == ref.worst[name][m]
        for stat in LATENCY_STATS:
            got = both.ops_change(name, f"latency.total.{stat}")
            want = ref.ops_change(name, f"latency.total.{stat}")
            assert got is not None and want is not None
            assert (got.n, got.baseline, got.candidate_value) == (
                want.n,
                pytest.approx(want.baseline),
                pytest.approx(want.candidate_value),
            )
            assert (got.ci_low, got.ci_high) == (
                pytest.approx(want.ci_low),
                pytest.approx(want.ci_high),
            )
        # segments: inside each value of the tag, the pair's own queries of that value
        for group, seg in ref.by["kind"].items():
            for t in seg["tests"]:
                got_t = next(
                    x
                    for x in both.by["kind"][group]["tests"]
                    if x.candidate == name and x.metric == t.metric
                )
                _same(got_t, t)
    # Holm spans every (candidate, metric) test of the one comparison
    p = [t.p_perm for t in both.tests]
    assert [t.p_perm_holm for t in both.tests] == pytest.approx(list(holm(p)), nan_ok=True)
    assert len(both.tests) == 2 * len(METRICS)


def test_a_pair_by_hand_against_scipy(store) -> None:  # type: ignore[no-untyped-def]
    c = compare(["base", "B", "C"], ["RR"], store=store, options=FAST)
    t = c.test("B", "RR")
    # B's pair is q0, q1, q2: base ranks 1, 2, 3; B ranks 2, 1, 1
    base, cand = np.array([1, 1 / 2, 1 / 3]), np.array([1 / 2, 1, 1])
    assert t.n == 3 and t.diff == pytest.approx((cand - base).mean())
    assert t.p_t == pytest.approx(scipy.stats.ttest_rel(cand, base).pvalue, rel=1e-10)
    assert (t.wins, t.ties, t.losses) == (2, 0, 1)
    # the baseline's own value: over its queries paired with any candidate (here all 12)
    rr = evaluate(load_run_data(store, store.run("base").run_id), ["RR"], store=store)
    assert c.means["base"]["RR"] == pytest.approx(float(np.mean(rr.per_query["RR"])))
    assert c.n_shared == 12


def test_a_candidate_sharing_nothing_is_left_out_and_named(store) -> None:  # type: ignore[no-untyped-def]
    c = compare(["base", "Z", "B"], ["RR"], store=store, options=FAST)
    assert c.candidates == ("B",) and c.alignment.left_out == {"Z": cmp.NO_SHARED}
    assert [r["name"] for r in c.runs] == ["base", "Z", "B"]
    ref = compare(["base", "B"], ["RR"], store=store, options=FAST)
    _same(c.test("B", "RR"), ref.test("B", "RR"))
    out = c.to_json()
    assert out["alignment"]["left_out"] == {"Z": cmp.NO_SHARED}
    assert out["alignment"]["pairs"]["B"]["baseline_only"]["n"] == 9
    text = format_comparison(c)
    assert "left out: Z (shares no query_id with the baseline)" in text
    three = compare(["base", "B", "C"], ["RR"], store=store, options=FAST)
    many = format_comparison(three)
    assert "  B: 3 shared; not shared: base 9" in many and "  C: 10 shared" in many
    # each candidate's row holds the baseline's mean on that candidate's own pair
    for cand in ("B", "C"):
        t = three.test(cand, "RR")
        row = next(ln.split() for ln in many.splitlines() if cand in ln.split()[:2])
        assert row[row.index(cand) + 1 : row.index(cand) + 4] == [
            str(t.n),
            f"{t.baseline_mean:.4f}",
            f"{t.candidate_mean:.4f}",
        ]
    assert three.test("B", "RR").baseline_mean != three.test("C", "RR").baseline_mean


def test_one_shared_query_does_not_break_the_others() -> None:
    runs = [
        make_run("base", BASE_RANKS),
        make_run("one", {"q3": 1}),
        make_run("all", dict(BASE_RANKS, q0=3, q5=1)),
    ]
    with store_with(*runs) as store:
        c = compare(["base", "one", "all"], ["RR"], store=store, options=FAST)
        ref = compare(["base", "all"], ["RR"], store=store, options=FAST)
    one, full = c.test("one", "RR"), c.test("all", "RR")
    assert one.n == 1 and one.note == "n < 2" and math.isnan(one.p_perm)
    assert one.diff == pytest.approx(1.0 - 0.0)  # q3: not retrieved in base, rank 1 in one
    assert full.n == 12 and not math.isnan(full.p_perm)
    _same(full, ref.test("all", "RR"))


@pytest.mark.parametrize(("n", "margin"), [(257, 6.0), (3000, 6.0), (3000, 0.0)])
def test_batched_ops_intervals_equal_numpy_percentiles_of_each_resample(
    n: int, margin: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The latency and cost intervals, all drawn at once and read from histograms, equal the
    statistics np.percentile / mean / sum give on each resample's gathered values (margin 0:
    nearly every resample's percentile falls outside the histogram's fine bins and is sorted)."""
    from rageval_core.compare.latency_change import _changes, _Ranks, _Target
    from rageval_core.compare.statistics import StatOptions, percentile_interval

    monkeypatch.setattr(_Ranks, "MARGIN", margin)
    rng = np.random.default_rng(3)
    opts = StatOptions(n_bootstrap=300, seed=7)
    targets = [
        _Target("latency.total", LATENCY_STATS, "c", rng.gamma(2, 50, n), rng.gamma(2, 45, n)),
        _Target(
            "latency.rerank", LATENCY_STATS, "c", rng.integers(1, 9, n) * 1.0, rng.normal(5, 2, n)
        ),
        _Target(
            "cost", ("per_query", "total"), "c", rng.uniform(0, 1e-3, n), rng.uniform(0, 2e-3, n)
        ),
    ]
    got = _changes(targets, opts, resample=True)
    idx = np.random.default_rng(opts.seed).integers(0, n, size=(opts.n_bootstrap, n))
    want = []
    for t in targets:
        b, c = t.b[idx], t.c[idx]
        if t.names == LATENCY_STATS:

            def stats(x: np.ndarray) -> np.ndarray:
                return np.column_stack(
                    [x.mean(axis=1), *np.percentile(x, [50, 90, 95, 99], axis=1)]
                )
        else:

            def stats(x: np.ndarray) -> np.ndarray:
                return np.column_stack([x.mean(axis=1), x.sum(axis=1)])

        lo, hi = percentile_interval(stats(c) - stats(b), opts.level)
        want += list(zip(lo, hi, strict=True))
    assert len(got) == len(want) == 12
    for change, (lo, hi) in zip(got, want, strict=True):
        assert change.ci_low == pytest.approx(lo, rel=1e-9) and change.ci_high == pytest.approx(
            hi, rel=1e-9
        )


def test_reports_held_by_the_caller_are_used_not_evaluated_again(
    store, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    names = ["base", "B", "C"]
    data = [load_run_data(store, store.run(n).run_id) for n in names]
    reports = [evaluate(d, store=store) for d in data]
    ref = compare(data, store=store, options=FAST)

    def no_evaluation(*args: object, **kwargs: object) -> None:
        raise AssertionError("evaluated again")

    monkeypatch.setattr(cmp, "evaluate", no_evaluation)
    got = compare(data, store=store, options=FAST, reports=reports)
    assert got.metrics == ref.metrics and len(got.tests) == len(ref.tests)
    for t in ref.tests:
        _same(got.test(t.candidate, t.metric), t)
    assert got.means == ref.means


def test_pair_queries_matches_a_plain_search_with_repeats_and_strays() -> None:
    """The dict lookups against the question asked plainly: for each baseline id in order, the
    first candidate row holding it; what each side holds alone, in its own order."""
    rng = np.random.default_rng(12)
    base = np.array([f"q{i}" for i in rng.integers(0, 300, 400)], dtype=object)  # repeats
    cand = np.array([f"q{i}" for i in rng.integers(100, 500, 350)], dtype=object)
    p = pair_queries("c", base, cand)
    cand_list = cand.tolist()
    expected = [(i, cand_list.index(q)) for i, q in enumerate(base.tolist()) if q in cand_list]
    assert p.base_rows.tolist() == [i for i, _ in expected]
    assert p.cand_rows.tolist() == [j for _, j in expected]
    assert p.shared_ids.tolist() == [base[i] for i, _ in expected]
    alone = [q for q in base.tolist() if q not in cand_list]
    assert (p.n_baseline_only, p.baseline_only) == (len(alone), alone[:MAX_IDS_SHOWN])
    theirs = [q for q in cand_list if q not in set(p.shared_ids.tolist())]
    assert (p.n_candidate_only, p.candidate_only) == (len(theirs), theirs[:MAX_IDS_SHOWN])
    assert 0 < p.n_shared < base.size and p.n_candidate_only > 0
