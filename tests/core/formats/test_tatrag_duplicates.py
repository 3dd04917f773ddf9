"""TAT-RAG output joined by query text when the golden set asks one question twice."""

from __future__ import annotations

import json
from pathlib import Path

from rageval_core.errors import ProblemLog
from rageval_core.formats import tatrag

GOLD = [
    {"query": "same question", "gold": [{"content": "first span"}]},
    {"query": "other", "gold": [{"content": "x"}]},
    {"query": "same question", "gold": [{"content": "second span"}]},
]


def write(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def entry(query: str, doc: str) -> dict[str, object]:
    return {"query": query, "documents": [{"id": doc, "content": doc}]}


def test_a_repeated_question_joins_by_position_with_a_warning(tmp_path: Path) -> None:
    out = [entry("same question", "a"), entry("other", "b"), entry("same question", "c")]
    log = ProblemLog()
    run = tatrag.read(write(tmp_path / "o.json", out), write(tmp_path / "g.json", GOLD), log)
    queries = list(run.queries)
    assert [(q.evidence, q.retrieved[0].doc_id) for q in queries if q.retrieved] == [
        (("first span",), "a"),
        (("x",), "b"),
        (("second span",), "c"),
    ]
    assert not log.errors
    assert [p.field for p in log.warnings] == ["query", "query"]
    assert "joined by position" in log.warnings[0].problem


def test_a_repeated_question_out_of_position_is_still_an_error(tmp_path: Path) -> None:
    out = [entry("other", "b"), entry("same question", "a")]
    log = ProblemLog()
    list(
        tatrag.read(write(tmp_path / "o.json", out), write(tmp_path / "g.json", GOLD), log).queries
    )
    assert any("matches several gold queries" in p.problem for p in log.errors)
