"""JSON helpers shared by the third-party readers: elements with their line numbers, and sniffing.

A JSON array is loaded whole (its text, not a parsed tree) and walked element by element with
json.JSONDecoder.raw_decode, so each element is reported at the line where it starts. JSON Lines
are streamed line by line. peek_first() parses the first value of a possibly truncated file head,
so a sniffer can look at the keys of the first record even when that record is longer than the head.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rageval_core.errors import ProblemLog
from rageval_core.formats.base import (
    MAX_MEASURE,
    finite_number,
    open_input,
    too_large,
    type_name,
    unknown_key,
    unreadable,
)
from rageval_core.model import Chunk

from rageval_core.formats.safejson import DECODER as DECODER
from rageval_core.formats.safejson import MAX_COUNT as MAX_COUNT
from rageval_core.formats.safejson import MAX_INT_DIGITS as MAX_INT_DIGITS
from rageval_core.formats.safejson import UnsoundJSON as UnsoundJSON
from rageval_core.formats.safejson import error_field as error_field
from rageval_core.formats.safejson import key_problem, marked_int, subfield
from rageval_core.formats.safejson import loads as loads

Layout = Literal["array", "object", "lines"]


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = {
    "true": True,
    "false": False,
    "null": None,
    "NaN": math.nan,
    "Infinity": math.inf,
    "-Infinity": -math.inf,
}


#: stands in for a value already reported as unsound: the walk skips it
_SKIPPED = object()


class Truncated:
    """Stands for a string or number that the head cut off (sniffers see the key, not the value)."""

    def __repr__(self) -> str:
        return "TRUNCATED"


TRUNCATED = Truncated()


# -- reading -----------------------------------------------------------------------------------


def read_text(path: Path, file: str, log: ProblemLog) -> str | None:
    """The file's text (UTF-8, an initial BOM dropped), or None after logging why it is unusable."""
    try:
        with open_input(path) as fh:
            text = fh.read().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        log.error(file, 0, "file", unreadable(e))
        return None
    if not text.strip():
        log.error(file, 0, "file", "empty file")
        return None
    return text


def layout_of(text: str) -> Layout:
    """Whether text is one JSON array, one JSON object (possibly pretty-printed) or JSON Lines.

    A first line that is a complete JSON value on its own means JSON Lines, unless it is the
    only line: then the file is one object (a one-line mapping reads the same either way).
    """
    stripped = text.lstrip()
    if stripped.startswith("["):
        return "array"
    first, _, rest = stripped.partition("\n")
    if not rest.strip():
        return "object"
    if first.rstrip().endswith("}"):
        return "lines"  # even when that line is broken: then each line is reported on its own
    try:
        loads(first)
        return "lines"
    except json.JSONDecodeError:
        pass
    # A broken first record: JSON Lines if the next line is a record on its own (the second
    # line of a pretty-printed object is '"key": ...', which never parses alone).
    second = next((line for line in rest.splitlines() if line.strip()), "")
    try:
        return "lines" if isinstance(loads(second), dict) else "object"
    except json.JSONDecodeError:
        return "object"


def json_error(e: json.JSONDecodeError) -> tuple[int, str]:
    """(line, message) for a JSON syntax error, in the house spelling 'msg (column N)'."""
    return e.lineno, f"{e.msg} (column {e.colno})"


def iter_array(
    text: str, file: str, log: ProblemLog, start: int = 0, nested: bool = False
) -> Iterator[tuple[int, Any]]:
    """Yield (line, element) for each element of the JSON array in text at offset start.

    A syntax error is logged (field "json") at its own line and ends the walk, since nothing
    after it can be located reliably. nested: the array is a value inside a larger document,
    so what follows it is not checked here.
    """

    def element(pos: int) -> tuple[Any, int]:
        return DECODER.raw_decode(text, pos)  # type: ignore[no-any-return]

    yield from _walk(text, file, log, start, ("[", "]"), "array", nested, element)


