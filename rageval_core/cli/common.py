"""What the commands share, public: the store opened as every command opens it (waiting
while another process holds it, telling of interrupted work), problems printed one a line,
and the comparison `compare` and `compare --table` both print."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import rageval_core.cli.path_args as cli_paths
from rageval_core.cli.settings_flags import (
    settings_from_args,
)
from rageval_core.terminal import shown


class Bars:
    """tqdm bars on stderr, one per key, shown only when a step takes more than a moment."""

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.bars: dict[Any, Any] = {}

    def update(self, key: Any, desc: str, done: int, total: int | None) -> None:
        """The bar of key (made with desc, user text escaped here) moved to done of total."""
        from tqdm import tqdm

        if key not in self.bars:
            # the bar redraws with \r on the raw stream under main()'s EscapingWriter
            self.bars[key] = tqdm(
                desc=shown(desc),
                unit=self.unit,
                total=total,
                delay=0.5,
                file=getattr(sys.stderr, "raw", sys.stderr),
                leave=False,
            )
        bar = self.bars[key]
        bar.update(done - bar.n)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


def open_store(args: argparse.Namespace) -> Any:
    """The store, waiting (and saying so) while another process holds it; tells of interruptions."""
    from rageval_core.store import Store
    from rageval_core.store.locking import StoreBusyError, wait_s
    from rageval_core.store.store import default_path

    cli_paths.check_store_path(args.db or default_path())  # a FIFO: DuckDB would wait for good
    try:
        store = Store(args.db, wait_s=0)
    except StoreBusyError as e:
        print(
            f"rageval: the store {e.path} is in use by another process{e.holder} (an import or "
            f"the dashboard); waiting up to {wait_s():g} s ...",
            file=sys.stderr,
        )
        store = Store(args.db)
    tell_interrupted(store)
    return store


def tell_interrupted(store: Any) -> None:
    """Say (once) which imports or scorings a killed process left unfinished."""
    found = store.interrupted()
    for entry in found:
        print(f"rageval: note: {entry.message}", file=sys.stderr)
    store.acknowledge_interrupted(found)


def print_problems(problems: Sequence[Any], truncated: int = 0) -> None:
    for p in problems:
        print(p, file=sys.stderr)
    if truncated:
        print(f"... and {truncated} more problems", file=sys.stderr)


def compare_runs(
    args: argparse.Namespace,
    runs: Sequence[Any],
    metrics: list[str] | None,
    by: Sequence[str] = (),
    n_worst: int = 0,
) -> Any:
    """compare() on stored names (in --db) and/or run files; the store is opened only when needed."""
    import contextlib

    from rageval_core import api
    from rageval_core.compare import StatOptions

    options = StatOptions(
        n_permutations=args.permutations,
        n_bootstrap=args.bootstrap,
        seed=args.seed,
        alpha=args.alpha,
    )
    with contextlib.ExitStack() as stack:
        named = [r for r in runs if isinstance(r, str) and not Path(r).is_file()]
        store = stack.enter_context(open_store(args)) if named else None
        return api.compare(
            list(runs),
            metrics,
            store=store,
            settings=settings_from_args(args),
            by=by,
            options=options,
            n_worst=n_worst,
        )
