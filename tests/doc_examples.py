"""The command examples of README.md and docs/: found, run as written, and their shown output.

An example is a `rageval ...` line of a fenced `sh`, `bash`, `shell` or `console` block, or a
`$ rageval ...` line of any block (a trailing `\\` continues it). It runs with bash in a sandbox
folder holding `sample_runs/` (imported into the folder's default store, as `make import` does),
the judged run of tests/data/judge and trec_eval's `results.test` and `qrels.test` when ../shared has them; the examples of one
file run in order, in one sandbox. What the doc itself says of an example, in a comment at its
end:

- `# exit N`: the exit code it should end with (else 0);
- `# needs: WHAT`: it needs something the sandbox has not (an LLM endpoint, a model on disk):
  not run, and the reader sees why.

Lines under a `$ rageval ...` line of a `console` block, up to the next `$` line or the end of
the block, are its output as shown: compared verbatim. `python -m tests.doc_examples --write`
(`make docs-examples`) runs every example and writes each shown output anew (after a change of
the numbers, e.g. docs/compare.md's sample comparison).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.paths import ORACLE, REPO

#: the documents whose examples run
DOCS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "sample_runs/README.md")
SHELL_BLOCKS = ("sh", "bash", "shell", "console")
ORACLE_FILES = ("results.test", "qrels.test")
#: what the sandbox holds of the repository, at the same paths (the docs name them)
SANDBOX_FILES = ("sample_runs", "tests/data/judge/judged_run.jsonl")
_FENCE = re.compile(r"^```(\w*)\s*$")
_NEEDS = re.compile(r"#\s*needs:\s*(.+?)\s*$")
_EXIT = re.compile(r"#\s*exit\s+(\d+)\b")


@dataclass(frozen=True)
class Example:
    """One command example: where it is, what it runs, and what the doc says it does."""

    doc: Path
    line: int  # 1-based, the command's first line
    command: str  # continuation lines joined, as bash reads it
    exit_code: int = 0
    needs: str | None = None
    #: the output shown under it (console blocks): (first line, last line + 1, the lines)
    shown: tuple[int, int, tuple[str, ...]] | None = None

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}"

    @property
    def uses_oracle(self) -> bool:
        return any(name in self.command for name in ORACLE_FILES)


def examples(doc: Path) -> list[Example]:
    """The command examples of doc, in order."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    found: list[Example] = []
    lang: str | None = None
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if fence:
            lang = fence.group(1) if lang is None else None
            i += 1
            continue
        text = lines[i]
        prompt = text.startswith("$ ")
        body = text[2:] if prompt else text
        if lang is None or not body.startswith("rageval ") or not (prompt or lang in SHELL_BLOCKS):
            i += 1
            continue
        start = i
        parts = [body]
        while parts[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            parts.append(lines[i])
        command = "\n".join(parts)
        needs = _NEEDS.search(parts[-1])
        exit_code = _EXIT.search(parts[-1])
        i += 1
        shown = None
        if lang == "console" and prompt:
            first = i
            while i < len(lines) and not lines[i].startswith("$ ") and not _FENCE.match(lines[i]):
                i += 1
            if i > first:
                shown = (first, i, tuple(lines[first:i]))
        found.append(
            Example(
                doc,
                start + 1,
                command,
                int(exit_code.group(1)) if exit_code else 0,
                needs.group(1) if needs else None,
                shown,
            )
        )
    return found


def make_sandbox(folder: Path) -> Path:
    """folder with sample_runs/ imported into its default store, and trec_eval's test files."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in SANDBOX_FILES:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, folder / name, dirs_exist_ok=True)
        else:
            shutil.copy(REPO / name, folder / name)
    for name in ORACLE_FILES:
        if (ORACLE / name).is_file():
            shutil.copy(ORACLE / name, folder / name)
    done = run_in(folder, "rageval import sample_runs/*.jsonl")
    assert done.returncode == 0, done.stderr
    return folder


def copy_sandbox(template: Path, folder: Path) -> Path:
    """A fresh copy of a sandbox (importing the sample runs once is most of a sandbox's cost)."""
    shutil.copytree(template, folder)
    return folder


def run_in(folder: Path, command: str) -> subprocess.CompletedProcess[str]:
    """command as bash runs it in folder, with this interpreter's rageval first on PATH and no
    store or key from the environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAGEVAL_DB", "OPENAI_API_KEY")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["COLUMNS"] = "200"
    return subprocess.run(
        ["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True, timeout=600
    )


def output_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    """What the terminal shows, as the doc shows it (stdout; stderr after it)."""
    return [line.rstrip() for line in (done.stdout + done.stderr).rstrip("\n").splitlines()]


def write_outputs(sandbox_root: Path) -> list[str]:
    """Run every example that shows its output and write the output it gives; the docs changed."""
    changed = []
    template = make_sandbox(sandbox_root / "template")
    for n, doc in enumerate(DOCS):
        todo = [
            e for e in examples(doc) if e.needs is None and (ORACLE.is_dir() or not e.uses_oracle)
        ]
        if not any(e.shown for e in todo):
            continue
        sandbox = copy_sandbox(template, sandbox_root / str(n))
        lines = doc.read_text(encoding="utf-8").splitlines()
        edits = []
        for e in todo:
            done = run_in(sandbox, e.command)
            if done.returncode != e.exit_code:
                raise SystemExit(f"{e.where}: exit {done.returncode}: {done.stderr}")
            if e.shown is not None:
                edits.append((e.shown[0], e.shown[1], output_lines(done)))
        for first, end, new in reversed(edits):
            lines[first:end] = new
        text = "\n".join(lines) + "\n"
        if text != doc.read_text(encoding="utf-8"):
            doc.write_text(text, encoding="utf-8")
            changed.append(str(doc.relative_to(REPO)))
    return changed


if __name__ == "__main__":
    import tempfile

    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python -m tests.doc_examples --write")
    with tempfile.TemporaryDirectory() as tmp:
        print("\n".join(write_outputs(Path(tmp))) or "every shown output is up to date")
