"""compare(): the statistics against scipy and exact enumeration, alignment, ops, segments, gate."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator, Mapping

import numpy as np
import pytest
import scipy.special
import scipy.stats

from rageval_core.compare import StatOptions, compare, gate, parse_rules, trends
from rageval_core.outputs.compare_text import format_comparison
from rageval_core.compare import comparison as cmp
from rageval_core.compare.comparison import align
from rageval_core.compare.latency_change import LATENCY_STATS
from rageval_core.compare.statistics import (
    betainc,
    bootstrap_ci,
    effect_size,
    holm,
    paired_t_test,
    permutation_test,
    t_two_sided_p,
)
from rageval_core.errors import ProblemLog, UsageError
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.rundata import load_run_data
from rageval_core.store import Store
from tests.paths import REPO

FAST = StatOptions(n_permutations=2000, n_bootstrap=500)

# --- statistics --------------------------------------------------------------------------


def test_betainc_matches_scipy() -> None:
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(3000):
        a, b = 10 ** rng.uniform(-1, 2.5, size=2)
        x = float(rng.uniform()) if rng.uniform() < 0.8 else float(10 ** rng.uniform(-12, 0))
        ref = float(scipy.special.betainc(a, b, x))
        if ref < 1e-250:  # scipy itself loses digits this deep in the tail
            continue
        assert betainc(a, b, x) == pytest.approx(ref, rel=1e-10, abs=0), (a, b, x)
        checked += 1
    assert checked > 2500
    assert betainc(2.0, 3.0, 0.0) == 0.0 and betainc(2.0, 3.0, 1.0) == 1.0
    with pytest.raises(ValueError):
        betainc(0.0, 1.0, 0.5)


def _cases() -> Iterator[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(5)
    for _ in range(1500):
        n = int(rng.choice([2, 3, 4, 5, 10, 30, 100, 400, 3000]))
        base = rng.uniform(0, 1, n)
        shift = rng.normal() * 10 ** rng.uniform(-4, 0.5)  # tiny to huge t
        noise = 10 ** rng.uniform(-6, 0)
        yield base, base + shift + rng.normal(0, noise, n)


def test_paired_t_test_matches_scipy_ttest_rel() -> None:
    smallest = 1.0
    for base, cand in _cases():
        ref = scipy.stats.ttest_rel(cand, base)
        ours = paired_t_test(cand - base)
        assert ours.df == base.size - 1
        assert ours.t == pytest.approx(float(ref.statistic), rel=1e-10)
        assert ours.p == pytest.approx(float(ref.pvalue), rel=1e-10, abs=1e-300)
        smallest = min(smallest, ours.p)
    assert smallest < 1e-100  # the huge-t tail was exercised


def test_t_p_closed_forms() -> None:
    """df = 1 (Cauchy) and df = 2 have closed forms: independent of scipy, tiny t included."""
    for t in (1e-12, 1e-8, 1e-3, 0.5, 1.0, 3.0, 40.0, 1e6, -2.5):
        assert t_two_sided_p(t, 1) == pytest.approx(1 - 2 / math.pi * math.atan(abs(t)), rel=1e-12)
        assert t_two_sided_p(t, 2) == pytest.approx(1 - abs(t) / math.sqrt(2 + t * t), rel=1e-9)
    assert t_two_sided_p(0.0, 7) == 1.0
    assert t_two_sided_p(math.inf, 7) == 0.0 and t_two_sided_p(1e200, 7) == 0.0
    assert math.isnan(t_two_sided_p(math.nan, 3))


def test_t_test_degenerate_cases() -> None:
    same = paired_t_test(np.full(6, 0.25))
    assert same.p == 0.0 and same.t == math.inf
    down = paired_t_test(np.full(4, -1.0))
    assert down.p == 0.0 and down.t == -math.inf
    zero = paired_t_test(np.zeros(5))
    assert zero.p == 1.0 and zero.t == 0.0
    one = paired_t_test(np.array([0.3]))
    assert math.isnan(one.p) and math.isnan(one.t)
    assert math.isnan(paired_t_test(np.zeros(0)).p)


def _exact_p(d: np.ndarray) -> float:
    observed = abs(d.sum())
    flips = [
        abs(np.dot(signs, d)) >= observed - 1e-12
        for signs in itertools.product((-1, 1), repeat=d.size)
    ]
    return sum(flips) / len(flips)


def test_permutation_test_close_to_exact_enumeration() -> None:
    rng = np.random.default_rng(2)
    for shift in (0.0, 0.4, 0.9):
        d = rng.normal(shift, 1.0, 10)
        exact = _exact_p(d)
        mc = permutation_test(d, n_permutations=10_000, seed=0, exact=False)
        se = math.sqrt(exact * (1 - exact) / 10_000)
        assert abs(mc - exact) <= 4 * se + 2 / 10_001, (shift, mc, exact)
        # 2^10 <= 10,000: by default the flips are enumerated, which is exact
        assert permutation_test(d, n_permutations=10_000) == pytest.approx(exact, abs=1e-15)


def test_permutation_test_seeded_and_degenerate() -> None:
    d = np.random.default_rng(8).normal(0.1, 1, 200)
    assert permutation_test(d, seed=3) == permutation_test(d, seed=3)
    assert permutation_test(d, seed=3) != permutation_test(d, seed=4)
    assert permutation_test(np.zeros(40)) == 1.0  # every flip ties the observed 0
    assert permutation_test(np.full(40, 0.1), n_permutations=999) == pytest.approx(1 / 1000)
    assert math.isnan(permutation_test(np.array([0.5])))
    # a p-value is never 0: the observed labelling counts
    assert permutation_test(np.full(30, 2.0) + np.arange(30) * 1e-3) > 0


def test_bootstrap_ci_contains_truth_and_is_reproducible() -> None:
    rng = np.random.default_rng(4)
    base = rng.uniform(0, 1, 400)
    cand = base + 0.1 + rng.normal(0, 0.2, 400)
    lo, hi = bootstrap_ci(base, cand, seed=0)
    assert lo < 0.1 < hi and lo < float(np.mean(cand - base)) < hi
    assert (lo, hi) == bootstrap_ci(base, cand, seed=0)
    assert (lo, hi) != bootstrap_ci(base, cand, seed=1)
    narrow = bootstrap_ci(base, cand, level=0.5)
    assert lo < narrow[0] < narrow[1] < hi
    assert all(math.isnan(x) for x in bootstrap_ci(base[:1], cand[:1]))


def test_bootstrap_ci_coverage_is_near_nominal() -> None:
    rng = np.random.default_rng(9)
    hits = 0
    trials = 200
    for seed in range(trials):
        d = rng.normal(0.05, 0.3, 100)
        lo, hi = bootstrap_ci(np.zeros(100), d, n_resamples=1000, seed=seed)
        hits += lo <= 0.05 <= hi
    assert 0.88 <= hits / trials <= 0.99


def test_bootstrap_ci_weighted_brackets_pooled_difference() -> None:
    rng = np.random.default_rng(6)
    w = rng.integers(1, 5, 300).astype(float)
    base = rng.uniform(0, 1, 300)
    cand = np.clip(base + rng.normal(0.05, 0.1, 300), 0, 1)
    pooled = np.dot(cand, w) / w.sum() - np.dot(base, w) / w.sum()
    lo, hi = bootstrap_ci(base, cand, w, w)
    assert lo < pooled < hi


def test_holm_hand_example() -> None:
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 -> max(0.06, 0.04) = 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    out = holm([0.2, math.nan, 0.01])  # NaN is not a test: m = 2
    assert out[0] == pytest.approx(0.2) and math.isnan(out[1]) and out[2] == pytest.approx(0.02)
    assert holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm([0.03]) == pytest.approx([0.03])


def test_effect_size_is_cohens_dz() -> None:
    d = np.array([0.1, 0.3, -0.2, 0.5])
    assert effect_size(d) == pytest.approx(d.mean() / d.std(ddof=1))
    assert effect_size(np.zeros(3)) == 0.0 and effect_size(np.full(3, -1.0)) == -math.inf
    assert math.isnan(effect_size(np.array([1.0])))


# --- runs built by hand ------------------------------------------------------------------


def make_run(
    name: str,
    ranks: Mapping[str, int | None],
    *,
    latency: Mapping[str, float] | None = None,
    tokens: Mapping[str, int] | None = None,
    tags: Mapping[str, str] | None = None,
    created_at: str | None = None,
    prices: tuple[float | None, float | None] = (0.001, 0.002),
) -> ParsedRun:
    """A run whose query q has its relevant document at rank ranks[q] (None: not retrieved)."""
    queries = []
    for qid, rank in ranks.items():
        docs = tuple(Chunk(f"{qid}-d{i}", text=f"text {i}") for i in range(1, 4))
        relevant = f"{qid}-d{rank}" if rank else f"{qid}-elsewhere"
        queries.append(
            Query(
                qid,
                retrieved=docs,
                relevance={relevant: 1},
                latency_ms={"total": latency[qid]} if latency and qid in latency else {},
                tokens={"prompt": tokens[qid], "completion": 10}
                if tokens and qid in tokens
                else {},
                tags={"kind": tags[qid]} if tags and qid in tags else {},
            )
        )
    info = RunInfo(
        name=name,
        created_at=created_at,
        price_prompt_per_1k=prices[0],
        price_completion_per_1k=prices[1],
    )
    return ParsedRun(info, queries, "native", (f"{name}.jsonl",))


def store_with(*runs: ParsedRun) -> Store:
    store = Store(":memory:")
    for run in runs:
        store.import_run(run, ProblemLog())
    return store


def test_align_partial_and_disjoint() -> None:
    a = np.array([f"q{i}" for i in range(40)], dtype=object)
    b = np.array([f"q{i}" for i in range(35, 5, -1)] + ["x1"], dtype=object)
    al = align(["a", "b"], [a, b])
    p = al.pair("b")
    assert p.n_shared == 30 and p.shared_ids.tolist() == [f"q{i}" for i in range(6, 36)]
    assert a[p.base_rows].tolist() == p.shared_ids.tolist()  # rows point at the same queries
    assert b[p.cand_rows].tolist() == p.shared_ids.tolist()
    assert (p.n_baseline_only, p.n_candidate_only, p.candidate_only) == (10, 1, ["x1"])
    many = align(["a", "c"], [a, np.array(["q0"], dtype=object)])
    assert many.pair("c").n_baseline_only == 39
    assert len(many.pair("c").baseline_only) == cmp.MAX_IDS_SHOWN
    with pytest.raises(UsageError, match="share no query_id"):
        align(["a", "d"], [a, np.array(["z1", "z2"], dtype=object)])
    # a candidate that shares nothing is left out, named; the others are still paired
    some = align(["a", "d", "b"], [a, np.array(["z1"], dtype=object), b])
    assert [x.candidate for x in some.pairs] == ["b"]
    assert some.left_out == {"d": cmp.NO_SHARED}


def test_compare_hand_computed_rr_and_alignment() -> None:
    base = make_run("base", {"q1": 1, "q2": 2, "q3": None, "q4": 1, "q5": 3, "only_b": 1})
    cand = make_run("cand", {"q1": 1, "q2": 1, "q3": 2, "q4": 3, "q5": 1, "only_c": 2})
    with store_with(base, cand) as store:
        c = compare(["base", "cand"], ["RR"], store=store, options=FAST)
    p = c.alignment.pair("cand")
    assert c.n_shared == 5 and (p.baseline_only, p.candidate_only) == (["only_b"], ["only_c"])
    t = c.test("cand", "RR")
    b_rr = np.array([1, 1 / 2, 0, 1, 1 / 3])
    c_rr = np.array([1, 1, 1 / 2, 1 / 3, 1])
    assert t.n == 5
    assert t.baseline_mean == pytest.approx(b_rr.mean()) and t.candidate_mean == pytest.approx(
        c_rr.mean()
    )
    assert t.diff == pytest.approx((c_rr - b_rr).mean())
    assert (t.wins, t.ties, t.losses) == (3, 1, 1)
    ref = scipy.stats.ttest_rel(c_rr, b_rr)
    assert t.p_t == pytest.approx(ref.pvalue, rel=1e-10)
    assert t.p_perm == pytest.approx(_exact_p(c_rr - b_rr))  # n = 5: enumerated exactly
    assert t.p_perm_holm == t.p_perm  # one test: Holm changes nothing
    assert c.worst["cand"]["RR"] == [
        {
            "query_id": "q4",
            "baseline": 1.0,
            "candidate": pytest.approx(1 / 3),
            "diff": pytest.approx(-2 / 3),
        }
    ]
    json.dumps(c.to_json(), allow_nan=False)


def test_one_shared_query_gives_differences_but_no_tests() -> None:
    base = make_run("base", {"q1": 2, "q2": 1}, latency={"q1": 100.0, "q2": 50.0})
    cand = make_run("cand", {"q1": 1, "q9": 1}, latency={"q1": 150.0, "q9": 10.0})
    with store_with(base, cand) as store:
        c = compare(["base", "cand"], ["RR"], store=store, options=FAST)
    t = c.test("cand", "RR")
    assert c.n_shared == 1 and t.n == 1 and t.diff == pytest.approx(0.5)
    assert math.isnan(t.p_t) and math.isnan(t.p_perm) and math.isnan(t.ci_low)
    assert t.note == "n < 2"
    lat = c.ops_change("cand", "latency.total.p95")
    assert lat is not None and lat.change == pytest.approx(50.0) and math.isnan(lat.ci_low)
    out = c.to_json()
    json.dumps(out, allow_nan=False)
    assert out["metrics"][0]["vs_baseline"]["cand"]["p_perm"] is None
    text = format_comparison(c)
    assert "+0.5000" in text  # the difference is shown; its p-values print as "-"
    # gate: the drop is over the limit; significance cannot be shown with one pair
    rules = parse_rules("latency.total.mean=10%", "increase")
    assert not gate(c, rules).passed
    assert gate(c, rules, significant_only=True).passed


def test_disjoint_runs_are_a_usage_error() -> None:
    store = store_with(make_run("a", {"q1": 1}), make_run("b", {"z1": 1}))
    with store, pytest.raises(UsageError, match="share no query_id"):
        compare(["a", "b"], ["RR"], store=store)


def test_compare_argument_errors() -> None:
    with store_with(make_run("a", {"q1": 1, "q2": 2})) as store:
        with pytest.raises(UsageError, match="2 to 5 runs"):
            compare(["a"], store=store)
        with pytest.raises(UsageError, match="2 to 5 runs"):
            compare(["a"] * 6, store=store)
        with pytest.raises(UsageError, match="no run"):
            compare(["a", "nope"], store=store)
        with pytest.raises(UsageError):
            compare(["a", "a"], ["NoSuch@3"], store=store)
        with pytest.raises(UsageError, match="alpha"):
            compare(["a", "a"], ["RR"], store=store, options=StatOptions(alpha=1.5))
        same = compare(["a", "a"], ["RR"], store=store, options=FAST)  # a run against itself
        assert same.candidates == ("a#2",) and same.test("a#2", "RR").p_perm == 1.0


def test_holm_spans_candidates_and_metrics() -> None:
    ranks = {f"q{i}": 1 + i % 3 for i in range(30)}
    better = {q: 1 for q in ranks}
    similar = dict(ranks, q0=2)  # one query differs (identical content would be deduplicated)
    with store_with(make_run("b", ranks), make_run("c1", better), make_run("c2", similar)) as store:
        c = compare(["b", "c1", "c2"], ["RR", "P@1", "AP"], store=store, options=FAST)
    assert len(c.tests) == 6
    raw = [t.p_perm for t in c.tests]
    assert [t.p_perm_holm for t in c.tests] == pytest.approx(holm(raw).tolist())
    assert all(t.p_perm_holm >= t.p_perm for t in c.tests)
    assert c.test("c1", "RR").significant(0.05) and not c.test("c2", "RR").significant(0.05)


def test_latency_and_cost_changes() -> None:
    ranks = {f"q{i}": 1 for i in range(8)}
    base_ms = {q: 100.0 * (i + 1) for i, q in enumerate(ranks)}
    cand_ms = {q: v * 1.1 for q, v in base_ms.items()}
    tok_b = {q: 1000 for q in ranks}
    tok_c = {q: 1500 for q in ranks}
    runs = (
        make_run("b", ranks, latency=base_ms, tokens=tok_b),
        make_run("c", ranks, latency=cand_ms, tokens=tok_c),
    )
    with store_with(*runs) as store:
        c = compare(["b", "c"], [], store=store, options=FAST)
    assert c.metrics == []
    b, cv = np.array(list(base_ms.values())), np.array(list(cand_ms.values()))
    for stat in LATENCY_STATS:
        ch = c.ops_change("c", f"latency.total.{stat}")
        ref = np.mean if stat == "mean" else lambda x, s=stat: np.percentile(x, float(s[1:]))
        assert ch is not None and ch.baseline == pytest.approx(ref(b))
        assert ch.candidate_value == pytest.approx(ref(cv))
        assert ch.change_pct == pytest.approx(10.0)
        assert ch.ci_low > 0  # every query got slower: the interval excludes 0
    # cost per query: 1000/1000*0.001 + 10/1000*0.002 = 0.00102 vs 0.00152
    per_query = c.ops_change("c", "cost.per_query")
    assert per_query is not None and per_query.baseline == pytest.approx(0.00102)
    assert per_query.candidate_value == pytest.approx(0.00152)
    total = c.ops_change("c", "cost.total")
    assert total is not None and total.change == pytest.approx(8 * 0.0005)
    result = gate(c, parse_rules("latency.total.p95=5%,cost.per_query=60%", "increase"))
    assert [r.passed for r in result.results] == [False, True]
    assert result.failed[0].change_pct == pytest.approx(10.0)


def test_cost_unknown_without_prices() -> None:
    ranks = {"q1": 1, "q2": 2}
    runs = (
        make_run("b", ranks, tokens={"q1": 10, "q2": 20}, prices=(None, None)),
        make_run("c", ranks, tokens={"q1": 10, "q2": 20}),
    )
    with store_with(*runs) as store:
        c = compare(["b", "c"], ["RR"], store=store, options=FAST)
        assert c.cost == [] and "no price" in c.cost_note
        with pytest.raises(UsageError, match="cost cannot be compared"):
            gate(c, parse_rules("cost.per_query=5%", "increase"))
        with pytest.raises(UsageError, match="no latency stage 'total'"):
            gate(c, parse_rules("latency.total.p95=5%", "increase"))


def test_segments_by_tag() -> None:
    ranks_b = {f"q{i}": 2 for i in range(12)}
    ranks_c = {q: (1 if i < 6 else 3) for i, q in enumerate(ranks_b)}
    kinds = {q: ("easy" if i < 6 else "hard") for i, q in enumerate(ranks_b)}
    kinds.pop("q11")  # no tag: the (none) group
    with store_with(make_run("b", ranks_b, tags=kinds), make_run("c", ranks_c)) as store:
        c = compare(["b", "c"], ["RR"], store=store, by=["kind"], options=FAST)
        with pytest.raises(UsageError, match="no tag 'nope'"):
            compare(["b", "c"], ["RR"], store=store, by=["nope"], options=FAST)
    groups = c.by["kind"]
    assert list(groups) == ["easy", "hard", "(none)"]
    assert [groups[g]["n"] for g in groups] == [6, 5, 1]
    easy = groups["easy"]["tests"][0]
    hard = groups["hard"]["tests"][0]
    assert easy.diff == pytest.approx(0.5) and easy.wins == 6
    assert hard.diff == pytest.approx(1 / 3 - 1 / 2) and hard.losses == 5
    assert math.isnan(groups["(none)"]["tests"][0].p_perm)
    assert set(c.to_json()["by"]["kind"]) == {"easy", "hard", "(none)"}


def test_lower_is_better_direction() -> None:
    t = cmp.paired_test(
        "BestRank",
        "c",
        np.array([3.0, 2.0, 5.0, np.nan]),
        np.array([1.0, 2.0, 6.0, 1.0]),
        None,
        None,
        FAST,
    )
    assert t.n == 3 and (t.wins, t.ties, t.losses) == (1, 1, 1)
    assert t.diff == pytest.approx(-1 / 3) and t.improvement == pytest.approx(1 / 3)
    worst = cmp._worst(
        np.array(["a", "b", "c", "d"], dtype=object),
        np.array([3.0, 2.0, 5.0, 1.0]),
        np.array([1.0, 2.0, 6.0, 4.0]),
        "BestRank",
        10,
    )
    assert [w["query_id"] for w in worst] == ["d", "c"]


# --- gate rules --------------------------------------------------------------------------


def test_parse_rules() -> None:
    rules = parse_rules("nDCG@10=0.01, R@10=2%,P(rel=2)@5=0.5", "drop")
    assert [(r.target, r.limit, r.relative) for r in rules] == [
        ("nDCG@10", 0.01, False),
        ("R@10", pytest.approx(0.02), True),
        ("P(rel=2)@5", 0.5, False),
    ]
    inc = parse_rules("latency.total.p95=10%,latency.retrieve.mean=25ms,cost.total=0.5", "increase")
    assert [(r.target, r.limit, r.relative) for r in inc] == [
        ("latency.total.p95", pytest.approx(0.1), True),
        ("latency.retrieve.mean", 25.0, False),
        ("cost.total", 0.5, False),
    ]
    for text, kind, message in [
        ("NoSuch@10=0.1", "drop", "unknown measure"),
        ("latency.total.p95=1", "drop", "go in --max-increase"),
        ("nDCG@10=0.1", "increase", "go in --max-drop"),
        ("latency.total.p97=1", "increase", "unknown latency statistic"),
        ("cost.median=1", "increase", "expected latency"),
        ("nDCG@10=-0.1", "drop", ">= 0"),
        ("nDCG@10=abc", "drop", "not a number"),
        ("nDCG@10", "drop", "TARGET=LIMIT"),
        (" , ", "drop", "no rule"),
    ]:
        with pytest.raises(UsageError, match=message):
            parse_rules(text, kind)  # type: ignore[arg-type]


def test_gate_limits_exact_and_relative() -> None:
    # ten queries: RR 1/2 everywhere in the baseline; the candidate loses on one query
    ranks_b = {f"q{i}": 2 for i in range(10)}
    ranks_c = dict(ranks_b, q0=None)  # RR 0.5 -> 0: mean drops by exactly 0.05
    with store_with(make_run("b", ranks_b), make_run("c", ranks_c)) as store:
        c = compare(["b", "c"], ["RR"], store=store, options=FAST)
    assert c.test("c", "RR").diff == pytest.approx(-0.05)
    assert gate(c, parse_rules("RR=0.05", "drop")).passed  # exactly the limit
    assert not gate(c, parse_rules("RR=0.0499", "drop")).passed
    assert gate(c, parse_rules("RR=10%", "drop")).passed  # 10% of 0.5 = 0.05
    failed = gate(c, parse_rules("RR=9%", "drop"))
    assert not failed.passed and failed.failed[0].allowed == pytest.approx(0.045)
    # one loss in ten is far from significant: --significant-only lets it through
    assert gate(c, parse_rules("RR=0.01", "drop"), significant_only=True).passed
    with pytest.raises(UsageError, match="was not compared"):
        gate(c, parse_rules("AP=0.1", "drop"))


def test_sample_runs_agree_with_evaluate() -> None:
    with Store(":memory:") as store:
        from rageval_core.formats import read_inputs

        for name in ("bm25", "hybrid_rerank"):
            log = ProblemLog()
            store.import_run(
                read_inputs([REPO / "sample_runs" / f"{name}.jsonl"], None, log)[0], log
            )
        names = ["nDCG@10", "EvidenceRecall@10", "BestRank"]
        c = compare(["bm25", "hybrid_rerank"], names, store=store, options=FAST)
        reports = {
            n: evaluate(load_run_data(store, n), names, store=store)
            for n in ("bm25", "hybrid_rerank")
        }
    # every query is shared: the run means are evaluate()'s run values, pooled EvidenceRecall too
    for run, report in reports.items():
        for m in names:
            assert c.means[run][m] == pytest.approx(report.metrics[m], rel=1e-12)
    t = c.test("hybrid_rerank", "nDCG@10")
    expected = reports["hybrid_rerank"].metrics["nDCG@10"] - reports["bm25"].metrics["nDCG@10"]
    assert t.diff == pytest.approx(expected) and t.diff > 0.05 and t.significant(0.05)
    ev = c.test("hybrid_rerank", "EvidenceRecall@10")
    assert ev.diff == pytest.approx(
        reports["hybrid_rerank"].metrics["EvidenceRecall@10"]
        - reports["bm25"].metrics["EvidenceRecall@10"]
    )
    assert ev.ci_low <= ev.diff <= ev.ci_high


def test_trends_order_and_missing_metrics() -> None:
    runs = (
        make_run("late", {"q1": 1}, created_at="2024-05-13T00:00:00Z", latency={"q1": 30.0}),
        make_run("undated", {"q1": 2}),
        make_run("early", {"q1": 3}, created_at="2024-05-06T09:00:00+02:00", latency={"q1": 10.0}),
        make_run("naive", {"q1": 1}, created_at="2024-05-09"),
    )
    with store_with(*runs) as store:
        rows = trends(store, metrics=["RR", "EvidenceRecall@10"])
    assert [r.run for r in rows] == ["early", "naive", "late", "undated"]
    assert rows[0].metrics["RR"] == pytest.approx(1 / 3)
    assert math.isnan(rows[0].metrics["EvidenceRecall@10"])  # no gold spans: not supported
    assert rows[0].latency_p95_ms == {"total": pytest.approx(10.0)}
    assert rows[3].latency_p95_ms == {}
    json.dumps([r.to_json() for r in rows], allow_nan=False)
