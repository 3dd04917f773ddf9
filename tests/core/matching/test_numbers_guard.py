"""The "numbers must match" guard: the rule, its SQL twin, the metrics, the drilldown, the warning.

A fuzzy scorer calls "$48,811" 0.97 like "$48,881": with numbers_must_match a chunk covers a span
only when it holds every number of the span. The drilldown labels such a match "numbers
differ" and marks the differing figures; a run whose EvidenceRecall is far above its id-based
recall gets a warning that the threshold is likely too lenient.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.matching import numbers
from rageval_core.evaluation.drilldown import query_detail
from rageval_core.errors import ProblemLog
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.evaluation.report import Settings
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.outputs.report_text import format_report
from rageval_core.rundata import load_run_data, numbers_guard
from rageval_core.store import Store, reads

SPAN = "Net revenue was $48,881 in 2019"
NEAR = "Net revenue was $48,811 in 2019."  # one figure differs: 0.97 to partial
SAME = "net revenue was $48881.00 in 2019, up 3%"  # the same figures, written differently
#: the near-duplicate at rank 1, the chunk with the span's figures at rank 2
NEAR_THEN_SAME = Query(
    query_id="a",
    query="q",
    retrieved=(Chunk("near", NEAR, 0.9), Chunk("same", SAME, 0.5)),
    evidence=(SPAN,),
)


def store_of(*queries: Query, name: str = "r") -> Store:
    store = Store(":memory:")
    store.import_run(
        ParsedRun(RunInfo(name=name), list(queries), "native", (f"{name}.jsonl",)), ProblemLog()
    )
    return store


@pytest.mark.parametrize(
    ("token", "canonical"),
    [
        ("48,881", "48881"),
        ("3.50", "3.5"),
        ("3.0", "3"),
        ("10.00", "10"),
        ("007", "7"),
        ("0.5", "0.5"),
        ("000", "0"),
        ("2019", "2019"),
        ("1.0.0", "1.0"),
    ],
)
def test_canonical_form(token: str, canonical: str) -> None:
    assert numbers.canonical(token) == canonical
    assert reads.canonical_numbers_sql(Store(":memory:"), [token]) == [canonical]


def test_numbers_of_a_text() -> None:
    assert numbers.numbers_of("Revenue $48,881 (2019), -3.50% vs 7") == {
        "48881",
        "2019",
        "3.5",
        "7",
    }
    assert numbers.missing_numbers(SPAN, NEAR) == {"48881"}
    assert numbers.missing_numbers(SPAN, SAME) == frozenset()
    assert numbers.missing_numbers("no figures here", "") == frozenset()
    assert numbers.numbers_of("٣ Arabic-Indic digits are not ASCII") == frozenset()


_TEXT = st.text(alphabet=st.sampled_from(list("0123456789.,$% ab-٣\n")), max_size=40)


@settings(max_examples=150, deadline=None)
@given(_TEXT)
def test_the_sql_twin_finds_and_canonicalises_as_python_does(text: str) -> None:
    store = Store(":memory:")
    tokens = reads.numbers_in_sql(store, text)
    assert tokens == [m.group() for m in numbers.NUMBER.finditer(text)]
    assert reads.canonical_numbers_sql(store, tokens) == [numbers.canonical(t) for t in tokens]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(_TEXT, st.lists(_TEXT, max_size=4)), min_size=1, max_size=4))
def test_the_run_guard_equals_the_rule_per_pair(rows: list[tuple[str, list[str]]]) -> None:
    queries = [
        Query(
            query_id=f"q{i}",
            query="q",
            retrieved=tuple(Chunk(f"d{r}", text or None, 1.0) for r, text in enumerate(chunks)),
            evidence=(span or "x",),
        )
        for i, (span, chunks) in enumerate(rows)
    ]
    store = store_of(*queries)
    data = load_run_data(store, "r")
    guard = numbers_guard(store, data)
    for qi, q in enumerate(queries):
        for r, chunk in enumerate(q.retrieved or ()):
            expected = not numbers.missing_numbers(q.evidence[0], chunk.text)
            assert guard[qi, r, 0] == expected, (q.evidence[0], chunk.text)


def test_metrics_with_and_without_the_guard() -> None:
    store = store_of(
        NEAR_THEN_SAME,
        Query(
            query_id="b",
            query="q",
            retrieved=(Chunk("x", "no figures at all", 0.9),),
            evidence=("no figures",),
        ),
    )
    data = load_run_data(store, "r")
    names = ["EvidenceRecall@1", "EvidenceRecall@2", "RR"]
    off = evaluate(data, names, store=store, relevance="evidence", numbers_must_match=False)
    on = evaluate(data, names, store=store, relevance="evidence")  # the guard is on by default
    # off: the near-duplicate at rank 1 covers; on: only the chunk with the same figures, rank 2
    assert off.per_query["EvidenceRecall@1"].tolist() == [1.0, 1.0]
    assert on.per_query["EvidenceRecall@1"].tolist() == [0.0, 1.0]
    assert on.per_query["EvidenceRecall@2"].tolist() == [1.0, 1.0]
    assert on.per_query["RR"].tolist() == [0.5, 1.0]
    # the JSON names the setting only when it is not the default
    assert off.settings["numbers_must_match"] is False and "numbers_must_match" not in on.settings


def test_drilldown_labels_and_marks_the_differing_figure() -> None:
    store = store_of(NEAR_THEN_SAME)
    data = load_run_data(store, "r")
    for guard in (False, True):
        detail = query_detail(
            store, data, 0, Settings(k=2, threshold=0.8, numbers_must_match=guard)
        )
        near, same = detail.chunks
        assert near.numbers_differ and not same.numbers_differ
        assert near.covers is (not guard) and same.covers
        # the marked figure is the chunk's "48,811", inside the matched window
        assert [NEAR[a:b] for a, b in near.odd_numbers] == ["48,811"]
        assert near.match_start <= near.odd_numbers[0][0] < near.odd_numbers[0][1] <= near.match_end
        assert detail.spans[0].first_rank == (2 if guard else 1)
        assert float(detail.scores[0, 0]) == (0.0 if guard else pytest.approx(near.match_score))


def _lenient_run(n: int, right_text: str) -> Store:
    # the relevant document ("right") sits at rank 2; a near-duplicate with another figure at 1
    return store_of(
        *(
            Query(
                query_id=f"q{i}",
                query="q",
                retrieved=(Chunk("wrong", NEAR, 0.9), Chunk("right", right_text, 0.5)),
                evidence=(SPAN,),
                relevance={"right": 1},
            )
            for i in range(n)
        )
    )


def test_lenient_threshold_warning() -> None:
    store = _lenient_run(4, "unrelated words only")
    data = load_run_data(store, "r")
    report = evaluate(data, store=store, k=1, numbers_must_match=False)
    assert report.metrics["EvidenceRecall@1"] == 1.0 and report.metrics["R@1"] == 0.0
    (warning,) = report.warnings
    assert re.search(
        r"EvidenceRecall@1 = 1\.000 .* R@1 = 0\.000 on the 4 queries scored on relevant ids "
        r"and on gold evidence: ",
        warning,
    )
    assert report.to_json()["warnings"] == [warning]
    assert f"warning: {warning}" in format_report(report)
    # the warning belongs to the numbers it doubts: one of the two asked, the same warning ...
    off = {"numbers_must_match": False}
    assert evaluate(data, ["P@1", "R@1"], store=store, k=1, **off).warnings == report.warnings
    assert evaluate(data, ["EvidenceRecall@1"], store=store, k=1, **off).warnings == report.warnings
    assert evaluate(data, store=store, k=1, relevance="evidence", **off).warnings == report.warnings
    # ... neither: no warning about numbers not shown
    assert evaluate(data, ["P@1", "nDCG@1", "RR"], store=store, k=1, **off).warnings == ()
    # the guard (on by default) refuses the near-duplicate: no gap, no warning, no key in the JSON
    guarded = evaluate(data, store=store, k=1)
    assert guarded.warnings == () and "warnings" not in guarded.to_json()
    # k = 2 reaches the relevant document: R@2 = 1, no gap
    assert evaluate(data, store=store, k=2, **off).warnings == ()


def test_lenient_warning_names_a_card_over_other_queries() -> None:
    """Two more queries have qrels and no gold spans: the R@1 card averages 6 queries, the
    check 4. The warning gives R@1 on its 4 and the card's own value on its 6, never a
    number that contradicts a card without saying which queries it is over."""
    lenient = _lenient_run(4, "unrelated words only")
    extra = [
        Query(f"x{i}", query="q", retrieved=(Chunk("right", "words", 0.9),), relevance={"right": 1})
        for i in range(2)
    ]
    store = store_of(*(q for q in lenient.iter_queries(lenient.run("r").run_id)), *extra)
    data = load_run_data(store, "r")
    off = {"numbers_must_match": False}
    report = evaluate(data, store=store, k=1, **off)
    assert report.metrics["R@1"] == pytest.approx(2 / 6)
    assert report.counts["scored_ids"] == 6 and report.counts["scored_evidence"] == 4
    (warning,) = report.warnings
    assert "R@1 = 0.000 on the 4 queries scored on relevant ids and on gold evidence" in warning
    assert "(the reported R@1, 0.333, is over all 6 scored on relevant ids)" in warning
    # the EvidenceRecall@1 card is over the same 4 queries: no aside for it
    assert "reported EvidenceRecall" not in warning
    # in evidence mode the R@1 card is evidence-based: not the id-based number, no aside
    (evidence_warning,) = evaluate(data, store=store, k=1, relevance="evidence", **off).warnings
    assert "reported R@1" not in evidence_warning


def test_no_warning_without_meaningful_ids() -> None:
    # qrels that name no retrieved chunk (TAT-RAG's FILE gold): ids mode says nothing
    store = store_of(
        Query(
            query_id="a",
            query="q",
            retrieved=(Chunk("c1", NEAR, 0.9),),
            evidence=(SPAN,),
            relevance={"some/file.pdf": 1},
        )
    )
    assert evaluate(load_run_data(store, "r"), store=store, k=1).warnings == ()


def test_the_guard_in_a_preset() -> None:
    from rageval_core.evaluation.preset_parity import cover_matrix

    query = NEAR_THEN_SAME
    s = Settings(preset="tat-rag", scorer="difflib", threshold=0.7, numbers_must_match=False)
    assert cover_matrix(query, s, {})[:, 0].tolist() == [True, True]
    guarded = cover_matrix(query, dataclasses.replace(s, numbers_must_match=True), {})
    assert guarded[:, 0].tolist() == [False, True]
    assert np.asarray(guarded).dtype == np.bool_