def iter_object(text: str, file: str, log: ProblemLog) -> Iterator[tuple[int, str, Any, int]]:
    """Yield (line, key, value, value_offset) for each member of the JSON object text holds.

    value_offset lets a caller walk a member's array again with iter_array(start=...) to learn
    the lines of its elements.
    """

    def member(pos: int) -> tuple[tuple[str, Any, int], int] | None:
        if not text.startswith('"', pos):
            log.error(file, _line_at(text, pos), "json", "expected a string key")
            return None
        key, end = json.decoder.scanstring(text, pos + 1)  # type: ignore[attr-defined]
        colon = _WS.match(text, end).end()  # type: ignore[union-attr]
        if not text.startswith(":", colon):
            log.error(file, _line_at(text, colon), "json", "expected ':' after a key")
            return None
        start = _WS.match(text, colon + 1).end()  # type: ignore[union-attr]
        value, end = _member(text, pos, key, start)
        return (key, value, start), end

    for line, (key, value, start) in _walk(text, file, log, 0, ("{", "}"), "object", False, member):
        yield line, key, value, start


def _walk(
    text: str,
    file: str,
    log: ProblemLog,
    start: int,
    brackets: tuple[str, str],
    kind: str,
    nested: bool,
    item: Callable[[int], tuple[Any, int] | None],
) -> Iterator[tuple[int, Any]]:
    """Yield (line, item) for each item of the JSON array or object (kind) at offset start.

    brackets: the container's opening and closing characters. item(pos) decodes one item (an
    element, or a member as a tuple) and says where it ends, or logs why it cannot and returns
    None, which ends the walk like a syntax error does.

    An item that raises UnsoundJSON is reported and skipped (the walk goes on with the next).
    """
    opening, closing = brackets
    pos = _WS.match(text, start).end()  # type: ignore[union-attr]
    if not text.startswith(opening, pos):
        log.error(file, _line_at(text, pos), "json", f"expected a JSON {kind}")
        return
    line, last = _line_at(text, pos), pos
    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    if text.startswith(closing, pos):  # empty
        if not nested:
            _check_trailing(text, pos + 1, file, log)
        return
    while True:  # pos: where the next item starts (after "," an item must follow)
        try:
            got = item(pos)
            if got is None:
                return
            value, end = got
        except UnsoundJSON as e:  # reported; the walk goes on with the next item
            log.error(file, *_located(e))
            value, end = _SKIPPED, e.end
        except json.JSONDecodeError as e:
            log.error(file, *_located(e))
            return
        line += text.count("\n", last, pos)
        last = pos
        if value is not _SKIPPED:
            yield line, value
        pos = _WS.match(text, end).end()  # type: ignore[union-attr]
        if text.startswith(",", pos):
            pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
            continue
        if text.startswith(closing, pos):
            if not nested:
                _check_trailing(text, pos + 1, file, log)
            return
        what = "end of file" if pos >= len(text) else repr(text[pos])
        log.error(file, _line_at(text, pos), "json", f"expected ',' or '{closing}', got {what}")
        return


def _member(text: str, pos: int, key: str, start: int) -> tuple[Any, int]:
    """raw_decode of the value at start of the member whose key (at pos) is key; an UnsoundJSON
    names its field from the top of the document (the key first), or the key when that is bad."""
    try:
        value, end = DECODER.raw_decode(text, start)
        inner = None
    except UnsoundJSON as e:
        inner, end = e, e.end
    bad_key = key_problem(key, "")
    if bad_key is not None:
        raise UnsoundJSON(bad_key[0], bad_key[1], text, pos, end)
    if inner is not None:
        raise UnsoundJSON(subfield(key, inner.field), inner.msg, text, inner.pos, end)
    return value, end


def iter_lines(lines: Iterable[str], file: str, log: ProblemLog) -> Iterator[tuple[int, Any]]:
    """Yield (line, value) for each non-blank line of JSON Lines; bad lines are logged, skipped."""
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            value = loads(raw.rstrip())  # so an error at the end has this line's column
        except json.JSONDecodeError as e:
            log.error(file, number, error_field(e), f"{e.msg} (column {e.colno})")
            if log.full:
                return
            continue
        yield number, value


