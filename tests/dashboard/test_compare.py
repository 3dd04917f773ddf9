"""Compare: the tables show compare()'s values for the sample runs; drilldowns, edge states."""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Callable, Iterator
from typing import Any
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from rageval_dashboard.components.figures import compare as fc
from rageval_dashboard.components.figures import trends as ft
from rageval_core.compare import Comparison, compare, trends
from rageval_core.evaluation.drilldown import qidx_of, query_detail
from rageval_core.errors import ProblemLog
from rageval_core.evaluation.evaluate import evaluate
from rageval_core.evaluation.report import Settings
from rageval_core.formats import read_inputs
from rageval_core.rundata import load_run_data
from rageval_core.store import Store
from rageval_dashboard.components.text import escape_text
from tests.cli import import_files

REPO = Path(__file__).resolve().parents[2]
SAMPLES = sorted((REPO / "sample_runs").glob("*.jsonl"))  # app_db imports them in this order
TINY = REPO / "tests" / "data" / "good" / "native_full.jsonl"  # query ids q1.., none shared
#: the sidebar's defaults (relevance: the first mode a run with qrels offers)
DEFAULT = Settings(k=10, threshold=0.7, relevance="ids")
PAGE = "compare.py"


@pytest.fixture(scope="module")
def ref_store() -> Iterator[Store]:
    """The three sample files in a store of their own (the app's store stays untouched)."""
    store = Store(":memory:")
    for path in SAMPLES:
        log = ProblemLog()
        store.import_run(read_inputs([path], None, log)[0], log)
    yield store
    store.close()


@pytest.fixture(scope="module")
def reference(ref_store: Store) -> Comparison:
    """compare() as the page calls it: baseline bm25 (the sidebar's first run), the others."""
    names = [r.name for r in ref_store.runs()]
    assert names == ["bm25", "hybrid_rerank", "tfidf_char"]
    return compare(names, store=ref_store, settings=DEFAULT)


def frame_with(at: AppTest, column: str) -> pd.DataFrame:
    """The (first) dataframe on the page that has this column."""
    for el in at.dataframe:
        if column in el.value.columns:
            return el.value
    raise AssertionError(f"no table with a {column!r} column")


def open_section(at: AppTest, name: str) -> AppTest:
    """The comparison's tab name opened (only the open tab runs), as a click on it does."""
    at.session_state["compare.section"] = name
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def markdown(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown]


def one_store(tmp_path: Path, *files: Path) -> Path:
    db = tmp_path / "store.duckdb"
    import_files(db, *files)
    return db


def test_metrics_table_equals_compare(
    make_app: Callable[..., AppTest], reference: Comparison, ref_store: Store
) -> None:
    at = make_app(PAGE)
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="compare.baseline").value == "bm25"
    assert at.multiselect(key="compare.candidates").value == ["hybrid_rerank", "tfidf_char"]
    table = frame_with(at, "95% CI")
    assert len(table) == len(reference.tests) == 2 * len(reference.metrics)
    for row in table.itertuples(index=False):
        t = reference.test(row.candidate, row.metric)
        shown = table[(table["candidate"] == row.candidate) & (table["metric"] == row.metric)]
        shown = shown.iloc[0]
        assert shown["n"] == t.n
        # the p-values as written (no number format writes both 1.5e-197 and 0.072)
        assert shown["p (Holm)"] == fc.p_text(t.p_perm_holm)
        assert shown["p (t-test)"] == fc.p_text(t.p_t)
        for column, expected in (
            ("delta", t.diff),
            ("baseline mean", t.baseline_mean),
            ("candidate mean", t.candidate_mean),
        ):
            got = table.loc[
                (table["candidate"] == row.candidate) & (table["metric"] == row.metric), column
            ].iloc[0]
            assert got == pytest.approx(expected, rel=1e-12, abs=1e-15, nan_ok=True), (row, column)
        expected_mark = (
            "" if not t.significant(0.05) else fc.IMPROVED if t.improvement > 0 else fc.REGRESSED
        )
        # a coloured label: the cell holds the mark as a list of one, or nothing
        assert list(shown["significant"]) == ([expected_mark] if expected_mark else [])
    # independent of compare(): with every query shared, the baseline's mean is evaluate()'s value
    bm25 = evaluate(
        load_run_data(ref_store, "bm25"), ["nDCG@10", "R@10"], store=ref_store, settings=DEFAULT
    ).metrics
    for metric in ("nDCG@10", "R@10"):
        got = table.loc[table["metric"] == metric, "baseline mean"]
        assert got.tolist() == pytest.approx([bm25[metric]] * 2, rel=1e-12)
    # the CSV download holds every column (the uncorrected p and W/T/L split)
    full = fc.metrics_frame(reference)
    assert {"p (perm.)", "wins", "ties", "losses", "better"} <= set(full.columns)


