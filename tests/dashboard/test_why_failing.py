"""The failure diagnosis in the app (issue 30): the Why failing page shows exactly the reasons of
a run built so that each is known (tests/core/diagnosis/runs.py), its what-if lines equal the
core's, a bar's reason filters Queries, the drilldown opens with one sentence per missed span,
Compare's transition table is the core's, and the split check's background thread lands."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

import rageval as rv
from rageval_dashboard.components.text import escape_text
from rageval_core.diagnosis import EVIDENCE_REASONS, Diagnosis
from tests.cli import rageval
from tests.core.diagnosis import runs
from tests.core.diagnosis.test_transitions import EXPECTED as TRANSITIONS
from tests.core.diagnosis.test_transitions import candidate_records

#: the built run's reasons show in evidence mode (the sidebar's relevance)
EVIDENCE = {"relevance": "evidence", "run": "built"}


@pytest.fixture(scope="module")
def built_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with the built run and its candidate (fixed, broken, changed queries)."""
    folder = tmp_path_factory.mktemp("why")
    base = runs.write(folder / "built.jsonl", runs.evidence_records(), "built")
    cand = runs.write(folder / "cand.jsonl", candidate_records(), "cand")
    db = folder / "rageval.duckdb"
    done = rageval("import", str(base), str(cand), db=db)
    assert done.returncode == 0, done.stderr
    return db


@pytest.fixture(scope="module")
def core() -> Diagnosis:
    with rv.load(runs.evidence_records(), name="built") as run:
        return rv.diagnose(run)


def _frame(at: AppTest, column: str) -> Any:
    found = [df.value for df in at.dataframe if column in df.value.columns]
    assert found, f"no table with a {column!r} column"
    return found[0]


