"""The column route (no Query objects) against the query route it stands in for.

Every case imports the same file twice, once as the reader offers it (the column route when the
file is clean) and once with the column route removed (the line reader alone), and requires the
same rows, the same content hash, the same problems. Separate tests check the route really is
taken on clean files and really is left on everything else.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from rageval_core.errors import InputError, Problem, ProblemLog
from rageval_core.formats import native, read_inputs, trec
from rageval_core.metrics import ranked_labels_from_queries
from rageval_core.model import Chunk, ParsedRun, Query, RunInfo
from rageval_core.store import Store
from tests.paths import ORACLE, REPO
from rageval_core.store import store as store_module
from rageval_core.columns import BATCH_SCHEMAS, ColumnBatch, UseQueries
from rageval_core.store.rows import ContentHasher, batches_from_queries, prefetch

ROOT = REPO
DATA = ROOT / "tests" / "data"
NATIVE_GOOD = [*sorted((ROOT / "sample_runs").glob("*.jsonl")), DATA / "good" / "native_full.jsonl"]
NATIVE_BAD = sorted((DATA / "bad").glob("native_*.jsonl"))


# --- helpers -------------------------------------------------------------------------------------


def import_both(paths: list[Path]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(fast, slow) outcomes of importing paths: rows, hash, problems, or the InputError's problems."""
    outcomes = []
    for keep_columns in (True, False):
        log = ProblemLog()
        parsed = read_inputs(paths, None, log)[0]
        if not keep_columns:
            parsed = dataclasses.replace(parsed, columns=None)
        outcomes.append(store_outcome(parsed, log))
    return outcomes[0], outcomes[1]


def store_outcome(parsed: ParsedRun, log: ProblemLog) -> dict[str, Any]:
    with Store(":memory:") as store:
        try:
            result = store.import_run(parsed, log)
        except InputError as e:
            return {"problems": [str(p) for p in e.problems], "counts": store.table_counts()}
        return {
            "rows": store.table_rows(result.run),
            "hash": result.run.content_hash,
            "problems": [str(p) for p in result.warnings],
            "record": dataclasses.replace(result.run, run_id=0, imported_at=""),
        }


def column_route_taken(parsed: ParsedRun) -> bool:
    assert parsed.columns is not None
    try:
        for _ in parsed.columns:
            pass
    except UseQueries:
        return False
    return True


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


