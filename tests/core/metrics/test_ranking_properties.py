"""Ranking metrics: hand-computed cases, the registry, invariants, and pytrec_eval on random runs."""

from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.errors import ProblemLog, UsageError
from rageval_core.formats import trec
from rageval_core.metrics import (
    REGISTRY,
    Measure,
    MeasureSpec,
    Param,
    RankedLabels,
    aggregate,
    compute,
    known_names,
    parse,
    ranked_labels_from_queries,
    ranked_labels_from_rows,
    ranking,
    register,
)
from rageval_core.model import Chunk, Query

# --- one query worked by hand ---------------------------------------------------------------------
# ranking: n0 (label 0), r2 (2), u (unjudged), r1 (1); judged but not retrieved: x (3)
HAND = Query(
    query_id="q",
    retrieved=tuple(Chunk(d) for d in ("n0", "r2", "u", "r1")),
    relevance={"n0": 0, "r2": 2, "r1": 1, "x": 3, "neg": -1},
)
L3 = math.log2(3)


def hand(names: list[str], rel_level: int = 1) -> dict[str, float]:
    arrays, _ = ranked_labels_from_queries([HAND], rel_level=rel_level)
    return {k: float(v[0]) for k, v in compute(names, arrays).items()}


def test_hand_computed_binary_measures() -> None:
    got = hand(
        [
            "P@2",
            "P@10",
            "R@2",
            "R@4",
            "RR",
            "RR@1",
            "RR@2",
            "AP",
            "AP@2",
            "Rprec",
            "Hit@1",
            "Hit@2",
            "F1@4",
            "SetP",
            "SetR",
            "SetF",
            "NumRet",
            "NumRel",
            "NumRelRet",
        ]
    )
    expected = {
        "P@2": 1 / 2,
        "P@10": 2 / 10,  # P@k divides by k even past the list's end
        "R@2": 1 / 3,
        "R@4": 2 / 3,  # n_rel = 3: r2, r1 and the unretrieved x
        "RR": 1 / 2,
        "RR@1": 0.0,
        "RR@2": 1 / 2,
        "AP": (1 / 2 + 2 / 4) / 3,
        "AP@2": (1 / 2) / 3,  # divisor: all relevant, also at k
        "Rprec": 1 / 3,
        "Hit@1": 0.0,
        "Hit@2": 1.0,
        "F1@4": 2 * (1 / 2) * (2 / 3) / (1 / 2 + 2 / 3),
        "SetP": 2 / 4,
        "SetR": 2 / 3,
        "SetF": 2 * (1 / 2) * (2 / 3) / (1 / 2 + 2 / 3),
        "NumRet": 4,
        "NumRel": 3,
        "NumRelRet": 2,
    }
    assert got == pytest.approx(expected, abs=1e-12)


def test_hand_computed_ndcg() -> None:
    dcg = 2 / L3 + 1 / math.log2(5)
    ideal = 3 + 2 / L3 + 1 / 2  # x, r2, r1; negative and zero labels add nothing
    got = hand(["nDCG", "nDCG@1", "nDCG@2"])
    assert got["nDCG"] == pytest.approx(dcg / ideal, abs=1e-12)
    assert got["nDCG@1"] == 0.0
    assert got["nDCG@2"] == pytest.approx((2 / L3) / (3 + 2 / L3), abs=1e-12)
    # the relevance level does not touch nDCG (trec_eval)
    assert hand(["nDCG"], rel_level=3)["nDCG"] == pytest.approx(dcg / ideal, abs=1e-12)


def test_hand_computed_relevance_level_two() -> None:
    expected = {"P@2": 1 / 2, "R@4": 1 / 2, "AP": (1 / 2) / 2, "NumRel": 2, "Rprec": 1 / 2}
    assert hand(list(expected), rel_level=2) == pytest.approx(expected, abs=1e-12)
    # a per-measure rel parameter gives the same as arrays built at that level
    per_measure = hand(["P(rel=2)@2", "R(rel=2)@4", "AP(rel=2)", "NumRel(rel=2)", "Rprec(rel=2)"])
    assert list(per_measure.values()) == pytest.approx(list(expected.values()), abs=1e-12)


