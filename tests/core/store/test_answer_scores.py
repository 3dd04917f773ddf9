"""Answer metrics kept in the store (migration 5): the values read back equal the metrics
computed straight from the texts, they are kept once (at import, or at the first evaluation),
and the faster helpers behind them (token_set, _overlap) equal their textbook definitions."""

from __future__ import annotations

import math
import string
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.evaluation import evaluate as ev
from rageval_core.errors import ProblemLog
from rageval_core.importing import import_paths
from rageval_core.metrics import generation as g
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.rundata import load_run_data
from rageval_core.store import Store
from tests.cli import rageval
from tests.paths import REPO

NAMES = list(g.GENERATION_METRICS)


def edge_queries() -> list[Query]:
    """Every case the answer metrics treat apart: no answer, empty texts, no reference, no query,
    chunks without text, no chunk at all, a query judged but absent from the run."""
    return [
        Query(
            "plain",
            (Chunk("d1", "The Denver Broncos won the game."),),
            query="Who won?",
            answer="The Broncos",
            reference_answer="Denver Broncos",
        ),
        Query("no answer", (Chunk("d1", "x"),), query="q", reference_answer="x"),
        Query("empty both", (Chunk("d1", "x"),), answer="", reference_answer=""),
        Query(
            "no reference",
            (Chunk("d1", "Paris is in France"),),
            query="Capital?",
            answer="Paris, in Europe",
        ),
        Query("no chunk text", (Chunk("d1", None), Chunk("d2", None)), answer="it is here"),
        Query("nothing retrieved", (), answer="alone", reference_answer="alone"),
        Query("absent", None, relevance={"d1": 1}, answer="judged only"),
        Query(
            "odd text",
            (Chunk("d1", "an_the théâtre — a\u2003b naïve U.S."),),
            query="the-an?",
            answer="Théâtre naïve — US",
            reference_answer="the théâtre",
        ),
    ]


def reference_scores(store: Store, run: str) -> tuple[list[str], dict[str, np.ndarray]]:
    """The answer metrics computed from the store's Query objects, apart from the kept table."""
    queries = [q for q in store.iter_queries(run) if q.answer is not None]
    inputs = g.answer_inputs_from_queries(queries)
    return [q.query_id for q in queries], g.generation_scores(
        inputs.answers, inputs.references, inputs.queries, inputs.chunk_texts
    )


def assert_same(got: np.ndarray, expected: np.ndarray, name: str) -> None:
    # exactly the same floats (kept as DOUBLE), NaN where not scored
    np.testing.assert_array_equal(got, expected, err_msg=name)


def test_kept_scores_equal_the_metrics_of_the_texts() -> None:
    with Store(":memory:") as store:
        store.import_run(
            ParsedRun(RunInfo(name="r"), edge_queries(), "native", ("r.jsonl",)), ProblemLog()
        )
        assert store.table_counts()["answer_scores"] == 0  # import_run alone keeps nothing
        data = load_run_data(store, "r")
        report = ev.evaluate(data, NAMES, store=store)
        ids, expected = reference_scores(store, "r")
        answered = [list(data.query_ids).index(i) for i in ids]
        assert store.table_counts()["answer_scores"] == len(ids) * len(NAMES)  # kept now
        assert report.counts["scored_answers"] == len(ids) == 7
        for name in NAMES:
            assert_same(report.per_query[name][answered], expected[name], name)
            unanswered = np.setdiff1d(np.arange(data.n_queries), answered)
            assert np.isnan(report.per_query[name][unanswered]).all()
            finite = expected[name][~np.isnan(expected[name])]
            if finite.size:
                assert report.metrics[name] == pytest.approx(float(finite.mean())), name
            else:
                assert math.isnan(report.metrics[name]), name
        # a second RunData (a fresh process would do the same) reads them back, computes nothing
        again = load_run_data(store, "r")
        kept = store.table_counts()["answer_scores"]
        original = ev.generation_scores
        ev.generation_scores = _refuse  # type: ignore[assignment]
        try:
            second = ev.evaluate(again, NAMES, store=store)
        finally:
            ev.generation_scores = original  # type: ignore[assignment]
        assert store.table_counts()["answer_scores"] == kept
        for name in NAMES:
            assert_same(second.per_query[name], report.per_query[name], name)


