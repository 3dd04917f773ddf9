"""Where the question and the grid values go in a request, and where the chunks are in a reply.

A path names a place in JSON: keys joined by dots, list items as [i] (`data.hits`,
`results[0].documents`, `meta.timings_ms`); the empty path "" is the whole reply. A key holding
a dot or a bracket cannot be named. The defaults fit the common shape
`{"query": ..., "top_k": ...}` -> `{"results": [{"id", "text", "score"}]}`; docs/collect.md
has the reference and examples.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval_core.errors import InputError, Problem
from rageval_core.model import Chunk

_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
#: the defaults: the first of these present in a reply (or chunk) is taken
CHUNKS = ("results", "documents", "chunks", "hits", "retrieved")
CHUNK_ID = ("id", "doc_id", "chunk_id", "_id")
CHUNK_TEXT = ("text", "content", "page_content")
CHUNK_SCORE = ("score", "relevance", "_score")
LATENCY = ("latency_ms", "timings_ms", "timings")
TOKENS = ("tokens", "usage")
#: the stage the client's own wall time of a request is stored as
REQUEST_STAGE = "request"
#: the largest count (tokens) and time (ms) a reply may report; past it the reply is refused
MAX_MEASURE = 1e12
#: the largest list index a request path may name
MAX_INDEX = 100


class PathError(ValueError):
    """A path that cannot be parsed."""


def parse_path(path: str) -> tuple[str | int, ...]:
    """The steps of a path: "a.b[2]" -> ("a", "b", 2); "" -> () (the whole value)."""
    if path == "":
        return ()
    steps: list[str | int] = []
    pos = 0
    while pos < len(path):
        if steps and path[pos] == "." and not path.startswith(".[", pos):
            pos += 1
        m = _STEP.match(path, pos)
        if m is None:
            raise PathError(f"{path!r} is not a path (keys joined by dots, list items as [i])")
        steps.append(m[1] if m[1] is not None else int(m[2]))
        pos = m.end()
    return tuple(steps)


_MISSING = object()


def get_path(value: Any, steps: Sequence[str | int]) -> Any:
    """The value at steps, or _MISSING when a step is absent (or the wrong kind of container)."""
    for step in steps:
        if isinstance(step, int):
            if not isinstance(value, list) or step >= len(value):
                return _MISSING
            value = value[step]
        else:
            if not isinstance(value, dict) or step not in value:
                return _MISSING
            value = value[step]
    return value


def set_path(body: dict[str, Any], steps: Sequence[str | int], value: Any) -> None:
    """Put value at steps inside body, making the objects (and lists) on the way."""
    if not steps or isinstance(steps[0], int):
        raise PathError("a request field's path starts with a key (the body is an object)")
    node: Any = body
    for i, step in enumerate(steps):
        if isinstance(step, int):
            if step > MAX_INDEX:
                raise PathError(f"[{step}]: a request list index goes up to {MAX_INDEX}")
            node.extend([None] * (step + 1 - len(node)))
        if i + 1 == len(steps):
            node[step] = value
            return
        want = list if isinstance(steps[i + 1], int) else dict
        current = node[step] if isinstance(step, int) else node.get(step)
        if not isinstance(current, want):
            node[step] = current = want()
        node = current


@dataclass(frozen=True)
class Paths:
    """A field's place: one path, or alternatives of which the first present is taken."""

    options: tuple[str, ...]
    steps: tuple[tuple[str | int, ...], ...] = field(compare=False, default=())

    @classmethod
    def of(cls, options: Sequence[str]) -> Paths:
        return cls(tuple(options), tuple(parse_path(p) for p in options))

    def find(self, value: Any) -> tuple[str, Any]:
        """(the path that matched, its value); ("", _MISSING) when none did."""
        for text, steps in zip(self.options, self.steps, strict=True):
            found = get_path(value, steps)
            if found is not _MISSING:
                return text, found
        return "", _MISSING

    def __str__(self) -> str:
        return " | ".join(self.options) if self.options else "(nothing)"