def test_hand_computed_aqwv() -> None:
    got = hand(["AQWV@2", "AQWV(N=1000)@2", "AQWV(beta=0)@4", "AQWV(N=1000,beta=2)@1"])
    # top 2 = n0, r2: rel_ret 1 of n_rel 3; candidates = 4 retrieved, 2 of them not relevant
    assert got["AQWV@2"] == pytest.approx(1 - 2 / 3 - 40 * (1 / 2), abs=1e-12)
    assert got["AQWV(N=1000)@2"] == pytest.approx(1 - 2 / 3 - 40 * 1 / 997, abs=1e-12)
    assert got["AQWV(beta=0)@4"] == pytest.approx(2 / 3, abs=1e-12)
    assert got["AQWV(N=1000,beta=2)@1"] == pytest.approx(0 - 2 * 1 / 997, abs=1e-12)


def test_aqwv_false_alarms_are_a_share_of_the_top_k() -> None:
    """The guide's AQWV for RAG: P_FA = non-relevant / documents retrieved in the top k.

    5 retrieved, 3 relevant, one of them missed: P_miss = 1/3, 3 false alarms of 5 -> P_FA = 3/5,
    AQWV = 1 - 1/3 - 40 * 3/5 = -23.33 (not -39.33, false alarms / non-relevant in the list, nor
    -59.33, false alarms / (list length - R)). MATERIAL's collection form stays N=.
    """
    q = Query(
        "q",
        retrieved=tuple(Chunk(d) for d in ("r1", "n1", "r2", "n2", "n3")),
        relevance={"r1": 1, "r2": 1, "r3": 1, "n1": 0},
    )
    arrays, _ = ranked_labels_from_queries([q])
    got = {
        k: float(v[0]) for k, v in compute(["AQWV@5", "AQWV@10", "AQWV(N=100)@5"], arrays).items()
    }
    assert got["AQWV@5"] == pytest.approx(1 - 1 / 3 - 40 * 3 / 5, abs=1e-12)
    assert round(got["AQWV@5"], 2) == -23.33
    # k beyond the list: the denominator is what was retrieved (5), not k
    assert got["AQWV@10"] == got["AQWV@5"]
    assert got["AQWV(N=100)@5"] == pytest.approx(1 - 1 / 3 - 40 * 3 / 97, abs=1e-12)
    # on the hand query: top 4 = n0, r2, u, r1 -> 2 false alarms of 4, 2 of 3 relevant found
    assert hand(["AQWV@4"])["AQWV@4"] == pytest.approx(1 - 1 / 3 - 40 * 2 / 4, abs=1e-12)


def test_aqwv_floor_is_minus_beta() -> None:
    """Nothing relevant in a full top k: P_miss = 1 and P_FA = 1, the floor 1 - 1 - beta."""
    q = Query("q", retrieved=(Chunk("a"), Chunk("b")), relevance={"c": 1})
    arrays, _ = ranked_labels_from_queries([q])
    got = compute(["AQWV@2", "AQWV(beta=20)@2"], arrays)
    assert got["AQWV@2"].tolist() == [-40.0]
    assert got["AQWV(beta=20)@2"].tolist() == [-20.0]


