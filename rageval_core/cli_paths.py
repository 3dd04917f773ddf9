"""Every path a command line names, checked before the command does any work.

An argument is declared with its kind (add_path_argument); check_arguments() runs on the parsed
line before the command's function, so a bad path is exit 2 before the store is opened, a file
is read or an output is computed:

- INPUT (`--qrels`, `import FILE`, evaluate's companions): a FIFO, a device, a socket, a
  folder (where none is taken), a symlink loop, a NUL byte or a name too long is refused by
  name, as `PATH:0: file: PROBLEM` (formats.base.file_problem, which the readers use too).
  Reading a FIFO waits for a writer forever: `attach --qrels FIFO` did so holding the store's
  lock.
- RUN (a stored run's name or a run file): the same, when the text names something on disk.
- OUTPUT (`--out`): its folder must exist and take a new file, the name must fit the file
  system, and it must not be a folder, a FIFO or a device. Written through write_output: a
  temporary file beside it, renamed over it at the end, so a failure leaves nothing half
  written.
- OUTPUT_FOLDER (`demo --out`): a folder that is there or can be made.

Exit 2 (InputError, UsageError: one line naming the path and the problem), not 3: 3 says the store is unusable (`--db`, which keeps it, checked by
check_store_path); a mistyped output or input path is a bad argument like any other.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rageval_core.errors import InputError, Problem, StoreError, UsageError
from rageval_core.formats.base import (
    display_path,
    exists_or_link,
    file_problem,
    kind_problem,
    path_problem,
    printable_path,
    special_kind,
)

INPUT, RUN, OUTPUT, OUTPUT_FOLDER = "input", "run", "output", "output folder"
#: the Namespace attribute listing a command's path arguments: (dest, shown as, kind, folders)
PATHS_KEY = "path_arguments"
#: what file_problem says of a folder
FOLDER = kind_problem(stat.S_IFDIR)
#: whether a folder is a valid value: never, always (a BEIR dataset), or as the line says
Folders = bool | Callable[[argparse.Namespace], bool]


def add_path_argument(
    p: argparse.ArgumentParser, *flags: str, kind: str, folders: Folders = False, **kwargs: Any
) -> argparse.Action:
    """p.add_argument(*flags, **kwargs), the argument then checked as kind by check_arguments."""
    action = p.add_argument(*flags, **kwargs)
    shown = flags[0] if flags[0].startswith("-") else ""  # a positional: the path alone
    declared = p.get_default(PATHS_KEY) or ()
    p.set_defaults(**{PATHS_KEY: (*declared, (action.dest, str(shown), kind, folders))})
    return action


def on_spark(args: argparse.Namespace) -> bool:
    """evaluate --engine spark reads folders (and globs, URLs) as one run."""
    return getattr(args, "engine", "local") == "spark"


def check_arguments(args: argparse.Namespace) -> None:
    """Every path argument of the parsed line checked: InputError listing each file to read
    that cannot be (`PATH:0: file: PROBLEM`, as the readers say it), else UsageError for the
    first output that cannot be written."""
    inputs: list[Problem] = []
    for dest, shown, kind, folders in getattr(args, PATHS_KEY, ()):
        value = getattr(args, dest, None)
        for text in value if isinstance(value, list) else [value]:
            if text is None:
                continue
            folder_ok = folders(args) if callable(folders) else folders
            problem = CHECKS[kind](str(text), folder_ok)
            if problem is None:
                continue
            if kind in (INPUT, RUN):
                inputs.append(Problem(display_path(Path(text)), 0, "file", problem))
            else:
                raise UsageError(f"{shown} {printable_path(str(text))}: {problem}".lstrip())
    if inputs:
        raise InputError(inputs)


def input_problem(text: str, folder_ok: bool = False) -> str | None:
    """Why a file to read cannot be read (a FIFO, a device, a folder, a symlink loop, a NUL
    byte, a name too long ...), or None; a missing file is left to the command, which says so
    in its own words (a run name, a Spark URL or glob, a file the reader names)."""
    problem = file_problem(Path(text))
    if problem == "no such file" or (folder_ok and problem == FOLDER):
        return None
    return problem


def run_problem(text: str, folder_ok: bool = False) -> str | None:
    """input_problem for a stored run's name or a run file, when the text names something on
    disk (anything else is a name)."""
    if not exists_or_link(Path(text)):
        return None
    problem = input_problem(text, folder_ok)
    if problem == FOLDER:
        return "a folder, not a run file (for a stored run of this name, give its id: rageval runs --json)"
    return problem


def output_problem(text: str, folder_ok: bool = False) -> str | None:
    """Why a file cannot be written at text (checked before any work), or None."""
    problem, mode = _what_is_there(text)
    if problem is not None:
        return problem
    if mode is not None:
        kind = special_kind(mode)
        if kind == "a folder":
            return "a folder; give the name of a file inside it"
        if kind is not None:
            return f"{kind}, not a file to write"
        if not os.access(text, os.W_OK):
            return "a read-only file"
    if text.endswith(os.sep):
        return "ends with a slash; give a file name"
    folder = Path(text).resolve().parent  # through a symlink, to the file it names, as open()
    return _folder_problem(folder) or _creatable(folder)


def output_folder_problem(text: str, folder_ok: bool = True) -> str | None:
    """Why a folder to write files into cannot be used, or made, or None."""
    problem, mode = _what_is_there(text)
    if problem is not None:
        return problem
    if mode is None:  # missing: made, with the folders it needs
        resolved = Path(text).resolve()
        return _folder_problem(resolved, made=True) or _creatable(_nearest(resolved))
    kind = special_kind(mode)
    if kind != "a folder":
        return f"{kind or 'a file'}, not a folder"
    return _creatable(Path(text))


def _what_is_there(text: str) -> tuple[str | None, int | None]:
    """(why nothing can be written at text: a bad name or a symlink loop, or None; the st_mode
    of what is there, or None when nothing is)."""
    problem = _name_problem(Path(text))
    if problem is not None:
        return problem, None
    try:
        return None, os.stat(text).st_mode
    except OSError as e:  # missing, or under a file (ENOTDIR: its folder's check names it)
        return ("a symlink loop" if e.errno == errno.ELOOP else None), None


def _name_problem(path: Path) -> str | None:
    """A NUL byte, a lone surrogate, or a name longer than the file system takes."""
    if "\x00" in str(path):
        return "the path holds a NUL byte"
    problem = path_problem(path)
    if problem is not None and not problem.startswith("cannot read"):
        return problem
    limit = _name_max(path)
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > limit:
            return (
                f"a name of {size:,} bytes ({printable_path(part[:20])}...), longer than the "
                f"{limit} bytes a file name may have here"
            )
    return None


def _name_max(path: Path) -> int:
    """NAME_MAX of the file system the path goes to (255 on the usual ones)."""
    try:
        return os.pathconf(_nearest(path.absolute()), "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _nearest(path: Path) -> Path:
    """The nearest folder of path (itself included) that exists."""
    for candidate in (path, *path.parents):
        if os.path.isdir(candidate):
            return candidate
    return Path(path.anchor or ".")


def _folder_problem(folder: Path, made: bool = False) -> str | None:
    """The folder an output goes into must exist and be a folder (made: what exists of it must
    be folders; the rest is made)."""
    for part in (folder, *folder.parents):
        if os.path.isdir(part):
            break
        if os.path.lexists(part):
            return f"{printable_path(str(part))} is a file, not a folder"
    else:
        return None
    if made or os.path.isdir(folder):
        return None
    return f"its folder {printable_path(str(folder))} does not exist (create it first)"


def _creatable(folder: Path) -> str | None:
    """Why no new file can be made in folder, or None: tried, so permissions, a read-only file
    system, /sys and /proc are all found the same way."""
    probe = folder / f".rageval-{secrets.token_hex(4)}.probe"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as e:
        return f"cannot create a file in {printable_path(str(folder))} ({e.strerror or e})"
    probe.unlink(missing_ok=True)
    return None


CHECKS: dict[str, Callable[[str, bool], str | None]] = {
    INPUT: input_problem,
    RUN: run_problem,
    OUTPUT: output_problem,
    OUTPUT_FOLDER: output_folder_problem,
}


def check_output(text: str, shown: str) -> None:
    """UsageError when text cannot be written (an output named outside the declared arguments,
    as `export RUN --to FILE`)."""
    problem = output_problem(text)
    if problem is not None:
        raise UsageError(f"{shown} {printable_path(text)}: {problem}")


def check_store_path(path: str) -> None:
    """StoreError (exit 3, as every unusable store) when the store's path is a FIFO, a device or
    a socket: DuckDB would wait on a FIFO for good (a folder and the rest: Store says)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    kind = special_kind(mode)
    if kind not in (None, "a folder"):
        raise StoreError(f"cannot open the store {printable_path(path)}: {kind}, not a store file")


