"""The TAT-RAG reader (golden set + retrieval output), and the JSON helpers of jsonarray.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.errors import ProblemLog
from rageval_core.formats import jsonarray, tatrag
from rageval_core.formats.base import HEAD_BYTES, display_path
from rageval_core.formats.native import write_native
from rageval_core.model import Chunk, Query, RunInfo
from tests.paths import REPO

DATA = REPO / "tests" / "data"
GOOD = DATA / "tatrag"
BAD = DATA / "bad"
GOLD = GOOD / "gold.json"

Q1 = "What is the company's total cost of revenue in 2019?"
Q2 = "What was total revenue between 2015 and 2019?"
Q3 = "Who chairs the board?"
FILE_ID = "TAT-RAG/csvs/a10_page_45_table_0.csv"
SPAN3 = "Richard S. Hill has served as Chairman of the Board since March 2013."


def head(path: Path) -> bytes:
    return path.read_bytes()[:HEAD_BYTES]


def where(log: ProblemLog, severity: str = "error") -> list[str]:
    """The file:line: field prefixes of the logged problems of one severity."""
    return [f"{p.file}:{p.line}: {p.field}" for p in log.problems if p.severity == severity]


def at(path: Path, line: int, field: str) -> str:
    return f"{display_path(path)}:{line}: {field}"


# -- the minimal good example ------------------------------------------------------------------


def test_minimal_example_gives_exact_queries() -> None:
    log = ProblemLog()
    run = tatrag.read(GOOD / "retrieval.json", GOLD, log)
    queries = list(run.queries)
    expected = [
        Query(
            query_id="q1",
            retrieved=(
                Chunk(
                    "c-17",
                    "Total cost of revenue $48,881 $51,896",
                    0.81,
                    {"source": "/app/data/a10-networks-inc_2019.pdf", "page": 52},
                ),
                Chunk("c-03", "Revenue by region", 0.42, {}),
            ),
            query=Q1,
            relevance=None,  # TEXT gold only: evidence, no qrels
            evidence=("Total cost of revenue $48,881",),
            reference_answer="$48,881",
            tags={"source": "/app/data/a10-networks-inc_2019.pdf"},
        ),
        Query(
            query_id="q2",
            retrieved=(
                Chunk(FILE_ID, "Revenue | 2019 | 2018", 0.77, {"file": "a10_page_45_table_0.csv"}),
            ),
            query=Q2,
            relevance={FILE_ID: 1},
            evidence=("Revenue grew in every year.",),
            answer="$1,103,862 thousand",
            reference_answer="1103862",
            latency_ms={"total": 35.5},
            tokens={"prompt": 812, "completion": 40, "total": 852},
            tags={"source": "/app/data/a10-networks-inc_2019.pdf"},
        ),
        Query(
            query_id="q3",
            retrieved=(),  # in the gold set, absent from the retrieval output
            query=Q3,
            evidence=(SPAN3,),
            reference_answer="Richard S. Hill",
            tags={"source": "/app/data/xperi-corporation_2019"},
        ),
    ]
    assert queries == expected
    assert [q.line for q in queries] == [2, 10, 0]  # where each query's retrieval starts
    assert log.errors == []
    assert where(log, "warning") == [at(GOLD, 19, "query")]
    assert run.format == "tatrag"
    assert run.sources == (display_path(GOOD / "retrieval.json"), display_path(GOLD))
    assert run.info == RunInfo()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # aligned by index: element 2 is an empty list, so q2 answered with nothing (no warning)
        ("retrieval_lists.json", {"q1": ["c-17"], "q2": [], "q3": ["c-90"]}),
        # query text -> documents, in another order than the golden set
        ("retrieval_map.json", {"q1": ["c-17", "c-03"], "q2": [], "q3": ["c-90"]}),
        ("details.json", {"q1": [], "q2": [], "q3": ["4be728ba-9ad4-5485-18ec-b7f7a61706cc"]}),
    ],
)
def test_other_retrieval_shapes_join_the_gold(name: str, expected: dict[str, list[str]]) -> None:
    log = ProblemLog()
    queries = list(tatrag.read(GOOD / name, GOLD, log).queries)
    assert {q.query_id: [c.doc_id for c in q.retrieved or ()] for q in queries} == expected
    assert [q.query for q in queries] == [Q1, Q2, Q3]  # golden-set order whatever the input order
    assert log.errors == []


def test_save_details_output_keeps_preview_and_flags() -> None:
    log = ProblemLog()
    q3 = list(tatrag.read(GOOD / "details.json", GOLD, log).queries)[2]
    assert q3.line == 7
    assert q3.retrieved == (
        Chunk(
            "4be728ba-9ad4-5485-18ec-b7f7a61706cc",
            "Richard S. Hill has served as Chairman",
            0.67,
            {
                "rank": 1,
                "is_relevant": True,
                "matched_gold_index": 0,
                "source": "/app/data/xperi-corporation_2019.pdf",
                "page": 12,
            },
        ),
    )


def test_explicit_ids_and_question_alias(tmp_path: Path) -> None:
    gold = tmp_path / "g.json"
    gold.write_text(
        json.dumps(
            [
                {"id": "tax-7", "query": "A?", "gold": []},
                {"query_id": 12, "query": "B?", "gold": [{"content": "f.csv", "type": "file"}]},
            ]
        ),
        encoding="utf-8",
    )
    retrieval = tmp_path / "r.json"
    retrieval.write_text(
        json.dumps(
            [
                {"query_id": 12, "retrieved_docs": [{"id": "f.csv", "content": "x"}]},
                {
                    "question": "A?",
                    "retrieved_docs": [],
                    "contexts": [],
                    "model": "m",
                    "reference": "r",
                },
            ]
        ),
        encoding="utf-8",
    )
    log = ProblemLog()
    queries = list(tatrag.read(retrieval, gold, log).queries)
    assert [(q.query_id, q.relevance) for q in queries] == [("tax-7", None), ("12", {"f.csv": 1})]
    assert [[c.doc_id for c in q.retrieved or ()] for q in queries] == [[], ["f.csv"]]
    assert log.problems == []  # contexts/model/reference are known TAT-RAG keys, silently unused


def test_sidecar_run_facts(tmp_path: Path) -> None:
    retrieval = tmp_path / "r.json"
    retrieval.write_bytes((GOOD / "retrieval.json").read_bytes())
    (tmp_path / "r.json.run.json").write_text(
        json.dumps({"name": "hybrid", "settings": {"top_k": 5}}), encoding="utf-8"
    )
    run = tatrag.read(retrieval, GOLD, ProblemLog())
    assert run.info == RunInfo(name="hybrid", settings={"top_k": 5})


def test_missing_companion_is_an_error() -> None:
    log = ProblemLog()
    run = tatrag.read(GOOD / "retrieval.json", None, log)
    assert list(run.queries) == []
    assert where(log) == [at(GOOD / "retrieval.json", 0, "gold")]


def test_file_gold_that_no_document_id_matches_warns(tmp_path: Path) -> None:
    retrieval = tmp_path / "r.json"
    retrieval.write_text(json.dumps([[], [{"id": "uuid-1", "content": "t"}], []]), encoding="utf-8")
    log = ProblemLog()
    list(tatrag.read(retrieval, GOLD, log).queries)
    assert at(GOLD, 0, "gold") in where(log, "warning")
    log = ProblemLog()
    list(tatrag.read(GOOD / "retrieval.json", GOLD, log).queries)  # its q2 retrieves the file
    assert at(GOLD, 0, "gold") not in where(log, "warning")


# -- bad input ---------------------------------------------------------------------------------


def test_bad_gold_and_retrieval_report_exact_places() -> None:
    gold, retrieval = BAD / "tatrag_gold.json", BAD / "tatrag_retrieval.json"
    log = ProblemLog()
    queries = list(tatrag.read(retrieval, gold, log).queries)
    assert where(log) == [
        at(gold, 3, "query"),  # missing required key
        at(gold, 4, "gold"),  # wrong type
        at(gold, 5, "gold[0].type"),
        at(gold, 7, "query_id"),  # duplicate id
        at(retrieval, 2, "documents[0].score"),  # NaN
        at(retrieval, 3, "documents[0].id"),  # a boolean
        at(retrieval, 4, "query"),  # matches no gold query
        at(retrieval, 5, "results[0].content"),
        at(retrieval, 7, "documents[0].score"),  # 1e999 overflows to Infinity
        at(retrieval, 9, "query"),  # a second retrieval for one gold query
        at(retrieval, 10, "documents"),
    ]
    # line 6 retrieves for the gold entry with errors: not reported a second time
    messages = [str(p) for p in log.errors]
    assert messages[4].endswith("documents[0].score: expected a finite number, got NaN")
    assert messages[3].endswith('query_id: duplicate "a" (first on line 6)')
    assert "matches no query in the gold set" in messages[6]
    assert where(log, "warning") == [at(gold, 7, "difficulty"), at(gold, 2, "query")]
    assert [q.query_id for q in queries] == ["q1", "a"]  # entries with errors are left out


def test_bad_json_is_reported_at_its_line() -> None:
    log = ProblemLog()
    list(tatrag.read(BAD / "tatrag_bad_json.json", GOLD, log).queries)
    assert where(log) == [at(BAD / "tatrag_bad_json.json", 3, "json")]
    assert "Expecting ',' delimiter" in log.errors[0].problem


def test_retrieval_entry_beyond_the_gold_set_is_an_error() -> None:
    log = ProblemLog()
    list(tatrag.read(BAD / "tatrag_extra.json", GOLD, log).queries)
    assert where(log) == [at(BAD / "tatrag_extra.json", 5, "documents")]
    assert log.errors[0].problem == "entry 4 has no gold query (the gold set has 3)"


@pytest.mark.parametrize(
    ("content", "problem"),
    [(b"", "empty file"), (b"  \n", "empty file"), (b"\xff\xfe[", "not valid UTF-8 (byte 0)")],
)
def test_unusable_gold_file(tmp_path: Path, content: bytes, problem: str) -> None:
    gold = tmp_path / "g.json"
    gold.write_bytes(content)
    log = ProblemLog()
    assert list(tatrag.read(GOOD / "retrieval.json", gold, log).queries) == []
    assert [(p.line, p.field, p.problem) for p in log.problems] == [(0, "file", problem)]


# -- sniffing ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("gold.json", "gold"),
        ("retrieval.json", "retrieval"),
        ("retrieval_lists.json", "retrieval"),
        ("retrieval_map.json", "retrieval"),
        ("details.json", "retrieval"),
    ],
)
def test_sniff_claims_its_files(name: str, role: str) -> None:
    assert tatrag.sniff(GOOD / name, head(GOOD / name)) == role


def test_sniff_reads_a_first_record_longer_than_the_head(tmp_path: Path) -> None:
    gold = tmp_path / "g.json"
    gold.write_text(
        json.dumps(
            [
                {
                    "query": "Q?",
                    "answer": "A",
                    "gold": [{"content": "x" * (2 * HEAD_BYTES), "type": "TEXT"}],
                }
            ],
            indent=2,
        ),
        encoding="utf-8",
    )
    assert len(head(gold)) == HEAD_BYTES
    assert tatrag.sniff(gold, head(gold)) == "gold"
    retrieval = tmp_path / "r.json"
    retrieval.write_text(
        json.dumps(
            [{"query": "Q?", "documents": [{"id": "d", "content": "y" * (2 * HEAD_BYTES)}]}]
        ),
        encoding="utf-8",
    )
    assert tatrag.sniff(retrieval, head(retrieval)) == "retrieval"


def _native_and_trec_files(tmp_path: Path) -> list[Path]:
    query = Query("q1", (Chunk("d1", "text", 0.5),), query="What?", evidence=("text",))
    with_header = tmp_path / "header.jsonl"
    write_native(RunInfo(name="n"), [query], with_header)
    plain = tmp_path / "plain.jsonl"
    write_native(RunInfo(), [query], plain)
    array = tmp_path / "array.json"
    array.write_text(json.dumps([json.loads(plain.read_text())], indent=2), encoding="utf-8")
    trec = tmp_path / "run.trec"
    trec.write_text("q1 Q0 d1 1 0.5 bm25\nq1 Q0 d2 2 0.4 bm25\n", encoding="utf-8")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n", encoding="utf-8")
    return [with_header, plain, array, trec, qrels]


def test_sniff_rejects_native_trec_and_the_other_formats(tmp_path: Path) -> None:
    others = [
        DATA / "qa_pairs" / "pairs.jsonl",
        DATA / "qa_pairs" / "retrieval.json",
        DATA / "qa_pairs" / "retrieval_map.json",
        DATA / "ragas" / "rows.jsonl",
        DATA / "ragas" / "rows_ids.json",
        DATA / "ragas" / "rows.csv",
    ]
    for path in _native_and_trec_files(tmp_path) + others:
        assert tatrag.sniff(path, head(path)) is None, path.name


# -- formats/jsonarray.py ----------------------------------------------------------------------


def test_iter_array_lines_of_a_hand_written_file() -> None:
    text = '[\n  {"a": 1},\n\n  [1,\n   2], "s",\n  3\n]\n'
    log = ProblemLog()
    assert list(jsonarray.iter_array(text, "f", log)) == [
        (2, {"a": 1}),
        (4, [1, 2]),
        (5, "s"),
        (6, 3),
    ]
    assert log.problems == []


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(json_values, max_size=6), st.integers(0, 3))
def test_iter_array_matches_json_loads_and_counts_lines(elements: list, indent: int) -> None:
    parts = [json.dumps(e, indent=indent or None) for e in elements]
    text = "[\n" + ",\n".join(parts) + "\n]"
    expected_lines, line = [], 2
    for part in parts:
        expected_lines.append(line)
        line += part.count("\n") + 1
    log = ProblemLog()
    got = list(jsonarray.iter_array(text, "f", log))
    assert [v for _, v in got] == json.loads(text)
    assert [n for n, _ in got] == expected_lines
    assert log.problems == []


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("[1, 2", 1, "expected ',' or ']', got end of file"),
        ('[\n1,\n{"a" 1}]', 3, "Expecting ':' delimiter (column 6)"),
        ("[1]\n[2]", 2, "extra data after the end of the JSON value"),
        ('{"a": 1}', 1, "expected a JSON array"),
    ],
)
def test_iter_array_syntax_errors(text: str, line: int, problem: str) -> None:
    log = ProblemLog()
    list(jsonarray.iter_array(text, "f", log))
    assert [(p.line, p.field, p.problem) for p in log.problems] == [(line, "json", problem)]


def test_iter_object_gives_member_lines_and_offsets() -> None:
    text = '{\n "x": [1,\n  2],\n "y": {"z": null}\n}'
    members = list(jsonarray.iter_object(text, "f", ProblemLog()))
    assert [(line, key, value) for line, key, value, _ in members] == [
        (2, "x", [1, 2]),
        (4, "y", {"z": None}),
    ]
    offset = members[0][3]
    assert list(jsonarray.iter_array(text, "f", ProblemLog(), start=offset, nested=True)) == [
        (2, 1),
        (3, 2),
    ]


@pytest.mark.parametrize(
    ("text", "layout"),
    [
        ("[1]", "array"),
        ('  {"a": 1}\n', "object"),
        ('{\n "a": 1\n}', "object"),
        ('{"a": 1}\n{"a": 2}\n', "lines"),
        ('{"a": 1\n{"a": 2}\n', "lines"),
        ('"x"\n"y"', "lines"),
    ],
)
def test_layout_of(text: str, layout: str) -> None:
    assert jsonarray.layout_of(text) == layout


def test_peek_first_on_every_cut_of_a_document() -> None:
    doc = {"query": "Q?", "gold": [{"content": 'a "quoted" \\ text', "n": -1.5e3}, True, None]}
    text = json.dumps([doc, {"b": []}], indent=1)
    for cut in range(len(text) + 1):
        value = jsonarray.peek_first(text[:cut].encode())
        assert value is None or isinstance(value, list)  # never raises, never invents a type
        if value and isinstance(value[0], dict) and "gold" in value[0]:
            assert value[0]["query"] == "Q?"
    assert jsonarray.peek_first(text.encode()) == [doc, {"b": []}]
    cut = text.index("quoted")
    assert jsonarray.peek_first(text[:cut].encode()) == [
        {"query": "Q?", "gold": [{"content": jsonarray.TRUNCATED}]}
    ]


@pytest.mark.parametrize(
    "text", [b"", b"q1 Q0 d1 1 0.5 run", b"user_input,x", b"[}", b"{1: 2}", b'[{"a": 1 "b": 2}]']
)
def test_peek_first_rejects_what_is_not_json(text: bytes) -> None:
    assert jsonarray.peek_first(text) is None


def test_peek_first_keeps_the_elements_before_a_typo_in_a_top_level_array() -> None:
    assert jsonarray.peek_first(b'[{"a": 1}, {"b" 2}]') == [{"a": 1}]
    assert jsonarray.peek_first(b'[{"a": 1}\n {"b": 2}]') == [{"a": 1}]  # a missing comma


def test_sniff_claims_a_file_with_a_typo_after_the_first_record() -> None:
    path = BAD / "tatrag_bad_json.json"
    assert tatrag.sniff(path, head(path)) == "retrieval"
