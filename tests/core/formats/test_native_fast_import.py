"""The native reader's DuckDB route against the Python routes it stands in front of.

Every file is imported three ways: as the reader offers it (the DuckDB route first, since the
size threshold is lowered to 0 here), by the Python column route alone, and by the line reader
alone. All three must store the same rows with the same content hash, and give the same
problems. Separate checks make sure the DuckDB route is really taken on the shapes it covers and
really left on everything the line reader would report or read differently.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import struct
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from bench.native_scale import write_native_run
from rageval_core.columns import UseQueries
from rageval_core.errors import InputError, ProblemLog
from rageval_core.formats import native, native_duckdb, read_inputs
from rageval_core.formats.base import MAX_MEASURE
from rageval_core.model import ParsedRun
from rageval_core.store import Store
from tests.paths import REPO

ROOT = REPO
DATA = ROOT / "tests" / "data"
GOOD = [*sorted((ROOT / "sample_runs").glob("*.jsonl")), DATA / "good" / "native_full.jsonl"]
BAD = sorted((DATA / "bad").glob("native_*.jsonl"))


@pytest.fixture(autouse=True)
def small_files_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The DuckDB route for every file, in batches of a few records, checked from line 4 on."""
    monkeypatch.setattr(native_duckdb, "MIN_FILE_BYTES", 0)
    monkeypatch.setattr(native_duckdb, "BATCH_BYTES", 2_000)
    monkeypatch.setattr(native_duckdb, "MIN_BATCH_QUERIES", 2)
    monkeypatch.setattr(native_duckdb, "SAMPLE_LINES", 3)