@dataclass(frozen=True)
class Mapping_:
    """The request and reply shapes (docs/collect.md, "The mapping")."""

    query: str = "query"
    query_id: str | None = None
    #: grid name -> where its value goes; a name not listed goes to the top level, by its name
    params: Mapping[str, str] = field(default_factory=dict)
    body: Mapping[str, Any] = field(default_factory=dict)
    chunks: Paths = field(default_factory=lambda: Paths.of(CHUNKS))
    chunk_id: Paths = field(default_factory=lambda: Paths.of(CHUNK_ID))
    text: Paths = field(default_factory=lambda: Paths.of(CHUNK_TEXT))
    score: Paths = field(default_factory=lambda: Paths.of(CHUNK_SCORE))
    rank: Paths = field(default_factory=lambda: Paths.of(()))
    metadata: tuple[str, ...] = ()
    latency_ms: Paths = field(default_factory=lambda: Paths.of(LATENCY))
    tokens: Paths = field(default_factory=lambda: Paths.of(TOKENS))

    def request(self, query_id: str, query: str, point: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON body for one question at one grid point."""
        body = copy.deepcopy(dict(self.body))
        for name, value in point.items():
            set_path(body, parse_path(self.params.get(name, name)), value)
        set_path(body, parse_path(self.query), query)
        if self.query_id is not None:
            set_path(body, parse_path(self.query_id), query_id)
        return body

    def to_json(self) -> dict[str, Any]:
        return {
            "request": {
                "query": self.query,
                "query_id": self.query_id,
                "params": dict(self.params),
                "body": dict(self.body),
            },
            "reply": {
                "chunks": list(self.chunks.options),
                "id": list(self.chunk_id.options),
                "text": list(self.text.options),
                "score": list(self.score.options),
                "rank": list(self.rank.options),
                "metadata": list(self.metadata),
                "latency_ms": list(self.latency_ms.options),
                "tokens": list(self.tokens.options),
            },
        }


_REQUEST_KEYS = ("query", "query_id", "params", "body")
_REPLY_KEYS = ("chunks", "id", "text", "score", "rank", "metadata", "latency_ms", "tokens")


def load_mapping(path: Path | None, grid_names: Sequence[str] = ()) -> Mapping_:
    """The mapping in a JSON file (None: the defaults); InputError naming file:line: field."""
    if path is None:
        return _checked(Mapping_(), "(default mapping)", grid_names)
    shown = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise _bad(shown, 0, "file", f"cannot be read ({type(e).__name__}: {e})") from None
    try:
        obj = json.loads(text)
    except RecursionError:
        raise _bad(shown, 0, "file", "nests too deeply to be read") from None
    except json.JSONDecodeError as e:
        raise _bad(shown, e.lineno, "file", f"not JSON ({e.msg})") from None
    if not isinstance(obj, dict):
        raise _bad(shown, 1, "file", "must be a JSON object with request and reply")
    problems: list[Problem] = []

    def line_of(key: str) -> int:
        at = text.find(f'"{key}"')
        return text.count("\n", 0, at) + 1 if at >= 0 else 1

    def err(where: str, problem: str) -> None:
        problems.append(Problem(shown, line_of(where.rpartition(".")[2]), where, problem))

    for key in obj:
        if key not in ("request", "reply"):
            err(str(key), "unknown key (expected request, reply)")
    request = obj.get("request", {})
    reply = obj.get("reply", {})
    kwargs: dict[str, Any] = {}
    for name, part, keys in (("request", request, _REQUEST_KEYS), ("reply", reply, _REPLY_KEYS)):
        if not isinstance(part, dict):
            err(name, "must be an object")
            continue
        for key in part:
            if key not in keys:
                err(f"{name}.{key}", f"unknown key (expected one of: {', '.join(keys)})")
    if isinstance(request, dict):
        for key in ("query", "query_id"):
            if key in request:
                value = request[key]
                if not (isinstance(value, str) or (key == "query_id" and value is None)):
                    err(f"request.{key}", "must be a path (a string)")
                else:
                    kwargs[key] = value
        params = request.get("params", {})
        if not isinstance(params, dict) or not all(isinstance(v, str) for v in params.values()):
            err("request.params", "must map grid names to paths (strings)")
        else:
            kwargs["params"] = params
        body = request.get("body", {})
        if not isinstance(body, dict):
            err("request.body", "must be an object (fields sent with every request)")
        else:
            kwargs["body"] = body
    if isinstance(reply, dict):
        for key, attr in (
            ("chunks", "chunks"),
            ("id", "chunk_id"),
            ("text", "text"),
            ("score", "score"),
            ("rank", "rank"),
            ("latency_ms", "latency_ms"),
            ("tokens", "tokens"),
        ):
            if key not in reply:
                continue
            value = reply[key]
            options = [] if value is None else [value] if isinstance(value, str) else value
            if not isinstance(options, list) or not all(isinstance(v, str) for v in options):
                err(
                    f"reply.{key}",
                    "must be a path, a list of paths (the first present is taken) or null",
                )
                continue
            try:
                kwargs[attr] = Paths.of(options)
            except PathError as e:
                err(f"reply.{key}", str(e))
        meta = reply.get("metadata", [])
        if not isinstance(meta, list) or not all(isinstance(v, str) and v for v in meta):
            err("reply.metadata", "must be a list of chunk keys to keep")
        else:
            kwargs["metadata"] = tuple(meta)
    if problems:
        raise InputError(problems)
    return _checked(Mapping_(**kwargs), shown, grid_names)


def _checked(mapping: Mapping_, shown: str, grid_names: Sequence[str]) -> Mapping_:
    """mapping, once its request paths parse and no two request fields share a place."""
    places: dict[tuple[str | int, ...], str] = {}
    problems: list[Problem] = []
    named = [("request.query", mapping.query)]
    if mapping.query_id is not None:
        named.append(("request.query_id", mapping.query_id))
    for name in mapping.params:
        if name not in grid_names:
            problems.append(
                Problem(shown, 0, f"request.params.{name}", "is no --grid name (a typo?)")
            )
    named += [(f"grid {n}", mapping.params.get(n, n)) for n in grid_names]
    for what, path in named:
        try:
            steps = parse_path(path)
            if not steps:
                raise PathError("the empty path is the whole body: name a field")
        except PathError as e:
            problems.append(Problem(shown, 0, what, str(e)))
            continue
        if steps in places:
            problems.append(
                Problem(shown, 0, what, f"goes to {path!r}, where {places[steps]} goes too")
            )
        places[steps] = what
    if problems:
        raise InputError(problems)
    return mapping


def _bad(file: str, line: int, field_: str, problem: str) -> InputError:
    return InputError([Problem(file, line, field_, problem)])


@dataclass(frozen=True)
class Retrieved:
    """What one reply held: the ranked chunks, the reply's own timings and token counts."""

    chunks: tuple[Chunk, ...]
    latency_ms: dict[str, float]
    tokens: dict[str, int]


class ReplyProblem(ValueError):
    """A reply the mapping cannot read: field (a path in the reply) and the problem."""

    def __init__(self, field_: str, problem: str) -> None:
        self.field = field_
        self.problem = problem
        super().__init__(f"{field_}: {problem}")


def read_reply(payload: bytes, mapping: Mapping_) -> Retrieved:
    """The chunks, timings and tokens of a reply body; ReplyProblem for the first fault found.

    An empty chunks list is an answer (nothing retrieved); a missing one is a fault."""
    try:
        obj = json.loads(payload)
    except RecursionError:
        raise ReplyProblem("reply", "nests too deeply to be read") from None
    except json.JSONDecodeError:
        raise ReplyProblem("reply", "is not JSON") from None
    except ValueError:  # not UTF-8, an integer of thousands of digits
        raise ReplyProblem("reply", "cannot be read as JSON text") from None
    where, found = mapping.chunks.find(obj)
    if found is _MISSING:
        raise ReplyProblem(str(mapping.chunks), "no chunks list there")
    if not isinstance(found, list):
        raise ReplyProblem(where or "reply", f"is {_kind(found)}, not a list of chunks")
    chunks = [_chunk(item, f"{where}[{i}]", mapping) for i, item in enumerate(found)]
    if mapping.rank.options:
        ranks = [rank for rank, _ in chunks]
        if len(set(ranks)) != len(ranks):
            raise ReplyProblem(f"{where}[].{mapping.rank}", "two chunks share a rank")
        chunks.sort(key=lambda pair: pair[0])
    seen: dict[str, int] = {}
    for i, (_, chunk) in enumerate(chunks):
        if chunk.doc_id in seen:
            raise ReplyProblem(
                f"{where}[{i}].{mapping.chunk_id}",
                f"{chunk.doc_id!r} is also chunk {seen[chunk.doc_id]} (an id once per reply)",
            )
        seen[chunk.doc_id] = i
    return Retrieved(
        tuple(c for _, c in chunks),
        # the reply's own stages happen inside the request: request.NAME (docs/metrics.md:
        # a nested stage is not added again to the derived total)
        {f"{REQUEST_STAGE}.{k}": v for k, v in _numbers(obj, mapping.latency_ms, float).items()},
        {k: int(v) for k, v in _numbers(obj, mapping.tokens, int).items()},
    )


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "true/false"}.get(
        type(value), "null" if value is None else "a number"
    )


