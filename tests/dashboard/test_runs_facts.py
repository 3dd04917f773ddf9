"""Runs page: a TREC run without qrels is flagged; a run's qrels, date, prices and tags attached
later."""

from __future__ import annotations

import html

from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rageval_dashboard import keys
from rageval_core.annotate import run_tags
from rageval_core.store import Store
from tests.dashboard.test_runs import db, names, runs_page, tiny_run  # noqa: F401 (the fixture)

TREC_RUN = "q1 Q0 d1 1 2.0 bm25\nq1 Q0 d2 2 1.0 bm25\nq2 Q0 d3 1 3.0 bm25\n"


@pytest.fixture()
def trec_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    path = tmp_path / "lonely.trec"
    path.write_text(TREC_RUN)
    monkeypatch.setenv("RAGEVAL_IMPORT_DIRS", str(tmp_path))
    return path


def test_a_trec_run_without_qrels_is_flagged_and_its_qrels_attached_later(
    make_app: Callable[..., AppTest],
    db: Path,  # noqa: F811
    trec_file: Path,
) -> None:
    at = runs_page(make_app, db)
    at.text_area(key=keys.RUNS_PATHS).input(str(trec_file))
    at.button(key="runs.import_paths").click().run()
    assert not at.exception, [e.value for e in at.exception]
    with Store(db) as store:
        stored = [r for r in store.runs() if r.format == "trec"]
    assert len(stored) == 1 and not stored[0].has_qrels
    warned = [w.value for w in at.warning if "without qrels" in w.value]
    assert warned, [w.value for w in at.warning] + [s.value for s in at.success]
    assert "attach its qrels" in warned[0]

    # the qrels attached later, from the Runs page
    at.selectbox(key=keys.RUNS_FACT_TARGET).set_value("bm25").run()
    assert at.button(key="runs.attach_qrels").disabled  # nothing chosen yet

    # a malformed file: its own name and line, and nothing changes
    at.file_uploader(key=keys.RUNS_FACT_QRELS).set_value(
        ("labels.qrels", b"q1 0 d1 1\nq2 0 d3 high\n", "text/plain")
    )
    at.run()
    at.button(key="runs.attach_qrels").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("not attached" in e.value for e in at.error)
    assert any("labels.qrels:2: rel:" in c.value for c in at.code), [c.value for c in at.code]
    with Store(db) as store:
        assert not store.run("bm25").has_qrels

    at.file_uploader(key=keys.RUNS_FACT_QRELS).set_value(
        ("labels.qrels", b"q1 0 d1 1\nq2 0 d3 2\n", "text/plain")
    )
    at.run()
    at.button(key="runs.attach_qrels").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Qrels attached" in s.value for s in at.success)
    with Store(db) as store:
        run = store.run("bm25")
        assert run.has_qrels and "labels.qrels" in run.sources
        assert [q.relevance for q in store.iter_queries(run.run_id)] == [{"d1": 1}, {"d3": 2}]


def test_facts_are_attached_to_a_stored_run(
    make_app: Callable[..., AppTest],
    db: Path,  # noqa: F811
) -> None:
    at = runs_page(make_app, db)
    at.text_input(key=keys.RUNS_FACT_DATE).input("2026-05-01T09:30:00Z")
    at.number_input(key=keys.RUNS_FACT_PROMPT).set_value(0.25)
    at.text_area(key=keys.RUNS_FACT_TAGS).input("experiment=chunking\nowner = ana")
    at.button(key="runs.save_facts").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Facts saved" in s.value for s in at.success)
    with Store(db) as store:
        run = store.runs()[0]
    assert run.created_at == "2026-05-01T09:30:00Z"
    assert run.price_prompt_per_1k == 0.25 and run.price_completion_per_1k is None
    assert run_tags(run) == {"experiment": "chunking", "owner": "ana"}


def test_a_bad_date_is_refused_with_its_field(
    make_app: Callable[..., AppTest],
    db: Path,  # noqa: F811
) -> None:
    at = runs_page(make_app, db)
    at.text_input(key=keys.RUNS_FACT_DATE).input("last tuesday")
    at.button(key="runs.save_facts").click().run()
    assert any("not saved" in e.value for e in at.error)
    assert any("created_at" in c.value for c in at.code)
    with Store(db) as store:
        assert store.runs()[0].created_at is None


def _import_clash(make_app: Callable[..., AppTest], db: Path) -> AppTest:  # noqa: F811 (the fixture)
    """Upload a different run named "first" (the store holds one): it is stored as first-2."""
    at = runs_page(make_app, db)
    at.file_uploader(key=keys.RUNS_UPLOAD).set_value(
        ("first.jsonl", tiny_run("first", 5), "application/json")
    )
    at.run()
    at.button(key="runs.import_upload").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert names(db) == ["first", "first-2"]
    assert any("already stored" in html.unescape(w.value) for w in at.warning)
    return at


@pytest.mark.parametrize(
    ("choice", "left", "queries"),
    [("overwrite", ["first"], 5), ("keep", ["first", "first-2"], 3), ("cancel", ["first"], 3)],
)
def test_a_name_clash_asks(
    make_app: Callable[..., AppTest],
    db: Path,  # noqa: F811
    choice: str,
    left: list[str],
    queries: int,
) -> None:
    at = _import_clash(make_app, db)
    at.button(key=f"runs.clash.{choice}.first-2").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert names(db) == left
    with Store(db) as store:
        assert store.run("first").n_queries == queries  # overwrite: the new run took the name
    assert not [b for b in at.button if b.key and b.key.startswith("runs.clash.")]


def test_run_tags_show_in_the_run_list(
    make_app: Callable[..., AppTest],
    db: Path,  # noqa: F811
) -> None:
    def run_tags_shown(at: AppTest) -> str:
        frame = next(d.value for d in at.dataframe if "run tags" in d.value.columns)
        fact_run = at.selectbox(key=keys.RUNS_FACT_TARGET).value
        return str(frame[frame["name"] == fact_run].iloc[0]["run tags"])

    at = runs_page(make_app, db)
    assert run_tags_shown(at) == ""
    at.text_area(key=keys.RUNS_FACT_TAGS).input("experiment=chunking\nowner=ana")
    at.button(key="runs.save_facts").click().run()
    assert run_tags_shown(at) == "experiment=chunking, owner=ana"