def test_zero_denominators() -> None:
    queries = [
        Query("empty", retrieved=(), relevance={"a": 1}),  # answered with nothing
        Query("norel", retrieved=(Chunk("a"), Chunk("b")), relevance={"a": 0}),
        Query("nojudged", retrieved=(Chunk("a"),), relevance={}),
    ]
    arrays, _ = ranked_labels_from_queries(queries)
    names = [
        "P@5",
        "R@5",
        "F1@5",
        "RR",
        "AP",
        "AP@5",
        "nDCG",
        "nDCG@5",
        "Rprec",
        "Hit@5",
        "SetP",
        "SetR",
        "SetF",
    ]
    for name, values in compute(names, arrays).items():
        assert values.tolist() == [0.0, 0.0, 0.0], name
    aqwv = compute(["AQWV@5", "AQWV(N=10)@5"], arrays)
    # empty: every relevant missed, nothing retrieved; norel: nothing to miss, 2 false alarms
    assert aqwv["AQWV@5"].tolist() == [0.0, 1 - 40 * 1.0, 1 - 40 * 1.0]
    assert aqwv["AQWV(N=10)@5"] == pytest.approx([0.0, 1 - 40 * 2 / 10, 1 - 40 * 1 / 10])


def test_query_selection_follows_trec_eval() -> None:
    queries = [
        Query("run-only", retrieved=(Chunk("a"),), relevance=None),
        Query("judged", retrieved=(Chunk("a"),), relevance={"a": 1}),
        Query("missing", retrieved=None, relevance={"a": 1}),
    ]
    arrays, sel = ranked_labels_from_queries(queries)
    assert arrays.query_ids == ("judged",)
    assert (sel.n_skipped_no_qrels, sel.n_missing_from_run, sel.complete) == (1, 1, False)
    arrays, sel = ranked_labels_from_queries(queries, complete=True)
    assert arrays.query_ids == ("judged", "missing")
    assert compute(["AP"], arrays)["AP"].tolist() == [1.0, 0.0]
    with pytest.raises(UsageError, match="relevance level"):
        ranked_labels_from_queries(queries, rel_level=0)


def test_repeated_document_counts_once() -> None:
    q = Query("q", retrieved=(Chunk("a"), Chunk("a"), Chunk("b")), relevance={"a": 1, "b": 1})
    arrays, _ = ranked_labels_from_queries([q])
    assert arrays.labels.tolist() == [[1, 0, 1]]
    assert compute(["R@3"], arrays)["R@3"].tolist() == [1.0]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_ideal_rows_take_each_querys_gains_in_descending_order(dtype: type) -> None:
    """The ideal ranking of every query: its judged gains, highest first, whatever the order of
    the qrels rows (integer gains take a one-key sort, float gains a lexsort)."""
    rng = np.random.default_rng(3)
    n = 40
    judged_query = rng.integers(0, n, 2000)
    judged_label = rng.integers(-1, 5, judged_query.size).astype(dtype)
    if dtype is np.float64:
        judged_label += rng.random(judged_query.size).round(2)
    arrays = ranked_labels_from_rows(
        [f"q{i}" for i in range(n)], [0], [1], [0], judged_query, judged_label
    )
    for q in range(n):
        gains = np.maximum(judged_label[judged_query == q], 0)
        expected = np.zeros(arrays.ideal.shape[1], dtype=arrays.ideal.dtype)
        expected[: gains.size] = np.sort(gains)[::-1]
        np.testing.assert_array_equal(arrays.ideal[q], expected, err_msg=f"q{q}")


def test_rows_builder_matches_queries_builder() -> None:
    arrays, _ = ranked_labels_from_queries([HAND])
    # the store's path: sparse rows (only judged ranks plus the last rank), qrels as rows
    rows = ranked_labels_from_rows(
        ["q"],
        ret_query=[0, 0, 0],
        ret_rank=[2, 4, 1],
        ret_label=[2, 1, 0],
        judged_query=[0, 0, 0, 0, 0],
        judged_label=[0, 2, 1, 3, -1],
        ret_judged=[1, 1, 1],  # n0 (label 0) is judged too; u (rank 3) is not in the rows
    )
    assert rows.query_ids == arrays.query_ids
    assert rows.judged is not None and arrays.judged is not None
    np.testing.assert_array_equal(rows.judged, arrays.judged)
    np.testing.assert_array_equal(rows.n_judged, arrays.n_judged)
    np.testing.assert_array_equal(rows.labels, arrays.labels)
    np.testing.assert_array_equal(rows.ideal, arrays.ideal)
    np.testing.assert_array_equal(rows.n_ret, arrays.n_ret)
    np.testing.assert_array_equal(rows.n_rel, arrays.n_rel)
    assert arrays.ideal.tolist() == [[3, 2, 1, 0, 0]]
    assert arrays.labels.tolist() == [[0, 2, 0, 1]]
    ranking_names = [n for n in known_names() if REGISTRY[n.split("@")[0]].family == "ranking"]
    names = sorted(str(parse(n.replace("@k", "@3"))) for n in ranking_names)
    assert len(names) >= 19
    a, b = compute(names, arrays), compute(names, rows)
    for name in names:
        np.testing.assert_array_equal(a[name], b[name])


