"""Fixtures of the `rageval collect` tests: the retrieval server, a question file, a store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.retrieval_server import Server, serve, write_questions


@pytest.fixture
def server() -> Iterator[Server]:
    with serve() as s:
        yield s


@pytest.fixture
def questions(tmp_path: Path) -> Path:
    path = tmp_path / "questions.jsonl"
    write_questions(path, 6)
    return path


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "store.duckdb"
