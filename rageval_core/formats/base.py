"""What every reader module provides, and the run facts (header record / sidecar) they share.

A reader module (formats/<name>.py) exposes:

    FORMAT: str                      # its name, as given to --format
    PRIMARY: str                     # role of the file that holds the retrieval output
    COMPANION: str | None            # role of an optional/required second file (qrels, gold set)
    COMPANION_REQUIRED: bool
    def sniff(path: Path, head: bytes) -> str | None
        # head = the file's first HEAD_BYTES bytes; return PRIMARY, COMPANION or None (not mine)
    def read(primary: Path, companion: Path | None, log: ProblemLog) -> ParsedRun

detect.py sniffs every file, groups each primary file with its format's companion, and calls read.
Readers report problems to the log as file:line: field: problem and never raise on bad data.
"""

from __future__ import annotations

import difflib
import errno
import functools
import io
import json
import math
import re
import stat
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rageval_core.errors import ProblemLog
from rageval_core.formats.safejson import SURROGATE, UnsoundJSON, escaped_surrogate, loads
from rageval_core.model import RunInfo

HEAD_BYTES = 64 * 1024
#: The key of the header record that may open a native JSONL file (or a sidecar's only key).
HEADER_KEY = "rageval_run"
SIDECAR_SUFFIX = ".run.json"

#: the first bytes of a gzip stream (RFC 1952): TREC runs and qrels are often given as .gz
GZIP_MAGIC = b"\x1f\x8b"
#: the formats whose readers take a gzip-compressed file as they take the plain one
GZIP_FORMATS = ("trec",)
#: what a compressed file that does not decompress raises while it is read
GZIP_ERRORS: tuple[type[Exception], ...] = (OSError, EOFError, zlib.error)

_INFO_KEYS = frozenset(
    {"name", "created_at", "description", "settings", "price_per_1k", "prices_per_1k"}
)


def display_path(path: Path) -> str:
    """The path as problems print it: relative to the working directory when inside it.

    Never raises (a symlink loop, a NUL byte or a name too long to resolve: the path as given);
    a lone surrogate (a file name that is not UTF-8) is spelled as an escape, so the text can be
    printed and stored.
    """
    try:
        text = str(path.resolve().relative_to(Path.cwd()))
    except (ValueError, OSError, RuntimeError):
        text = str(path)
    return printable_path(text)


def printable_path(text: str) -> str:
    """A path's text with each lone surrogate spelled as an escape, so it can be printed and stored."""
    return SURROGATE.sub(lambda m: escaped_surrogate(m[0], in_name=True), text)


def path_problem(path: Path) -> str | None:
    """Why path cannot name a file at all (a NUL byte, a lone surrogate, a symlink loop, a name
    too long ...), or None; whether the file exists is for the caller to find out."""
    text = str(path)
    if "\x00" in text:
        return "the path holds a NUL byte"
    bad = SURROGATE.search(text)
    if bad is not None and not 0xDC80 <= ord(bad[0]) <= 0xDCFF:  # those stand for a name's bytes
        return f"the path holds a lone surrogate ({escaped_surrogate(bad[0])}), not a file name"
    try:
        path.resolve()
    except RuntimeError:  # Python 3.11 and 3.12 say a symlink loop so
        return "a symlink loop"
    except OSError as e:
        return "a symlink loop" if e.errno == errno.ELOOP else f"cannot read: {e.strerror or e}"
    return None


def first_line(text: str) -> str:
    """The first line of text, whichever line break ends it: "\\n", "\\r\\n" or a lone "\\r" (a CSV
    saved on an old Mac; Python's csv module reads those too)."""
    return _LINE_BREAK.split(text, maxsplit=1)[0]


_LINE_BREAK = re.compile(r"\r\n?|\n")


def is_gzip(path: Path) -> bool:
    """Whether the file starts as a gzip stream (by its bytes, not its name)."""
    with path.open("rb") as fh:
        return fh.read(2) == GZIP_MAGIC


def open_bytes(path: Path) -> io.BufferedIOBase:
    """The file's bytes, decompressed when it is gzip-compressed: the TREC readers read a .gz
    run or qrels file (as TREC and ranx distribute them) as they read the plain one."""
    if not is_gzip(path):
        return path.open("rb")
    import gzip  # only for a compressed file (zlib is not needed at start-up)

    return gzip.open(path, "rb")


def unreadable(e: Exception) -> str:
    """The problem to report for a file that could not be read, or not decoded as UTF-8 (e is
    one of GZIP_ERRORS or a UnicodeDecodeError)."""
    if isinstance(e, UnicodeDecodeError):
        return f"not valid UTF-8 (byte {e.start})"
    if isinstance(e, EOFError):
        return "compressed data ends early (a truncated .gz file)"
    if isinstance(e, zlib.error):
        return f"corrupt compressed data ({e})"
    strerror = e.strerror if isinstance(e, OSError) else None
    return f"cannot read: {strerror or e}"


def file_problem(path: Path) -> str | None:
    """Why path names no regular file to read (path_problem's reasons, "no such file", "not a
    file", "cannot read: ..."), or None when it does."""
    problem = path_problem(path)
    if problem is not None:
        return problem
    try:
        mode = path.stat().st_mode
    except OSError as e:  # missing, or a name too long, no permission ...
        missing = e.errno in (errno.ENOENT, errno.ENOTDIR)
        return "no such file" if missing else f"cannot read: {e.strerror or e}"
    return None if stat.S_ISREG(mode) else "not a file"


