"""`rageval ARGS` for tests: in this process through cli.main(argv), or in a real subprocess.

In-process is the default (no interpreter start per call); a handful of smoke tests keep the real
subprocess (`rageval_subprocess`), for what only a process shows: the entry point, exit codes
through the OS, signals.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from rageval_core.cli.dispatch import main
from tests.paths import REPO


@dataclass(frozen=True)
class Result:
    """What a command left: its exit code and everything it printed (as CompletedProcess names them)."""

    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _environment(cwd: Path | None, env: Mapping[str, str | None] | None) -> Iterator[None]:
    old_cwd = os.getcwd()
    old_env = {k: os.environ.get(k) for k in env or {}}
    try:
        for k, v in (env or {}).items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(old_cwd)
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def rageval(
    *args: str,
    db: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str | None] | None = None,
) -> Result:
    """`rageval [--db DB] ARGS` through cli.main in this process; argparse's exits are codes too."""
    argv = [*(["--db", str(db)] if db is not None else []), *args]
    out, err = io.StringIO(), io.StringIO()
    with _environment(cwd, env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # --help, and argparse's usage errors
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    return Result(int(code), out.getvalue(), err.getvalue())


def rageval_subprocess(
    *args: str, db: Path | None = None, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python -m rageval_core.cli [--db DB] ARGS` in a real child process."""
    argv = [*(["--db", str(db)] if db is not None else []), *args]
    return subprocess.run(
        [sys.executable, "-m", "rageval_core.cli", *argv],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        timeout=timeout,
    )


def import_files(db: Path, *files: Path | str) -> None:
    """`rageval --db DB import FILES` in this process; fails the test with rageval's message."""
    done = rageval("import", *map(str, files), db=db)
    assert done.returncode == 0, done.stderr