def test_summary_explains_the_result(
    make_app: Callable[..., AppTest], reference: Comparison, ref_store: Store
) -> None:
    at = make_app(PAGE)
    summary = next(m for m in markdown(at) if "rageval-summary" in m)
    lines = fc.summary_lines(reference)
    assert len(lines) == 2
    for line in lines:
        assert escape_text(line) in summary
    # sensible: the hybrid reranker is a significant improvement on nDCG@10 (docs/compare.md);
    # character TF-IDF is significantly better on FullCoverageRate@10 alone, with the numbers
    # guard on (the default; without it on no metric, below)
    hybrid = reference.test("hybrid_rerank", "nDCG@10")
    assert hybrid.significant(0.05) and hybrid.diff > 0.05
    assert lines[0].startswith("hybrid_rerank beats bm25 on ")
    assert f"nDCG@10: {hybrid.baseline_mean:.3f} → {hybrid.candidate_mean:.3f}" in lines[0]
    assert "tfidf_char beats bm25 on" in lines[1] and "significantly on 1;" in lines[1]
    better = [
        t.metric
        for t in reference.tests
        if t.candidate == "tfidf_char" and t.significant(0.05) and t.improvement > 0
    ]
    assert better == ["FullCoverageRate@10"]
    # the hybrid's chunks are a little less similar to the query by meaning (ContextRelevance,
    # a semantic answer metric): significant, so its verdict is mixed, not better
    worse = [
        t.metric
        for t in reference.tests
        if t.candidate == "hybrid_rerank" and t.significant(0.05) and t.improvement < 0
    ]
    assert worse == ["ContextRelevance"]
    assert fc.verdicts(reference) == {"hybrid_rerank": "mixed", "tfidf_char": "better"}
    names = [r.name for r in ref_store.runs()]
    off = compare(
        names, store=ref_store, settings=dataclasses.replace(DEFAULT, numbers_must_match=False)
    )
    assert fc.verdicts(off) == {"hybrid_rerank": "mixed", "tfidf_char": "no significant change"}


def test_choosing_a_regressed_query_shows_both_drilldowns(
    make_app: Callable[..., AppTest], reference: Comparison, ref_store: Store
) -> None:
    at = open_section(make_app(PAGE), "Per query")
    assert at.selectbox(key="compare.focus").value == "hybrid_rerank"
    assert at.selectbox(key="compare.metric").value == "nDCG@10"
    worst = reference.worst["hybrid_rerank"]["nDCG@10"]
    shown = frame_with(at, "query_id")
    assert shown["query_id"].tolist() == [w["query_id"] for w in worst]
    assert shown["delta"].tolist() == pytest.approx([w["diff"] for w in worst])
    assert not any("rageval-chunk" in m for m in markdown(at))  # nothing open yet
    qid = worst[0]["query_id"]
    at.selectbox(key="compare.regressed").select(qid).run()
    assert not at.exception, [e.value for e in at.exception]
    texts = markdown(at)
    assert any(f"Query {qid}" in m for m in texts)
    # one block of chunk cards per run, each holding that run's own top-k documents in order
    cards = [m for m in texts if m.startswith('<div class="rageval-chunk"')]
    assert len(cards) == 2
    for run, block in zip(("bm25", "hybrid_rerank"), cards, strict=True):
        data = load_run_data(ref_store, run)
        detail = query_detail(ref_store, data, qidx_of(data, qid), DEFAULT)  # type: ignore[arg-type]
        docs = [c.doc_id for c in detail.chunks if c.in_top_k]
        positions = [block.find(escape_text(d)) for d in docs]
        assert all(p >= 0 for p in positions) and positions == sorted(positions), run
    # the two runs are told apart, and the query's metric values match the regression
    assert any("bm25" in m and "(baseline)" in m for m in texts)
    assert any(escape_text("hybrid_rerank") in m and "(candidate)" in m for m in texts)
    values = next(
        el.value
        for el in at.dataframe
        if list(el.value.columns) == ["metric", "baseline", "candidate", "delta"]
    )
    values = values.set_index("metric")
    assert values.loc["nDCG@10", "baseline"] == pytest.approx(worst[0]["baseline"])
    assert values.loc["nDCG@10", "candidate"] == pytest.approx(worst[0]["candidate"])


