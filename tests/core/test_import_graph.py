"""rageval_core's shape: no import circle anywhere, every package in the layers contract, the
architecture page drawing the same layers, and a top level that stays small.

The graph is read from the source: every import, those inside functions too (a lazy import hides
a circle at run time, not from a reader), those under `if TYPE_CHECKING:` left out (they run
never). `from a import b` is an edge to `a` (its `__init__` runs) and to `a.b` when that is a
module: so a module that reaches its siblings through its package's `__init__`, which imports
them back, is a circle too (store <-> store.store was one).
"""

from __future__ import annotations

import ast
import re
import tomllib
from functools import cache
from pathlib import Path

from tests.core.test_layers import cycles as circles  # Tarjan: the strongly connected components
from tests.paths import REPO

PACKAGE = "rageval_core"
#: the house limit on modules directly under rageval_core/ (issue 29)
MAX_TOP_LEVEL_MODULES = 10


@cache
def modules() -> dict[str, Path]:
    """Every module of rageval_core by dotted name (a package by its own name)."""
    out = {}
    for path in sorted((REPO / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    """ids of the nodes under an `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`) block."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = getattr(test, "id", None) or getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                out.update(id(sub) for stmt in node.body for sub in ast.walk(stmt))
    return out


def imports_of(name: str) -> set[str]:
    """The rageval_core modules module `name` imports, anywhere but under TYPE_CHECKING."""
    path = modules()[name]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _type_checking_nodes(tree)
    targets: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: against the module's own package
                package = name.split(".")
                package = package if path.name == "__init__.py" else package[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([base] if base else [])])
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)
    return {t for t in targets if t in modules() and t != name}


def graph() -> dict[str, set[str]]:
    return {name: imports_of(name) for name in modules()}


def test_the_graph_sees_function_level_imports_and_skips_type_checking() -> None:
    """The reading itself: a lazy import is an edge; an import for type hints only is none."""
    edges = graph()
    # store/scores.py imports matching.scorers at its top; evaluate.py imports preset_parity
    # inside functions only; model.py imports columns under TYPE_CHECKING only
    assert "rageval_core.matching.scorers" in edges["rageval_core.store.scores"]
    assert "rageval_core.evaluation.preset_parity" in edges["rageval_core.evaluation.evaluate"]
    assert "rageval_core.columns" not in edges["rageval_core.model"]


def test_no_import_circle_in_the_core() -> None:
    """No two modules of rageval_core import each other, directly or round a loop (issue 29:
    there were 7 such circles, among them checks <-> evaluate <-> parity and the CLI's)."""
    # the detector itself, on a made-up graph: a two-module circle and a three-module one
    made_up = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c", "a"}, "f": set()}
    assert sorted(circles(made_up)) == [["a", "b"], ["c", "d", "e"]]
    found = list(circles(graph()))
    assert found == [], "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


# --- the layers contract ----------------------------------------------------------------------


def layers_contract() -> dict[str, object]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    found = [
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if c["type"] == "layers" and c.get("containers") == [PACKAGE]
    ]
    assert len(found) == 1, "pyproject.toml: one layers contract over the container rageval_core"
    return found[0]


def contract_layers() -> list[set[str]]:
    """The contract's layers, top first, each the set of names it holds."""
    layers = layers_contract()["layers"]
    assert isinstance(layers, list)
    return [{part.strip() for part in re.split(r"[|:]", layer)} for layer in layers]


def top_level() -> set[str]:
    """The children of rageval_core: its packages and its modules (not __init__ itself)."""
    return {name.split(".")[1] for name in modules() if name != PACKAGE}


def test_every_package_and_module_is_in_the_layers_contract() -> None:
    """A new package or module directly under rageval_core/ must be given a layer (and
    import-linter's `exhaustive` says so too in `make lint`)."""
    named = set().union(*contract_layers())
    assert top_level() - named == set(), "not in any layer of pyproject.toml's contract"
    assert named - top_level() == set(), "in the contract, not in rageval_core"
    assert layers_contract().get("exhaustive") is True


def test_the_top_level_stays_small() -> None:
    modules_at_top = {n for n in top_level() if not (REPO / PACKAGE / n).is_dir()}
    assert len(modules_at_top) + 1 <= MAX_TOP_LEVEL_MODULES, sorted(modules_at_top)  # + __init__


# --- docs/architecture.md draws the same layers ------------------------------------------------


def documented_layers() -> list[set[str]]:
    """The rows of the layers table of docs/architecture.md, top first: each row's first cell
    names its packages and modules as `cli/`, `api.py` ... (backticked)."""
    text = (REPO / "docs/architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    out = []
    for row in rows[1:]:  # the header first
        first_cell = row.split("|")[1]
        names = re.findall(r"`([\w]+)(?:/|\.py)`", first_cell)
        out.append(set(names))
    return out


def test_the_architecture_page_draws_the_contract() -> None:
    """docs/architecture.md's layers table lists the contract's layers, in its order."""
    assert documented_layers() == contract_layers()
