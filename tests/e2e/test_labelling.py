"""Labelling in a real browser (issue 31): grades by keyboard on the Labelling page change the
metrics exactly as the same grades given as a TREC qrels file do; the queue's order and
progress; a gold span added and removed in the drilldown; hostile names and texts stay text.

One server, on a store of its own: the sample run bm25, and the same file imported again as
bm25_qrels (the qrels route's copy). The test process reads the store through a LeasedStore,
which waits its turn while the server holds the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.e2e.conftest import REPO, import_runs, serve
from tests.e2e.harness import wait_idle
from tests.e2e.test_security import INJECTED

pytestmark = pytest.mark.e2e

RUN, COPY, K = "bm25", "bm25_qrels", 10
SAMPLE = REPO / "sample_runs" / "bm25.jsonl"
ME = "tester"
#: the labels the app counts in these tests: the run's qrels first, then people's grades
LABELS = "imported,people"
METRICS = [f"nDCG@{K}", f"P@{K}", "AP", "RR", f"R@{K}", f"Judged@{K}", "Bpref"]
#: a document no run retrieves: the qrels line of a query judged with nothing relevant
NOT_RETRIEVED = "judged-nothing-relevant"
#: what test_security's INJECTED finds on a page where no user text became markup
INERT = {"xss": "undefined", "js_links": 0, "handlers": 0, "scripts": 0, "imgs_x": 0}
HOSTILE_NAME = '<img src=x onerror="window.__xss=1">*bold* [a](javascript:alert(1))'


@pytest.fixture(scope="module")
def label_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("labelling")
    db = folder / "labels.duckdb"
    # the copy: the same records under another name, with a run setting of its own (the same
    # content twice is stored once)
    first, rest = SAMPLE.read_text(encoding="utf-8").split("\n", 1)
    header = json.loads(first)
    header["rageval_run"]["name"] = COPY
    header["rageval_run"]["settings"]["copy"] = "the qrels route"
    copy = folder / f"{COPY}.jsonl"
    copy.write_text(json.dumps(header) + "\n" + rest, encoding="utf-8")
    import_runs(db, [SAMPLE, copy])
    return db


@pytest.fixture(scope="module")
def label_url(label_db: Path) -> Iterator[str]:
    with serve(label_db) as url:
        yield url


def leased(db: Path) -> Any:
    from rageval_core.store import LeasedStore

    return LeasedStore(str(db), wait_s=60, linger_s=0)


def labels_param() -> str:
    from rageval_core.settings.schema import BY_NAME

    key = BY_NAME["labels"].url_key
    assert key is not None
    return f"{key}={quote(LABELS)}"


def metric(page: Any, label: str) -> str:
    card = page.locator("[data-testid='stMetric']").filter(has_text=label).first
    return str(card.locator("[data-testid='stMetricValue']").inner_text().strip())


def press(page: Any, key: str) -> None:
    page.locator("body").press(key)
    wait_idle(page)


def settings(labels: str) -> Any:
    from rageval_core.evaluation.report import Settings
    from rageval_core.settings.schema import DEFAULTS

    return Settings.from_values({**DEFAULTS, "k": K, "labels": labels})


def test_keyboard_grades_equal_the_qrels_route(
    label_url: str, label_db: Path, page: Any, tmp_path: Path
) -> None:
    from rageval_core import annotate
    from rageval_core.evaluation.evaluate import evaluate
    from rageval_core.evaluation.label_queue import queue
    from rageval_core.rundata import load_run_data

    store = leased(label_db)
    with store.hold():
        expected_queue = queue(store, [load_run_data(store, RUN)], K)[:3]
    page.goto(f"{label_url}/labelling?run={RUN}&annotator={ME}&{labels_param()}")
    wait_idle(page)
    assert metric(page, "Labelled") == "0"
    to_go = int(metric(page, "To go").replace(",", ""))
    judged_before = metric(page, f"Judged@{K} now")
    # the queue's first three items, outlined in turn: graded 2, 1, 2 without the mouse
    for grade in "212":
        press(page, grade)
    assert page.locator("[data-testid='stException']").count() == 0
    lines = page.locator(".rageval-grades").all_inner_texts()[:3]
    assert lines == [
        "qrels: unjudged · yours: 2 relevant",
        "qrels: unjudged · yours: 1 partly relevant",
        "qrels: unjudged · yours: 2 relevant",
    ]
    assert metric(page, "Labelled") == "3"
    assert int(metric(page, "To go").replace(",", "")) == to_go - 3
    # the fourth is outlined now, and said so
    assert page.locator("[aria-current='true']").get_attribute("id") == "rageval-chunk-3"
    assert "Chunk 4 of 10 outlined" in page.locator(".rageval-said").inner_text()
    judged_after = metric(page, f"Judged@{K} now")
    assert judged_after != judged_before

    with store.hold():
        given = annotate.grade_rows(store)
        assert [(g.query_id, g.doc_id, g.grade, g.annotator) for g in given] == sorted(
            (i.query_id, i.doc_id, float(g), ME) for i, g in zip(expected_queue, "212", strict=True)
        )
        # the qrels route: the run's own qrels and the same three grades, attached to the copy
        lines_out = []
        for q in store.iter_queries(RUN):
            for doc, rel in (q.relevance or {}).items():
                lines_out.append(f"{q.query_id} 0 {doc} {rel:g}")
            if q.relevance == {}:  # judged, nothing relevant: TREC says it with a 0 line
                lines_out.append(f"{q.query_id} 0 {NOT_RETRIEVED} 0")
        lines_out += [f"{g.query_id} 0 {g.doc_id} {g.grade:g}" for g in given]
        qrels = tmp_path / "with_grades.qrels"
        qrels.write_text("\n".join(lines_out) + "\n")
        annotate.attach_qrels(store, COPY, qrels)
        labelled = evaluate(
            load_run_data(store, RUN), METRICS, store=store, settings=settings(LABELS)
        )
        imported = evaluate(
            load_run_data(store, RUN), METRICS, store=store, settings=settings("imported")
        )
        route = evaluate(
            load_run_data(store, COPY), METRICS, store=store, settings=settings("imported")
        )
    store.close()
    assert labelled.metrics == route.metrics
    assert labelled.metrics != imported.metrics  # the three grades moved something
    assert judged_after == f"{labelled.metrics[f'Judged@{K}']:.3f}"


def test_queue_walks_unjudged_top_chunks_rank_first(
    label_url: str, label_db: Path, page: Any
) -> None:
    from rageval_core.evaluation.label_queue import queue
    from rageval_core.rundata import load_run_data

    store = leased(label_db)
    with store.hold():
        items = queue(store, [load_run_data(store, RUN)], K)
    store.close()
    page.goto(f"{label_url}/labelling?run={RUN}&annotator=another")
    wait_idle(page)
    back = page.get_by_role("button", name="Back", exact=True)
    if back.is_enabled():  # opened at the first item nobody graded: back to the queue's start
        back.click()
        wait_idle(page)
    assert back.is_disabled()
    headers = page.locator(".rageval-chunk").all_inner_texts()
    shown = items[: len(headers)]
    assert len(headers) == 10
    for header, item in zip(headers, shown, strict=True):
        assert header.startswith(f"query {item.query_id}:"), header
        assert f"#{item.rank} · {item.doc_id}" in header, header
    assert [i.rank for i in shown] == sorted(i.rank for i in shown)  # higher ranks first
    assert shown[0].rank == 1
    # next query (N) moves the outline to the first chunk of another query
    first_query = shown[0].query_id
    press(page, "n")
    said = page.locator(".rageval-said").inner_text()
    assert f"of query {first_query};" not in said and "outlined" in said


def test_a_gold_span_added_and_removed_in_the_drilldown(
    label_url: str, label_db: Path, page: Any
) -> None:
    from rageval_core import annotate

    page.goto(f"{label_url}/queries?run={RUN}&q=q0002&annotator={ME}")
    wait_idle(page)
    covered = metric(page, f"Spans covered in top {K}")
    n_before = int(covered.split("/")[1])
    picker = page.get_by_role("combobox", name="A sentence or window of the outlined chunk")
    picked = picker.input_value()  # the outlined chunk's first sentence, chosen by default
    focused_chunk = page.locator("[aria-current='true'] .rageval-chunk").inner_text()
    assert picked and picked in focused_chunk
    page.get_by_role("button", name="Add as gold span", exact=True).click()
    wait_idle(page)
    added = page.locator(".rageval-added")
    assert added.count() == 1
    assert f"(added by {ME})" in added.inner_text()
    # the span joins the gold evidence: coverage counts it, and the table says who added it
    assert int(metric(page, f"Spans covered in top {K}").split("/")[1]) == n_before + 1
    store = leased(label_db)
    with store.hold():
        spans = annotate.added_spans(store, ["q0002"])
    store.close()
    assert [(s.annotator, s.text) for s in spans] == [(ME, picked)]
    page.get_by_role("button", name="Remove", exact=True).click()
    wait_idle(page)
    assert page.locator(".rageval-added").count() == 0
    assert metric(page, f"Spans covered in top {K}") == covered


def test_hostile_annotator_names_and_texts_stay_text(
    label_url: str, hostile_url: str, page: Any
) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{label_url}/queries?run={RUN}&q=q0003&annotator={quote(HOSTILE_NAME)}")
    wait_idle(page)
    press(page, "2")  # a grade under the hostile name
    page.goto(f"{label_url}/queries?run={RUN}&q=q0003&annotator=plain")
    wait_idle(page)
    line = page.locator(".rageval-grades").first.inner_text()
    assert f"{HOSTILE_NAME} (people): 2 relevant" in line  # shown as typed
    assert page.evaluate(INJECTED) == INERT
    # the hostile run's chunks, queries and ids on the Labelling page and in the keys' words
    page.goto(f"{hostile_url}/labelling?annotator={quote(HOSTILE_NAME)}")
    wait_idle(page)
    press(page, "1")
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.evaluate(INJECTED) == INERT
    assert "<script>" in page.locator("[data-testid='stMain']").inner_text()
    assert dialogs == []


def test_agreement_section_shows_the_cores_figures_and_keeps_a_final_grade(
    label_url: str, label_db: Path, page: Any
) -> None:
    from rageval_core import annotate
    from rageval_core.evaluation.agreement import agreement
    from rageval_core.rundata import load_run_data

    # two people grade the same first three items of the queue, differently on two of them
    for name, grades in (("ann1", "210"), ("ann2", "200")):
        page.goto(f"{label_url}/labelling?run={RUN}&annotator={name}")
        wait_idle(page)
        back = page.get_by_role("button", name="Back", exact=True)
        while back.is_enabled():
            back.click()
            wait_idle(page)
        for grade in grades:
            press(page, grade)
    page.goto(f"{label_url}/labelling?run={RUN}&annotator=ann1&labelling.agreement=true")
    wait_idle(page)
    store = leased(label_db)
    with store.hold():
        found = agreement(store, [str(q) for q in load_run_data(store, RUN).query_ids])
    pair = next(p for p in found.pairs if {p.a, p.b} == {"ann1", "ann2"})
    assert pair.n >= 3 and len(found.disagreements) >= 1
    main = page.locator("[data-testid='stMain']")
    assert f"Krippendorff's alpha (ordinal): {found.alpha:.3f}" in main.inner_text()
    # the pairs table is a grid (canvas): its values, read through the page's copy of the data,
    # are compared with the core's through the disagreements count shown as text
    assert f"Items they disagree on ({len(found.disagreements):,})" in main.inner_text()
    first = found.disagreements[0]
    page.get_by_role("button", name="Keep as final", exact=True).click()
    wait_idle(page)
    with store.hold():
        final = [
            (g.query_id, g.doc_id, g.grade, g.annotator)
            for g in annotate.grade_rows(store, sources=["adjudicated"])
        ]
    store.close()
    assert final == [(first.query_id, first.doc_id, 0.0, "ann1")]  # "0 not relevant", the default
