"""Threshold tuning page: the histogram, flip share, labelling pairs and "use it" (AppTest)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from rageval_dashboard.components.text import escape_text
from rageval_core.evaluation import tuning
from rageval_core.errors import ProblemLog
from rageval_core.evaluation.report import Settings
from rageval_core.formats import read_inputs
from rageval_core.matching.scorers import Normalisation
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.rundata import evidence_tensor, load_run_data, numbers_guard
from rageval_core.store import Store

REPO = Path(__file__).resolve().parents[2]
PAGE = "threshold.py"
NORM = Normalisation()


@pytest.fixture()
def bm25_db(tmp_path: Path) -> Path:
    """A fresh store holding the bm25 sample run only: labels written here stay in this test."""
    db = tmp_path / "tuning.duckdb"
    log = ProblemLog()
    parsed = read_inputs([REPO / "sample_runs" / "bm25.jsonl"], None, log)
    with Store(db) as store:
        store.import_run(parsed[0], log)
    return db


def chart(at: AppTest, key: str) -> dict[str, Any]:
    """The plotly spec of the chart with this widget key (the element id ends with the key)."""
    found = [c for c in at.get("plotly_chart") if c.proto.id.endswith(key)]
    assert len(found) == 1, [c.proto.id for c in at.get("plotly_chart")]
    return json.loads(found[0].proto.spec)  # type: ignore[no-any-return]


def values(array: Any) -> np.ndarray:
    """A plotly data array: a list, or plotly 6+'s {"dtype", "bdata"} base64 typed array."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"]))
    return np.asarray(array)


def metric(at: AppTest, label: str) -> str:
    found = [m.value for m in at.metric if m.label == label]
    assert len(found) == 1, [m.label for m in at.metric]
    return found[0]


def test_page_renders_the_histogram_and_flip_share(
    make_app: Callable[..., AppTest], bm25_db: Path
) -> None:
    at = make_app(PAGE, db=bm25_db, run="bm25")
    assert not at.exception, [e.value for e in at.exception]
    # the reference: best scores from the raw tensor (not the Coverage the page reads), a pair
    # the numbers guard (on by default) refuses at 0
    with Store(bm25_db) as store:
        data = load_run_data(store, "bm25")
        tensor = np.where(numbers_guard(store, data), evidence_tensor(store, data), 0)
        best = tuning.span_best_scores(tensor, k=10, n_spans=data.n_spans)
    flip = tuning.flip_share(best, 0.7, 0.05)
    assert flip.n_spans > 100 and 0 < flip.lost + flip.gained < flip.n_spans

    spec = chart(at, "threshold.histogram")
    bars = {d["name"]: values(d["y"]) for d in spec["data"] if d["type"] == "bar"}
    assert int(bars["covered"].sum()) == flip.covered
    assert int(bars["covered"].sum() + bars["not covered"].sum()) == int(np.isfinite(best).sum())
    lines = [s for s in spec["layout"]["shapes"] if s["type"] == "line"]
    assert [s["x0"] for s in lines] == [0.7]

    assert metric(at, "Gold spans") == f"{flip.n_spans:,}"
    assert metric(at, "Flip at ±0.05") == f"{flip.share:.1%}"
    assert metric(at, "Lost at 0.75 / gained at 0.65") == f"-{flip.lost:,} / +{flip.gained:,}"
    # the bar at 0 holds the refused pairs: the caption says so while the guard is on, not after
    assert any("Numbers must match is on" in c.value for c in at.caption)
    at = make_app(PAGE, db=bm25_db, run="bm25", numbers="false")
    assert not at.exception, [e.value for e in at.exception]
    assert not any("Numbers must match" in c.value for c in at.caption)