def is_file(path: Path) -> bool:
    """Path.is_file() for any path: False, not an exception, for a name too long or a bad one."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


@functools.lru_cache(maxsize=256)  # a misnamed key on every line of a large file: one guess
def unknown_key(
    key: str, known: frozenset[str] | tuple[str, ...], times: int = 1, what: str = "key"
) -> str:
    """The warning for a key the format does not have, naming the known key it is closest to
    (`retrived`: "did you mean retrieved?"); no guess when none is close."""
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.75)
    count = f" ({times} times)" if times > 1 else ""
    return f"unknown {what}, ignored{count}" + (f"; did you mean {close[0]}?" if close else "")


def parse_run_info(obj: Any, file: str, line: int, log: ProblemLog) -> RunInfo:
    """Validate the run facts object ({"name", "created_at", "settings", "prices_per_1k", ...})."""
    if not isinstance(obj, Mapping):
        log.error(file, line, HEADER_KEY, f"expected an object, got {type_name(obj)}")
        return RunInfo()
    for key in obj:
        if key not in _INFO_KEYS:
            log.warn(file, line, f"{HEADER_KEY}.{key}", unknown_key(key, _INFO_KEYS))

    def text(key: str) -> str | None:
        value = obj.get(key)
        if value is None or isinstance(value, str):
            return value
        log.error(file, line, f"{HEADER_KEY}.{key}", f"expected a string, got {type_name(value)}")
        return None

    settings = obj.get("settings") or {}
    if not isinstance(settings, Mapping):
        log.error(
            file, line, f"{HEADER_KEY}.settings", f"expected an object, got {type_name(settings)}"
        )
        settings = {}
    prompt = completion = None
    if "price_per_1k" in obj:
        prompt = completion = price(
            obj["price_per_1k"], file, line, f"{HEADER_KEY}.price_per_1k", log
        )
    prices = obj.get("prices_per_1k")
    if prices is not None:
        if not isinstance(prices, Mapping):
            log.error(
                file,
                line,
                f"{HEADER_KEY}.prices_per_1k",
                'expected {"prompt": .., "completion": ..}',
            )
        else:
            for key in prices:
                if key not in ("prompt", "completion"):
                    log.error(
                        file,
                        line,
                        f"{HEADER_KEY}.prices_per_1k.{key}",
                        "expected prompt or completion",
                    )
            if "prompt" in prices:
                prompt = price(
                    prices["prompt"], file, line, f"{HEADER_KEY}.prices_per_1k.prompt", log
                )
            if "completion" in prices:
                completion = price(
                    prices["completion"], file, line, f"{HEADER_KEY}.prices_per_1k.completion", log
                )
    return RunInfo(
        name=text("name"),
        created_at=text("created_at"),
        description=text("description"),
        settings=dict(settings),
        price_prompt_per_1k=prompt,
        price_completion_per_1k=completion,
    )


def price(value: Any, file: str, line: int, field: str, log: ProblemLog) -> float | None:
    number = finite_number(value)
    if number is None or number < 0:
        log.error(file, line, field, f"expected a non-negative number, got {value!r}")
        return None
    return number


def finite_number(value: Any) -> float | None:
    """value as a finite float, or None when it is not a finite number (bools are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond a float (the JSON readers refuse these earlier)
        return None
    return number if math.isfinite(number) else None


def type_name(value: Any) -> str:
    return {
        type(None): "null",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def read_sidecar(path: Path, log: ProblemLog) -> RunInfo | None:
    """Run facts from PATH.run.json beside a run file (any format), when that file exists."""
    sidecar = path.with_name(path.name + SIDECAR_SUFFIX)
    if not is_file(sidecar):
        return None
    shown = display_path(sidecar)
    try:
        obj = loads(sidecar.read_text(encoding="utf-8"))
    except OSError as e:
        log.error(shown, 0, "file", unreadable(e))
        return None
    except UnsoundJSON as e:  # a lone surrogate, a huge integer: at its field
        log.error(shown, e.lineno, e.field, f"{e.msg} (column {e.colno})")
        return None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:  # deep nesting too
        log.error(shown, getattr(e, "lineno", 0), HEADER_KEY, f"not valid JSON: {e}")
        return None
    if isinstance(obj, Mapping) and HEADER_KEY in obj:
        obj = obj[HEADER_KEY]
    return parse_run_info(obj, shown, 1, log)


def merge_info(primary: RunInfo, sidecar: RunInfo | None) -> RunInfo:
    """Sidecar facts win over facts found in the file itself, field by field."""
    if sidecar is None:
        return primary
    return RunInfo(
        name=sidecar.name or primary.name,
        created_at=sidecar.created_at or primary.created_at,
        description=sidecar.description or primary.description,
        settings={**primary.settings, **sidecar.settings},
        price_prompt_per_1k=sidecar.price_prompt_per_1k
        if sidecar.price_prompt_per_1k is not None
        else primary.price_prompt_per_1k,
        price_completion_per_1k=sidecar.price_completion_per_1k
        if sidecar.price_completion_per_1k is not None
        else primary.price_completion_per_1k,
    )
