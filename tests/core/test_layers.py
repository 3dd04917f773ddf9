"""Dependencies flow down: readers -> model; store -> model; only the store writes SQL.

Read from the source (every import, those inside functions and under TYPE_CHECKING too), so a
lazy import cannot hide a wrong-way dependency the way it hides a cycle at run time.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from tests.paths import REPO

PACKAGE = REPO / "rageval_core"


@cache
def modules() -> dict[str, Path]:
    """Every module of rageval_core by dotted name (a package by its own name)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


@cache
def tree(name: str) -> ast.Module:
    return ast.parse(modules()[name].read_text(encoding="utf-8"), filename=str(modules()[name]))


def imported(name: str) -> set[str]:
    """The dotted names module name imports anywhere: `from a import b` gives a and a.b."""
    is_package = modules()[name].name == "__init__.py"
    out = set()
    for node in ast.walk(tree(name)):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the module's own package
                package = name.split(".")
                package = package if is_package else package[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([base] if base else [])])
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return out


def within(names: set[str], package: str) -> list[str]:
    return sorted(n for n in names if n == package or n.startswith(package + "."))


def under(package: str) -> list[str]:
    return [n for n in modules() if n == package or n.startswith(package + ".")]


def test_the_walk_sees_the_package() -> None:
    assert len(modules()) >= 40
    assert {"rageval_core.model", "rageval_core.store.store", "rageval_core.formats.native"} <= set(
        modules()
    )


def test_no_cursor_outside_the_store() -> None:
    """Modules outside store/ ask named questions (store.reads, ...); they never open a cursor."""
    found = [
        f"{modules()[name]}:{node.lineno}"
        for name in modules()
        if not name.startswith("rageval_core.store")
        for node in ast.walk(tree(name))
        if isinstance(node, ast.Attribute) and node.attr == "_cursor"
    ]
    assert found == []


@pytest.mark.parametrize("reader", under("rageval_core.formats"))
def test_readers_do_not_import_the_store(reader: str) -> None:
    assert within(imported(reader), "rageval_core.store") == []


@pytest.mark.parametrize("module", under("rageval_core.store"))
def test_the_store_does_not_import_readers(module: str) -> None:
    assert within(imported(module), "rageval_core.formats") == []


@pytest.mark.parametrize("module", ["rageval_core.model", "rageval_core.columns"])
def test_the_model_imports_neither_store_nor_readers(module: str) -> None:
    names = imported(module)
    assert within(names, "rageval_core.store") == [] and within(names, "rageval_core.formats") == []


def edges() -> dict[str, set[str]]:
    """module -> the rageval_core modules it imports (`from pkg import sub` is pkg.sub)."""
    known = modules()
    out: dict[str, set[str]] = {}
    for name in known:
        targets = set()
        for dotted in imported(name):
            if dotted in known:
                targets.add(dotted)
            elif dotted.rpartition(".")[0] in known:  # `from a import b`, b not a module
                targets.add(dotted.rpartition(".")[0])
        # a package's own __init__ runs before its modules anyway: not an edge of a cycle
        out[name] = {t for t in targets if t != name and not name.startswith(t + ".")}
    return out


def cycles(graph: dict[str, set[str]]) -> Iterator[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(v: str) -> Iterator[list[str]]:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                yield from visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                yield sorted(component)

    for v in sorted(graph):
        if v not in index:
            yield from visit(v)


def test_no_import_cycle_through_the_model_or_the_store() -> None:
    """model, columns and every store module stand outside any cycle (journal <-> store was one)."""
    low = ("rageval_core.model", "rageval_core.columns", "rageval_core.store")
    found = [c for c in cycles(edges()) if any(m.startswith(low) for m in c)]
    assert found == []


#: the house limit: a module past it is doing more than one job (issue 14)
MAX_MODULE_LINES = 700


def test_no_module_is_over_the_line_limit() -> None:
    over = {
        str(path.relative_to(REPO)): n
        for package in ("rageval", "rageval_core", "rageval_dashboard")
        for path in sorted((REPO / package).rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert over == {}, f"modules over {MAX_MODULE_LINES} lines: {over}"