def test_baseline_follows_the_sidebar_and_swaps_with_a_candidate(
    make_app: Callable[..., AppTest],
) -> None:
    at = make_app(PAGE, run="hybrid_rerank")
    assert at.selectbox(key="compare.baseline").value == "hybrid_rerank"
    assert at.multiselect(key="compare.candidates").value == ["bm25", "tfidf_char"]
    at.selectbox(key="compare.baseline").select("tfidf_char").run()
    assert not at.exception
    # the new baseline leaves the candidates and the old one takes its place
    assert at.multiselect(key="compare.candidates").value == ["bm25", "hybrid_rerank"]
    assert set(frame_with(at, "95% CI")["candidate"]) == {"bm25", "hybrid_rerank"}
    at.multiselect(key="compare.candidates").set_value([]).run()
    assert not at.exception
    assert any("Pick at least one candidate" in i.value for i in at.info)


def test_segment_latency_cost_and_trend_tables(
    make_app: Callable[..., AppTest], reference: Comparison, ref_store: Store
) -> None:
    at = open_section(make_app(PAGE), "Segments")
    at.selectbox(key="compare.tag").select("query_type").run()
    assert not at.exception, [e.value for e in at.exception]
    by = compare(
        ["bm25", "hybrid_rerank", "tfidf_char"],
        store=ref_store,
        settings=DEFAULT,
        by=["query_type"],
    ).by["query_type"]
    seg = frame_with(at, "queries")
    assert seg["value"].tolist() == [v for v in by for _ in range(2)]
    assert seg["queries"].tolist() == [by[v]["n"] for v in by for _ in range(2)]
    assert sum(by[v]["n"] for v in by) == reference.n_shared
    for row in seg.itertuples(index=False):
        t = next(
            t
            for t in by[row.value]["tests"]
            if t.candidate == row.candidate and t.metric == "nDCG@10"
        )
        assert seg.loc[
            (seg["value"] == row.value) & (seg["candidate"] == row.candidate), "nDCG@10"
        ].iloc[0] == pytest.approx(t.diff, nan_ok=True)

    open_section(at, "Latency & cost")
    lat = frame_with(at, "statistic")
    p95 = lat[
        (lat["candidate"] == "hybrid_rerank")
        & (lat["stage"] == "total")
        & (lat["statistic"] == "p95")
    ].iloc[0]
    change = reference.ops_change("hybrid_rerank", "latency.total.p95")
    assert change is not None
    assert (p95["baseline"], p95["candidate value"]) == pytest.approx(
        (change.baseline, change.candidate_value)
    )
    # independent of compare(): numpy's p95 of bm25's recorded total latencies
    data = load_run_data(ref_store, "bm25")
    total = data.latency_ms[data.latency_stage == "total"]
    assert p95["baseline"] == pytest.approx(float(np.percentile(total, 95)))
    # bm25 has no reranker, hybrid_rerank has: its rerank stage is compared as added, at its
    # whole cost (0 ms in the baseline), between retrieval and generation as the file has it
    hybrid = lat[lat["candidate"] == "hybrid_rerank"]
    assert list(dict.fromkeys(hybrid["stage"])) == [
        "retrieval",
        "rerank (added)",
        "generation",
        "total",
    ]
    added = hybrid[(hybrid["stage"] == "rerank (added)") & (hybrid["statistic"] == "mean")]
    rerank = load_run_data(ref_store, "hybrid_rerank")
    rerank_ms = rerank.latency_ms[rerank.latency_stage == "rerank"]
    assert added["baseline"].iloc[0] == 0.0
    assert added["candidate value"].iloc[0] == pytest.approx(float(rerank_ms.mean()))
    assert "rerank (added)" not in set(lat[lat["candidate"] == "tfidf_char"]["stage"])
    cost = frame_with(at, "cost")
    assert set(cost["cost"]) == {"per_query", "total"} and len(cost) == 4

    open_section(at, "Trends")
    trend = frame_with(at, "dated from")
    assert trend["run"].tolist() == ["bm25", "tfidf_char", "hybrid_rerank"]  # by created_at
    assert set(trend["dated from"]) == {"created_at"}  # every sample run carries its date
    assert trend["group"].tolist() == ["bm25", "tfidf_char", "hybrid_rerank"]  # no shared stem
    assert at.multiselect(key="compare.trend_metrics").value == [
        "nDCG@10",
        "R@10",
        "EvidenceRecall@10",
    ]
    rows = {r.run: r for r in trends(ref_store, DEFAULT, ["nDCG@10"])}
    for _, row in trend.iterrows():
        assert row["nDCG@10"] == pytest.approx(rows[row["run"]].metrics["nDCG@10"])