def _chunk(item: Any, where: str, mapping: Mapping_) -> tuple[float, Chunk]:
    if not isinstance(item, dict):
        raise ReplyProblem(where, f"is {_kind(item)}, not a chunk object")
    path, doc_id = mapping.chunk_id.find(item)
    if doc_id is _MISSING or doc_id is None:
        raise ReplyProblem(f"{where}.{mapping.chunk_id}", "no chunk id")
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)) or str(doc_id) == "":
        raise ReplyProblem(f"{where}.{path}", f"is {_kind(doc_id)}, not an id (text or integer)")
    path, text = mapping.text.find(item)
    if text is _MISSING:
        text = None
    if text is not None and not isinstance(text, str):
        raise ReplyProblem(f"{where}.{path}", f"is {_kind(text)}, not text")
    path, score = mapping.score.find(item)
    score = None if score is _MISSING else _finite(score, f"{where}.{path}", "a score")
    rank = 0.0
    if mapping.rank.options:
        path, found = mapping.rank.find(item)
        if found is _MISSING:
            raise ReplyProblem(f"{where}.{mapping.rank}", "no rank")
        rank = _finite(found, f"{where}.{path}", "a rank")
    metadata = {}
    for key in mapping.metadata:
        value = get_path(item, parse_path(key))
        if value is not _MISSING:
            metadata[key] = value
    return rank, Chunk(doc_id=str(doc_id), text=text, score=score, metadata=metadata)


