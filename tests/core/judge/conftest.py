"""A fake OpenAI-compatible judge on 127.0.0.1 per test, and a store holding the judged run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import import_files
from tests.fakellm import FakeServer
from tests.paths import REPO

RUN_FILE = REPO / "tests" / "data" / "judge" / "judged_run.jsonl"
#: what the fake judge says of faithfulness, by question (the rest: supported)
FAITHFULNESS = {
    "Who audits charities?": "contradicted",
    "What is the VAT registration threshold?": "insufficient",
}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as s:
        s.state.faithfulness = dict(FAITHFULNESS)
        yield s


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "store.duckdb"
    import_files(path, RUN_FILE)
    return path