def test_a_k_move_keeps_the_trend_lines_at_the_new_k(
    make_app: Callable[..., AppTest], ref_store: Store
) -> None:
    at = open_section(make_app(PAGE), "Trends")
    assert at.multiselect(key="compare.trend_metrics").value[0] == "nDCG@10"
    at.sidebar.slider(key="k").set_value(5).run()
    assert not at.exception, [e.value for e in at.exception]
    # the picker follows k instead of losing every @k metric (the chart went blank)
    assert at.multiselect(key="compare.trend_metrics").value == [
        "nDCG@5",
        "R@5",
        "EvidenceRecall@5",
    ]
    trend = frame_with(at, "dated from")
    moved = dataclasses.replace(DEFAULT, k=5)
    rows = {r.run: r for r in trends(ref_store, moved, ["nDCG@5"])}
    for _, row in trend.iterrows():
        assert row["nDCG@5"] == pytest.approx(rows[row["run"]].metrics["nDCG@5"])
    assert trend["nDCG@5"].notna().all()


def test_one_run_store_says_so(make_app: Callable[..., AppTest], tmp_path: Path) -> None:
    at = make_app(PAGE, db=one_store(tmp_path, SAMPLES[0]))
    assert not at.exception
    assert any("at least two runs" in i.value for i in at.info)
    assert not at.dataframe


def test_a_run_sharing_no_query_is_listed_not_an_error_page(
    make_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    """A run that shares no query with the baseline is not a default candidate, is listed as
    such, and when picked anyway is left out with a notice: never an error page."""
    at = make_app(PAGE, db=one_store(tmp_path, SAMPLES[0], TINY))
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.error) == 0
    picker = at.multiselect(key="compare.candidates")
    assert picker.value == []  # nothing shares queries with the baseline: nothing chosen
    assert any("(shares no query)" in o for o in picker.options)
    assert not any("rageval-summary" in m for m in markdown(at))
    picker.select(picker.options[0]).run()
    assert not at.exception and len(at.error) == 0
    (notice,) = [w.value for w in at.warning if "Left out" in w.value]
    assert "no query" in notice and "nothing to pair" in notice


def test_significance_marks_follow_the_metrics_direction(reference: Comparison) -> None:
    t = reference.test("hybrid_rerank", "BestRank")
    assert not t.higher_is_better and t.diff < 0  # lower rank: the hybrid is better here
    better = dataclasses.replace(t, p_perm_holm=0.001)
    worse = dataclasses.replace(better, candidate_mean=t.baseline_mean + 1.0, diff=1.0)
    tests = [better if x is t else x for x in reference.tests]
    marks = fc.metrics_frame(dataclasses.replace(reference, tests=tests)).set_index(
        ["candidate", "metric"]
    )["significant"]
    assert marks[("hybrid_rerank", "BestRank")] == fc.IMPROVED
    tests = [worse if x is t else x for x in reference.tests]
    marks = fc.metrics_frame(dataclasses.replace(reference, tests=tests)).set_index(
        ["candidate", "metric"]
    )["significant"]
    assert marks[("hybrid_rerank", "BestRank")] == fc.REGRESSED
    # the scatter colours queries the same way: a lower BestRank is a win
    assert fc.outcome(np.array([-1.0, 0.0, 2.0]), higher_is_better=False).tolist() == [1, 0, -1]


