"""The parameter grid of `rageval collect`: --grid "name=v1,v2" flags, their cartesian product,
and the run name of each point (--name-template)."""

from __future__ import annotations

import itertools
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from rageval_core.errors import UsageError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
# JSON's numbers (a sign allowed): "07" and ".5" stay text (an id, a zip code)
_INT = re.compile(r"[+-]?(?:0|[1-9]\d*)")
_FLOAT = re.compile(r"[+-]?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
#: the most grid points one command runs (each is a run of every question)
MAX_POINTS = 1000
#: names a template may use besides the grid's
TEMPLATE_FIELDS = ("endpoint_host", "questions")


@dataclass(frozen=True)
class Axis:
    """One --grid flag: a parameter name and its values, in the order given."""

    name: str
    values: tuple[Any, ...]


def typed(text: str) -> Any:
    """A grid value as JSON would type it: 5 -> int, 0.5 -> float, true/false -> bool, else text."""
    if _INT.fullmatch(text):
        return int(text)
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if _FLOAT.fullmatch(text):
        number = float(text)
        # "1e999" is text: JSON has no infinite number, and a run setting is JSON
        return number if abs(number) != float("inf") else text
    return text


def parse_axis(spec: str) -> Axis:
    """ "search_type=hybrid,keyword" -> Axis("search_type", ("hybrid", "keyword"))."""
    name, sep, values = spec.partition("=")
    name = name.strip()
    if not sep or not _NAME.fullmatch(name):
        raise UsageError(
            f"--grid {spec!r}: expected NAME=V1,V2,... (NAME: letters, digits, _ . -), e.g. "
            '--grid "top_k=1,5,10"'
        )
    items = [v.strip() for v in values.split(",")]
    if any(not v for v in items):
        raise UsageError(f"--grid {spec!r}: an empty value (values are separated by commas)")
    parsed = [typed(v) for v in items]
    seen: set[str] = set()
    for v in parsed:
        key = repr(v)
        if key in seen:
            raise UsageError(f"--grid {spec!r}: {v!r} is given twice")
        seen.add(key)
    return Axis(name, tuple(parsed))


def parse_grid(specs: Sequence[str]) -> list[Axis]:
    """The --grid flags' axes; a name given twice, or a grid of more than MAX_POINTS, is refused."""
    axes = [parse_axis(s) for s in specs]
    names = [a.name for a in axes]
    for name in names:
        if names.count(name) > 1:
            raise UsageError(f"--grid {name}: given twice (give its values in one flag)")
        if name in TEMPLATE_FIELDS:
            raise UsageError(f"--grid {name}: the name is taken by --name-template's {{{name}}}")
    size = 1
    for a in axes:
        size *= len(a.values)
    if size > MAX_POINTS:
        raise UsageError(f"the grid has {size:,} points; at most {MAX_POINTS:,} in one command")
    return axes


def points(axes: Sequence[Axis]) -> list[dict[str, Any]]:
    """Every combination of the axes' values, the last axis varying fastest (one point, {},
    without axes)."""
    return [
        dict(zip([a.name for a in axes], combo, strict=True))
        for combo in itertools.product(*(a.values for a in axes))
    ]


def default_template(axes: Sequence[Axis]) -> str:
    """ "{endpoint_host} search_type={search_type} top_k={top_k}" for those axes."""
    return " ".join(["{endpoint_host}", *(f"{a.name}={{{a.name}}}" for a in axes)])


def endpoint_host(url: str) -> str:
    """host[:port] of the endpoint: what a run's name and description hold (never its path,
    query string or user)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{host}:{parts.port}" if parts.port else host


def _shown(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def run_names(
    template: str, grid: Sequence[Mapping[str, Any]], fields: Mapping[str, str]
) -> list[str]:
    """The run name of each grid point; UsageError for a field the template cannot fill or
    for two points given one name (the template leaves out a varying parameter)."""
    try:
        used = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as e:
        raise UsageError(f"--name-template {template!r}: {e}") from None
    known = {*fields, *(grid[0] if grid else {})}
    for name in used:
        if name not in known:
            raise UsageError(
                f"--name-template: {{{name}}} is neither a --grid name nor one of "
                f"{', '.join('{' + f + '}' for f in TEMPLATE_FIELDS)}"
            )
    names = []
    for point in grid:
        values = {**fields, **{k: _shown(v) for k, v in point.items()}}
        try:
            name = template.format_map(values).strip()
        except (ValueError, IndexError, KeyError, AttributeError) as e:
            raise UsageError(f"--name-template {template!r}: {e}") from None
        if not name:
            raise UsageError(f"--name-template {template!r} gives an empty name")
        names.append(name)
    for i, name in enumerate(names):
        if name in names[:i]:
            raise UsageError(
                f"--name-template gives two grid points the name {name!r}: name every --grid "
                "parameter that varies in it"
            )
    return names
