"""UTF-32 named as such, and numbers near the float limit (issue 28, point 17): a UTF-32 file was
called UTF-16 (FF FE 00 00 starts with UTF-16's FF FE); latencies and prices near 1.8e308 were
stored, then printed numpy overflow warnings and "cost: unknown (missing price for )". Now such
a value is a field problem at import, and a store that holds one still prints no warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rageval_core.store import Store
from tests.cli import rageval, rageval_subprocess
from tests.core.store.test_crash import make_run

SAMPLE = Path(__file__).resolve().parents[3] / "sample_runs" / "bm25.jsonl"


@pytest.mark.parametrize(
    ("codec", "named"),
    [
        ("utf-32", "UTF-32"),  # with a byte-order mark: FF FE 00 00
        ("utf-32-be", "UTF-32"),
        ("utf-32-le", "UTF-32"),  # no mark: 7B 00 00 00
        ("utf-16-be", "UTF-16"),
    ],
)
def test_wide_encodings_are_named_right(tmp_path: Path, codec: str, named: str) -> None:
    text = SAMPLE.read_text(encoding="utf-8")[:4000]
    path = tmp_path / "run.jsonl"
    path.write_bytes(text.encode(codec))
    for forced in ((), ("--format", "native")):
        done = rageval("import", str(path), *forced, db=tmp_path / "s.duckdb")
        assert done.returncode == 2
        assert f"run.jsonl:0: file: {named} text (save it as UTF-8)" in done.stderr, done.stderr


def native(tmp_path: Path, header: dict[str, object], latency: object) -> Path:
    run = make_run(tmp_path / "run.jsonl", 3, evidence=False)
    records = [json.loads(line) for line in run.read_text(encoding="utf-8").splitlines()]
    records[0] = {"rageval_run": {"name": "big", **header}}
    for record in records[2:]:  # the second query and the third
        record["latency_ms"] = {"retrieval": latency}
        record["tokens"] = {"prompt": 10, "completion": 2}
    run.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return run


@pytest.mark.parametrize(
    ("header", "latency", "field", "number"),
    [
        ({}, 1e308, "latency_ms.retrieval", "1e+308"),
        ({}, 1.7976931348623157e308, "latency_ms.retrieval", "1.79769e+308"),
        ({"prices_per_1k": {"prompt": 1e300}}, 5.0, "rageval_run.prices_per_1k.prompt", "1e+300"),
        ({"price_per_1k": 1e200}, 5.0, "rageval_run.price_per_1k", "1e+200"),
    ],
)
def test_numbers_near_the_float_limit_are_a_field_problem(
    tmp_path: Path, header: dict[str, object], latency: float, field: str, number: str
) -> None:
    run = native(tmp_path, header, latency)
    done = rageval("import", str(run), db=tmp_path / "s.duckdb")
    assert done.returncode == 2, done.stderr
    line = 1 if field.startswith("rageval_run") else 3
    assert f"run.jsonl:{line}: {field}: {number} is too large (at most 1e+100" in done.stderr


def test_a_price_near_the_float_limit_given_to_attach_is_a_usage_error(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    assert rageval("import", str(native(tmp_path, {}, 5.0)), db=db).returncode == 0
    done = rageval("attach", "big", "--prompt-price", "1e308", db=db)
    assert done.returncode == 2
    assert "prompt price: 1e+308 is too large" in done.stderr


def test_a_store_holding_huge_latencies_and_prices_prints_no_warning(tmp_path: Path) -> None:
    """A store written before import bounded them (or by another tool) still evaluates: no numpy
    warning on stderr, and the cost says why it is unknown, never an empty price name."""
    db = tmp_path / "s.duckdb"
    assert (
        rageval("import", str(native(tmp_path, {"price_per_1k": 0.5}, 5.0)), db=db).returncode == 0
    )
    other = make_run(tmp_path / "other.jsonl", 3, evidence=False, seed=1)
    assert rageval("import", str(other), db=db).returncode == 0
    with Store(db) as store:
        cur = store.cursor()
        cur.execute("UPDATE latency SET ms = 1e308")
        cur.execute("UPDATE tokens SET n = 1000000000000000000")
        cur.execute(
            "UPDATE runs SET price_prompt_per_1k = 1.7e308, price_completion_per_1k = 1e308"
        )
        cur.close()
    text = rageval_subprocess("evaluate", "big", db=db)
    assert text.returncode == 0, text.stderr
    assert text.stderr == ""  # no "RuntimeWarning: overflow encountered"
    assert "missing price for )" not in text.stdout
    assert "cost: unknown (too large for a float)" in text.stdout
    report = rageval_subprocess("evaluate", "big", "--json", db=db)
    assert report.stderr == ""
    ops = json.loads(report.stdout)["ops"]
    assert ops["cost_usd"]["total"] is None and ops["cost_usd"]["price_missing"] == []
    assert ops["latency_ms"]["retrieval"]["mean"] is None  # the sum overflows: no value
    assert ops["latency_ms"]["retrieval"]["p50"] == 1e308
    compared = rageval_subprocess("compare", "big", "other", db=db)
    assert compared.returncode == 0, compared.stderr
    assert compared.stderr == ""  # the bootstrap of latency and cost changes warned too


def test_a_qrels_label_of_hundreds_of_digits_is_a_field_error(tmp_path: Path) -> None:
    """Found by `make fuzz` at 300 cases per reader: math.isfinite(10**400) raised
    OverflowError out of the TREC reader."""
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 0.5 tag\n", encoding="utf-8")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1" + "0" * 400 + "\n", encoding="utf-8")
    done = rageval("import", str(run), str(qrels), db=tmp_path / "s.duckdb")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "qrels.txt:1: rel: label out of range (-2147483648 to 2147483647), got 1000" in (
        done.stderr
    )