def test_marking_pairs_stores_labels(make_app: Callable[..., AppTest], bm25_db: Path) -> None:
    at = make_app(PAGE, db=bm25_db, run="bm25")
    assert metric(at, "Labelled pairs") == "0"
    with Store(bm25_db) as store:
        pairs = tuning.borderline_pairs(store, load_run_data(store, "bm25"), Settings(), band=0.1)
    first, second = pairs[0].key, pairs[1].key  # the page lists the closest pairs first
    at.button(key="threshold.match.{}.{}.{}".format(*first)).click().run()
    assert not at.exception
    assert metric(at, "Labelled pairs") == "1" and metric(at, "Match") == "1"
    at.button(key="threshold.nomatch.{}.{}.{}".format(*second)).click().run()
    assert metric(at, "Labelled pairs") == "2" and metric(at, "No match") == "1"
    at.button(key="threshold.nomatch.{}.{}.{}".format(*first)).click().run()  # a change of mind
    assert metric(at, "Labelled pairs") == "2" and metric(at, "No match") == "2"
    with Store(bm25_db) as store:  # same process: DuckDB shares the app's open database
        assert tuning.labels(store, "bm25", "partial", NORM).lookup() == {
            first: False,
            second: False,
        }
    at.button(key="threshold.clear.{}.{}.{}".format(*second)).click().run()
    assert metric(at, "Labelled pairs") == "1"


