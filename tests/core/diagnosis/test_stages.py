"""Two stages: per gold item, lost at retrieval, lost at rerank, promoted by the reranker or
kept, with the first stage's ceiling and the share of it delivered; from two runs named with
--first-stage, and from an OpenInference export (its retriever and reranker stages)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import rageval as rv
from rageval_core.diagnosis import STAGE_KINDS
from tests.cli import import_files, rageval
from tests.core.diagnosis import runs

#: the gold spans: A kept (rank 1 first, 2 reranked), B promoted (15 -> 1), C lost at rerank
#: (3 -> 12), D lost at retrieval (in neither list)
A, B, C, D = runs.PASS, runs.BELOW, runs.NONE_2, runs.NONE
GOLD = [A, B, C, D]


def _record(qid: str, placed: dict[int, str]) -> dict[str, Any]:
    retrieved = [
        {"doc_id": f"{qid}-{rank}", "text": placed.get(rank, runs.filler(qid, rank))}
        for rank in range(1, 21)
    ]
    return {"query_id": qid, "retrieved": retrieved, "evidence": GOLD}


def first_stage() -> list[dict[str, Any]]:
    return [_record("q1", {1: A, 15: B, 3: C}), _record("only-first", {1: A})]


def reranked() -> list[dict[str, Any]]:
    return [_record("q1", {1: B, 2: A, 12: C})]


def _diagnose_stages(records: list[dict[str, Any]]) -> tuple[rv.Diagnosis, dict[str, int]]:
    """The diagnosis of records as "rr" against first_stage() as "ret", and its stage counts."""
    with rv.load(records, name="rr") as rr, rv.load(first_stage(), name="ret") as ret:
        d = rv.diagnose(rr, first_stage=ret)
    assert d.stages is not None
    return d, dict(d.stages.counts)


def test_each_gold_span_is_where_it_was_put() -> None:
    d, counts = _diagnose_stages(reranked())
    assert d.stages is not None
    assert [counts[kind] for kind in STAGE_KINDS] == [1, 1, 1, 1]  # lost x2, promoted, kept
    assert d.stages.ceiling == 0.75 and d.stages.delivered == pytest.approx(2 / 3)
    assert d.stages.first_stage == "ret"
    assert d.to_json()["stages"] == {
        "lost_at_retrieval": 1,
        "lost_at_rerank": 1,
        "promoted_by_rerank": 1,
        "kept": 1,
        "ceiling": 0.75,
        "delivered": pytest.approx(2 / 3),
    }


def test_the_cli_takes_the_first_stage_as_a_file(tmp_path: Path) -> None:
    rr = runs.write(tmp_path / "rr.jsonl", reranked(), "rr")
    ret = runs.write(tmp_path / "ret.jsonl", first_stage(), "ret")
    done = rageval("diagnose", str(rr), "--first-stage", str(ret), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["stages"]["promoted_by_rerank"] == 1 and out["stages"]["ceiling"] == 0.75
    assert out["settings"]["first_stage"] == "ret"
    text = rageval("diagnose", str(rr), "--first-stage", str(ret)).stdout
    assert "two stages (first stage ret), per gold item (4):" in text
    assert "ceiling (the first stage's whole list): 75.0%" in text


def _span(
    trace: str, kind: str, qid: str, docs: list[str], out: list[str] | None = None
) -> dict[str, Any]:
    attrs: dict[str, Any] = {"openinference.span.kind": kind}
    if kind == "RETRIEVER":
        attrs["input.value"] = f"question {qid}"
        attrs["metadata"] = json.dumps({"query_id": qid})
        for i, doc in enumerate(docs):
            attrs[f"retrieval.documents.{i}.document.id"] = doc
            attrs[f"retrieval.documents.{i}.document.content"] = f"text of {doc}"
            attrs[f"retrieval.documents.{i}.document.score"] = 1.0 - i / 10
    else:
        attrs["reranker.query"] = f"question {qid}"
        for i, doc in enumerate(out or []):
            attrs[f"reranker.output_documents.{i}.document.id"] = doc
            attrs[f"reranker.output_documents.{i}.document.content"] = f"text of {doc}"
            attrs[f"reranker.output_documents.{i}.document.score"] = 1.0 - i / 10
    return {
        "name": kind.lower(),
        "context": {"trace_id": trace, "span_id": f"{trace}-{kind}"},
        "kind": "SpanKind.INTERNAL",
        "parent_id": None,
        "start_time": "2024-05-01T10:00:00Z" if kind == "RETRIEVER" else "2024-05-01T10:00:00.1Z",
        "end_time": "2024-05-01T10:00:00.1Z" if kind == "RETRIEVER" else "2024-05-01T10:00:00.2Z",
        "status": {"status_code": "OK"},
        "attributes": attrs,
        "events": [],
        "links": [],
    }


@pytest.fixture
def trace_export(tmp_path: Path) -> tuple[Path, Path]:
    """An export whose retriever returns a, b, c, d and reranks to c, a (k = 2): relevant a is
    kept, c promoted (3 -> 1), d lost at rerank, z lost at retrieval; q2's e is lost at rerank."""
    spans = [
        _span("t1", "RETRIEVER", "q1", ["a", "b", "c", "d"]),
        _span("t1", "RERANKER", "q1", [], ["c", "a"]),
        _span("t2", "RETRIEVER", "q2", ["e", "f"]),
        _span("t2", "RERANKER", "q2", [], ["f"]),
    ]
    export = tmp_path / "spans.jsonl"
    export.write_text("\n".join(json.dumps(s) for s in spans) + "\n", encoding="utf-8")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq1 0 c 1\nq1 0 d 1\nq1 0 z 1\nq1 0 b 0\nq2 0 e 1\n")
    return export, qrels