def test_empty_selection() -> None:
    arrays, _ = ranked_labels_from_queries([])
    assert arrays.n_queries == 0 and arrays.labels.shape == (0, 0)
    values = compute(["nDCG@10", "AP", "NumRet"], arrays)
    assert all(v.shape == (0,) for v in values.values())
    assert math.isnan(aggregate("AP", values["AP"]))
    assert aggregate("NumRet", values["NumRet"]) == 0.0


# --- the registry -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "nDCG@10",
        "nDCG",
        "P@5",
        "R@100",
        "F1@3",
        "RR",
        "RR@10",
        "AP",
        "AP@1000",
        "Rprec",
        "Hit@1",
        "AQWV@10",
        "AQWV(N=100000)@10",
        "AQWV(N=5000,beta=20.5)@3",
        "P(rel=2)@5",
        "SetF",
        "NumRelRet",
    ],
)
def test_canonical_names_round_trip(text: str) -> None:
    assert str(parse(text)) == text


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("Success@5", "Hit@5"),
        ("MRR", "RR"),
        ("MAP", "AP"),
        ("Recall@10", "R@10"),
        ("Precision@3", "P@3"),
        ("NDCG@10", "nDCG@10"),
        ("MAP@10", "AP@10"),
        ("AQWV(beta=40)@10", "AQWV@10"),
        (" AQWV( beta = 20 , N=10 )@5 ", "AQWV(N=10,beta=20)@5"),
    ],
)
def test_aliases_and_defaults_canonicalise(alias: str, canonical: str) -> None:
    assert str(parse(alias)) == canonical
    assert parse(alias) == parse(canonical)


def test_measure_is_frozen_and_hashable() -> None:
    m = parse("AQWV(beta=20)@10")
    assert m == Measure("AQWV", 10, (("beta", 20.0),))
    assert len({m, parse("AQWV(beta=20.0)@10")}) == 1
    with pytest.raises(AttributeError):
        m.cutoff = 5  # type: ignore[misc]
    assert m.param_values() == {"beta": 20.0, "N": None, "rel": None}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("P_5", "did you mean P@5"),
        ("ndcg_cut_10", "did you mean nDCG@10"),
        ("map", "did you mean AP"),
        ("Bogus", "unknown measure 'Bogus'"),
        ("P", "needs a cut-off"),
        ("Rprec@5", "takes no cut-off"),
        ("P@0", "cut-off must be >= 1"),
        ("nDCG@ten", "cannot read measure"),
        ("AQWV(gamma=1)@5", "unknown parameter"),
        ("AQWV(beta=x)@5", "beta must be a number"),
        ("AQWV(N=1.5)@5", "N must be an integer"),
        ("AQWV(beta=nan)@5", "must be finite"),
        ("P(rel=2,rel=3)@5", "given twice"),
    ],
)
def test_bad_names_raise_usage_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        parse(text)


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(UsageError) as info:
        parse("Bogus@3")
    for name in ("nDCG@k", "P@k", "R@k", "RR", "AP", "Rprec", "Hit@k", "AQWV@k", "F1@k"):
        assert name in str(info.value)


