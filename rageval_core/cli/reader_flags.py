"""The reader options' flags (--ignore-identical-ids, --stage) on import and evaluate, and the
block that applies them to every file the command reads (rageval_core.formats.options)."""

from __future__ import annotations

import argparse
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from rageval_core.errors import UsageError
from rageval_core.formats.options import STAGES, ReadOptions, reading_with


def add_reader_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ignore-identical-ids",
        action="store_true",
        help="drop a retrieved document whose id equals its query's id (BEIR's option, for "
        "datasets whose corpus holds the queries)",
    )
    p.add_argument(
        "--stage",
        choices=STAGES,
        help="an OpenInference trace export's stage to read (default: import both, as NAME and "
        "NAME@reranker)",
    )


def reader_options(args: argparse.Namespace) -> AbstractContextManager[None]:
    """The command's reader options in force for the block (a no-op for commands without them)."""
    ignore = bool(getattr(args, "ignore_identical_ids", False))
    stage = getattr(args, "stage", None)
    if not ignore and stage is None:
        return nullcontext()
    run = getattr(args, "run", None)
    if run is not None and not Path(run).exists():  # evaluate on a stored run: nothing is read
        raise UsageError(
            "--ignore-identical-ids and --stage apply when files are read (import, or evaluate "
            "on run files); a stored run keeps what it was imported with"
        )
    return reading_with(ReadOptions(ignore_identical_ids=ignore, stage=stage))