def _finite(value: Any, where: str, what: str) -> float:
    if value is None:
        raise ReplyProblem(where, f"is null, not {what}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ReplyProblem(where, f"is {_kind(value)}, not {what}")
    number = float(value)
    if not math.isfinite(number) or abs(number) > MAX_MEASURE:
        raise ReplyProblem(where, f"{value!r} is not {what} (a finite number)")
    return number


def _numbers(obj: Any, paths: Paths, kind: type) -> dict[str, float]:
    """An object of name -> number at paths ({} when absent); a lone number is "server".

    Entries that are objects or lists (a usage's *_details) are passed over; a negative,
    non-finite or non-numeric entry is a ReplyProblem."""
    where, found = paths.find(obj)
    if found is _MISSING or found is None:
        return {}
    if not isinstance(found, dict):
        found = {"server": found}
    out: dict[str, float] = {}
    for key, value in found.items():
        if isinstance(value, (dict, list)):
            continue
        number = _finite(value, f"{where}.{key}", "a number")
        whole = kind is int and not float(number).is_integer()
        if number < 0 or whole:
            what = "a count (a whole number, 0 or more)" if kind is int else "a time (0 or more)"
            raise ReplyProblem(f"{where}.{key}", f"{value!r} is not {what}")
        out[str(key)] = number
    return out
