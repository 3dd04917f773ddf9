"""The JSON decoder every reader uses: a lone surrogate escape (\\ud800), an integer literal longer
than MAX_INT_DIGITS digits, NaN or Infinity is a JSON error at its place (UnsoundJSON), never a
crash further on; error_field names the field a decoding error sits in."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable
from typing import Any


#: a lone surrogate in a str: from a "\\ud800" escape in JSON, or a file name that is not UTF-8
#: (os.fsdecode keeps each bad byte as one, U+DC80 to U+DCFF)
SURROGATE = re.compile(r"[\ud800-\udfff]")


def escaped_surrogate(char: str, *, in_name: bool = False) -> str:
    """A lone surrogate as text can print and store: \\ud800 (or in a file name, where U+DCFF
    stands for the byte 0xff, \\xff)."""
    code = ord(char)
    return f"\\x{code - 0xDC00:02x}" if in_name and 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


#: integer literals of up to this many digits always fit a float (every number field is one, or
#: narrower); longer ones are read only while they do (a float ends at about 1.8e308, Python's
#: int() at 4,300 digits): beyond, an UnsoundJSON error, never an OverflowError in a reader
MAX_INT_DIGITS = 308
#: the escape of a lone surrogate in JSON text: a high one not followed by a low one, or a low
#: one not after a high one (where the message points; the decoded value decides)
_LONE_ESCAPE = re.compile(  # each branch starts with the literal \\u, which keeps the scan fast
    r"\\u[dD](?:[89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|[c-fC-F][0-9a-fA-F]{2}(?<!\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}))"
)
_LONG_DIGITS = re.compile(rf"\d{{{MAX_INT_DIGITS + 1},}}")  # where a _Long is in the text


class UnsoundJSON(json.JSONDecodeError):
    """JSON that parses but holds what no reader can keep: a lone surrogate, a huge integer.

    field is where in the decoded value (retrieved[0].text, tags), or "json" for the value
    itself; end is where the value ends, so a reader can go on with the next one.
    """

    def __init__(self, field: str, msg: str, doc: str, pos: int, end: int) -> None:
        super().__init__(msg, doc, pos)
        self.field = field
        self.end = end


def error_field(e: json.JSONDecodeError) -> str:
    """The field a JSON error is reported under: the unsound value's place, else "json"."""
    return e.field if isinstance(e, UnsoundJSON) else "json"


class _LongInteger(ValueError):
    """Raised by the decoder's parse_int for an integer literal of more than MAX_INT_DIGITS."""


class _Long:
    """Stands for a too long integer literal when a value is decoded again to find its field."""

    def __init__(self, digits: str) -> None:
        self.digits = len(digits.lstrip("-"))


def _checked_int(digits: str) -> int:
    if len(digits) <= MAX_INT_DIGITS:  # the common case, at the cost of one call
        return int(digits)
    value = marked_int(digits)
    if isinstance(value, _Long):
        raise _LongInteger
    return value


def marked_int(digits: str) -> int | _Long:
    """The value of an integer literal, or a _Long when it lies beyond a float's range."""
    if len(digits.lstrip("-")) <= MAX_INT_DIGITS + 1:
        value = int(digits)
        with contextlib.suppress(OverflowError):
            float(value)
            return value
    return _Long(digits)


def key_problem(key: str, path: str) -> tuple[str, str, re.Pattern[str]] | None:
    return _surrogate_problem(key, path, "a key")


def _surrogate_problem(
    text: str, path: str, holder: str
) -> tuple[str, str, re.Pattern[str]] | None:
    """(field, problem, what finds it) when text (a key or a string value) holds a lone
    surrogate, else None."""
    m = SURROGATE.search(text)
    if m is None:
        return None
    return (
        path or "json",
        f"{holder} holds a lone surrogate ({escaped_surrogate(m[0])}), not valid Unicode",
        _LONE_ESCAPE,
    )


def unsound(value: Any) -> tuple[str, str] | None:
    """(field, problem) of the first lone surrogate or too long integer in a value decoded some
    other way (a Python literal), or None; the JSON decoder here checks what it decodes itself."""
    found = _unsound(value)
    return None if found is None else found[:2]


def subfield(key: str, sub: str) -> str:
    """The field sub (as an UnsoundJSON names it inside a value) of the value under key."""
    return key if sub == "json" else key + sub if sub.startswith("[") else f"{key}.{sub}"


def _unsound(value: Any, path: str = "") -> tuple[str, str, re.Pattern[str]] | None:
    """(field, problem, what finds it in the text) of the first lone surrogate (in a string or
    a key) or too long integer (a _Long) inside a decoded JSON value; None when there is none."""
    if isinstance(value, str):
        return _surrogate_problem(value, path, "text")
    if isinstance(value, _Long):
        return (
            path or "json",
            (
                f"an integer of {value.digits} digits, too large for a number "
                "(at most about 1.8e308)"
            ),
            _LONG_DIGITS,
        )
    if isinstance(value, dict):
        for key in value:
            bad_key = key_problem(key, path)
            if bad_key is not None:
                return bad_key
    for sub, item in members(value, path):
        found = _unsound(item, sub)
        if found is not None:
            return found
    return None


def members(value: Any, path: str) -> Iterable[tuple[str, Any]]:
    """(path, value) of each member of a JSON object or array, its path below path ("a.b",
    "a[0]"; a key alone when path is ""); none for any other value."""
    if isinstance(value, dict):
        return ((f"{path}.{k}" if path else k, v) for k, v in value.items())
    if isinstance(value, list):
        return ((f"{path}[{i}]", v) for i, v in enumerate(value))
    return ()


class _Decoder(json.JSONDecoder):
    """A JSONDecoder for untrusted files: what it cannot read is a JSONDecodeError, never a crash.

    Nesting too deep for Python's parser is a syntax error; a lone surrogate (an escape such as
    "\\ud800", which no UTF-8 store can hold) and an integer literal of more than MAX_INT_DIGITS
    digits are an UnsoundJSON error naming the field that holds them.
    """

    def __init__(self, strict: bool = True) -> None:
        super().__init__(strict=strict, parse_int=_checked_int)

    def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
        try:
            try:
                value, end = super().raw_decode(s, idx)
                if not _LONE_ESCAPE.search(s, idx, end):
                    return value, end
            except _LongInteger:
                # decoded again with the long integers as markers, so the walk finds their field
                value, end = json.JSONDecoder(strict=self.strict, parse_int=marked_int).raw_decode(
                    s, idx
                )
            found = _unsound(value)
        except RecursionError:
            # Python's parser recurses per level: thousands of "[" would end the import
            raise json.JSONDecodeError("nested too deeply to read", s, idx) from None
        if found is None:
            return value, end  # an escaped backslash before "ud800": no surrogate after all
        field, problem, locator = found
        where = locator.search(s, idx, end)
        raise UnsoundJSON(field, problem, s, where.start() if where else idx, end)


#: the largest token count the store keeps (BIGINT), and the range of a relevance label (INTEGER)
MAX_COUNT = 2**63 - 1
MIN_LABEL, MAX_LABEL = -(2**31), 2**31 - 1

#: the decoder every reader uses (native.py too): deep nesting is reported, never a crash
DECODER = _Decoder()
_LENIENT = _Decoder(strict=False)


def loads(text: str, strict: bool = True) -> Any:
    """json.loads for untrusted text: whatever cannot be read is a JSONDecodeError (see _Decoder)."""
    return (DECODER if strict else _LENIENT).decode(text)
