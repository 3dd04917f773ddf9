"""`rageval diagnose`: the text and the JSON give each constructed query exactly its reason; the
JSON's keys are the documented contract; bad input is one line and exit 2 (3 for the store)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli import import_files, rageval
from tests.core.diagnosis import runs


@pytest.fixture(scope="module")
def run_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return runs.write(
        tmp_path_factory.mktemp("diag") / "built.jsonl", runs.evidence_records(), "built"
    )


def test_json_gives_each_query_its_constructed_reasons(run_file: Path) -> None:
    done = rageval("diagnose", str(run_file), "--json", "--per-query")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert list(out) == ["run", "settings", "spans", "queries", "what_if", "per_query"]
    got = {q["query_id"]: [m["reason"] for m in q["missed"]] for q in out["per_query"]}
    assert got == {q: r for q, r in runs.EXPECTED.items() if r}
    primary = {q["query_id"]: q["reason"] for q in out["per_query"]}
    assert primary == {q: r for q, r in runs.PRIMARY.items() if q in got}
    items = {q["query_id"]: q["missed"][0] for q in out["per_query"]}
    assert items["q_below"] == {"span": 0, "reason": "ranked_below_k", "rank": 14}
    assert items["q_numbers"] == {"span": 0, "reason": "numbers_differ", "rank": 1}
    assert items["q_split"]["rank"] == [2, 5]
    assert round(items["q_near"]["score"], 2) == 0.66
    assert out["queries"]["no_gold"] == 1
    assert [w["change"] for w in out["what_if"]] == [
        "numbers guard off",
        "k = 20",
        out["what_if"][2]["change"],
        "threshold 0.6",
    ]
    assert out["what_if"][2]["change"].startswith("chunks keeping ")
    assert all(w["of"] == 7 for w in out["what_if"])


def test_text_names_each_reason_with_its_sentence(run_file: Path) -> None:
    done = rageval("diagnose", str(run_file), "--per-query")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "run built: 7 of 9 queries fail (evidence mode, k = 10" in text
    for qid, reason in runs.PRIMARY.items():
        if reason not in ("passing", "no_gold"):
            assert f"\n{qid}: {reason}\n" in text
    assert "span 1 is covered at rank 14, below k = 10" in text
    assert "span 1 is split: its first half is in chunk #2, its second in #5" in text
    assert "span 1: best score 0.66, 0.04 under the threshold" in text
    assert "k = 20 would fix 1 of 7 failing queries" in text
    assert "threshold 0.6 would fix 2 of 7 failing queries" in text
    assert "numbers guard off would fix 1 of 7 failing queries" in text


def test_the_settings_flags_apply(run_file: Path) -> None:
    done = rageval(
        "diagnose", str(run_file), "--json", "--per-query", "--k", "15", "--near-miss-band", "0"
    )
    out = json.loads(done.stdout)
    got = {q["query_id"]: q["reason"] for q in out["per_query"]}
    assert "q_below" not in got and got["q_near"] == "not_retrieved"
    assert out["settings"]["k"] == 15 and out["settings"]["near_miss_band"] == 0.0


def test_a_stored_run_by_name_with_by_tag(tmp_path: Path) -> None:
    records = runs.evidence_records()
    for i, r in enumerate(records):
        r["tags"] = {"half": "first" if i < 4 else "second"}
    db = tmp_path / "s.duckdb"
    import_files(db, runs.write(tmp_path / "t.jsonl", records, "tagged"))
    done = rageval("diagnose", "tagged", "--by", "half", "--json", db=db)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["by"]["groups"]["first"]["failing"] == 3
    text = rageval("diagnose", "tagged", "--by", "half", db=db).stdout
    assert "failing queries by half (primary reason):" in text


def test_ids_mode_json(tmp_path: Path) -> None:
    path = runs.write(tmp_path / "ids.jsonl", runs.ids_records(), "ids")
    out = json.loads(rageval("diagnose", str(path), "--json", "--per-query").stdout)
    assert out["queries"] == {"relevant_below_k": 1, "not_retrieved": 1, "no_gold": 2}
    assert out["unjudged_top_k"] == 17
    missed = {q["query_id"]: q["missed"] for q in out["per_query"]}
    assert missed["i_below"] == [{"span": None, "reason": "relevant_below_k", "rank": 14}]
    assert missed["i_none"] == [{"span": None, "reason": "not_retrieved", "rank": None}]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--near-miss-band", "1.5"], 2, "near-miss band must be between 0 and 1, got 1.5"),
        (["--split-min-chars", "0"], 2, "split minimum must be an integer >= 1, got 0"),
        (["--by", "nope"], 2, "has no tag 'nope'"),
        (["--preset", "tat-rag"], 2, "--preset does not apply"),
    ],
)
def test_bad_settings_are_one_line_and_exit_2(
    run_file: Path, args: list[str], code: int, message: str
) -> None:
    done = rageval("diagnose", str(run_file), *args)
    assert done.returncode == code and done.stdout == ""
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_an_unknown_run_names_the_known_ones(tmp_path: Path, run_file: Path) -> None:
    db = tmp_path / "s.duckdb"
    import_files(db, run_file)
    done = rageval("diagnose", "nope", db=db)
    assert done.returncode == 2 and "built" in done.stderr and "Traceback" not in done.stderr


def test_a_broken_run_file_is_file_line_field_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "a", "retrieved": [{"doc_id": 5}]}\n', encoding="utf-8")
    done = rageval("diagnose", str(bad))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{bad}:1:" in done.stderr or "bad.jsonl:1:" in done.stderr


def test_a_store_that_is_a_directory_is_exit_3(tmp_path: Path) -> None:
    done = rageval("diagnose", "some-run", db=tmp_path)
    assert done.returncode == 3 and "Traceback" not in done.stderr


def test_hostile_query_ids_are_escaped_in_the_terminal(tmp_path: Path) -> None:
    records = runs.evidence_records()
    records[1]["query_id"] = "q\x1b[31mred\x07"
    path = runs.write(tmp_path / "hostile.jsonl", records, "hostile")
    done = rageval("diagnose", str(path), "--per-query")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "red" in done.stdout