def native_line(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def random_native_run(rng: random.Random, n: int) -> str:
    """Records using every field, with the shapes the reader allows (ints, nulls, empties ...)."""
    lines = [native_line({"rageval_run": {"name": "gen", "settings": {"k": 3}}})]
    for i in range(n):
        depth = rng.choice([0, 1, 3, 5])
        chunks: list[dict[str, Any]] = []
        for r in range(depth):
            chunk: dict[str, Any] = {"doc_id": f"d{rng.randrange(50)}-{r}"}
            if rng.random() < 0.8:
                chunk["text"] = rng.choice(["", "plain text", "ünïcode \u2028 line", 'a\nb"c'])
            if rng.random() < 0.8:
                chunk["score"] = rng.choice([1, -2, 0.5, -0.0, 1e300, 12.0, rng.random()])
            if rng.random() < 0.2:
                chunk["metadata"] = rng.choice([{}, {"page": 2, "b": [1, 2.5, None]}, None])
            chunks.append(chunk)
        obj: dict[str, Any] = {
            "query_id": f"q{i}",
            "retrieved": chunks if rng.random() < 0.9 else None,
        }
        if rng.random() < 0.7:
            obj["query"] = rng.choice(["what?", "", None])
        pick = rng.random()
        if pick < 0.3:
            obj["relevant_ids"] = [f"d{j}" for j in range(rng.randrange(3))]
        elif pick < 0.6:
            obj["relevance"] = {f"d{j}": rng.choice([0, 1, 2, -1]) for j in range(rng.randrange(3))}
        if rng.random() < 0.5:
            obj["evidence"] = rng.choice(["one span", ["a", "b c"], []])
        if rng.random() < 0.5:
            obj["latency_ms"] = {"retrieve": rng.choice([0, 12, 3.5]), "generate": 100.25}
        if rng.random() < 0.5:
            obj["tokens"] = {"prompt": rng.randrange(1000), "completion": 0}
        if rng.random() < 0.5:
            obj["tags"] = {"topic": rng.choice(["tax", "law"]), "n": rng.choice([1, 2.5, True])}
        if rng.random() < 0.3:
            obj["judge"] = {"faithful": rng.choice([0.5, 1, -2])}
        for key in ("answer", "reference_answer"):
            if rng.random() < 0.3:
                obj[key] = rng.choice(["yes", "", None])
        lines.append(native_line(obj))
    return "".join(lines)


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Column batches of a few lines, so a file spans many batches."""
    monkeypatch.setattr(native, "COLUMN_BLOCK_BYTES", 300)


# --- native JSONL --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", NATIVE_GOOD, ids=lambda p: p.name)
def test_native_good_files_take_the_column_route(path: Path) -> None:
    assert column_route_taken(native.read(path, None, ProblemLog()))
    fast, slow = import_both([path])
    assert "rows" in fast and fast == slow


@pytest.mark.parametrize("seed", range(6))
def test_native_generated_runs_equal_the_query_route(
    seed: int, tmp_path: Path, small_blocks: None
) -> None:
    path = write(tmp_path / "gen.jsonl", random_native_run(random.Random(seed), 40))
    assert column_route_taken(native.read(path, None, ProblemLog()))
    fast, slow = import_both([path])
    assert "rows" in fast and fast == slow
    assert fast["record"].n_queries == 40


@pytest.mark.parametrize("path", NATIVE_BAD, ids=lambda p: p.name)
def test_native_bad_files_leave_the_column_route_and_report_exactly(path: Path) -> None:
    log = ProblemLog()
    parsed = native.read(path, None, log)
    if parsed.columns is not None and not log.errors:  # (a bad header is reported by read())
        assert not column_route_taken(parsed)
    fast, slow = import_both([path])
    assert fast == slow


QUIRKS = {
    # each is read without error by the line reader but must not take the column route as is
    "unknown_key": ({"query_id": "q", "retrieved": [], "extra": 1}, True),
    "chunk_unknown_key": ({"query_id": "q", "retrieved": [{"doc_id": "d", "x": 1}]}, True),
    "both_relevance_forms": (
        {"query_id": "q", "retrieved": [], "relevant_ids": ["a"], "relevance": {"a": 2, "b": 1}},
        False,
    ),
    "metadata": (
        {"query_id": "q", "retrieved": [{"doc_id": "d", "metadata": {"z": 1, "a": [1.5]}}]},
        False,
    ),
    "int_scores": (
        {
            "query_id": "q",
            "retrieved": [{"doc_id": "d", "score": 3}, {"doc_id": "e", "score": 2**40}],
        },
        False,
    ),
    "evidence_string": ({"query_id": "q", "retrieved": [], "evidence": "span"}, False),
    "tag_number": ({"query_id": "q", "retrieved": [], "tags": {"n": 1.5, "b": False}}, False),
    # errors
    "bool_score": ({"query_id": "q", "retrieved": [{"doc_id": "d", "score": True}]}, True),
    "blank_evidence": ({"query_id": "q", "retrieved": [], "evidence": ["\u3000\xa0"]}, True),
    "empty_doc_id": ({"query_id": "q", "retrieved": [{"doc_id": ""}]}, True),
    "huge_score": ({"query_id": "q", "retrieved": [{"doc_id": "d", "score": 1e308 * 10}]}, True),
}


@pytest.mark.parametrize("name", sorted(QUIRKS))
def test_native_quirks_late_in_a_file(name: str, tmp_path: Path, small_blocks: None) -> None:
    """The quirk sits after several batches: the column route gives up mid-way, cleanly."""
    record, leaves = QUIRKS[name]
    good = random_native_run(random.Random(7), 30)
    text = good + json.dumps(record, allow_nan=True).replace('"q"', '"late"') + "\n"
    path = write(tmp_path / f"{name}.jsonl", text)
    assert column_route_taken(native.read(path, None, ProblemLog())) is not leaves
    fast, slow = import_both([path])
    assert fast == slow
    if "rows" in fast:
        assert fast["record"].n_queries == 31


def test_native_file_level_cases(tmp_path: Path) -> None:
    cases = {
        "bom": b"\xef\xbb\xbf" + native_line({"query_id": "a", "retrieved": []}).encode(),
        "crlf_and_blank_lines": b'{"query_id": "a", "retrieved": []}\r\n\r\n  \n{"query_id": "b", "retrieved": null}\r\n',
        "no_final_newline": b'{"query_id": "a", "retrieved": []}',
        "invalid_utf8": b'{"query_id": "a\xff", "retrieved": []}\n',
        "nan_literal": b'{"query_id": "a", "retrieved": [{"doc_id": "d", "score": NaN}]}\n',
        "duplicate_id": b'{"query_id": "a", "retrieved": []}\n{"query_id": "a", "retrieved": []}\n',
        "header_late": b'{"query_id": "a", "retrieved": []}\n{"rageval_run": {"name": "x"}}\n',
    }
    for name, data in cases.items():
        path = write(tmp_path / f"{name}.jsonl", data)
        outcomes = []
        for keep_columns in (True, False):
            log = ProblemLog()
            parsed = native.read(path, None, log)
            if not keep_columns:
                parsed = dataclasses.replace(parsed, columns=None)
            outcomes.append(store_outcome(parsed, log))
        assert outcomes[0] == outcomes[1], name


# --- the store: hash, fallback, memory --------------------------------------------------------------


def queries_of(path: Path) -> list[Query]:
    log = ProblemLog()
    return list(native.read(path, None, log).queries)


def test_content_hash_ignores_batch_cuts_and_sees_every_column(tmp_path: Path) -> None:
    path = write(tmp_path / "gen.jsonl", random_native_run(random.Random(3), 60))
    queries = queries_of(path)
    digests = set()
    for size in (1, 7, 1000):
        hasher = ContentHasher(RunInfo(name="ignored"))
        for batch in batches_from_queries(queries, size, 10**9):
            hasher.add(batch)
        digests.add(hasher.hexdigest())
    assert len(digests) == 1
    base = digests.pop()

    def digest(qs: list[Query], info: RunInfo = RunInfo()) -> str:
        hasher = ContentHasher(info)
        for batch in batches_from_queries(qs, 5, 10**9):
            hasher.add(batch)
        return hasher.hexdigest()

    assert digest(queries, RunInfo(name="other name")) == base  # the name is not content
    assert digest(queries, RunInfo(description="d")) != base
    with_chunks = next(i for i, q in enumerate(queries) if q.retrieved)
    q = queries[with_chunks]
    assert q.retrieved is not None
    changes = [
        dataclasses.replace(q, query_id=q.query_id + "x"),
        dataclasses.replace(q, retrieved=q.retrieved[:-1]),
        dataclasses.replace(
            q, retrieved=(dataclasses.replace(q.retrieved[0], text="changed"), *q.retrieved[1:])
        ),
        dataclasses.replace(
            q, retrieved=(dataclasses.replace(q.retrieved[0], score=123.25), *q.retrieved[1:])
        ),
        dataclasses.replace(q, evidence=(*q.evidence, "more")),
        dataclasses.replace(q, tags={**q.tags, "new": "tag"}),
        dataclasses.replace(q, retrieved=None),
    ]
    for changed in changes:
        assert digest([*queries[:with_chunks], changed, *queries[with_chunks + 1 :]]) != base
    # a string moving between two rows changes the hash (lengths are hashed, not only bytes)
    a = [Query("q", (Chunk("d", "ab"), Chunk("e", "c")))]
    b = [Query("q", (Chunk("d", "a"), Chunk("e", "bc")))]
    assert digest(a) != digest(b)


def test_fallback_mid_stream_leaves_one_copy_of_the_rows(
    tmp_path: Path, small_blocks: None
) -> None:
    text = random_native_run(random.Random(1), 25) + native_line(
        {"query_id": "z", "retrieved": [], "extra": 1}
    )
    path = write(tmp_path / "late.jsonl", text)
    log = ProblemLog()
    parsed = read_inputs([path], None, log)[0]
    with Store(":memory:") as store:
        result = store.import_run(parsed, log)
        counts = store.table_counts()
        assert counts["queries"] == 26 == result.run.n_queries
        assert [p.field for p in result.warnings] == ["extra"]
        assert counts["chunks"] == result.run.n_chunks


def test_failed_column_import_stores_nothing(tmp_path: Path, small_blocks: None) -> None:
    text = random_native_run(random.Random(2), 25) + native_line({"query_id": "z", "retrieved": 3})
    path = write(tmp_path / "bad.jsonl", text)
    log = ProblemLog()
    parsed = read_inputs([path], None, log)[0]
    with Store(":memory:") as store:
        before = store.table_counts()
        with pytest.raises(InputError) as e:
            store.import_run(parsed, log)
        assert [p.field for p in e.value.problems] == ["retrieved"]
        assert store.table_counts() == before


def test_file_store_memory_limit_is_restored(tmp_path: Path) -> None:
    path = write(tmp_path / "gen.jsonl", random_native_run(random.Random(4), 10))
    for setting in (None, "SET memory_limit = '3GB'"):
        with Store(tmp_path / f"s{setting is None}.duckdb") as store:
            if setting is not None:
                store.connection.execute(setting)
            before = store.connection.execute("SELECT current_setting('memory_limit')").fetchall()
            log = ProblemLog()
            store.import_run(read_inputs([path], None, log)[0], log)
            assert (
                store.connection.execute("SELECT current_setting('memory_limit')").fetchall()
                == before
            )


def test_file_store_import_runs_under_the_import_settings(tmp_path: Path) -> None:
    path = write(tmp_path / "gen.jsonl", random_native_run(random.Random(5), 10))
    query = "SELECT current_setting('memory_limit'), current_setting('force_compression')"
    seen: list[Any] = []
    for db in (tmp_path / "s.duckdb", ":memory:"):
        with Store(db) as store:

            def progress(done: int, total: int | None, store: Store = store) -> None:
                seen.append(store.connection.execute(query).fetchall()[0])

            log = ProblemLog()
            store.import_run(read_inputs([path], None, log)[0], log, progress=progress)
            seen.append(store.connection.execute(query).fetchall()[0])  # after: as before
    capped = (
        duckdb.connect()
        .execute(
            f"SET memory_limit = '{store_module.IMPORT_MEMORY_LIMIT}'; SELECT current_setting('memory_limit')"
        )
        .fetchall()[0][0]
    )
    default = duckdb.connect().execute(query).fetchall()[0]
    # file store: capped and zstd during the import, defaults after; in-memory: left alone
    assert seen == [(capped, "zstd"), default, default, default]


def test_prefetch_passes_items_errors_and_stops_early() -> None:
    assert list(prefetch(iter(range(50)))) == list(range(50))

    def failing() -> Iterator[int]:
        yield 1
        raise ValueError("boom")

    got = []
    with pytest.raises(ValueError, match="boom"):
        for item in prefetch(failing()):
            got.append(item)
    assert got == [1]

    closed = []

    def endless() -> Iterator[int]:
        try:
            yield from itertools.count()
        finally:
            closed.append(True)

    for item in prefetch(endless()):
        if item == 3:
            break
    assert closed == [True]


def test_column_batch_counts() -> None:
    chunks = pa.table(
        {
            "qidx": [0, 0, 1],
            "rank": [1, 2, 1],
            "doc_id": ["a", "b", "c"],
            "text": [None] * 3,
            "score": [1.0, 2.0, None],
            "metadata": [None] * 3,
        },
        schema=BATCH_SCHEMAS["chunks"],
    )
    batch = ColumnBatch(2, {"chunks": chunks})
    assert (batch.n_chunks, batch.max_depth) == (3, 2)
    assert (ColumnBatch(1, {}).n_chunks, ColumnBatch(1, {}).max_depth) == (0, 0)


# --- TREC ------------------------------------------------------------------------------------------


def trec_slow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trec._Staged, "load", classmethod(lambda cls, run, qrels: None))


def read_trec(run: Path, qrels: Path | None) -> tuple[ParsedRun, list[Query], list[Problem]]:
    log = ProblemLog()
    parsed = trec.read(run, qrels, log)
    queries = list(parsed.queries)
    return parsed, queries, list(log.problems)


def both_trec_routes(
    run: Path, qrels: Path | None, monkeypatch: pytest.MonkeyPatch
) -> tuple[
    tuple[ParsedRun, list[Query], list[Problem]], tuple[ParsedRun, list[Query], list[Problem]]
]:
    fast = read_trec(run, qrels)
    with monkeypatch.context() as m:
        trec_slow(m)
        slow = read_trec(run, qrels)
    return fast, slow


def clean_copy(source: Path, target: Path) -> Path:
    """A trec_eval test file with single spaces between columns (fit for the bulk route)."""
    lines = [" ".join(line.split()) for line in source.read_text(encoding="utf-8").splitlines()]
    return write(
        target, "\n".join(line for line in lines if line and not line.startswith("#")) + "\n"
    )


def random_trec(rng: random.Random, tmp_path: Path, n: int = 30) -> tuple[Path, Path]:
    run_lines, qrels_lines = [], []
    for q in range(n):
        qid = f"{rng.randrange(1000)}-{q}"
        docs = rng.sample(range(60), rng.randrange(1, 25))
        for r, d in enumerate(docs):
            score = rng.choice(
                ["1", "0.5", "-0", "0", "0.0", "1e2", "100", ".5", "+2", "0.25", "-3.5e-1"]
            )
            run_lines.append(f"{qid} Q0 D{d} {r + 1} {score} tagA")
        if rng.random() < 0.8:
            for d in rng.sample(range(70), rng.randrange(0, 12)):
                qrels_lines.append(f"{qid} 0 D{d} {rng.choice([0, 1, 2, 3, -1])}")
    for q in range(3):  # judged, never retrieved
        qrels_lines.append(f"only{q} 0 D1 1")
    rng.shuffle(run_lines)  # a query's lines need not be adjacent
    return (
        write(tmp_path / "r.run", "\n".join(run_lines) + "\n"),
        write(tmp_path / "r.qrels", "\n".join(qrels_lines) + "\n"),
    )


@pytest.mark.parametrize("seed", range(5))
def test_trec_generated_files_equal_the_line_reader(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, qrels = random_trec(random.Random(seed), tmp_path)
    assert trec._Staged.load(run, qrels) is not None  # the bulk route is taken
    fast, slow = both_trec_routes(run, qrels, monkeypatch)
    assert fast[1] == slow[1]
    assert [q.line for q in fast[1]] == [q.line for q in slow[1]]
    assert fast[2] == slow[2] and len(fast[2]) == 1  # the missing-queries warning
    assert (fast[0].info, fast[0].sources) == (slow[0].info, slow[0].sources)

    outcomes = []
    for keep_bulk in (True, False):
        with monkeypatch.context() as m:
            if not keep_bulk:
                trec_slow(m)
            log = ProblemLog()
            parsed = read_inputs([run, qrels], "trec", log)[0]
            assert (parsed.columns is not None) is keep_bulk
            outcomes.append(store_outcome(parsed, log))
    assert "rows" in outcomes[0] and outcomes[0] == outcomes[1]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("rel_level", "complete"), [(1, False), (1, True), (2, False), (3, True)])
def test_trec_read_arrays_equals_the_query_route(
    seed: int, rel_level: int, complete: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, qrels = random_trec(random.Random(seed), tmp_path)
    log = ProblemLog()
    arrays, selection = trec.read_arrays(run, qrels, log, rel_level=rel_level, complete=complete)
    with monkeypatch.context() as m:
        trec_slow(m)
        slow_log = ProblemLog()
        expected, expected_sel = ranked_labels_from_queries(
            trec.read(run, qrels, slow_log).queries, rel_level, complete
        )
    assert selection == expected_sel
    assert [str(p) for p in log.problems] == [str(p) for p in slow_log.problems]
    assert arrays.query_ids == expected.query_ids
    for name in ("labels", "n_ret", "n_rel", "ideal", "n_judged", "judged"):
        np.testing.assert_array_equal(getattr(arrays, name), getattr(expected, name), err_msg=name)


@pytest.mark.oracle
def test_trec_oracle_files_cleaned_take_the_bulk_route(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = clean_copy(ORACLE / "results.test", tmp_path / "results.test")
    qrels = clean_copy(ORACLE / "qrels.test", tmp_path / "qrels.test")
    assert trec._Staged.load(run, qrels) is not None
    fast, slow = both_trec_routes(run, qrels, monkeypatch)
    assert fast[1] == slow[1] and fast[2] == slow[2]
    # the original (tab separated, padded scores) is read line by line, to the same queries
    original = read_trec(ORACLE / "results.test", ORACLE / "qrels.test")
    assert trec._Staged.load(ORACLE / "results.test", ORACLE / "qrels.test") is None
    assert original[1] == fast[1]


TREC_CASES: dict[str, tuple[str, bool]] = {
    # name: (run text, whether the bulk route takes it)
    "ties_and_signed_zero": (
        "q Q0 b 1 0 t\nq Q0 a 2 -0 t\nq Q0 c 3 0.0 t\nq Q0 d10 4 1 t\nq Q0 d9 5 1 t\n",
        True,
    ),
    "tabs": ("q\tQ0\ta\t1\t2\tt\nq\tQ0\tb\t2\t3\tt\n", True),
    "crlf": ("q Q0 a 1 2 t\r\nq Q0 b 2 3 t\r\n", True),
    "no_final_newline": ("q Q0 a 1 2 t\nq Q0 b 2 3 t", True),
    "non_ascii_docno": ("q Q0 é 1 2 t\nq Q0 \u00fc 2 3 t\n", True),
    "unicode_space_in_docno": ("q Q0 a\u00a0b 1 2 t\n", False),
    "vertical_tab": ("q Q0 a\x0bb 1 2 t\n", False),
    "lone_cr": ("q Q0 a 1 2 t\rq Q0 b 2 3 t\n", False),
    "blank_line": ("q Q0 a 1 2 t\n\nq Q0 b 2 3 t\n", False),
    "comment": ("# c\nq Q0 a 1 2 t\n", False),
    "double_space": ("q Q0  a 1 2 t\n", False),
    "trailing_junk": ("q Q0 a 1 2 t x y\n", False),
    "mixed_tags": ("q Q0 a 1 2 t\nq Q0 b 2 3 u\n", False),
    "bom": ("\ufeffq Q0 a 1 2 t\n", False),
    "duplicate": ("q Q0 a 1 2 t\nq Q0 a 2 3 t\n", False),
    "nan": ("q Q0 a 1 nan t\n", False),
    "underscore": ("q Q0 a 1 1_0 t\n", False),
    "plus_minus": ("q Q0 a 1 +-1 t\n", False),
    "overflow": ("q Q0 a 1 1e999 t\n", False),
    "few_columns": ("q Q0 a 1 2\n", False),
    "empty": ("", False),
}


@pytest.mark.parametrize("name", sorted(TREC_CASES))
def test_trec_edge_files(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text, bulk = TREC_CASES[name]
    run = write(tmp_path / "x.run", text)
    qrels = write(tmp_path / "x.qrels", "q 0 a 1\nq 0 b 2\nother 0 a 1\n")
    assert (trec._Staged.load(run, qrels) is not None) is bulk
    fast, slow = both_trec_routes(run, qrels, monkeypatch)
    assert fast[1] == slow[1] and fast[2] == slow[2]


@pytest.mark.parametrize(
    ("qrels_text", "bulk"),
    [
        ("q 0 a 1\nq 0 b +2\n", True),
        ("q 0 a 1\nq 0 a 2\n", False),
        ("q 0 a x\n", False),
        ("q 0 a 99999999999\n", False),
        ("q 0 a 1 extra\n", False),
        ("q\t0\ta\t1\n", True),
    ],
)
def test_trec_qrels_cases(
    qrels_text: str, bulk: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = write(tmp_path / "x.run", "q Q0 a 1 2 t\nq Q0 b 2 3 t\n")
    qrels = write(tmp_path / "x.qrels", qrels_text)
    assert (trec._Staged.load(run, qrels) is not None) is bulk
    if "99999999999" in qrels_text:
        return  # beyond a 32-bit label: not a case for the comparison (the store cannot hold it)
    fast, slow = both_trec_routes(run, qrels, monkeypatch)
    assert fast[1] == slow[1] and fast[2] == slow[2]


def test_trec_score_check_equals_the_line_readers_rule() -> None:
    """The bulk route's number test accepts exactly what _NUMBER + float() accept as finite."""
    candidates = {"".join(t) for n in range(1, 6) for t in itertools.product("1.e+-", repeat=n)}
    candidates |= {
        "1_0",
        "inf",
        "-inf",
        "nan",
        "Infinity",
        "0x10",
        "1e999",
        "1d",
        "\uff11",
        " 1",
        "1,5",
        "+.5",
        "1.",
        ".5",
        "00012.50",
        "1E+3",
        "-0",
        "2.4703282292062328e-324",
    }
    random_numbers = random.Random(0)
    candidates |= {repr(random_numbers.uniform(-1e9, 1e9)) for _ in range(500)}
    values = sorted(candidates)
    rows = (
        duckdb.connect()
        .execute(
            f"SELECT v, NOT coalesce({trec._SCORE_BAD_SQL.format(field='v')}, true) "
            "FROM unnest(?::VARCHAR[]) AS t(v)",
            [values],
        )
        .fetchall()
    )
    for value, accepted in rows:
        expected = trec._NUMBER.match(value) is not None and math.isfinite(float(value))
        assert accepted == expected, value


def test_trec_staged_tables_have_the_store_schemas(tmp_path: Path) -> None:
    run, qrels = random_trec(random.Random(9), tmp_path)
    staged = trec._Staged.load(run, qrels)
    assert staged is not None
    tables = staged.tables()
    assert set(tables) == {"queries", "chunks", "qrels"}
    for name, table in tables.items():
        assert table.schema == BATCH_SCHEMAS[name]
    ranks = tables["chunks"].to_pydict()
    by_query: dict[int, list[int]] = {}
    for q, r in zip(ranks["qidx"], ranks["rank"], strict=True):
        by_query.setdefault(q, []).append(r)
    assert all(v == list(range(1, len(v) + 1)) for v in by_query.values())


def test_trec_store_import_dedupes_against_the_line_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same content by either route is one run: the second import finds the first."""
    run, qrels = random_trec(random.Random(5), tmp_path)
    with Store(":memory:") as store:
        log = ProblemLog()
        first = store.import_run(read_inputs([run, qrels], "trec", log)[0], log)
        with monkeypatch.context() as m:
            trec_slow(m)
            log = ProblemLog()
            second = store.import_run(read_inputs([run, qrels], "trec", log)[0], log)
        assert first.created and not second.created and second.run.run_id == first.run.run_id


def test_sniffed_patterns_still_compile() -> None:
    assert re.compile(trec._NUMBER.pattern) and re.compile(trec._INTEGER.pattern)
