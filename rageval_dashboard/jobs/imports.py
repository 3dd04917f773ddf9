"""Files a user brings to the app: which paths it may read, and uploads written to disk.

No caching and no session state here (those live in state/); the Runs page calls these.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rageval_core.errors import UsageError
from rageval_core.importing import (
    SIDECAR_SUFFIX,
    Confinement,
    file_problem,
    is_file,
    path_problem,
    printable_path,
)

#: folders a path import may read from (os.pathsep-separated); default: cwd and sample_runs/
IMPORT_DIRS_ENV = "RAGEVAL_IMPORT_DIRS"
_SAMPLE_RUNS = Path(__file__).resolve().parents[1] / "sample_runs"


def import_dirs() -> list[Path]:
    """The folders a path import may read from, resolved ($RAGEVAL_IMPORT_DIRS or the defaults).

    By default the working directory and sample_runs/; the working directory is left out when
    it is the filesystem root or the home folder, which hold far more than run files. A folder
    that names nothing (a symlink loop, a NUL byte ...) is left out: no file lies inside it.
    """
    raw = os.environ.get(IMPORT_DIRS_ENV)
    if raw:
        dirs = [_expanded(d) for d in raw.split(os.pathsep) if d.strip()]
    else:
        cwd = Path.cwd().resolve()
        too_wide = cwd == Path(cwd.anchor) or cwd == Path.home().resolve()
        dirs = [_SAMPLE_RUNS] if too_wide else [cwd, _SAMPLE_RUNS]
    return [d.resolve() for d in dirs if path_problem(d) is None]


def path_policy() -> Confinement:
    """What a path import may read: files inside import_dirs(), no hidden one. The readers hold
    every file they open to it (rageval_core.importing.confined), companions and sidecars too."""
    return Confinement(
        tuple(import_dirs()), hint=f"; set {IMPORT_DIRS_ENV} to allow another folder"
    )


def upload_policy(folder: Path) -> Confinement:
    """What an import of uploaded files may read: the folder they were saved to, nothing else."""
    return Confinement((folder.resolve(),), no_hidden=False)


def _expanded(raw: str) -> Path:
    """raw with ~ expanded; as written when that fails (~nosuchuser, a NUL byte ...)."""
    try:
        return Path(raw).expanduser()
    except (RuntimeError, ValueError, UnicodeError):
        return Path(raw)


def check_import_path(text: str) -> Path:
    """The file a typed path names, or UsageError when it lies outside import_dirs().

    Symlinks and '..' are resolved first, so neither can lead out of an allowed folder. Hidden
    files and folders inside it (.env, .git/, .streamlit/secrets.toml, the store itself) are
    refused too: a file read as a run can end up quoted in an error message. The run facts file
    the readers take from beside the run (FILE.run.json) is held to the same rules, symlink or
    not. A path that names no file at all (a NUL byte, a symlink loop, a name too long ...) is a
    UsageError too, never an exception.
    """
    raw = text.strip()
    if not raw:
        raise UsageError("an empty path was given")
    shown = printable_path(raw)
    path = _expanded(raw)
    problem = path_problem(path)
    if problem is not None:
        raise UsageError(f"{shown}: {problem}")
    resolved = (path if path.is_absolute() else Path.cwd() / path).resolve()
    policy = path_policy()
    problem = policy.problem(resolved) or file_problem(resolved)
    if problem is not None and problem.startswith("a folder"):
        problem += " (give the run files, not their folder)"
    if problem is not None:
        raise UsageError(f"{shown}: {problem}")
    sidecar = resolved.with_name(resolved.name + SIDECAR_SUFFIX)
    if is_file(sidecar):  # said here, before the import; the readers refuse it too
        problem = policy.problem(sidecar.resolve())
        if problem is not None:
            raise UsageError(f"{shown}{SIDECAR_SUFFIX} (the run facts beside it): {problem}")
    return resolved


def save_uploads(files: Sequence[Any], folder: Path) -> list[Path]:
    """Write uploaded files under their own names (directories stripped) into folder."""
    paths: list[Path] = []
    for f in files:
        name = Path(str(f.name).replace("\\", "/")).name
        if name in ("", ".", ".."):
            raise UsageError(f"an uploaded file has no usable name: {f.name!r}")
        target = folder / name
        if target in paths:
            raise UsageError(f"two uploaded files are named {name}: rename one")
        try:
            target.write_bytes(f.getvalue())
        except (OSError, ValueError) as e:  # a NUL byte, a lone surrogate, a name too long ...
            reason = e.strerror if isinstance(e, OSError) and e.strerror else "no usable file name"
            raise UsageError(f"an uploaded file cannot be saved as {name!r}: {reason}") from None
        paths.append(target)
    return paths