def test_use_it_moves_the_sidebar_threshold(
    make_app: Callable[..., AppTest], bm25_db: Path
) -> None:
    # a person who calls a pair a match exactly when its score is at least 0.74
    with Store(bm25_db) as store:
        pairs = tuning.borderline_pairs(store, load_run_data(store, "bm25"), Settings(), band=0.1)
        for p in pairs[:: max(len(pairs) // 60, 1)]:
            tuning.set_label(
                store,
                "bm25",
                *p.key,
                "partial",
                NORM,
                bool(np.float32(p.score) >= np.float32(0.74)),
            )
        labels = tuning.labels(store, "bm25", "partial", NORM)
    assert labels.n_match >= 5 and labels.n_no_match >= 5
    # F1 is 1 on every grid threshold in (highest no-match score, lowest match score]; the one
    # closest to 0.7 is the lowest of them
    top_no = labels.score[~labels.label].max()
    expected = min(t for t in np.round(np.arange(0, 101) / 100, 2) if np.float32(t) > top_no)
    assert expected != 0.7

    at = make_app(PAGE, db=bm25_db, run="bm25")
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.slider(key="threshold").value == 0.7
    assert metric(at, "Suggested threshold") == f"{expected:.2f}"
    at.button(key="threshold.use").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.slider(key="threshold").value == pytest.approx(expected)
    # the page now draws the new threshold, and the suggestion is the current value
    assert [
        s["x0"] for s in chart(at, "threshold.histogram")["layout"]["shapes"] if s["type"] == "line"
    ] == [pytest.approx(expected)]
    assert at.button(key="threshold.use").disabled


def tiny_store(path: Path, evidence: bool) -> None:
    text = "## Title\n\n<script>alert(1)</script> <b>bold</b> costs $5: [link](http://x)"
    queries = [
        Query(
            query_id="<i>q1</i>",
            query="a *query*",
            # two chunks: the sidebar's k slider needs a depth above 1
            retrieved=(Chunk("doc<1>", text, 1.0), Chunk("d2", "unrelated", 0.5)),
            evidence=("<b>bold</b> costs $5:",) if evidence else (),
        )
    ]
    with Store(path) as store:
        store.import_run(
            ParsedRun(RunInfo(name="tiny"), queries, "native", ("t.jsonl",)), ProblemLog()
        )


def test_run_without_evidence_shows_a_message(
    make_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    tiny_store(tmp_path / "noev.duckdb", evidence=False)
    at = make_app(PAGE, db=tmp_path / "noev.duckdb", run="tiny")
    assert not at.exception, [e.value for e in at.exception]
    assert any("no gold evidence" in i.value for i in at.info)
    assert not at.get("plotly_chart")


def test_pair_cards_escape_user_text(make_app: Callable[..., AppTest], tmp_path: Path) -> None:
    tiny_store(tmp_path / "evil.duckdb", evidence=True)
    # the evidence is in the chunk verbatim (score 1.0): a 0.95 threshold puts it in the band
    at = make_app(PAGE, db=tmp_path / "evil.duckdb", run="tiny", threshold="0.95")
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.slider(key="threshold").value == 0.95
    html_blocks = [
        m.value
        for m in at.markdown
        if "matched window" in m.value or "gold span" in m.value or escape_text("doc<1>") in m.value
    ]
    assert len(html_blocks) == 3
    joined = "".join(html_blocks)
    for raw in ("<script>", "<b>bold", "<i>q1", "doc<1>", "\n", "$5", "5:"):
        assert raw not in joined, raw
    assert (
        escape_text("<script>") in joined
        and "<mark" in joined
        and escape_text("<i>q1</i>") in joined
    )


def _annotations(fig: Any) -> list[dict[str, Any]]:
    return [a.to_plotly_json() for a in fig.layout.annotations]


@pytest.mark.parametrize(("current", "suggested"), [(0.7, 0.72), (0.72, 0.7), (0.7, 0.9)])
def test_agreement_figure_labels_never_overlap_and_the_axis_zooms(
    current: float, suggested: float
) -> None:
    from rageval_dashboard.components.figures import threshold as ft

    scores = np.asarray([0.55, 0.62, 0.68, 0.74, 0.81, 0.86])
    labels = np.asarray([False, False, True, False, True, True])
    curve = tuning.agreement_curve(labels, scores, tuning.THRESHOLD_GRID)
    fig = ft.agreement_figure(curve, current, suggested, scores, labels)
    lo, hi = fig.layout.xaxis.range
    # zoomed to the labelled scores and both thresholds, with the margin, not 0..1
    assert lo == pytest.approx(max(min(scores.min(), current, suggested) - ft.ZOOM_MARGIN, 0))
    assert hi == pytest.approx(min(max(scores.max(), current, suggested) + ft.ZOOM_MARGIN, 1))
    notes = _annotations(fig)
    assert len(notes) == 2
    by_text = {n["text"].split()[0]: n for n in notes}
    cur, sug = by_text["current"], by_text["suggested"]
    # labels grow away from each other: the lower threshold's to the left, the higher's right
    low, high = (cur, sug) if current < suggested else (sug, cur)
    assert low["xanchor"] == "right" and high["xanchor"] == "left"
    close = abs(suggested - current) < ft.LABEL_GAP * (hi - lo)
    assert (cur["y"] != sug["y"]) == close  # close lines: one label drops below the other
    names = [t.name for t in fig.data]
    assert names[0] == "balanced accuracy" and "MCC" in names


def test_zoomed_range_without_labels_is_the_whole_axis() -> None:
    from rageval_dashboard.components.figures import threshold as ft

    assert ft.zoomed_range([]) == [0.0, 1.0]
    assert ft.zoomed_range([0.8]) == pytest.approx([0.75, 0.85])


def test_no_suggestion_at_chance_level(make_app: Callable[..., AppTest], bm25_db: Path) -> None:
    """The issue's case: 14 labels (7 of each) no threshold separates. No "Suggested threshold",
    no "use it"; the page says so, lists the conflicting pairs and where to look; MCC's axis
    shows its whole range."""
    with Store(bm25_db) as store:
        pairs = tuning.borderline_pairs(store, load_run_data(store, "bm25"), Settings(), band=0.1)
        by_score: dict[float, Any] = {}
        for p in pairs:  # distinct scores, so the inversion below is strict
            by_score.setdefault(round(p.score, 6), p)
        chosen = sorted(by_score.values(), key=lambda p: p.score)[::3][:14]
        assert len(chosen) == 14
        # the person calls the 7 lowest scores "match" and the 7 highest "no match": every
        # threshold's balanced accuracy is at most 1/2
        for n, p in enumerate(chosen):
            tuning.set_label(store, "bm25", *p.key, "partial", NORM, n < 7)
    at = make_app(PAGE, db=bm25_db, run="bm25")
    assert not at.exception, [e.value for e in at.exception]
    assert metric(at, "Labelled pairs") == "14"
    assert "Suggested threshold" not in [m.label for m in at.metric]
    assert not [b for b in at.button if b.key == "threshold.use"]
    warning = " ".join(w.value for w in at.warning)
    assert "No threshold separates these labels better than chance" in warning
    assert "balanced accuracy 0.500" in warning
    text = " ".join(m.value for m in at.markdown)
    assert "**49 pairs of labels conflict**" in text  # 7 x 7: every match below every no match
    assert "semantic" in text and "strip punctuation" in text
    assert "Numbers must match" not in text  # on already (the default): not offered
    frame = [d.value for d in at.dataframe if "gap" in d.value.columns]
    assert len(frame) == 1 and len(frame[0]) == 49 and (frame[0]["gap"] > 0).all()
    spec = chart(at, "threshold.agreement")
    assert spec["layout"]["yaxis"]["range"][0] <= -1 and spec["layout"]["yaxis"]["range"][1] >= 1
    assert not [s for s in spec["layout"]["shapes"] if s.get("line", {}).get("color") == "#2ca02c"]
