"""Files a user brings to the app: which paths it may read, and uploads written to disk.

No caching and no session state here (those live in state.py); the Runs page calls these.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rageval_core.errors import UsageError

#: folders a path import may read from (os.pathsep-separated); default: cwd and sample_runs/
IMPORT_DIRS_ENV = "RAGEVAL_IMPORT_DIRS"
_SAMPLE_RUNS = Path(__file__).resolve().parents[1] / "sample_runs"


def import_dirs() -> list[Path]:
    """The folders a path import may read from, resolved ($RAGEVAL_IMPORT_DIRS or the defaults).

    By default the working directory and sample_runs/; the working directory is left out when
    it is the filesystem root or the home folder, which hold far more than run files.
    """
    raw = os.environ.get(IMPORT_DIRS_ENV)
    if raw:
        dirs = [Path(d) for d in raw.split(os.pathsep) if d.strip()]
    else:
        cwd = Path.cwd().resolve()
        too_wide = cwd == Path(cwd.anchor) or cwd == Path.home().resolve()
        dirs = [_SAMPLE_RUNS] if too_wide else [cwd, _SAMPLE_RUNS]
    return [d.expanduser().resolve() for d in dirs]


def check_import_path(text: str) -> Path:
    """The file a typed path names, or UsageError when it lies outside import_dirs().

    Symlinks and '..' are resolved first, so neither can lead out of an allowed folder. Hidden
    files and folders inside it (.env, .git/, .streamlit/secrets.toml, the store itself) are
    refused too: a file read as a run can end up quoted in an error message.
    """
    raw = text.strip()
    if not raw:
        raise UsageError("an empty path was given")
    path = Path(raw).expanduser()
    resolved = (path if path.is_absolute() else Path.cwd() / path).resolve()
    allowed = import_dirs()
    inside = [d for d in allowed if resolved.is_relative_to(d)]
    if not inside:
        listed = ", ".join(str(d) for d in allowed)
        raise UsageError(f"{raw}: outside the folders imports may read from ({listed}); "
                          f"set {IMPORT_DIRS_ENV} to allow another folder")
    if not any(all(not part.startswith(".") for part in resolved.relative_to(d).parts)
               for d in inside):
        raise UsageError(f"{raw}: a hidden file or folder (a name starting with '.'); "
                          f"imports never read those")
    if not resolved.exists():
        raise UsageError(f"{raw}: no such file")
    if not resolved.is_file():
        raise UsageError(f"{raw}: not a file (give the run files, not their folder)")
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
        target.write_bytes(f.getvalue())
        paths.append(target)
    return paths
