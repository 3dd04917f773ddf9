"""The default relevance mode: qrels that no retrieved chunk is in give way to gold spans."""

from __future__ import annotations

import json
from pathlib import Path

import rageval as rv
from tests.cli import rageval

GOLD = [
    {
        "query": "q1",
        "gold": [{"content": "alpha beta gamma"}, {"content": "t.csv", "type": "FILE"}],
    },
    {"query": "q2", "gold": [{"content": "delta epsilon"}]},
]


def write(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def docs(*ids: str) -> list[dict[str, str]]:
    return [{"id": i, "content": "alpha beta gamma"} for i in ids]


def test_unmatched_file_ids_default_to_evidence_and_the_header_says_so(tmp_path: Path) -> None:
    out, gold = (
        write(tmp_path / "o.json", [docs("u1"), docs("u2")]),
        write(tmp_path / "g.json", GOLD),
    )
    with rv.load([out, gold], format="tatrag") as run:
        assert rv.evaluate(run).relevance == "evidence"
    r = rageval("evaluate", str(out), str(gold), "--format", "tatrag")
    assert r.returncode == 0, r.stderr
    assert "relevance=evidence (a chunk is relevant when it covers a gold span)" in r.stdout


def test_qrels_a_chunk_is_in_keep_ids(tmp_path: Path) -> None:
    out, gold = (
        write(tmp_path / "o.json", [docs("t.csv"), docs("u2")]),
        write(tmp_path / "g.json", GOLD),
    )
    with rv.load([out, gold], format="tatrag") as run:
        assert rv.evaluate(run).relevance == "ids"
        assert rv.evaluate(run, relevance="evidence").relevance == "evidence"
    r = rageval("evaluate", str(out), str(gold), "--format", "tatrag")
    assert "relevance=ids (the run's qrels)" in r.stdout
