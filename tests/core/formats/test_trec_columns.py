"""The numpy route for TREC files (formats/trec_columns.py) against the line reader.

`rageval evaluate RUN --qrels QRELS` takes this route first (rageval_core/evaluation/direct.py). Each case
requires the same queries, selection and labels as the line reader gives through Query objects,
or a refusal (None) so that the line reader names the problem: a file with any problem is never
read by this route. The quirk files are test_columnar_import.py's.
"""

from __future__ import annotations

import itertools
import math
import random
from pathlib import Path

import numpy as np
import pytest

from rageval_core.evaluation import direct
from rageval_core.errors import ProblemLog
from rageval_core.formats import trec, trec_columns
from rageval_core.metrics import ranked_labels_from_queries
from tests.core.formats.test_columnar_import import (
    TREC_CASES,
    clean_copy,
    random_trec,
    trec_slow,
    write,
)
from tests.paths import ORACLE

#: the quirk files the numpy route reads itself; DuckDB's route reads these two besides
NUMPY_TAKES = {"ties_and_signed_zero", "tabs", "no_final_newline"}
DUCKDB_ONLY = {"crlf", "non_ascii_docno"}
SETTINGS = [(1, False), (1, True), (2, False), (3, True)]


def line_reader(
    run: Path, qrels: Path, rel_level: int, complete: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[object, object, list[str]]:
    """What the line reader alone gives: arrays, selection and every problem."""
    with monkeypatch.context() as m:
        trec_slow(m)
        log = ProblemLog()
        parsed = trec.read(run, qrels, log)
        arrays, selection = ranked_labels_from_queries(parsed.queries, rel_level, complete)
    return arrays, selection, [str(p) for p in log.problems if p.severity == "error"]


def assert_same(got: tuple[object, object], expected: tuple[object, object]) -> None:
    arrays, selection = got
    want, want_selection = expected
    assert selection == want_selection
    assert arrays.query_ids == want.query_ids  # type: ignore[attr-defined]
    # judged too: Bpref, Judged@k and --judged-only read it (a route without it refused them)
    for name in ("labels", "n_ret", "n_rel", "ideal", "n_judged", "judged"):
        np.testing.assert_array_equal(getattr(arrays, name), getattr(want, name), err_msg=name)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("rel_level", "complete"), SETTINGS)
