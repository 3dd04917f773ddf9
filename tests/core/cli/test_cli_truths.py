"""What the CLI says about itself is true: messages the docs promise, the same on every command."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli import rageval_subprocess


def _many_problems(path: Path, n_bad: int) -> Path:
    lines = [json.dumps({"rageval_run": {"name": "many"}})]
    lines += [json.dumps({"query_id": f"q{i}", "retrieved": "x"}) for i in range(n_bad)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_import_counts_the_problems_past_the_cap_as_evaluate_does(tmp_path: Path) -> None:
    """docs/formats.md: after 50 problems the rest are only counted (`... and N more problems`)."""
    run = _many_problems(tmp_path / "many.jsonl", 80)
    for command in ("import", "evaluate"):
        done = rageval_subprocess(command, str(run), db=tmp_path / f"{command}.duckdb")
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        lines = done.stderr.splitlines()
        assert sum(": retrieved: expected an array" in line for line in lines) == 50, command
        assert "... and 30 more problems" in lines, (command, lines[-3:])


def test_import_under_the_cap_counts_nothing(tmp_path: Path) -> None:
    run = _many_problems(tmp_path / "few.jsonl", 50)
    done = rageval_subprocess("import", str(run), db=tmp_path / "s.duckdb")
    assert done.returncode == 2
    assert "more problems" not in done.stderr
    assert sum(": retrieved: expected an array" in x for x in done.stderr.splitlines()) == 50