def test_other_families_can_register_and_compute_their_own_input() -> None:
    class Coverage:
        def __init__(self, hits: list[float]) -> None:
            self.hits = np.asarray(hits)

    spec = MeasureSpec(
        name="TestCoverage",
        family="test",
        needs_cutoff=False,
        allows_cutoff=True,
        fn=lambda data, k, p: data.hits * p["scale"],
        description="test only",
        range=(0, None),
        input=Coverage,
        params={"scale": Param(float, 1.0)},
        aliases=("TestCov",),
    )
    register(spec)
    try:
        arrays, _ = ranked_labels_from_queries([HAND])
        out = compute(["TestCov(scale=2)", "AP"], Coverage([0.5]), arrays)
        assert out["TestCoverage(scale=2)"].tolist() == [1.0]
        assert out["AP"].tolist() == pytest.approx([1 / 3])
        with pytest.raises(UsageError, match="needs Coverage data"):
            compute(["TestCoverage"], arrays)
        with pytest.raises(ValueError, match="already registered"):
            register(spec)
    finally:
        from rageval_core.metrics import registry

        registry.REGISTRY.pop("TestCoverage")
        registry.ALIASES.pop("TestCov")


def test_every_ranking_spec_is_described() -> None:
    ranking_specs = [s for s in REGISTRY.values() if s.family == "ranking"]
    assert {s.name for s in ranking_specs} >= {
        "P",
        "R",
        "F1",
        "RR",
        "AP",
        "nDCG",
        "Rprec",
        "Hit",
        "AQWV",
    }
    for s in ranking_specs:
        assert s.description and s.input is RankedLabels


# --- invariants on random data ----------------------------------------------------------------------

DOCS = ["a", "b", "c", "aa", "ab", "d1", "d10", "d2", "d20", "z", "Z", "0"]
SCORES = st.sampled_from([0.0, 0.5, 1.0, 1.5, -1.0, 2.25])  # few values: many ties


@st.composite
def runs(draw: st.DrawFn) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    """A random run and qrels, with queries only in one of them, ties, grades and -1 labels."""
    n = draw(st.integers(1, 5))
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for i in range(n):
        qid = f"q{i}"
        retrieved = draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=len(DOCS)))
        if retrieved:
            run[qid] = {d: draw(SCORES) for d in retrieved}
        judged = draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=8))
        if judged:
            labels = {d: draw(st.integers(-1, 3)) for d in judged}
            # trec_eval's nDCG reads out of bounds when a query has only negative labels
            if max(labels.values()) < 0:
                labels[judged[0]] = 0
            qrels[qid] = labels
    if not run:  # a run file needs at least one line
        run["q0"] = {"a": draw(SCORES)}
    return run, qrels


def arrays_of(
    run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]], rel_level: int = 1
) -> RankedLabels:
    queries = [
        Query(
            qid,
            retrieved=tuple(
                Chunk(d, score=s)
                for s, d in sorted(((s, d) for d, s in docs.items()), reverse=True)
            ),
            relevance=qrels.get(qid),
        )
        for qid, docs in run.items()
    ]
    return ranked_labels_from_queries(queries, rel_level=rel_level)[0]


CUTS = [1, 2, 3, 5, 10, 20]


@settings(max_examples=150, deadline=None)
@given(runs())
def test_invariants(data: tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]) -> None:
    arrays = arrays_of(*data)
    unit = ["RR", "AP", "nDCG", "Rprec", "SetP", "SetR", "SetF"] + [
        f"{m}@{k}" for m in ("P", "R", "F1", "Hit", "RR", "AP", "nDCG") for k in CUTS
    ]
    values = compute(unit, arrays)
    for name, v in values.items():
        assert np.all((v >= 0) & (v <= 1)), name
    for m in ("R", "Hit", "RR", "AP"):  # monotone in k
        stack = np.stack([values[f"{m}@{k}"] for k in CUTS])
        assert np.all(np.diff(stack, axis=0) >= -1e-12), m
    rel_ret = np.stack([values[f"P@{k}"] * k for k in CUTS])
    assert np.all(np.diff(rel_ret, axis=0) >= -1e-9)
    np.testing.assert_allclose(values["AP@20"], values["AP"], atol=1e-12)  # lists are <= 12 long
    np.testing.assert_allclose(values["RR@20"], values["RR"], atol=1e-12)
    aqwv = compute([f"AQWV@{k}" for k in CUTS] + ["AQWV(N=1000)@5"], arrays)
    for v in aqwv.values():
        assert np.all(v <= 1.0) and np.all(v >= -40.0)


