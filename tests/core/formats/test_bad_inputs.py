"""Every file in tests/data/bad is refused with an exact file:line: field: problem, never a traceback.

Files named tatrag_*, qa_*, ragas_* and trec_* have their own suites beside their readers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rageval_core.errors import InputError, ProblemLog
from rageval_core.formats import native, read_inputs
from tests.paths import REPO

BAD = REPO / "tests" / "data" / "bad"
OTHER_SUITES = ("tatrag_", "qa_", "ragas_", "trec_")
EXPECTED = (
    "(expected one of: native, tatrag, qa_pairs, ragas, deepeval, llamaindex, openinference, "
    "ranx, trec, beir, table; see docs/formats.md)"
)

# (file, forced format or None, the start of one expected problem line)
CASES = [
    ("empty.jsonl", None, "empty.jsonl:0: file: empty file"),
    ("blank.jsonl", None, "blank.jsonl:0: file: empty file"),
    ("binary.bin", None, f"binary.bin:0: file: binary file, not a run {EXPECTED}"),
    ("latin1.jsonl", None, "latin1.jsonl:0: file: binary file, not a run"),
    ("utf16.jsonl", None, "utf16.jsonl:0: file: UTF-16 text (save it as UTF-8), not a run"),
    ("unknown_prose.txt", None, f"unknown_prose.txt:0: file: unknown format {EXPECTED}"),
    (
        "native_bad_json.jsonl",
        None,
        "native_bad_json.jsonl:3: json: Expecting ',' delimiter (column 19)",
    ),
    (
        "native_query_id_number.jsonl",
        None,
        "native_query_id_number.jsonl:2: query_id: expected a string, got a number",
    ),
    ("native_missing_query_id.jsonl", None, "native_missing_query_id.jsonl:2: query_id: missing"),
    (
        "native_duplicate_query_id.jsonl",
        None,
        'native_duplicate_query_id.jsonl:3: query_id: duplicate "q1" (first on line 1)',
    ),
    (
        "native_nan_score.jsonl",
        None,
        "native_nan_score.jsonl:1: retrieved[1].score: expected a finite number, got NaN",
    ),
    (
        "native_inf_score.jsonl",
        None,
        "native_inf_score.jsonl:2: retrieved[0].score: expected a finite number, got Infinity",
    ),
    (
        "native_latency_text.jsonl",
        None,
        'native_latency_text.jsonl:1: latency_ms.retrieve: expected a finite number >= 0, got "fast"',
    ),
    (
        "native_latency_negative.jsonl",
        None,
        "native_latency_negative.jsonl:1: latency_ms.retrieve: expected a finite number >= 0, got -3",
    ),
    (
        "native_tokens_float.jsonl",
        None,
        "native_tokens_float.jsonl:1: tokens.prompt: expected an integer >= 0, got 12.5",
    ),
    (
        "native_wrong_types.jsonl",
        None,
        "native_wrong_types.jsonl:1: query: expected a string, got a number",
    ),
    (
        "native_retrieved_missing.jsonl",
        None,
        "native_retrieved_missing.jsonl:2: retrieved: missing (use []",
    ),
    (
        "native_retrieved_object.jsonl",
        None,
        "native_retrieved_object.jsonl:1: retrieved: expected an array or null, got an object",
    ),
    (
        "native_chunk_no_doc_id.jsonl",
        None,
        "native_chunk_no_doc_id.jsonl:1: retrieved[1].doc_id: missing",
    ),
    (
        "native_chunk_doc_id_number.jsonl",
        None,
        "native_chunk_doc_id_number.jsonl:1: retrieved[0].doc_id: expected a string, got a number",
    ),
    (
        "native_relevance_label.jsonl",
        None,
        'native_relevance_label.jsonl:1: relevance.d1: expected a number label, got "high"',
    ),
    (
        "native_relevant_ids_string.jsonl",
        None,
        "native_relevant_ids_string.jsonl:1: relevant_ids: expected an array of strings, got a string",
    ),
    (
        "native_evidence_number.jsonl",
        None,
        "native_evidence_number.jsonl:1: evidence[1]: expected a string, got a number",
    ),
    (
        "native_tag_object.jsonl",
        None,
        "native_tag_object.jsonl:1: tags.topic: expected a string, got an object",
    ),
    (
        "native_judge_text.jsonl",
        None,
        "native_judge_text.jsonl:1: judge.faithfulness: expected a finite number or a non-empty "
        "label string, got an array",
    ),
    (
        "native_metadata_nan.jsonl",
        None,
        "native_metadata_nan.jsonl:1: retrieved[0].metadata.pos[1]: expected a finite number",
    ),
    (
        "native_record_array.jsonl",
        None,
        "native_record_array.jsonl:2: record: expected an object, got an array",
    ),
    (
        "native_header_late.jsonl",
        None,
        "native_header_late.jsonl:2: rageval_run: the header record must be the first record",
    ),
    (
        "native_header_bad.jsonl",
        None,
        "native_header_bad.jsonl:1: rageval_run.settings: expected an object, got an array",
    ),
    ("native_only_header.jsonl", None, "native_only_header.jsonl:0: file: no queries"),
    (
        "native_many_errors.jsonl",
        None,
        'native_many_errors.jsonl:6: query_id: duplicate "q1" (first on line 1)',
    ),
    (
        "native_array_bad_element.json",
        None,
        "native_array_bad_element.json:3: retrieved[0].score: expected a finite number, got NaN",
    ),
    (
        "native_array_bad_json.json",
        None,
        "native_array_bad_json.json:4: json: Expecting ',' delimiter (column 3)",
    ),
    (
        "native_array_unterminated.json",
        None,
        "native_array_unterminated.json:3: json: unterminated array",
    ),
    (
        "table_disagree.csv",
        None,
        'table_disagree.csv:3: answer: disagrees with line 2 of query "q1"',
    ),
    (
        "table_multiline_disagree.csv",
        None,
        'table_multiline_disagree.csv:4: query: disagrees with line 2 of query "q1"',
    ),
    (
        "table_duplicate_rank.csv",
        None,
        'table_duplicate_rank.csv:4: rank: rank 1 used twice in query "q1" (also on line 2)',
    ),
    (
        "table_bad_score.csv",
        None,
        'table_bad_score.csv:2: score: expected a finite number, got "high"',
    ),
    (
        "table_nan_score.csv",
        None,
        "table_nan_score.csv:3: score: expected a finite number, got NaN",
    ),
    ("table_bad_rank.csv", None, 'table_bad_rank.csv:2: rank: expected an integer >= 1, got "0"'),
    (
        "table_missing_rank.csv",
        None,
        "table_missing_rank.csv:3: rank: missing (the file has a rank column)",
    ),
    ("table_cell_count.csv", None, "table_cell_count.csv:3: file: expected 3 cells, got 4"),
    ("table_header_only.csv", None, "table_header_only.csv:0: file: no rows"),
    (
        "table_relevant_ids_json.csv",
        None,
        "table_relevant_ids_json.csv:2: relevant_ids: not valid JSON",
    ),
    (
        "table_tokens_float.csv",
        None,
        'table_tokens_float.csv:2: tokens.prompt: expected an integer >= 0, got "12.5"',
    ),
    (
        "table_latency_negative.csv",
        None,
        "table_latency_negative.csv:2: latency_ms.retrieve: expected a finite number >= 0, got -1",
    ),
    ("table_blank_doc_id.csv", None, "table_blank_doc_id.csv:3: doc_id: missing"),
    ("table_missing_doc_id.csv", "table", "table_missing_doc_id.csv:1: doc_id: missing column"),
    ("table_corrupt.parquet", None, "table_corrupt.parquet:0: file: not a readable Parquet file"),
]


def refuse(paths: list[Path], fmt: str | None, log: ProblemLog | None = None) -> InputError:
    """Read every run to its end as the store does, and return the InputError it must end in."""
    log = log if log is not None else ProblemLog()
    with pytest.raises(InputError) as exc:
        for run in read_inputs(paths, fmt, log):
            for _ in run.queries:
                pass
        log.raise_if_errors()
    return exc.value


@pytest.mark.parametrize(("name", "fmt", "expected"), CASES, ids=[c[0] for c in CASES])
def test_bad_file_is_refused_with_its_place(
    monkeypatch: pytest.MonkeyPatch, name: str, fmt: str | None, expected: str
) -> None:
    monkeypatch.chdir(BAD)
    error = refuse([Path(name)], fmt)
    lines = str(error).splitlines()
    assert any(line.startswith(expected) for line in lines), lines
    assert "Traceback" not in str(error)


def test_every_bad_file_has_a_case() -> None:
    ours = {p.name for p in BAD.iterdir() if not p.name.startswith(OTHER_SUITES)}
    assert ours == {name for name, _, _ in CASES}


def test_several_errors_in_one_file_are_all_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BAD)
    error = refuse([Path("native_many_errors.jsonl")], None)
    assert [str(p) for p in error.problems] == [
        "native_many_errors.jsonl:2: query_id: expected a string, got a number",
        "native_many_errors.jsonl:4: retrieved[0].score: expected a finite number, got NaN",
        'native_many_errors.jsonl:5: latency_ms.total: expected a finite number >= 0, got "slow"',
        'native_many_errors.jsonl:6: query_id: duplicate "q1" (first on line 1)',
    ]


def test_problems_in_several_files_are_all_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BAD)
    error = refuse([Path("native_nan_score.jsonl"), Path("table_bad_score.csv")], None)
    assert [(p.file, p.line) for p in error.problems] == [
        ("native_nan_score.jsonl", 1),
        ("table_bad_score.csv", 2),
    ]


def test_the_cap_keeps_the_message_short_and_counts_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    bad = [json.dumps({"query_id": i, "retrieved": []}) for i in range(60)]
    good = [json.dumps({"query_id": f"ok{i}", "retrieved": []}) for i in range(5)]
    path.write_text("\n".join(bad + good) + "\n")
    log = ProblemLog(cap=50)
    run = native.read(path, None, log)
    yielded = list(run.queries)
    assert yielded == []  # the import is doomed once the log is full of errors
    assert len(log.problems) == 50 and log.dropped == 10
    with pytest.raises(InputError) as exc:
        log.raise_if_errors()
    lines = str(exc.value).splitlines()
    assert len(lines) == 51
    assert lines[0].endswith("many.jsonl:1: query_id: expected a string, got a number")
    assert lines[-1] == "... and 10 more problems"
    assert exc.value.truncated == 10
