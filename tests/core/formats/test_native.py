"""The native reader: every field round-trips through write_native, header, sidecar, streaming."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval_core.errors import InputError, ProblemLog
from rageval_core.formats import native
from rageval_core.formats.native import query_to_json, write_native
from rageval_core.model import Chunk, Query, RunInfo
from tests.paths import REPO

GOOD = REPO / "tests" / "data" / "good"

INFO = RunInfo(
    name="bm25-k3",
    created_at="2024-05-01T12:00:00Z",
    description="BM25 baseline",
    settings={"top_k": 3, "score_threshold": 0.2, "model": "bm25"},
    price_prompt_per_1k=0.0005,
    price_completion_per_1k=0.0015,
)

#: what tests/data/good/native_full.jsonl and .json hold, written out by hand
EXPECTED = [
    Query(
        query_id="q1",
        query="What is the standard VAT rate?",
        retrieved=(
            Chunk("d1", "The standard rate of VAT is 20%.", 12.5, {"source": "vat.pdf", "page": 3}),
            Chunk("d2", "Reduced rates apply to fuel.", 9.25),
            Chunk("d3"),
        ),
        relevance={"d1": 2, "d3": 0},
        evidence=("standard rate of VAT is 20%",),
        answer="20%",
        reference_answer="The standard rate is 20%.",
        latency_ms={"retrieve": 41.5, "generate": 830.0},
        tokens={"prompt": 1834, "completion": 112},
        tags={"topic": "tax"},
        judge={"faithfulness": 0.9},
    ),
    Query(query_id="q2", query="Who audits charities?", retrieved=(), relevance={"d7": 1, "d8": 1}),
    Query(query_id="q3", retrieved=None, relevance={"d9": 1}),
    Query(query_id="q4", retrieved=(Chunk("d4", score=-1.5),)),
]


def read_all(path: Path, log: ProblemLog | None = None) -> tuple[RunInfo, list[Query]]:
    log = log if log is not None else ProblemLog()
    run = native.read(path, None, log)
    queries = list(run.queries)
    log.raise_if_errors()
    return run.info, queries


def write_lines(path: Path, *records: object) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_committed_jsonl_reads_as_written_by_hand() -> None:
    info, queries = read_all(GOOD / "native_full.jsonl")
    assert info == INFO
    assert queries == EXPECTED
    # the header is line 1 and line 3 is blank: line numbers are the file's
    assert [q.line for q in queries] == [2, 4, 5, 6]


def test_array_form_reads_the_same_with_element_lines() -> None:
    info, queries = read_all(GOOD / "native_full.json")
    assert info == INFO
    assert queries == EXPECTED
    assert [q.line for q in queries] == [5, 23, 24, 25]


def test_every_field_round_trips_through_write_native(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    queries = [
        *EXPECTED,
        Query(
            query_id="q5",
            retrieved=(Chunk("d1", metadata={"nested": {"a": [1, 2.5, None, True]}}),),
            relevance={},
            tags={"lang": "fr", "empty": ""},
            judge={"neg": -0.25},
        ),
        Query(
            query_id="q\u00e9 \u2028 line",
            query="tab\there\nnewline \u2029",
            retrieved=(),
            relevance={"x": -1},
            evidence=("one", "two"),
            latency_ms={"total": 0.0},
            tokens={"n": 0},
        ),
    ]
    assert write_native(INFO, queries, path) == len(queries)
    info, back = read_all(path)
    assert info == INFO
    assert back == queries
    assert [q.line for q in back] == list(range(2, 2 + len(queries)))


def test_array_form_with_header_element_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(
        json.dumps([{"rageval_run": {"name": "arr"}}, *map(query_to_json, EXPECTED)], indent=2)
    )
    info, back = read_all(path)
    assert info == RunInfo(name="arr")
    assert back == EXPECTED


finite = st.floats(allow_nan=False, allow_infinity=False)
key = st.text(min_size=1, max_size=8)
chunks = st.builds(
    Chunk,
    doc_id=st.text(min_size=1, max_size=10),
    text=st.none() | st.text(max_size=30),
    score=st.none() | finite,
    metadata=st.dictionaries(
        key, st.none() | st.booleans() | st.integers() | finite | st.text(max_size=5)
    ),
)
queries_st = st.builds(
    Query,
    query_id=st.text(min_size=1, max_size=10),
    retrieved=st.none() | st.lists(chunks, max_size=4).map(tuple),
    query=st.none() | st.text(max_size=30),
    relevance=st.none() | st.dictionaries(key, st.integers(-2, 3)),
    evidence=st.lists(st.text(min_size=1, max_size=20).filter(str.strip), max_size=3).map(tuple),
    answer=st.none() | st.text(max_size=20),
    reference_answer=st.none() | st.text(max_size=20),
    latency_ms=st.dictionaries(key, st.floats(0, 1e6)),
    tokens=st.dictionaries(key, st.integers(0, 10**9)),
    tags=st.dictionaries(key, st.text(max_size=8)),
    judge=st.dictionaries(key, finite),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(queries_st, max_size=5, unique_by=lambda q: q.query_id))
def test_random_queries_round_trip(
    tmp_path_factory: pytest.TempPathFactory, queries: list[Query]
) -> None:
    path = tmp_path_factory.mktemp("rt") / "run.jsonl"
    write_native(RunInfo(), queries, path)
    if not queries:
        return  # a file without queries is an error, tested below
    info, back = read_all(path)
    assert info == RunInfo()
    assert back == queries


def test_queries_are_a_lazy_stream(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "run.jsonl",
        {"query_id": "q1", "retrieved": []},
        {"query_id": "q2", "retrieved": [{"doc_id": "d", "score": "high"}]},
    )
    log = ProblemLog()
    run = native.read(path, None, log)
    assert isinstance(run.queries, Iterator)
    assert not isinstance(run.queries, (list, tuple))
    assert log.problems == []  # line 2 is not read until the stream gets there
    assert next(iter(run.queries)).query_id == "q1"
    assert list(run.queries) == []
    assert [str(p) for p in log.problems] == [
        f'{path}:2: retrieved[0].score: expected a finite number, got "high"'
    ]


def test_header_is_read_eagerly_and_name_defaults_to_none(tmp_path: Path) -> None:
    with_header = write_lines(
        tmp_path / "a.jsonl", {"rageval_run": {"name": "x"}}, {"query_id": "q", "retrieved": []}
    )
    without = write_lines(tmp_path / "b.jsonl", {"query_id": "q", "retrieved": []})
    assert native.read(with_header, None, ProblemLog()).info.name == "x"
    # the store names the run after the file stem; the reader leaves the name unset
    assert native.read(without, None, ProblemLog()).info == RunInfo()


def test_sidecar_wins_field_by_field_and_merges_settings(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "run.jsonl",
        {
            "rageval_run": {
                "name": "in-file",
                "description": "kept",
                "settings": {"top_k": 5, "model": "a"},
                "price_per_1k": 0.002,
            }
        },
        {"query_id": "q", "retrieved": []},
    )
    (tmp_path / "run.jsonl.run.json").write_text(
        json.dumps(
            {
                "rageval_run": {
                    "name": "sidecar",
                    "settings": {"model": "b", "rerank_top_n": 3},
                    "prices_per_1k": {"completion": 0.01},
                }
            }
        )
    )
    info, _ = read_all(path)
    assert info == RunInfo(
        name="sidecar",
        description="kept",
        settings={"top_k": 5, "model": "b", "rerank_top_n": 3},
        price_prompt_per_1k=0.002,
        price_completion_per_1k=0.01,
    )


def test_relevant_ids_and_relevance_merge_with_relevance_winning(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "run.jsonl",
        {
            "query_id": "a",
            "retrieved": [],
            "relevant_ids": ["d1", "d2"],
            "relevance": {"d2": 3, "d3": 0},
        },
        {"query_id": "b", "retrieved": [], "relevant_ids": []},
        {"query_id": "c", "retrieved": []},
    )
    _, (a, b, c) = read_all(path)
    assert a.relevance == {"d1": 1, "d2": 3, "d3": 0}
    assert b.relevance == {}  # judged, nothing relevant
    assert c.relevance is None  # no qrels at all


def test_friendly_conversions_and_nulls(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "run.jsonl",
        {
            "query_id": "q",
            "retrieved": None,
            "evidence": "a single span",
            "query": None,
            "relevance": None,
            "tags": {"n": 3, "x": 1.5, "flag": True, "s": "v"},
            "latency_ms": None,
        },
    )
    _, (q,) = read_all(path)
    assert q.retrieved is None
    assert q.evidence == ("a single span",)
    assert q.query is None and q.relevance is None and q.latency_ms == {}
    assert q.tags == {"n": "3", "x": "1.5", "flag": "true", "s": "v"}


def test_unknown_keys_warn_once_per_file_and_do_not_fail(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "run.jsonl",
        {"query_id": "q1", "retrieved": [{"doc_id": "d", "rank": 1}], "extra": 1},
        {"query_id": "q2", "retrieved": [{"doc_id": "d", "rank": 1}], "extra": 2},
    )
    log = ProblemLog()
    _, queries = read_all(path, log)
    assert [q.query_id for q in queries] == ["q1", "q2"]
    assert [str(p) for p in log.problems] == [
        f"{path}:1: extra: unknown key, ignored (warning)",
        f"{path}:1: retrieved[].rank: unknown key, ignored (warning)",
    ]


def test_bom_blank_lines_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(
        b'\xef\xbb\xbf{"query_id": "q1", "retrieved": []}\r\n\r\n  \r\n{"query_id": "q2", "retrieved": []}\r\n'
    )
    _, queries = read_all(path)
    assert [(q.query_id, q.line) for q in queries] == [("q1", 1), ("q2", 4)]


def test_invalid_utf8_line_is_reported_and_reading_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(
        b'{"query_id": "q1", "retrieved": []}\n{"query_id": "caf\xe9", "retrieved": []}\n'
        b'{"query_id": "q3", "retrieved": 5}\n'
    )
    with pytest.raises(InputError) as exc:
        read_all(path)
    assert [(p.line, p.field) for p in exc.value.problems] == [(2, "file"), (3, "retrieved")]


def test_nan_and_overflow_are_caught_even_though_python_json_accepts_them(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(
        '{"query_id": "q", "retrieved": [{"doc_id": "a", "score": -Infinity}, '
        '{"doc_id": "b", "score": -1e999}], "judge": {"j": NaN}}\n'
    )
    assert math.isinf(
        json.loads(path.read_text())["retrieved"][1]["score"]
    )  # the trap being tested
    with pytest.raises(InputError) as exc:
        read_all(path)
    assert [p.field for p in exc.value.problems] == [
        "retrieved[0].score",
        "retrieved[1].score",
        "judge.j",
    ]


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        ('{"query_id": "q1", "retrieved": []}\n', "run"),
        ('{"rageval_run": {"name": "x"}}\n{"query_id": "q1"', "run"),
        ('\n\n  [\n {"query_id": "q1", "retrieved": []}]', "run"),
        ('[{"rageval_run": {}}, {"query_id": "q1", "retrieved": []}]', "run"),
        ('{"query_id": "q1" "retrieved": []}\n', "run"),  # broken, but clearly meant as native
        ('[{"query_id": "q1", "text": "' + "x" * 100, None),  # cut by the head, no "retrieved"
        ('[{"query_id": "q1", "retrieved": [{"doc_id": "' + "x" * 100, "run"),
        ('{"question": "q", "contexts": ["a"], "answer": "b"}\n', None),
        ('[{"question": "q", "contexts": []}]', None),
        ("[1, 2, 3]", None),
        ('{"query_id": "q1", "doc_id": "d1"}\n', None),
        ("query_id,doc_id\nq1,d1\n", None),
        ("q1 Q0 d1 1 0.5 run\n", None),
    ],
)
def test_sniff(head: str, expected: str | None) -> None:
    assert native.sniff(Path("x"), head.encode()) == expected