def iter_records(text: str, file: str, log: ProblemLog) -> Iterator[tuple[int, Any]]:
    """Yield (line, record) of a JSON array or of JSON Lines (a lone object is one record)."""
    layout = layout_of(text)
    if layout == "array":
        yield from iter_array(text, file, log)
    elif layout == "lines":
        yield from iter_lines(text.splitlines(), file, log)
    else:
        start = _WS.match(text, 0).end()  # type: ignore[union-attr]
        try:
            value, end = DECODER.raw_decode(text, start)
        except json.JSONDecodeError as e:
            log.error(file, *_located(e))
            return
        _check_trailing(text, end, file, log)
        yield _line_at(text, start), value


def _check_trailing(text: str, pos: int, file: str, log: ProblemLog) -> None:
    pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
    if pos < len(text):
        log.error(file, _line_at(text, pos), "json", "extra data after the end of the JSON value")


def _line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _located(e: json.JSONDecodeError) -> tuple[int, str, str]:
    """(line, field, message) of a JSON error, as a problem reports it."""
    line, message = json_error(e)
    return line, error_field(e), message


# -- validating values -------------------------------------------------------------------------


def all_finite(value: Any) -> bool:
    """True when every number inside value (recursively) is finite (NaN/Infinity are not)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, Mapping):
        return all(all_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(all_finite(v) for v in value)
    return True


def id_text(value: Any) -> str | None:
    """An id given as a non-empty string or an integer (third-party files use both), as a string."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def string_list(
    value: Any, key: str, ids: bool, error: Callable[[str, str], None]
) -> list[str] | None:
    """value as a list of strings (ids: of non-empty strings or integers, as id_text reads
    them); the first problem goes to error(field, problem) and gives None."""
    if not isinstance(value, list):
        error(key, f"expected an array, got {describe(value)}")
        return None
    out = []
    for i, item in enumerate(value):
        text = id_text(item) if ids else item if isinstance(item, str) else None
        if text is None:
            want = "a non-empty string or an integer" if ids else "a string"
            error(f"{key}[{i}]", f"expected {want}, got {describe(item)}")
            return None
        out.append(text)
    return out


def tag_text(value: Any) -> str | None:
    """A tag value: strings as they are, numbers and booleans in their JSON spelling, else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int)) or (isinstance(value, float) and math.isfinite(value)):
        return json.dumps(value)
    return None


def describe(value: Any) -> str:
    """What a bad value is: its type, or for a number the number itself (NaN, Infinity, -1 ...)."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value).replace("nan", "NaN").replace("inf", "Infinity")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    return type_name(value)


def value_problem(value: Any, expected: str) -> str:
    """The problem with a required value: "required" when absent, else what it should be."""
    return "required" if value is None else f"expected {expected}, got {describe(value)}"


class KeyWarner:
    """Warns about an unknown key (or any problem that may repeat) once per key per file, at
    its first line, with how many times it came (a key every record has is one warning, not one
    per record)."""

    def __init__(self, file: str, log: ProblemLog) -> None:
        self.file = file
        self.log = log
        # (field, kind) -> (times seen, index of its warning in the log)
        self.seen: dict[tuple[str, str], tuple[int, int]] = {}

    def unknown(self, line: int, field: str, known: frozenset[str] | tuple[str, ...] = ()) -> None:
        """Warn about field (known: the keys it may be a typo of, for "did you mean")."""
        key = field.rpartition("[].")[2]
        self.repeated(line, field, lambda times: unknown_key(key, known, times))

    def repeated(
        self, line: int, field: str, message: Callable[[int], str], kind: str = ""
    ) -> None:
        """Warn message(1) at field the first time (field, kind) comes; each later time the same
        warning's text becomes message(times)."""
        count, at = self.seen.get((field, kind), (0, -1))
        problems = self.log.problems
        if count == 0:
            self.log.warn(self.file, line, field, message(1))
            at = len(problems) - 1
            first = problems[at] if at >= 0 else None
            if first is None or first.field != field or first.file != self.file:
                at = -1  # the log is full: the warning was not kept
        elif 0 <= at < len(problems) and problems[at].field == field:
            problems[at] = dataclasses.replace(problems[at], problem=message(count + 1))
        self.seen[(field, kind)] = (count + 1, at)