def _no_errors(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_page_shows_exactly_the_constructed_reasons(
    make_app: Callable[..., AppTest], built_db: Path, core: Diagnosis
) -> None:
    at = make_app("why.py", db=built_db, **EVIDENCE)
    _no_errors(at)
    frame = _frame(at, "reason")
    primary = Counter(r for q, r in runs.PRIMARY.items() if r not in ("passing", "no_gold"))
    assert dict(zip(frame["reason"], frame["queries"], strict=True)) == {
        r: primary.get(r, 0) for r in EVIDENCE_REASONS
    }
    spans = Counter(r for reasons in runs.EXPECTED.values() for r in reasons)
    assert dict(zip(frame["reason"], frame["missed spans"], strict=True)) == {
        r: spans.get(r, 0) for r in EVIDENCE_REASONS
    }
    # the bars are the same counts, each bar carrying its reason for a click
    bars = at.get("plotly_chart")[0].proto.spec
    assert '"customdata":["numbers_differ","ranked_below_k","split_across_chunks"' in bars
    assert '"y":[1,2,1,1,2]' in bars
    # the what-if lines are the core's, computed at the new settings (tests/core/diagnosis)
    lines = [m.value for m in at.markdown if m.value.startswith("- ")]
    assert lines == ["- " + escape_text(w.text(), one_line=True) for w in core.what_if]
    assert any("7 of 9 queries fail" in c.value for c in at.caption)


def test_near_miss_band_follows_the_url(make_app: Callable[..., AppTest], built_db: Path) -> None:
    """The sidebar's band is in the URL: a band of 0 leaves no near miss (q_near: not retrieved)."""
    at = make_app("why.py", db=built_db, near_miss_band="0.0", **EVIDENCE)
    _no_errors(at)
    frame = _frame(at, "reason")
    counts = dict(zip(frame["reason"], frame["queries"], strict=True))
    assert counts["near_miss"] == 0 and counts["not_retrieved"] == 3


def test_a_bars_reason_filters_the_queries_page(
    make_app: Callable[..., AppTest], built_db: Path
) -> None:
    """The link a bar's click opens (?queries.reason=...) lists that reason's queries only, and
    the reason column holds every query's primary reason."""
    at = make_app("queries.py", db=built_db, **EVIDENCE)
    _no_errors(at)
    table = _frame(at, "reason")
    assert dict(zip(table["query_id"], table["reason"], strict=True)) == {
        q: r for q, r in runs.PRIMARY.items() if q in set(table["query_id"])
    }
    at = make_app("queries.py", db=built_db, **{"queries.reason": "ranked_below_k"}, **EVIDENCE)
    _no_errors(at)
    table = _frame(at, "reason")
    assert sorted(table["query_id"]) == ["q_below", "q_tie"]
    assert set(table["reason"]) == {"ranked_below_k"}
    at.selectbox(key="queries.reason").set_value("split_across_chunks").run()
    assert list(_frame(at, "reason")["query_id"]) == ["q_split"]


@pytest.mark.parametrize(
    ("query_id", "sentence"),
    [
        ("q_below", "span 1 is covered at rank 14, below k = 10"),
        ("q_split", "span 1 is split: its first half is in chunk #2, its second in #5"),
        ("q_near", "span 1: best score 0.66, 0.04 under the threshold"),
    ],
)
def test_the_drilldown_opens_with_a_sentence_per_missed_span(
    make_app: Callable[..., AppTest], built_db: Path, query_id: str, sentence: str
) -> None:
    at = make_app("queries.py", db=built_db, q=query_id, **EVIDENCE)
    _no_errors(at)
    why = [m.value for m in at.markdown if m.value.startswith("**Why it fails**")]
    assert len(why) == 1
    assert why[0].split("\n\n", 1)[1] == "- " + escape_text(sentence, one_line=True)


def test_the_drilldown_shows_the_chunk_below_k_that_covers(
    make_app: Callable[..., AppTest], built_db: Path
) -> None:
    at = make_app("queries.py", db=built_db, q="q_below", **EVIDENCE)
    expander = [e for e in at.expander if "below k = 10 that cover" in e.label]
    assert len(expander) == 1
    cards = [m.value for m in expander[0].markdown]
    assert len(cards) == 1 and cards[0].count('class="rageval-chunk"') == 1
    assert "&#35;14 · q&#95;below&#45;d14" in cards[0] and 'data-covers="true"' in cards[0]


def test_compare_shows_the_transition_table(
    make_app: Callable[..., AppTest], built_db: Path
) -> None:
    at = make_app("compare.py", db=built_db, **{"compare.section": "Why failing"}, **EVIDENCE)
    _no_errors(at)
    matrix = _frame(at, "passing")
    got = {
        (before, after): int(matrix.loc[before, after])
        for before in matrix.index
        for after in matrix.columns
        if matrix.loc[before, after]
    }
    assert got == {cell: len(ids) for cell, (_, ids) in TRANSITIONS.items()}
    # a cell opens its queries side by side, with each run's sentence
    at.selectbox(key="compare.cell").set_value("ranked_below_k -> passing (fixed, 1)").run()
    assert at.selectbox(key="compare.cell_query").value == "q_below"
    why = [m.value for m in at.markdown if m.value.startswith("**Why, in the ")]
    assert why == [
        "**Why, in the baseline**\n\n- "
        + escape_text("span 1 is covered at rank 14, below k = 10", one_line=True),
        "**Why, in the candidate**\n\n- passing",
    ]
    assert any("Query q&#95;below" in m.value for m in at.markdown)


def test_the_split_check_runs_in_the_background(
    make_app: Callable[..., AppTest], built_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past SPLIT_INLINE_SPANS undecided spans the page first shows the diagnosis without the
    split check (q_split: a near miss) and says so; once the thread is done, the split."""
    from rageval_dashboard.state import diagnosis

    gate = threading.Event()
    job = diagnosis._whole_job

    def held(*args: Any) -> Any:
        assert gate.wait(120), "the test never let the split check go"
        return job(*args)

    monkeypatch.setattr(diagnosis, "SPLIT_INLINE_SPANS", 0)
    monkeypatch.setattr(diagnosis, "_whole_job", held)
    at = make_app("why.py", db=built_db, threshold="0.69", **EVIDENCE)  # settings not cached yet
    _no_errors(at)
    assert _counts(at)["split_across_chunks"] == 0 and _counts(at)["near_miss"] == 2
    assert any(c.value.startswith("Checking 6 spans for splits") for c in at.caption), [
        c.value for c in at.caption
    ]
    gate.set()
    for _ in range(200):
        time.sleep(0.1)
        at.run()
        if not any(c.value.startswith("Checking ") for c in at.caption):
            break
    assert _counts(at)["split_across_chunks"] == 1 and _counts(at)["near_miss"] == 1


def _counts(at: AppTest) -> dict[str, int]:
    frame = _frame(at, "reason")
    return dict(zip(frame["reason"], frame["queries"], strict=True))  # type: ignore[index]


def test_a_long_split_check_waits_for_the_button(
    make_app: Callable[..., AppTest], built_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past SPLIT_AUTO_SPANS no thread starts by itself (a check in the thread slows every
    slider move): the page offers "Check for splits"; once clicked, the split is found."""
    from rageval_dashboard.state import diagnosis

    monkeypatch.setattr(diagnosis, "SPLIT_INLINE_SPANS", 0)
    monkeypatch.setattr(diagnosis, "SPLIT_AUTO_SPANS", 0)
    at = make_app("why.py", db=built_db, threshold="0.71", **EVIDENCE)  # settings not cached yet
    _no_errors(at)
    for _ in range(3):  # polls would have started it: nothing runs until asked
        at.run()
        assert _counts(at)["split_across_chunks"] == 0
    assert any("6 missed spans could be split" in c.value for c in at.caption)
    at.button(key="why.check_splits").click().run()
    for _ in range(200):
        if _counts(at)["split_across_chunks"]:
            break
        time.sleep(0.1)
        at.run()
    assert _counts(at)["split_across_chunks"] == 1 and _counts(at)["near_miss"] == 1


def test_the_two_stage_chart_shows_a_run_name_as_text() -> None:
    """A first stage named with HTML and plotly's label syntax is text in the chart's title."""
    from rageval_dashboard.components.figures.diagnosis import stages_bar
    from rageval_core.diagnosis import Stages

    name = '<b>x</b><a href="https://example.com">y</a> %{x}'
    counts = {"lost_at_retrieval": 1, "lost_at_rerank": 2, "promoted_by_rerank": 0, "kept": 3}
    title = stages_bar(Stages(name, counts, 0.5, 0.6, 0.3, added=1), 10).layout.title.text
    assert (
        title.startswith("Two stages (first stage ") and escape_text(name, one_line=True) in title
    )
    assert "<" not in title and "%{" not in title
