"""User text in a terminal: control characters shown escaped, never acted on.

Run names, query ids, file names and problems quote users' files. A crafted file could otherwise
retitle the terminal, move the cursor over earlier lines, or plant an OSC 52 clipboard write.
One rule for every command: C0 and C1 control characters (and DEL) other than tab and newline
are written as `\\x1b`-style escapes. The CLI applies it to everything it prints (EscapingWriter
around stdout and stderr); JSON output escapes them the JSON way first (valid JSON, same value).
"""

from __future__ import annotations

import json
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


def json_text(value: Any, default: Callable[[Any], Any] | None = None) -> str:
    """json.dumps for a terminal: indented, readable Unicode, no raw control character."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=default)
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
