"""One name per thing (issue 29, point 4): Settings and Report come from one module, a Settings
parameter is called `settings`, and a scorer key is read in one module."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.paths import REPO

#: where Settings, Report and the other values of a report live
HOME = "rageval_core.evaluation.report"
HOME_NAMES = {"Settings", "Report", "Relevance", "EVIDENCE_DEFAULTS", "RANKING_DEFAULTS"}
#: the core and its public API package (the dashboard is moved and reviewed on its own)
CORE = ("rageval_core", "rageval")


def python_files(*packages: str) -> Iterator[Path]:
    for package in packages:
        yield from sorted((REPO / package).rglob("*.py"))


def test_settings_and_report_are_imported_from_one_module() -> None:
    """Nobody imports Settings or Report through evaluate (or any other re-export); the public
    package `rageval` re-exports rageval_core.api's names, as it does for every verb."""
    found = [
        f"{path.relative_to(REPO)}:{node.lineno}: from {node.module} import {alias.name}"
        for path in python_files(*CORE, "dashboard", "tests", "bench")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rageval_core")
        for alias in node.names
        if alias.name in HOME_NAMES and node.module != HOME
        if not (path.parent.name == "rageval" and node.module == "rageval_core.api")
    ]
    assert found == []


def test_a_settings_parameter_is_called_settings() -> None:
    """`settings: Settings` (or a name saying more, as `base`), never `s: Settings` (29
    signatures said `s`, 23 `settings`)."""
    found = [
        f"{path.relative_to(REPO)}:{node.lineno}: {node.name}({arg.arg}: ...)"
        for path in python_files(*CORE)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        if arg.annotation is not None
        and ast.unparse(arg.annotation).strip("'\"") == "Settings"
        and arg.arg == "s"
    ]
    assert found == []


def test_a_scorer_key_is_split_in_one_module() -> None:
    """Only matching/keys.py takes a key such as `semantic:wordllama` apart (partition(':'));
    embedders.py reads an embedder's own name (`sentence-transformers:PATH`)."""
    readers = {"rageval_core/matching/keys.py", "rageval_core/matching/embedders.py"}
    found = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in python_files("rageval_core")
        if path.relative_to(REPO).as_posix() not in readers
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("partition", "split")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == ":"
    ]
    assert found == []
