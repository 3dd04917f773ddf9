"""Parquet Decimal columns read as numbers (issue 28, point 14): a table written by a database or
by pandas from Decimal objects imported with `TypeError: Object of type Decimal is not JSON
serializable` (exit 1)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import rageval as rv
from tests.cli import rageval

D = Decimal


def decimal_table(tokens: list[Decimal] | None = None) -> pa.Table:
    return pa.table(
        {
            "query_id": ["q1", "q1", "q2"],
            "doc_id": ["d1", "d2", "d3"],
            "rank": pa.array([D(1), D(2), D(1)], pa.decimal128(5, 0)),
            "score": pa.array([D("0.50"), D("0.25"), D("0.75")], pa.decimal128(5, 2)),
            "relevant_ids": ["d1", "d1", "d3"],
            "latency_ms.retrieval": pa.array(
                [D("12.5"), D("12.5"), D("1.25")], pa.decimal128(6, 2)
            ),
            "tokens.prompt": pa.array(tokens or [D(10), D(10), D(20)], pa.decimal128(38, 0)),
            "judge.faithful": pa.array([D("0.5"), D("0.5"), D("1")], pa.decimal256(40, 2)),
            "metadata.page": pa.array([D(3), D(4), D(5)], pa.decimal128(4, 0)),
        }
    )


def test_decimal_columns_import_as_numbers(tmp_path: Path) -> None:
    path = tmp_path / "dec.parquet"
    pq.write_table(decimal_table(), path)
    db = tmp_path / "s.duckdb"
    done = rageval("import", str(path), db=db)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "back.jsonl"
    assert rageval("export", "dec", "--to", "jsonl", "--out", str(out), db=db).returncode == 0
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()[1:]]
    assert records[0]["retrieved"] == [
        {"doc_id": "d1", "score": 0.5, "metadata": {"page": 3}},
        {"doc_id": "d2", "score": 0.25, "metadata": {"page": 4}},
    ]
    assert records[0]["latency_ms"] == {"retrieval": 12.5}
    assert records[0]["tokens"] == {"prompt": 10}
    assert records[1]["judge"] == {"faithful": 1.0}


def test_decimal_columns_of_an_arrow_table_given_to_the_api(tmp_path: Path) -> None:
    with rv.load(decimal_table()) as run:
        report = rv.evaluate(run, ["R@10"])
    assert report.metrics["R@10"] == 1.0


def test_a_decimal_integer_beyond_64_bits_is_a_field_error(tmp_path: Path) -> None:
    path = tmp_path / "dec.parquet"
    huge = D(10**30)
    pq.write_table(decimal_table([huge, huge, D(20)]), path)
    done = rageval("import", str(path), db=tmp_path / "s.duckdb")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "dec.parquet:1: tokens.prompt: expected an integer" in done.stderr