def test_generated_files_equal_the_line_reader(
    seed: int, rel_level: int, complete: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shuffled lines (a query's rows apart), ties, signed zeros, judged-only queries."""
    run, qrels = random_trec(random.Random(seed), tmp_path)
    assert trec_columns.read_pair(run, qrels) is not None  # the numpy route is taken
    got = direct.trec_arrays(run, qrels, rel_level, complete)
    arrays, selection, errors = line_reader(run, qrels, rel_level, complete, monkeypatch)
    assert got is not None and not errors
    assert_same(got, (arrays, selection))


def test_sorted_file_with_long_ties(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file already in trec_eval's order but for ties (the common case: no full sort)."""
    rng = random.Random(3)
    lines, judged = [], []
    for q in range(40):
        scores = sorted((rng.choice([0.5, 1.0, 2.0, 3.25]) for _ in range(30)), reverse=True)
        docs = rng.sample(range(500), 30)
        lines += [
            f"Q{q} Q0 d{d} {r} {s} tag" for r, (d, s) in enumerate(zip(docs, scores, strict=True))
        ]
        judged += [f"Q{q} 0 d{d} {rng.randrange(3)}" for d in rng.sample(docs, 8)]
    run = write(tmp_path / "s.run", "\n".join(lines) + "\n")
    qrels = write(tmp_path / "s.qrels", "\n".join(judged) + "\n")
    assert trec_columns.read_pair(run, qrels) is not None
    got = direct.trec_arrays(run, qrels)
    arrays, selection, _ = line_reader(run, qrels, 1, False, monkeypatch)
    assert got is not None
    assert_same(got, (arrays, selection))


@pytest.mark.parametrize("name", sorted(TREC_CASES))
def test_quirk_files(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text, _ = TREC_CASES[name]
    run = write(tmp_path / "x.run", text)
    qrels = write(tmp_path / "x.qrels", "q 0 a 1\nq 0 b 2\nother 0 a 1\n")
    assert (trec_columns.read_pair(run, qrels) is not None) is (name in NUMPY_TAKES)
    got = direct.trec_arrays(run, qrels)
    assert (got is not None) is (name in NUMPY_TAKES | DUCKDB_ONLY)
    if got is not None:
        arrays, selection, errors = line_reader(run, qrels, 1, False, monkeypatch)
        assert not errors
        assert_same(got, (arrays, selection))


@pytest.mark.parametrize(
    ("qrels_text", "taken"),
    [
        ("q 0 a 1\nq 0 b +2\n", True),
        ("q 0 a 1\nq 0 b -2\nz 0 a 0\n", True),
        ("q\t0\ta\t1\n", True),
        ("q 0 a 2147483647\nq 0 b -2147483648\n", True),
        ("q 0 a 1\nq 0 a-very-long-document-name 2\nq 0 b 1\n", True),  # keys of 2+ words
        ("q 0 a 00000007\nq 0 b -0\nq 0 c -1234567\n", True),  # labels read as one word
        ("q 0 a 1\nq 0 a 2\n", False),  # a judgement twice
        ("q 0 a 1\nq 0 b 1.5\n", False),
        ("q 0 a 1\nq 0 b 1.\n", False),
        ("q 0 a x\n", False),
        ("q 0 a +\n", False),
        ("q 0 a 1-\n", False),
        ("q 0 a 2147483648\n", False),
        ("q 0 a 99999999999\n", False),
        ("q 0 a 1 extra\n", False),
        ("q 0 a\n", False),
        ("#c\nq 0 a 1\n", False),
        ("", False),
    ],
)
def test_qrels_cases(
    qrels_text: str, taken: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = write(tmp_path / "x.run", "q Q0 a 1 2 t\nq Q0 b 2 3 t\n")
    qrels = write(tmp_path / "x.qrels", qrels_text)
    assert (trec_columns.read_pair(run, qrels) is not None) is taken
    if taken:
        got = direct.trec_arrays(run, qrels)
        arrays, selection, errors = line_reader(run, qrels, 1, False, monkeypatch)
        assert got is not None and not errors
        assert_same(got, (arrays, selection))


@pytest.mark.parametrize(
    "run_text",
    [
        "q Q0 a 1 2 t\nq Q0 a 2 3 t\n",  # a document twice in a query
        "q Q0 a 1 2 t\nr Q0 b 1 2 t\nq Q0 a 2 3 t\n",  # the same, its query's lines apart
        "q Q0 a 1 2 t\n q Q0 b 2 3 t\n",  # a leading space
        "q Q0 a 1 2 t \n",  # a trailing space
        "q Q0 a 1 2\tt\tx\n",  # seven columns
        "q Q0 a 1 1e5e5 t\n",
        "q Q0 a 1 . t\n",
        "q Q0 a 1 0x1p3 t\n",
        "q Q0 a 1 \x01 t\n",
        "q Q0 " + "d" * 300 + " 1 2 t\n",  # longer than the route's widest field
    ],
)
def test_run_refusals(run_text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = write(tmp_path / "x.run", run_text)
    qrels = write(tmp_path / "x.qrels", "q 0 a 1\n")
    assert trec_columns.read_pair(run, qrels) is None
    _, _, errors = line_reader(run, qrels, 1, False, monkeypatch)
    if errors:  # a file with a problem is read by nothing but the line reader
        assert direct.trec_arrays(run, qrels) is None


def test_key_collisions_send_files_to_the_line_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys that collide can only refuse a clean file, never give a wrong label."""
    run, qrels = random_trec(random.Random(1), tmp_path)
    assert trec_columns.read_pair(run, qrels) is not None
    monkeypatch.setattr(
        trec_columns, "_keys", lambda strings, words: np.zeros(strings.size, dtype=np.uint64)
    )
    assert trec_columns.read_pair(run, qrels) is None
    # keys unique per side but colliding across them: the string check refuses the join
    calls = iter(range(10))

    def shifted(strings: np.ndarray, words: int) -> np.ndarray:
        return np.arange(strings.size, dtype=np.uint64) + np.uint64(next(calls) % 2)

    monkeypatch.setattr(trec_columns, "_keys", shifted)
    assert trec_columns.read_pair(run, qrels) is None


def test_score_rule_equals_the_line_readers() -> None:
    """_scores accepts exactly what _NUMBER + float() accept as finite."""
    candidates = {"".join(t) for n in range(1, 6) for t in itertools.product("1.e+-", repeat=n)}
    candidates |= {"".join(t) for n in range(1, 4) for t in itertools.product("0E5-", repeat=n)}
    candidates |= {"1_0", "inf", "nan", "0x10", "1e999", "-1e999", "1d", "1,5", "+.5", "1."}
    candidates |= {".5", "00012.50", "1E+3", "-0", "2.4703282292062328e-324", "1e-400"}
    rng = random.Random(0)
    candidates |= {repr(rng.uniform(-1e9, 1e9)) for _ in range(300)}
    candidates |= {f"{rng.uniform(-10, 10):.{rng.randrange(8)}f}" for _ in range(300)}
    for value in sorted(candidates):
        raw = value.encode()
        mat = np.frombuffer(raw, dtype=np.uint8).reshape(1, len(raw)).copy()
        got = trec_columns._scores(mat)
        expected = trec._NUMBER.match(value) is not None and math.isfinite(float(value))
        assert (got is not None) is expected, value
        if got is not None:
            assert got[0] == float(value), value  # the same double
    # many at once, zero padded to the widest
    plain = sorted(v for v in candidates if trec._NUMBER.match(v) and math.isfinite(float(v)))
    width = max(map(len, plain))
    mat = np.zeros((len(plain), width), dtype=np.uint8)
    for i, value in enumerate(plain):
        mat[i, : len(value)] = list(value.encode())
    got = trec_columns._scores(mat)
    assert got is not None
    assert got.tolist() == [float(v) for v in plain]


def test_short_scores_at_once_are_floats_doubles() -> None:
    """Scores of up to 8 characters take the word-at-a-time parser: every one the same double
    as float(), -0 included, and a block with one bad score refused whole."""
    rng = random.Random(1)
    values = {"0", "-0", "+0", "-0.0", ".5", "5.", "+.5", "-.5", "00012.50", "99999999"}
    values |= {"12345678", "1234567.", ".1234567", "-1.23456", "0.000001", "9.999999"}
    for _ in range(3000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 8)))
        point = rng.randrange(len(digits) + 1)
        text = rng.choice(["", "-", "+"]) + digits[:point] + "." + digits[point:]
        values.add(text if len(text) <= 8 else text[:8].rstrip("."))
        values.add(rng.choice(["", "-"]) + digits)
    plain = sorted(v for v in values if trec._NUMBER.match(v))
    mat = np.zeros((len(plain), 8), dtype=np.uint8)
    for i, value in enumerate(plain):
        mat[i, : len(value)] = list(value.encode())
    got = trec_columns._scores(mat)
    assert got is not None
    assert [x.hex() for x in got.tolist()] == [float(v).hex() for v in plain]  # signed zeros too
    for bad in (".", "+", "-", "+.", "1..2", "1.2.", "1-2", "1+", "1,5", "1/2", "(1)"):
        one = mat.copy()
        one[len(plain) // 2] = 0
        one[len(plain) // 2, : len(bad)] = list(bad.encode())
        assert trec_columns._scores(one) is None, bad


@pytest.mark.oracle
def test_oracle_files_cleaned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """trec_eval's own test run and qrels, one space between columns."""
    run = clean_copy(ORACLE / "results.test", tmp_path / "results.test")
    qrels = clean_copy(ORACLE / "qrels.test", tmp_path / "qrels.test")
    assert trec_columns.read_pair(run, qrels) is not None
    for rel_level, complete in SETTINGS:
        got = direct.trec_arrays(run, qrels, rel_level, complete)
        arrays, selection, _ = line_reader(run, qrels, rel_level, complete, monkeypatch)
        assert got is not None
        assert_same(got, (arrays, selection))


@pytest.mark.parametrize("block_bytes", [16, 61, 256])
def test_small_blocks_equal_one_block(
    block_bytes: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines cut across blocks are joined again; problems in a late block are still seen."""
    run, qrels = random_trec(random.Random(4), tmp_path)
    whole = direct.trec_arrays(run, qrels, 2, True)
    monkeypatch.setattr(trec_columns, "_BLOCK_BYTES", block_bytes)
    got = direct.trec_arrays(run, qrels, 2, True)
    assert whole is not None and got is not None
    assert_same(got, whole)
    lines = run.read_text(encoding="utf-8").splitlines()
    for quirk in (lines[3], "# a comment", "", lines[-1].replace("tagA", "tagB")):
        bad = write(tmp_path / "late.run", "\n".join([*lines, quirk, *lines[:0]]) + "\n")
        assert trec_columns.read_pair(bad, qrels) is None, quirk
    # no final newline, the last line cut across blocks
    unended = write(tmp_path / "unended.run", "\n".join(lines))
    again = trec_columns.read_pair(unended, qrels)
    assert again is not None and again.ret_query.size == len(lines)