def test_scatter_pairs_and_escapes_ids(reference: Comparison, ref_store: Store) -> None:
    base = evaluate(
        load_run_data(ref_store, "bm25"), ["nDCG@10"], store=ref_store, settings=DEFAULT
    ).per_query["nDCG@10"]
    cand_data = load_run_data(ref_store, "hybrid_rerank")
    cand = evaluate(cand_data, ["nDCG@10"], store=ref_store, settings=DEFAULT).per_query["nDCG@10"]
    pairs = fc.paired_frame(reference, "hybrid_rerank", "nDCG@10", base, cand)
    t = reference.test("hybrid_rerank", "nDCG@10")
    assert len(pairs) == t.n
    assert pairs["delta"].mean() == pytest.approx(t.diff, rel=1e-12)
    # each pair is the same query in both runs, looked up by id
    row = pairs.iloc[7]
    assert cand[qidx_of(cand_data, row["query_id"])] == row["candidate"]  # type: ignore[index]
    wins = int((fc.outcome(pairs["delta"].to_numpy(), True) == 1).sum())
    assert wins == t.wins
    hostile = pd.DataFrame(
        {
            "query_id": ["<img src=x onerror=alert(1)>"],
            "baseline": [0.1],
            "candidate": [0.2],
            "delta": [0.1],
        }
    )
    # the page takes the spec unvalidated: plotly's own checks run here instead
    fig = go.Figure(fc.scatter(hostile, "nDCG@10", True, "<b>base</b>", "cand").to_dict())
    go.Figure(fc.scatter(pairs, "nDCG@10", True, "bm25", "hybrid_rerank").to_dict())
    texts = [x for trace in fig.data for x in (trace.text or ())]
    assert texts == [escape_text("<img src=x onerror=alert(1)>")]
    assert "<img" not in texts[0] and html.unescape(texts[0]) == "<img src=x onerror=alert(1)>"
    assert "<b>" not in fig.layout.xaxis.title.text


def test_user_text_is_inert_in_messages() -> None:
    hostile = "[click](javascript:alert(1)) <script>x</script> **bold** $x$ :red[y]"
    md = escape_text(hostile, one_line=True)
    for raw in ("[click]", "](", "<script>", "**bold**", "$x$", ":red["):
        assert raw not in md
    assert html.unescape(md).replace("\u200b", "") == hostile  # the same to the eye
    block = escape_text(hostile)
    assert "<script>" not in block and "&#60;script&#62;" in block and "$" not in block


