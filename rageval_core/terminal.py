"""User text in a terminal: control characters shown escaped, never acted on.

Run names, query ids, file names and problems quote users' files. A crafted file could otherwise
retitle the terminal, move the cursor over earlier lines, or plant an OSC 52 clipboard write.
One rule for every command: C0 and C1 control characters (and DEL) other than tab and newline
are written as `\\x1b`-style escapes. The CLI applies it to everything it prints (EscapingWriter
around stdout and stderr); JSON output escapes them the JSON way first (valid JSON, same value).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, TextIO

#: C0 controls but tab and newline, DEL, and the C1 controls
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: what json.dumps(ensure_ascii=False) still leaves raw: DEL, C1, and the Unicode line separators
_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029]")


def shown(text: str) -> str:
    """text with every control character but tab and newline as a visible escape (\\x1b)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", text)


def strict_json(value: Any, **options: Any) -> str:
    """json.dumps that never writes NaN or Infinity (not JSON: strict parsers refuse them): a
    non-finite float is written null, as a metric with no value is; finite data as json.dumps."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:  # rare (a run stored before import refused non-finite settings): walk it
        return json.dumps(finite_or_null(value), allow_nan=False, **options)


def finite_or_null(value: Any) -> Any:
    """value with every non-finite float (NaN, Infinity) inside dicts, lists and tuples as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_or_null(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_null(v) for v in value]
    return value


def json_text(value: Any, default: Callable[[Any], Any] | None = None) -> str:
    """json.dumps for a terminal: indented, readable Unicode, no raw control character, no NaN."""
    text = strict_json(value, indent=2, ensure_ascii=False, default=default)
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def text_table(headers: Sequence[Any], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned columns under a dashed rule; cells escaped (shown) before widths are measured."""
    cells = [[shown(str(h)) for h in headers]] + [
        ["" if v is None else shown(str(v)) for v in r] for r in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


class EscapingWriter:
    """A text stream whose writes pass through shown(); `raw` is the stream underneath."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(shown(text))
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding ... of the real stream
        return getattr(self.raw, name)
