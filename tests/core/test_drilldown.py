"""drilldown: the per-query table (failing flags, filters, sorts) and one query's detail."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rageval_core.evaluation import drilldown as dd
from rageval_core.errors import ProblemLog, UsageError
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.evaluation.report import Settings
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.metrics.latency_cost import NO_TAG
from rageval_core.rundata import load_run_data
from rageval_core.store import Store

SPAN_A1 = "Accidental Death Benefit Rider may be attached"
SPAN_A2 = "waiting period is 90 days"
CHUNK_A2 = "Intro. An Accidental Death Benefit Rider may be attached to the policy for a fee."
CHUNK_A3 = "Note: the waiting period is 90 days after the start date."


def tiny_run() -> ParsedRun:
    """Five queries whose coverage and hits are known by hand (partial scorer, threshold 0.7)."""
    queries = [
        # a: span 1 at rank 2, span 2 at rank 3; d2 relevant. Retriever scores let a cut drop d1.
        Query(
            query_id="a",
            query="Rider BENEFIT (what.*)?",
            retrieved=(
                Chunk("d1", "Nothing of interest is written in this chunk at all.", 0.1),
                Chunk("d2", CHUNK_A2, 0.8),
                Chunk("d3", CHUNK_A3, 0.6),
            ),
            relevance={"d2": 1, "d9": 2},
            evidence=(SPAN_A1, SPAN_A2),
            latency_ms={"retrieval": 10.0, "generation": 90.0},
            tags={"type": "definition"},
        ),
        # b: its only span is never covered; nothing relevant retrieved (qrels hold d8)
        Query(
            query_id="b",
            query="deductible",
            retrieved=(Chunk("d4", "Completely unrelated words about the weather.", 0.7),),
            relevance={"d8": 1},
            evidence=("the deductible is $500 per claim",),
            latency_ms={"total": 50.0, "retrieval": 5.0},
            tags={"type": "amount"},
        ),
        # c: nothing retrieved at all
        Query(
            query_id="c",
            query="empty",
            retrieved=(),
            relevance={"d7": 1},
            evidence=("anything at all",),
            tags={"type": "amount"},
        ),
        # d: judged with nothing relevant, no evidence: nothing to find, never failing
        Query(
            query_id="d",
            query="Unanswerable ÜBER question",
            retrieved=(Chunk("d5", "Some text.", 0.5),),
            relevance={},
        ),
        # e: multi-byte text before the span; covered at rank 1, hit at rank 1
        Query(
            query_id="e",
            query="naïve café",
            retrieved=(
                Chunk("d6", "Ünïcödé — 日本語 prefix: the café serves crème brûlée daily.", 0.9),
            ),
            relevance={"d6": 1},
            evidence=("the café serves crème brûlée daily",),
            tags={"type": "definition"},
        ),
    ]
    return ParsedRun(RunInfo(name="tiny"), queries, "native", ("tiny.jsonl",))


@pytest.fixture()
def tiny() -> tuple[Store, object]:
    store = Store(":memory:")
    store.import_run(tiny_run(), ProblemLog())
    return store, load_run_data(store, "tiny")


def table_for(store: Store, data, **settings) -> dd.QueryTable:  # type: ignore[no-untyped-def]
    report = evaluate(data, store=store, settings=Settings(**settings))
    return dd.query_table(report, data, dd.query_texts(store, data))


# --- query_detail -------------------------------------------------------------------------


def test_detail_windows_are_the_gold_substrings(tiny) -> None:  # type: ignore[no-untyped-def]
    store, data = tiny
    det = dd.query_detail(store, data, 0, Settings(k=3))
    assert (det.query_id, det.query, det.in_run, det.has_qrels) == (
        "a",
        "Rider BENEFIT (what.*)?",
        True,
        True,
    )
    assert [c.doc_id for c in det.chunks] == ["d1", "d2", "d3"]
    c2, c3 = det.chunks[1], det.chunks[2]
    assert (c2.match_eidx, c3.match_eidx) == (0, 1)
    assert c2.text[c2.match_start : c2.match_end] == SPAN_A1
    assert c3.text[c3.match_start : c3.match_end] == SPAN_A2
    assert c2.match_score == pytest.approx(1.0) and c2.covers and c3.covers
    assert not det.chunks[0].covers
    # the score matrix is (spans, chunks) and agrees with the per-chunk best match
    assert det.scores.shape == (2, 3)
    assert det.scores[0, 1] == pytest.approx(1.0) and det.scores[1, 2] == pytest.approx(1.0)
    # qrels: d2 relevant, d1/d3 unjudged; d9 is relevant but not retrieved
    assert [c.relevant for c in det.chunks] == [False, True, False]
    assert [c.label for c in det.chunks] == [None, 1, None]
    assert det.missed_relevant == ("d9",)


def test_detail_first_covering_rank_and_k(tiny) -> None:  # type: ignore[no-untyped-def]
    store, data = tiny
    at3 = dd.query_detail(store, data, 0, Settings(k=3))
    assert [(s.first_rank, s.covered) for s in at3.spans] == [(2, True), (3, True)]
    assert at3.n_covered == 2
    at2 = dd.query_detail(store, data, 0, Settings(k=2))
    # span 2 is first covered at rank 3: outside k=2, but its first rank is still reported
    assert [(s.first_rank, s.covered) for s in at2.spans] == [(2, True), (3, False)]
    assert at2.spans[1].best_rank in (1, 2) and at2.spans[1].best_score < 0.7
    assert [c.in_top_k for c in at2.chunks] == [True, True, False]
    # a higher threshold than any score: nothing covers
    strict = dd.query_detail(store, data, 1, Settings(k=3, threshold=1.0))
    assert strict.spans[0].first_rank is None and not strict.spans[0].covered


def test_score_cut_moves_ranks(tiny) -> None:  # type: ignore[no-untyped-def]
    store, data = tiny
    det = dd.query_detail(store, data, 0, Settings(k=2, score_threshold=0.5))
    assert det.n_dropped == 1
    assert [(c.rank, c.original_rank, c.doc_id) for c in det.chunks] == [(1, 2, "d2"), (2, 3, "d3")]
    # with d1 gone, span 2 moves from rank 3 to rank 2 and is now covered at k=2
    assert [(s.first_rank, s.covered) for s in det.spans] == [(1, True), (2, True)]
    assert det.scores.shape == (2, 2)
    everything = dd.query_detail(store, data, 0, Settings(k=2, score_threshold=5.0))
    assert everything.chunks == () and everything.n_dropped == 3
    assert all(s.first_rank is None for s in everything.spans)


def test_detail_edge_cases(tiny) -> None:  # type: ignore[no-untyped-def]
    store, data = tiny
    empty = dd.query_detail(store, data, 2, Settings())
    assert empty.chunks == () and empty.scores.shape == (1, 0)
    assert empty.spans[0].best_score is None and not empty.spans[0].covered
    no_spans = dd.query_detail(store, data, 3, Settings())
    assert no_spans.spans == () and no_spans.chunks[0].match_eidx == -1
    assert no_spans.chunks[0].match_start == -1
    multi = dd.query_detail(store, data, 4, Settings())
    c = multi.chunks[0]
    assert c.text[c.match_start : c.match_end] == "the café serves crème brûlée daily"
    with pytest.raises(UsageError):
        dd.query_detail(store, data, 5, Settings())


def test_detail_agrees_with_the_report_on_the_sample_run(tmp_path: Path) -> None:
    """Per-span coverage in the detail reproduces PerQueryCoverage@k / FullCoverageRate@k."""
    repo = Path(__file__).resolve().parents[2]
    store = Store(":memory:")
    from rageval_core.formats import read_inputs

    log = ProblemLog()
    store.import_run(read_inputs([repo / "sample_runs" / "bm25.jsonl"], None, log)[0], log)
    data = load_run_data(store, "bm25")
    for settings in (
        Settings(k=3, threshold=0.8),
        Settings(k=5, threshold=0.7, score_threshold=10.0),
    ):
        report = evaluate(
            data,
            [f"PerQueryCoverage@{settings.k}", f"FullCoverageRate@{settings.k}"],
            store=store,
            settings=settings,
        )
        share = report.per_query[f"PerQueryCoverage@{settings.k}"]
        checked = 0
        for qidx in range(0, data.n_queries, 6):  # every 6th query: 60 details
            det = dd.query_detail(store, data, qidx, settings)
            if not det.spans:
                assert np.isnan(share[qidx])
                continue
            assert det.n_covered / len(det.spans) == pytest.approx(share[qidx]), det.query_id
            checked += 1
        assert checked > 40


# --- query_table, filters, sorts, neighbours ---------------------------------------------


def test_failing_flags(tiny) -> None:  # type: ignore[no-untyped-def]
    store, data = tiny
    table = table_for(store, data, k=3)
    assert list(table.query_ids) == ["a", "b", "c", "d", "e"]
    assert list(table.fail_coverage) == [False, True, True, False, False]
    # ids mode: b and c have something relevant judged and no hit; d has nothing to find
    assert list(table.fail_hit) == [False, True, True, False, False]
    at2 = table_for(store, data, k=2)
    assert list(at2.fail_coverage) == [True, True, True, False, False]  # a's span 2 is at rank 3
    assert list(at2.failing) == [True, True, True, False, False]
    assert table.k == 3 and "Hit@3" in table.metrics and "Hit@3" in table.columns()
    # latency: the "total" stage when there is one, else the sum of the stages (derived: the
    # same total the Latency page, compare and the gate read, marked as such)
    assert table.total_ms[0] == pytest.approx(100.0) and table.total_ms[1] == pytest.approx(50.0)
    assert np.isnan(table.total_ms[2])
    assert list(table.total_derived[:3]) == [True, False, False]
    assert list(table.n_retrieved) == [3, 1, 0, 1, 1]
    cut = table_for(store, data, k=3, score_threshold=0.5)
    assert list(cut.n_retrieved) == [2, 1, 0, 1, 1]


def test_evidence_mode_has_no_hit_flags(tiny) -> None:  # type: ignore[no-untyped-def]
    store, data = tiny
    table = table_for(store, data, k=3, relevance="evidence")
    assert not table.fail_hit.any()
    assert list(table.failing) == [False, True, True, False, False]


def test_filters(tiny) -> None:  # type: ignore[no-untyped-def]
    store, data = tiny
    table = table_for(store, data, k=3)
    ids = lambda mask: list(table.query_ids[mask])  # noqa: E731
    assert ids(dd.filter_rows(table, failing_only=True)) == ["b", "c"]
    # case-insensitive plain substring: regex characters are literal
    assert ids(dd.filter_rows(table, text="benefit (WHAT.*)")) == ["a"]
    assert ids(dd.filter_rows(table, text=".*")) == ["a"]
    assert ids(dd.filter_rows(table, text="über")) == ["d"]
    assert ids(dd.filter_rows(table, text="CAFÉ")) == ["e"]
    # "C": in the texts of b ("deductible") and e ("café"), and the id of c (its text is "empty")
    assert ids(dd.filter_rows(table, text="C")) == ["b", "c", "e"]
    assert ids(dd.filter_rows(table, text="   ")) == ["a", "b", "c", "d", "e"]
    # tags: chosen values, NO_TAG for a query without the tag
    assert dd.tag_values(table, "type") == ["amount", "definition", NO_TAG]
    assert ids(dd.filter_rows(table, tag="type", tag_values=["amount"])) == ["b", "c"]
    assert ids(dd.filter_rows(table, tag="type", tag_values=[NO_TAG])) == ["d"]
    assert ids(
        dd.filter_rows(table, tag="type", tag_values=["amount"], failing_only=True, text="deduct")
    ) == ["b"]
    with pytest.raises(UsageError):
        dd.filter_rows(table, tag="nope", tag_values=["x"])


def test_sorts(tiny) -> None:  # type: ignore[no-untyped-def]
    store, data = tiny
    table = table_for(store, data, k=2)
    everything = np.ones(table.n_queries, dtype=bool)
    worst = list(table.query_ids[dd.sort_rows(table, everything)])
    # failing first (a, b, c); within each group PerQueryCoverage@2 lowest first, NaN last;
    # d has no gold (no relevant document, no span): not in the worst-first order
    assert worst[:3] == ["b", "c", "a"] and worst[3:] == ["e"]
    assert list(table.query_ids[table.no_gold]) == ["d"] and not table.failing[table.no_gold].any()
    no_gold = dd.filter_rows(table, no_gold_only=True)
    assert list(table.query_ids[dd.sort_rows(table, no_gold)]) == ["d"]
    assert list(table.query_ids[dd.sort_rows(table, everything, dd.FILE_ORDER)]) == list("abcde")
    up = list(table.query_ids[dd.sort_rows(table, everything, "total_ms ↑")])
    assert up[:2] == ["b", "a"] and set(up[2:]) == {"c", "d", "e"}
    down = list(table.query_ids[dd.sort_rows(table, everything, "total_ms ↓")])
    assert down[:2] == ["a", "b"]
    assert all(o in dd.sort_options(table) for o in ("total_ms ↑", "Hit@2 ↓", dd.WORST_FIRST))
    # both have a hit (a tie: file order); e's nDCG@2 is 1, a's lower (d9, grade 2, is missed)
    assert list(dd.sort_rows(table, np.array([4, 0]), "Hit@2 ↓")) == [0, 4]
    assert list(dd.sort_rows(table, np.array([0, 4]), "nDCG@2 ↓")) == [4, 0]
    with pytest.raises(UsageError):
        dd.sort_rows(table, everything, "nonsense ↑")


def test_records_are_json_ready(tiny) -> None:  # type: ignore[no-untyped-def]
    store, data = tiny
    table = table_for(store, data, k=3)
    recs = table.records(np.array([2, 0]))
    assert [r["query_id"] for r in recs] == ["c", "a"]
    assert recs[0]["total_ms"] is None and recs[1]["total_ms"] == pytest.approx(100.0)
    assert recs[0]["failing"] is True and recs[1]["tag:type"] == "definition"


def test_neighbours() -> None:
    mask = np.array([False, True, False, False, True, True, False])
    assert dd.neighbours(mask, 0) == (None, 1)
    assert dd.neighbours(mask, 1) == (None, 4)
    assert dd.neighbours(mask, 3) == (1, 4)
    assert dd.neighbours(mask, 4) == (1, 5)
    assert dd.neighbours(mask, 6) == (5, None)
    assert dd.neighbours(np.zeros(3, dtype=bool), 1) == (None, None)


def test_qidx_of(tiny) -> None:  # type: ignore[no-untyped-def]
    _, data = tiny
    assert dd.qidx_of(data, "c") == 2 and dd.qidx_of(data, "zz") is None


def test_drilldown_imports_without_ui() -> None:
    code = (
        "import sys, rageval_core.evaluation.drilldown\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('streamlit', 'plotly'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_search_index_is_built_once_per_run_and_texts(tiny) -> None:  # type: ignore[no-untyped-def]
    store, data = tiny
    texts = dd.query_texts(store, data)
    at3 = dd.query_table(evaluate(data, store=store, settings=Settings(k=3)), data, texts)
    at2 = dd.query_table(evaluate(data, store=store, settings=Settings(k=2)), data, texts)
    assert at2._haystack is at3._haystack  # a new k: the same index
    assert dd.filter_rows(at2, text="A").tolist() == dd.filter_rows(at3, text="a").tolist()
    # other texts (here: none) get their own index, and search the ids only
    bare = dd.query_table(evaluate(data, store=store, settings=Settings(k=2)), data, None)
    assert bare._haystack is not at2._haystack
    assert dd.filter_rows(bare, text="b").tolist() == [False, True, False, False, False]
