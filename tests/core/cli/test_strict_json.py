"""`--json` is strict JSON (issue 28, point 12): NaN and Infinity, which JSON does not have, are
refused in run facts at import, and every JSON writer writes null where a float is not finite."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rageval_core.store import Store
from tests.cli import rageval
from tests.core.store.test_crash import make_run

PROBLEM = re.compile(r"^(?P<file>.+?):(?P<line>\d+): (?P<field>[^:]+?): (?P<problem>.+)$")


def strict_loads(text: str) -> Any:
    """json.loads that refuses NaN, Infinity and -Infinity, as strict parsers (JavaScript's) do."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


HEADERS = [
    ('{"settings": {"temperature": NaN}}', "rageval_run.settings.temperature"),
    ('{"settings": {"top_k": Infinity}}', "rageval_run.settings.top_k"),
    ('{"settings": {"grid": [1, 2, -Infinity]}}', "rageval_run.settings.grid[2]"),
    ('{"settings": {"model": {"params": {"t": NaN}}}}', "rageval_run.settings.model.params.t"),
]


@pytest.mark.parametrize(("header", "field"), HEADERS)
def test_non_finite_numbers_in_run_settings_are_refused_at_import(
    tmp_path: Path, header: str, field: str
) -> None:
    run = make_run(tmp_path / "run.jsonl", 2, evidence=False)
    lines = run.read_text(encoding="utf-8").splitlines()
    run.write_text("\n".join([f'{{"rageval_run": {header}}}', *lines[1:]]) + "\n", encoding="utf-8")
    db = tmp_path / "s.duckdb"
    done = rageval("import", str(run), db=db)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    problems = [PROBLEM.match(line) for line in done.stderr.splitlines()]
    assert any(
        m and m["file"].endswith("run.jsonl") and m["line"] == "1" and m["field"] == field
        for m in problems
    ), done.stderr
    with Store(db) as store:
        assert store.table_counts()["runs"] == 0


def test_non_finite_numbers_in_a_sidecar_are_refused(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run.jsonl", 2, evidence=False)
    sidecar = tmp_path / "run.jsonl.run.json"
    sidecar.write_text('{"name": "x", "settings": {"alpha": -Infinity}}', encoding="utf-8")
    done = rageval("import", str(run), db=tmp_path / "s.duckdb")
    assert done.returncode == 2
    assert "run.jsonl.run.json:1: rageval_run.settings.alpha: expected a finite number" in (
        done.stderr
    )


#: finite settings, the float limits among them, read back exactly as written
FINITE = {"t": 0.7, "k": 10, "big": 1e308, "tiny": -5e-324, "grid": [1, 2.5], "none": None}


@pytest.fixture()
def old_store(tmp_path: Path) -> Path:
    """Two runs, one holding NaN/Infinity settings as a store written before import refused them
    (or by another tool) can."""
    db = tmp_path / "s.duckdb"
    for seed, name in enumerate(("base", "cand")):
        run = make_run(tmp_path / f"{name}.jsonl", 4, name=name, seed=seed)
        lines = run.read_text(encoding="utf-8").splitlines()
        header = json.dumps({"rageval_run": {"name": name, "settings": FINITE}})
        run.write_text("\n".join([header, *lines[1:]]) + "\n", encoding="utf-8")
        assert rageval("import", str(run), db=db).returncode == 0
    with Store(db) as store:
        cur = store.cursor()
        cur.execute(
            "UPDATE runs SET settings = ? WHERE name = 'cand'",
            ['{"t": NaN, "k": Infinity, "grid": [1, -Infinity], "ok": 2.5}'],
        )
        cur.close()
    return db


def test_every_json_output_parses_with_a_strict_parser(old_store: Path, tmp_path: Path) -> None:
    outputs = {
        "runs": rageval("runs", "--json", db=old_store),
        "show": rageval("show", "cand", "--json", db=old_store),
        "evaluate": rageval("evaluate", "cand", "--json", "--per-query", db=old_store),
        "compare": rageval("compare", "base", "cand", "--json", db=old_store),
        "gate": rageval(
            "gate",
            "--baseline",
            "base",
            "--candidate",
            "cand",
            "--max-drop",
            "nDCG@10=0.01",
            "--json",
            db=old_store,
        ),
    }
    for command, done in outputs.items():
        assert done.returncode in (0, 1), (command, done.stderr)
        assert "NaN" not in done.stdout and "Infinity" not in done.stdout, command
        strict_loads(done.stdout)
    base = strict_loads(rageval("show", "base", "--json", db=old_store).stdout)
    assert base["settings"] == FINITE
    shown = strict_loads(outputs["show"].stdout)
    # a non-finite number is written null, as a metric with no value is; the rest as stored
    assert shown["settings"] == {"t": None, "k": None, "grid": [1, None], "ok": 2.5}
    out = tmp_path / "cand.jsonl"
    done = rageval("export", "cand", "--to", "jsonl", "--out", str(out), db=old_store)
    assert done.returncode == 0, done.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 5
    header = strict_loads(lines[0])["rageval_run"]
    assert header["settings"] == {"t": None, "k": None, "grid": [1, None], "ok": 2.5}
    for line in lines[1:]:
        strict_loads(line)
    # the export imports again: what was written is a valid run
    assert rageval("import", str(out), "--name", "again", db=old_store).returncode == 0
