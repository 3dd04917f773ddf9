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
import os
import re
import stat
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rageval_core.errors import ProblemLog
from rageval_core.formats.safejson import (
    SURROGATE,
    UnsoundJSON,
    escaped_surrogate,
    loads,
    members,
)
from rageval_core.model import RunInfo

HEAD_BYTES = 64 * 1024
#: The key of the header record that may open a native JSONL file (or a sidecar's only key).
HEADER_KEY = "rageval_run"
SIDECAR_SUFFIX = ".run.json"
#: the largest latency (ms) or price (USD per 1,000 tokens) read: far beyond any real one, and
#: small enough that sums, means and costs (times 2^63 tokens) over any run stay inside a float
MAX_MEASURE = 1e100

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
    with open_input(path) as fh:
        return fh.read(2) == GZIP_MAGIC


def open_bytes(path: Path) -> io.BufferedIOBase:
    """The file's bytes, decompressed when it is gzip-compressed: the TREC readers read a .gz
    run or qrels file (as TREC and ranx distribute them) as they read the plain one."""
    if not is_gzip(path):  # through open_input: a FIFO, a device or a confined path refused
        return open_input(path)  # type: ignore[return-value]
    import gzip  # only for a compressed file (zlib is not needed at start-up)

    return gzip.open(path, "rb")


# -- the one door to the files readers open ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Confinement:
    """The folders reads may reach, symlinks and '..' resolved first (the dashboard's policy: a
    file named in a browser must not lead to /etc/passwd through a companion or a sidecar)."""

    folders: tuple[Path, ...]
    #: refuse hidden files and folders inside them too (.env, .git/, the store ...)
    no_hidden: bool = True
    #: how to allow another folder, said in the refusal
    hint: str = ""

    def problem(self, resolved: Path) -> str | None:
        """Why the resolved path may not be read under this policy, or None."""
        inside = [d for d in self.folders if resolved.is_relative_to(d)]
        if not inside:
            listed = ", ".join(str(d) for d in self.folders)
            return f"outside the folders imports may read from ({listed}){self.hint}"
        if self.no_hidden and not any(
            all(not part.startswith(".") for part in resolved.relative_to(d).parts) for d in inside
        ):
            return "a hidden file or folder (a name starting with '.'); imports never read those"
        return None


_CONFINEMENT: ContextVar[Confinement | None] = ContextVar("rageval_confinement", default=None)


@contextmanager
def confined(policy: Confinement | None) -> Iterator[None]:
    """Every file a reader opens inside the block (the files given, their companions, BEIR's
    corpus and queries found beside its qrels, sidecars) must satisfy policy (None: any file)."""
    token = _CONFINEMENT.set(policy)
    try:
        yield
    finally:
        _CONFINEMENT.reset(token)


def special_kind(mode: int) -> str | None:
    """What a path of this st_mode is when it is not a regular file ("a folder", "a FIFO (named
    pipe)", "a device" ...), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def kind_problem(mode: int) -> str | None:
    """Why a path of this st_mode is not a file to read, named by what it is, or None."""
    kind = special_kind(mode)
    if kind is None:
        return None
    # a FIFO waits for a writer: reading one would block the command (or the server) for good
    return f"{kind}, not a file" + (": reading it would wait forever" if "FIFO" in kind else "")


class InputRefused(OSError):
    """A file a reader was about to open is not one it may read (open_input); its strerror
    says why, as unreadable() reports it."""

    def __init__(self, problem: str) -> None:
        super().__init__(errno.EINVAL, problem)


def open_input(path: Path, mode: str = "rb", **kwargs: Any) -> IO[Any]:
    """Open a file a reader reads, after file_problem (a FIFO, a device, a folder, a symlink
    loop, a path outside the confinement in force: InputRefused, never a blocked read).

    O_NONBLOCK: a FIFO put in the file's place after the check opens without waiting for a
    writer, and the check on the open descriptor then refuses it; under a confinement the
    descriptor's real path is checked again."""
    problem = file_problem(path)
    if problem is not None:
        raise InputRefused(problem)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        problem = kind_problem(os.fstat(fd).st_mode) or _fd_confinement_problem(fd)
        if problem is not None:
            raise InputRefused(problem)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return open(fd, mode, **kwargs)


def _fd_confinement_problem(fd: int) -> str | None:
    policy = _CONFINEMENT.get()
    if policy is None:
        return None
    try:
        real = Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:  # no /proc: the check on the resolved path stands
        return None
    return policy.problem(real)


def exists_or_link(path: Path) -> bool:
    """Whether anything is at path, a dangling or looping symlink included: a companion a reader
    looks for is then opened (open_input) and refused by name, never skipped in silence."""
    try:
        return os.path.lexists(path)
    except (ValueError, OSError):  # a NUL byte, a name too long ...
        return False


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
    if isinstance(e, InputRefused):
        return str(strerror)
    return f"cannot read: {strerror or e}"


def file_problem(path: Path) -> str | None:
    """Why path names no regular file to read (path_problem's reasons, "no such file", a FIFO,
    a device, a folder ... named as such, "cannot read: ...", or outside the confinement in
    force), or None when it does."""
    problem = path_problem(path)
    if problem is not None:
        return problem
    try:
        mode = path.stat().st_mode
    except OSError as e:  # missing, or a name too long, no permission ...
        missing = e.errno in (errno.ENOENT, errno.ENOTDIR)
        return "no such file" if missing else f"cannot read: {e.strerror or e}"
    problem = kind_problem(mode)
    policy = _CONFINEMENT.get()
    if problem is None and policy is not None:
        problem = policy.problem(path.resolve())
    return problem


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
    bad = non_finite_path(dict(settings), f"{HEADER_KEY}.settings")
    if bad is not None:  # JSON has no NaN: show --json and export could not write it back
        log.error(file, line, bad, "expected a finite number (JSON has no NaN or Infinity)")
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
    if number > MAX_MEASURE:
        log.error(file, line, field, too_large(number))
        return None
    return number


def too_large(number: float) -> str:
    """The problem with a latency or price above MAX_MEASURE."""
    return (
        f"{number:g} is too large (at most {MAX_MEASURE:g}: sums and costs over the run must fit "
        "a float)"
    )


def finite_number(value: Any) -> float | None:
    """value as a finite float, or None when it is not a finite number (bools are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond a float (the JSON readers refuse these earlier)
        return None
    return number if math.isfinite(number) else None


def non_finite_path(value: Any, path: str) -> str | None:
    """The path of the first NaN/infinite number inside a JSON value, or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    for sub, item in members(value, path):
        bad = non_finite_path(item, sub)
        if bad is not None:
            return bad
    return None


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
    if not exists_or_link(sidecar):
        return None
    shown = display_path(sidecar)
    try:
        with open_input(sidecar, "r", encoding="utf-8") as fh:
            obj = loads(fh.read())
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
