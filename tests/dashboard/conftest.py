"""AppTest fixtures: a store with the three sample runs, and the app pointed at it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.cli import rageval

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "rageval_dashboard" / "app.py"


@pytest.fixture(scope="session")
def app_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store file holding the three sample runs (imported with the real CLI)."""
    db = tmp_path_factory.mktemp("dash") / "rageval.duckdb"
    samples = sorted(str(p) for p in (REPO / "sample_runs").glob("*.jsonl"))
    assert len(samples) == 3, "sample_runs/ must hold the three sample runs"
    done = rageval("import", *samples, db=db)
    assert done.returncode == 0, done.stderr
    return db


@pytest.fixture()
def make_app(app_db: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., AppTest]]:
    """make_app(page=None, db=None, **query_params) -> an AppTest that has run once.

    page: a file under app_pages/ (e.g. "queries.py"); query params preset the sidebar;
    wait=False returns while new pair scores are still being computed (the progress bar shows).
    """

    def make(
        page: str | None = None, db: Path | None = None, wait: bool = True, **params: str
    ) -> AppTest:
        monkeypatch.setenv("RAGEVAL_DB", str(db or app_db))
        at = AppTest.from_file(str(APP), default_timeout=120)
        for key, value in params.items():
            at.query_params[key] = value
        at.run()
        if page is not None:
            at.switch_page(f"app_pages/{page}")
            at.run()
        if wait:  # settings that need new pair scores show a progress bar first
            wait_for_scores(at)
        return at

    yield make


def url_param(at: AppTest, key: str) -> str | None:
    """The URL's value for key as the app set it (AppTest gives a one-item list before 1.64)."""
    value = at.query_params.get(key)
    if isinstance(value, list):
        assert len(value) == 1, f"{key} holds {value}"
        return str(value[0])
    return value


def wait_for_scores(at: AppTest, timeout_s: float = 120) -> None:
    """Rerun the app until no page shows the rescoring progress bar (new pair scores are
    computed in a background thread, jobs/rescoring.py), failing after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while at.progress:
        assert time.monotonic() < deadline, "the pair scores were not in after the timeout"
        time.sleep(0.2)
        at.run()
    failed = [e.value for e in at.error if "Scoring failed" in str(e.value)]
    assert not failed, failed