def times_text(times: int) -> str:
    """ " (3 times)" after a repeated warning; nothing for one."""
    return f" ({times} times)" if times > 1 else ""


# -- sniffing ----------------------------------------------------------------------------------


def peek_first(head: bytes) -> Any:
    """The first JSON value in head, as far as head holds it; None when head is not JSON.

    Containers cut off by the end of head come back partial; a string or number cut off comes
    back as TRUNCATED, so a record's keys are known even when one of its values is huge. A
    syntax error after the first element of a top-level array ends the array there, so a file
    with a typo further down is still recognised (its reader then reports the typo).
    """
    text = head.decode("utf-8", errors="ignore").lstrip("\ufeff")
    start = _WS.match(text, 0).end()  # type: ignore[union-attr]
    if start >= len(text) or text[start] not in "[{":
        return None
    try:
        value, _, _ = _partial(text, start, lenient=True)
    except (_NotJson, RecursionError):  # nesting deeper than the parser follows: not sniffable
        return None
    return value


def first_record(head: bytes) -> Any:
    """The first record of a JSON array or JSON Lines head (the top value itself when an object)."""
    value = peek_first(head)
    if isinstance(value, list):
        return value[0] if value else None
    return value


class _NotJson(Exception):
    pass


def _partial(s: str, i: int, lenient: bool = False) -> tuple[Any, int, bool]:
    """(value, end, complete) of the JSON value at s[i]; the end of s makes it incomplete.

    lenient: an array that already holds an element ends at a syntax error instead of failing.
    """
    n = len(s)
    c = s[i]
    if c == "{" or c == "[":
        out: Any = {} if c == "{" else []
        try:
            return _partial_container(s, i, out)
        except _NotJson:
            if lenient and c == "[" and out:
                return out, n, False
            raise
    if c == '"':
        try:
            text, end = json.decoder.scanstring(s, i + 1)  # type: ignore[attr-defined]
        except json.JSONDecodeError as e:
            if e.msg.startswith("Unterminated string"):
                return TRUNCATED, n, False
            raise _NotJson from e
        return text, end, True
    m = _NUMBER.match(s, i)
    if m:
        if m.end() >= n:
            return TRUNCATED, n, False
        number = m.group()
        number_value = float(number) if any(ch in number for ch in ".eE") else marked_int(number)
        return number_value, m.end(), True
    for literal, value in _LITERALS.items():
        if s.startswith(literal, i):
            return value, i + len(literal), True
        if literal.startswith(s[i:]):
            return TRUNCATED, n, False
    raise _NotJson


def _partial_container(s: str, i: int, out: Any) -> tuple[Any, int, bool]:
    """_partial for an object or array at s[i], filling out (so a caller keeps what was read)."""
    n = len(s)
    is_object = s[i] == "{"
    closing = "}" if is_object else "]"
    i = _WS.match(s, i + 1).end()  # type: ignore[union-attr]
    if i >= n:
        return out, i, False
    if s[i] == closing:
        return out, i + 1, True
    while True:
        if is_object:
            if s[i] != '"':
                raise _NotJson
            key, i, ok = _partial(s, i)
            if not ok:
                return out, i, False
            i = _WS.match(s, i).end()  # type: ignore[union-attr]
            if i >= n:
                out[key] = TRUNCATED
                return out, i, False
            if s[i] != ":":
                raise _NotJson
            i = _WS.match(s, i + 1).end()  # type: ignore[union-attr]
            if i >= n:
                out[key] = TRUNCATED
                return out, i, False
            value, i, ok = _partial(s, i)
            out[key] = value
        else:
            value, i, ok = _partial(s, i)
            if ok or not isinstance(value, Truncated):
                out.append(value)
        if not ok:
            return out, i, False
        i = _WS.match(s, i).end()  # type: ignore[union-attr]
        if i >= n:
            return out, i, False
        if s[i] == closing:
            return out, i + 1, True
        if s[i] != ",":
            raise _NotJson
        i = _WS.match(s, i + 1).end()  # type: ignore[union-attr]
        if i >= n:
            return out, i, False


# -- documents and per-query extras shared by tatrag and qa_pairs ------------------------------

