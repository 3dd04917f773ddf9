"""The table reader: CSV and Parquet give the same Query objects as the equivalent native file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from rageval_core.errors import InputError, ProblemLog
from rageval_core.formats import native, table
from rageval_core.model import Chunk, Query, RunInfo
from tests.paths import REPO

GOOD = REPO / "tests" / "data" / "good"


def read_all(path: Path, log: ProblemLog | None = None) -> list[Query]:
    log = log if log is not None else ProblemLog()
    queries = list(table.read(path, None, log).queries)
    log.raise_if_errors()
    return queries


def native_queries(path: Path) -> list[Query]:
    log = ProblemLog()
    queries = list(native.read(path, None, log).queries)
    log.raise_if_errors()
    return queries


def csv_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "run.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_equals_the_equivalent_native_file() -> None:
    queries = read_all(GOOD / "table.csv")
    assert queries == native_queries(GOOD / "table.jsonl")
    # rows are out of rank order and q1's rows are not adjacent in the file; a quoted cell spans
    # lines 3-4, so q2's first row is on line 5
    assert [c.doc_id for c in queries[0].retrieved or ()] == ["d1", "d2", "d3"]
    assert [q.line for q in queries] == [2, 5]


def test_parquet_equals_the_equivalent_native_file(tmp_path: Path) -> None:
    # the same table typed as a data tool would write it: numbers as numbers, blanks as nulls
    strings = [
        "query_id",
        "doc_id",
        "text",
        "metadata.source",
        "query",
        "relevant_ids",
        "evidence",
        "answer",
        "tag.topic",
    ]
    arrow = pacsv.read_csv(
        GOOD / "table.csv",
        convert_options=pacsv.ConvertOptions(
            column_types={name: pa.string() for name in strings}, strings_can_be_null=True
        ),
    )
    assert arrow.schema.field("rank").type == pa.int64()
    assert arrow.schema.field("tokens.prompt").type == pa.int64()
    path = tmp_path / "run.parquet"
    pq.write_table(arrow, path)
    queries = read_all(path)
    assert queries == native_queries(GOOD / "table.jsonl")
    assert [q.line for q in queries] == [1, 3]  # data rows, not file lines


def test_parquet_list_columns_and_integer_ids(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    pq.write_table(
        pa.table(
            {
                "query_id": [7, 7, 8],
                "doc_id": [101, 102, 103],
                "score": [0.5, 0.25, None],
                "relevant_ids": [["101", "109"], ["101", "109"], []],
                "evidence": [["span one", "span two"], None, None],
                "metadata.page": [3, None, 5],
            }
        ),
        path,
    )
    assert read_all(path) == [
        Query(
            "7",
            (Chunk("101", score=0.5, metadata={"page": 3}), Chunk("102", score=0.25)),
            relevance={"101": 1, "109": 1},
            evidence=("span one", "span two"),
        ),
        Query("8", (Chunk("103", metadata={"page": 5}),), relevance={}),
    ]


def test_without_rank_file_order_ranks_and_ids_stay_text(tmp_path: Path) -> None:
    path = csv_file(tmp_path, "query_id,doc_id,score\n01,b,0.1\n1,a,0.9\n01,c,0.5\n")
    q01, q1 = read_all(path)
    assert (q01.query_id, q1.query_id) == ("01", "1")  # CSV cells are text: "01" is not 1
    assert [c.doc_id for c in q01.retrieved or ()] == ["b", "c"]


def test_rank_orders_chunks_and_gaps_are_allowed(tmp_path: Path) -> None:
    path = csv_file(tmp_path, "query_id,rank,doc_id\nq,10,c\nq,2,a\nq,5,b\n")
    (q,) = read_all(path)
    assert [c.doc_id for c in q.retrieved or ()] == ["a", "b", "c"]


def test_relevant_ids_forms_and_relevance_column(tmp_path: Path) -> None:
    path = csv_file(
        tmp_path,
        "query_id,doc_id,relevant_ids,relevance\n"
        "a,d,d1|d2 | d3,\n"
        'b,d,"[""x"",""y""]","{""y"": 2, ""z"": 0}"\n'
        "c,d,,\n",
    )
    a, b, c = read_all(path)
    assert a.relevance == {"d1": 1, "d2": 1, "d3": 1}
    assert b.relevance == {"x": 1, "y": 2, "z": 0}  # relevance wins, as in the native format
    assert c.relevance is None


def test_blank_cells_never_disagree(tmp_path: Path) -> None:
    path = csv_file(
        tmp_path, "query_id,doc_id,answer,latency_ms.total\nq,d1,,\nq,d2,yes,12\nq,d3,,12\n"
    )
    (q,) = read_all(path)
    assert q.answer == "yes" and q.latency_ms == {"total": 12.0}


def test_disagreeing_per_query_cells_name_both_lines(tmp_path: Path) -> None:
    path = csv_file(
        tmp_path, "query_id,doc_id,tag.topic,judge.f\nq,d1,tax,0.5\nq,d2,law,0.5\nq,d3,tax,0.7\n"
    )
    with pytest.raises(InputError) as exc:
        read_all(path)
    assert [str(p) for p in exc.value.problems] == [
        f'{path}:3: tag.topic: disagrees with line 2 of query "q"',
        f'{path}:4: judge.f: disagrees with line 2 of query "q"',
    ]


def test_unknown_column_warns_and_columns_are_checked(tmp_path: Path) -> None:
    log = ProblemLog()
    queries = read_all(csv_file(tmp_path, "query_id,doc_id,colour\nq,d,red\n"), log)
    assert queries == [Query("q", (Chunk("d"),))]
    assert [(p.line, p.field, p.severity) for p in log.problems] == [(1, "colour", "warning")]
    with pytest.raises(InputError) as exc:
        read_all(csv_file(tmp_path, "query_id,doc_id,doc_id,tag.\nq,d,d,x\n"))
    assert [(p.line, p.field) for p in exc.value.problems] == [(1, "doc_id"), (1, "tag.")]


def test_queries_are_lazy_and_sidecar_gives_run_facts(tmp_path: Path) -> None:
    path = csv_file(tmp_path, "query_id,doc_id,score\nq,d,x\n")
    (tmp_path / "run.csv.run.json").write_text(
        json.dumps({"name": "csv-run", "settings": {"top_k": 1}})
    )
    log = ProblemLog()
    run = table.read(path, None, log)
    assert run.info == RunInfo(name="csv-run", settings={"top_k": 1})
    assert isinstance(run.queries, Iterator)
    assert log.problems == []
    assert list(run.queries) == []
    assert [str(p) for p in log.problems] == [f'{path}:2: score: expected a finite number, got "x"']


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"query_id,doc_id\nq,d\n", "run"),
        (b'\xef\xbb\xbf"rank","doc_id","query_id"\r\n', "run"),
        (b"PAR1\x15\x04", "run"),
        (b"query_id,document\n", None),
        (b'{"query_id": "q", "doc_id": "d"}\n', None),
        (b"q1 Q0 d1 1 0.5 run\n", None),
    ],
)
def test_sniff(head: bytes, expected: str | None) -> None:
    assert table.sniff(Path("x"), head) == expected