def _refuse(*args: object, **kwargs: object) -> None:
    raise AssertionError("the kept answer scores should have been read, not computed again")


def test_import_keeps_them_and_delete_removes_them(tmp_path: Path) -> None:
    samples = sorted((REPO / "sample_runs").glob("*.jsonl"))
    with Store(tmp_path / "s.duckdb") as store:
        out = import_paths(store, samples[:1])
        (run,) = out.imported
        ids, expected = reference_scores(store, run.name)
        assert store.table_counts()["answer_scores"] == len(ids) * len(NAMES) > 0
        data = load_run_data(store, run.name)
        inputs, rows = ev.answer_inputs(store, data)
        assert [str(data.query_ids[r]) for r in rows] == ids
        for name in NAMES:
            assert_same(inputs.scores()[name], expected[name], name)
        # importing the same content again keeps them once
        import_paths(store, samples[:1])
        assert store.table_counts()["answer_scores"] == len(ids) * len(NAMES)
        store.delete(run.name)
        assert store.table_counts()["answer_scores"] == 0


def test_no_score_import_leaves_them_to_the_first_evaluation(tmp_path: Path) -> None:
    db = tmp_path / "n.duckdb"
    sample = REPO / "sample_runs" / "bm25.jsonl"
    assert rageval("import", str(sample), "--no-score", db=db).returncode == 0
    with Store(db) as store:
        assert store.table_counts()["answer_scores"] == 0
        first = ev.ensure_answer_scores(store, "bm25")
        assert not first.cached and first.n_answers > 0
        assert ev.ensure_answer_scores(store, "bm25").cached
        ids, expected = reference_scores(store, "bm25")
        assert first.n_answers == len(ids)
        report = ev.evaluate(load_run_data(store, "bm25"), ["TokenF1"], store=store)
        finite = expected["TokenF1"][~np.isnan(expected["TokenF1"])]
        assert report.metrics["TokenF1"] == pytest.approx(float(finite.mean()))


def test_a_run_without_answers_keeps_nothing() -> None:
    with Store(":memory:") as store:
        qs = [Query("q", (Chunk("d1", "x"),), relevance={"d1": 1})]
        store.import_run(ParsedRun(RunInfo(name="r"), qs, "native", ("r.jsonl",)), ProblemLog())
        assert ev.ensure_answer_scores(store, "r").n_answers == 0
        report = ev.evaluate(load_run_data(store, "r"), ["EM"], store=store)
        assert math.isnan(report.metrics["EM"]) and store.table_counts()["answer_scores"] == 0


def test_from_scores_needs_every_metric() -> None:
    with pytest.raises(ValueError, match="lack"):
        g.AnswerInputs.from_scores({"EM": np.zeros(1)})


# --- the faster helpers equal their definitions -----------------------------------------------

_piece = st.sampled_from(
    [
        "a",
        "an",
        "the",
        "The",
        "A",
        "An",
        "theory",
        "and",
        "an_",
        "_the",
        "x",
        "U.S.",
        "it's",
        "naïve",
        "é",
        "a\u0301",
        "—",
        "\u2019",
        "½",
        "²",
        "Σ",
        "İ",
        "\u212a",
        "\x1c",
        "\x85",
        "\xa0",
        "\u2003",
        "\t",
        "\n",
        " ",
        "  ",
        *string.punctuation,
    ]
)
_text = st.lists(_piece, max_size=25).map("".join)


@settings(max_examples=400, deadline=None)
@given(_text)
def test_token_set_equals_the_set_of_tokens(text: str) -> None:
    assert g.token_set(text) == frozenset(g.tokens(text))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from("abcde"), max_size=12),
    st.lists(st.sampled_from("abcdef"), max_size=12),
)
def test_overlap_equals_the_counter_intersection(pred: list[str], gold: list[str]) -> None:
    assert g._overlap(pred, gold) == sum((Counter(pred) & Counter(gold)).values())