_TOKEN_NAMES = {
    "prompt_tokens": "prompt",
    "completion_tokens": "completion",
    "total_tokens": "total",
}


def parse_chunk(
    doc: Any, where: str, line: int, file: str, log: ProblemLog, text_keys: tuple[str, ...]
) -> Chunk | None:
    """A document {id, <text key>, score, metadata, ...} as a Chunk; other keys join metadata."""
    if not isinstance(doc, Mapping):
        log.error(file, line, where, f"expected an object, got {describe(doc)}")
        return None
    ok = True
    doc_id = id_text(doc.get("id"))
    if doc_id is None:
        problem = value_problem(doc.get("id"), "a non-empty string or an integer")
        log.error(file, line, f"{where}.id", problem)
        ok = False
    text_key = next((k for k in text_keys if k in doc), None)
    text = doc.get(text_key) if text_key else None
    if text is not None and not isinstance(text, str):
        log.error(file, line, f"{where}.{text_key}", f"expected a string, got {describe(text)}")
        ok = False
    score = doc.get("score")
    if score is not None:
        score = finite_number(score)
        if score is None:
            log.error(
                file,
                line,
                f"{where}.score",
                f"expected a finite number, got {describe(doc['score'])}",
            )
            ok = False
    metadata = doc.get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, Mapping):
        log.error(file, line, f"{where}.metadata", f"expected an object, got {describe(metadata)}")
        ok = False
        metadata = {}
    # Keys beyond the known ones (rank, source, page ...) are kept with the chunk; an explicit
    # metadata object wins over a top-level key of the same name.
    extra = {k: v for k, v in doc.items() if k not in ("id", "score", "metadata", text_key)}
    merged = {**extra, **metadata}
    if not all_finite(merged):
        log.error(file, line, f"{where}.metadata", "numbers must be finite (no NaN or Infinity)")
        ok = False
    if not ok or doc_id is None:
        return None
    return Chunk(doc_id=doc_id, text=text, score=score, metadata=merged)


@dataclass
class Extras:
    """What a retrieval entry may say about generation: answer, token counts, latency."""

    answer: str | None = None
    tokens: dict[str, int] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)


EXTRA_KEYS = ("answer", "usage", "tokens", "latency_ms")


def parse_extras(entry: Mapping[str, Any], line: int, file: str, log: ProblemLog) -> Extras | None:
    """answer (string); tokens {name: int} or OpenAI-style usage {prompt_tokens, ...};
    latency_ms as {stage: ms} or one number (stage "total"). None when any is invalid."""
    out = Extras()
    ok = True
    answer = entry.get("answer")
    if answer is not None:
        if isinstance(answer, str):
            out.answer = answer
        else:
            log.error(file, line, "answer", f"expected a string, got {describe(answer)}")
            ok = False
    for key in ("usage", "tokens"):
        counts = entry.get(key)
        if counts is None:
            continue
        if isinstance(counts, int) and not isinstance(counts, bool) and key == "tokens":
            counts = {"total": counts}
        if not isinstance(counts, Mapping):
            log.error(file, line, key, f"expected an object, got {describe(counts)}")
            ok = False
            continue
        for name, value in counts.items():
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
                log.error(
                    file,
                    line,
                    f"{key}.{name}",
                    f"expected an integer from 0 to {MAX_COUNT}, got {describe(value)}",
                )
                ok = False
            else:
                name = str(name)
                out.tokens[_TOKEN_NAMES.get(name, name) if key == "usage" else name] = value
    latency = entry.get("latency_ms")
    if latency is not None:
        stages = latency if isinstance(latency, Mapping) else {"total": latency}
        for stage, value in stages.items():
            number = finite_number(value)
            where = f"latency_ms.{stage}" if isinstance(latency, Mapping) else "latency_ms"
            if number is None or number < 0:
                log.error(
                    file, line, where, f"expected a finite number >= 0, got {describe(value)}"
                )
                ok = False
            elif number > MAX_MEASURE:
                log.error(file, line, where, too_large(number))
                ok = False
            else:
                out.latency_ms[stage] = number
    return out if ok else None
