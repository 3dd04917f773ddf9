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


#: the one module that takes a scorer key (or an embedder's name) apart and puts one together
KEYS = "rageval_core/matching/keys.py"
#: what a key's text starts with when it is built or matched by hand (semantic:, hybrid:)
KEY_PREFIXES = ("semantic", "hybrid")


def _splits_on_colon(node: ast.AST) -> bool:
    """x.split(":") or x.partition(":")."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("partition", "split")
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == ":"
    )


def _reads_a_key_prefix(node: ast.AST) -> bool:
    """x.startswith("semantic:") / x.startswith(("semantic", ...)), or "semantic:" in x."""
    args: list[ast.expr] = []
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("startswith", "removeprefix")
        and node.args
    ):
        first = node.args[0]
        args = list(first.elts) if isinstance(first, ast.Tuple) else [first]
    elif isinstance(node, ast.Compare) and any(
        isinstance(op, (ast.In, ast.NotIn)) for op in node.ops
    ):
        args = [node.left]
    texts = [a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return any(t.removesuffix(":") in KEY_PREFIXES for t in texts)


def _formats_a_key(node: ast.AST) -> bool:
    """f"{scorer}:{embedder}": an f-string joining two values with ":" and nothing else."""
    if not isinstance(node, ast.JoinedStr) or len(node.values) != 3:
        return False
    first, sep, last = node.values
    return (
        isinstance(first, ast.FormattedValue)
        and isinstance(sep, ast.Constant)
        and sep.value == ":"
        and isinstance(last, ast.FormattedValue)
        and any(
            "scorer" in ast.unparse(v.value) or "embedder" in ast.unparse(v.value)
            for v in (first, last)
        )
    )


def key_handling(*packages: str) -> list[str]:
    return [
        f"{path.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)[:60]}"
        for path in python_files(*packages)
        if path.relative_to(REPO).as_posix() != KEYS
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if _splits_on_colon(node) or _reads_a_key_prefix(node) or _formats_a_key(node)
    ]


def _flagged(source: str) -> bool:
    return any(
        _splits_on_colon(n) or _reads_a_key_prefix(n) or _formats_a_key(n)
        for n in ast.walk(ast.parse(source))
    )


def test_a_scorer_key_is_read_and_built_in_one_module() -> None:
    """Only matching/keys.py takes a key such as `semantic:wordllama` or an embedder's name
    (`sentence-transformers:PATH`) apart, or joins one: every other module, in the core and the
    dashboard, holds a ScorerKey and reads its scorer, embedder, norm and stored string."""
    # the check is not blind: each way a module could split or build a key is seen ...
    for source in (
        'scorer, _, embedder = key.partition(":")',
        'parts = key.split(":")',
        'if key.startswith("semantic:"): pass',
        'if key.startswith(("semantic", "hybrid")): pass',
        'if "semantic:" in key: pass',
        'key = f"{scorer}:{embedder}"',
    ):
        assert _flagged(source), source
    # ... and text that only looks alike is not
    assert not _flagged('name = f"{run}: {count}"; ok = text.startswith("semantically")')
    assert key_handling("rageval_core", "rageval", "rageval_dashboard") == []


def test_a_scorer_key_is_one_value_through_the_layers() -> None:
    """The functions that score, keep and read pair scores below the settings take a ScorerKey
    (scorer, embedder, normalisation together), not a scorer string beside a normalisation."""
    import inspect

    from rageval_core.matching.keys import ScorerKey
    from rageval_core.matching.scorers import open_pair_scorer
    from rageval_core.matching.semantic import SemanticPairScorer
    from rageval_core.rundata import evidence_tensor
    from rageval_core.store import labels, reads, scores

    for fn in (
        open_pair_scorer,
        SemanticPairScorer.__init__,
        evidence_tensor,
        scores.pair_score_table,
        reads.query_rows,
        reads.pair_texts,
        labels.set_pair_label,
        labels.pair_label_rows,
    ):
        params = inspect.signature(fn).parameters
        assert "key" in params and "norm" not in params and "scorer" not in params, fn
        assert params["key"].annotation in ("ScorerKey", ScorerKey), fn
