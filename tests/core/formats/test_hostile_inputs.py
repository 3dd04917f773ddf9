"""Hostile input that once ended in a traceback: now a clean refusal, `file:line: field: problem`.

Each test is named after the attack. The end-to-end ones run the real CLI (in process) and check
what a user sees: exit 2, every problem line placed, no "Traceback", and the store unchanged.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rageval_dashboard.jobs import imports
from rageval_core.errors import ProblemLog, UsageError
from rageval_core.formats import native_duckdb, read_inputs
from rageval_core.formats.jsonarray import MAX_INT_DIGITS, loads
from rageval_core.importing import import_paths
from rageval_core.store import Store
from tests.cli import rageval
from tests.core.store.test_crash import make_run
from tests.paths import REPO

DATA = REPO / "tests" / "data"
PROBLEM = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<field>[^:]+?): (?P<problem>.+)$")
HUGE = "9" * 400
HUGER = "9" * 5000  # beyond Python's own limit for int() (4,300 digits)


def bystander_store(folder: Path) -> Path:
    """A store file holding one bystander run, so "nothing changed" has something to compare."""
    path = folder / "store.duckdb"
    done = rageval("import", str(make_run(folder / "bystander.jsonl", 3, evidence=False)), db=path)
    assert done.returncode == 0, done.stderr
    return path


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return bystander_store(tmp_path)


def counts(db: Path) -> dict[str, int]:
    with Store(db) as store:
        return store.table_counts()


def refused(db: Path, *args: str, cwd: Path | None = None) -> list[re.Match[str]]:
    """`rageval import ARGS`: exit 2, no traceback, the store unchanged; the problem lines."""
    before = counts(db)
    done = rageval("import", *args, db=db, cwd=cwd)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert counts(db) == before
    lines = [line for line in done.stderr.splitlines() if not line.endswith("nothing was stored")]
    matches = [PROBLEM.match(line) for line in lines]
    assert lines and all(matches), done.stderr
    return [m for m in matches if m is not None]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def native_line(**fields: object) -> str:
    record: dict[str, object] = {"query_id": "q1", "retrieved": [{"doc_id": "d1", "text": "t"}]}
    record.update(fields)
    return json.dumps(record)


# --- 1. a lone surrogate escaped in JSON --------------------------------------------------------

#: (field the problem names, a record with "\\ud800" or "\\udfff" in it, as JSON text)
SURROGATE_RECORDS = [
    ("query", native_line(query="\ud800")),
    ("query_id", native_line(query_id="q\udfff")),
    ("retrieved[0].text", native_line(retrieved=[{"doc_id": "d1", "text": "a\udfffb"}])),
    ("retrieved[0].doc_id", native_line(retrieved=[{"doc_id": "\ud800"}])),
    ("evidence[1]", native_line(evidence=["fine", "\ud800"])),
    ("tags.topic", native_line(tags={"topic": "\ud800"})),
    ("tags", native_line(tags={"\udfff": "x"})),
    ("relevance", native_line(relevance={"\ud800": 1})),
    (
        "retrieved[0].metadata.page",
        native_line(retrieved=[{"doc_id": "d1", "metadata": {"page": "\ud800"}}]),
    ),
    ("answer", native_line(answer="\udfff")),
]


@pytest.mark.parametrize(
    ("field", "record"), SURROGATE_RECORDS, ids=[f for f, _ in SURROGATE_RECORDS]
)
def test_lone_surrogate_escape_in_json_is_a_file_line_error(
    db: Path, tmp_path: Path, field: str, record: str
) -> None:
    assert (
        "\\ud800" in record or "\\udfff" in record
    )  # json.dumps escapes it: the attack's spelling
    good = native_line(query_id="q0")
    jsonl = write(tmp_path / "run.jsonl", f"{good}\n{record}\n")
    (problem,) = refused(db, str(jsonl))
    assert (problem["line"], problem["field"]) == ("2", field)
    assert re.search(
        r"lone surrogate \(\\ud[89a-f][0-9a-f]{2}\), not valid Unicode", problem["problem"]
    )
    # the same records as one pretty-printed JSON array: the line where the element starts
    array = write(tmp_path / "run.json", f"[\n{good},\n{record}\n]\n")
    (problem,) = refused(db, str(array))
    assert (problem["line"], problem["field"]) == ("3", field)


def test_lone_surrogate_in_the_header_record_and_the_sidecar(db: Path, tmp_path: Path) -> None:
    header = json.dumps({"rageval_run": {"name": "run \ud800"}})
    run = write(tmp_path / "run.jsonl", f"{header}\n{native_line()}\n")
    (problem,) = refused(db, str(run))
    assert (problem["line"], problem["field"]) == ("1", "rageval_run.name")
    write(tmp_path / "run.jsonl", native_line() + "\n")
    write(tmp_path / "run.jsonl.run.json", json.dumps({"description": "\udfff"}))
    (problem,) = refused(db, str(run))
    assert problem["file"].endswith("run.jsonl.run.json")
    assert (problem["line"], problem["field"]) == ("1", "description")


def test_an_escaped_surrogate_pair_and_an_escaped_backslash_still_import(tmp_path: Path) -> None:
    """Only a lone surrogate is refused: a pair is one character, and \\\\ud800 is plain text."""
    path = write(
        tmp_path / "run.jsonl",
        native_line(query="smile \U0001f600")
        + "\n"
        + native_line(query_id="q2", query="\\ud800 as text")
        + "\n",
    )
    text = path.read_text()
    assert "\\ud83d\\ude00" in text and "\\\\ud800" in text
    with Store(":memory:") as store:
        out = import_paths(store, [path])
        assert not out.failed, out.problems
        queries = list(store.iter_queries(out.imported[0].run_id))
    assert [q.query for q in queries] == ["smile \U0001f600", "\\ud800 as text"]


#: per JSON format: its files, the one damaged, a text in it, that text with a lone surrogate and
#: the field named, that text with a 400-digit integer and the field named
OTHER_FORMATS = [
    (
        "tatrag",
        ["tatrag/gold.json", "tatrag/retrieval.json"],
        "tatrag/retrieval.json",
        '"Revenue by region", "score": 0.42',
        ('"Revenue \\ud800 region", "score": 0.42', "documents[1].content"),
        (f'"Revenue by region", "score": {HUGE}', "documents[1].score"),
    ),
    (
        "tatrag",
        ["tatrag/gold.json", "tatrag/retrieval.json"],
        "tatrag/gold.json",
        '"page": 52, "para_index": 17, "content": "Total cost of revenue $48,881"',
        ('"page": 52, "para_index": 17, "content": "Total \\udfff"', "gold[0].content"),
        (
            f'"page": {HUGE}, "para_index": 17, "content": "Total cost of revenue $48,881"',
            "gold[0].page",
        ),
    ),
    (
        "qa_pairs",
        ["qa_pairs/pairs.jsonl", "qa_pairs/retrieval.json"],
        "qa_pairs/retrieval.json",
        '"Some goods are zero-rated.", "score": 0.55',
        ('"Some goods \\ud800", "score": 0.55', "results[1].text"),
        (f'"Some goods are zero-rated.", "score": -{HUGE}', "results[1].score"),
    ),
    (
        "qa_pairs",
        ["qa_pairs/pairs.jsonl", "qa_pairs/retrieval_map.json"],
        "qa_pairs/retrieval_map.json",
        '"p3": []',
        ('"p\\ud800": []', "json"),
        (f'"p3": [{HUGE}]', "p3[0]"),
    ),
    (
        "qa_pairs",
        ["qa_pairs/pairs.jsonl", "qa_pairs/retrieval.json"],
        "qa_pairs/pairs.jsonl",
        '"question": "What is the standard VAT rate?"',
        ('"question": "What is the \\uDFFF VAT rate?"', "question"),
        (f'"question": "What is the standard VAT rate?", "n": {HUGE}', "n"),
    ),
    (
        "ragas",
        ["ragas/rows.jsonl"],
        "ragas/rows.jsonl",
        '"response": "It is 20%."',
        ('"response": "It is \\ud800."', "response"),
        (f'"response": {HUGE}', "response"),
    ),
    (
        "ragas",
        ["ragas/rows_ids.json"],
        "ragas/rows_ids.json",
        '"faithfulness": 0.5',
        ('"faithfulness": "\\ud800"', "faithfulness"),
        (f'"faithfulness": {HUGER}', "faithfulness"),
    ),
    (
        "ranx",
        ["ranx/run.json", "ranx/qrels.json"],
        "ranx/run.json",
        '"d2": 0.8',
        ('"d\\ud800": 0.8', "q1"),
        (f'"d2": {HUGE}', "q1.d2"),
    ),
    (
        "beir",
        ["beir/results.json", "beir/mini/qrels/test.tsv", "beir/mini/corpus.jsonl"],
        "beir/mini/corpus.jsonl",
        '"text": "Lyon is a city in France."',
        ('"text": "Lyon \\ud800"', "text"),
        (f'"text": "Lyon is a city in France.", "n": {HUGE}', "n"),
    ),
    (
        "openinference",
        ["openinference/spans.jsonl", "openinference/qrels.txt"],
        "openinference/spans.jsonl",
        '"retrieval.documents.1.document.score": 0.8',
        (
            '"retrieval.documents.1.document.score": "\\ud800"',
            "attributes.retrieval.documents.1.document.score",
        ),
        (
            f'"retrieval.documents.1.document.score": {HUGE}',
            "attributes.retrieval.documents.1.document.score",
        ),
    ),
    (
        "deepeval",
        ["deepeval/dataset.json"],
        "deepeval/dataset.json",
        '"actual_output": "30 days."',
        ('"actual_output": "30 \\ud800."', "actual_output"),
        (f'"actual_output": {HUGE}', "actual_output"),
    ),
    (
        "llamaindex",
        ["llamaindex/results.jsonl"],
        "llamaindex/results.jsonl",
        '"query": "q two"',
        ('"query": "q \\ud800"', "query"),
        (f'"query": {HUGE}', "query"),
    ),
]


@pytest.mark.parametrize(
    ("fmt", "files", "target", "old", "surrogate", "huge"),
    OTHER_FORMATS,
    ids=[f"{c[0]}-{Path(c[2]).name}" for c in OTHER_FORMATS],
)
@pytest.mark.parametrize("attack", ["surrogate", "huge"])
def test_lone_surrogate_and_huge_integer_in_every_json_format(
    db: Path,
    tmp_path: Path,
    fmt: str,
    files: list[str],
    target: str,
    old: str,
    surrogate: tuple[str, str],
    huge: tuple[str, str],
    attack: str,
) -> None:
    new, field = surrogate if attack == "surrogate" else huge
    text = (DATA / target).read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    line = text.count("\n", 0, text.index(old)) + 1
    damaged = write(tmp_path / Path(target).name, text.replace(old, new))
    paths = [damaged if name == target else DATA / name for name in files]
    for forced in (None, fmt):
        problems = refused(db, *map(str, paths), *(["--format", forced] if forced else []))
        expected = "lone surrogate" if attack == "surrogate" else "digits, too large"
        assert (problems[0]["file"], problems[0]["line"], problems[0]["field"]) == (
            str(damaged),
            str(line),
            field,
        ), [p[0] for p in problems]
        assert expected in problems[0]["problem"]


# --- 2. integer literals of hundreds of digits ------------------------------------------------

HUGE_RECORDS = [
    ("retrieved[0].score", lambda n: native_line(retrieved=[{"doc_id": "d1", "score": n}])),
    ("latency_ms.total", lambda n: native_line(latency_ms={"total": n})),
    ("tokens.prompt", lambda n: native_line(tokens={"prompt": n})),
    ("relevance.d1", lambda n: native_line(relevance={"d1": n})),
    ("judge.f", lambda n: native_line(judge={"f": n})),
    ("tags.n", lambda n: native_line(tags={"n": n})),
    (
        "retrieved[0].metadata.page",
        lambda n: native_line(retrieved=[{"doc_id": "d1", "metadata": {"page": n}}]),
    ),
]


@pytest.mark.parametrize(("field", "make"), HUGE_RECORDS, ids=[f for f, _ in HUGE_RECORDS])
@pytest.mark.parametrize("digits", [HUGE, HUGER, "-" + HUGE])
def test_integer_literal_of_hundreds_of_digits_is_a_file_line_error(
    db: Path, tmp_path: Path, field: str, make: object, digits: str
) -> None:
    record = make(0).replace(": 0", ": " + digits)  # type: ignore[operator]
    run = write(tmp_path / "run.jsonl", native_line(query_id="q0") + "\n" + record + "\n")
    (problem,) = refused(db, str(run))
    assert (problem["line"], problem["field"]) == ("2", field)
    assert f"an integer of {len(digits.lstrip('-'))} digits, too large" in problem["problem"]
    array = write(tmp_path / "run.json", "[" + record + "]")
    (problem,) = refused(db, str(array))
    assert (problem["line"], problem["field"]) == ("1", field)


def test_the_largest_integer_a_float_holds_is_read_and_one_beyond_is_refused() -> None:
    fits = "1" + "0" * MAX_INT_DIGITS  # 309 digits, 1e308: still a float
    assert loads(f"[{fits}]") == [10**MAX_INT_DIGITS]
    with pytest.raises(json.JSONDecodeError, match="an integer of 309 digits"):
        loads("[2" + "0" * MAX_INT_DIGITS + "]")


@pytest.mark.parametrize(
    "record",
    [
        SURROGATE_RECORDS[2][1],
        HUGE_RECORDS[0][1](0).replace(": 0", ": " + HUGE),
        HUGE_RECORDS[5][1](0).replace(": 0", ": " + HUGE),
    ],
)
def test_the_duckdb_route_sends_lone_surrogates_and_huge_integers_to_the_line_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record: str
) -> None:
    """Large files are read by DuckDB; it must refuse what the line reader refuses."""
    monkeypatch.setattr(native_duckdb, "MIN_FILE_BYTES", 0)
    run = write(
        tmp_path / "big.jsonl",
        "".join(native_line(query_id=f"q{i}") + "\n" for i in range(50))
        + record.replace('"q1"', '"q99"')
        + "\n",
    )
    with Store(":memory:") as store:
        before = store.table_counts()
        out = import_paths(store, [run])
        assert out.failed and store.table_counts() == before
    assert [(p.line, p.severity) for p in out.problems] == [(51, "error")], out.problems


# --- 3. a CSV with CR-only line endings -----------------------------------------------------------


def test_cr_only_line_endings_in_a_csv_read_as_lines(db: Path, tmp_path: Path) -> None:
    """An old-Mac CSV ("\\r" alone ends each line) is read as any CSV, line numbers included."""
    rows = ["query_id,doc_id,rank,text", 'q1,d1,1,"two\rlines"', "q1,d2,2,b", "q2,d3,1,c"]
    good = tmp_path / "mac.csv"
    good.write_bytes("\r".join(rows).encode())
    with Store(":memory:") as store:
        out = import_paths(store, [good])
        assert not out.failed, out.problems
        queries = list(store.iter_queries(out.imported[0].run_id))
    assert [(q.query_id, [(c.doc_id, c.text) for c in q.retrieved or ()]) for q in queries] == [
        ("q1", [("d1", "two\rlines"), ("d2", "b")]),
        ("q2", [("d3", "c")]),
    ]
    bad = tmp_path / "mac_bad.csv"
    bad.write_bytes("\r".join([*rows, "q3,d4,x,d"]).encode() + b"\r")
    (problem,) = refused(db, str(bad))
    assert (problem["line"], problem["field"]) == ("6", "rank")  # the quoted cell spans lines 2-3
    ragas = tmp_path / "rows.csv"
    ragas.write_bytes(b'user_input,retrieved_contexts\rwhat?,"[""a""]"\rwho?,"[""b""]"\r')
    with Store(":memory:") as store:
        out = import_paths(store, [ragas])
        assert not out.failed and out.imported[0].n_queries == 2, out.problems


# --- 4. Parquet that is not UTF-8 where text goes ---------------------------------------------------


def patched_parquet(path: Path, table: pa.Table, old: bytes, new: bytes) -> Path:
    """table written as Parquet (no Arrow schema copy, plain encoding), then old -> new in its bytes.

    pyarrow writes only valid UTF-8 names and strings, so the bad bytes are patched in (of the
    same length, so every offset in the footer stays right).
    """
    assert len(old) == len(new)
    pq.write_table(
        table,
        path,
        store_schema=False,
        compression="none",
        use_dictionary=False,
        write_statistics=False,
    )
    raw = path.read_bytes()
    assert old in raw
    path.write_bytes(raw.replace(old, new))
    return path


def test_parquet_column_name_that_is_not_utf8_is_a_clear_error(db: Path, tmp_path: Path) -> None:
    table = pa.table({"query_id": ["q1"], "doc_id": ["d1"], "tag.XYZ": ["x"]})
    path = patched_parquet(tmp_path / "names.parquet", table, b"tag.XYZ", b"tag.\xff\xfe\xfd")
    (problem,) = refused(db, str(path))
    assert (problem["line"], problem["field"]) == ("0", "file")
    assert "a column name is not valid UTF-8" in problem["problem"]


def test_parquet_text_that_is_not_utf8_names_its_row_and_column(db: Path, tmp_path: Path) -> None:
    table = pa.table({"query_id": ["q1", "q2", "q3"], "doc_id": ["d1", "dXYZ", "d3"]})
    path = patched_parquet(tmp_path / "values.parquet", table, b"dXYZ", b"d\xff\xfe\xfd")
    problems = refused(db, str(path))
    assert (problems[0]["line"], problems[0]["field"], problems[0]["problem"]) == (
        "2",
        "doc_id",
        "text is not valid UTF-8",
    )


# --- 5. paths that name no file -------------------------------------------------------------------


@pytest.fixture()
def loop(tmp_path: Path) -> Path:
    """a -> b -> a"""
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    return tmp_path / "a"


def test_symlink_loop_nul_byte_long_name_and_lone_surrogate_paths_are_clear_errors(
    db: Path, tmp_path: Path, loop: Path
) -> None:
    cases = {
        str(loop): "a symlink loop",
        str(loop / "run.jsonl"): "a symlink loop",
        str(tmp_path / "x\x00y.jsonl"): "the path holds a NUL byte",
        str(tmp_path / ("x" * 5000 + ".jsonl")): "cannot read: File name too long",
        str(
            tmp_path / "r\ud800.jsonl"
        ): "the path holds a lone surrogate (\\ud800), not a file name",
    }
    for path, expected in cases.items():
        (problem,) = refused(db, path)
        assert (problem["line"], problem["field"], problem["problem"]) == ("0", "file", expected)
    # all at once, with a good file: every bad path reported, nothing imported
    good = make_run(tmp_path / "good.jsonl", 2, evidence=False)
    problems = refused(db, str(good), *cases)
    assert sorted(p["problem"] for p in problems) == sorted(cases.values())


def test_a_file_name_that_is_not_utf8_imports_under_an_escaped_name(tmp_path: Path) -> None:
    """os.fsdecode keeps a bad byte of a name as a lone surrogate (U+DCFF for 0xff): printable,
    storable, and the file is read."""
    run = tmp_path / os.fsdecode(b"run\xff.jsonl")
    write(run, native_line() + "\n")
    with Store(":memory:") as store:
        out = import_paths(store, [run])
        assert not out.failed, out.problems
        assert out.imported[0].name == "run\\xff" and out.imported[0].sources[0].endswith(
            "run\\xff.jsonl"
        )


def test_a_sidecar_name_too_long_for_the_disk_is_no_sidecar(tmp_path: Path) -> None:
    run = write(tmp_path / ("r" * 245 + ".jsonl"), native_line() + "\n")  # + ".run.json": 260
    log = ProblemLog()
    (parsed,) = read_inputs([run], None, log)
    assert len(list(parsed.queries)) == 1 and not log.problems


# --- 6. the app's path import ---------------------------------------------------------------------


@pytest.fixture()
def allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    monkeypatch.setenv(imports.IMPORT_DIRS_ENV, str(folder))
    monkeypatch.chdir(folder)
    return folder


def test_app_path_import_of_nul_long_loop_and_surrogate_paths_is_a_usage_error(
    allowed: Path,
) -> None:
    (allowed / "a").symlink_to("b")
    (allowed / "b").symlink_to("a")
    cases = {
        "x\x00y.jsonl": "the path holds a NUL byte",
        "x" * 5000 + ".jsonl": "cannot read: File name too long",
        "a": "a symlink loop",
        "a/run.jsonl": "a symlink loop",
        "r\ud800.jsonl": "the path holds a lone surrogate (\\ud800), not a file name",
        "~no-such-user-here/run.jsonl": "no such file",
    }
    for text, expected in cases.items():
        with pytest.raises(UsageError) as caught:
            imports.check_import_path(text)
        assert str(caught.value).endswith(f": {expected}"), str(caught.value)
        assert "\ud800" not in str(caught.value)  # printable: the surrogate is spelled as an escape


def test_app_path_import_of_a_cr_only_csv_reads_it(allowed: Path) -> None:
    path = allowed / "mac.csv"
    path.write_bytes(b"query_id,doc_id,rank\rq1,d1,1\rq1,d2,2\r")
    checked = imports.check_import_path("mac.csv")
    with Store(":memory:") as store:
        out = import_paths(store, [checked])
    assert not out.failed and out.imported[0].n_chunks == 2, out.problems


def test_app_import_dirs_leave_out_a_folder_that_names_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loop: Path
) -> None:
    good = tmp_path / "runs"
    good.mkdir()
    monkeypatch.setenv(
        imports.IMPORT_DIRS_ENV, os.pathsep.join([str(loop), str(good), "~no-such-user-here/x"])
    )
    dirs = imports.import_dirs()
    assert (
        good.resolve() in dirs and loop not in dirs and len(dirs) == 2
    )  # "~no-such..." as written


def test_a_sidecar_symlink_out_of_the_import_folders_is_refused(
    allowed: Path, tmp_path: Path
) -> None:
    """FILE.run.json beside an allowed FILE is read too: a symlink must not lead it outside."""
    secret = tmp_path / "secret.json"
    secret.write_text('{"name": "SECRET"}')
    make_run(allowed / "run.jsonl", 2, evidence=False)
    (allowed / "run.jsonl.run.json").symlink_to(secret)
    with pytest.raises(
        UsageError, match=r"run\.jsonl\.run\.json \(the run facts beside it\): outside the folders"
    ):
        imports.check_import_path("run.jsonl")
    hidden = allowed / ".env"
    hidden.write_text('{"name": "SECRET=1"}')
    (allowed / "run.jsonl.run.json").unlink()
    (allowed / "run.jsonl.run.json").symlink_to(hidden)
    with pytest.raises(UsageError, match="hidden file or folder"):
        imports.check_import_path("run.jsonl")
    # a sidecar inside the folder, symlink or not, is fine; so is a dangling or looping one (unread)
    inside = allowed / "facts.json"
    inside.write_text('{"name": "ok"}')
    (allowed / "run.jsonl.run.json").unlink()
    (allowed / "run.jsonl.run.json").symlink_to(inside)
    assert imports.check_import_path("run.jsonl") == (allowed / "run.jsonl").resolve()
    (allowed / "run.jsonl.run.json").unlink()
    (allowed / "run.jsonl.run.json").symlink_to(allowed / "run.jsonl.run.json")
    assert imports.check_import_path("run.jsonl") == (allowed / "run.jsonl").resolve()


def test_an_uploaded_file_with_a_nul_byte_or_a_long_name_is_a_usage_error(tmp_path: Path) -> None:
    class Upload:
        def __init__(self, name: str) -> None:
            self.name = name

        def getvalue(self) -> bytes:
            return b"{}"

    for name, reason in (
        ("x\x00.jsonl", "no usable file name"),
        ("x" * 5000, "File name too long"),
        ("r\ud800.jsonl", "no usable file name"),
    ):
        with pytest.raises(UsageError, match=re.escape(reason)):
            imports.save_uploads([Upload(name)], tmp_path)


def test_lone_surrogate_in_a_ragas_csv_list_cell_json_or_python_literal(
    db: Path, tmp_path: Path
) -> None:
    """A list cell is JSON or a Python literal: both spell a lone surrogate ("\\ud800", '\\ud800')."""
    for cell in ('"[""ok"", ""\\ud800""]"', "\"['ok', '\\ud800']\""):
        rows = write(tmp_path / "rows.csv", f"user_input,retrieved_contexts\nwhat?,{cell}\n")
        (problem,) = refused(db, str(rows))
        assert (problem["line"], problem["field"]) == ("2", "retrieved_contexts[1]")
        assert "lone surrogate (\\ud800)" in problem["problem"]


@pytest.mark.parametrize("line_end", ["", "\r"], ids=["one-line", "cr-only"])
def test_a_query_id_twice_on_one_line_of_a_json_array_is_a_duplicate(
    db: Path, tmp_path: Path, line_end: str
) -> None:
    """Two records on one line (a one-line array, or lines ended by CR alone) are still two."""
    run = write(tmp_path / "run.json", f"[{native_line()},{line_end}{native_line()}]")
    (problem,) = refused(db, str(run))
    assert (problem["line"], problem["field"], problem["problem"]) == (
        "1",
        "query_id",
        'duplicate "q1" (first on line 1)',
    )
