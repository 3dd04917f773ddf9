"""The RAGAS reader: rows as JSON Lines, a JSON array or CSV."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from rageval_core.errors import ProblemLog
from rageval_core.formats import ragas
from rageval_core.formats.base import HEAD_BYTES, display_path
from rageval_core.formats.native import write_native
from rageval_core.model import Chunk, Query, RunInfo
from tests.paths import REPO

DATA = REPO / "tests" / "data"
GOOD = DATA / "ragas"
BAD = DATA / "bad"

VAT = "What is the standard VAT rate?"
VAT_SPAN = "The standard rate of VAT is 20%."
DEADLINE = "When is the filing deadline?"


def head(path: Path) -> bytes:
    return path.read_bytes()[:HEAD_BYTES]


def where(log: ProblemLog, severity: str = "error") -> list[str]:
    return [f"{p.file}:{p.line}: {p.field}" for p in log.problems if p.severity == severity]


def at(path: Path, line: int, field: str) -> str:
    return f"{display_path(path)}:{line}: {field}"


def test_jsonl_gives_exact_queries_with_synthetic_ids() -> None:
    log = ProblemLog()
    run = ragas.read(GOOD / "rows.jsonl", None, log)
    queries = list(run.queries)
    assert queries == [
        Query(
            query_id="q1",
            retrieved=(Chunk("ctx1", VAT_SPAN), Chunk("ctx2", "Some goods are zero-rated.")),
            query=VAT,
            relevance=None,  # no reference_context_ids: no qrels
            evidence=(VAT_SPAN,),
            answer="It is 20%.",
            reference_answer="20%",
        ),
        Query(
            query_id="q2",
            retrieved=(),
            query=DEADLINE,
            evidence=("Online returns are due by 31 January.",),
            reference_answer="31 January",
        ),
    ]
    assert [q.line for q in queries] == [1, 2]
    assert log.problems == []
    assert (run.format, run.sources) == ("ragas", (display_path(GOOD / "rows.jsonl"),))


def test_json_array_with_context_ids_and_metric_columns() -> None:
    log = ProblemLog()
    queries = list(ragas.read(GOOD / "rows_ids.json", None, log).queries)
    assert queries == [
        Query(
            query_id="vat-1",
            retrieved=(Chunk("vat#3", VAT_SPAN), Chunk("vat#9", "Some goods are zero-rated.")),
            query=VAT,
            relevance={"vat#3": 1},
            evidence=(VAT_SPAN,),
            answer="It is 20%.",
            reference_answer="20%",
            judge={"context_recall": 1.0, "faithfulness": 0.5},
        )
    ]
    assert queries[0].line == 2
    assert log.problems == []


def test_csv_written_by_pandas() -> None:
    log = ProblemLog()
    queries = list(ragas.read(GOOD / "rows.csv", None, log).queries)
    assert queries == [
        Query(
            query_id="q1",
            retrieved=(Chunk("ctx1", VAT_SPAN), Chunk("ctx2", "Food isn't taxed, is it?")),
            query=VAT,
            evidence=(VAT_SPAN,),
            answer="It is 20%.\n(the standard rate)",
            reference_answer="20%",
            judge={"context_recall": 1.0},
        ),
        Query(
            query_id="q2",
            retrieved=(Chunk("ctx1", "Returns are due by 31 January,\nonline."),),
            query=DEADLINE,
            evidence=("Online returns are due by 31 January.",),
            answer=None,  # a blank cell is absent, and so is the NaN pandas wrote as blank
            reference_answer="31 January",
        ),
    ]
    assert [q.line for q in queries] == [2, 4]  # the first row's response spans two lines
    assert log.problems == []


def test_csv_agrees_with_pandas_and_literal_eval() -> None:
    """Cross-check: the independent reading of the same file (pandas + ast.literal_eval)."""
    frame = pd.read_csv(GOOD / "rows.csv", index_col=0)
    queries = list(ragas.read(GOOD / "rows.csv", None, ProblemLog()).queries)
    assert [q.query for q in queries] == list(frame["user_input"])
    for q, cell in zip(queries, frame["retrieved_contexts"], strict=True):
        assert [c.text for c in q.retrieved or ()] == ast.literal_eval(cell)
    for q, cell in zip(queries, frame["reference_contexts"], strict=True):
        assert list(q.evidence) == ast.literal_eval(cell)


def test_same_rows_in_every_layout(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (GOOD / "rows.jsonl").read_text().splitlines()]
    array = tmp_path / "rows.json"
    array.write_text(json.dumps(rows), encoding="utf-8")
    table = tmp_path / "rows.csv"
    pd.DataFrame(rows).to_csv(table, index=False)
    expected = list(ragas.read(GOOD / "rows.jsonl", None, ProblemLog()).queries)
    for path in (array, table):
        log = ProblemLog()
        assert list(ragas.read(path, None, log).queries) == expected, path.name
        assert log.problems == []


def test_jsonl_and_csv_are_streamed() -> None:
    for name in ("rows.jsonl", "rows.csv"):
        run = ragas.read(GOOD / name, None, ProblemLog())
        assert isinstance(run.queries, Iterator)  # lazy: nothing read until consumed
        assert next(iter(run.queries)).query_id == "q1"


def test_sidecar_run_facts(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes((GOOD / "rows.jsonl").read_bytes())
    (tmp_path / "rows.jsonl.run.json").write_text('{"name": "ragas-run"}', encoding="utf-8")
    assert ragas.read(rows, None, ProblemLog()).info == RunInfo(name="ragas-run")


def test_bad_jsonl_reports_exact_places() -> None:
    path = BAD / "ragas_rows.jsonl"
    log = ProblemLog()
    queries = list(ragas.read(path, None, log).queries)
    assert where(log) == [
        at(path, 2, "user_input"),  # missing required key
        at(path, 3, "retrieved_contexts"),  # wrong type
        at(path, 4, "id"),  # duplicate id
        at(path, 5, "retrieved_context_ids"),  # 1 id for 2 contexts
        at(path, 7, "json"),  # bad JSON; later lines are still read
        at(path, 8, "retrieved_contexts"),
        at(path, 9, "retrieved_contexts[0]"),
        at(path, 10, "response"),
    ]
    # a NaN metric (RAGAS writes one when a metric fails) is dropped with one warning per column
    assert where(log, "warning") == [at(path, 6, "faithfulness"), at(path, 6, "notes")]
    assert [(q.query_id, dict(q.judge)) for q in queries] == [("x", {}), ("q6", {})]
    messages = [str(p) for p in log.errors]
    assert messages[2].endswith('id: duplicate "x" (first on line 1)')
    line7 = path.read_text().splitlines()[6]
    assert messages[4].endswith(f"json: Expecting ',' delimiter (column {len(line7) + 1})")


def test_bad_csv_reports_exact_places() -> None:
    path = BAD / "ragas_rows.csv"
    log = ProblemLog()
    queries = list(ragas.read(path, None, log).queries)
    assert where(log) == [
        at(path, 3, "retrieved_contexts"),  # neither JSON nor a Python literal
        at(path, 4, "id"),  # duplicate id
        at(path, 5, "reference_contexts"),
        at(path, 6, "row"),  # too few cells
        at(path, 7, "user_input"),
        at(path, 10, "retrieved_contexts"),  # __import__('os'): never evaluated
    ]
    assert [(q.query_id, q.line) for q in queries] == [("r1", 2), ("r7", 8)]
    assert queries[1].retrieved == (Chunk("ctx1", "multi\nline"),)  # JSON with a raw newline


@pytest.mark.parametrize(
    ("content", "line", "field"),
    [
        (b"", 0, "file"),
        (b"\n\n", 0, "file"),
        (b"\xff\n", 0, "file"),
        (b"user_input,user_input\nq,[]\n", 1, "user_input"),
        (b"question,contexts\nq,[]\n", 1, "user_input"),
    ],
)
def test_unusable_files(tmp_path: Path, content: bytes, line: int, field: str) -> None:
    path = tmp_path / "rows.csv"
    path.write_bytes(content)
    log = ProblemLog()
    assert list(ragas.read(path, None, log).queries) == []
    assert where(log) == [at(path, line, field)]


@pytest.mark.parametrize("name", ["rows.jsonl", "rows_ids.json", "rows.csv"])
def test_sniff_claims_its_files(name: str) -> None:
    assert ragas.sniff(GOOD / name, head(GOOD / name)) == "rows"


def test_sniff_rejects_native_trec_and_the_other_formats(tmp_path: Path) -> None:
    query = Query("q1", (Chunk("d1", "text", 0.5),), query="What?")
    native = tmp_path / "native.jsonl"
    write_native(RunInfo(name="n"), [query], native)
    plain = tmp_path / "plain.jsonl"
    write_native(RunInfo(), [query], plain)
    trec = tmp_path / "run.trec"
    trec.write_text("q1 Q0 d1 1 0.5 bm25\n", encoding="utf-8")
    table = tmp_path / "run.csv"
    table.write_text("query_id,doc_id,rank\nq1,d1,1\n", encoding="utf-8")
    others = [
        DATA / "tatrag" / "gold.json",
        DATA / "tatrag" / "retrieval.json",
        DATA / "qa_pairs" / "pairs.jsonl",
        DATA / "qa_pairs" / "retrieval.json",
    ]
    for path in [native, plain, trec, table, *others]:
        assert ragas.sniff(path, head(path)) is None, path.name