@contextlib.contextmanager
def write_output(text: str) -> Iterator[Path]:
    """A temporary path beside the output to write to; renamed over the output when the block
    ends, removed when it raises (Ctrl-C too): never half a file at the output's name.

    A symlink is written through (the file it names is replaced); an existing file keeps its
    permissions."""
    target = Path(text).resolve()
    partial = target.parent / f".rageval-{secrets.token_hex(4)}.partial"  # short: any name fits
    try:
        yield partial
        if target.exists():
            shutil.copymode(target, partial)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


@contextlib.contextmanager
def write_folder(text: str) -> Iterator[Path]:
    """A temporary folder inside the output folder (made when missing) to write files to; each
    file moves to the output folder when the block ends, none when it raises (and the folders
    made for it are taken away again)."""
    folder = Path(text).absolute()
    made = [p for p in (folder, *folder.parents) if not os.path.lexists(p)]
    folder.mkdir(parents=True, exist_ok=True)
    staging = folder / f".rageval-{secrets.token_hex(4)}.partial"
    staging.mkdir()
    done = False
    try:
        yield staging
        for item in sorted(staging.iterdir()):
            os.replace(item, folder / item.name)
        done = True
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        for part in made if not done else ():  # innermost first; only what is still empty
            with contextlib.suppress(OSError):
                part.rmdir()
