"""Bpref, Judged@k and judged-only evaluation (trec_eval -J) against their references.

Bpref and -J against pytrec_eval (trec_eval's own code) on random runs with ties, grades and
negative labels; Judged@k against ir_measures' Judged; hand-computed cases for the edges; and
the stored-run path (evaluate, the CLI flag) against the same references.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import ir_measures
import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.cli import dispatch as cli
from rageval_core.errors import ProblemLog, UsageError
from rageval_core.evaluation.evaluate import evaluate, open_file_in_scratch_store
from rageval_core.formats import trec
from rageval_core.metrics import compute, ranked_labels_from_queries
from rageval_core.metrics.arrays import (
    JUDGED,
    NOT_IN_QRELS,
    POOLED,
    judged_only,
    ranked_labels_from_relevant,
    ranked_labels_from_rows,
)
from rageval_core.model import Chunk, Query
from rageval_core.rundata import load_run_data
from tests.core.metrics.test_ranking_properties import runs, write_trec

Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]

#: ours -> trec_eval's, read under -J as well
PAIRS = {
    "Bpref": "bpref",
    "AP": "map",
    "RR": "recip_rank",
    "nDCG": "ndcg",
    "nDCG@5": "ndcg_cut_5",
    "P@5": "P_5",
    "R@5": "recall_5",
    "Rprec": "Rprec",
    "NumRet": "num_ret",
    "NumRelRet": "num_rel_ret",
}
TREC = {"bpref", "map", "recip_rank", "ndcg", "ndcg_cut.5", "P.5", "recall.5", "Rprec"}
TREC |= {"num_ret", "num_rel_ret"}


def queries_of(run: Run, qrels: Qrels) -> list[Query]:
    with tempfile.TemporaryDirectory() as tmp:
        run_path, qrels_path = write_trec(Path(tmp), run, qrels)
        log = ProblemLog()
        queries = list(trec.read(run_path, qrels_path, log).queries)
    assert log.errors == []
    return queries


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs(), st.sampled_from([1, 2]), st.booleans())
def test_bpref_and_judged_only_equal_pytrec_eval(
    data: tuple[Run, Qrels], rel_level: int, only_judged: bool
) -> None:
    run, qrels = data
    arrays, _ = ranked_labels_from_queries(queries_of(run, qrels), rel_level=rel_level)
    if only_judged:
        arrays = judged_only(arrays)
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels or {"zz": {"none": 0}},
        TREC,
        relevance_level=rel_level,
        judged_docs_only_flag=only_judged,
    )
    theirs = evaluator.evaluate(run)
    # trec_eval -J drops a query whose every document is unjudged; we score it (as 0s, an
    # empty ranking): the queries both score must agree, and ours left over hold 0 / n_ret 0
    assert set(theirs) <= set(arrays.query_ids)
    values = compute(sorted(PAIRS), arrays)
    for i, qid in enumerate(arrays.query_ids):
        if qid not in theirs:
            assert only_judged and arrays.n_ret[i] == 0
            continue
        for ours, trec_name in PAIRS.items():
            got = float(values[ours][i])
            assert got == pytest.approx(theirs[qid][trec_name], abs=1e-12), (qid, ours)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_judged_at_k_equals_ir_measures(data: tuple[Run, Qrels]) -> None:
    run, qrels = data
    # ir_measures scores a judged query absent from the run as 0: so does complete
    arrays, _ = ranked_labels_from_queries(queries_of(run, qrels), complete=True)
    cutoffs = (1, 2, 3, 5, 10)
    values = compute([f"Judged@{k}" for k in cutoffs], arrays)
    row = {q: i for i, q in enumerate(arrays.query_ids)}
    # ir_measures orders a ranking by score, then doc id: the run is written and read the
    # same way (trec.read ties by doc id descending, as trec_eval): give it the read order
    ordered = {
        q.query_id: {c.doc_id: float(-rank) for rank, c in enumerate(q.retrieved or ())}
        for q in queries_of(run, qrels)
        if q.query_id in row and q.retrieved
    }
    theirs = list(
        ir_measures.iter_calc(
            [ir_measures.Judged @ k for k in cutoffs], qrels or {"zz": {"none": 0}}, ordered
        )
    )
    assert {m.query_id for m in theirs} == set(row)
    for m in theirs:
        got = float(values[str(m.measure)][row[m.query_id]])
        assert got == pytest.approx(m.value, abs=1e-12), (m.query_id, str(m.measure))


def test_bpref_by_hand() -> None:
    # ranking: n1 r1 u n2 r2 (u unjudged); R = 3 (r3 not retrieved), N = 2 (n1, n2)
    q = Query(
        "q",
        tuple(Chunk(d) for d in ("n1", "r1", "u", "n2", "r2")),
        relevance={"r1": 1, "r2": 2, "r3": 1, "n1": 0, "n2": 0},
    )
    arrays, _ = ranked_labels_from_queries([q])
    # r1: 1 non-relevant above -> 1 - 1/min(2, 3); r2: 2 above -> 1 - 2/2; divided by R = 3
    assert compute(["Bpref"], arrays)["Bpref"][0] == pytest.approx((1 - 1 / 2 + 0) / 3)
    # at level 2 only r2 is relevant (R = 1); n1, n2, r1, r3 are judged below it (N = 4):
    # r2 has 3 of them above -> 1 - min(3, 1) / min(4, 1) = 0
    two, _ = ranked_labels_from_queries([q], rel_level=2)
    assert compute(["Bpref"], two)["Bpref"][0] == 0.0
    assert compute(["Judged@1", "Judged@3", "Judged@10"], arrays) == {
        "Judged@1": pytest.approx([1.0]),
        "Judged@3": pytest.approx([2 / 3]),
        "Judged@10": pytest.approx([4 / 5]),  # divided by the 5 retrieved, not by 10
    }


def test_edges() -> None:
    queries = [
        Query("no-rel", (Chunk("a"),), relevance={"a": 0}),  # R = 0: Bpref 0
        Query("no-nonrel", (Chunk("u"), Chunk("r")), relevance={"r": 1}),  # N = 0: terms are 1
        Query("empty", None, relevance={"r": 1}),  # complete: an empty ranking
        Query("pooled", (Chunk("p"), Chunk("r")), relevance={"p": -1, "r": 1, "n": 0}),
    ]
    arrays, _ = ranked_labels_from_queries(queries, complete=True)
    values = compute(["Bpref", "Judged@2"], arrays)
    assert values["Bpref"].tolist() == [0.0, 1.0, 0.0, 1.0]
    # a negative label is in the qrels: judged for Judged@k (ir_measures), not for -J
    assert values["Judged@2"].tolist() == [1.0, 0.5, 0.0, 1.0]
    assert arrays.judged is not None
    assert arrays.judged[3, :2].tolist() == [POOLED, JUDGED]
    only = judged_only(arrays)
    assert only.n_ret.tolist() == [1, 1, 0, 1]
    assert compute(["RR", "Judged@2"], only) == {
        "RR": pytest.approx([0.0, 1.0, 0.0, 1.0]),
        "Judged@2": pytest.approx([1.0, 1.0, 0.0, 1.0]),
    }
    assert only.n_rel.tolist() == arrays.n_rel.tolist()  # the qrels side stays


def test_measures_that_need_judgements_say_so() -> None:
    blind = ranked_labels_from_rows(["q"], [0], [1], [1], [0], [1])  # no ret_judged given
    assert blind.judged is None
    for name in ("Bpref", "Judged@5"):
        with pytest.raises(UsageError, match="judged"):
            compute([name], blind)
    with pytest.raises(UsageError, match="judged-only"):
        judged_only(blind)


def test_judged_only_is_refused_beside_a_preset() -> None:
    from rageval_core.evaluation.report import Settings

    with pytest.raises(UsageError, match="judged-only"):
        Settings(preset="tat-rag", judged_only=True).check()


def test_evidence_labels_judge_every_retrieved_chunk() -> None:
    mask = np.array([[True, False], [False, True], [True, False]])  # ranks x queries
    arrays = ranked_labels_from_relevant(["a", "b"], mask, np.array([3, 2]))
    assert arrays.judged is not None
    assert arrays.judged.tolist() == [[JUDGED] * 3, [JUDGED, JUDGED, NOT_IN_QRELS]]
    assert judged_only(arrays) is arrays
    assert compute(["Judged@3"], arrays)["Judged@3"].tolist() == [1.0, 1.0]


def write_case(folder: Path) -> tuple[Path, Path, Run, Qrels]:
    run = {
        "1": {"a": 5.0, "u1": 4.0, "b": 3.0, "c": 2.0, "u2": 1.0, "d": 0.5},
        "2": {"u3": 3.0, "e": 2.0, "f": 1.0, "p": 0.5},
    }
    qrels = {
        "1": {"a": 0, "b": 1, "c": 2, "d": 0, "x": 1},
        "2": {"e": 0, "f": 1, "p": -1, "y": 0},
    }
    run_path, qrels_path = write_trec(folder, run, qrels)
    return run_path, qrels_path, run, qrels


@pytest.mark.parametrize("only_judged", [False, True])
def test_stored_run_and_cli_equal_pytrec_eval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], only_judged: bool
) -> None:
    run_path, qrels_path, run, qrels = write_case(tmp_path)
    names = ["Bpref", "AP", "P@2", "nDCG@3", "RR"]
    with open_file_in_scratch_store([run_path, qrels_path]) as store:  # the store's arrays
        data = load_run_data(store, store.runs()[0].run_id)
        report = evaluate(data, names, store=store, judged_only=only_judged)
    theirs = pytrec_eval.RelevanceEvaluator(
        qrels,
        {"bpref", "map", "P.2", "ndcg_cut.3", "recip_rank"},
        judged_docs_only_flag=only_judged,
    ).evaluate(run)
    trec_names = {"Bpref": "bpref", "AP": "map", "P@2": "P_2", "nDCG@3": "ndcg_cut_3"}
    trec_names["RR"] = "recip_rank"
    for name in names:
        expected = np.mean([theirs[q][trec_names[name]] for q in ("1", "2")])
        assert report.metrics[name] == pytest.approx(expected, abs=1e-12), name
    assert report.settings.get("judged_only", False) is only_judged

    argv = ["--db", str(tmp_path / "s.duckdb"), "evaluate", str(run_path), str(qrels_path)]
    argv += ["--metrics", " ".join(names), "--json"] + (["--judged-only"] if only_judged else [])
    assert cli.main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["metrics"] == pytest.approx(report.metrics, abs=1e-12)