# --- helpers -------------------------------------------------------------------------------------


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def line(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def outcome(parsed: ParsedRun, log: ProblemLog) -> dict[str, Any]:
    with Store(":memory:") as store:
        before = store.table_counts()
        try:
            result = store.import_run(parsed, log)
        except InputError as e:
            assert store.table_counts() == before  # a failed import stores nothing
            return {"problems": [str(p) for p in e.problems]}
        return {
            "rows": store.table_rows(result.run),
            "hash": result.run.content_hash,
            "problems": [str(p) for p in result.warnings],
            "record": dataclasses.replace(result.run, run_id=0, imported_at=""),
        }


def three_ways(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Outcomes of the import as offered (DuckDB first), by the Python column route, by lines."""
    out = []
    for route in ("offered", "python_columns", "lines"):
        with monkeypatch.context() as m:
            if route == "python_columns":
                m.setattr(native_duckdb, "MIN_FILE_BYTES", 1 << 62)
            log = ProblemLog()
            parsed = read_inputs([path], None, log)[0]
            if route == "lines":
                parsed = dataclasses.replace(parsed, columns=None)
            out.append(outcome(parsed, log))
    return out


def duckdb_takes(path: Path) -> bool:
    """True when the DuckDB route reads the whole file (it hands over by UseQueries otherwise)."""
    parsed = native.read(path, None, ProblemLog())
    assert parsed.columns is not None
    try:
        for _ in parsed.columns:
            pass
    except UseQueries as e:
        assert e.instead is not None, "the DuckDB route hands over to the Python column route"
        return False
    return True


def assert_same(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    offered, columns, lines = three_ways(path, monkeypatch)
    assert offered == lines
    assert columns == lines
    return offered


def fast_record(rng: random.Random, i: int) -> dict[str, Any]:
    """A record of a shape the DuckDB route covers, with every optional field sometimes absent,
    null or empty, and the number spellings JSON allows."""
    chunks: list[dict[str, Any]] = []
    for r in range(rng.choice([0, 1, 3, 6])):
        chunk: dict[str, Any] = {"doc_id": f"d{rng.randrange(40)}-{r}"}
        for key, values in (
            ("text", ["", "plain text", "ünïcode \u2028 line", 'a\nb"c\\', "[1, 2, ] {a,}", None]),
            ("score", [1, -2, 0.5, -0.0, 1e300, 12.0, 2**70, rng.random(), None]),
        ):
            if rng.random() < 0.8:
                chunk[key] = rng.choice(values)
        chunks.append(dict(rng.sample(list(chunk.items()), len(chunk))))  # any key order
    obj: dict[str, Any] = {"query_id": f"q{i}", "retrieved": chunks if rng.random() < 0.9 else None}
    if rng.random() < 0.7:
        obj["query"] = rng.choice(["what?", "", None, "tab\there"])
    pick = rng.random()
    if pick < 0.3:
        obj["relevant_ids"] = [f"d{j}" for j in range(rng.randrange(3))]
    elif pick < 0.6:
        obj["relevance"] = {
            f"d{j}": rng.choice([0, 1, 2, -1, 2**31 - 1]) for j in range(rng.randrange(3))
        }
    elif pick < 0.7:
        obj["relevance"] = None
    if rng.random() < 0.5:
        obj["evidence"] = rng.choice([["a", "b c"], [], None, [" x "]])
    if rng.random() < 0.5:
        obj["latency_ms"] = rng.choice(
            [{"retrieve": 0, "generate": 100.25}, {'q"é\\\\': 3.5}, {}, None]
        )
    if rng.random() < 0.5:
        obj["tokens"] = {"prompt": rng.randrange(1000), "completion": 0, "big": 2**63 - 1}
    if rng.random() < 0.3:
        obj["tags"] = {"topic": rng.choice(["tax", "law"]), "empty": ""}
    for key in ("answer", "reference_answer"):
        if rng.random() < 0.3:
            obj[key] = rng.choice(["yes", "", None])
    if rng.random() < 0.1:
        obj["judge"] = None
    return dict(rng.sample(list(obj.items()), len(obj)))


def fast_run(rng: random.Random, n: int, header: bool = True) -> str:
    head = line({"rageval_run": {"name": "gen", "settings": {"k": 3}}}) if header else ""
    return head + "".join(line(fast_record(rng, i)) for i in range(n))


# --- the route is taken, and stores what the Python routes store -----------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_generated_runs_take_the_duckdb_route(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "gen.jsonl", fast_run(random.Random(seed), 40, header=seed % 2 == 0))
    assert duckdb_takes(path)
    result = assert_same(path, monkeypatch)
    assert "rows" in result and result["record"].n_queries == 40


def test_the_bench_run_takes_the_duckdb_route(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bench.jsonl"
    write_native_run(path, 30, n_chunks=4, text_chars=60)
    assert duckdb_takes(path)
    result = assert_same(path, monkeypatch)
    assert result["record"].n_chunks == 120


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_good_files(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = assert_same(path, monkeypatch)
    assert "rows" in result
    # the sample runs have the common shape; native_full.jsonl has chunk metadata and a judge
    assert duckdb_takes(path) is (path.parent.name == "sample_runs")


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_files(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = ProblemLog()
    native.read(path, None, log)
    if not log.errors:  # (a bad header is reported by read() already)
        assert not duckdb_takes(path)
    assert_same(path, monkeypatch)


def test_numbers_are_read_as_python_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB's number parser against float(): shortest reprs, long digit strings, subnormals,
    integers past 2**53 and 2**64, negative zero, exponents of every form."""
    rng = random.Random(11)
    spellings = [
        "0",
        "-0",
        "-0.0",
        "1e0",
        "1E+2",
        "2.5e-3",
        "123456789012345678901234567890",
        "18446744073709551615",
        "18446744073709551617",
        "9007199254740993",
        "1e308",
        "2.2250738585072014e-308",
        "4.9e-324",
        "0.1000000000000000055511151231257827",
        "179769313486231570000000000000000000000000000000000000000000000000000000000000"
        "000000000000000000000000000000000000000000000000000000000000000000000000000000"
        "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
        "000000000000000000000000000000000000000000000000000000000000000000000000000000",
    ]
    for _ in range(300):
        spellings.append(repr(struct.unpack("<d", rng.randbytes(8))[0]))
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 25)))
        spellings.append(
            f"{rng.choice(['', '-'])}{int(digits)}.{digits}e{rng.randrange(-320, 300)}"
        )
    spellings = [s for s in spellings if math.isfinite(float(s))]
    lines = []
    for i in range(0, len(spellings), 7):
        part = spellings[i : i + 7]
        chunks = ",".join(f'{{"doc_id":"d{j}","score":{s}}}' for j, s in enumerate(part))
        # a latency past MAX_MEASURE is a field problem (issue 28): those stay scores only
        latency = ",".join(
            f'"s{j}":{s.lstrip("-")}' for j, s in enumerate(part) if abs(float(s)) <= MAX_MEASURE
        )
        lines.append(f'{{"query_id":"q{i}","retrieved":[{chunks}],"latency_ms":{{{latency}}}}}\n')
    path = write(tmp_path / "numbers.jsonl", "".join(lines))
    assert duckdb_takes(path)
    assert "rows" in assert_same(path, monkeypatch)


