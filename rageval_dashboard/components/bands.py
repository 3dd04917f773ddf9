"""Good/poor bands of the metric cards from a small TOML file, over the built-in defaults.

The file is `.rageval/bands.toml` in the working folder, or the file $RAGEVAL_BANDS names:

    [R]            # a bare name covers every cut-off (R@5, R@10 ...)
    poor = 0.5     # below: "poor"
    good = 0.8     # above: "good"
    ["Hit@1"]      # a name with a cut-off covers only that one
    good = 0.6     # a bound left out keeps the default's
    [BestRank]     # lower is better (metrics.registry.higher_is_better): good below, poor above
    good = 2
    poor = 5

A file that cannot be read or holds a bad table is reported (bands_problem) and the defaults
are used; nothing here raises.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

from rageval_core.errors import UsageError
from rageval_core.metrics.registry import higher_is_better

BANDS_ENV = "RAGEVAL_BANDS"
BANDS_FILE = Path(".rageval") / "bands.toml"


def _higher_is_better(name: str) -> bool:
    """The measure's direction (registry.higher_is_better); a name it does not know is read as
    higher-is-better (its band colours nothing until the name is a metric's)."""
    try:
        return higher_is_better(name.split("@", 1)[0])
    except UsageError:
        return True


def bands_path() -> Path:
    """The bands file: $RAGEVAL_BANDS, else .rageval/bands.toml in the working folder."""
    return Path(os.environ.get(BANDS_ENV) or BANDS_FILE)


def read_bands(
    defaults: Mapping[str, tuple[float, float]], path: Path | None = None
) -> tuple[dict[str, tuple[float, float]], str | None]:
    """(measure -> (poor below, good above), a problem or None): defaults with path's over them."""
    path = path or bands_path()
    out = dict(defaults)
    if not path.is_file():
        return out, None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeError, tomllib.TOMLDecodeError) as e:
        return out, f"{path}: cannot be read as TOML ({e}); the default bands are used"
    for name, table in data.items():
        if not isinstance(table, dict):
            return dict(defaults), f"{path}: {name}: a table with poor/good expected"
        poor, good = out.get(name, (math.nan, math.nan))
        try:
            poor, good = float(table.get("poor", poor)), float(table.get("good", good))
        except (TypeError, ValueError):
            return dict(defaults), f"{path}: {name}: poor and good must be numbers"
        lower = not _higher_is_better(name)
        if math.isnan(poor) or math.isnan(good) or (good > poor if lower else poor > good):
            order = "good <= poor (lower is better)" if lower else "poor <= good"
            return dict(defaults), f"{path}: {name}: needs {order} (both given)"
        out[name] = (poor, good)
    return out, None