EXPORT_STAGES = {
    "lost_at_retrieval": 1,
    "lost_at_rerank": 2,
    "promoted_by_rerank": 1,
    "kept": 1,
    "ceiling": 0.8,
    "delivered": 0.5,
}


def test_an_openinference_export_is_its_two_stages(trace_export: tuple[Path, Path]) -> None:
    export, qrels = trace_export
    done = rageval("diagnose", str(export), str(qrels), "--k", "2", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["run"] == "spans@reranker" and out["settings"]["first_stage"] == "spans"
    assert out["stages"] == EXPORT_STAGES


def test_a_stored_reranker_stage_finds_its_retriever(
    tmp_path: Path, trace_export: tuple[Path, Path]
) -> None:
    db = tmp_path / "s.duckdb"
    import_files(db, *trace_export)
    out = json.loads(rageval("diagnose", "spans@reranker", "--k", "2", "--json", db=db).stdout)
    assert out["stages"] == EXPORT_STAGES
    alone = json.loads(rageval("diagnose", "spans", "--k", "2", "--json", db=db).stdout)
    assert "stages" not in alone  # the retriever stage has no first stage
    with rv.load("spans@reranker", db=db) as rr:
        d = rv.diagnose(rr, k=2)
    assert d.stages is not None and d.stages.to_json() == EXPORT_STAGES


def test_an_item_the_first_stage_never_had_is_counted_apart() -> None:
    """D in the reranked top k but in no first-stage list: not kept, counted as added (the two
    runs are not two stages of one pipeline), and the text says so."""
    d, counts = _diagnose_stages([_record("q1", {1: B, 2: A, 12: C, 3: D})])
    assert d.stages is not None
    assert [counts[kind] for kind in STAGE_KINDS] == [0, 1, 1, 1]  # D is none of them
    assert d.stages.added == 1 and d.to_json()["stages"]["added_by_rerank"] == 1
    assert d.stages.ceiling == 0.75 and d.stages.reranked == 0.75
    from rageval_core.diagnosis.text import format_diagnosis

    assert "note: 1 gold items are in the reranked top 10 but in no list of ret" in (
        format_diagnosis(d)
    )