def test_python_whitespace_is_str_isspace() -> None:
    assert set(native_duckdb.PY_WHITESPACE) == {
        chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()
    }


# --- everything else leaves the route, and the Python readers say why -----------------------------

RECORD = {
    "query_id": "late",
    "query": "q",
    "retrieved": [{"doc_id": "d", "text": "t", "score": 1.5}],
}

#: name: (the last line of a file otherwise taken, whether the DuckDB route still takes it)
LATE: dict[str, tuple[str, bool]] = {
    # warnings: keys the line reader names and ignores; DuckDB would drop them silently
    "unknown_key": (line({**RECORD, "extra": 1}), False),
    "unknown_key_null": (line({**RECORD, "extra": None}), False),
    "unknown_chunk_key_null": (line({**RECORD, "retrieved": [{"doc_id": "d", "x": None}]}), False),
    "key_in_other_case": (line({**RECORD, "Query": "q2"}), False),
    # shapes read without a word by the line reader that this route leaves to it
    "metadata": (line({**RECORD, "retrieved": [{"doc_id": "d", "metadata": {"p": 2}}]}), False),
    "metadata_null": (line({**RECORD, "retrieved": [{"doc_id": "d", "metadata": None}]}), True),
    "judge": (line({**RECORD, "judge": {"f": 0.5}}), False),
    "evidence_string": (line({**RECORD, "evidence": "one span"}), False),
    "tag_number": (line({**RECORD, "tags": {"n": 1.5}}), False),
    "tag_bool": (line({**RECORD, "tags": {"n": True}}), False),
    "both_relevance_forms": (line({**RECORD, "relevant_ids": ["a"], "relevance": {"a": 2}}), False),
    "repeated_relevant_id": (line({**RECORD, "relevant_ids": ["a", "b", "a"]}), False),
    "duplicate_key": ('{"query_id": "late", "query": "a", "query": "b", "retrieved": []}\n', False),
    "duplicate_chunk_key": (
        '{"query_id": "late", "retrieved": [{"doc_id": "a", "doc_id": "b"}]}\n',
        False,
    ),
    "duplicate_map_key": (
        '{"query_id": "late", "retrieved": [], "tokens": {"a": 1, "a": 2}}\n',
        False,
    ),
    "negative_zero_count": ('{"query_id": "late", "retrieved": [], "tokens": {"a": -0}}\n', False),
    "empty_tags": (line({**RECORD, "tags": {}}), True),
    "null_retrieved": (line({**RECORD, "retrieved": None}), True),
    "comma_bracket_in_text": (line({**RECORD, "query": "[1, 2, ] and {a: 1,}"}), True),
    "escapes": (
        r'{"query_id": "late", "retrieved": [{"doc_id": "\u00e9\/\ud83d\ude00", "text": "a\u0000b\u007f"}]}'
        + "\n",
        True,
    ),
    "spaces": ('  {"query_id" :"late" , "retrieved" : [ ] }  \t\n', True),
    "one_crlf_among_lf": ('{"query_id": "late", "retrieved": []}\r\n', False),  # read_csv refuses
    # errors
    "query_id_number": ('{"query_id": 5, "retrieved": []}\n', False),
    "query_id_null": ('{"query_id": null, "retrieved": []}\n', False),
    "query_id_empty": ('{"query_id": "", "retrieved": []}\n', False),
    "no_query_id": ('{"retrieved": []}\n', False),
    "no_retrieved": ('{"query_id": "late"}\n', False),
    "duplicate_id": ('{"query_id": "q1", "retrieved": []}\n', False),
    "text_number": (line({**RECORD, "retrieved": [{"doc_id": "d", "text": 5}]}), False),
    "text_nan": ('{"query_id": "late", "retrieved": [{"doc_id": "d", "text": NaN}]}\n', False),
    "doc_id_number": (line({**RECORD, "retrieved": [{"doc_id": 7}]}), False),
    "doc_id_empty": (line({**RECORD, "retrieved": [{"doc_id": ""}]}), False),
    "doc_id_missing": (line({**RECORD, "retrieved": [{"doc_id": "a"}, {"text": "t"}]}), False),
    "null_chunk": (line({**RECORD, "retrieved": [None]}), False),
    "empty_chunk": (line({**RECORD, "retrieved": [{}]}), False),
    "score_string": (line({**RECORD, "retrieved": [{"doc_id": "d", "score": "1.5"}]}), False),
    "score_bool": (line({**RECORD, "retrieved": [{"doc_id": "d", "score": True}]}), False),
    "score_nan": ('{"query_id": "late", "retrieved": [{"doc_id": "d", "score": NaN}]}\n', False),
    "score_lowercase_nan": (
        '{"query_id": "late", "retrieved": [{"doc_id": "d", "score": nan}]}\n',
        False,
    ),
    "score_overflow": (
        '{"query_id": "late", "retrieved": [{"doc_id": "d", "score": 1e999}]}\n',
        False,
    ),
    "tokens_float": (line({**RECORD, "tokens": {"a": 1.5}}), False),
    "tokens_negative": (line({**RECORD, "tokens": {"a": -1}}), False),
    "tokens_too_big": (line({**RECORD, "tokens": {"a": 2**63}}), False),
    "latency_negative": (line({**RECORD, "latency_ms": {"a": -1}}), False),
    "latency_string": (line({**RECORD, "latency_ms": {"a": "5"}}), False),
    "latency_null": (line({**RECORD, "latency_ms": {"a": None}}), False),
    "label_float": (line({**RECORD, "relevance": {"a": 1.5}}), False),
    "label_bool": (line({**RECORD, "relevance": {"a": True}}), False),
    "label_too_big": (line({**RECORD, "relevance": {"a": 2**31}}), False),
    "label_empty_doc_id": (line({**RECORD, "relevance": {"": 1}}), False),
    "evidence_blank": (line({**RECORD, "evidence": ["ok", "\u3000\x1c "]}), False),
    "evidence_number": (line({**RECORD, "evidence": [1]}), False),
    "evidence_null": (line({**RECORD, "evidence": [None]}), False),
    "relevant_id_empty": (line({**RECORD, "relevant_ids": [""]}), False),
    "tag_object": (line({**RECORD, "tags": {"a": {}}}), False),
    "record_array": ("[1, 2]\n", False),
    "header_late": (line({"rageval_run": {"name": "x"}}), False),
    # JSON Python refuses and DuckDB's parser takes
    "trailing_comma_array": ('{"query_id": "late", "retrieved": [],}\n', False),
    "trailing_comma_spaced": (
        '{"query_id": "late", "retrieved": [{"doc_id": "d"} , \t ]}\n',
        False,
    ),
    "trailing_comma_object": ('{"query_id": "late", "retrieved": [{"doc_id": "d",}]}\n', False),
    "form_feed_at_end": ('{"query_id": "late", "retrieved": []}\x0c\n', False),
    "vertical_tab_at_start": ('\x0b{"query_id": "late", "retrieved": []}\n', False),
    "bad_utf8": (b'{"query_id": "late\xff", "retrieved": []}\n'.decode("latin-1"), False),
    "unicode_blank_line": ("\u00a0\n" + line(RECORD), False),
    "lone_cr": (
        '{"query_id": "late", "retrieved": []}\r{"query_id": "x", "retrieved": []}\n',
        False,
    ),
    "two_records": (
        '{"query_id": "late", "retrieved": []} {"query_id": "x", "retrieved": []}\n',
        False,
    ),
}


