"""A setting that needs new pair scores: a progress bar and Cancel, never a greyed page."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rageval_core.importing import import_paths
from rageval_core.matching.scorers import Normalisation
from rageval_core.store import Store, scores
from rageval_core.store.scores import is_scored
from tests.dashboard.conftest import REPO


@pytest.fixture()
def unscored_db(tmp_path: Path) -> Path:
    """A store holding one sample run whose evidence pairs were never scored."""
    db = tmp_path / "unscored.duckdb"
    with Store(db) as store:
        import_paths(store, [REPO / "sample_runs" / "bm25.jsonl"], score=False)
    return db


def _texts(at: AppTest) -> str:
    parts = [str(getattr(e, "value", "")) for e in (*at.info, *at.caption, *at.markdown)]
    return " ".join(parts + [str(p.proto.text) for p in at.progress])


def _until(at: AppTest, done: Callable[[AppTest], bool], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not done(at):
        assert time.monotonic() < deadline, _texts(at)
        time.sleep(0.3)
        at.run()


def test_unscored_settings_show_progress_then_the_page(
    make_app: Callable[..., AppTest], unscored_db: Path
) -> None:
    at = make_app("overview.py", db=unscored_db, wait=False)
    assert not at.exception, [e.value for e in at.exception]
    bars = at.progress
    assert bars and "queries" in _texts(at) and "Scoring bm25" in _texts(at)
    _until(at, lambda a: not a.progress)
    assert not at.exception, [e.value for e in at.exception]
    with Store(unscored_db) as store:
        assert is_scored(store, store.runs()[0].run_id, "partial", Normalisation())


def test_cancel_keeps_nothing_and_says_so(
    make_app: Callable[..., AppTest], unscored_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scores, "BLOCK_QUERIES", 2)  # many blocks: Cancel lands between two
    at = make_app("overview.py", db=unscored_db, wait=False)
    at.button(key="rescoring.cancel").click().run()
    _until(at, lambda a: "cancelled" in _texts(a))
    assert not at.progress and at.button(key="rescoring.again") is not None
    with Store(unscored_db) as store:
        assert not is_scored(store, store.runs()[0].run_id, "partial", Normalisation())