# --- pytrec_eval on random runs ---------------------------------------------------------------------

TREC_MEASURES = {
    "map",
    "recip_rank",
    "ndcg",
    "Rprec",
    "set_P",
    "set_recall",
    "set_F",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "P.1,2,3,5,10,20",
    "recall.1,2,3,5,10,20",
    "ndcg_cut.1,2,3,5,10,20",
    "map_cut.1,2,3,5,10,20",
    "success.1,2,3,5,10,20",
}


def ours_for(trec_name: str) -> str:
    fixed = {
        "map": "AP",
        "recip_rank": "RR",
        "ndcg": "nDCG",
        "Rprec": "Rprec",
        "set_P": "SetP",
        "set_recall": "SetR",
        "set_F": "SetF",
        "num_ret": "NumRet",
        "num_rel": "NumRel",
        "num_rel_ret": "NumRelRet",
    }
    if trec_name in fixed:
        return fixed[trec_name]
    base, _, k = trec_name.rpartition("_")
    return {"P": "P", "recall": "R", "ndcg_cut": "nDCG", "map_cut": "AP", "success": "Hit"}[
        base
    ] + f"@{k}"


def write_trec(
    folder: Path, run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]
) -> tuple[Path, Path]:
    run_path, qrels_path = folder / "r.run", folder / "r.qrels"
    # the rank column is deliberately wrong (always 1): trec_eval and our reader ignore it
    run_path.write_text(
        "".join(f"{q} Q0 {d} 1 {s!r} tag\n" for q, docs in run.items() for d, s in docs.items()),
        encoding="utf-8",
    )
    qrels_path.write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, labels in qrels.items() for d, r in labels.items())
        or "zz 0 none 0\n",
        encoding="utf-8",
    )
    return run_path, qrels_path


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs(), st.sampled_from([1, 2]))
def test_equals_pytrec_eval(
    data: tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]], rel_level: int
) -> None:
    run, qrels = data
    with tempfile.TemporaryDirectory() as tmp:
        run_path, qrels_path = write_trec(Path(tmp), run, qrels)
        log = ProblemLog()
        queries = list(trec.read(run_path, qrels_path, log).queries)
    assert log.errors == []
    arrays, _ = ranked_labels_from_queries(queries, rel_level=rel_level)

    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels or {"zz": {"none": 0}}, TREC_MEASURES, relevance_level=rel_level
    )
    theirs = evaluator.evaluate(run)
    assert set(theirs) == set(arrays.query_ids)
    names = {ours_for(n) for per_q in theirs.values() for n in per_q}
    assert len(names) == 40 or not theirs
    values = compute(sorted(names), arrays)
    row = {q: i for i, q in enumerate(arrays.query_ids)}
    for qid, measures in theirs.items():
        for trec_name, expected in measures.items():
            got = float(values[ours_for(trec_name)][row[qid]])
            assert got == pytest.approx(expected, abs=1e-9), (qid, trec_name)


def test_ranking_module_functions_are_vectorised() -> None:
    # one call returns every query's value: no per-query Python loop at the call site
    arrays = arrays_of(
        {f"q{i}": {"a": float(i), "b": 1.0} for i in range(50)},
        {f"q{i}": {"a": i % 3} for i in range(50)},
    )
    values = ranking.ndcg(arrays, 1)
    assert values.shape == (50,)
    assert values.tolist() == [1.0 if (i % 3 and i > 1) else 0.0 for i in range(50)]