@pytest.mark.parametrize("name", sorted(LATE))
def test_late_quirks(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The quirk sits after several batches: the route hands over mid-way, cleanly."""
    text, taken = LATE[name]
    data = fast_run(random.Random(3), 29).encode("utf-8")
    # a long record first: the quirk lies beyond the head that format detection reads
    data += line(
        {"query_id": "long", "retrieved": [{"doc_id": "d", "text": "x " * 40_000}]}
    ).encode()
    data += text.encode("latin-1") if name == "bad_utf8" else text.encode("utf-8")
    path = write(tmp_path / f"{name}.jsonl", data)
    assert duckdb_takes(path) is taken
    result = assert_same(path, monkeypatch)
    if taken:
        assert result["record"].n_queries == 31


@pytest.mark.parametrize(
    ("name", "data", "taken"),
    [
        # taken None: whether DuckDB's reader copes is DuckDB's business (a BOM, line endings, its
        # line limit) and changes between releases; what is imported must not
        (
            "crlf",
            b'{"query_id": "a", "retrieved": []}\r\n{"query_id": "b", "retrieved": null}\r\n',
            None,
        ),
        (
            "blank_lines",
            b'\n\n{"rageval_run": {"name": "x"}}\n\n  \t \n{"query_id": "a", "retrieved": []}\n\n',
            None,
        ),
        ("no_final_newline", b'{"query_id": "a", "retrieved": []}', None),
        ("bom", b'\xef\xbb\xbf{"query_id": "a", "retrieved": []}\n', None),
        (
            "long_record",
            line(
                {"query_id": "a", "retrieved": [{"doc_id": "d", "text": "x" * 2_200_000}]}
            ).encode(),
            None,
        ),
        # our own shape rules leave these to the Python readers
        ("only_header", b'{"rageval_run": {"name": "x"}}\n', False),
        (
            "header_with_extra_key",
            b'{"rageval_run": {"name": "x"}, "query_id": "h"}\n{"query_id": "a", "retrieved": []}\n',
            False,
        ),
        ("empty_object", b'{"query_id": "a", "retrieved": []}\n{}\n', False),
    ],
)
def test_file_level_cases(
    name: str, data: bytes, taken: bool | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / f"{name}.jsonl", data)
    log = ProblemLog()
    native.read(path, None, log)
    if not log.errors and taken is not None:
        assert duckdb_takes(path) is taken
    assert_same(path, monkeypatch)


@pytest.mark.parametrize("bom", [b"\xef\xbb\xbf", b""], ids=["bom", "none"])
@pytest.mark.parametrize("force_python", [False, True], ids=["offered", "python"])
def test_a_bom_imports_what_the_same_file_without_it_imports(
    bom: bytes, force_python: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever route reads it (DuckDB's reader or ours), a UTF-8 BOM changes nothing stored."""
    text = fast_run(random.Random(5), 12, header=True).encode("utf-8")
    if force_python:
        monkeypatch.setattr(native_duckdb, "MIN_FILE_BYTES", 1 << 62)
    outcomes = []
    for folder, data in (("plain", text), ("marked", bom + text)):
        path = write(tmp_path / folder / "run.jsonl", data)
        log = ProblemLog()
        outcomes.append(outcome(read_inputs([path], None, log)[0], log))
    plain, marked = outcomes
    assert "rows" in plain and plain["record"].n_queries == 12
    assert {k: v for k, v in marked.items() if k != "record"} == {
        k: v for k, v in plain.items() if k != "record"
    }
    assert dataclasses.replace(marked["record"], sources=()) == dataclasses.replace(
        plain["record"], sources=()
    )


@pytest.mark.parametrize(
    ("shape", "valid"),
    [
        ({"query_id": "VARCHAR", "retrieved": "NULL"}, True),
        (
            {
                "query_id": "VARCHAR",
                "retrieved": ["NULL"],
                "latency_ms": "JSON",
                "tags": {"a": "VARCHAR"},
            },
            True,
        ),
        ({"query_id": "VARCHAR"}, False),  # retrieved missing
        ({"query_id": "NULL", "retrieved": "NULL"}, False),
        ({"query_id": "VARCHAR", "retrieved": "NULL", "extra": "NULL"}, False),
        (
            {"query_id": "VARCHAR", "retrieved": [{"doc_id": "VARCHAR", "score": "JSON"}]},
            False,
        ),  # mixed types
        ({"query_id": "VARCHAR", "retrieved": [{"doc_id": "VARCHAR", "score": "BOOLEAN"}]}, False),
        (
            {"query_id": "VARCHAR", "retrieved": "NULL", "tokens": {"a": "BIGINT"}},
            False,
        ),  # negative
        ({"query_id": "VARCHAR", "retrieved": "NULL", "evidence": "VARCHAR"}, False),
        ({"query_id": "VARCHAR", "retrieved": "NULL", "judge": "NULL"}, True),
        ({"rageval_run": {"name": "VARCHAR"}}, False),
        (["UBIGINT"], False),
    ],
)
def test_valid_shape(shape: Any, valid: bool) -> None:
    assert native_duckdb.valid_shape(shape) is valid


# --- the store around it ---------------------------------------------------------------------------


def test_a_file_of_another_shape_is_left_before_any_row(tmp_path: Path) -> None:
    text = line({"query_id": "a", "retrieved": [{"doc_id": "d", "metadata": {"p": 1}}]}) * 3
    path = write(tmp_path / "meta.jsonl", text)
    stream = native_duckdb.columns(path, 0, False, instead=None)
    with pytest.raises(UseQueries):
        next(stream)  # the sample of the first lines decides: no batch is made


def test_the_content_hash_does_not_depend_on_the_route(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same run imported by the DuckDB route, then by the line reader, is found stored."""
    path = write(tmp_path / "gen.jsonl", fast_run(random.Random(8), 25))
    with Store(":memory:") as store:
        log = ProblemLog()
        first = store.import_run(read_inputs([path], None, log)[0], log)
        log = ProblemLog()
        parsed = dataclasses.replace(read_inputs([path], None, log)[0], columns=None)
        second = store.import_run(parsed, log)
        assert first.created and not second.created and second.run.run_id == first.run.run_id


def test_a_late_error_stores_nothing_and_leaves_no_thread(tmp_path: Path) -> None:
    path = write(
        tmp_path / "bad.jsonl",
        fast_run(random.Random(4), 30) + '{"query_id": "z", "retrieved": 3}\n',
    )
    log = ProblemLog()
    parsed = read_inputs([path], None, log)[0]
    with Store(":memory:") as store:
        before = store.table_counts()
        with pytest.raises(InputError) as e:
            store.import_run(parsed, log)
        assert [str(p) for p in e.value.problems] == [
            f"{path}:32: retrieved: expected an array or null, got a number"
        ]
        assert store.table_counts() == before
    assert not [t for t in threading.enumerate() if t.name == "rageval-witness"]


def test_progress_counts_queries_on_the_duckdb_route(tmp_path: Path) -> None:
    path = write(tmp_path / "gen.jsonl", fast_run(random.Random(5), 40))
    assert duckdb_takes(path)
    seen: list[int] = []
    log = ProblemLog()
    with Store(tmp_path / "s.duckdb") as store:
        store.import_run(
            read_inputs([path], None, log)[0], log, progress=lambda done, _total: seen.append(done)
        )
    assert len(seen) > 2 and seen == sorted(seen) and seen[-1] == 40


TOKENS = [
    ",",
    "]",
    "}",
    "[",
    "{",
    '"',
    ":",
    ' "x": 1,',
    "null",
    "NaN",
    "-0",
    "1e999",
    "\x0c",
    "\\u00e9",
    "\\",
    " ",
    "\t",
    '"query": 5,',
    '"text": null,',
    "true",
    "\u00a0",
    "\r",
]


@pytest.mark.parametrize("seed", range(25))
def test_mutated_files(seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A token dropped into a random place of a file the route takes: whatever the line reader
    makes of it (an error, a warning, or the same rows), the DuckDB route makes the same."""
    rng = random.Random(seed)
    lines = fast_run(rng, 12).splitlines(keepends=True)
    i = rng.randrange(1, len(lines))
    pos = rng.randrange(len(lines[i]) - 1)
    lines[i] = lines[i][:pos] + rng.choice(TOKENS) + lines[i][pos:]
    path = write(tmp_path / "mutated.jsonl", "".join(lines))
    assert_same(path, monkeypatch)


def test_a_large_file_reports_its_expected_queries_to_the_progress_bar(tmp_path: Path) -> None:
    # sample run: a header line, then one line per query; a blank line at the end is counted
    # too (the total is an estimate for the bar, the stored count stays exact)
    source = ROOT / "sample_runs" / "bm25.jsonl"
    run = write(tmp_path / "run.jsonl", source.read_text(encoding="utf-8") + "\n")
    n_lines = run.read_bytes().count(b"\n")
    log = ProblemLog()
    parsed = native.read(run, None, log)
    assert parsed.expected_queries == n_lines - 1
    seen: list[tuple[int, int | None]] = []
    with Store(":memory:") as store:
        result = store.import_run(
            parsed, log, progress=lambda done, total: seen.append((done, total))
        )
    assert result.run.n_queries == n_lines - 2  # the blank line is no query
    assert seen and seen[-1] == (result.run.n_queries, n_lines - 1)
    assert all(total == n_lines - 1 for _, total in seen)


def test_count_lines_counts_a_last_line_without_newline(tmp_path: Path) -> None:
    for text, expected in (("", 0), ("a", 1), ("a\n", 1), ("a\nb", 2), ("\n\n", 2)):
        assert native._count_lines(write(tmp_path / "f", text), block=2) == expected
