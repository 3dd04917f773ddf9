"""The demo's data files (data/*.json: names, document templates, question wording), read once."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any


@functools.cache
def load(name: str) -> Any:
    """data/<name>.json parsed; read from the installed package, so it works from a wheel too.

    Cached: callers must not change what they get (they copy it into tuples and frozensets).
    """
    text = resources.files("rageval_core.demo").joinpath("data", f"{name}.json").read_text("utf-8")
    return json.loads(text)
