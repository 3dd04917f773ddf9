"""The QA-pairs reader takes EggAI's own result keys: retrieved_chunks and retrieval_time_ms."""

from __future__ import annotations

import json
from pathlib import Path

from rageval_core.errors import ProblemLog
from rageval_core.formats import qa_pairs
from rageval_core.model import Chunk

PAIRS = [{"qa_pair_id": "QA_1", "question": "q", "answer": "a", "context": "the span"}]


def write(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def test_retrieved_chunks_and_retrieval_time(tmp_path: Path) -> None:
    results = [
        {
            "qa_pair_id": "QA_1",
            "retrieved_chunks": [{"id": "c1", "text": "the span", "score": 2.5}],
            "retrieval_time_ms": 12.5,
        }
    ]
    log = ProblemLog()
    run = qa_pairs.read(write(tmp_path / "r.json", results), write(tmp_path / "p.json", PAIRS), log)
    (query,) = list(run.queries)
    assert query.retrieved == (Chunk("c1", "the span", 2.5, {}),)
    assert query.latency_ms == {"retrieval": 12.5}
    assert not log.problems


def test_bad_retrieval_time_is_an_error(tmp_path: Path) -> None:
    results = [{"qa_pair_id": "QA_1", "retrieved_chunks": [], "retrieval_time_ms": "slow"}]
    log = ProblemLog()
    run = qa_pairs.read(write(tmp_path / "r.json", results), write(tmp_path / "p.json", PAIRS), log)
    list(run.queries)
    assert [p.field for p in log.problems if p.severity == "error"] == ["retrieval_time_ms"]


def test_an_unknown_key_is_one_warning_with_its_count(tmp_path: Path) -> None:
    pairs = [{"qa_pair_id": f"QA_{i}", "question": f"q{i}", "context": "c"} for i in range(3)]
    results = [
        {"qa_pair_id": f"QA_{i}", "retrieved_chunks": [], "total_hits": 0, "error": None}
        for i in range(3)
    ]
    log = ProblemLog()
    run = qa_pairs.read(write(tmp_path / "r.json", results), write(tmp_path / "p.json", pairs), log)
    list(run.queries)
    assert [(p.line, p.field, p.problem) for p in log.warnings] == [
        (1, "total_hits", "unknown key, ignored (3 times)"),
        (1, "error", "unknown key, ignored (3 times)"),
    ]
