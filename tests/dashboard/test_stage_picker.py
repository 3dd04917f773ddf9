"""The sidebar's Stage select: an OpenInference export's stages are sibling runs to switch between."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rageval_dashboard import keys
from tests.cli import rageval

REPO = Path(__file__).resolve().parents[2]
OI = REPO / "tests" / "data" / "openinference"


@pytest.fixture(scope="module")
def oi_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("oi") / "rageval.duckdb"
    done = rageval("import", str(OI / "spans.jsonl"), str(OI / "qrels.txt"), db=db)
    assert done.returncode == 0, done.stderr
    return db


def test_the_stage_select_switches_between_sibling_runs(
    make_app: Callable[..., AppTest], oi_db: Path
) -> None:
    at = make_app(db=oi_db, run="spans")
    assert not at.exception, [e.value for e in at.exception]
    stage = at.sidebar.selectbox(key=keys.STAGE)
    assert stage.options == ["retriever", "reranker"] and stage.value == "retriever"
    stage.set_value("reranker").run()
    assert not at.exception
    assert at.sidebar.selectbox(key=keys.RUN).value == "spans@reranker"
    assert at.sidebar.selectbox(key=keys.STAGE).value == "reranker"


def test_a_link_to_a_stage_opens_it(make_app: Callable[..., AppTest], oi_db: Path) -> None:
    at = make_app(db=oi_db, run="spans@reranker")
    assert at.sidebar.selectbox(key=keys.STAGE).value == "reranker"


def test_runs_without_stages_have_no_stage_select(make_app: Callable[..., AppTest]) -> None:
    at = make_app()
    assert not at.exception
    assert not [s for s in at.sidebar.selectbox if s.key == keys.STAGE]