def test_defaults_are_the_runs_that_share_queries_with_the_baseline(
    make_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    at = make_app(PAGE, db=one_store(tmp_path, SAMPLES[0], TINY, SAMPLES[1]), run="bm25")
    assert not at.exception, [e.value for e in at.exception]
    picker = at.multiselect(key="compare.candidates")
    assert picker.value == [SAMPLES[1].stem]  # the newest run sharing queries, not TINY's
    assert any(o.endswith("(shares no query)") for o in picker.options)
    assert any(
        f"Queries each candidate shares with the baseline (360 queries): {SAMPLES[1].stem} 360"
        in html.unescape(c.value)
        for c in at.caption
    )
    assert any("rageval-summary" in m for m in markdown(at))  # the comparison is shown

    # a baseline no other run shares a query with: said so, with the runs, not an error page
    tiny = next(o.removesuffix(" (shares no query)") for o in picker.options if "shares no" in o)
    at.selectbox(key="compare.baseline").select(tiny).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Left out" in w.value for w in at.warning)  # the pick kept, said to share none
    told = [html.unescape(i.value) for i in at.info if "shares a query" in i.value]
    assert told and all(r in told[0] for r in ("bm25", SAMPLES[1].stem)), told


def _subset_run(folder: Path, source: Path, name: str, n: int) -> Path:
    """source's first n queries as a run of its own called name (ids unchanged: they pair)."""
    import json

    lines = source.read_text().splitlines()
    head = json.loads(lines[0])
    head["rageval_run"]["name"] = name
    path = folder / f"{name}.jsonl"
    path.write_text("\n".join([json.dumps(head), *lines[1 : 1 + n]]) + "\n")
    return path


def test_each_candidate_is_paired_on_its_own_queries(
    make_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    """Candidates holding 3, 10 and 1 of the baseline's queries: each row of the table is that
    candidate compared with the baseline alone, and the page says what each pair holds."""
    small = _subset_run(tmp_path, SAMPLES[1], "three", 3)
    ten = _subset_run(tmp_path, SAMPLES[2], "ten", 10)
    one = _subset_run(tmp_path, SAMPLES[1], "one", 1)
    db = one_store(tmp_path, SAMPLES[0], small, ten, one)
    at = make_app(PAGE, db=db, run="bm25")
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.error) == 0
    assert sorted(at.multiselect(key="compare.candidates").value) == ["one", "ten", "three"]
    table = frame_with(at, "95% CI")
    with Store(db) as store:
        for name, n in (("three", 3), ("ten", 10), ("one", 1)):
            ref = compare(["bm25", name], ["RR"], store=store, settings=DEFAULT)
            (row,) = table[(table["candidate"] == name) & (table["metric"] == "RR")].itertuples()
            t = ref.test(name, "RR")
            assert row.n == t.n == n
            assert row.delta == pytest.approx(t.diff, rel=1e-12)
    (notice,) = [html.unescape(w.value) for w in at.warning if "paired with bm25" in w.value]
    assert "three: 3 queries (357 of bm25's left out)" in notice
    assert "ten: 10 queries (350 of bm25's left out)" in notice
    assert "one: 1 query (359 of bm25's left out)" in notice


def test_a_large_comparison_shows_deltas_first_then_its_tests(
    make_app: Callable[..., AppTest], reference: Comparison, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past COMPARE_INLINE_CELLS the intervals and randomisation p-values are computed in a
    thread: the first run shows the deltas with a note and no p(Holm); once the thread is done
    the page shows every number of compare()."""
    import time

    from rageval_dashboard.state import compare as state_compare

    monkeypatch.setattr(state_compare, "COMPARE_INLINE_CELLS", 0)
    state_compare.clear_caches()
    at = make_app(PAGE)
    assert not at.exception, [e.value for e in at.exception]
    pending = [i.value for i in at.info if "Computing p-values" in i.value]
    table = frame_with(at, "95% CI")
    assert pending  # the page's run ends right after starting the thread
    assert (table["p (Holm)"] == "—").all()
    t = reference.test("hybrid_rerank", "nDCG@10")
    row = table[(table["candidate"] == "hybrid_rerank") & (table["metric"] == "nDCG@10")]
    assert row["delta"].iloc[0] == pytest.approx(t.diff, rel=1e-12)
    deadline = time.monotonic() + 120
    while any("Computing p-values" in i.value for i in at.info):
        assert time.monotonic() < deadline, "the tests did not come in"
        time.sleep(0.2)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    table = frame_with(at, "95% CI")
    for x in reference.tests:
        got = table[(table["candidate"] == x.candidate) & (table["metric"] == x.metric)]
        assert not np.isnan(x.p_perm_holm) and got["p (Holm)"].iloc[0] == fc.p_text(x.p_perm_holm)
        assert got["95% CI"].iloc[0].startswith(f"[{x.ci_low:+.4f}, ")
    open_section(at, "Latency & cost")
    latency = frame_with(at, "CI low")
    assert latency["CI low"].notna().any()  # the latency intervals came with the thread too
    state_compare.clear_caches()


def test_many_ties_are_drawn_one_marker_per_value() -> None:
    """Past WEBGL_POINTS tied queries, the scatter draws one marker per tied value (with its
    count), so a large run's diagonal costs the browser a few markers; wins stay one per query."""
    n_ties = fc.WEBGL_POINTS + 500
    values = np.tile([0.0, 0.5, 1.0], n_ties // 3 + 1)[:n_ties]
    frame = pd.DataFrame(
        {
            "query_id": [f"t{i}" for i in range(n_ties)] + ["w1", "w2"],
            "baseline": [*values, 0.1, 0.2],
            "candidate": [*values, 0.9, 0.8],
        }
    )
    frame["delta"] = frame["candidate"] - frame["baseline"]
    fig = fc.scatter(frame, "nDCG@10", True, "base", "cand")
    better, tie, worse = fig.data
    assert list(better.customdata[:, 0]) == ["w1", "w2"] and len(worse.x) == 0
    assert sorted(tie.x) == [0.0, 0.5, 1.0] and list(tie.x) == list(tie.y)
    counts = [int(t.split(" ")[0].replace(",", "")) for t in tie.text]
    assert sum(counts) == n_ties and f"({n_ties}," in tie.name
    # a click on a tie marker opens one of its queries
    assert set(tie.customdata[:, 0]) <= {f"t{i}" for i in range(n_ties)}


def test_past_webgl_points_each_distinct_point_is_one_marker_as_dark_as_its_stack() -> None:
    """A large scatter sends one marker per distinct (baseline, candidate) point in every
    trace, with its count and the opacity of that many stacked markers; exact: every query is
    counted once at its own point, and a lone query keeps its own marker and label."""
    rng = np.random.default_rng(7)
    n = fc.WEBGL_POINTS + 1000
    base = rng.choice([0.0, 0.25, 0.5], n)
    cand = rng.choice([0.0, 0.25, 0.5, 1.0], n)
    frame = pd.DataFrame(
        {
            "query_id": [f"q{i}" for i in range(n)] + ["lone"],
            "baseline": [*base, 0.11],
            "candidate": [*cand, 0.97],
        }
    )
    frame["delta"] = frame["candidate"] - frame["baseline"]
    fig = fc.scatter(frame, "nDCG@10", True, "base", "cand")
    result = fc.outcome(frame["delta"].to_numpy(), True)
    for code, trace in zip((1, 0, -1), fig.data, strict=True):
        sub = frame[result == code]
        expected = sub.groupby(["baseline", "candidate"]).size()
        got = {}
        for x, y, text, opacity, qid in zip(
            trace.x, trace.y, trace.text, trace.marker.opacity, trace.customdata[:, 0], strict=True
        ):
            count = 1 if text == qid else int(text.split(" ")[0].replace(",", ""))
            got[(x, y)] = count
            assert opacity == pytest.approx(1 - (1 - fc.OPACITY) ** count)
            # the click target is a query at that very point
            row = sub[sub["query_id"] == qid].iloc[0]
            assert (row["baseline"], row["candidate"]) == (x, y)
        assert got == expected.to_dict()
        assert sum(got.values()) == len(sub)
    # a few markers left: SVG, which redraws them faster than a WebGL context
    assert {t.type for t in fig.data} == {"scatter"}
    better = fig.data[0]
    lone = list(better.customdata[:, 0]).index("lone")
    assert better.text[lone] == "lone" and better.marker.opacity[lone] == pytest.approx(0.6)


def test_wtl_spec_is_valid_plotly_and_holds_each_candidates_counts(reference: Comparison) -> None:
    # the page takes the spec unvalidated: plotly's own checks run here instead
    fig = go.Figure(fc.wtl_bars(reference).to_dict())
    assert len(fig.data) == 3 * len(reference.candidates)
    for i, cand in enumerate(reference.candidates):
        for j, field in enumerate(("wins", "ties", "losses")):
            trace = fig.data[3 * i + j]
            assert trace.xaxis == ("x" if i == 0 else f"x{i + 1}")
            expected = [getattr(reference.test(cand, m), field) for m in reference.metrics]
            assert list(trace.x) == expected
            assert list(trace.y) == [escape_text(m) for m in reference.metrics]
    titles = [a.text for a in fig.layout.annotations]
    assert titles == [
        f"{escape_text(cand)} vs {escape_text(reference.baseline)}" for cand in reference.candidates
    ]


def test_p_values_are_written_with_three_decimals_or_an_exponent() -> None:
    assert [fc.p_text(p) for p in (0.0724, 0.5, 0.001, 0.00099, 1.46e-197, 0.0)] == [
        "0.072",
        "0.500",
        "0.001",
        "9.9e-04",
        "1.5e-197",
        "0.0e+00",
    ]
    assert fc.p_text(float("nan")) == "—"


def test_trends_spec_is_valid_plotly_with_latency_on_the_right_axis(ref_store: Store) -> None:
    rows = trends(ref_store, DEFAULT, ["nDCG@10"])
    fig = go.Figure(ft.trends_figure(rows, ["nDCG@10"], "total").to_dict())
    metric = [t for t in fig.data if t.name.endswith("nDCG&#64;10")]
    latency = [t for t in fig.data if "p95 latency" in t.name]
    # one line per run (no shared stem among the samples): a metric and a latency trace each
    assert len(metric) == len(latency) == len(rows)
    for r, m, lat in zip(rows, metric, latency, strict=True):
        assert list(m.y) == [r.metrics["nDCG@10"]] and m.yaxis in (None, "y")
        assert list(lat.y) == [r.latency_p95_ms["total"]] and lat.yaxis == "y2"
    assert fig.layout.yaxis2.overlaying == "y" and fig.layout.yaxis2.side == "right"
    assert "yaxis2" not in ft.trends_figure(rows, ["nDCG@10"], None).to_dict()["layout"]


def test_only_the_open_tab_runs(make_app: Callable[..., AppTest]) -> None:
    """The comparison's sections are tabs; only the open one is computed and sent (a slider
    move redraws one section), the summary above them always."""
    from rageval_dashboard import keys

    at = make_app(PAGE)
    assert [t.label for t in at.tabs] == list(keys.COMPARE_SECTIONS)
    tables = [list(el.value.columns) for el in at.dataframe]
    assert any("95% CI" in cols for cols in tables)
    assert not any("dated from" in cols or "statistic" in cols for cols in tables)
    assert "compare.focus" not in [s.key for s in at.selectbox]
    assert any("rageval-summary" in m for m in markdown(at))
    open_section(at, "Trends")
    tables = [list(el.value.columns) for el in at.dataframe]
    assert any("dated from" in cols for cols in tables)
    assert not any("95% CI" in cols for cols in tables)
    assert any("rageval-summary" in m for m in markdown(at))


def test_page_reads_each_change_in_its_direction_and_says_the_unpaired_apart(
    make_app: Callable[..., AppTest], reference: Comparison
) -> None:
    """The issue's case on the page: ContextRelevance's significant fall is "regressed", a
    fall of BestRank never is; BestRank's queries scored in one run only are said under the table
    (the means beside each delta are over the n pairs); hybrid_rerank's significantly slower
    retrieval is "higher, worse" in red, never green."""
    at = make_app(PAGE)
    assert not at.exception, [e.value for e in at.exception]
    table = frame_with(at, "95% CI").set_index(["candidate", "metric"])
    assert list(table.loc[("hybrid_rerank", "ContextRelevance"), "significant"]) == [fc.REGRESSED]
    t = reference.test("hybrid_rerank", "BestRank")
    assert t.diff < 0  # a fall of BestRank: better, marked so when significant after Holm
    marked = [fc.IMPROVED] if t.p_perm_holm < reference.options.alpha else []
    assert list(table.loc[("hybrid_rerank", "BestRank"), "significant"]) == marked
    assert t.n < min(t.n_baseline_scored, t.n_candidate_scored)
    caption = html.unescape(" ".join(c.value for c in at.caption))
    assert (
        f"BestRank, hybrid_rerank: bm25 scores {t.n_baseline_scored} of the shared queries, "
        f"hybrid_rerank {t.n_candidate_scored}; the {t.n} both score are compared"
    ) in caption
    assert "ContextRelevance, hybrid_rerank" not in caption  # both score all 360

    open_section(at, "Latency & cost")
    lat = frame_with(at, "statistic").set_index(["candidate", "stage", "statistic"])
    slower = lat.loc[("hybrid_rerank", "retrieval", "p95")]
    change = reference.ops_change("hybrid_rerank", "latency.retrieval.p95")
    assert change is not None and change.ci_low > 0  # significantly slower
    assert list(slower["significant"]) == ["▲ higher, worse"]
    assert fc.OPS_COLOURS["▲ higher, worse"] == fc.RED
    assert fc.OPS_COLOURS["▼ lower, better"] == fc.GREEN
    unmoved = lat.loc[("hybrid_rerank", "total", "p95")]  # its interval holds 0
    assert list(unmoved["significant"]) == []


def test_a_change_that_rounds_to_nothing_reads_as_none(
    make_app: Callable[..., AppTest], ref_store: Store
) -> None:
    """The open query's candidate card: a delta that prints as +0.000 has no arrow and no colour
    (it came up green and pointing up); a real change keeps its direction's arrow and colour."""
    settings = dataclasses.replace(DEFAULT)
    base = evaluate("bm25", store=ref_store, settings=settings)
    cand = evaluate("hybrid_rerank", store=ref_store, settings=settings)
    b = dict(zip(base.query_ids, base.per_query["nDCG@10"], strict=True))
    c = dict(zip(cand.query_ids, cand.per_query["nDCG@10"], strict=True))
    shared = [q for q in b if q in c and not (np.isnan(b[q]) or np.isnan(c[q]))]
    same = next(q for q in shared if f"{c[q] - b[q]:+.3f}" in ("+0.000", "-0.000"))
    better = next(q for q in shared if c[q] - b[q] > 0.01)

    def candidate_card(qid: str) -> Any:
        at = make_app(PAGE, **{"compare.query": qid})
        assert not at.exception, [e.value for e in at.exception]
        (card,) = [m for m in at.metric if m.label == "nDCG@10" and m.proto.delta]
        return card.proto

    flat = candidate_card(same)
    assert flat.direction == flat.MetricDirection.NONE
    assert flat.color == flat.MetricColor.GRAY
    up = candidate_card(better)
    assert up.direction == up.MetricDirection.UP and up.color == up.MetricColor.GREEN
