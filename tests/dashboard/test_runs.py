"""Runs page: import by upload and by path, problems shown and nothing stored, rename, delete."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rageval_core.errors import ProblemLog
from rageval_core.formats import read_inputs
from rageval_core.store import Store

REPO = Path(__file__).resolve().parents[2]
GOOD = REPO / "tests" / "data" / "good" / "native_full.jsonl"
BAD = REPO / "tests" / "data" / "bad" / "native_wrong_types.jsonl"


def tiny_run(name: str, n: int = 3) -> bytes:
    lines = [{"rageval_run": {"name": name, "settings": {"top_k": 2, "retriever": "toy"}}}] + [
        {
            "query_id": f"q{i}",
            "retrieved": [{"doc_id": f"d{i}"}, {"doc_id": "x"}],
            "relevant_ids": [f"d{i}"],
        }
        for i in range(n)
    ]
    return ("\n".join(json.dumps(x) for x in lines) + "\n").encode()


def names(db: Path) -> list[str]:
    with Store(db) as store:
        return [r.name for r in store.runs()]


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    """A store holding one small run ("first")."""
    path = tmp_path / "runs.duckdb"
    source = tmp_path / "first.jsonl"
    source.write_bytes(tiny_run("first"))
    with Store(path) as store:
        log = ProblemLog()
        store.import_run(read_inputs([source], None, log)[0], log)
    return path


def runs_page(make_app: Callable[..., AppTest], db: Path) -> AppTest:
    at = make_app("runs.py", db=db)
    assert not at.exception, [e.value for e in at.exception]
    return at


def run_table(at: AppTest) -> list[str]:
    """Names in the stored-runs table (the last run table: a note may show the new run above)."""
    tables = [
        d.value for d in at.dataframe if {"name", "queries", "evidence"} <= set(d.value.columns)
    ]
    return list(tables[-1]["name"])


def test_the_run_list_shows_facts(make_app: Callable[..., AppTest], db: Path) -> None:
    at = runs_page(make_app, db)
    table = next(d.value for d in at.dataframe if "name" in d.value.columns)
    row = table.iloc[0]
    assert row["name"] == "first" and row["queries"] == 3 and row["depth"] == 2
    assert row["top_k"] == 2 and row["retriever"] == "toy"
    assert bool(row["qrels"]) and not bool(row["evidence"]) and not bool(row["latency"])


def test_upload_import_adds_a_run(make_app: Callable[..., AppTest], db: Path) -> None:
    at = runs_page(make_app, db)
    at.file_uploader(key="runs.upload").set_value(
        ("second.jsonl", tiny_run("second", 4), "application/json")
    )
    at.run()
    at.button(key="runs.import_upload").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert names(db) == ["first", "second"]
    assert any("Imported 1 run" in s.value for s in at.success)
    assert run_table(at) == ["first", "second"]
    note = next(d.value for d in at.dataframe if "name" in d.value.columns)
    assert list(note["name"]) == ["second"] and note.iloc[0]["queries"] == 4  # the new run shown
    with Store(db) as store:
        # the run records the uploaded file's own name, not the temporary folder it was read from
        assert store.run("second").sources == ("second.jsonl",)
    assert at.sidebar.selectbox(key="run").options == ["first", "second"]  # the sidebar reran


def test_uploaded_bad_file_shows_problems_with_its_name(
    make_app: Callable[..., AppTest], db: Path
) -> None:
    at = runs_page(make_app, db)
    at.file_uploader(key="runs.upload").set_value(
        ("mine.jsonl", BAD.read_bytes(), "application/json")
    )
    at.run()
    at.button(key="runs.import_upload").click().run()
    assert not at.exception
    assert names(db) == ["first"]
    assert any("nothing was stored" in e.value for e in at.error)
    problems = next(d.value for d in at.dataframe if "severity" in d.value.columns)
    assert list(problems.columns) == ["file", "line", "field", "problem", "severity"]
    assert set(problems["file"]) == {"mine.jsonl"}
    assert problems.iloc[0]["line"] == 1 and problems.iloc[0]["field"] == "query"


def test_path_import_adds_a_run(make_app: Callable[..., AppTest], db: Path) -> None:
    at = runs_page(make_app, db)
    at.text_area(key="runs.paths").input(
        str(GOOD.relative_to(Path.cwd()) if GOOD.is_relative_to(Path.cwd()) else GOOD)
    )
    at.button(key="runs.import_paths").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert names(db) == ["first", "bm25-k3"]
    assert run_table(at) == ["first", "bm25-k3"]


def test_path_import_of_a_bad_file_stores_nothing(
    make_app: Callable[..., AppTest], db: Path
) -> None:
    at = runs_page(make_app, db)
    at.text_area(key="runs.paths").input(str(BAD))
    at.button(key="runs.import_paths").click().run()
    assert not at.exception
    assert names(db) == ["first"]
    problems = next(d.value for d in at.dataframe if "severity" in d.value.columns)
    assert len(problems) >= 1 and set(problems["severity"]) == {"error"}
    assert all(f.endswith("native_wrong_types.jsonl") for f in problems["file"])
    assert run_table(at) == ["first"]


def test_paths_outside_the_allowed_folders_are_refused(
    make_app: Callable[..., AppTest], db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (outside / "run.jsonl").write_bytes(tiny_run("sneaky"))
    (allowed / "ok.jsonl").write_bytes(tiny_run("fine", 5))
    os.symlink(outside / "run.jsonl", allowed / "link.jsonl")
    monkeypatch.setenv("RAGEVAL_IMPORT_DIRS", str(allowed))
    at = runs_page(make_app, db)
    for bad in (
        str(outside / "run.jsonl"),
        str(allowed / ".." / "outside" / "run.jsonl"),
        str(allowed / "link.jsonl"),
        str(GOOD),
    ):
        at.text_area(key="runs.paths").input(bad)
        at.button(key="runs.import_paths").click().run()
        assert not at.exception
        assert any("Refused" in e.value for e in at.error), bad
        assert "outside the folders" in at.code[-1].value
        assert names(db) == ["first"]
    at.text_area(key="runs.paths").input(str(allowed / "ok.jsonl"))
    at.button(key="runs.import_paths").click().run()
    assert names(db) == ["first", "fine"]


def test_rename_and_delete(make_app: Callable[..., AppTest], db: Path, tmp_path: Path) -> None:
    with Store(db) as store:
        source = tmp_path / "other.jsonl"
        source.write_bytes(tiny_run("other", 2))
        log = ProblemLog()
        store.import_run(read_inputs([source], None, log)[0], log)
    at = runs_page(make_app, db)
    at.selectbox(key="runs.target").set_value("first").run()
    at.text_input(key="runs.new_name").input("renamed")
    at.button(key="runs.rename").click().run()
    assert not at.exception
    assert names(db) == ["renamed", "other"]
    assert any("renamed" in s.value.lower() for s in at.success)
    assert at.sidebar.selectbox(key="run").value == "renamed"  # the sidebar follows its run

    at.selectbox(key="runs.target").set_value("renamed").run()
    at.text_input(key="runs.new_name").input("other")  # taken
    at.button(key="runs.rename").click().run()
    assert names(db) == ["renamed", "other"]
    assert any("not renamed" in e.value for e in at.error)
    assert "already exists" in at.code[0].value

    at.selectbox(key="runs.target").set_value("other").run()
    assert at.button(key="runs.delete").disabled  # not confirmed yet
    at.checkbox(key="runs.confirm_delete").check().run()
    at.button(key="runs.delete").click().run()
    assert not at.exception
    assert names(db) == ["renamed"]
    assert run_table(at) == ["renamed"]
    assert at.checkbox(key="runs.confirm_delete").value is False  # the next delete asks again
