"""The QA-pairs reader: a QA-pair test set joined with retrieval results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rageval_core.errors import ProblemLog
from rageval_core.formats import qa_pairs
from rageval_core.formats.base import HEAD_BYTES, display_path
from rageval_core.formats.native import write_native
from rageval_core.model import Chunk, Query, RunInfo
from tests.paths import REPO

DATA = REPO / "tests" / "data"
GOOD = DATA / "qa_pairs"
BAD = DATA / "bad"
PAIRS = GOOD / "pairs.jsonl"

VAT = "What is the standard VAT rate?"
VAT_SPAN = "The standard rate of VAT is 20%."
DEADLINE = "When is the filing deadline?"
SPANS2 = ("Online returns are due by 31 January.", "Paper returns are due by 31 October.")


def head(path: Path) -> bytes:
    return path.read_bytes()[:HEAD_BYTES]


def where(log: ProblemLog, severity: str = "error") -> list[str]:
    return [f"{p.file}:{p.line}: {p.field}" for p in log.problems if p.severity == severity]


def at(path: Path, line: int, field: str) -> str:
    return f"{display_path(path)}:{line}: {field}"


def test_minimal_example_gives_exact_queries() -> None:
    log = ProblemLog()
    run = qa_pairs.read(GOOD / "retrieval.json", PAIRS, log)
    queries = list(run.queries)
    assert queries == [
        Query(
            query_id="1",  # an integer qa_pair_id, as a string
            retrieved=(
                Chunk("vat_guide.pdf#3", VAT_SPAN, 0.92, {"page": 3}),  # extra key -> metadata
                Chunk("vat_guide.pdf#9", "Some goods are zero-rated.", 0.55, {}),
            ),
            query=VAT,
            evidence=(VAT_SPAN,),
            answer="The standard VAT rate is 20%.",
            reference_answer="20%",
            latency_ms={"retrieve": 41.5, "generate": 820.0},
            tokens={"prompt": 512, "completion": 18},
            tags={"source_document": "vat_guide.pdf"},
        ),
        Query(
            query_id="p2",  # joined by question text
            retrieved=(
                Chunk("17", "Paper returns are due by 31 October.", None, {"section": "2.1"}),
            ),
            query=DEADLINE,
            evidence=SPANS2,  # a list of context spans
            reference_answer="31 January",
            tags={"source_document": "deadlines.md"},
        ),
        Query(
            query_id="p3",
            retrieved=(),
            query="Who signs the return?",
            reference_answer="The taxpayer",
        ),
    ]
    assert all(q.relevance is None for q in queries)  # source_document is a tag, not qrels
    assert [q.line for q in queries] == [2, 12, 0]
    assert log.errors == []
    assert where(log, "warning") == [at(PAIRS, 3, "qa_pair_id")]
    assert run.sources == (display_path(GOOD / "retrieval.json"), display_path(PAIRS))


def test_mapping_of_ids_to_documents() -> None:
    log = ProblemLog()
    queries = list(qa_pairs.read(GOOD / "retrieval_map.json", PAIRS, log).queries)
    assert [(q.query_id, [c.doc_id for c in q.retrieved or ()]) for q in queries] == [
        ("1", ["vat_guide.pdf#3"]),
        ("p2", []),
        ("p3", []),
    ]
    assert where(log, "warning") == [at(PAIRS, 2, "qa_pair_id")]  # p2 absent; p3 is given as []
    assert log.errors == []


def test_pairs_as_a_json_array_and_results_as_json_lines(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.json"
    pairs.write_text(
        json.dumps([json.loads(line) for line in PAIRS.read_text().splitlines()], indent=2),
        encoding="utf-8",
    )
    results = tmp_path / "results.jsonl"
    results.write_text(
        "\n".join(json.dumps(e) for e in json.loads((GOOD / "retrieval.json").read_text())) + "\n",
        encoding="utf-8",
    )
    log = ProblemLog()
    from_array = list(qa_pairs.read(results, pairs, log).queries)
    assert from_array == list(qa_pairs.read(GOOD / "retrieval.json", PAIRS, ProblemLog()).queries)
    assert [q.line for q in from_array] == [1, 2, 0]
    starts = [n for n, line in enumerate(pairs.read_text().splitlines(), start=1) if line == "  {"]
    assert where(log, "warning") == [at(pairs, starts[2], "qa_pair_id")]  # the third pair's line


def test_one_entry_alone_on_one_line(tmp_path: Path) -> None:
    results = tmp_path / "one.json"
    results.write_text(
        json.dumps({"qa_pair_id": "p3", "contexts": [{"id": "x", "text": "t"}]}), encoding="utf-8"
    )
    queries = list(qa_pairs.read(results, PAIRS, ProblemLog()).queries)
    assert [[c.doc_id for c in q.retrieved or ()] for q in queries] == [[], [], ["x"]]


def test_sidecar_and_missing_companion(tmp_path: Path) -> None:
    results = tmp_path / "r.json"
    results.write_bytes((GOOD / "retrieval.json").read_bytes())
    (tmp_path / "r.json.run.json").write_text(
        json.dumps({"rageval_run": {"name": "dense"}}), encoding="utf-8"
    )
    assert qa_pairs.read(results, PAIRS, ProblemLog()).info.name == "dense"
    log = ProblemLog()
    assert list(qa_pairs.read(results, None, log).queries) == []
    assert where(log) == [at(results, 0, "pairs")]


def test_bad_pairs_and_results_report_exact_places() -> None:
    pairs, results = BAD / "qa_pairs.jsonl", BAD / "qa_retrieval.json"
    log = ProblemLog()
    queries = list(qa_pairs.read(results, pairs, log).queries)
    assert where(log) == [
        at(pairs, 2, "qa_pair_id"),  # missing required key
        at(pairs, 3, "question"),  # wrong type
        at(pairs, 4, "qa_pair_id"),  # duplicate id
        at(pairs, 5, "context"),
        at(pairs, 6, "json"),  # bad JSON line; the lines after it are still read
        at(results, 2, "results[0].score"),  # NaN
        at(results, 3, "qa_pair_id"),  # matches no pair
        at(results, 4, "question"),  # matches no pair
        at(results, 5, "results[0].id"),
        at(results, 5, "latency_ms"),
        at(results, 6, "documents"),
        at(results, 8, "contexts"),  # two lists of documents
        at(results, 9, "results[0].metadata"),  # Infinity inside metadata
        at(results, 10, "tokens.prompt"),
    ]
    messages = [str(p) for p in log.errors]
    assert messages[2].endswith('qa_pair_id: duplicate "1" (first on line 1)')
    assert messages[5].endswith("results[0].score: expected a finite number, got NaN")
    assert messages[6].endswith('"99" matches no pair in ' + display_path(pairs))
    assert messages[9].endswith("latency_ms: expected a finite number >= 0, got -1")
    # line 7 retrieves for pair "3", which has errors: not reported twice
    assert [q.query_id for q in queries] == ["1", "7"]


def test_bad_json_array_is_reported_where_it_breaks() -> None:
    log = ProblemLog()
    list(qa_pairs.read(BAD / "qa_bad_json.json", PAIRS, log).queries)
    assert where(log) == [at(BAD / "qa_bad_json.json", 4, "json")]
    assert log.errors[0].problem == "expected ',' or ']', got end of file"


def test_ambiguous_question_needs_an_id(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        '{"qa_pair_id": "a", "question": "Same?"}\n{"qa_pair_id": "b", "question": "Same?"}\n',
        encoding="utf-8",
    )
    results = tmp_path / "r.json"
    results.write_text('[{"question": "Same?", "results": []}]', encoding="utf-8")
    log = ProblemLog()
    list(qa_pairs.read(results, pairs, log).queries)
    assert where(log) == [at(results, 1, "question")]
    assert "lines 1, 2" in log.errors[0].problem


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("pairs.jsonl", "pairs"),
        ("retrieval.json", "retrieval"),
        ("retrieval_map.json", "retrieval"),
    ],
)
def test_sniff_claims_its_files(name: str, role: str) -> None:
    assert qa_pairs.sniff(GOOD / name, head(GOOD / name)) == role


def test_sniff_rejects_native_trec_and_the_other_formats(tmp_path: Path) -> None:
    query = Query("q1", (Chunk("d1", "text", 0.5),), query="What?")
    native = tmp_path / "native.jsonl"
    write_native(RunInfo(name="n"), [query], native)
    native_plain = tmp_path / "plain.jsonl"
    write_native(RunInfo(), [query], native_plain)
    trec = tmp_path / "run.trec"
    trec.write_text("q1 Q0 d1 1 0.5 bm25\n", encoding="utf-8")
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\n", encoding="utf-8")
    others = [
        DATA / "tatrag" / name
        for name in (
            "gold.json",
            "retrieval.json",
            "retrieval_lists.json",
            "retrieval_map.json",
            "details.json",
        )
    ]
    others += [DATA / "ragas" / name for name in ("rows.jsonl", "rows_ids.json", "rows.csv")]
    for path in [native, native_plain, trec, qrels, *others]:
        assert qa_pairs.sniff(path, head(path)) is None, path.name


def test_sniff_claims_results_keyed_by_id_whose_documents_have_content(tmp_path: Path) -> None:
    results = tmp_path / "r.json"
    results.write_text(
        '[{"qa_pair_id": 1, "results": [{"id": "d", "content": "t"}]}]', encoding="utf-8"
    )
    assert qa_pairs.sniff(results, head(results)) == "retrieval"
    queries = list(qa_pairs.read(results, PAIRS, ProblemLog()).queries)
    assert queries[0].retrieved == (Chunk("d", "t"),)
